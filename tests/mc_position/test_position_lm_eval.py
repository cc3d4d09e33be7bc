"""Any lm-eval multiple-choice task wrapped by name (the tiny random model: plumbing, not realism).

One run of lm-eval's `hf` model over two wrapped tasks, two orders per item, both letter spellings:
a cloze task over a local JSON file (rendered lettered here) and `mmlu_anatomy_authors` (the
answer_position family's MMLU anatomy items through their authors' template, a lettered task), and
one run of the answer_position family's own task: in the original order the wrapped task gives the
family's prompts and numbers to 1e-9; the logged documents say which order was shown; the harness's
table is the records' summary; bad tasks get one message naming the task and the fix."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from position_fixtures import ITEMS, write_local_task
from test_lm_eval_e2e import metric, run_lm_eval

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.tasks.answer_position.scoring import summarize as answer_position_summary
from biasmonkey.tasks.families import POSITION
from biasmonkey.tasks.mc_position.family import CONDITIONS, MEASURES, metric_name
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import LETTERS, shifts_for
from biasmonkey.tasks.mc_position.scoring import summarize
from biasmonkey.tasks.mc_position.wrappers import WrapError, write_wrappers

pytestmark = pytest.mark.usefixtures("data_dir")

EXAMPLES = Path(__file__).resolve().parents[2] / "tasks" / "mc_position" / "examples"
OPTIONS = PositionOptions(letter_spellings="both", permutations=2)
LOCAL, MMLU = "biasmonkey_position_local_mc", "biasmonkey_position_mmlu_anatomy_authors"


def samples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("position")
    write_local_task(root / "own")
    assert write_wrappers(["local_mc", "mmlu_anatomy_authors"], root / "wrapped", [str(root / "own"), str(EXAMPLES)])
    metadata = json.dumps({"letter_spellings": "both", "permutations": 2})
    wrapped = run_lm_eval(
        tiny_model,
        root / "wrapped_out",
        f"{LOCAL},{MMLU}",
        "--metadata",
        metadata,
        include=str(root / "wrapped"),
        dtype="float64",
        launcher=False,  # the wrappers as `lm_eval --include_path DIR` reads them
    )
    family = run_lm_eval(tiny_model, root / "family_out", "biasmonkey_answer_position_anatomy", dtype="float64")
    return {"wrapped": wrapped, "family": family, "root": root}


def test_original_order_reproduces_the_answer_position_family(runs: dict) -> None:
    (_, wrapped), (_, family) = runs["wrapped"], runs["family"]
    theirs = samples(family["biasmonkey_answer_position_anatomy"])
    ours = [s for s in samples(wrapped[MMLU]) if s["doc"]["biasmonkey_position"]["shift"] == 0]
    ours = [s for s in ours if s["doc"]["biasmonkey_position"]["kind"] == "item"]
    assert len(ours) == len(theirs) == 135
    for mine, family_doc in zip(ours, theirs):  # the same prompt and continuations, in file order
        assert mine["arguments"] == family_doc["arguments"]
    want = answer_position_summary(records_from_samples_file(family["biasmonkey_answer_position_anatomy"]))
    got = summarize(records_from_samples_file(wrapped[MMLU]), OPTIONS).conditions
    assert got["raw"].accuracy == pytest.approx(want.accuracy, abs=1e-9)
    assert got["raw"].recalls_original == pytest.approx(want.recalls, abs=1e-9)
    assert got["raw"].rstd_original == pytest.approx(want.rstd, abs=1e-9)
    assert got["specific"].accuracy == pytest.approx(want.accuracy_specific, abs=1e-9)
    assert got["specific"].recalls_original == pytest.approx(want.recalls_specific, abs=1e-9)
    assert got["specific"].rstd_original == pytest.approx(want.rstd_specific, abs=1e-9)


def test_documents_say_which_order_was_shown(runs: dict) -> None:
    _, wrapped = runs["wrapped"]
    logged = samples(wrapped[LOCAL])
    metas = [s["doc"]["biasmonkey_position"] for s in logged]
    # one content-free document per option count, first, then every item in its original order and one
    # drawn cyclic order (the same draw in every run: seeded by the item's id)
    assert [(m["kind"], m["n"]) for m in metas[:4]] == [("content_free", n) for n in (3, 4, 2, 5)]
    orders = [
        (f"local_mc-{i}", s)
        for i, item in enumerate(ITEMS)
        for s in shifts_for(len(item["choices"]), 2, 0, f"local_mc-{i}")
    ]
    assert [(m["id"], m["shift"]) for m in metas[4:]] == orders and len(orders) == 10
    by_order = {(m["id"], m["shift"]): s for m, s in zip(metas, logged)}
    # "Which is a fruit?" (carrot, apple, potato; gold apple) rotated once: apple first; twice: apple last
    ((_, shift),) = [o for o in orders if o[0] == "local_mc-0" and o[1] != 0]
    shown, letter = {1: (["apple", "potato", "carrot"], "A"), 2: (["potato", "carrot", "apple"], "C")}[shift]
    second = by_order["local_mc-0", shift]
    prompt = f"Question: Which is a fruit?\nA. {shown[0]}\nB. {shown[1]}\nC. {shown[2]}\nAnswer:"
    assert [a["arg_0"] for a in second["arguments"].values()] == [prompt] * 6
    assert [a["arg_1"] for a in second["arguments"].values()] == [" A", "A", " B", "B", " C", "C"]
    assert second["target"] == letter and second["doc"]["biasmonkey_position"]["options"] == shown
    blank = by_order["content_free_3", 0]["arguments"]["gen_args_0"]["arg_0"]
    assert blank == "Question: N/A\nA. N/A\nB. N/A\nC. N/A\nAnswer:"
    # the lettered task: its own template, the options field rotated
    mmlu = {
        (s["doc"]["biasmonkey_position"]["id"], s["doc"]["biasmonkey_position"]["shift"]): s
        for s in samples(wrapped[MMLU])
    }
    ((_, shift),) = [k for k in mmlu if k[0] == "mmlu_anatomy_authors-0" and k[1] != 0]
    first, rotated = mmlu["mmlu_anatomy_authors-0", 0], mmlu["mmlu_anatomy_authors-0", shift]
    options = first["doc"]["choices"]
    shown = ", ".join(f"({x}) {o}" for x, o in zip(LETTERS, options[shift:] + options[:shift]))
    assert rotated["arguments"]["gen_args_0"]["arg_0"] == f"{first['doc']['question']}\nOptions: {shown}\nResponse:"


def test_the_harness_table_is_the_records_summary(runs: dict) -> None:
    results, wrapped = runs["wrapped"]
    for task in (LOCAL, MMLU):
        summary = summarize(records_from_samples_file(wrapped[task]), OPTIONS)
        assert metric(results["results"][task], "n_items") == summary.conditions["raw"].n_items
        for condition in CONDITIONS:
            for measure in MEASURES:
                want = getattr(summary.conditions[condition], measure)
                got = metric(results["results"][task], metric_name(measure, condition))
                assert (
                    (math.isnan(want) and got in ("N/A", None) or math.isnan(float(got)))
                    if math.isnan(want)
                    else (got == pytest.approx(want, abs=1e-12))
                ), (task, condition, measure)
    assert summarize(records_from_samples_file(wrapped[LOCAL]), OPTIONS).conditions["raw"].n_items == 5


def test_tasks_that_cannot_be_wrapped(tmp_path: Path) -> None:
    own = tmp_path / "own"
    write_local_task(own, "free_text", output_type="generate_until")
    (own / "_group.yaml").write_text("group: my_group\ntask: [free_text]\n")
    with pytest.raises(
        WrapError, match="lm-eval task free_text: its output_type is 'generate_until'; answer-position bias wraps "
    ):
        write_wrappers(["free_text"], tmp_path / "w", [str(own)])
    with pytest.raises(WrapError, match="lm-eval task my_group: it is an lm-eval group; name its tasks one by one"):
        write_wrappers(["my_group"], tmp_path / "w", [str(own)])
    assert not (tmp_path / "w").exists()  # nothing written when a name is refused


def test_an_item_with_one_option_is_named(tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture) -> None:
    items = [*ITEMS[:2], {"question": "Only one?", "choices": ["yes"], "label": 0}]
    write_local_task(tmp_path / "own", "one_option", items=items)
    code = main(
        ["plan", "--position-of", "one_option", "--include-path", str(tmp_path / "own"), "--model", str(tiny_model)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "one_option, document 2: 1 option; answer-position bias needs 2 to 26 options" in err


@pytest.mark.parametrize(
    ("choices", "label", "message"),
    [
        (["Paris", " ", "Rome"], 0, r"option B \(choice 1\) is blank"),
        (["4", "5", "4", "6"], 2, r"options A and C \(choices 0 and 2\) are the same text '4'"),
    ],
)
def test_a_blank_or_repeated_option_is_named(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture, choices: list[str], label: int, message: str
) -> None:
    items = [*ITEMS[:2], {"question": "Which?", "choices": choices, "label": label}]
    write_local_task(tmp_path / "own", "bad_options", items=items)
    code = main(
        ["plan", "--position-of", "bad_options", "--include-path", str(tmp_path / "own"), "--model", str(tiny_model)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert re.search(rf"bad_options, document 2: {message}.*correct or drop the document", err)


def test_the_family_is_found_by_the_wrapped_names() -> None:
    assert "position_mmlu_anatomy" in POSITION.tasks and POSITION.tasks["position_arc_easy"] == {"inner": "arc_easy"}
    assert "position_" not in POSITION.tasks and list(POSITION.tasks) == []


def test_an_unknown_task_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["position-tasks", "no_such_task", "--out", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert "lm-eval task no_such_task: not found; list the tasks with `lm_eval ls tasks`" in err
    assert "Traceback" not in err and not (tmp_path / "w").exists()


def test_an_out_that_is_a_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    for out, problem in ((afile, "a file is in the way; give a folder"), (afile / "sub", f"{afile} is a file")):
        assert main(["position-tasks", "mmlu_anatomy_authors", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"biasmonkey: error: --out {out}: {problem}" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["position-tasks", "plan", "run"])
def test_an_include_path_that_is_no_folder_is_named(
    command: str, tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture
) -> None:
    """A typo in --include-path is refused, not a silent fallback to lm-eval's task of the same name."""
    afile = tmp_path / "afile"
    afile.write_text("")
    args = {
        "position-tasks": ["position-tasks", "mmlu_anatomy_authors", "--out", str(tmp_path / "w")],
        "plan": ["plan", "--position-of", "mmlu_anatomy_authors", "--limit", "1"],
        "run": ["run", "--position-of", "mmlu_anatomy_authors", "--limit", "1", "--model", str(tiny_model)]
        + ["--device", "cpu", "--output", str(tmp_path / "out")],
    }[command]
    for folder, problem in ((tmp_path / "nope", "no such folder"), (afile, "not a folder")):
        assert main([*args, "--include-path", str(folder)]) == 2
        err = capsys.readouterr().err
        assert f"biasmonkey: error: --include-path {folder}: {problem}" in err and "Traceback" not in err
    assert not (tmp_path / "w").exists()


def test_an_include_path_without_position_of_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import argparse

    from biasmonkey.tasks.mc_position.commands import task_selection

    args = argparse.Namespace(position_of=None, include_path=[tmp_path / "mine"], tasks="biasmonkey_acquiescence")
    with caplog.at_level("WARNING"):
        assert task_selection(args, tmp_path) is None
    assert "--include-path applies to --position-of tasks only: ignored" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert task_selection(argparse.Namespace(position_of=None, include_path=[], tasks=None), tmp_path) is None
    assert not caplog.text
