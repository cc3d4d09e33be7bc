"""Where biasmonkey keeps downloaded data and converted models."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_DIR_ENV = "BIASMONKEY_CACHE_DIR"
# What to do when the cache cannot be written (tasks.atomic_write messages).
CACHE_HINT = f"set {CACHE_DIR_ENV} to a writable folder"


def cache_root(cache_dir: Path | None = None) -> Path:
    """`cache_dir` if given, else $BIASMONKEY_CACHE_DIR, else the platform's user cache dir."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else Path(platformdirs.user_cache_dir("biasmonkey"))
