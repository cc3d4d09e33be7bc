"""The lm-eval child of `biasmonkey run` dies with it, however it dies (SIGKILL included), and so
does everything lm-eval started (a local server, dataloader workers, …).

`biasmonkey run` starts the launcher with PARENT_ENV set to its own pid, as the leader of a new
session, so of a process group of its own that lm-eval's children join. At startup the launcher
(`die_with_parent`) asks Linux to SIGKILL it when its parent dies (prctl PR_SET_PDEATHSIG), then
checks that the parent is still the one that started it (it may have died before the prctl). Where
there is no prctl (macOS, BSD), a daemon thread watches the parent pid instead and, once it changes,
kills the launcher's process group.

Beside the launcher, `biasmonkey run` starts a group watchdog (`start_group_watch`: this file run as
a script, stdlib only): it waits for the end of a pipe whose only writer is `biasmonkey run`, and on
it, whenever and however the run ends, SIGKILLs the launcher's process group, lm-eval's own
children included. A child of the run, it is reaped by it when the run ends normally.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time

__all__ = ["PARENT_ENV", "die_with_parent", "start_group_watch"]

PARENT_ENV = "BIASMONKEY_PARENT_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_SECONDS = 0.5


def _set_parent_death_signal(sig: int) -> bool:
    """prctl(PR_SET_PDEATHSIG, sig); False where the platform has no prctl or it fails."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _kill_own_group() -> None:
    """SIGKILL the launcher's process group when it leads one (as `biasmonkey run` starts it), else itself."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    _kill_own_group()


def die_with_parent(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Tie this process's life to the `biasmonkey run` that started it (a no-op when PARENT_ENV is unset)."""
    value = environ.get(PARENT_ENV, "")
    if not value.isdigit():
        return
    parent = int(value)
    if not _set_parent_death_signal(signal.SIGKILL):
        threading.Thread(target=_watch, args=(parent,), name="biasmonkey-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the watch began
        _kill_own_group()


def start_group_watch(group: int) -> subprocess.Popen:
    """The watchdog of process group `group` (module docstring); closing its stdin (here: the end of
    this process, however it ends) kills the group. The caller closes it and waits for the watchdog."""
    cmd = [sys.executable, "-I", "-S", os.path.abspath(__file__), str(group)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)


def _watch_group(group: int) -> None:
    """The watchdog: SIGKILL the process group `group` once stdin ends (its only writer is gone)."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # a Ctrl-C at the terminal is the run's to handle
        signal.signal(sig, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    with contextlib.suppress(ProcessLookupError):  # the group already ended
        os.killpg(group, signal.SIGKILL)


if __name__ == "__main__":  # the group watchdog, started by `start_group_watch`
    _watch_group(int(sys.argv[1]))
