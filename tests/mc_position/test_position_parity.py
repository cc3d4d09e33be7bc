"""The same items give the same documents in both harnesses, built without a model: the local task
(position_fixtures, template "Question: {{question}}\\nAnswer:") as lm-eval's wrapped
`biasmonkey_position_local_mc` and as an Inspect `@task` whose inputs are those rendered questions.
Both build the same content-free prompt (the task's framing around "N/A", Zhao et al. 2021), so a
model answering by the prompt gives the same accuracy_contextual; a target that is a letter and
another choice's text is refused by both."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from lm_eval.tasks import TaskManager, get_task_dict
from position_fixtures import ITEMS, write_local_task

from biasmonkey.tasks.mc_position.codecs import META
from biasmonkey.tasks.mc_position.inspect_task import InnerTaskError, item_samples, load_inner_task
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import content_free_question, target_choice
from biasmonkey.tasks.mc_position.scoring import score_document, summarize
from biasmonkey.tasks.mc_position.wrappers import write_wrappers

pytestmark = pytest.mark.usefixtures("data_dir")

NAME = "local_mc"
TASK_FILE = """
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

ITEMS = {items!r}


@task
def {name}():
    return Task(dataset=MemoryDataset([
        Sample(input=f"Question: {{r['question']}}\\nAnswer:", choices=r["choices"], target=r["choices"][r["label"]])
        for r in ITEMS
    ]))
"""


def lm_eval_prompts(folder: Path, items: list[dict] | None = None) -> dict[tuple[str, int], tuple[dict, str]]:
    """(item id, shift) → (position entry, prompt) of the wrapped lm-eval task over `items`."""
    write_local_task(folder / "own", NAME, items=items)
    (name,) = write_wrappers([NAME], folder / "wrapped", [str(folder / "own")])
    manager = TaskManager(include_path=[str(folder / "wrapped"), str(folder / "own")], include_defaults=False)
    task = get_task_dict([name], manager)[name]
    return {(d[META]["id"], d[META]["shift"]): (d[META], task.doc_to_text(d)) for d in task.eval_docs}


def inspect_prompts(folder: Path, items: list[dict]) -> dict[tuple[str, int], tuple[dict, str]]:
    """The same for the Inspect task over `items`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "insp_tasks.py"
    path.write_text(textwrap.dedent(TASK_FILE).format(items=items, name=NAME))
    samples = item_samples(load_inner_task(f"{path}@{NAME}"), NAME, PositionOptions())
    return {(s.metadata[META]["id"], s.metadata[META]["shift"]): (s.metadata[META], str(s.input)) for s in samples}


def fake_logprobs(prompt: str, n: int) -> list[float]:
    """A model answering by the prompt: letter k gets −0.5·k on an item (A first); −2·k on the
    content-free prompt within the task's framing ("Question: N/A"), 0 on a bare "N/A" one."""
    if "A. N/A" not in prompt:
        return [-0.5 * k for k in range(n)]
    return [-2.0 * k if prompt.startswith("Question: N/A\n") else 0.0 for k in range(n)]


def test_both_harnesses_build_the_same_content_free_prompt_and_contextual_accuracy(tmp_path: Path) -> None:
    lm_eval = lm_eval_prompts(tmp_path / "lm_eval")
    inspect = inspect_prompts(tmp_path / "inspect", ITEMS)
    assert {k: p for k, (_, p) in lm_eval.items()} == {k: p for k, (_, p) in inspect.items()}
    assert inspect["content_free_3", 0][1] == "Question: N/A\nA. N/A\nB. N/A\nC. N/A\nAnswer:"
    accuracy = {}
    for harness, docs in (("lm-eval", lm_eval), ("inspect", inspect)):
        records = [score_document(meta, fake_logprobs(prompt, meta["n"])) for meta, prompt in docs.values()]
        accuracy[harness] = summarize(records).conditions["contextual"].accuracy
    # calibrated score of letter k: −0.5·k − (−2·k) = 1.5·k, so the last letter is chosen: right for
    # item 2 only (gold 2 of 3 options; items' golds 1, 0, 2, 0, 2 of 3, 4, 3, 2, 5 options) → 1/5
    assert accuracy == {"lm-eval": pytest.approx(0.2), "inspect": pytest.approx(0.2)}


@pytest.mark.parametrize(
    ("questions", "expected"),
    [
        (["Question: Which is red?\nAnswer:", "Question: 2 + 2?\nAnswer:"], "Question: N/A"),  # "?" is no framing
        (["Which is red?", "Which is blue?"], "Which is N/A"),  # shared whole words are kept
        (["Q1. red?", "Q2. blue?"], "N/A"),  # no part of a word: "Q" is dropped
        (["Q: a", "Q: a b"], "Q: N/A"),  # the start and end do not overlap
        (["Question: one?\nAnswer:"] * 3, "N/A"),  # one distinct question: no framing to tell
    ],
)
def test_content_free_question_keeps_the_shared_framing(questions: list[str], expected: str) -> None:
    assert content_free_question(questions) == expected


# "C" is the letter of choice 2 ("D") and the text of choice 1: Inspect read 2, lm-eval 1
NOTES = [
    {"question": "Which is a fruit?", "choices": ["carrot", "apple", "potato"], "label": 1},
    {"question": "Which note follows B?", "choices": ["B", "C", "D"], "label": 1},
]


def test_a_target_that_is_a_letter_and_another_choices_text_is_refused() -> None:
    with pytest.raises(ValueError, match=r"item 1: target 'C' is ambiguous: as a letter it names choice 2 \('D'\)"):
        target_choice("C", ["B", "C", "D"], "item 1")
    assert target_choice("A", ["A", "B"], "item") == 0  # letter and text name the same choice
    assert (target_choice("C", ["x", "y", "z"], "item"), target_choice(" y", ["x", "y", "z"], "item")) == (2, 1)


def test_lm_eval_refuses_an_ambiguous_target(tmp_path: Path) -> None:
    items = [{**item, "label": item["choices"][item["label"]]} for item in NOTES]  # targets as texts: "C"
    with pytest.raises(ValueError, match=r"local_mc, document 1: target 'C' is ambiguous: .* the choice's index"):
        lm_eval_prompts(tmp_path, items)


def test_inspect_refuses_an_ambiguous_target(tmp_path: Path) -> None:
    with pytest.raises(InnerTaskError, match=r"sample local_mc-1: target 'C' is ambiguous"):
        inspect_prompts(tmp_path, NOTES)  # the file's targets are the choices' texts: "C"
