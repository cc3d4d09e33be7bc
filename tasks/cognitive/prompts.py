"""Prompts of the cognitive-bias tests: option order, answer labels, decision and extraction.

As in the paper, the options of some tests are offered in reverse order (control and treatment of a
test alike) and answers are mapped back to the original order before scoring: by default the tests
the authors' decision code reverses (`authors_reversed`), else a fair coin per test (`is_reversed`).
Options are always numbered "Option 1" … "Option n" in the order they are offered.

Two sets of prompts for the paper's two-step protocol (`protocol=two_step`, run option `prompts`):
`paper`, the authors' decision and extraction prompts exactly as published (the default), and
`biasmonkey`, our own wording of the same two steps. The one-step prompt (exact mode and
`protocol=one_step`) is ours: the paper has no one-step protocol.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SIDES = ("control", "treatment")

# The paper's answer regex (Appendix D): the first "Option N" / "option N" in a text.
OPTION_PATTERN = re.compile(r"\b(?:[oO]ption) (\d+)\b")

_INTRO = "You are given a decision task with several answer options."

# biasmonkey's one-step prompt (exact mode and protocol=one_step): the answer is the option line
# itself. Our own wording.
BIASMONKEY_ONE_STEP_PROMPT = (
    _INTRO + "\n\n{test}\n\n"
    "Choose exactly one option. Reply with the line of the option you choose, copied exactly "
    'as it is written above (it starts with "Option" and the option\'s number).\n'
    "Answer:"
)

# How a one-step answer is generated (both harnesses): greedy, ended by a blank line, and long
# enough for "Option 11: 100%" and some preamble. The text is cut at the first blank line.
ONE_STEP_STOP = "\n\n"
ONE_STEP_MAX_TOKENS = 48


# ---------------------------------------------------------------------------- the two-step protocol


@dataclass(frozen=True)
class TwoStepPrompts:
    """The two prompts of the paper's protocol: a free answer to the test (`decision`), then a
    second, independent call that reads only the offered options and that answer and names the
    option (`extraction`).

    They are filled as the authors' code fills them (`LLM._decide`, by text replacement):
    `{{test_case}}` by the test text, then `{{options}}` by the option lines in the offered order
    and `{{answer}}` by the first call's reply.
    """

    name: str
    decision: str  # with {{test_case}}
    extraction: str  # with {{options}} and {{answer}}
    source: str
    # The authors' test text (`Template.format`) ends with a newline after the last option; our
    # rendered test text does not, so the paper set appends it.
    test_ends_with_newline: bool
    # The paper set inserts the first reply unchanged; ours strips surrounding whitespace.
    strip_answer: bool

    def decision_prompt(self, test_text: str) -> str:
        return self.decision.replace("{{test_case}}", test_text + ("\n" if self.test_ends_with_newline else ""))

    def extraction_prompt(self, offered_options: Sequence[str], answer: str) -> str:
        """Step two; the options in the order the first step showed them."""
        prompt = self.extraction.replace("{{options}}", option_lines(offered_options))
        return prompt.replace("{{answer}}", answer.strip() if self.strip_answer else answer)


# The authors' prompts, exactly as their code sends them: `decision_prompt` and
# `extraction_prompt` of models/<Developer>/prompts.yml in simonmalberg/cognitive-biases-in-llms
# (identical in the files of all nine model classes @ a3d2465 and in models/Llama @ 09c8264a),
# after YAML loading: the files write them as folded scalars (`>-`), where each blank line
# becomes one newline. The same words are printed in the paper's Appendix D (Malberg et al.,
# 2025), where the PDF typesets the extraction headings' "---" as dashes.
PAPER_PROMPTS = TwoStepPrompts(
    name="paper",
    decision="You will be given a decision-making task with multiple answer options.\n{{test_case}}\nSelect exactly one option.",
    extraction=(
        "You will be given answer options from a decision-making task and a written answer.\n"
        "--- OPTIONS ---\n{{options}}\n\n"
        "--- ANSWER ---\n{{answer}}\n\n"
        "--- INSTRUCTION ---\n"
        'Extract the option selected in the above answer (explicitly write "Option N" and nothing else where N '
        "is the number of the option). If you cannot extract the selected option, write 'No option selected'."
    ),
    source=(
        "Malberg et al. (2025), Appendix D; simonmalberg/cognitive-biases-in-llms, models/<Developer>/prompts.yml "
        "(decision_prompt, extraction_prompt), filled as in core/base.py LLM._decide @ 895ad676"
    ),
    test_ends_with_newline=True,
    strip_answer=False,
)

# Our own wording of the same two steps (the default before the published prompts were added).
BIASMONKEY_PROMPTS = TwoStepPrompts(
    name="biasmonkey",
    decision=_INTRO + "\n\n{{test_case}}\n\nChoose exactly one of the options.",
    extraction=(
        "Below are the answer options of a decision task, followed by a written answer to that task.\n\n"
        "OPTIONS:\n{{options}}\n\n"
        "ANSWER:\n{{answer}}\n\n"
        'Which option does the answer choose? Write only "Option N", where N is the number of that '
        'option. If the answer chooses no option, write "No option selected".'
    ),
    source="biasmonkey's own wording of the paper's two steps",
    test_ends_with_newline=False,
    strip_answer=True,
)

TWO_STEP_PROMPTS: dict[str, TwoStepPrompts] = {p.name: p for p in (PAPER_PROMPTS, BIASMONKEY_PROMPTS)}
DEFAULT_PROMPTS = "paper"


def two_step_prompts(name: str = DEFAULT_PROMPTS) -> TwoStepPrompts:
    """The two-step prompt set named by the run option `prompts`."""
    try:
        return TWO_STEP_PROMPTS[name]
    except KeyError:
        raise ValueError(f"option prompts={name!r} is invalid; use one of {', '.join(TWO_STEP_PROMPTS)}") from None


# Rows per batch of the authors' decision runs: run/test_decision.py splits the 30,000 tests into
# 3,000 batches (np.array_split of the dataset file, i.e. consecutive rows).
AUTHORS_BATCH = 10
REVERSALS = ("authors", "hash")


def authors_reversed(rows: Sequence[int], seed: int = 42, step: int = 1) -> list[bool]:
    """Whether the authors' decision code offers each test of one bias reversed, from the tests'
    data rows (counted from 1) in file order.

    Per batch of 10 consecutive rows and per bias, their script calls `LLM.decide_all(tests, seed=42,
    max_retries=1)`, which decides the j-th test of that bias in the batch with seed 42 + j (after
    each test it adds max_retries − retry, i.e. 1); `Template.get_options` reverses a test's options
    when `random.Random(seed).random() < 0.5`. Within a batch seeds 43, 44, 45, 47, 49, 50, 51
    reverse and 42, 46, 48 do not. `step` = 5 gives the script before 2024-10-07 (max_retries=5:
    seeds 42 + 5j, six of ten reversed).
    """
    seen: Counter[int] = Counter()
    flags = []
    for row in rows:
        batch = (row - 1) // AUTHORS_BATCH
        flags.append(random.Random(seed + step * seen[batch]).random() < 0.5)
        seen[batch] += 1
    return flags


def is_reversed(test_id: str, seed: int) -> bool:
    """Whether a test's options are offered in reverse: a fair coin per (seed, test id),
    the same on every machine and independent of which other tests are loaded."""
    return hashlib.sha256(f"{seed}:{test_id}".encode()).digest()[0] < 128


def offered(options: Sequence[str], reversed_options: bool) -> list[str]:
    """The option texts in the order they are shown."""
    return list(options)[::-1] if reversed_options else list(options)


def to_original(index: int, n_options: int, reversed_options: bool) -> int:
    """Zero-based original position of the option shown at zero-based position `index`."""
    if not 0 <= index < n_options:
        raise ValueError(f"option index {index} outside 0..{n_options - 1}")
    return n_options - 1 - index if reversed_options else index


def option_lines(options: Sequence[str]) -> str:
    return "\n".join(f"Option {i}: {text}" for i, text in enumerate(options, start=1))


def render_test(stem: str, options: Sequence[str], reversed_options: bool) -> str:
    """The test text with its options in the offered order (unreversed: the published text)."""
    return f"{stem}\n{option_lines(offered(options, reversed_options))}"


def side_text(doc: Mapping[str, Any], side: str) -> str:
    """The rendered control or treatment test of a harness document (see data.CognitiveTest.to_doc)."""
    return render_test(doc[f"{side}_stem"], doc[f"{side}_options"], doc["reversed"])


def side_options(doc: Mapping[str, Any], side: str) -> list[str]:
    """The option texts of one side of a harness document, in the order they are shown."""
    return offered(doc[f"{side}_options"], doc["reversed"])


def answer_prompt(test_text: str) -> str:
    """biasmonkey's one-step prompt (ours; lm-eval and Inspect's `protocol=one_step`)."""
    return BIASMONKEY_ONE_STEP_PROMPT.format(test=test_text)


def one_step_answer(generated: str) -> str:
    """A one-step answer as lm-eval keeps it: the generated text up to the first blank line."""
    return generated.split(ONE_STEP_STOP)[0]


def decision_prompt(test_text: str, prompts: str = DEFAULT_PROMPTS) -> str:
    """Step one of the two-step protocol with the prompt set `prompts` (default: the paper's)."""
    return two_step_prompts(prompts).decision_prompt(test_text)


def extraction_prompt(offered_options: Sequence[str], answer: str, prompts: str = DEFAULT_PROMPTS) -> str:
    """Step two of the two-step protocol; the options in the order the first step showed them."""
    return two_step_prompts(prompts).extraction_prompt(offered_options, answer)


def answer_labels(n_options: int) -> list[str]:
    """What exact mode scores for each offered option: "Option 1:", …, "Option n:".

    The colon (as in the option lines the model copies) ends the number: a bare "Option 1" is a
    prefix of "Option 10" and "Option 11", and with tokenizers that split digits (SmolLM2,
    Llama 2, Mistral, Qwen) its log-likelihood would include theirs.
    """
    return [f"Option {i}:" for i in range(1, n_options + 1)]


def extract_option(text: str) -> int | None:
    """The option number (1-based, offered order) an answer names, or None when it names none."""
    match = OPTION_PATTERN.search(text)
    return int(match.group(1)) if match else None
