"""The wrapped multiple-choice family through both harnesses on the tiny random model (plumbing, not
realism): one local multiple-choice task, as an Inspect `@task` (`biasmonkey/position -T
task=<file>@posmc`) and as an lm-eval YAML task in cloze form (`biasmonkey_position_posmc`, written
by `wrappers.write_wrappers`), gives the same prompts, the same letter log-probabilities per
(item, shift) and content-free document, and the same metrics; both outputs read back as the one
biasmonkey task `position_posmc`. And the inner tasks that cannot be wrapped fail clearly."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from test_inspect import metrics
from test_lm_eval_e2e import metric, run_lm_eval
from test_yesno_inspect import RAW_PROMPT
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file, scan
from biasmonkey.tasks.contract import reported
from biasmonkey.tasks.families import POSITION
from biasmonkey.tasks.mc_position.codecs import META
from biasmonkey.tasks.mc_position.inspect_task import InnerTaskError, position, slug
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import CONTENT_FREE, cyclic_order, lettered_prompt
from biasmonkey.tasks.mc_position.wrappers import write_wrappers

NAME = "posmc"  # the inner task's name in both harnesses: `file.py@posmc` and lm-eval's `posmc`
# (question, choices, gold index): 2 to 5 choices; the last question ends with its own "Answer:"
ITEMS = [
    ("Which colour is the sky on a clear day?", ["blue", "green"], 0),
    ("How many legs does a spider have?", ["six", "eight", "ten"], 1),
    ("Which of these is a prime number?", ["4", "6", "7", "9"], 2),
    ("Which planet is closest to the Sun?", ["Venus", "Earth", "Mars", "Jupiter", "Mercury"], 4),
    ("Question: What is frozen water called?\nAnswer:", ["steam", "ice", "fog"], 1),
]
# the Inspect targets in each form the adapter reads: a letter, a choice's text, a one-element list
TARGETS = ['"A"', '"eight"', '["C"]', '"E"', '"B"']

TASK_FILE = """
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

ITEMS = {items!r}
TARGETS = [{targets}]


def _input(i, question):
    # one item as chat messages: its user text is the question
    return [ChatMessageSystem(content="Be brief."), ChatMessageUser(content=question)] if i == 3 else question


@task
def {name}():
    samples = [Sample(input=_input(i, q), choices=c, target=t) for i, ((q, c, _), t) in enumerate(zip(ITEMS, TARGETS))]
    return Task(dataset=MemoryDataset(samples))


@task
def no_choices():
    return Task(dataset=MemoryDataset([Sample(input="What is 2 + 2?", target="4", id="q1")]))


@task
def one_choice():
    return Task(dataset=MemoryDataset([Sample(input="Pick it.", choices=["it"], target="A", id="q1")]))


@task
def two_answers():
    return Task(dataset=MemoryDataset([Sample(input="Pick.", choices=["a", "b"], target=["A", "B"], id="q1")]))


@task
def blank_choice():
    return Task(dataset=MemoryDataset([Sample(input="Pick.", choices=["a", " ", "c"], target="A", id="q1")]))


@task
def same_choices():
    return Task(dataset=MemoryDataset([Sample(input="2 + 2?", choices=["4", "5", "4 ", "6"], target="C", id="q1")]))
"""

LM_EVAL_YAML = """\
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
"""

REPORTED = [m.name for m in reported(POSITION, PositionOptions(), "lm_eval", {"inner": NAME})]
LM_EVAL_TASK = f"biasmonkey_position_{NAME}"


@pytest.fixture(scope="module")
def task_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Inspect tasks: `posmc` over ITEMS and five that cannot be wrapped."""
    path = tmp_path_factory.mktemp("inspect-tasks") / "mc_tasks.py"
    path.write_text(textwrap.dedent(TASK_FILE).format(items=ITEMS, targets=", ".join(TARGETS), name=NAME))
    return path


@pytest.fixture(scope="module")
def both_runs(tiny_model: Path, task_file: Path, tmp_path_factory: pytest.TempPathFactory):
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert all(len(tok(s, add_special_tokens=False).input_ids) == 1 for x in "ABCDE" for s in (" " + x, x))
    out = tmp_path_factory.mktemp("position")
    (log,) = inspect_eval(
        "biasmonkey/position",
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", "batch_size": 1, "dtype": "float64", **RAW_PROMPT},
        task_args={"task": f"{task_file}@{NAME}", "top_logprobs": len(tok)},
        log_dir=str(out / "inspect"),
        display="none",
    )
    # the same items as an lm-eval task in cloze form, wrapped
    tasks = out / "lm_eval_tasks"
    tasks.mkdir()
    rows = [{"question": q, "choices": c, "label": gold} for q, c, gold in ITEMS]
    (tasks / f"{NAME}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tasks / f"{NAME}.yaml").write_text(LM_EVAL_YAML.format(name=NAME, data=tasks / f"{NAME}.jsonl"))
    wrappers = out / "wrappers"
    assert write_wrappers([NAME], wrappers, [str(tasks)]) == [LM_EVAL_TASK]
    results, samples = run_lm_eval(
        tiny_model, out / "lm_eval", LM_EVAL_TASK, include=str(wrappers), batch_size=1, dtype="float64"
    )
    return log, results, samples[LM_EVAL_TASK], out


def _key(meta: dict) -> tuple[str, int]:
    return (meta["id"], meta["shift"])


def test_inspect_samples_are_the_items_in_their_cyclic_orders(both_runs) -> None:
    log, _, _, _ = both_runs
    assert log.status == "success"
    assert log.eval.task == "biasmonkey/position" and log.eval.metadata["biasmonkey_task"] == f"position_{NAME}"
    samples = read_eval_log(log.location).samples
    n_docs = len({len(c) for _, c, _ in ITEMS}) + sum(len(c) for _, c, _ in ITEMS)
    assert len(samples) == n_docs
    assert [s.id for s in samples[:4]] == ["content_free_2", "content_free_3", "content_free_4", "content_free_5"]
    for s in samples[:4]:
        n = s.metadata[META]["n"]
        assert s.input == lettered_prompt(CONTENT_FREE, [CONTENT_FREE] * n)
        assert s.metadata[META] == {
            "id": s.id,
            "kind": "content_free",
            "n": n,
            "gold": -1,
            "shift": 0,
            "options": [CONTENT_FREE] * n,
        }
    by_key = {_key(s.metadata[META]): s for s in samples[4:]}
    for index, (question, choices, gold) in enumerate(ITEMS):
        n = len(choices)
        for shift in range(n):
            s = by_key[(f"{NAME}-{index}", shift)]
            shown = [choices[i] for i in cyclic_order(n, shift)]
            assert s.id == f"{NAME}-{index}@{shift}"
            assert s.input == lettered_prompt(question, shown)
            assert s.metadata[META] == {
                "id": f"{NAME}-{index}",
                "kind": "item",
                "n": n,
                "gold": gold,
                "shift": shift,
                "options": shown,
            }
            assert s.target == "ABCDE"[(gold - shift) % n]
    score = samples[4].scores["position_scorer"]
    assert score.explanation.startswith("A ") and " → " in score.explanation and "gold " in score.explanation


def test_both_harnesses_ask_the_same_prompts_and_letters(both_runs) -> None:
    log, _, samples_file, _ = both_runs
    inspect_prompts = {_key(s.metadata[META]): s.input for s in read_eval_log(log.location).samples}
    lm_eval_prompts = {}
    for line in samples_file.read_text().splitlines():
        sample = json.loads(line)
        args = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
        n = sample["doc"][META]["n"]
        assert [c for _, c in args] == [" " + x for x in "ABCDE"[:n]]
        assert len({ctx for ctx, _ in args}) == 1
        lm_eval_prompts[_key(sample["doc"][META])] = args[0][0]
    assert lm_eval_prompts == inspect_prompts


def test_both_harnesses_give_the_same_records_and_metrics(both_runs) -> None:
    log, results, samples_file, _ = both_runs
    ours = {_key(r.__dict__): r for r in records_from_eval_log(log.location)}
    theirs = {_key(r.__dict__): r for r in records_from_samples_file(samples_file)}
    assert set(ours) == set(theirs) and len(ours) == len(read_eval_log(log.location).samples)
    for key, rec in ours.items():
        other = theirs[key]
        assert (rec.kind, rec.n, rec.gold, rec.shift) == (other.kind, other.n, other.gold, other.shift), key
        assert rec.letters == pytest.approx(other.letters, abs=1e-4), key
        assert rec.n_imputed == 0, key
    m = metrics(log)
    assert m["imputed_continuations"] == 0 and m["n_items"] == len(ITEMS)
    assert {"accuracy", "rstd", "changed", "accuracy_contextual"} <= set(REPORTED)
    for name in REPORTED:
        expected = metric(results["results"][LM_EVAL_TASK], name)
        assert m[name] == pytest.approx(expected, abs=1e-4, nan_ok=True), name
    assert not any(math.isnan(m[name]) for name in ("accuracy", "rstd", "changed", "accuracy_contextual"))


def test_both_outputs_read_back_as_one_task(both_runs) -> None:
    _, _, _, out = both_runs
    found = sorted((o.harness, o.task, o.family.name) for o in scan(out))
    assert found == [("inspect", f"position_{NAME}", "mc_position"), ("lm-eval", f"position_{NAME}", "mc_position")]


def test_slug_of_an_inspect_spec() -> None:
    assert slug("mc") == "mc"
    assert slug("inspect_evals/gpqa_diamond") == "inspect_evals_gpqa_diamond"


@pytest.mark.parametrize(
    ("inner", "message"),
    [
        ("no_choices", r"task no_choices, sample q1: 0 choices; .* 2 to 26 choices per sample \(Sample\(choices="),
        ("one_choice", r"task one_choice, sample q1: 1 choice; .* 2 to 26 choices"),
        ("two_answers", r"task two_answers, sample q1: 2 targets .* exactly one correct choice"),
        ("blank_choice", r"task blank_choice, sample q1: option B \(choice 1\) is blank; correct or drop"),
        ("same_choices", r"task same_choices, sample q1: options A and C \(choices 0 and 2\) are the same text '4'"),
    ],
)
def test_a_task_without_one_answer_among_several_choices_is_refused(task_file: Path, inner: str, message: str) -> None:
    with pytest.raises(InnerTaskError, match=message):
        position(task=f"{task_file}@{inner}")


@pytest.mark.parametrize("inner", ["no_such_package/no_such_task", "no_such_task", "{file}@no_such_task"])
def test_an_unknown_task_is_refused(task_file: Path, inner: str) -> None:
    with pytest.raises(InnerTaskError, match=r"-T task=.*(no task found|cannot load)"):
        position(task=inner.format(file=task_file))


def test_the_inner_task_is_required() -> None:
    with pytest.raises(InnerTaskError, match="needs the task to wrap: -T task="):
        position()


def test_a_provider_without_logprobs_is_a_clear_error(tmp_path: Path) -> None:
    from test_inspect import output, scripted

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "mc_position" / "mc_tasks.py"
    (log,) = inspect_eval(
        "biasmonkey/position",
        model=scripted({}, default=output("A")),
        task_args={"task": f"{fixture}@posmc"},
        limit=1,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "error"
    assert "returned no top_logprobs" in log.error.message and "mode=sample" not in log.error.message
