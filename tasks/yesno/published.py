"""The authors' per-model biases (Bhatt & Ivanova, CogSci 2025) for `biasmonkey compare --published yesno`.

The authors released, per prompt type, model family and set, one summary file
(`summary_jsons/<prompt>_<family>_<set>.json`, upstream ombbhatt/logprobs-bias-correct @ 48591bb,
`outputs/Mar-18-2025/`): per domain (the set's name for COMPS, Arith and bAbI; the 11 EWoK domains;
the 57 MMLU subjects) and model, the plain bias (MMLU: the plain RStd of the letter recalls) and more.
These are not pinned upstream files: they are read from the shared data folder,
`$BIASMONKEY_DATA_DIR/yesno/reference/summary_jsons/` (`biasmonkey data fetch` does not download them).

Their Table 1 (`bias_analysis_summary.csv`) compares each base model with its instruction-tuned
version, one unit per (model pair, domain), per prompt type and set: `published_biases` gives every
model's biases in that shape, one row per (set, prompt type), and the authors' eight pairs as the
default, for the model-pairs form of `biasmonkey compare` (`harness_ext.app.compare_pairs`).

They are per-domain summaries, not per-item answers: a run cannot be paired with these models item
by item (`biasmonkey compare RUN --published yesno` says so).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path

from biasmonkey.tasks.contract import PublishedBiases
from biasmonkey.tasks.fetch import DATA_DIR_ENV, DataError
from biasmonkey.tasks.yesno.baselines import MODEL_FAMILIES, REFERENCE, number, read_summary
from biasmonkey.tasks.yesno.prompts import PROMPTS

# Table 1's sets, in its order; MMLU's "bias" is the RStd of the four letter recalls.
DATASETS = ("ewok", "comps", "babi", "arith", "mmlu")
FIELDS = {"mmlu": "plain_rstd"}  # every other set: plain_bias
DEFAULT_FIELD = "plain_bias"
SUMMARY_DIR = f"{REFERENCE}/summary_jsons"

# The authors' eight base / instruction-tuned pairs (plotting-tables-scripts/instructvbase_stats.py, upstream 48591bb).
MODEL_PAIRS: tuple[tuple[str, str], ...] = (
    ("Falcon3-3B-Base", "Falcon3-3B-Instruct"),
    ("Falcon3-10B-Base", "Falcon3-10B-Instruct"),
    ("mpt-7b", "mpt-7b-chat"),
    ("mpt-30b", "mpt-30b-chat"),
    ("Qwen1.5-7B", "Qwen1.5-7B-Chat"),
    ("Qwen1.5-32B", "Qwen1.5-32B-Chat"),
    ("Llama-2-7b-hf", "Llama-2-7b-chat-hf"),
    ("Llama-2-13b-hf", "Llama-2-13b-chat-hf"),
)

NOTE = (
    "published models (Bhatt & Ivanova): the authors' released per-model results ({folder}): per row one unit per "
    "(model pair, domain: the 11 EWoK domains, the 57 MMLU subjects, one for every other set), their plain bias "
    "(MMLU: plain RStd), as in their Table 1"
)


def row_name(dataset: str, prompt: str) -> str:
    """A row of the table: "ewok (zeroshot)", "mmlu (fewshot)", …"""
    return f"{dataset} ({prompt})"


def summary_dir() -> Path:
    """`$BIASMONKEY_DATA_DIR/yesno/reference/summary_jsons`, or a DataError that says where it is looked for
    and how to get it."""
    root = os.environ.get(DATA_DIR_ENV)
    fix = (
        f"they are not pinned upstream files, so `biasmonkey data fetch` does not download them: set {DATA_DIR_ENV} "
        f"to a copy of the shared data folder that holds {SUMMARY_DIR}/ (e.g. {DATA_DIR_ENV}=../shared/datasets)"
    )
    if not root:
        raise DataError(
            f"the authors' released results are read from ${DATA_DIR_ENV}/{SUMMARY_DIR}/, "
            f"and {DATA_DIR_ENV} is not set; {fix}"
        )
    path = Path(root) / SUMMARY_DIR
    if not path.is_dir():
        raise DataError(f"no folder {path} (the authors' released results, {DATA_DIR_ENV}={root}); {fix}")
    return path


def selected(selection: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prompt types, sets) that `selection` names (each: all where it names none); an unknown word is
    an error with a suggestion."""
    words = PROMPTS + DATASETS
    for word in selection:
        if word not in words:
            close = difflib.get_close_matches(word, words, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(
                f"--published yesno:{','.join(selection)}: {word!r} is not a prompt type ({', '.join(PROMPTS)}) "
                f"or set ({', '.join(DATASETS)}){hint}"
            )
    prompts = tuple(p for p in PROMPTS if p in selection) or PROMPTS
    datasets = tuple(d for d in DATASETS if d in selection) or DATASETS
    return prompts, datasets


def published_biases(selection: Sequence[str] = ()) -> PublishedBiases:
    """Every published model's biases, {model: {row: {domain: bias}}}, of the chosen prompt types and sets
    (`selection`: prompt types and/or sets, all by default), rows in Table 1's order (per prompt type:
    EWoK, COMPS, bAbI, Arith, MMLU), and the authors' eight pairs."""
    prompts, datasets = selected(selection)
    folder = summary_dir()
    models: dict[str, dict[str, dict[str, float]]] = {}
    rows = {}
    for prompt in prompts:
        for dataset in datasets:
            row = row_name(dataset, prompt)
            rows[row] = {"prompt": prompt, "dataset": dataset}
            field = FIELDS.get(dataset, DEFAULT_FIELD)
            for family in MODEL_FAMILIES:
                path = folder / f"{prompt}_{family}_{dataset}.json"
                for domain, by_model in read_summary(path).items():  # checked as the report reads them
                    for model, numbers in by_model.items():
                        value = number(path, f"{domain}/{model}", numbers, field)
                        models.setdefault(model, {}).setdefault(row, {})[domain] = value
    return PublishedBiases(
        models=models,
        pairs=MODEL_PAIRS,
        rows=rows,
        unit="domain",
        notes=[NOTE.format(folder=folder)],
    )


__all__ = ["DATASETS", "MODEL_PAIRS", "published_biases", "row_name", "summary_dir"]
