"""The committed lm-eval task files are the ones `tasks/task_files.py` generates from the families'
task tables; regenerate them with `python -m biasmonkey.tasks.task_files`."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES
from biasmonkey.tasks.task_files import TASKS_DIR, differences, main, shared_file, task_files, write


def test_committed_task_files_are_current() -> None:
    assert differences() == [], "regenerate them: python -m biasmonkey.tasks.task_files"


def _with_shared_files(root: Path) -> Path:
    """`root` holding only the hand-written files of each family: its shared file, its examples."""
    for family in FAMILIES.values():
        (root / family.name).mkdir()
        hand_written = [shared_file(family)] * bool(family.tasks) + list(family.hand_written_files)
        for name in hand_written:
            (root / family.name / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(TASKS_DIR / family.name / name, root / family.name / name)
    return root


def test_generating_into_a_fresh_folder_reproduces_the_committed_files(tmp_path: Path) -> None:
    write(_with_shared_files(tmp_path))
    committed = {p.relative_to(TASKS_DIR): p.read_bytes() for p in TASKS_DIR.rglob("*.yaml")}
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.yaml")} == committed


def test_every_task_of_every_family_has_one_file() -> None:
    named = [yaml.safe_load(text).get("task") for text in task_files().values()]
    tasks = [lm_eval_task_name(t) for family in FAMILIES.values() for t in family.tasks]
    assert sorted(t for t in named if isinstance(t, str)) == sorted(tasks)


def test_check_reports_stale_missing_and_stray_files(tmp_path: Path, capsys) -> None:
    assert main(["--root", str(_with_shared_files(tmp_path))]) == 0
    (tmp_path / "yesno" / "arith.yaml").write_text("task: edited by hand\n")
    (tmp_path / "cognitive" / "anchoring.yaml").unlink()
    (tmp_path / "yesno" / "stray.yaml").write_text("task: stray\n")
    (tmp_path / "yesno" / "_yesno.yaml").unlink()
    assert main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "differs: yesno/arith.yaml" in err
    assert "missing: cognitive/anchoring.yaml" in err
    assert "not generated: yesno/stray.yaml" in err
    assert "missing shared file: yesno/_yesno.yaml" in err


def test_the_command_also_keeps_the_hub_definition_current(tmp_path: Path, monkeypatch, capsys) -> None:
    from biasmonkey.harness_ext.app import task_files_command
    from biasmonkey.harness_ext.app.cli import main as biasmonkey_main
    from biasmonkey.harness_ext.app.report.hub import eval_yaml_text

    hub = tmp_path / "eval.yaml"
    hub.write_text("stale\n")
    monkeypatch.setattr(task_files_command, "HUB_CONFIG", hub)
    assert biasmonkey_main(["task-files", "--check"]) == 1
    assert f"differs: {hub}" in capsys.readouterr().err and hub.read_text() == "stale\n"
    assert biasmonkey_main(["task-files"]) == 0
    assert hub.read_text() == eval_yaml_text()
    assert biasmonkey_main(["task-files", "--check"]) == 0
