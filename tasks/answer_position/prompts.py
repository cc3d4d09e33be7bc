"""Prompts and answer continuations of the MMLU answer-position study (Bhatt & Ivanova, 2025).

The prompt texts are experimental stimuli, reproduced exactly from the authors' code:
ombbhatt/logprobs-bias-correct at commit 48591bb20f6d95f3a27bb81041dd59a4b81e2570,
`dataset_prompts.py` (`get_dataset_prompts("MMLU")`: `prompt_cond1`, the instruction and two
worked examples, for `fewshot`; `prompt_cond2`, the instruction alone, for `instronly`) and
`logprobs_mcq.py` (how the prefix, the query and the answer are joined).

The query is the question, a newline and "Options: (A) …, (B) …, (C) …, (D) …" (`mcq_query`);
every prompt type ends with "\\nResponse:", zero-shot included, and the letter follows it
directly: " A" scores "Response: A", "A" scores "Response:A". Each letter's log-probability is
the log-sum-exp of its two spellings.
"""

from __future__ import annotations

from collections.abc import Sequence

PROMPTS = ("zeroshot", "instronly", "fewshot")  # the authors' three prompt types, each a task per subject

LETTERS = ("A", "B", "C", "D")
LETTER_CONTINUATIONS = {x: (f" {x}", x) for x in LETTERS}
# Continuations scored after the prompt, in this order: " A", "A", " B", "B", " C", "C", " D", "D".
CONTINUATIONS = tuple(c for x in LETTERS for c in LETTER_CONTINUATIONS[x])

# prompt_cond1 / prompt_cond2 of the authors' dataset_prompts.py for MMLU, character for character.
FEWSHOT_PREFIX = (
    "#INSTRUCTIONS\nAnswer the following multiple choice questions:\n\n"
    "#EXAMPLE\nQuestion: What is the shape of the Earth?\nOptions: (A) Cone, (B) Cube, (C) Sphere, (D) Cylinder\n"
    "Response: C\n\n"
    "#EXAMPLE\nQuestion: What is the color of the sky?\nOptions: (A) Red, (B) Blue, (C) Green, (D) Yellow\n"
    "Response: B\n\n"
    "#EXAMPLE\nQuestion: "
)
INSTRONLY_PREFIX = "#INSTRUCTIONS\nAnswer the following multiple choice question:\n\n#EXAMPLE\nQuestion: "
PREFIXES = {"zeroshot": "", "instronly": INSTRONLY_PREFIX, "fewshot": FEWSHOT_PREFIX}


def mcq_query(question: str, options: Sequence[str]) -> str:
    """The authors' MMLU query: the question, then "Options: " and the options joined by ", "."""
    return f"{question}\nOptions: {', '.join(options)}"


def render_prompt(query: str, prompt: str = "zeroshot") -> str:
    """The text the letter continuations are scored after: `prefix + query + "\\nResponse:"`."""
    if prompt not in PREFIXES:
        raise ValueError(f"unknown prompt {prompt!r}; expected one of {', '.join(PROMPTS)}")
    return PREFIXES[prompt] + query + "\nResponse:"
