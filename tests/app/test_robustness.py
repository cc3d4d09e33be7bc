"""Off the happy path, through the command line as a user types it.

Every bad input gets exit status 2, one message naming the culprit and the fix, and no traceback,
before any model loads. Faulty servers (tests/fault_server.py) end a run with a message naming the
URL within a bounded time; what finished is kept and `--resume` sends only the rest. SIGINT and
SIGTERM stop `biasmonkey run` and everything it started (exit 130 / 143). An API key reaches the
server and no file the run writes. The README's robustness figures count these cases.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_server import FaultServer

KEY_ENV = "BIASMONKEY_API_KEY"
SECRET = "sk-test-0123456789abcdef-do-not-leak"


def cli(*argv: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`biasmonkey ARGV…` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def assert_clear_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr[-2000:]


def cache_rows(out: Path) -> int:
    (db,) = (out / "cache").glob("*_rank0.db")
    with sqlite3.connect(db) as con:
        return con.execute("SELECT COUNT(*) FROM unnamed").fetchone()[0]


# ---------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def not_a_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder without config.json, and a plain file beside it."""
    root = tmp_path_factory.mktemp("inputs")
    (root / "empty-model").mkdir()
    (root / "a-file").write_text("not a folder\n")
    (root / "cache-in-the-way").mkdir()
    (root / "cache-in-the-way" / "cache").write_text("not the request cache folder\n")
    return root


BAD_RUN_INPUTS = {
    "unknown task": (["--tasks", "biasmonkey_acquiesence"], ["unknown task", "did you mean biasmonkey_acquiescence"]),
    "unknown task among good ones": (
        ["--tasks", "biasmonkey_acquiescence,biasmonkey_odd_evn"],
        ["'biasmonkey_odd_evn'", "biasmonkey_odd_even"],
    ),
    "missing model folder": (["--model", "/nonexistent/model"], ["--model /nonexistent/model", "no such model"]),
    "model path is a file": (["--model", "{root}/a-file"], ["not a model folder"]),
    "model folder without config.json": (["--model", "{root}/empty-model"], ["no config.json"]),
    "bad dtype": (["--dtype", "flot32"], ["--dtype", "float32"]),
    "bad batch size": (["--batch-size", "x"], ["--batch-size", "auto:N"]),
    "zero batch size": (["--batch-size", "0"], ["--batch-size"]),
    "bad device": (["--device", "gpu0"], ["--device", "cuda:N"]),
    "output is a file": (["--output", "{root}/a-file"], ["--output", "a file is in the way"]),
    "output under a file": (["--output", "{root}/a-file/results"], ["is a file, not a folder"]),
    "a file where the request cache goes": (
        ["--output", "{root}/cache-in-the-way"],
        ["--output's request cache {root}/cache-in-the-way/cache: a file is in the way"],
    ),
    "limit 0": (["--limit", "0"], ["--limit", "at least 1"]),
    "negative limit": (["--limit", "-3"], ["--limit", "at least 1"]),
    "limit not a number": (["--limit", "ten"], ["--limit", "not an integer"]),
    "unknown run option value": (["--mode", "bogus"], ["--mode", "invalid choice"]),
    "server flag without server": (["--num-concurrent", "4"], ["--num-concurrent", "only with --backend server"]),
    "server without url": (["--backend", "server", "--server-model", "m"], ["--base-url"]),
    "num-concurrent 0": (["--backend", "server", "--num-concurrent", "0"], ["--num-concurrent", "at least 1"]),
    "top-logprobs 0": (["--backend", "server", "--top-logprobs", "0"], ["--top-logprobs", "at least 1"]),
    "timeout 0": (["--backend", "server", "--timeout", "0"], ["--timeout", "positive"]),
    "negative retries": (["--backend", "server", "--max-retries", "-1"], ["--max-retries", "0 or more"]),
    "api key variable unset": (
        ["--backend", "server", "--base-url", "http://127.0.0.1:9/v1", "--server-model", "m"]
        + ["--api-key-env", "BIASMONKEY_TEST_UNSET_KEY"],
        ["BIASMONKEY_TEST_UNSET_KEY", "not set"],
    ),
    "resume without a cache": (["--resume", "--output", "{root}/fresh"], ["--resume", "no request cache"]),
    "resume in sample mode": (["--resume", "--mode", "sample"], ["sample-mode run cannot resume"]),
    "resume with no-cache": (["--resume", "--no-cache"], ["drop --no-cache"]),
}


@pytest.mark.parametrize("case", list(BAD_RUN_INPUTS))
def test_bad_run_input_is_one_clear_message(case: str, not_a_model: Path, tiny_model: Path, data_dir: Path) -> None:
    argv, fragments = BAD_RUN_INPUTS[case]
    argv = [a.format(root=not_a_model) for a in argv]
    fragments = [f.format(root=not_a_model) for f in fragments]
    if "--model" not in argv and "--backend" not in argv:
        argv += ["--model", str(tiny_model)]
    if "--output" not in argv:
        argv += ["--output", str(not_a_model / "out")]
    start = time.monotonic()
    proc = cli("run", *argv)
    assert_clear_error(proc, *fragments)
    assert time.monotonic() - start < 60  # before any model loads
    assert "lm_eval" not in proc.stderr  # lm-eval never started


@pytest.mark.parametrize(
    ("command", "device", "absent"),
    [
        ("run", "cuda:0", "CUDA device"),
        ("run", "mps", "MPS device"),
        ("run", "xpu", "XPU device"),
        ("plan", "cuda", "CUDA device"),
        ("plan", "mps", "MPS device"),
    ],
)
def test_device_that_is_not_there_is_named(command: str, device: str, absent: str, tiny_model: Path) -> None:
    from biasmonkey.harness_ext.app.run_checks import device_count

    if device_count(device.partition(":")[0]):
        pytest.skip(f"this machine has a {device} device")
    argv = ["--model", str(tiny_model), "--device", device]
    proc = cli(command, *argv, *(["--calibrate", "--tasks", "biasmonkey_odd_even"] if command == "plan" else []))
    assert_clear_error(proc, f"--device {device}", absent, "use --device cpu")


def test_corrupt_cache_is_named_with_the_fix(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_acquiescence", "--limit", "1"]
    assert cli(*argv, "--output", str(out)).returncode == 0
    (db,) = (out / "cache").glob("*_rank0.db")
    db.write_bytes(b"this is not a sqlite file" * 100)
    assert_clear_error(cli(*argv, "--output", str(out), "--resume"), str(db), "corrupt", "delete it")


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["summarize", "/nonexistent/results"], ["/nonexistent/results", "no such file or folder"]),
        (["summarize", "{tmp}"], ["no samples_biasmonkey_"]),
        (["report", "/nonexistent/results", "--out", "{tmp}/report"], ["/nonexistent/results"]),
        (["score-samples", "/nonexistent/samples"], ["/nonexistent/samples"]),
        (["plan", "--tasks", "biasmonkey_nosuch"], ["unknown task"]),
        (["plan", "--limit", "0"], ["--limit"]),
    ],
)
def test_bad_input_to_other_commands(argv: list[str], fragments: list[str], tmp_path: Path) -> None:
    assert_clear_error(cli(*[a.format(tmp=tmp_path) for a in argv]), *fragments)


def test_comma_in_model_path_and_an_option_for_other_tasks(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    """A model folder named with a comma and '=' runs; an option no chosen task reads is warned about."""
    import shutil

    model = tmp_path / "tiny,dtype=float16"
    shutil.copytree(tiny_model, model)
    out = tmp_path / "out"
    proc = cli(
        "run",
        *["--model", str(model), "--tasks", "biasmonkey_acquiescence", "--limit", "2", "--output", str(out)],
        *["--perturbation-rules", "published"],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--perturbation-rules applies to response_bias tasks" not in proc.stderr  # acquiescence reads it
    proc = cli(
        "run",
        *["--model", str(model), "--tasks", "biasmonkey_yesno_comps", "--limit", "2", "--output", str(out)],
        *["--perturbation-rules", "published"],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--perturbation-rules applies to response_bias tasks, not to the chosen yesno tasks" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(out.rglob("samples_biasmonkey_yesno_comps_*.jsonl"))


# ---------------------------------------------------------------------------- faulty servers


def served_run(server: FaultServer, tokenizer: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        *["--backend", "server", "--base-url", server.url, "--server-model", "tiny"],
        *["--tokenizer", str(tokenizer), "--tasks", "biasmonkey_acquiescence", "--limit", "4"],
        *["--output", str(out), "--num-concurrent", "1", *extra],
    ]


def test_server_failing_midway_keeps_what_finished_and_resume_sends_the_rest(
    tiny_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with FaultServer(fail_after=3) as server:
        proc = cli(*served_run(server, tiny_model, out, "--max-retries", "1", "--timeout", "5"))
        assert proc.returncode != 0
        assert server.url in proc.stderr and "HTTP 500" in proc.stderr
        assert "with --resume to continue" in proc.stderr
        assert cache_rows(out) > 0
        first = list(server.answered_prompts)
        assert len(first) == 3
        server.fail_after = None
        server.clear()
        proc = cli(*served_run(server, tiny_model, out, "--resume"))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert not set(first) & set(server.answered_prompts)  # nothing answered twice
        total = len(first) + len(server.answered_prompts)
    with FaultServer() as fresh:
        assert cli(*served_run(fresh, tiny_model, tmp_path / "fresh")).returncode == 0
        assert total == fresh.answered  # and nothing missing


def test_hanging_server_fails_within_the_bound(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    with FaultServer(hang=True) as server:
        start = time.monotonic()
        proc = cli(*served_run(server, tiny_model, tmp_path / "out", "--timeout", "2", "--max-retries", "1"))
        elapsed = time.monotonic() - start
    assert proc.returncode != 0 and server.url in proc.stderr
    assert "Traceback" not in proc.stderr[-1500:]
    assert len(server.posts) == 2  # the request and one retry
    assert elapsed < 90  # start-up (up to a minute on 2 loaded cores) + 2 s × 2 attempts + backoff


@pytest.mark.parametrize(
    ("faults", "ok"),
    [({"malformed": 2}, True), ({"errors_then_ok": 2}, True), ({"delay": 0.3}, True), ({"malformed": 1 << 62}, False)],
    ids=["malformed-then-ok", "5xx-then-ok", "slow", "malformed-forever"],
)
def test_flaky_servers(faults: dict, ok: bool, tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    with FaultServer(**faults) as server:
        proc = cli(*served_run(server, tiny_model, tmp_path / "out", "--max-retries", "2", "--timeout", "10"))
    if ok:
        assert proc.returncode == 0, proc.stderr[-3000:]
    else:
        assert proc.returncode != 0
        assert server.url in proc.stderr and "not JSON" in proc.stderr


def test_api_key_reaches_the_server_and_no_file(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FaultServer(require_key=SECRET) as server:
        env = dict(os.environ, MY_ENDPOINT_KEY=SECRET)
        env.pop(KEY_ENV, None)
        proc = cli(*served_run(server, tiny_model, out, "--api-key-env", "MY_ENDPOINT_KEY"), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert {r.headers.get("authorization") for r in server.posts} == {f"Bearer {SECRET}"}
        assert SECRET not in proc.stdout + proc.stderr
        for path in out.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path

        env = dict(os.environ, **{KEY_ENV: "sk-wrong"})
        proc = cli(*served_run(server, tiny_model, tmp_path / "wrong"), env=env)
        assert proc.returncode != 0
        assert server.url in proc.stderr and KEY_ENV in proc.stderr
        assert "sk-wrong" not in proc.stderr


# ---------------------------------------------------------------------------- signals


def _descendants(pid: int) -> set[int]:
    children = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.add(int(entry.name))
    return children | {d for c in children for d in _descendants(c)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_run_and_everything_it_started(
    sig: signal.Signals, tiny_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with FaultServer(delay=0.5) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", *served_run(server, tiny_model, out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while server.answered < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        started = _descendants(proc.pid)
        assert started, "lm-eval was not started"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig
        assert "Traceback" not in err
        time.sleep(0.5)
        assert not [p for p in started if Path(f"/proc/{p}").exists()], "processes left behind"
        before = set(server.answered_prompts)
        assert cache_rows(out) >= 3
        server.clear()
        resumed = cli(*served_run(server, tiny_model, out, "--resume"))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        prompts = int(re.search(r"([\d,]+) distinct prompts", resumed.stdout).group(1).replace(",", ""))
        after = set(server.answered_prompts)
        assert len(before & after) <= 1  # at most the request in flight when the signal came
        assert len(before | after) == prompts
