"""The report's tables (pandas DataFrames), each computed from per-item records with `biasmonkey.metrics`.

Every table has a `model` column and one row per (model, …) cell. Tables that hold a test's
p-value get Holm and Benjamini–Hochberg adjusted columns over the family of ALL tests in the
report (`adjust_all`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report.families import family_reports
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.topics import NO_TOPIC, TOPICS
from biasmonkey.metrics import (
    BIASES,
    SETTINGS,
    SIGNIFICANCE,
    benjamini_hochberg,
    draw_variation,
    holm,
    human_likeness,
    summarize_deltas,
)
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import FAMILIES, family_of
from biasmonkey.tasks.response_bias.summary import (
    DELTA_COLUMNS,
    bias_summaries,
    delta_columns,
    rows_in_suite_order,
)
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE as DEFAULT_UNCERTAINTY
from biasmonkey.tasks.response_bias.uncertainty import correlated_side, uncertainty_correlation

NOT_CODED = "not coded"
# The `protocol` column: how a model's answers were obtained. The paper's models (baselines,
# `biasmonkey.tasks.response_bias.published_samples`) were sampled 50 times per prompt.
EXACT, SAMPLED, PAPER_PROTOCOL = "exact", "sampled", "paper: 50 samples"
# Which column holds each table's raw p-value (the tests of the report's family).
TESTED = {table: column for family in FAMILIES.values() for table, column in family.tested.items()}


def _frame(rows: list[dict], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))


# ---------------------------------------------------------------------------- response biases


def protocol_of(m: ModelResults) -> str:
    """ "sampled" when any response-bias record holds sampled answers, else "exact" (log-probabilities)."""
    sampled = any(r.n_answers for records in m.tasks("response_bias").values() for r in records)
    return SAMPLED if sampled else EXACT


def response_bias_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Δ per model × bias × setting: n, mean, stderr, 95% CI, t, p, significance, mean uncertainty."""
    rows = []
    for m in models:
        protocol = protocol_of(m)
        for row in rows_in_suite_order(m.tasks("response_bias").values()):
            row.pop("r_absdelta_uncertainty_q", None)  # in the uncertainty table, with its p
            rows.append({"model": m.name, "protocol": protocol, **row})
    return _frame(
        rows,
        ["model", "protocol", "bias", "setting", *DELTA_COLUMNS],
    )


def paper_label(model: str) -> str:
    """How a published model of Tjuatja et al. is named in the report."""
    return f"{model} (paper, sampled)"


def published_table(published: Mapping[str, Mapping[tuple[str, str], Mapping[str, float]]]) -> pd.DataFrame:
    """Δ per published model × bias × setting from its released samples ({model: {(bias, setting):
    {key: Δ}}}, `published_samples.published_deltas`): the rows `biasmonkey score-samples` prints,
    with the stderr, CI and t of the same t-test; no uncertainty (the samples give none)."""
    rows = []
    for model, cells in published.items():
        for bias in BIASES:
            for setting in SETTINGS:
                if (deltas := cells.get((bias, setting))) is None:
                    continue
                s = summarize_deltas(deltas.values())
                rows.append(
                    {
                        "model": paper_label(model),
                        "protocol": PAPER_PROTOCOL,
                        "bias": bias,
                        "setting": setting,
                        **delta_columns(s),
                    }
                )
    return _frame(rows, list(response_bias_table([]).columns))


def human_likeness_table(response_bias: pd.DataFrame) -> pd.DataFrame:
    """TACL Table 3: per model +1 / −1 per bias with a significant positive / negative Δb (raw p < 0.05), else 0."""
    rows = []
    for model, group in response_bias.groupby("model", sort=False):
        scores = human_likeness(bias_summaries(group.to_dict("records")))
        if scores:
            protocol = {"protocol": group["protocol"].iloc[0]} if "protocol" in group.columns else {}
            rows.append(
                {
                    "model": model,
                    **protocol,
                    **{b: scores.get(b, np.nan) for b in BIASES},
                    "score": sum(scores.values()),
                    "n_biases": len(scores),
                }
            )
    protocol = ["protocol"] if "protocol" in response_bias.columns else []
    return _frame(rows, ["model", *protocol, *BIASES, "score", "n_biases"]).astype(
        {b: "Int64" for b in BIASES}
    )  # NA: bias not run


def grid(response_bias: pd.DataFrame, model: str, column: str = "delta") -> pd.DataFrame:
    """One model's bias × setting matrix of `column` (rows BIASES, columns SETTINGS; NaN where absent)."""
    rows = response_bias[response_bias["model"] == model]
    matrix = rows.pivot(index="bias", columns="setting", values=column) if len(rows) else pd.DataFrame()
    return matrix.reindex(index=list(BIASES), columns=list(SETTINGS))


def topic_table(models: Sequence[ModelResults], topics: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """Δb (bias setting) per model × bias × ATP topic; a question with several topics counts in each.

    Keys missing from the coded file form the `not coded` rows with their count only (no test)."""
    rows = []
    for m in models:
        for task_records in m.tasks("response_bias").values():
            scored = [r for r in task_records if r.delta is not None and r.setting == "bias"]
            if not scored:
                continue
            for topic in (*TOPICS, NO_TOPIC):
                deltas = [r.delta for r in scored if topic in topics.get(r.key, ())]
                if deltas:
                    s = summarize_deltas(deltas)
                    rows.append(
                        {
                            "model": m.name,
                            "bias": scored[0].bias,
                            "topic": topic,
                            "n_pairs": s.n,
                            "delta": s.mean,
                            "delta_stderr": s.stderr,
                            "t": s.t,
                            "p": s.p,
                        }
                    )
            if n_missing := sum(r.key not in topics for r in scored):
                rows.append({"model": m.name, "bias": scored[0].bias, "topic": NOT_CODED, "n_pairs": n_missing})
    order = {name: i for i, name in enumerate((*BIASES, *TOPICS, NO_TOPIC, NOT_CODED))}
    rows.sort(key=lambda r: (r["model"], order[r["bias"]], order[r["topic"]]))
    return _frame(rows, ["model", "bias", "topic", "n_pairs", "delta", "delta_stderr", "t", "p"])


def uncertainty_table(models: Sequence[ModelResults], uncertainty_side: str = DEFAULT_UNCERTAINTY) -> pd.DataFrame:
    """Per model × bias × setting: mean normalised entropy of q and q', and Pearson r of |Δ| with the
    entropy of one side (`r_side`, "q" or "qp") with its p. `uncertainty_side` picks it: "paper"
    (default) the authors' per-bias choice (`biasmonkey.tasks.response_bias.uncertainty`), "q" or
    "qp" that side on every row."""
    rows = []
    for m in models:
        for task_records in m.tasks("response_bias").values():
            bias, setting = task_records[0].bias, task_records[0].setting
            side = correlated_side(bias, setting, uncertainty_side)
            qs = [r.uncertainty_q for r in task_records if r.uncertainty_q is not None]
            qps = [r.uncertainty_qp for r in task_records if r.uncertainty_qp is not None]
            c = uncertainty_correlation(task_records, side)
            rows.append(
                {
                    "model": m.name,
                    "bias": bias,
                    "setting": setting,
                    "uncertainty_q": float(np.mean(qs)) if qs else np.nan,
                    "uncertainty_qp": float(np.mean(qps)) if qps else np.nan,
                    "r_side": side,
                    "n_pairs": c.n,
                    "r": c.r,
                    "r_p": c.p,
                }
            )
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    rows.sort(key=lambda r: (r["model"], order[(r["bias"], r["setting"])]))
    return _frame(
        rows, ["model", "bias", "setting", "uncertainty_q", "uncertainty_qp", "r_side", "n_pairs", "r", "r_p"]
    )


def draws_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Tasks run with several perturbation draws (option perturbation_seeds): per model × bias ×
    perturbation × draw, the draw's Δ and t-test, with the spread across draws (range, SD) and
    the report line of `biasmonkey.metrics.draw_variation` on each row."""
    rows = []
    for m in models:
        for task_records in m.tasks("response_bias").values():
            for v in draw_variation(task_records):
                for seed, d in v.draws.items():
                    rows.append(
                        {
                            "model": m.name,
                            "bias": v.bias,
                            "setting": v.setting,
                            "draw": seed,
                            "n_pairs": d.n,
                            "delta": d.mean,
                            "delta_stderr": d.stderr,
                            "p": d.p,
                            "delta_range": v.delta_range,
                            "delta_sd": v.delta_sd,
                            "n_significant": v.n_significant,
                            "line": v.report_line(),
                        }
                    )
    return _frame(
        rows,
        [
            "model",
            "bias",
            "setting",
            "draw",
            "n_pairs",
            "delta",
            "delta_stderr",
            "p",
            "delta_range",
            "delta_sd",
            "n_significant",
            "line",
        ],
    )


# ---------------------------------------------------------------------------- multiple comparisons


def adjust_all(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Holm and BH over every test in `tables` (those named in TESTED): adds `<p>_holm` and
    `<p>_bh` beside each raw p column, in place, and returns the list of all tests."""
    parts = []
    for name, column in TESTED.items():
        table = tables.get(name)
        if table is not None and len(table):
            keys = [c for c in ("model", "bias", "setting", "topic") if c in table.columns]
            part = table[keys].copy()
            part.insert(0, "table", name)
            part["p"] = table[column].astype(float).to_numpy()
            parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["table", "model", "p", "p_holm", "p_bh"])
    tests = pd.concat(parts, ignore_index=True)
    tests = tests[[c for c in ("table", "model", "bias", "setting", "topic", "p") if c in tests.columns]]
    tests["p_holm"] = holm(tests["p"].to_numpy())
    tests["p_bh"] = benjamini_hochberg(tests["p"].to_numpy())
    start = 0
    for name, column in TESTED.items():
        table = tables.get(name)
        if table is not None and len(table):
            block = tests.iloc[start : start + len(table)]
            at = table.columns.get_loc(column) + 1
            table.insert(at, f"{column}_holm", block["p_holm"].to_numpy())
            table.insert(at + 1, f"{column}_bh", block["p_bh"].to_numpy())
            start += len(table)
    return tests


# ---------------------------------------------------------------------------- summary and warnings


def _task(name: str) -> str:
    """A task's name without the harness prefix."""
    return base_task_name(name) or name


def _fixed(name: str) -> Mapping[str, Any]:
    """The fixed arguments (`bias`, `setting`, …) of one of our tasks, named as a harness names it."""
    family = family_of(name)
    assert family is not None, name
    return family.tasks[_task(name)]


def warnings_table(models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """What a reader must know before quoting a number, per model and task, only where it occurs:
    invalid sampled answers and pairs left without Δ, imputed log-probabilities (options missing
    from a served model's top-k, given the documented floor), and each family's own (its report
    module's `warnings`)."""
    rows = []

    def add(m: ModelResults, suite: str, task: str, warning: str, detail: str) -> None:
        rows.append({"model": m.name, "suite": suite, "task": _task(task), "warning": warning, "detail": detail})

    for m in models:
        for task, records in m.tasks("response_bias").items():
            answers, invalid = sum(r.n_answers for r in records), sum(r.n_invalid for r in records)
            if invalid:
                add(
                    m,
                    "response_bias",
                    task,
                    "invalid answers",
                    f"{invalid / answers:.1%} of {answers:g} sampled answers",
                )
            if no_delta := sum(r.delta is None for r in records):
                add(m, "response_bias", task, "pairs without Δ", f"{no_delta} of {len(records)} pairs (not tested)")
            if imputed := sum(r.n_imputed for r in records):
                pairs = sum(r.n_imputed > 0 for r in records)
                add(
                    m,
                    "response_bias",
                    task,
                    "imputed log-probabilities",
                    f"{imputed:g} option log-probabilities imputed (not in the top-k) in {pairs} of {len(records)} pairs",
                )
    for name, hooks in family_reports(models).items():
        if hasattr(hooks, "warnings"):
            rows += [{"suite": name, **row, "task": _task(row["task"])} for row in hooks.warnings(models, tables)]
    return _frame(rows, ["model", "suite", "task", "warning", "detail"])


def effect_label(bias: str, setting: str, delta: float) -> str:
    """E.g. "allow forbid Δb -88.6" or "response order letter swap Δp -7.0"."""
    what = "Δb" if setting == "bias" else f"{setting.replace('_', ' ')} Δp"
    return f"{bias.replace('_', ' ')} {what} {delta:+.1f}"


def largest_effects(rows: pd.DataFrame, k: int = 3) -> list[str]:
    """The k largest |Δ| among response-bias rows significant after Holm (p_holm < 0.05)."""
    significant = rows[rows["p_holm"].astype(float) < SIGNIFICANCE]
    top = significant.loc[significant["delta"].abs().sort_values(ascending=False, kind="stable").index[:k]]
    return [effect_label(r["bias"], r["setting"], r["delta"]) for _, r in top.iterrows()]


SUMMARY_COLUMNS = (
    "model",
    "protocol",
    "human_likeness",
    "n_biases",
    "perturbations",
    "perturbations_significant_holm",
    "perturbations_significant_raw",
    "largest_effects",
    "warnings",
)


def summary_columns() -> list[str]:
    """The summary table's columns: the response-bias ones, each family's, then the warnings."""
    families = [column for hooks in family_reports().values() for column in getattr(hooks, "SUMMARY_COLUMNS", ())]
    return [*SUMMARY_COLUMNS[:-1], *families, SUMMARY_COLUMNS[-1]]


def summary_table(models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model (the user's, not the paper baselines): human-likeness score, perturbations
    (non-bias settings) whose Δp is significant after Holm over the report's family (and at raw p),
    the largest Holm-significant effects, cognitive biases significant after Holm, mean yes-no
    bias before and after the Specific correction, and the number of warnings."""
    rb, hl = tables.get("response_bias"), tables.get("human_likeness")
    warns = tables.get("warnings")
    rows = []
    for m in models:
        row: dict = {"model": m.name}
        if m.tasks("response_bias") and rb is not None and hl is not None:
            mine = rb[rb["model"] == m.name]
            score = hl[hl["model"] == m.name]
            perturbations = mine[(mine["setting"] != "bias") & mine["p"].notna()]
            row |= {
                "protocol": protocol_of(m),
                "human_likeness": score["score"].iloc[0] if len(score) else np.nan,
                "n_biases": score["n_biases"].iloc[0] if len(score) else 0,
                "perturbations": len(perturbations),
                "perturbations_significant_holm": int((perturbations["p_holm"] < SIGNIFICANCE).sum()),
                "perturbations_significant_raw": int((perturbations["p"] < SIGNIFICANCE).sum()),
                "largest_effects": "; ".join(largest_effects(mine)),
            }
        for name, hooks in family_reports(models).items():
            if m.tasks(name) and hasattr(hooks, "summary"):
                row |= hooks.summary(m, tables)
        row["warnings"] = 0 if warns is None else int((warns["model"] == m.name).sum())
        rows.append(row)
    present = {k for r in rows for k in r}
    return _frame(rows, [c for c in summary_columns() if c in present])


def build_tables(
    models: Sequence[ModelResults],
    topics: Mapping[str, tuple[str, ...]] | None,
    published: Mapping[str, Mapping[tuple[str, str], Mapping[str, float]]] | None = None,
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
) -> dict[str, pd.DataFrame]:
    """Every table of the report for the suites present (topics: None → no topic table).

    `published` ({model: {(bias, setting): {key: Δ}}}, from `published_samples.published_deltas`)
    adds the paper's models to the response-bias and human-likeness tables (protocol "paper: 50
    samples") after the multiple-comparison adjustment: they are reference values, not tests of
    the user's models, so they are not in the family and their p_holm / p_bh stay empty."""
    tables: dict[str, pd.DataFrame] = {}
    if any(m.tasks("response_bias") for m in models):
        tables["response_bias"] = response_bias_table(models)
        tables["human_likeness"] = human_likeness_table(tables["response_bias"])
        if topics is not None:
            tables["topics"] = topic_table(models, topics)
        tables["uncertainty"] = uncertainty_table(models, uncertainty_side)
        if len(draws := draws_table(models)):
            tables["perturbation_draws"] = draws
    for hooks in family_reports(models).values():
        tables |= hooks.tables(models)
    tables["all_tests"] = adjust_all(tables)
    if published and "response_bias" in tables and len(paper := published_table(published)):
        tables["response_bias"] = pd.concat([tables["response_bias"], paper], ignore_index=True)
        parts = [tables["human_likeness"], human_likeness_table(paper)]
        tables["human_likeness"] = pd.concat([p for p in parts if len(p)], ignore_index=True)
    tables["warnings"] = warnings_table(models, tables)
    tables["summary"] = summary_table(models, tables)
    return tables
