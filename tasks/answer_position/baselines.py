"""The authors' MMLU answer-position results (Bhatt & Ivanova, 2025), read for comparison.

Two kinds of file, both in the shared data folder (`$BIASMONKEY_DATA_DIR/yesno/reference/`, not
pinned upstream files; upstream ombbhatt/logprobs-bias-correct @ 48591bb, `outputs/Mar-18-2025/`):

- `summary_jsons/<prompt>_<family>_mmlu.json`: per subject and model (4 families × 4 models), the
  plain and k-fold (Specific) accuracy, the four letter recalls and RStd (`subject_results`);
- `mmlu_model_summaries/mmlu_<prompt>_model_summaries.csv`: per model, the mean over the 57
  subjects of accuracy and RStd before and after the correction, and the relative change of the
  means in percent, rounded to 4 decimals (`model_summaries`).

Column names follow the family's metrics: accuracy, rstd, recall_A … and their `_specific` versions.
The JSON files are checked as they are read (`tasks/yesno/baselines.py`): a file that is not JSON,
whose subjects are not the 57 MMLU subjects, or an entry with a number missing or not finite, is a
DataError naming the file, the entry and the fix.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biasmonkey.tasks.answer_position.data import MMLU_DOMAINS
from biasmonkey.tasks.answer_position.prompts import LETTERS, PROMPTS
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.yesno.baselines import (
    MODEL_FAMILIES,
    RESTORE,
    available,
    number,
    read_summary,
    reference_dir,
    summary_path,
)

__all__ = ["MODEL_FAMILIES", "available", "model_summaries", "reference_dir", "subject_results"]

METRICS = ("accuracy", "accuracy_specific", "rstd", "rstd_specific")
RECALLS = tuple(f"recall_{x}" for x in LETTERS) + tuple(f"recall_{x}_specific" for x in LETTERS)
# Each column's field in the authors' per-subject entries (a recall: the letter within its dict).
FIELDS: dict[str, tuple[str, ...]] = {
    "accuracy": ("plain_acc",),
    "accuracy_specific": ("kfold_acc",),
    "rstd": ("plain_rstd",),
    "rstd_specific": ("kfold_rstd",),
    **{f"recall_{x}": ("plain_recalls", x) for x in LETTERS},
    **{f"recall_{x}_specific": ("kfold_recalls", x) for x in LETTERS},
}
# The summaries' columns, as named here.
SUMMARY_COLUMNS = {
    "Family": "family",
    "Model": "model",
    "Avg Plain Acc": "accuracy",
    "Avg KFold Acc": "accuracy_specific",
    "Acc % Change": "delta_pct_accuracy_specific",
    "Avg Plain RSTD": "rstd",
    "Avg KFold RSTD": "rstd_specific",
    "RSTD % Change": "delta_pct_rstd_specific",
    "Domain Count": "subjects",
}


def _check_prompt(prompt: str) -> None:
    if prompt not in PROMPTS:
        raise ValueError(f"unknown prompt {prompt!r}; expected one of {', '.join(PROMPTS)}")


def subject_results(prompt: str, root: Path | str | None = None) -> pd.DataFrame:
    """One row per (model, subject): family, model, subject, accuracy, rstd, the recalls and their
    Specific versions, from the authors' per-subject JSON files (subjects in their file order)."""
    _check_prompt(prompt)
    rows = []
    for family in MODEL_FAMILIES:
        path = summary_path(prompt, family, "mmlu", root)
        found = read_summary(path)
        if set(found) != set(MMLU_DOMAINS):
            missing = [s for s in MMLU_DOMAINS if s not in found]
            extra = [s for s in found if s not in MMLU_DOMAINS]
            raise DataError(
                f"{path}: its subjects are not the 57 MMLU subjects (missing {missing[:5] or 'none'}, "
                f"unexpected {extra[:5] or 'none'}); {RESTORE}"
            )
        for subject, models in found.items():
            for model, r in models.items():
                entry = f"{subject}/{model}"
                values = {column: number(path, entry, r, *keys) for column, keys in FIELDS.items()}
                rows.append({"family": family, "model": model, "subject": subject} | values)
    return pd.DataFrame(rows)


def _percent(text: str) -> float:
    return float(str(text).strip().removesuffix("%"))


def model_summaries(prompt: str, root: Path | str | None = None) -> pd.DataFrame:
    """The authors' per-model summary of one prompt type (16 rows; Δ% as numbers, e.g. -62.71)."""
    _check_prompt(prompt)
    path = reference_dir(root) / "mmlu_model_summaries" / f"mmlu_{prompt}_model_summaries.csv"
    if not path.is_file():
        raise DataError(f"{path}: missing (the authors' MMLU model summaries)")
    df = pd.read_csv(path).rename(columns=SUMMARY_COLUMNS)
    missing = sorted(set(SUMMARY_COLUMNS.values()) - set(df.columns))
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}")
    df["family"] = df["family"].str.lower()
    for column in ("delta_pct_accuracy_specific", "delta_pct_rstd_specific"):
        df[column] = df[column].map(_percent)
    return df[list(SUMMARY_COLUMNS.values())]
