"""The stock command lines (`lm_eval`, `inspect eval`) stop on an error in a biasmonkey task's
options with biasmonkey's one line, not a traceback of the harness's frames
(`harness_ext/short_errors.py`); every other error keeps Python's traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from biasmonkey.harness_ext.short_errors import SHOW_TRACEBACK, install, raised_by_biasmonkey
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.options import check_choice

BOGUS = "option mode='bogus' is invalid; use one of exact, sample"


def caught(call) -> tuple[type[BaseException], BaseException, object]:
    try:
        call()
    except BaseException as err:  # noqa: BLE001 - the test hands every error to the hook
        return type(err), err, err.__traceback__
    raise AssertionError("no error")


def test_what_counts_as_biasmonkeys_word() -> None:
    kind, _, tb = caught(lambda: check_choice("mode", "bogus", ("exact", "sample")))
    assert raised_by_biasmonkey(kind, tb)  # a ValueError raised in a biasmonkey module
    kind, _, tb = caught(lambda: int("x"))
    assert not raised_by_biasmonkey(kind, tb)  # raised here, not in biasmonkey
    kind, _, tb = caught(lambda: {}["key"])
    assert not raised_by_biasmonkey(kind, tb)  # not a ValueError: a bug keeps its traceback

    def data_error() -> None:
        raise DataError("data.csv, row 3: no question")

    kind, _, tb = caught(data_error)
    assert raised_by_biasmonkey(kind, tb)  # one of biasmonkey's error types, wherever raised


def test_the_hook_prints_one_line_and_chains(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *args: seen.append(args[0]))
    install()
    install()  # once per process: not a hook around a hook
    hook = sys.excepthook
    assert getattr(hook, "biasmonkey", False)
    hook(*caught(lambda: check_choice("mode", "bogus", ("exact", "sample"))))
    assert capsys.readouterr().err == f"biasmonkey: error: {BOGUS} ({SHOW_TRACEBACK}=1 shows the traceback)\n"
    hook(*caught(lambda: {}["key"]))
    assert seen == [KeyError]  # handed to the hook installed before
    monkeypatch.setenv(SHOW_TRACEBACK, "1")
    hook(*caught(lambda: check_choice("mode", "bogus", ("exact", "sample"))))
    assert seen == [KeyError, ValueError] and capsys.readouterr().err == ""


def stock(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A command of the environment's own (`lm_eval`, `inspect`), as a user types it."""
    program = Path(sys.executable).parent / argv[0]
    return subprocess.run([str(program), *argv[1:]], capture_output=True, text=True, timeout=600, env=env)


def test_stock_lm_eval(tiny_model: Path, data_dir: Path) -> None:
    from biasmonkey.harness_ext.app.plan import tasks_dir

    proc = stock(
        *["lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model}", "--device", "cpu"],
        *["--tasks", "biasmonkey_acquiescence", "--include_path", str(tasks_dir()), "--limit", "1"],
        *["--metadata", '{"mode": "bogus"}'],
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1].startswith(f"biasmonkey: error: {BOGUS}"), proc.stderr[-3000:]


def test_stock_inspect_eval(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    argv = ["inspect", "eval", "biasmonkey/acquiescence", "--model", f"hf/{tiny_model}", "--limit", "1"]
    argv += ["-T", "mode=bogus", "--log-dir", str(tmp_path / "logs"), "--display", "plain"]
    proc = stock(*argv)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1].startswith(f"biasmonkey: error: {BOGUS}"), proc.stderr[-3000:]
    traced = stock(*argv, env={**os.environ, SHOW_TRACEBACK: "1"})
    assert "Traceback" in traced.stderr and traced.stderr.strip().splitlines()[-1] == f"ValueError: {BOGUS}"
