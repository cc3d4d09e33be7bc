"""The authors' released results (Bhatt & Ivanova, 2025), read for comparison.

They are in the shared data folder (`$BIASMONKEY_DATA_DIR/yesno/reference/`, not pinned upstream
files; upstream ombbhatt/logprobs-bias-correct @ 48591bb, `outputs/Mar-18-2025/`):
`summary_jsons/<prompt>_<family>_<set>.json` map each domain (the set's name for COMPS, Arith and
bAbI; the 11 EWoK domains; the 57 MMLU subjects) to their 16 models (4 families × 4) and numbers.
`authors_results` reads the yes-no sets: plain and k-fold (Specific) bias and accuracy, as the
authors computed them. The answer-position family reads the MMLU files through `reference_dir`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from biasmonkey.tasks.fetch import DATA_DIR_ENV, DataError

MODEL_FAMILIES = ("falcon", "llama", "mpt", "qwen")  # the authors' file names (summary_jsons)
REFERENCE = "yesno/reference"
COLUMNS = ("family", "model", "bias", "bias_specific", "accuracy", "accuracy_specific")


def reference_dir(root: Path | str | None = None) -> Path:
    """The authors' reference folder: `<root>/yesno/reference`, root defaulting to $BIASMONKEY_DATA_DIR."""
    if root is None:
        if not os.environ.get(DATA_DIR_ENV):
            raise DataError(f"the authors' released results are in the shared data folder: set {DATA_DIR_ENV}")
        root = os.environ[DATA_DIR_ENV]
    path = Path(root) / REFERENCE
    if not path.is_dir():
        raise DataError(f"{path}: no such folder (the authors' reference results)")
    return path


def available(root: Path | str | None = None) -> bool:
    """Whether the authors' results can be read."""
    try:
        reference_dir(root)
    except DataError:
        return False
    return True


def summary_json(prompt: str, family: str, dataset: str, root: Path | str | None = None) -> dict:
    """One of the authors' `summary_jsons` files: {domain: {model: numbers}}."""
    path = reference_dir(root) / "summary_jsons" / f"{prompt}_{family}_{dataset}.json"
    if not path.is_file():
        raise DataError(f"{path}: missing (the authors' released results)")
    return json.loads(path.read_text())


def authors_results(prompt: str, dataset: str, domain: str | None, root: Path | str | None = None) -> pd.DataFrame:
    """The authors' 16 models on one yes-no set (or EWoK domain) and prompt type: plain and Specific
    (their k-fold) bias and accuracy. A pooled EWoK task (no domain) has no such row: the authors
    report EWoK per domain only, and their k-fold bias does not pool exactly (it divides by the items
    of a fold), so it gets none."""
    if dataset == "ewok" and domain is None:
        return pd.DataFrame(columns=list(COLUMNS))
    rows = []
    for family in MODEL_FAMILIES:
        for model, r in summary_json(prompt, family, dataset, root)[domain or dataset].items():
            rows.append(
                {
                    "family": family,
                    "model": model,
                    "bias": r["plain_bias"],
                    "bias_specific": r["kfold_bias"],
                    "accuracy": r["plain_acc"],
                    "accuracy_specific": r["kfold_acc"],
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS))
