"""Every file is written whole or not at all (`tasks/atomic_write.py`).

A full disk or a read-only folder is one message naming the path and what to do (exit status 2, no
traceback) and leaves no partial file: the old file, if any, is kept, and no temporary file stays.

The full disk is simulated in-process: the temporary file's descriptor gets a file object whose
writes fail with ENOSPC after a few bytes (`full_disk`). A read-only folder is a real chmod 0o555
where the tests do not run as root (root writes anyway), and a simulated EACCES otherwise.
"""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.tasks import atomic_write
from biasmonkey.tasks.atomic_write import WriteError, atomic_open, make_folder, write_bytes, write_text

ROOT = os.geteuid() == 0


class FullRaw(io.FileIO):
    """A file descriptor on a disk that fills up after `room` bytes."""

    def __init__(self, fd: int, room: int) -> None:
        super().__init__(fd, "wb")
        self.room = room

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if len(data) > self.room:
            super().write(bytes(data[: self.room]))
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return super().write(data)


def full_disk(monkeypatch: pytest.MonkeyPatch, name: str, room: int = 16) -> None:
    """From now on, writing a file called `name` (through atomic_write) fills the disk after `room` bytes."""
    real_open = open

    def fake_open(fd: int, mode: str, **kwargs):
        if not Path(os.readlink(f"/proc/self/fd/{fd}")).name.startswith(f".{name}."):  # .<name>.<random>.tmp
            return real_open(fd, mode, **kwargs)
        buffered = io.BufferedWriter(FullRaw(fd, room))
        if "b" in mode:
            return buffered
        return io.TextIOWrapper(buffered, encoding=kwargs.get("encoding"), newline=kwargs.get("newline"))

    monkeypatch.setattr(atomic_write, "open", fake_open, raising=False)


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` refuses new files: chmod 0o555, or (as root, who writes anyway) EACCES from os.open."""
    if not ROOT:
        folder.chmod(0o555)
        return
    real = os.open

    def fake(path, flags, mode=0o777, *args, **kwargs):
        if Path(path).parent == folder and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(atomic_write.os, "open", fake)


def leftovers(folder: Path) -> list[Path]:
    return list(folder.rglob("*.tmp"))


# ---------------------------------------------------------------------------- the helper


def test_writes_replace_the_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    assert write_text(target, "old\n") == target
    write_text(target, "new ü\n")
    assert target.read_text(encoding="utf-8") == "new ü\n"
    write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    with atomic_open(tmp_path / "c.csv", "w", newline="") as f:
        f.write("x\r\n")
    assert (tmp_path / "c.csv").read_bytes() == b"x\r\n"
    umask = os.umask(0o022)
    os.umask(umask)
    assert (target.stat().st_mode & 0o777) == 0o666 & ~umask  # as a plain write, not a private temp file
    assert not leftovers(tmp_path)


def test_a_full_disk_keeps_the_old_file_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "baselines.json"
    write_text(target, '{"old": true}\n')
    full_disk(monkeypatch, "baselines.json")
    with pytest.raises(WriteError) as err:
        write_text(target, '{"new": "' + "x" * 10_000 + '"}\n')
    assert str(err.value) == (
        f"cannot write {target}: No space left on device; the disk is full: free some space, "
        "or choose another folder with --out"
    )
    assert err.value.path == target and isinstance(err.value, ValueError)
    assert target.read_text() == '{"old": true}\n'
    assert not leftovers(tmp_path)


def test_an_error_of_the_writer_itself_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(KeyError), atomic_open(tmp_path / "t.csv") as f:
        f.write("half")
        raise KeyError("the writer's own bug")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_folder(tmp_path / "ro")
    read_only(monkeypatch, folder)
    with pytest.raises(WriteError, match=r"cannot write .*ro/x\.md: Permission denied; the folder is not writable"):
        write_text(folder / "x.md", "x")
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(WriteError, match="cannot create the folder .*not-a-folder/sub"):
        make_folder(tmp_path / "not-a-folder" / "sub")
    with pytest.raises(WriteError, match="set BIASMONKEY_CACHE_DIR"):
        write_text(folder / "y", "y", "set BIASMONKEY_CACHE_DIR to a writable folder")
    assert not (folder / "x.md").exists() and not leftovers(tmp_path)


# ---------------------------------------------------------------------------- the commands


@pytest.fixture(scope="module")
def results(tiny_model: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small `biasmonkey run` (summary and report written)."""
    out = tmp_path_factory.mktemp("writes") / "out"
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_acquiescence", "--limit", "2"]
    assert main([*argv, "--output", str(out)]) == 0
    return out


def error_of(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_summarize_on_a_full_disk(results: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (results / "summary.csv").read_bytes()
    full_disk(monkeypatch, "summary.csv")
    err = error_of(["summarize", str(results)], capsys)
    assert f"cannot write {results / 'summary.csv'}: No space left on device; the disk is full" in err
    assert (results / "summary.csv").read_bytes() == before
    assert not leftovers(results)


def test_summarize_of_a_read_only_folder_says_to_use_out(
    results: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_only(monkeypatch, results)
    try:
        err = error_of(["summarize", str(results)], capsys)
        assert f"cannot write {results / 'summary.md'}" in err
        assert "the folder is not writable: choose another folder with --out" in err
        assert main(["summarize", str(results), "--out", str(tmp_path / "elsewhere")]) == 0
    finally:
        results.chmod(0o755)
    assert (tmp_path / "elsewhere" / "summary.csv").is_file()
    assert not leftovers(results)


@pytest.mark.parametrize("name", ["baselines.json", "report.html", "summary.csv"])
def test_report_on_a_full_disk(name: str, results: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    fresh, again = tmp_path / "fresh", results / "report"
    written: Callable[[Path], list[Path]] = lambda folder: sorted(folder.rglob(name))  # noqa: E731
    (old,) = [p for p in written(again) if p.parent.name in ("report", "tables")]
    before = old.read_bytes()
    full_disk(monkeypatch, name)
    for out in (fresh, again):
        err = error_of(["report", str(results), "--out", str(out)], capsys)
        assert f"cannot write {out}" in err and f"{name}: No space left on device" in err
        assert not leftovers(out)
    assert not written(fresh) and old.read_bytes() == before


def test_a_figure_on_a_full_disk(results: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    pngs = sorted((results / "report").rglob("*.png"))
    assert pngs
    full_disk(monkeypatch, pngs[0].name)
    err = error_of(["report", str(results), "--out", str(tmp_path / "r")], capsys)
    assert f"{pngs[0].name}: No space left on device" in err
    assert not list((tmp_path / "r").rglob(pngs[0].name)) and not leftovers(tmp_path)
