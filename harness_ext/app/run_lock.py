"""One `biasmonkey run` per output folder: a lock file that names the run holding it.

`biasmonkey run` takes an exclusive `fcntl.flock` on `<output>/.biasmonkey-run.lock` before it touches
the folder and writes into it who holds it (pid, host, start time, command, the lm-eval child). The
lm-eval child inherits the locked descriptor, so the folder stays locked while either process lives;
the kernel drops the lock when the last of them dies, however it dies (SIGKILL included), so a dead
holder's lock is free at once and nothing needs cleaning up. A second run in a locked folder, `--resume`
included, is refused with one message naming the folder, the holder and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biasmonkey.tasks.atomic_write import make_folder, write_error

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are not serialised there
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "OutputLock", "holder_of", "output_lock"]

LOCK_NAME = ".biasmonkey-run.lock"


@dataclass
class OutputLock:
    """A held lock: `fd` is the locked descriptor (pass it on to keep the lock while a child lives)."""

    path: Path
    fd: int
    holder: dict[str, Any]

    def note_child(self, pid: int) -> None:
        """Record the lm-eval child in the lock file (shown to a run that is refused)."""
        self.holder["lm_eval_pid"] = pid
        _write_holder(self.fd, self.holder)


def _write_holder(fd: int, holder: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the lock is what counts; its text is only for messages
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)


def holder_of(path: Path) -> dict[str, Any]:
    """What the lock file says about its holder ({} where it says nothing readable)."""
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _refusal(folder: Path, holder: dict[str, Any]) -> ValueError:
    pid = holder.get("pid", "unknown")
    child = f", lm-eval pid {holder['lm_eval_pid']}" if "lm_eval_pid" in holder else ""
    where = f" on {holder['host']}" if holder.get("host") else ""
    since = f", started {holder['started']}" if holder.get("started") else ""
    command = f": {holder['command']}" if holder.get("command") else ""
    return ValueError(
        f"--output {folder}: another biasmonkey run is writing into this folder (pid {pid}{where}{child}{since}"
        f"{command}); wait for it to finish, stop it (kill {pid}), or choose another --output"
    )


@contextlib.contextmanager
def output_lock(folder: Path, command: list[str] | None = None) -> Iterator[OutputLock | None]:
    """Hold the output folder's lock for the block (creating the folder); a live holder: ValueError.
    Yields None where the platform has no flock."""
    if fcntl is None:
        yield None
        return
    path = make_folder(folder) / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise write_error(path, err, "choose another folder with --output") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(folder, holder_of(path)) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "command": " ".join(command if command is not None else ["biasmonkey", *sys.argv[1:]]),
        }
        _write_holder(fd, holder)
        yield OutputLock(path, fd, holder)
    finally:
        os.close(fd)  # releases the lock unless a live child still holds the descriptor
