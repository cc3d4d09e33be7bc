"""Prompts and answer continuations of the yes-no suite and of the MMLU answer-position study.

The prompt texts are experimental stimuli and are reproduced exactly from the authors' code:
ombbhatt/logprobs-bias-correct at commit 48591bb20f6d95f3a27bb81041dd59a4b81e2570,
`dataset_prompts.py` (the instruction + examples prefixes, `prompt_cond1` / `prompt_cond2`) and
`logprobs_yesno.py` / `logprobs_mcq.py` (how a prefix, the query and the answer are joined).

Yes-no sets (COMPS, EWoK, Arith, bAbI), three prompt types:
- `zeroshot`: the query alone; the answer continuation follows it directly, so " Yes" scores
  "Does a turtle have a hard shell? Yes" and "Yes" scores "...shell?Yes" (no newline, no
  "Answer:" cue: the paper's no-prompting setup).
- `instronly`: a one-line instruction (singular "question"), an "#EXAMPLE" header, the query,
  then "\\nResponse:".
- `fewshot`: the instruction (plural "questions") and two worked examples of the set (one No,
  one Yes), then the query and "\\nResponse:".
The continuation follows "Response:" directly (" Yes" → "Response: Yes", "Yes" → "Response:Yes").

MMLU (`mmlu`): the query is the question, a newline and "Options: (A) …, (B) …, (C) …, (D) …"
(`mcq_query`); every prompt type ends with "\\nResponse:", zero-shot included; the continuations
are the letters with and without a leading space.
"""

from __future__ import annotations

PROMPTS = ("zeroshot", "instronly", "fewshot")  # every prompt type of the authors, each a task per set

YESNO_DATASETS = ("comps", "ewok", "arith", "babi")
MCQ_DATASETS = ("mmlu",)

# Continuations scored after the prompt, in this order; each answer is the log-sum-exp of its pair.
YES_CONTINUATIONS = (" Yes", "Yes")
NO_CONTINUATIONS = (" No", "No")
CONTINUATIONS = YES_CONTINUATIONS + NO_CONTINUATIONS

# MMLU: each letter is the log-sum-exp of its two spellings (the authors score "A" and " A", …).
MCQ_LETTERS = ("A", "B", "C", "D")
MCQ_LETTER_CONTINUATIONS = {x: (f" {x}", x) for x in MCQ_LETTERS}
MCQ_CONTINUATIONS = tuple(c for x in MCQ_LETTERS for c in MCQ_LETTER_CONTINUATIONS[x])

# Two examples per yes-no dataset: (question, answer), shown in this order (dataset_prompts.py).
FEWSHOT_EXAMPLES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "comps": (
        ("Does a blueberry fire bullets?", "No"),
        ("Does a turtle have a hard shell?", "Yes"),
    ),
    "ewok": (
        ("Claire sees something that is fabric. Can Claire pour it?", "No"),
        ("Sally pays salary to Harry. Is Sally Harry's boss?", "Yes"),
    ),
    "babi": (
        ("Marshall is in the car. Is Marshall in the building?", "No"),
        ("Nathan is a pianist. Pianists like oranges. Does Nathan like oranges?", "Yes"),
    ),
    "arith": (
        ("Is 7 minus 9 equal to 4?", "No"),
        ("Is 17 plus 15 equal to 32?", "Yes"),
    ),
}

# MMLU's two examples: (question, options, answer letter) (dataset_prompts.py).
MCQ_FEWSHOT_EXAMPLES: dict[str, tuple[tuple[str, tuple[str, ...], str], ...]] = {
    "mmlu": (
        ("What is the shape of the Earth?", ("(A) Cone", "(B) Cube", "(C) Sphere", "(D) Cylinder"), "C"),
        ("What is the color of the sky?", ("(A) Red", "(B) Blue", "(C) Green", "(D) Yellow"), "B"),
    ),
}

FEWSHOT_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
INSTRONLY_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n"
MCQ_FEWSHOT_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following multiple choice questions:\n\n"
MCQ_INSTRONLY_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following multiple choice question:\n\n"
FEWSHOT_BLOCK = "#EXAMPLE\nQuestion: {question}\nResponse:"


def mcq_query(question: str, options: tuple[str, ...] | list[str]) -> str:
    """The authors' MMLU query: the question, then "Options: " and the options joined by ", "."""
    return f"{question}\nOptions: {', '.join(options)}"


def _fewshot_prefix(dataset: str) -> str:
    if dataset in MCQ_FEWSHOT_EXAMPLES:
        shots = "".join(
            FEWSHOT_BLOCK.format(question=mcq_query(q, options)) + f" {answer}\n\n"
            for q, options, answer in MCQ_FEWSHOT_EXAMPLES[dataset]
        )
        return MCQ_FEWSHOT_INSTRUCTION + shots
    shots = "".join(FEWSHOT_BLOCK.format(question=q) + f" {answer}\n\n" for q, answer in FEWSHOT_EXAMPLES[dataset])
    return FEWSHOT_INSTRUCTION + shots


def render_prompt(query: str, dataset: str, prompt: str = "zeroshot") -> str:
    """The text the answer continuations are scored after.

    `dataset`: "comps", "ewok", "arith", "babi" (yes-no) or "mmlu" (query from `mcq_query`);
    `prompt`: "zeroshot", "instronly" or "fewshot".
    """
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt {prompt!r}; expected one of {', '.join(PROMPTS)}")
    mcq = dataset in MCQ_DATASETS
    if not mcq and dataset not in YESNO_DATASETS:
        known = YESNO_DATASETS + MCQ_DATASETS
        if prompt == "fewshot":  # the message the few-shot path always gave
            raise ValueError(f"no few-shot examples for dataset {dataset!r}; expected one of {', '.join(known)}")
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {', '.join(known)}")
    if prompt == "zeroshot":
        return query + "\nResponse:" if mcq else query
    if prompt == "instronly":
        instruction = MCQ_INSTRONLY_INSTRUCTION if mcq else INSTRONLY_INSTRUCTION
        return instruction + FEWSHOT_BLOCK.format(question=query)
    return _fewshot_prefix(dataset) + FEWSHOT_BLOCK.format(question=query)
