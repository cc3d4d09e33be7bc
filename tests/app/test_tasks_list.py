"""`biasmonkey tasks list`: every family, task, mode and option of the registry, as text and as JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.tasks.contract import inspect_task_name, lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES


def listing(capsys, *argv: str) -> dict:
    assert main(["tasks", "list", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_lists_every_family_and_task(capsys) -> None:
    families = listing(capsys)["families"]
    assert [f["name"] for f in families] == list(FAMILIES)
    for info in families:
        family = FAMILIES[info["name"]]
        assert (info["title"], info["suite"], info["unit"]) == (family.title, family.suite, family.unit)
        assert [t["name"] for t in info["tasks"]] == list(family.tasks)
        for task in info["tasks"]:
            assert task["lm_eval"] == lm_eval_task_name(task["name"]) == f"biasmonkey_{task['name']}"
            assert task["inspect"] == inspect_task_name(task["name"]) == f"biasmonkey/{task['name']}"
            assert task["in_suite"] == (task["name"] not in family.variants)
            assert task["arguments"] == dict(family.tasks[task["name"]])
            assert "distinct_prompts" not in task  # only with --prompts
    assert sum(len(f["tasks"]) for f in families) == sum(len(f.tasks) for f in FAMILIES.values())


def test_options_and_defaults_match_the_dataclasses(capsys) -> None:
    for info in listing(capsys)["families"]:
        fields = dataclasses.fields(FAMILIES[info["name"]].options_type)
        assert [o["name"] for o in info["options"]] == [f.name for f in fields]
        for option, f in zip(info["options"], fields):
            assert option["default"] == f.default, (info["name"], f.name)
            assert option["help"] == f.metadata["help"]
            assert option["harnesses"] == list(f.metadata["harnesses"])
            assert option["choices"] == (list(f.metadata["choices"]) if f.metadata["choices"] else None)
            runs = "lm_eval" in f.metadata["harnesses"]
            assert option["run_flag"] == ("--" + f.name.replace("_", "-") if runs else None)


def test_modes_are_the_mode_option_choices(capsys) -> None:
    families = {f["name"]: f for f in listing(capsys)["families"]}
    for name, family in FAMILIES.items():
        mode = next((f for f in dataclasses.fields(family.options_type) if f.name == "mode"), None)
        expected = list(mode.metadata["choices"]) if mode else []
        assert [m["name"] for m in families[name]["modes"]] == expected
        assert [m["name"] for m in families[name]["modes"] if m["default"]] == ([mode.default] if mode else [])
    cognitive = {m["name"]: m["harnesses"] for m in families["cognitive"]["modes"]}
    assert cognitive["exact"] == ["lm_eval"]  # exact mode of the cognitive tasks is lm-eval only
    assert cognitive["generate"] == ["lm_eval", "inspect"]
    assert families["cognitive"]["options"][0]["inspect_default"] == "generate"


def test_family_filter(capsys) -> None:
    families = listing(capsys, "--family", "yesno", "--family", "cognitive")["families"]
    assert [f["name"] for f in families] == ["yesno", "cognitive"]


def test_unknown_family_is_an_error_naming_the_choices(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["tasks", "list", "--family", "nope"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and all(name in err for name in FAMILIES)


def test_human_listing_is_compact_and_all_lists_every_task(capsys) -> None:
    assert main(["tasks", "list"]) == 0
    text = capsys.readouterr().out
    for name, family in FAMILIES.items():
        assert f"{name}: {family.title}" in text
    answer_position = FAMILIES["answer_position"]
    assert f"+{len(answer_position.tasks) - 4}; --all lists every task" in text
    assert "biasmonkey_answer_position_virology" not in text  # only a few names
    assert "biasmonkey-answer-position-fewshot (57)" in text  # grouped by lm-eval group
    assert len(text.splitlines()) < 18 * len(FAMILIES)  # a title, a few lines and the options table per family

    assert main(["tasks", "list", "--all", "--family", "answer_position"]) == 0
    text = capsys.readouterr().out
    for name in answer_position.tasks:
        assert f"{lm_eval_task_name(name)} " in text and inspect_task_name(name) in text


def test_prompts_are_counted_as_the_plan_counts_them(data_dir: Path, capsys) -> None:
    from biasmonkey.harness_ext.app.plan import build_requests

    (info,) = listing(capsys, "--family", "response_bias", "--prompts")["families"]
    built = {t.name: t for t in build_requests("biasmonkey_acquiescence,biasmonkey_acquiescence_reword")}
    tasks = {t["lm_eval"]: t for t in info["tasks"]}
    for name, task in built.items():
        assert tasks[name]["distinct_prompts"] == len({r.context for r in task.requests}) > 0
    assert info["distinct_prompts"] >= max(t["distinct_prompts"] for t in info["tasks"])


def test_prompts_that_cannot_be_counted_are_reported(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import biasmonkey.harness_ext.app.plan as plan

    def missing(spec: str, *args: object) -> list:
        raise ValueError("no data for " + spec.split(",")[0])

    monkeypatch.setattr(plan, "build_requests", missing)
    assert main(["tasks", "list", "--family", "yesno", "--prompts"]) == 1
    captured = capsys.readouterr()
    assert "distinct prompts: not counted: no data for biasmonkey_yesno_comps" in captured.out
    assert "distinct prompts not counted for yesno" in captured.err
