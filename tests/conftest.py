"""Shared fixtures. Tests never touch the internet: real data comes from BIASMONKEY_DATA_DIR."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from biasmonkey.tasks.response_bias import data

DATA_ENV = "BIASMONKEY_DATA_DIR"

# A hub lookup would only time out here (and tests never touch the network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real upstream data dir (BIASMONKEY_DATA_DIR, relative to the CWD); skips when unset.

    The variable is made absolute for the session, so a chdir or a subprocess started
    elsewhere still finds the data."""
    value = os.environ.get(DATA_ENV)
    if not value:
        pytest.skip(f"{DATA_ENV} is not set: these tests need the upstream BiasMonkey data files")
    root = Path(value).resolve()
    os.environ[DATA_ENV] = str(root)
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


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random GPT-2 folder for harness plumbing tests (built offline in about a second)."""
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
