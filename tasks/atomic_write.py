"""Every file biasmonkey writes goes through here: written whole or not at all.

Each writer writes a temporary file beside its target (`.<name>.<random>.tmp`, same folder, so the
rename stays on one file system) and renames it over the target (`os.replace`): a reader sees the old
file or the new one, never half of one. Any OSError (a full disk, a read-only folder, a missing
permission) removes the temporary file and becomes one `WriteError` naming the path, the reason and
what to do; it is a ValueError, so the command line prints it as one message, not a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["OUT_HINT", "WriteError", "atomic_open", "make_folder", "write_bytes", "write_error", "write_text"]

# What to do instead, for the commands that write where --out says (run: --output, which --out abbreviates).
OUT_HINT = "choose another folder with --out"
NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}


class WriteError(ValueError):
    """A file or folder that could not be written; the message names it and says what to do."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def _advice(err: OSError, hint: str) -> str:
    if err.errno in NO_SPACE:
        return f"the disk is full: free some space, or {hint}"
    if err.errno in NOT_WRITABLE:
        return f"the folder is not writable: {hint}"
    return hint


def write_error(path: Path | str, err: OSError, hint: str = OUT_HINT, what: str = "write") -> WriteError:
    """`cannot write <path>: <reason>; <what to do>` for an OSError met while writing `path`;
    `hint`: where else to write (default: another folder with --out)."""
    reason = err.strerror or str(err)
    return WriteError(Path(path), f"cannot {what} {path}: {reason}; {_advice(err, hint)}")


def make_folder(folder: Path | str, hint: str = OUT_HINT) -> Path:
    """`mkdir -p folder`, with a WriteError instead of an OSError."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(folder, err, hint, "create the folder") from None
    return folder


def _temporary(path: Path) -> tuple[Path, int]:
    """A new, empty file beside `path` (mode 0666 less the umask, like a plain write) and its descriptor."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


@contextlib.contextmanager
def atomic_open(path: Path | str, mode: str = "w", hint: str = OUT_HINT, **kwargs: Any) -> Iterator[IO[Any]]:
    """A file object for writers that need one (csv, pandas, matplotlib's savefig): what they write
    replaces `path` when the block ends without an error; otherwise `path` is left as it was.
    `mode` is "w" or "wb"; `hint` as for `write_error`; `kwargs` go to `open` (newline, encoding)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', not {mode!r}")
    path = Path(path)
    if "b" not in mode:
        kwargs.setdefault("encoding", "utf-8")
    try:
        tmp, fd = _temporary(path)
    except OSError as err:
        raise write_error(path, err, hint) from None
    try:
        with open(fd, mode, **kwargs) as f:
            yield f
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise write_error(path, err, hint) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path | str, text: str, hint: str = OUT_HINT, encoding: str = "utf-8") -> Path:
    """`Path.write_text`, atomic; returns the path."""
    with atomic_open(path, "w", hint, encoding=encoding) as f:
        f.write(text)
    return Path(path)


def write_bytes(path: Path | str, data: bytes, hint: str = OUT_HINT) -> Path:
    """`Path.write_bytes`, atomic; returns the path."""
    with atomic_open(path, "wb", hint) as f:
        f.write(data)
    return Path(path)
