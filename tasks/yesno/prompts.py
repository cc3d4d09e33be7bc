"""Prompts and answer continuations of the yes-no suite.

The prompt texts are experimental stimuli and are reproduced exactly from the authors' code:
ombbhatt/logprobs-bias-correct at commit 48591bb20f6d95f3a27bb81041dd59a4b81e2570,
`dataset_prompts.py` (the instruction + examples prefixes, `prompt_cond1` / `prompt_cond2`) and
`logprobs_yesno.py` (how a prefix, the query and the answer are joined). The MMLU prompts of the
same file are the answer-position family's (`biasmonkey.tasks.answer_position.prompts`).

Yes-no sets (COMPS, EWoK, Arith, bAbI), three prompt types:
- `zeroshot`: the query alone; the answer continuation follows it directly, so " Yes" scores
  "Does a turtle have a hard shell? Yes" and "Yes" scores "...shell?Yes" (no newline, no
  "Answer:" cue: the paper's no-prompting setup).
- `instronly`: a one-line instruction (singular "question"), an "#EXAMPLE" header, the query,
  then "\\nResponse:".
- `fewshot`: the instruction (plural "questions") and two worked examples of the set (one No,
  one Yes), then the query and "\\nResponse:".
The continuation follows "Response:" directly (" Yes" → "Response: Yes", "Yes" → "Response:Yes").
"""

from __future__ import annotations

PROMPTS = ("zeroshot", "instronly", "fewshot")  # every prompt type of the authors, each a task per set

YESNO_DATASETS = ("comps", "ewok", "arith", "babi")

# Continuations scored after the prompt, in this order; each answer is the log-sum-exp of its pair.
YES_CONTINUATIONS = (" Yes", "Yes")
NO_CONTINUATIONS = (" No", "No")
CONTINUATIONS = YES_CONTINUATIONS + NO_CONTINUATIONS

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

FEWSHOT_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
INSTRONLY_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following yes-no question:\n\n"
FEWSHOT_BLOCK = "#EXAMPLE\nQuestion: {question}\nResponse:"


def _fewshot_prefix(dataset: str) -> str:
    shots = "".join(FEWSHOT_BLOCK.format(question=q) + f" {answer}\n\n" for q, answer in FEWSHOT_EXAMPLES[dataset])
    return FEWSHOT_INSTRUCTION + shots


def render_prompt(query: str, dataset: str, prompt: str = "zeroshot") -> str:
    """The text the answer continuations are scored after.

    `dataset`: "comps", "ewok", "arith" or "babi";
    `prompt`: "zeroshot", "instronly" or "fewshot".
    """
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt {prompt!r}; expected one of {', '.join(PROMPTS)}")
    if dataset not in YESNO_DATASETS:
        known = YESNO_DATASETS
        if prompt == "fewshot":  # the message the few-shot path always gave
            raise ValueError(f"no few-shot examples for dataset {dataset!r}; expected one of {', '.join(known)}")
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {', '.join(known)}")
    if prompt == "zeroshot":
        return query
    if prompt == "instronly":
        return INSTRONLY_INSTRUCTION + FEWSHOT_BLOCK.format(question=query)
    return _fewshot_prefix(dataset) + FEWSHOT_BLOCK.format(question=query)
