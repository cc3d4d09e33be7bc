"""Shared fixtures. Tests never touch the internet: real data comes from BIASMONKEY_DATA_DIR."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from biasmonkey.tasks.response_bias import data

DATA_ENV = "BIASMONKEY_DATA_DIR"


@pytest.fixture
def biasmonkey_data_dir(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real upstream data dir (BIASMONKEY_DATA_DIR, relative to the CWD); skips when unset."""
    value = os.environ.get(DATA_ENV)
    if not value:
        pytest.skip(f"{DATA_ENV} is not set: these tests need the upstream BiasMonkey prompt files")
    root = Path(value).resolve()
    monkeypatch.setenv(DATA_ENV, str(root))  # absolute, so a chdir in a test cannot break it
    return root


@pytest.fixture
def fake_prompt_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str | bytes], Path]:
    """Write a data file as `<tmp>/data/biasmonkey/<name>` (the real layout), point
    BIASMONKEY_DATA_DIR there and register the file's sha256 in data.FILES, so the loader
    accepts it and the test reaches the parsing checks. `name` is e.g. "prompts/odd_even.csv"."""
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv(DATA_ENV, str(root))

    def write(name: str, content: str | bytes) -> Path:
        payload = content.encode("utf-8") if isinstance(content, str) else content
        path = root / "biasmonkey" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        upstream = data.FILES[name][0] if name in data.FILES else name
        monkeypatch.setitem(data.FILES, name, (upstream, hashlib.sha256(payload).hexdigest()))
        return path

    return write
