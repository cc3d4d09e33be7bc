"""The report's tables (pandas DataFrames), each computed from per-item records with `biasmonkey.metrics`.

Every table has a `model` column and one row per (model, …) cell. Tables that hold a test's
p-value get Holm and Benjamini–Hochberg adjusted columns over the family of ALL tests in the
report (`adjust_all`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.report.inputs import ModelResults
from biasmonkey.harness_ext.report.topics import TOPICS, NO_TOPIC
from biasmonkey.harness_ext.summary import bias_summaries, rows_in_suite_order
from biasmonkey.metrics import (
    BIASES, SETTINGS, benjamini_hochberg, draw_variation, holm, human_likeness, pearson, summarize_deltas,
)

NOT_CODED = "not coded"
CORRECTIONS = ("base", "generic", "specific")
# Which column holds each table's raw p-value (the tests of the report's family).
TESTED = {"response_bias": "p", "topics": "p", "uncertainty": "r_p", "cognitive": "p"}


def _frame(rows: list[dict], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))


# ---------------------------------------------------------------------------- response biases


def response_bias_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Δ per model × bias × setting: n, mean, stderr, 95% CI, t, p, significance, mean uncertainty."""
    rows = []
    for m in models:
        for row in rows_in_suite_order(m.tasks("response_bias").values()):
            row.pop("r_absdelta_uncertainty_q", None)  # in the uncertainty table, with its p
            rows.append({"model": m.name, **row})
    return _frame(rows, ["model", "bias", "setting", "n_pairs", "delta", "delta_stderr", "ci_low", "ci_high", "t", "p", "significant"])


def human_likeness_table(response_bias: pd.DataFrame) -> pd.DataFrame:
    """TACL Table 3: per model +1 / −1 per bias with a significant positive / negative Δb (raw p < 0.05), else 0."""
    rows = []
    for model, group in response_bias.groupby("model", sort=False):
        scores = human_likeness(bias_summaries(group.to_dict("records")))
        if scores:
            rows.append({"model": model, **{b: scores.get(b, np.nan) for b in BIASES}, "score": sum(scores.values()), "n_biases": len(scores)})
    return _frame(rows, ["model", *BIASES, "score", "n_biases"]).astype({b: "Int64" for b in BIASES})  # NA: bias not run


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
                    rows.append({"model": m.name, "bias": scored[0].bias, "topic": topic, "n_pairs": s.n, "delta": s.mean,
                                 "delta_stderr": s.stderr, "t": s.t, "p": s.p})
            if n_missing := sum(r.key not in topics for r in scored):
                rows.append({"model": m.name, "bias": scored[0].bias, "topic": NOT_CODED, "n_pairs": n_missing})
    order = {name: i for i, name in enumerate((*BIASES, *TOPICS, NO_TOPIC, NOT_CODED))}
    rows.sort(key=lambda r: (r["model"], order[r["bias"]], order[r["topic"]]))
    return _frame(rows, ["model", "bias", "topic", "n_pairs", "delta", "delta_stderr", "t", "p"])


def uncertainty_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Per model × bias × setting: mean normalised entropy of q and q' and Pearson r(|Δ|, entropy of q) with p."""
    rows = []
    for m in models:
        for task_records in m.tasks("response_bias").values():
            scored = [r for r in task_records if r.delta is not None and r.uncertainty_q is not None]
            qs = [r.uncertainty_q for r in task_records if r.uncertainty_q is not None]
            qps = [r.uncertainty_qp for r in task_records if r.uncertainty_qp is not None]
            c = pearson([abs(r.delta) for r in scored], [r.uncertainty_q for r in scored])
            rows.append({
                "model": m.name, "bias": task_records[0].bias, "setting": task_records[0].setting,
                "uncertainty_q": float(np.mean(qs)) if qs else np.nan,
                "uncertainty_qp": float(np.mean(qps)) if qps else np.nan,
                "n_pairs": c.n, "r": c.r, "r_p": c.p,
            })
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    rows.sort(key=lambda r: (r["model"], order[(r["bias"], r["setting"])]))
    return _frame(rows, ["model", "bias", "setting", "uncertainty_q", "uncertainty_qp", "n_pairs", "r", "r_p"])


def draws_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Tasks run with several perturbation draws (option perturbation_seeds): per model × bias ×
    perturbation × draw, the draw's Δ and t-test, with the spread across draws (range, SD) and
    the report line of `biasmonkey.metrics.draw_variation` on each row."""
    rows = []
    for m in models:
        for task_records in m.tasks("response_bias").values():
            for v in draw_variation(task_records):
                for seed, d in v.draws.items():
                    rows.append({"model": m.name, "bias": v.bias, "setting": v.setting, "draw": seed, "n_pairs": d.n,
                                 "delta": d.mean, "delta_stderr": d.stderr, "p": d.p, "delta_range": v.delta_range,
                                 "delta_sd": v.delta_sd, "n_significant": v.n_significant, "line": v.report_line()})
    return _frame(rows, ["model", "bias", "setting", "draw", "n_pairs", "delta", "delta_stderr", "p", "delta_range", "delta_sd",
                         "n_significant", "line"])


# ---------------------------------------------------------------------------- yes-no and cognitive


def yesno_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Bias and accuracy per model × task × correction (base, generic, specific)."""
    from biasmonkey.tasks.yesno.scoring import summarize

    rows = []
    for m in models:
        for task, records in m.tasks("yesno").items():
            s = summarize(records)
            for correction in CORRECTIONS:
                suffix = "" if correction == "base" else f"_{correction}"
                rows.append({"model": m.name, "task": task.removeprefix("biasmonkey_"), "correction": correction, "n": s.n,
                             "bias": getattr(s, f"bias{suffix}"), "accuracy": getattr(s, f"accuracy{suffix}")})
    return _frame(rows, ["model", "task", "correction", "n", "bias", "accuracy"])


def cognitive_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    """Mean bias score m per model × cognitive bias, with its t-test, failures and the random baseline."""
    from biasmonkey.tasks.cognitive.scoring import summarize_records

    rows = []
    for m in models:
        for task, records in m.tasks("cognitive").items():
            s = summarize_records(records)
            rows.append({
                "model": m.name, "bias": task.removeprefix("biasmonkey_cognitive_"), "n_tests": s.n_tests, "failures": s.failures,
                "score": s.score.mean, "score_stderr": s.score.stderr, "t": s.score.t, "p": s.score.p,
                "expected_score": s.expected_score, "random_baseline": s.random_baseline,
            })
    return _frame(rows, ["model", "bias", "n_tests", "failures", "score", "score_stderr", "t", "p", "expected_score", "random_baseline"])


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


def build_tables(models: Sequence[ModelResults], topics: Mapping[str, tuple[str, ...]] | None) -> dict[str, pd.DataFrame]:
    """Every table of the report for the suites present (topics: None → no topic table)."""
    tables: dict[str, pd.DataFrame] = {}
    if any(m.tasks("response_bias") for m in models):
        tables["response_bias"] = response_bias_table(models)
        tables["human_likeness"] = human_likeness_table(tables["response_bias"])
        if topics is not None:
            tables["topics"] = topic_table(models, topics)
        tables["uncertainty"] = uncertainty_table(models)
        if len(draws := draws_table(models)):
            tables["perturbation_draws"] = draws
    if any(m.tasks("yesno") for m in models):
        tables["yesno"] = yesno_table(models)
    if any(m.tasks("cognitive") for m in models):
        tables["cognitive"] = cognitive_table(models)
    tables["all_tests"] = adjust_all(tables)
    return tables
