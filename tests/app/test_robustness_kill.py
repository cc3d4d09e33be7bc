"""No orphan after any kill, one run per output folder.

A SIGKILL of `biasmonkey run` (nothing of it runs afterwards) still takes its lm-eval child with it,
and whatever that child started (`harness_ext/lm_eval/parent_watch.py`: prctl PR_SET_PDEATHSIG on
Linux, a watching thread elsewhere, and a watchdog of the child's process group),
and a second run in an output folder that a live run is writing is refused, naming the folder and
the live run's pid; once that run is dead its lock is free (`harness_ext/app/run_lock.py`).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fault_server import FaultServer
from test_robustness import _descendants

from biasmonkey.harness_ext.app.run_lock import LOCK_NAME, holder_of, output_lock
from biasmonkey.harness_ext.lm_eval.parent_watch import PARENT_ENV

CLI = [sys.executable, "-m", "biasmonkey.harness_ext.app.cli"]


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its reaper."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: set[int], seconds: float) -> set[int]:
    """The pids still alive after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := {p for p in pids if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def lock_is_free(folder: Path) -> bool:
    with (folder / LOCK_NAME).open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def served_run(server: FaultServer, tokenizer: Path, out: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "run",
        *["--backend", "server", "--base-url", server.url, "--server-model", "tiny"],
        *["--tokenizer", str(tokenizer), "--tasks", "biasmonkey_acquiescence", "--limit", "4"],
        *["--output", str(out), "--num-concurrent", "1", *extra],
    ]


@contextmanager
def live_run(
    server: FaultServer, tokenizer: Path, out: Path, answers: int = 1
) -> Iterator[tuple[subprocess.Popen, set[int]]]:
    """A `biasmonkey run` whose lm-eval has had `answers` answers from the (slow) server; its processes."""
    proc = subprocess.Popen(
        served_run(server, tokenizer, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while server.answered < answers and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert server.answered >= answers, proc.communicate(timeout=30)[1][-3000:] if proc.poll() is not None else ""
        started = _descendants(proc.pid)
        assert started, "lm-eval was not started"
        yield proc, started
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


# ---------------------------------------------------------------------------- a real run


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_sigkill_of_the_run_takes_lm_eval_with_it_and_frees_the_folder(
    tiny_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with FaultServer(delay=1.0) as server, live_run(server, tiny_model, out) as (proc, started):
        holder = holder_of(out / LOCK_NAME)
        assert holder["pid"] == proc.pid and holder["lm_eval_pid"] in started
        proc.kill()
        proc.wait(timeout=10)
        assert not wait_gone(started, 5), "lm-eval outlived the SIGKILL of biasmonkey run"
        answered = server.answered
        time.sleep(2.5)
        assert server.answered <= answered + 1  # nothing writes any more (at most the answer in flight)
    assert lock_is_free(out)
    assert not list(out.rglob("summary.md"))


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_a_second_run_in_a_live_runs_folder_is_refused(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FaultServer(delay=0.5) as server:
        with live_run(server, tiny_model, out, answers=2) as (first, started):
            server.delay = 10.0  # the first run stays busy while the others try
            for extra in ([], ["--resume"]):
                second = subprocess.run(
                    served_run(server, tiny_model, out, *extra), capture_output=True, text=True, timeout=120
                )
                assert second.returncode == 2, second.stderr[-3000:]
                assert "Traceback" not in second.stderr
                assert f"--output {out}: another biasmonkey run is writing into this folder" in second.stderr
                assert f"pid {first.pid}" in second.stderr and f"kill {first.pid}" in second.stderr
                assert "choose another --output" in second.stderr
            assert first.poll() is None  # the refused runs left the live one alone
            first.kill()
            first.wait(timeout=10)
            assert not wait_gone(started, 5)
        assert lock_is_free(out)
        server.delay = 0.0
        server.clear()
        resumed = subprocess.run(
            served_run(server, tiny_model, out, "--resume"), capture_output=True, text=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (out / "summary.md").is_file()


# ---------------------------------------------------------------------------- the parts, without lm-eval


CHILD = textwrap.dedent(
    """
    import sys, time
    from biasmonkey.harness_ext.lm_eval import parent_watch
    if sys.argv[1] == "thread":  # as on a platform without prctl
        parent_watch._set_parent_death_signal = lambda sig: False
        parent_watch.POLL_SECONDS = 0.1
    parent_watch.die_with_parent()
    print("watching", flush=True)
    time.sleep(120)
    """
)
PARENT = textwrap.dedent(
    """
    import os, subprocess, sys, time
    env = dict(os.environ, {env}=str(os.getpid()))
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=env, start_new_session=True,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "watching\\n"
    print(child.pid, flush=True)
    time.sleep(120)
    """
).format(env=PARENT_ENV)


@pytest.mark.parametrize("how", ["prctl", "thread"])
def test_the_launcher_dies_with_its_parent(how: str) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, how], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()
        parent.wait(timeout=10)
        assert not wait_gone({child}, 5), f"the child outlived its parent ({how})"
    finally:
        parent.kill()
        parent.communicate(timeout=10)


# Launchers under `run_lm_eval_child` (the run's own machinery): one that starts a grandchild, as
# lm-eval starts a local server or dataloader workers, and one that ends at once.
LAUNCHER = textwrap.dedent(
    """
    import subprocess, sys, time
    from biasmonkey.harness_ext.lm_eval import parent_watch
    if sys.argv[1] == "thread":  # the launcher's own watch as on a platform without prctl
        parent_watch._set_parent_death_signal = lambda sig: False
        parent_watch.POLL_SECONDS = 0.1
    parent_watch.die_with_parent()
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(grandchild.pid, flush=True)
    time.sleep(120)
    """
)
RUN = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from biasmonkey.harness_ext.app.run import run_lm_eval_child
    code = run_lm_eval_child([sys.executable, "-c", sys.argv[1], *sys.argv[2:]], dict(os.environ), None)
    children = [p.parent.name for p in Path("/proc").glob("[0-9]*/stat")
                if p.read_text().rsplit(")", 1)[1].split()[1] == str(os.getpid())]
    print("ended", code, *children, flush=True)
    """
)


def group_of(pid: int) -> set[int]:
    """The live processes of the process group `pid`."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


@pytest.mark.parametrize("how", ["prctl", "thread"])
def test_what_lm_eval_started_dies_with_the_run(how: str) -> None:
    """A SIGKILL of `biasmonkey run` (here of its `run_lm_eval_child`) takes lm-eval's own children
    with it: the launcher leads a process group of its own, and the run's group watchdog kills it."""
    run = subprocess.Popen([sys.executable, "-c", RUN, LAUNCHER, how], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(run.stdout.readline())
        launcher = os.getpgid(grandchild)
        assert launcher != os.getpgrp() and os.getsid(grandchild) == launcher  # a session of its own
        group = group_of(launcher)
        assert {launcher, grandchild} <= group, group
        run.kill()
        run.wait(timeout=10)
        assert not wait_gone(group, 10), f"lm-eval's processes outlived the SIGKILL of the run ({how})"
    finally:
        run.kill()
        run.communicate(timeout=10)


def test_the_group_watchdog_is_reaped_when_lm_eval_ends() -> None:
    """lm-eval ending by itself: the run returns its status and has no child left (the watchdog reaped)."""
    launcher = "import sys; from biasmonkey.harness_ext.lm_eval import parent_watch; parent_watch.die_with_parent(); sys.exit(3)"
    proc = subprocess.run([sys.executable, "-c", RUN, launcher], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ended", "3"]


def test_a_launcher_whose_parent_is_already_gone_stops_at_once() -> None:
    code = "from biasmonkey.harness_ext.lm_eval.parent_watch import die_with_parent; die_with_parent(); print('ran')"
    env = dict(os.environ, **{PARENT_ENV: str(os.getpid() + 1_000_000)})  # not its parent
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, start_new_session=True)
    assert proc.returncode == -signal.SIGKILL and "ran" not in proc.stdout


def test_without_the_variable_the_launcher_is_left_alone() -> None:
    code = "from biasmonkey.harness_ext.lm_eval.parent_watch import die_with_parent; die_with_parent(); print('ran')"
    env = {k: v for k, v in os.environ.items() if k != PARENT_ENV}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ran" in proc.stdout


def test_the_lock_names_its_holder_and_is_free_after_it(tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    with output_lock(out, ["biasmonkey", "run", "--output", str(out)]) as lock:
        assert lock is not None
        holder = json.loads((out / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["command"] == f"biasmonkey run --output {out}"
        assert holder["host"] and holder["started"]
        refused = rf"pid {os.getpid()} on .*kill {os.getpid()}\), or choose another"
        with pytest.raises(ValueError, match=refused), output_lock(out):
            pass
        assert not lock_is_free(out)
    assert lock_is_free(out)
    with output_lock(out):  # taken again once free
        pass


def test_a_held_lock_without_readable_holder_text_is_still_refused(tmp_path: Path) -> None:
    with output_lock(tmp_path) as lock:
        os.ftruncate(lock.fd, 0)  # as between the holder's truncate and its write
        with pytest.raises(ValueError, match="pid unknown"), output_lock(tmp_path):
            pass
