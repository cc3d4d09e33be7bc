"""Prompts of the cognitive-bias tests: option order, answer labels, decision and extraction.

As in the paper, the options of a seeded half of the tests are offered in reverse order (control
and treatment of a test alike) and answers are mapped back to the original order before scoring.
Options are always numbered "Option 1" … "Option n" in the order they are offered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

SIDES = ("control", "treatment")

# The paper's answer regex (Appendix D): the first "Option N" / "option N" in a text.
OPTION_PATTERN = re.compile(r"\b(?:[oO]ption) (\d+)\b")

_INTRO = "You are given a decision task with several answer options."

# One step (exact mode, and generate mode in lm-eval): the answer is the option line itself.
ANSWER_PROMPT = (
    _INTRO + "\n\n{test}\n\n"
    "Choose exactly one option. Reply with the line of the option you choose, copied exactly "
    "as it is written above (it starts with \"Option\" and the option's number).\n"
    "Answer:"
)

# How a one-step answer is generated (both harnesses): greedy, ended by a blank line, and long
# enough for "Option 11: 100%" and some preamble. The text is cut at the first blank line.
ONE_STEP_STOP = "\n\n"
ONE_STEP_MAX_TOKENS = 48

# The paper's two-step protocol (for harnesses that can chain two generations): a free answer ...
DECISION_PROMPT = _INTRO + "\n\n{test}\n\nChoose exactly one of the options."

# ... then a second call that only reads the options and that answer and names the option.
EXTRACTION_PROMPT = (
    "Below are the answer options of a decision task, followed by a written answer to that task.\n\n"
    "OPTIONS:\n{options}\n\n"
    "ANSWER:\n{answer}\n\n"
    "Which option does the answer choose? Write only \"Option N\", where N is the number of that "
    "option. If the answer chooses no option, write \"No option selected\"."
)


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


def answer_prompt(test_text: str) -> str:
    return ANSWER_PROMPT.format(test=test_text)


def one_step_answer(generated: str) -> str:
    """A one-step answer as lm-eval keeps it: the generated text up to the first blank line."""
    return generated.split(ONE_STEP_STOP)[0]


def decision_prompt(test_text: str) -> str:
    return DECISION_PROMPT.format(test=test_text)


def extraction_prompt(offered_options: Sequence[str], answer: str) -> str:
    """Step two of the paper's protocol; the options in the order the first step showed them."""
    return EXTRACTION_PROMPT.format(options=option_lines(offered_options), answer=answer.strip())


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
