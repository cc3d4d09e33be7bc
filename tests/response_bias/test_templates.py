"""Prompt templates (tasks/response_bias/templates.yml): loading and validation, the shared
answer readers, run-option errors, and a steering template through Inspect in exact mode."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from test_inspect import metrics, output, scripted

from biasmonkey.tasks.response_bias.inspect_task import TASKS, pair_samples
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.prompts import parse_output, render_prompt
from biasmonkey.tasks.response_bias.scoring import answer_counts
from biasmonkey.tasks.response_bias.templates import TEMPLATES, load_templates, read_answer_line

pytestmark = pytest.mark.usefixtures("data_dir")
QUESTION = "Do you like tea?\nA. Yes\nB. No\nC. Not sure"
LETTERS = ("A", "B", "C")


def test_the_papers_templates_and_our_wording_with_their_token_budgets() -> None:
    # Preprint Appendix C/D: one token for the main prompt and for the steering templates
    # (allow/forbid 1 and 2, response order 2); 50 tokens for extended generation; 100 for
    # response-order template 1. Our own wording of each (`<name>_biasmonkey`) keeps its budget.
    budgets = {name: (t.max_new_tokens, t.answer) for name, t in TEMPLATES.items()}
    published = {
        "default": (1, "letter"),
        "extended": (50, "answer_line"),
        "allow_forbid_steer1": (1, "letter"),
        "allow_forbid_steer2": (1, "letter"),
        "response_order_steer1": (100, "answer_line"),
        "response_order_steer2": (1, "letter"),
    }
    ours = {f"{name}_biasmonkey": budget for name, budget in published.items() if name != "default"}
    assert budgets == {**published, **ours}
    assert (
        TEMPLATES["default"].biases
        == TEMPLATES["extended"].biases
        == TEMPLATES["extended_biasmonkey"].biases
        == ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
    )
    for name in ("allow_forbid_steer1", "allow_forbid_steer2"):
        assert TEMPLATES[name].biases == TEMPLATES[f"{name}_biasmonkey"].biases == ("allow_forbid",)
    for name in ("response_order_steer1", "response_order_steer2"):
        assert TEMPLATES[name].biases == TEMPLATES[f"{name}_biasmonkey"].biases == ("response_order",)
    assert all(t.description and t.source for t in TEMPLATES.values())
    # every published template cites the paper; ours say they are ours
    assert TEMPLATES["default"].source.startswith("Tjuatja et al., TACL 2024, Appendix B.2")
    for name in published.keys() - {"default"}:
        assert TEMPLATES[name].source.startswith("Tjuatja et al. 2023 preprint, arXiv:2311.04076, Appendix ")
    assert all(TEMPLATES[name].source.startswith("biasmonkey's own wording") for name in ours)


def test_default_template_is_the_papers_prompt_byte_for_byte() -> None:
    assert render_prompt(QUESTION + "\n") == (
        "Please answer the following question with one of the alphabetical options provided.\n"
        "Question: Do you like tea?\nA. Yes\nB. No\nC. Not sure\n"
        "Answer:"
    )
    steer = render_prompt(QUESTION, "allow_forbid_steer1")
    assert "forbid" in steer and steer.endswith("Question: " + QUESTION + "\nAnswer:")
    assert render_prompt(QUESTION, "response_order_steer1").endswith("Question: " + QUESTION)


@pytest.mark.parametrize(
    ("template", "completion", "expected"),
    [
        # extended: the prompt ends with "Answer:", so the output's first line completes it
        ("extended", " B\nReason: I prefer it.", 1),
        ("extended", " (c). Reason: unsure", 2),
        ("extended", "\nAnswer: A\nReason: tea is nice", 0),  # an empty first line, then the answer line
        ("extended", " **B** - it is bitter", 1),
        # a chat model answers in a new turn and writes the label itself
        ("extended", "Answer: B. The economy will be weaker\n\nReason: ...", 1),
        ("extended", "  **answer:** (c)", 2),
        ("extended", "The answer is: B. less prepared", None),  # no answer line
        ("extended", " A good question.\nReason: none", None),  # "A good": a word, not an answer
        ("extended", " D\nReason: other", None),  # D is not offered
        ("extended", " Reason: it depends", None),
        ("extended", "", None),
        # response order 1: the prompt has no trailing "Answer:"; the answer line follows the re-listing
        ("response_order_steer1", "Options: C. Not sure B. No A. Yes\nAnswer: C", 2),
        ("response_order_steer1", "Options: C. Not sure B. No A. Yes\nanswer: b.", 1),  # any case
        ("response_order_steer1", "Options: C B A\nAnswer: A\nAnswer: B", 0),  # the first answer line counts
        ("response_order_steer1", " B", None),  # no answer line
        # one-token templates: the output is the letter itself
        ("default", " B", 1),
        ("allow_forbid_steer2", "(C)", 2),
        ("default", "Answer: B", None),
    ],
)
def test_outputs_are_read_as_the_template_asks(template: str, completion: str, expected: int | None) -> None:
    assert parse_output(completion, LETTERS, template) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # Real SmolLM2-135M-Instruct outputs (our wording of the extended template, chat template,
        # temperature 1) on two-option acquiescence questions, labelled by hand.
        ("A. more prepared financially for retirement than older adults today", 0),
        ("B. The U.S. economy will be weaker\n\nI added a question mark because the answer would be", 1),
        ("Answer: B. The U.S. economy will be weaker\n\nYour reply requires you to use the letter", 1),
        ("A. Yes\nA.1\nReverse-engineerated answer: a person who is smart enough", 0),
        ("The answer is: B. less prepared financially for retirement than older adults today", None),
        ("A well-defined plan Bared: **C. less prepared financially for retirement", None),
        ("Answer: Yes\n\nThe answer is not likely. Not enough information", None),
        ("Yes", None),
        ("C. A little more on this coming up.", None),  # C is not offered
    ],
)
def test_real_model_outputs_are_read_as_a_person_would(completion: str, expected: int | None) -> None:
    assert parse_output(completion, ("A", "B"), "extended_biasmonkey") == expected
    assert parse_output(completion, ("A", "B"), "extended") == expected  # the same reader


def test_answer_counts_count_unreadable_outputs_as_invalid() -> None:
    outputs = [" A\nReason: x", " B", " C.", "I think B", "\nAnswer: A"]
    # A 2 (first, last), B 1, C 1; "I think B" has no answer line -> 1 invalid
    counts, invalid = answer_counts(outputs, LETTERS, "extended")
    assert counts.tolist() == [2, 1, 1] and invalid == 1
    assert read_answer_line("Answer: E", ("A", "B", "C", "D", "E")) == 4


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "  text: no placeholder\n  max_new_tokens: 1\n  answer: letter\n  biases: all\n  description: d\n",
            "text must contain {question}",
        ),
        (
            "  text: '{question}'\n  max_new_tokens: 5\n  answer: letter\n  biases: all\n  description: d\n",
            "a `letter` answer is one token",
        ),
        (
            "  text: '{question}'\n  max_new_tokens: 5\n  answer: answer_line\n  biases: [acquiesence]\n  description: d\n",
            "biases=.*must be `all` or a list of",
        ),
        (
            "  text: '{question}'\n  max_new_tokens: 0\n  answer: answer_line\n  biases: all\n  description: d\n",
            "max_new_tokens=0 must be a positive integer",
        ),
        ("  text: '{question}'\n  answer: json\n  biases: all\n", "missing description, max_new_tokens"),
        (
            "  text: '{question}'\n  max_new_tokens: 1\n  answer: letter\n  biases: all\n  description: d\n"
            "  sorce: paper\n",
            "unknown key\\(s\\) sorce",
        ),
        (
            "  text: '{question}'\n  max_new_tokens: 1\n  answer: letter\n  biases: all\n  description: d\n"
            "  source: [paper]\n",
            "source=\\['paper'\\] must be text",
        ),
    ],
)
def test_a_bad_templates_file_is_an_error_naming_file_and_template(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "templates.yml"
    path.write_text("mine:\n" + entry)
    with pytest.raises(ValueError, match=f"templates.yml, template 'mine': {message}"):
        load_templates(path)


def test_template_options_are_checked_against_mode_and_task() -> None:
    with pytest.raises(ValueError, match="template='extended' lets the model write up to 50 tokens.*needs mode=sample"):
        RunOptions(template="extended")
    with pytest.raises(ValueError, match="template='response_order_steer1' .*100 tokens.*mode='exact'"):
        RunOptions(template="response_order_steer1", virtual_samples=0)
    with pytest.raises(ValueError, match="option template='forbid' is unknown; available: default, extended"):
        RunOptions(template="forbid")
    # our wording is checked like the published template of the same name
    with pytest.raises(ValueError, match="template='extended_biasmonkey' lets the model write up to 50 tokens"):
        RunOptions(template="extended_biasmonkey")
    with pytest.raises(ValueError, match="template='allow_forbid_steer2_biasmonkey' applies only to the allow_forbid"):
        RunOptions(template="allow_forbid_steer2_biasmonkey").task_pairs("response_order", "bias")
    with pytest.raises(
        ValueError,
        match="template='allow_forbid_steer1' applies only to the allow_forbid tasks, "
        "not to task 'acquiescence_reword'",
    ):
        RunOptions(template="allow_forbid_steer1").task_pairs("acquiescence", "bias", reword=True)
    with pytest.raises(ValueError, match="template='response_order_steer2' .* not to task 'odd_even_key_typo'"):
        TASKS["odd_even_key_typo"](template="response_order_steer2")
    # a steering template applies to its bias's perturbation tasks too
    assert len(RunOptions(template="response_order_steer2").task_pairs("response_order", "letter_swap")) == 271


def test_a_steering_template_runs_in_exact_mode_in_inspect(tmp_path: Path) -> None:
    opts = RunOptions(template="allow_forbid_steer1")
    (s1, s2) = pair_samples(opts, "allow_forbid", "bias")[:2]
    assert (
        s1.input == render_prompt(s1.metadata["q"], "allow_forbid_steer1") and s1.metadata["template"] == opts.template
    )
    model = scripted(
        {
            # allow/forbid Δ = 100(q[b] − q'[a]): pair 1 q B .6 of 1 → .6, q' A .2/(.2+.6) = .25 → Δ 35
            # (each top-k holds all the mass: the bare spellings "A", "B" get the floor 1e-300)
            s1.input: lambda: output("B", [(" B", 0.6), (" A", 0.4)]),
            s1.metadata["qp_prompt"]: lambda: output("B", [(" B", 0.6), (" A", 0.2), ("x", 0.2)]),
            # pair 2: q[b] = .5, q'[a] = .5 → Δ 0
            s2.input: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            s2.metadata["qp_prompt"]: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
        }
    )
    (log,) = inspect_eval(
        "biasmonkey/allow_forbid",
        model=model,
        limit=2,
        task_args={"template": "allow_forbid_steer1"},
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    m = metrics(log)
    # mean (35 + 0)/2 = 17.5; stderr |35 − 0|/2 = 17.5; t = 1 on 1 df: p = 1 − (2/π)·atan(1) = 0.5
    assert m["delta"] == pytest.approx(17.5) and m["delta_t"] == pytest.approx(1.0)
    assert m["delta_p"] == pytest.approx(1 - 2 / math.pi * math.atan(1.0))
