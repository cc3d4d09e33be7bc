"""The answer-position family's part of the report (`biasmonkey report` calls `tables`, `section`,
`warnings`, `summary`, `summary_sentence`, `summary_display` and `headline`; see `harness_ext/app/report/families.py`),
built from pure functions over pandas:

- `baseline_table(prompt)`: the authors' 16 models on one prompt type, each the unweighted mean
  over the 57 MMLU subjects of accuracy and RStd before and after the Specific correction, and
  the relative change of those means (Δ%), as in their model summaries.
- `model_table(rows)`: the same numbers for an evaluated model from its per-task metrics
  (task name -> metrics, as lm-eval's results.json or an Inspect log gives them), one row per
  prompt type, with the authors' 16 models below it when their results are at hand.
- `SECTION`: the section's text (markdown; `{folds}`: the runs' fold options, filled in by `section`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.metrics.answer_position import K_FOLDS, SEED
from biasmonkey.metrics.yesno import relative_change
from biasmonkey.tasks.answer_position import baselines
from biasmonkey.tasks.answer_position.data import MMLU_DOMAINS
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
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
letters ({{folds}}) is subtracted before answering. Per prompt type (zero-shot,
instruction-only, two-shot), each number is the unweighted mean over the subjects; Δ% is the
relative change of the means, 100 · (Specific − plain) / plain. The authors' 16 models
(Falcon3, Llama-2, MPT, Qwen1.5; base and chat; the raw prompt) are listed for reference ({AUTHORS}),
averaged over the subjects of the model named in `subject_set` (a run's row names the first model
that ran the same subjects). A mean is n/a where a subject's number is undefined: the Summary's
warnings give each reason.
"""


def check_inputs(tasks: Sequence[str]) -> None:
    """The authors' per-subject results of each prompt type among `tasks`, read and checked now (where
    the shared data folder has them): a damaged file stops `biasmonkey run` before the model runs."""
    if baselines.available():
        for prompt in dict.fromkeys(FAMILY.tasks[task]["prompt"] for task in tasks if task in FAMILY.tasks):
            baselines.subject_results(prompt)


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
# The report's table: COLUMNS, then per row the fold options, the prompt format, how many questions (this
# run's rows; NaN for the authors', who answered every question of their subjects) and `subject_set`: the
# model whose subjects the row's means are over (a this-run row: the first model that ran the same ones).
TABLE_COLUMNS = (*COLUMNS, "k", "seed", "prompt_format", "questions", "subject_set")
RAW = "raw prompt"  # the authors' prompt format: the prompt's text alone, no chat template
FORMATS = {"true": "chat template", "role_prefix": 'role prefix ("user: …")'}  # apply_chat_template's values
NOTE_COLUMNS = ("model", "task", "prompt", "subject", "number", "reason")
UNDEFINED = {"rstd": "RStd n/a", "specific": "Specific n/a"}  # McqSummary.notes' keys, as the warnings name them
MAX_REASONS = 2  # subjects whose reason the verdict gives (the warnings give them all)
# Why a mean is n/a where the notes are not at hand (a table built without them).
SPECIFIC_NA = "a subject with fewer than k − 1 questions of some gold letter: no balanced folds"
RSTD_NA = "a subject where some letter is never the gold answer"


def _fixed(task: str) -> Mapping[str, str]:
    """The task's subject and prompt type ({} for a task of another family)."""
    return FAMILY.tasks.get(base_task_name(task) or task, {})


def _source(model: Any, task: str) -> Any:
    return getattr(model, "sources", {}).get(task)


def _prompt_format(model: Any, task: str) -> str:
    """How the task's prompts reached the model: the raw prompt (the authors'), or a chat template's."""
    source = _source(model, task)
    value = dict(source.settings).get("apply_chat_template") if source is not None else None
    return RAW if value is None else FORMATS.get(value, f"apply_chat_template={value}")


def _one(values: set[Any]) -> Any:
    """The value every task of a prompt type has, else the values as text ("3, 5")."""
    return next(iter(values)) if len(values) == 1 else ", ".join(map(str, sorted(values)))


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`answer_position`: per model and prompt type, the means over its subjects, recomputed from the
    records under each run's options (k, seed); then, when their results are at hand, the authors' 16
    models on each prompt type run, averaged over the subjects of each model (one block per distinct set
    of subjects; their numbers hold all questions of each). `answer_position_notes`: why a subject's
    RStd or Specific numbers are undefined (`McqSummary.notes`), per model and task."""
    parts, notes, sets = [], [], {}  # sets: (prompt, subjects) -> the first model that ran them
    for m in models:
        rows, runs = {}, []
        for task, records in m.tasks(FAMILY.name).items():
            options, fixed = AnswerPositionOptions.of_run(m, task), _fixed(task)
            s = summarize(records, options.k, options.seed)
            rows[task] = s.as_dict()
            runs.append(
                {"prompt": fixed["prompt"], "subject": fixed["subject"], "k": options.k, "seed": options.seed,
                 "prompt_format": _prompt_format(m, task), "questions": len(records)}
            )  # fmt: skip
            notes += [
                {"model": m.name, "task": task, "prompt": fixed["prompt"], "subject": fixed["subject"],
                 "number": key, "reason": reason.partition(": ")[2]}
                for key, reason in s.notes.items()
            ]  # fmt: skip
        mine = model_table(rows, model=m.name, with_baselines=False)
        ran = pd.DataFrame(runs)
        extra = []
        for prompt in mine["prompt"]:
            group = ran[ran["prompt"] == prompt]
            subjects = tuple(s for s in MMLU_DOMAINS if s in set(group["subject"]))
            extra.append(
                {c: _one(set(group[c])) for c in ("k", "seed", "prompt_format")}
                | {
                    "questions": int(group["questions"].sum()),
                    "subject_set": sets.setdefault((prompt, subjects), m.name),
                }
            )
        parts.append(pd.concat([mine, pd.DataFrame(extra, index=mine.index)], axis=1))
    if baselines.available():
        parts += [
            baseline_table(prompt, subjects=subjects).assign(k=K_FOLDS, seed=SEED, prompt_format=RAW, subject_set=first)
            for (prompt, subjects), first in sets.items()
        ]
    return {
        "answer_position": pd.concat(parts, ignore_index=True)
        .reindex(columns=list(TABLE_COLUMNS))
        .astype({"questions": "Int64"}),
        "answer_position_notes": pd.DataFrame(notes, columns=list(NOTE_COLUMNS)),
    }


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """A subject's RStd or Specific numbers undefined, with the reason (the means over it are then n/a)."""
    return [
        {"model": n.model, "task": n.task, "warning": UNDEFINED[n.number], "detail": n.reason}
        for n in tables["answer_position_notes"].itertuples()
    ]


def _mine(tables: Mapping[str, pd.DataFrame] | None, model: str) -> pd.Series | None:
    """The model's row of its summary entry: its first prompt type (zero-shot where run)."""
    table = (tables or {}).get("answer_position")
    if table is None:
        return None
    mine = table[(table["model"] == model) & (table["source"] == "this run")]
    return mine.iloc[0] if len(mine) else None


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: its zero-shot RStd (else its first prompt type's) before and
    after Specific, and the questions it answered with that prompt type."""
    row = _mine(tables, model.name)
    return {
        "answer_position_rstd": row["rstd"],
        "answer_position_rstd_specific": row["rstd_specific"],
        "answer_position_questions": row["questions"],
    }


def _on(table: pd.DataFrame, mine: Mapping[str, Any]) -> pd.Series:
    """The rows on the prompt type and subjects of `mine` (a this-run row)."""
    same = table["subject_set"] == mine["subject_set"] if "subject_set" in table else True
    return (table["prompt"] == mine["prompt"]) & same


def _authors(tables: Mapping[str, pd.DataFrame], model: str) -> pd.DataFrame:
    """The authors' models on the prompt type of the model's summary entry, over the model's subjects."""
    table = tables["answer_position"]
    mine = _mine(tables, model)
    if mine is None:
        return table.iloc[:0]
    return table[(table["source"] == AUTHORS) & _on(table, mine)]


def _plural(n: Any, word: str) -> str:
    return f"{int(n)} {word}{'s' * (int(n) != 1)}"


def _folds(k: Any, seed: Any) -> str:
    return f"{k} folds, seed {seed}" if isinstance(k, str) else f"{_plural(k, 'fold')}, seed {seed}"


def _differences(mine: Mapping[str, Any]) -> list[str]:
    """How the model's run (its row) differs from the authors' in what changes its numbers: prompt format, folds."""
    fmt, k, seed = mine.get("prompt_format", RAW), mine.get("k", K_FOLDS), mine.get("seed", SEED)
    out = [f"a {fmt} where the authors used the {RAW}"] if fmt != RAW else []
    if (k, seed) != (K_FOLDS, SEED):
        out.append(f"Specific with {_folds(k, seed)} where the authors used {_folds(K_FOLDS, SEED)}")
    return out


def _not_as_the_authors(runs: pd.DataFrame) -> list[str]:
    """ "model: how it differs" for each run row that differs from the authors' (once per model)."""
    found = {m: d for m, (_, r) in zip(runs["model"], runs.iterrows()) if (d := _differences(r))}
    return [f"{m}: {', '.join(d)}" for m, d in found.items()]


def _reasons(tables: Mapping[str, pd.DataFrame] | None, model: str, number: str, default: str) -> str:
    """Why the mean of `number` ("rstd", "specific") of the model's summary entry is n/a: "subject: reason; …"."""
    notes, mine = (tables or {}).get("answer_position_notes"), _mine(tables, model)
    if notes is None or mine is None:
        return default
    found = notes[(notes["model"] == model) & (notes["prompt"] == mine["prompt"]) & (notes["number"] == number)]
    shown = [f"{s}: {r}" for s, r in zip(found["subject"], found["reason"])][:MAX_REASONS]
    if len(found) > len(shown):
        shown.append(f"{_plural(len(found) - len(shown), 'more subject')} in the warnings")
    return "; ".join(shown) or default


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    """The verdict's sentence on a model (a row of the summary table): RStd before and after Specific,
    each n/a with its reason; the run's size and how it differs from the authors'; their models' range."""
    rstd, specific = row.get("answer_position_rstd", math.nan), row.get("answer_position_rstd_specific", math.nan)
    if pd.isna(rstd) and pd.isna(row.get("answer_position_questions", math.nan)):
        return None  # no answer-position task run
    model = row["model"]
    before = f"n/a ({_reasons(tables, model, 'rstd', RSTD_NA)})" if pd.isna(rstd) else f"{rstd:.3f}"
    after = (
        f"n/a after the Specific correction ({_reasons(tables, model, 'specific', SPECIFIC_NA)})"
        if pd.isna(specific)
        else f"{specific:.3f} after the Specific correction"
    )
    sentence = f"Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): {before}, {after}{_run_size(row, tables)}"
    authors = _authors(tables, model) if tables else pd.DataFrame()
    if len(authors):
        values = authors["rstd"].astype(float)
        below = "" if pd.isna(rstd) else f" ({int((values < rstd).sum())} below it)"
        on = ""
        if "subjects" in authors.columns and authors["subjects"].notna().all():
            on = f" on the same {_plural(authors['subjects'].max(), 'subject')}, all their questions"
        sentence += (
            f"; the authors' {_plural(len(authors), 'model')}{on}: {values.min():.3f} to {values.max():.3f}{below}"
        )
    return sentence + "."


def _run_size(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None) -> str:
    """ " (this run: N questions in S subjects; how it differs from the authors')", where the summary row
    counts the questions."""
    questions = row.get("answer_position_questions")
    if questions is None or pd.isna(questions):
        return ""
    mine = _mine(tables, row["model"])
    subjects = "" if mine is None or "subjects" not in mine else f" in {_plural(mine['subjects'], 'subject')}"
    differences = [] if mine is None else _differences(mine)
    size = _plural(questions, "question") + subjects
    return f" (this run: {'; '.join([size, *differences])})"


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """ "RStd → Specific" per model: "–" where it ran no answer-position task, "n/a" where a mean is undefined."""
    if "answer_position_rstd" not in summary:
        return {}
    ran = summary.get("answer_position_questions", summary["answer_position_rstd"]).notna()
    pairs = zip(ran, summary["answer_position_rstd"], summary["answer_position_rstd_specific"])
    shown = ["–" if not r else f"{_number(b)} → {_number(sp)}" for r, b, sp in pairs]
    return {"MMLU RStd base → specific": shown}


def _number(value: Any) -> str:
    return "n/a" if pd.isna(value) else f"{value:.3f}"


def headline(tables: Mapping[str, pd.DataFrame]) -> Any:
    """RStd before and after the Specific correction (no test: no marks): the user's models on the
    first model's first prompt type and subjects, then the authors' models on them; the title says the
    prompt type, the questions each side answered and how a run differs from the authors'."""
    from biasmonkey.harness_ext.app.report.headline import Panel

    table = tables["answer_position"]
    runs = table[table["source"] == "this run"]
    if not len(runs):
        return None
    first = runs.iloc[0]
    mine = runs[_on(runs, first)]
    authors = _authors(tables, first["model"])
    labels = [
        m + ("" if f == RAW else f" ({f})")
        for m, f in zip(mine["model"], mine["prompt_format"] if "prompt_format" in mine else [RAW] * len(mine))
    ]
    rows = pd.concat([mine.assign(model=labels), authors.assign(model=authors["model"] + " (authors)")])
    values = rows.set_index("model")[["rstd", "rstd_specific"]].astype(float)
    values.columns = ["RStd", "RStd, Specific"]
    basis = f"{first['prompt']}, {_plural(first['subjects'], 'subject')}"
    if "questions" in mine:
        basis += (
            f" (this run: {_one(set(mine['questions'].astype(int)))} questions; the authors': every question of them)"
        )
    notes = _not_as_the_authors(mine)
    if left := sorted(set(runs["model"]) - set(mine["model"])):
        notes.append(f"not shown (another prompt type or other subjects): {', '.join(left)}")
    return Panel(
        f"Answer position on MMLU ({AUTHORS}): RStd of the four letter recalls, {basis}"
        + "".join(f"; {n}" for n in notes)
        + " (0 = none; at most 0.433)",
        values,
        vmax=0.25,
        unit="RStd",
        fmt="{:.3f}",
        references=len(authors),
    )


def _folds_text(table: pd.DataFrame) -> str:
    """The fold options of the runs in the table, and the authors' where they differ."""
    runs = table[table["source"] == "this run"]
    found = {(k, s) for k, s in zip(runs["k"], runs["seed"])} if "k" in runs else set()
    if found <= {(K_FOLDS, SEED)}:
        return _folds(K_FOLDS, SEED)
    if len(found) == 1:
        return f"{_folds(*found.pop())}; the authors': {_folds(K_FOLDS, SEED)}"
    runs = runs.drop_duplicates(["model", "k", "seed"])
    per = "; ".join(f"{m}: {_folds(k, s)}" for m, k, s in zip(runs["model"], runs["k"], runs["seed"]))
    return f"{per}; the authors': {_folds(K_FOLDS, SEED)}"


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Any:
    from biasmonkey.harness_ext.app.report.render import Section, Table

    table = tables["answer_position"]
    heading, _, text = SECTION.partition("\n\n")
    s = Section(heading.removeprefix("## "))
    s.blocks.append(text.strip().replace("\n", " ").format(folds=_folds_text(table)))
    if differ := _not_as_the_authors(table[table["source"] == "this run"]):
        s.blocks.append(f"Not as the authors ran it (their numbers beside these differ in it): {'; '.join(differ)}.")
    s.blocks.append(Table("Accuracy and RStd per model and prompt type (means over the subjects)", table))
    return s
