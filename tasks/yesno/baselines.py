"""The authors' released results (Bhatt & Ivanova, 2025), read for comparison.

They are in the shared data folder (`$BIASMONKEY_DATA_DIR/yesno/reference/`, not pinned upstream
files; upstream ombbhatt/logprobs-bias-correct @ 48591bb, `outputs/Mar-18-2025/`):
`summary_jsons/<prompt>_<family>_<set>.json` map each domain (the set's name for COMPS, Arith and
bAbI; the 11 EWoK domains; the 57 MMLU subjects) to their 16 models (4 families × 4) and numbers.
`authors_results` reads the yes-no sets: plain and k-fold (Specific) bias and accuracy, as the
authors computed them. The answer-position family reads the MMLU files through the same
readers (`summary_path`, `read_summary`, `number`).

These files carry no pinned sha256 (the data layer does not fetch them), so they are checked as they
are read: a file that is not JSON of that shape, a missing domain (another set's file under this
name) or an entry whose numbers are missing or not finite is a DataError naming the file, the entry
and the fix (`RESTORE`); no table is built from a damaged file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.tasks.fetch import DATA_DIR_ENV, DataError

MODEL_FAMILIES = ("falcon", "llama", "mpt", "qwen")  # the authors' file names (summary_jsons)
REFERENCE = "yesno/reference"
COLUMNS = ("family", "model", "bias", "bias_specific", "accuracy", "accuracy_specific")
# The authors' field for each column (their summary_jsons names).
FIELDS = {
    "bias": "plain_bias",
    "bias_specific": "kfold_bias",
    "accuracy": "plain_acc",
    "accuracy_specific": "kfold_acc",
}
RESTORE = (
    f"restore the authors' file in ${DATA_DIR_ENV}/{REFERENCE}/ from the shared data folder (their release: "
    "ombbhatt/logprobs-bias-correct @ 48591bb, outputs/Mar-18-2025/); `biasmonkey data fetch` does not download these"
)
Summary = dict[str, dict[str, dict[str, Any]]]  # {domain: {model: numbers}}


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


def summary_path(prompt: str, family: str, dataset: str, root: Path | str | None = None) -> Path:
    """Where one of the authors' `summary_jsons` files is."""
    return reference_dir(root) / "summary_jsons" / f"{prompt}_{family}_{dataset}.json"


def read_summary(path: Path) -> Summary:
    """One of the authors' `summary_jsons` files, {domain: {model: numbers}}; a DataError naming the
    file when it is missing, not JSON or not of that shape (its numbers are checked by `number`)."""
    if not path.is_file():
        raise DataError(f"{path}: missing (the authors' released results); {RESTORE}")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:  # not UTF-8, or not JSON (a file cut short)
        raise DataError(f"{path}: not a JSON file ({err}); {RESTORE}") from None
    if not (
        isinstance(found, dict)
        and found
        and all(
            isinstance(models, dict) and models and all(isinstance(r, dict) for r in models.values())
            for models in found.values()
        )
    ):
        raise DataError(f"{path}: expected {{domain: {{model: {{name: number}}}}}}; {RESTORE}")
    return found


def domain_entries(path: Path, found: Summary, domain: str) -> dict[str, dict[str, Any]]:
    """{model: numbers} of one domain of a summary file; a DataError when the file has no such domain."""
    if domain not in found:
        raise DataError(
            f"{path}: no entry {domain!r} (its entries: {', '.join(list(found)[:5])}); it is another set's "
            f"results or damaged; {RESTORE}"
        )
    return found[domain]


_MISSING = object()


def number(path: Path, entry: str, numbers: Mapping[str, Any], *keys: str) -> float:
    """numbers[keys[0]][keys[1]]…, a finite number; else a DataError naming the file, the entry
    ("<domain>/<model>") and the field."""
    value: Any = numbers
    for key in keys:
        value = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
    if value is _MISSING or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        problem = "missing" if value is _MISSING else f"{json.dumps(value)}, not a finite number"
        raise DataError(f"{path}: entry {entry}: {'.'.join(keys)} is {problem}; {RESTORE}")
    return float(value)


def authors_results(prompt: str, dataset: str, domain: str | None, root: Path | str | None = None) -> pd.DataFrame:
    """The authors' 16 models on one yes-no set (or EWoK domain) and prompt type: plain and Specific
    (their k-fold) bias and accuracy. A pooled EWoK task (no domain) has no such row: the authors
    report EWoK per domain only, and their k-fold bias does not pool exactly (it divides by the items
    of a fold), so it gets none."""
    if dataset == "ewok" and domain is None:
        return pd.DataFrame(columns=list(COLUMNS))
    key = domain or dataset
    rows = []
    for family in MODEL_FAMILIES:
        path = summary_path(prompt, family, dataset, root)
        for model, r in domain_entries(path, read_summary(path), key).items():
            entry = f"{key}/{model}"
            rows.append({"family": family, "model": model} | {c: number(path, entry, r, f) for c, f in FIELDS.items()})
    return pd.DataFrame(rows, columns=list(COLUMNS))
