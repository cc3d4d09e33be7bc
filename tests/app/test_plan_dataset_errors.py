"""A task whose dataset cannot be loaded (a Hub dataset offline, a missing data file) is one line
naming the task and the fix from `biasmonkey plan` and `run`, exit 2, before any model runs (it was
a traceback from `datasets`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from position_fixtures import write_local_task

from biasmonkey.harness_ext.app.cli import main


@pytest.mark.parametrize(
    ("overrides", "cause"),
    [
        ({"dataset_path": "nobody/no_such_dataset", "dataset_kwargs": "{}"}, "ConnectionError"),  # tests run offline
        ({"dataset_kwargs": "{data_files: {test: /nonexistent/items.json}}"}, "FileNotFoundError"),
    ],
)
@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_dataset_that_cannot_be_loaded_is_named(
    tmp_path: Path,
    tiny_model: Path,
    capsys: pytest.CaptureFixture,
    command: str,
    overrides: dict[str, str],
    cause: str,
) -> None:
    write_local_task(tmp_path / "own", "unreachable", **overrides)
    out = tmp_path / "out"
    argv = [
        command,
        "--position-of",
        "unreachable",
        "--include-path",
        str(tmp_path / "own"),
        "--model",
        str(tiny_model),
    ]
    code = main(argv + (["--output", str(out)] if command == "run" else []))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "position_unreachable: a task's dataset could not be loaded" in err and cause in err
    assert "check its dataset_path and data files" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() or not list(out.rglob("results_*.json"))
