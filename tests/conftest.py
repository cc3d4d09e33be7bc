"""Shared fixtures. Tests never touch the internet: real data comes from BIASMONKEY_DATA_DIR."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from biasmonkey.tasks.response_bias import data

DATA_ENV = "BIASMONKEY_DATA_DIR"

# A hub lookup would only time out here (and tests never touch the network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Under pytest-xdist (`make test` runs one worker per core), one math thread per worker, inherited
# by the harness subprocesses: more threads than cores only slows everyone down.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


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


@pytest.fixture(scope="session")
def data_dir_with_cognitive_fixture(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with the real response-bias and yes-no files and, as the cognitive dataset,
    the small test fixture (tests/fixtures/cognitive/tests.csv)."""
    root = tmp_path_factory.mktemp("data")
    (root / "cognitive").mkdir()
    for name in ("biasmonkey", "yesno"):
        (root / name).symlink_to(data_dir / name)
    fixture = Path(__file__).parent / "fixtures" / "cognitive" / "tests.csv"
    (root / "cognitive" / "cognitive-biases-in-llms.csv").symlink_to(fixture)
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


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[SimpleNamespace]:
    """A local http.server on 127.0.0.1 (random port) serving `root`; records request paths."""
    root = tmp_path / "upstream"
    root.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args) -> None:  # keep pytest output clean
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield SimpleNamespace(root=root, url=f"http://127.0.0.1:{server.server_address[1]}", requests=requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No local data dir, an empty cache in tmp_path."""
    monkeypatch.delenv("BIASMONKEY_DATA_DIR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("BIASMONKEY_CACHE_DIR", str(cache))
    return cache
