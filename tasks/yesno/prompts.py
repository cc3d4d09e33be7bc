"""Prompts and answer continuations of the yes-no suite (design notes §5).

Zero-shot: the query alone; the answer continuation follows it directly, so " Yes" scores
"Does a turtle have a hard shell? Yes" and "Yes" scores "...shell?Yes" (no newline, no
"Answer:" cue: the paper's no-prompting setup). Few-shot: a one-line instruction and two worked
examples (one No, one Yes) written for each dataset, then the query; the continuation follows
"Response:".
"""

from __future__ import annotations

PROMPTS = ("zeroshot", "fewshot")

# Continuations scored after the prompt, in this order; each answer is the log-sum-exp of its pair.
YES_CONTINUATIONS = (" Yes", "Yes")
NO_CONTINUATIONS = (" No", "No")
CONTINUATIONS = YES_CONTINUATIONS + NO_CONTINUATIONS

# Two examples per dataset: (question, answer), shown in this order.
FEWSHOT_EXAMPLES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "comps": (
        ("Does a blueberry fire bullets?", "No"),
        ("Does a turtle have a hard shell?", "Yes"),
    ),
    "ewok": (
        ("Claire sees something that is fabric. Can Claire pour it?", "No"),
        ("Sally pays salary to Harry. Is Sally Harry's boss?", "Yes"),
    ),
}

FEWSHOT_INSTRUCTION = "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
FEWSHOT_BLOCK = "#EXAMPLE\nQuestion: {question}\nResponse:"


def render_prompt(query: str, dataset: str, prompt: str = "zeroshot") -> str:
    """The text the answer continuations are scored after."""
    if prompt == "zeroshot":
        return query
    if prompt != "fewshot":
        raise ValueError(f"unknown prompt {prompt!r}; expected one of {', '.join(PROMPTS)}")
    if dataset not in FEWSHOT_EXAMPLES:
        raise ValueError(f"no few-shot examples for dataset {dataset!r}; expected one of {', '.join(FEWSHOT_EXAMPLES)}")
    shots = "".join(
        FEWSHOT_BLOCK.format(question=question) + f" {answer}\n\n" for question, answer in FEWSHOT_EXAMPLES[dataset]
    )
    return FEWSHOT_INSTRUCTION + shots + FEWSHOT_BLOCK.format(question=query)
