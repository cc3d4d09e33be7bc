"""The answer-position family's part of the report (`biasmonkey report` calls `tables`, `section`,
`summary`, `summary_sentence` and `summary_display`; see `harness_ext/app/report/families.py`),
built from pure functions over pandas:

- `baseline_table(prompt)`: the authors' 16 models on one prompt type, each the unweighted mean
  over the 57 MMLU subjects of accuracy and RStd before and after the Specific correction, and
  the relative change of those means (Δ%), as in their model summaries.
- `model_table(rows)`: the same numbers for an evaluated model from its per-task metrics
  (task name -> metrics, as lm-eval's results.json or an Inspect log gives them), one row per
  prompt type, with the authors' 16 models below it when their results are at hand.
- `SECTION`: the section's text (markdown).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.metrics.yesno import relative_change
from biasmonkey.tasks.answer_position import baselines
from biasmonkey.tasks.answer_position.data import MMLU_DOMAINS
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.prompts import PROMPTS
from biasmonkey.tasks.answer_position.scoring import summarize
from biasmonkey.tasks.contract import base_task_name

COLUMNS = (
    "prompt",
    "source",
    "family",
    "model",
    "subjects",
    "accuracy",
    "accuracy_specific",
    "delta_pct_accuracy_specific",
    "rstd",
    "rstd_specific",
    "delta_pct_rstd_specific",
)
AUTHORS = "Bhatt & Ivanova (2025)"

SECTION = f"""\
## Answer-position bias on MMLU

How much a model's multiple-choice answers depend on the position of the correct option, on the
57 MMLU subjects (14,042 questions) as Bhatt & Ivanova (2025) measure it: each letter's
log-probability after the question (log-sum-exp of "A" and " A", …), the answer is the most
likely letter. **Recall** of a letter = share of the questions whose correct answer is that
letter that the model answers with it; **RStd** = the population SD of the four recalls (0 =
every position recalled alike; at most 0.433, one letter always). **Specific** = the authors'
correction: each letter's mean log-probability over calibration questions balanced across correct
letters (5 folds, seed 42) is subtracted before answering. Per prompt type (zero-shot,
instruction-only, two-shot), each number is the unweighted mean over the subjects; Δ% is the
relative change of the means, 100 · (Specific − plain) / plain. The authors' 16 models
(Falcon3, Llama-2, MPT, Qwen1.5; base and chat) are listed for reference ({AUTHORS}).
"""


def baseline_table(prompt: str, root: Any = None, subjects: Sequence[str] | None = None) -> pd.DataFrame:
    """The authors' 16 models on one prompt type (means over the subjects of their per-subject
    results; `tests/answer_position/test_answer_position_baselines.py` checks them against their summaries);
    with `subjects`, over those only (the subjects a run holds: like with like)."""
    per_subject = baselines.subject_results(prompt, root)
    if subjects is not None:
        per_subject = per_subject[per_subject["subject"].isin(set(subjects))]
    groups = per_subject.groupby(["family", "model"], sort=False)
    # NaN where a subject has no value: a mean is over all the subjects that `subjects` counts
    means = groups[list(baselines.METRICS)].agg(lambda column: column.mean(skipna=False)).reset_index()
    means["subjects"] = groups.size().to_numpy()
    means["prompt"], means["source"] = prompt, AUTHORS
    means["delta_pct_accuracy_specific"] = [
        relative_change(b, c) for b, c in zip(means["accuracy"], means["accuracy_specific"])
    ]
    means["delta_pct_rstd_specific"] = [relative_change(b, c) for b, c in zip(means["rstd"], means["rstd_specific"])]
    return means[list(COLUMNS)]


def _value(metrics: Mapping[str, Any], name: str) -> float:
    """A metric from lm-eval's results ("accuracy,none") or a plain mapping ("accuracy")."""
    for key in (name, f"{name},none"):
        if key in metrics:
            value = metrics[key]
            return math.nan if value in (None, "N/A") else float(value)
    return math.nan


def subject_rows(rows: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per answer-position task in `rows` (other tasks are ignored): prompt, subject and
    the four headline metrics."""
    out = []
    for task, metrics in rows.items():
        name = base_task_name(task) or task
        fixed = FAMILY.tasks.get(name)
        if fixed is None:
            continue
        out.append(
            {"prompt": fixed["prompt"], "subject": fixed["subject"]}
            | {m: _value(metrics, m) for m in baselines.METRICS}
        )
    return pd.DataFrame(out, columns=["prompt", "subject", *baselines.METRICS])


def model_table(
    rows: Mapping[str, Mapping[str, Any]],
    model: str = "evaluated model",
    with_baselines: bool | None = None,
    root: Any = None,
) -> pd.DataFrame:
    """Per prompt type run: the model's means over its subjects (NaN when a subject's value is
    NaN, e.g. after --limit), `subjects` = how many of the 57 entered; then, with the authors'
    results at hand (`with_baselines` None: when available), their 16 models."""
    per_subject = subject_rows(rows)
    include = baselines.available(root) if with_baselines is None else with_baselines
    parts = []
    for prompt in PROMPTS:
        mine = per_subject[per_subject["prompt"] == prompt]
        if mine.empty:
            continue
        means = {m: float(mine[m].mean(skipna=False)) for m in baselines.METRICS}
        row = {"prompt": prompt, "source": "this run", "family": "", "model": model, "subjects": len(mine)}
        row |= means
        row["delta_pct_accuracy_specific"] = relative_change(means["accuracy"], means["accuracy_specific"])
        row["delta_pct_rstd_specific"] = relative_change(means["rstd"], means["rstd_specific"])
        parts.append(pd.DataFrame([row], columns=list(COLUMNS)))
        if include:
            parts.append(baseline_table(prompt, root))
    if not parts:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.concat(parts, ignore_index=True)


def missing_subjects(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per prompt type run, the subjects without a result (the means are then over fewer than 57)."""
    per_subject = subject_rows(rows)
    return {
        prompt: [s for s in MMLU_DOMAINS if s not in set(group["subject"])]
        for prompt, group in per_subject.groupby("prompt", sort=False)
    }


# ---------------------------------------------------------------------------- report hooks

SUMMARY_COLUMNS = ("answer_position_rstd", "answer_position_rstd_specific", "answer_position_questions")


def _common_subjects(runs: Sequence[pd.DataFrame], prompt: str) -> list[str] | None:
    """The subjects every model ran with `prompt` (None: all of them, where they share none)."""
    sets = [set(r.loc[r["prompt"] == prompt, "subject"]) for r in runs if (r["prompt"] == prompt).any()]
    common = set.intersection(*sets) if sets else set()
    return [s for s in MMLU_DOMAINS if s in common] or None


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`answer_position`: per model and prompt type, the means over its subjects, recomputed from the
    records; then the authors' 16 models on the prompt types run, when their results are at hand,
    averaged over the same subjects (those every model ran; their numbers hold all questions of each)."""
    parts, runs, prompts = [], [], set()
    for m in models:
        rows = {task: summarize(records).as_dict() for task, records in m.tasks(FAMILY.name).items()}
        mine = model_table(rows, model=m.name, with_baselines=False)
        parts.append(mine)
        runs.append(subject_rows(rows))
        prompts |= set(mine["prompt"])
    if baselines.available():
        parts += [
            baseline_table(prompt, subjects=_common_subjects(runs, prompt)) for prompt in PROMPTS if prompt in prompts
        ]
    return {"answer_position": pd.concat(parts, ignore_index=True)}


def _questions(model: Any, prompt: str) -> int:
    """How many questions `model` answered with `prompt`."""
    return sum(
        len(records)
        for task, records in model.tasks(FAMILY.name).items()
        if FAMILY.tasks.get(base_task_name(task) or task, {}).get("prompt") == prompt
    )


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: its zero-shot RStd (else its first prompt type's) before and after Specific."""
    table = tables["answer_position"]
    mine = table[(table["model"] == model.name) & (table["source"] == "this run")]
    row = mine.iloc[0]
    return {
        "answer_position_rstd": row["rstd"],
        "answer_position_rstd_specific": row["rstd_specific"],
        "answer_position_questions": _questions(model, row["prompt"]),
    }


def _authors(tables: Mapping[str, pd.DataFrame], model: str) -> pd.DataFrame:
    """The authors' models on the prompt type of the model's summary entry (its first run)."""
    table = tables["answer_position"]
    mine = table[(table["model"] == model) & (table["source"] == "this run")]
    if not len(mine):
        return table.iloc[:0]
    return table[(table["source"] == AUTHORS) & (table["prompt"] == mine["prompt"].iloc[0])]


# Why a model's mean RStd after Specific is n/a: a subject's Specific numbers are NaN only without balanced folds.
SPECIFIC_NA = (
    "n/a after the Specific correction (a subject with fewer than k − 1 questions of some gold letter: "
    "no balanced folds)"
)


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    if pd.isna(row.get("answer_position_rstd", float("nan"))):
        return None
    specific = row["answer_position_rstd_specific"]
    after = SPECIFIC_NA if pd.isna(specific) else f"{specific:.3f} after the Specific correction"
    sentence = (
        f"Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): {row['answer_position_rstd']:.3f}, "
        f"{after}{_run_size(row, tables)}"
    )
    authors = _authors(tables, row["model"]) if tables else pd.DataFrame()
    if len(authors):
        rstd = authors["rstd"].astype(float)
        below = int((rstd < row["answer_position_rstd"]).sum())
        on = ""
        if "subjects" in authors.columns and authors["subjects"].notna().all():
            subjects = int(authors["subjects"].max())
            on = f" on the same {subjects} subject{'s' * (subjects != 1)}, all their questions"
        sentence += f"; the authors' {len(authors)} models{on}: {rstd.min():.3f} to {rstd.max():.3f} ({below} below it)"
    return sentence + "."


def _run_size(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None) -> str:
    """The run's size, " (this run: N questions in S subjects)", where the summary row counts it."""
    questions = row.get("answer_position_questions")
    if questions is None or pd.isna(questions):
        return ""
    table = (tables or {}).get("answer_position")
    mine = (
        pd.DataFrame() if table is None else table[(table["model"] == row["model"]) & (table["source"] == "this run")]
    )
    subjects = f" in {int(mine['subjects'].iloc[0])} subjects" if len(mine) and "subjects" in mine else ""
    return f" (this run: {int(questions)} questions{subjects})"


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    if "answer_position_rstd" not in summary:
        return {}
    pairs = zip(summary["answer_position_rstd"], summary["answer_position_rstd_specific"])
    shown = ["–" if pd.isna(b) else f"{b:.3f} → " + ("n/a" if pd.isna(sp) else f"{sp:.3f}") for b, sp in pairs]
    return {"MMLU RStd base → specific": shown}


def headline(tables: Mapping[str, pd.DataFrame]) -> Any:
    """RStd before and after the Specific correction (no test: no marks): the user's models on
    their first prompt type, then the authors' models on it."""
    from biasmonkey.harness_ext.app.report.headline import Panel

    table = tables["answer_position"]
    mine = table[table["source"] == "this run"].drop_duplicates("model")
    if not len(mine):
        return None
    authors = _authors(tables, mine["model"].iloc[0])
    rows = pd.concat([mine, authors.assign(model=authors["model"] + " (authors)")], ignore_index=True)
    values = rows.set_index("model")[["rstd", "rstd_specific"]].astype(float)
    values.columns = ["RStd", "RStd, Specific"]
    return Panel(
        f"Answer position on MMLU ({AUTHORS}): RStd of the four letter recalls, {mine['prompt'].iloc[0]} "
        "(0 = none; at most 0.433)",
        values,
        vmax=0.25,
        unit="RStd",
        fmt="{:.3f}",
        references=len(authors),
    )


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Any:
    from biasmonkey.harness_ext.app.report.render import Section, Table

    heading, _, text = SECTION.partition("\n\n")
    s = Section(heading.removeprefix("## "))
    s.blocks.append(text.strip().replace("\n", " "))
    s.blocks.append(
        Table("Accuracy and RStd per model and prompt type (means over the subjects)", tables["answer_position"])
    )
    return s
