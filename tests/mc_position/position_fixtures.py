"""Small multiple-choice tasks for the wrapped-task tests: a local JSON dataset and its lm-eval
YAML task in cloze form (the choices are the option texts)."""

from __future__ import annotations

import json
from pathlib import Path

# 2 to 5 options; the gold answer at different original positions
ITEMS = [
    {"question": "Which is a fruit?", "choices": ["carrot", "apple", "potato"], "label": 1},
    {"question": "Which animal barks?", "choices": ["dog", "cat", "cow", "fish"], "label": 0},
    {"question": "2 + 2 = ?", "choices": ["3", "5", "4"], "label": 2},
    {"question": "Capital of France?", "choices": ["Paris", "Rome"], "label": 0},
    {"question": "Colour of grass?", "choices": ["red", "blue", "green", "black", "white"], "label": 2},
]


def write_local_task(folder: Path, name: str = "local_mc", items: list[dict] | None = None, **overrides: str) -> Path:
    """`folder/<name>.yaml` over `folder/<name>.json`; `overrides` replace YAML lines (key: value)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.json"
    data.write_text(json.dumps(ITEMS if items is None else items))
    lines = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": f"{{data_files: {{test: {data}}}}}",
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": '"Question: {{question}}\\nAnswer:"',
        "doc_to_choice": '"{{choices}}"',
        "doc_to_target": "label",
        "metadata": "{version: 1.0}",
        **overrides,
    }
    path = folder / f"{name}.yaml"
    path.write_text("".join(f"{key}: {value}\n" for key, value in lines.items()))
    return path


class OneTaskModel:
    """A report entry with one wrapped task's records (what `report.warnings` reads of a model)."""

    def __init__(self, records: list, task: str = "position_t", name: str = "m") -> None:
        self.records, self.task, self.name = records, task, name

    def tasks(self, family: str) -> dict:
        return {self.task: self.records}
