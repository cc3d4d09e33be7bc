"""The lm-eval child of `biasmonkey run` dies with it, however it dies (SIGKILL included).

`biasmonkey run` starts the launcher with PARENT_ENV set to its own pid. At startup the launcher
(`die_with_parent`) asks Linux to SIGKILL it when its parent dies (prctl PR_SET_PDEATHSIG), then
checks that the parent is still the one that started it (it may have died before the prctl). Where
there is no prctl (macOS, BSD), a daemon thread watches the parent pid instead and, once it changes,
kills the launcher's process group: the launcher and whatever it started (`biasmonkey run` starts it
as the leader of a new session).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = ["PARENT_ENV", "die_with_parent"]

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
