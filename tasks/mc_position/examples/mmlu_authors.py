"""Documents of the example task `mmlu_anatomy_authors`: the answer_position family's MMLU items as a
plain lm-eval multiple-choice task (question, the four option texts, the gold index), to be asked
with Bhatt & Ivanova's zero-shot prompt by its YAML template."""

from __future__ import annotations

from typing import Any

import datasets

from biasmonkey.tasks.answer_position import data
from biasmonkey.tasks.answer_position.prompts import LETTERS


def mmlu_items(subject: str = "anatomy", **metadata: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: one subject's questions; each option without its "(A) " label."""
    rows = [
        {
            "id": item.id,
            "question": item.question,
            "choices": [option.removeprefix(f"({x}) ") for x, option in zip(LETTERS, item.options)],
            "answer": LETTERS.index(item.gold),
        }
        for item in data.load_mmlu(subject)
    ]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
