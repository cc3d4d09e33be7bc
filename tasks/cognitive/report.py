"""The cognitive family's part of the report (`biasmonkey report`): its table, warnings, summary
columns and section. `harness_ext/app/report` calls these hooks for every family that has them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.harness_ext.logs import describe
from biasmonkey.metrics import SIGNIFICANCE
from biasmonkey.metrics.statistics import DeltaSummary
from biasmonkey.tasks.cognitive.family import FAMILY
from biasmonkey.tasks.cognitive.scoring import summarize_records
from biasmonkey.tasks.contract import base_task_name

COLUMNS = [
    "model",
    "bias",
    "n_tests",
    "failures",
    "score",
    "score_stderr",
    "t",
    "p",
    "expected_score",
    "random_baseline",
    "no_t_test",
    "settings",
]
SUMMARY_COLUMNS = ("cognitive_biases", "cognitive_significant_holm", "cognitive_untested")
NOISE = 1e-12  # |x| below this is floating-point noise of 0 in the shown table (a random baseline of −2.75e-18)


def no_t_test(score: DeltaSummary) -> str:
    """Why a bias's t-test of m against 0 is undefined ("" where it is defined)."""
    if not math.isnan(score.p):
        return ""
    if score.n < 2:
        return f"{score.n} scored test{'s' * (score.n != 1)}, fewer than 2"
    return f"no spread: all {score.n} scores equal"


def _settings(model: Any, task: str) -> str:
    source = getattr(model, "sources", {}).get(task)
    return describe(source.settings) if source is not None else ""


def tables(models: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """`cognitive`: mean bias score m per model × cognitive bias, with its t-test, failures and the random baseline."""
    rows = []
    for m in models:
        for task, records in m.tasks("cognitive").items():
            s = summarize_records(records)
            rows.append(
                {
                    "model": m.name,
                    "bias": FAMILY.tasks[base_task_name(task) or task]["bias"],
                    "n_tests": s.n_tests,
                    "failures": s.failures,
                    "score": s.score.mean,
                    "score_stderr": s.score.stderr,
                    "t": s.score.t,
                    "p": s.score.p,
                    "expected_score": s.expected_score,
                    "random_baseline": s.random_baseline,
                    "no_t_test": no_t_test(s.score),
                    "settings": _settings(m, task),
                }
            )
    return {"cognitive": pd.DataFrame(rows, columns=COLUMNS)}


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Failed tests (no score) and biases without a t-test, per model and bias."""
    cog = tables["cognitive"]
    failed = [
        {
            "model": row["model"],
            "task": row["bias"],
            "warning": "failed tests",
            "detail": f"{row['failures']:g} of {row['n_tests']:g} tests failed (no score)",
        }
        for _, row in cog[cog["failures"] > 0].iterrows()
    ]
    untested = [
        {
            "model": row["model"],
            "task": row["bias"],
            "warning": "no t-test",
            "detail": f"{row['no_t_test']}: no p-value, outside the significance counts",
        }
        for _, row in cog[cog["no_t_test"] != ""].iterrows()
    ]
    return failed + untested


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: biases tested, those significant after Holm, and
    those without a t-test (`no_t_test`: outside the counts)."""
    cog = tables["cognitive"]
    mine = cog[cog["model"] == model.name]
    tested = mine[mine["p"].notna()]
    return {
        "cognitive_biases": len(tested),
        "cognitive_significant_holm": int((tested["p_holm"] < SIGNIFICANCE).sum()),
        "cognitive_untested": len(mine) - len(tested),
    }


def _untested(row: Mapping[str, Any]) -> int:
    n = row.get("cognitive_untested", 0)
    return 0 if pd.isna(n) else int(n)


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame] | None = None) -> str | None:
    """The summary paragraph's sentence on a model's cognitive results (a row of the summary table):
    the tested biases significant after Holm, then those without a t-test and why."""
    if pd.isna(row.get("cognitive_biases", float("nan"))):
        return None
    counts = f"{int(row['cognitive_significant_holm'])} of {int(row['cognitive_biases'])}"
    if not (untested := _untested(row)):
        return f"Cognitive biases: {counts} significant after Holm."
    why = ""
    if tables is not None:
        cog = tables["cognitive"]
        mine = cog[(cog["model"] == row["model"]) & (cog["no_t_test"] != "")]
        why = " (" + "; ".join(f"{b}: {r}" for b, r in zip(mine["bias"], mine["no_t_test"])) + ")"
    return (
        f"Cognitive biases: {counts} tested biases significant after Holm; {untested} more "
        f"without a t-test{why}, outside the count."
    )


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's cognitive column, as shown ("k / n", plus the biases without a t-test)."""
    if "cognitive_biases" not in summary:
        return {}
    shown = []
    for row in summary.to_dict("records"):
        if pd.isna(row["cognitive_biases"]):
            shown.append("–")
            continue
        cell = f"{int(row['cognitive_significant_holm'])} / {int(row['cognitive_biases'])}"
        shown.append(cell + (f" (+{n} without t-test)" if (n := _untested(row)) else ""))
    return {"cognitive significant (Holm)": shown}


def _matrices(cognitive: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean score m per model (rows) × bias (columns), and where it is significant after Holm."""
    cog = cognitive.assign(significant=cognitive["p_holm"].astype(float) < SIGNIFICANCE)
    models = list(dict.fromkeys(cog["model"]))
    values = cog.pivot(index="model", columns="bias", values="score").reindex(models)
    marks = cog.pivot(index="model", columns="bias", values="significant").reindex_like(values)
    return values, marks.fillna(False).astype(bool)


def _tests_per_bias(n_tests: pd.Series) -> str:
    low, high = int(n_tests.min()), int(n_tests.max())
    return f"{low if low == high else f'{low}–{high}'} test{'s' * (high != 1)} per bias"


def basis(cognitive: pd.DataFrame) -> str:
    """The tests each report entry's means are over, e.g. "tiny: 1 test per bias; tiny1: 2 tests per bias"."""
    per_model = {m: _tests_per_bias(rows["n_tests"]) for m, rows in cognitive.groupby("model", sort=False)}
    if len(set(per_model.values())) == 1:
        return next(iter(per_model.values()))
    return "; ".join(f"{m}: {b}" for m, b in per_model.items())


def like_with_like(cognitive: pd.DataFrame) -> str | None:
    """Where the report's entries ran a bias on different numbers of tests or with different settings: which."""
    if cognitive["model"].nunique() < 2:
        return None
    parts = []
    if cognitive.groupby("bias")["n_tests"].nunique().gt(1).any():
        parts.append(
            f"the entries ran different numbers of tests ({basis(cognitive)}), so their means are not over the same tests"
        )
    settings = cognitive.groupby("model", sort=False)["settings"].agg(lambda s: " | ".join(dict.fromkeys(s)))
    if settings.nunique() > 1:
        parts.append("their settings differ (" + "; ".join(f"{m}: {s}" for m, s in settings.items()) + ")")
    return "Not like with like: " + "; ".join(parts) + "." if parts else None


def shown(cognitive: pd.DataFrame) -> pd.DataFrame:
    """The table as the section shows it: without the settings (the Inputs section has them), floating-point
    noise of 0 (|x| < NOISE) as 0."""
    frame = cognitive.drop(columns=["settings"])
    numbers = frame.select_dtypes("float").columns
    frame[numbers] = frame[numbers].mask(frame[numbers].abs() < NOISE, 0.0)
    return frame


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Mean bias score m per cognitive bias; * = significant after Holm; the title says over how many tests."""
    if not len(tables["cognitive"]):
        return None
    values, marks = _matrices(tables["cognitive"])
    return Panel(
        "Cognitive biases (Malberg et al., 2025): mean bias score m ∈ [−1, 1] (> 0 = biased direction); "
        f"over {basis(tables['cognitive'])}",
        values,
        vmax=1.0,
        unit="m",
        significant=marks,
        fmt="{:+.2f}",
    )


def heatmap(cognitive: pd.DataFrame, path: Path) -> Path:
    """Mean bias score m per cognitive bias (rows) × model (columns): colour on [−1, 1], * = significant after Holm."""
    values, marks = (matrix.T for matrix in _matrices(cognitive))
    if figures.from_cache(path, "cognitive_heatmap", values, marks):
        return path
    fig, ax = figures.subplots(figsize=(3 + 1.1 * values.shape[1], 1 + 0.3 * values.shape[0]))
    norm = figures.effect_cells(ax, values, marks, 1.0, "{:+.2f}", fontsize=7)
    ax.tick_params(axis="x", labelrotation=30)
    figures.colour_bar(fig, ax, norm, "mean bias score m")
    fig.tight_layout()
    return figures.save(fig, path)


def section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    cog = tables["cognitive"]
    s = Section("Cognitive biases (Malberg et al., 2025)")
    s.blocks.append(
        "Mean bias score m ∈ [−1, 1] per bias over the tests that did not fail (> 0 = biased direction), its t-test against 0 "
        "with Holm/BH adjusted p, failed tests, and the score of a uniformly random chooser. `no_t_test`: why a bias "
        "has no t-test (its p is n/a and it is outside the significance counts)."
    )
    s.blocks.append(
        Table("Mean bias score per model and cognitive bias", shown(cog), cog["p"].astype(float) < SIGNIFICANCE)
    )
    if note := like_with_like(cog):
        s.blocks.append(note)
    s.blocks.append(
        Figure(
            f"Mean bias score per cognitive bias and model; * = p < {SIGNIFICANCE} after Holm over the report's tests",
            heatmap(cog, fig_dir / "cognitive_heatmap.png"),
        )
    )
    matrix = figures.feature_matrix(cog, "score", ["bias"])
    tree = figures.model_dendrogram(
        matrix, fig_dir / "cognitive_dendrogram.png", "Euclidean distance between per-bias mean scores"
    )
    if tree is None:
        n = cog["model"].nunique()
        s.blocks.append(
            f"Model clustering needs at least {figures.MIN_MODELS_FOR_TREE} models; this report has {n}, so no dendrogram is drawn."
        )
    else:
        s.blocks.append(
            Figure(
                f"Models clustered by their mean scores over the {matrix.shape[1]} biases all of them have "
                "(complete linkage, Euclidean distance, as in Malberg et al.)",
                tree,
            )
        )
    return s
