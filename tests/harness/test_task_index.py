"""The launcher's task index (`harness_ext/lm_eval/task_index.py`): lm-eval's ~15,000 built-in task
files are left out only when every task a run names, with every group's members, resolves in the
include path alone; anything else (a built-in task, a glob, a group reaching outside the folder, a
tag built-in tasks may also carry) keeps lm-eval's full index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lm_eval.tasks
import pytest
from lm_eval.tasks import TaskManager

from biasmonkey.harness_ext.app.plan import tasks_dir
from biasmonkey.harness_ext.lm_eval.task_index import index_only_what_runs, resolves_within


@pytest.fixture(scope="module")
def ours() -> dict[str, Any]:
    return TaskManager(include_path=str(tasks_dir()), include_defaults=False).task_index


def test_biasmonkeys_tasks_groups_and_tags_resolve_in_its_folder(ours: dict[str, Any]) -> None:
    assert resolves_within(ours, ["biasmonkey_acquiescence", "biasmonkey_acquiescence_key_typo"])
    assert resolves_within(ours, ["biasmonkey"])  # the response-bias group, through its 20 members
    assert resolves_within(ours, ["biasmonkey-yesno", "biasmonkey_yesno_comps"])
    assert resolves_within(ours, ["biasmonkey-response_bias-biases"])  # a tag of biasmonkey's


def test_anything_else_needs_lm_evals_own_index(ours: dict[str, Any], tmp_path: Path) -> None:
    assert not resolves_within(ours, [])
    assert not resolves_within(ours, ["arc_easy"])
    assert not resolves_within(ours, ["biasmonkey_acquiescence", "arc_easy"])
    assert not resolves_within(ours, ["biasmonkey_yesno_*"])  # a glob: lm-eval expands it over every task
    assert not resolves_within(ours, [str(tasks_dir() / "response_bias" / "acquiescence.yaml")])  # a file
    # a user's folder: a group with a built-in member, and a tag built-in tasks may carry as well
    (tmp_path / "mine.yaml").write_text(
        "task: my_task\ntag: [reasoning]\ndataset_path: json\ndataset_kwargs: {data_files: x.json}\n"
        "test_split: train\noutput_type: multiple_choice\ndoc_to_text: q\ndoc_to_target: 0\ndoc_to_choice: [a, b]\n"
    )
    (tmp_path / "group.yaml").write_text("group: my_group\ntask: [my_task, arc_easy]\n")
    (tmp_path / "own.yaml").write_text("group: my_own_group\ntask: [my_task]\n")
    theirs = TaskManager(include_path=str(tmp_path), include_defaults=False).task_index
    assert resolves_within(theirs, ["my_task"]) and resolves_within(theirs, ["my_own_group"])
    assert not resolves_within(theirs, ["my_group"])
    assert not resolves_within(theirs, ["reasoning"])


def test_the_launcher_indexes_lm_evals_tasks_only_when_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[bool] = []

    class Recording(TaskManager):  # records what was asked for; never builds the slow full index here
        def __init__(self, *args: Any, include_defaults: bool = True, **kwargs: Any) -> None:
            built.append(include_defaults)
            super().__init__(*args, include_defaults=False, **kwargs)

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", Recording)
    index_only_what_runs("biasmonkey_acquiescence, biasmonkey")
    manager = lm_eval.tasks.TaskManager(include_path=str(tasks_dir()), metadata={})
    assert built == [False] and "biasmonkey" in manager.all_tasks
    assert set(manager.load(["biasmonkey"])["tasks"]) >= {"biasmonkey_acquiescence"}

    built.clear()
    monkeypatch.setattr(lm_eval.tasks, "TaskManager", Recording)
    index_only_what_runs(["biasmonkey_acquiescence,arc_easy"])
    lm_eval.tasks.TaskManager(include_path=str(tasks_dir()))
    assert built == [False, True]  # tried the folder, then lm-eval's full index
    built.clear()
    lm_eval.tasks.TaskManager()  # no include path: lm-eval's own behaviour
    assert built == [True]
