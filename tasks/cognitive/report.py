"""The cognitive family's part of the report (`biasmonkey report`): its table, warnings, summary
columns and section. `harness_ext/app/report` calls these hooks for every family that has them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.metrics import SIGNIFICANCE
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
]
SUMMARY_COLUMNS = ("cognitive_biases", "cognitive_significant_holm")


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
                }
            )
    return {"cognitive": pd.DataFrame(rows, columns=COLUMNS)}


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Failed tests (no score), per model and bias."""
    cog = tables["cognitive"]
    return [
        {
            "model": row["model"],
            "task": row["bias"],
            "warning": "failed tests",
            "detail": f"{row['failures']:g} of {row['n_tests']:g} tests failed (no score)",
        }
        for _, row in cog[cog["failures"] > 0].iterrows()
    ]


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: biases tested and those significant after Holm."""
    cog = tables["cognitive"]
    mine = cog[(cog["model"] == model.name) & cog["p"].notna()]
    return {
        "cognitive_biases": len(mine),
        "cognitive_significant_holm": int((mine["p_holm"] < SIGNIFICANCE).sum()),
    }


def summary_sentence(row: Mapping[str, Any]) -> str | None:
    """The summary paragraph's sentence on a model's cognitive results (a row of the summary table)."""
    if pd.isna(row.get("cognitive_biases", float("nan"))):
        return None
    return (
        f"Cognitive biases: {int(row['cognitive_significant_holm'])} of {int(row['cognitive_biases'])} "
        "significant after Holm."
    )


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's cognitive column, as shown ("k / n")."""
    if "cognitive_biases" not in summary:
        return {}
    pairs = zip(summary["cognitive_significant_holm"], summary["cognitive_biases"])
    return {"cognitive significant (Holm)": ["–" if pd.isna(n) else f"{int(k)} / {int(n)}" for k, n in pairs]}


def _matrices(cognitive: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean score m per model (rows) × bias (columns), and where it is significant after Holm."""
    cog = cognitive.assign(significant=cognitive["p_holm"].astype(float) < SIGNIFICANCE)
    models = list(dict.fromkeys(cog["model"]))
    values = cog.pivot(index="model", columns="bias", values="score").reindex(models)
    marks = cog.pivot(index="model", columns="bias", values="significant").reindex_like(values)
    return values, marks.fillna(False).astype(bool)


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Mean bias score m per cognitive bias; * = significant after Holm."""
    if not len(tables["cognitive"]):
        return None
    values, marks = _matrices(tables["cognitive"])
    return Panel(
        "Cognitive biases (Malberg et al., 2025): mean bias score m ∈ [−1, 1] (> 0 = biased direction)",
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
        "with Holm/BH adjusted p, failed tests, and the score of a uniformly random chooser."
    )
    s.blocks.append(Table("Mean bias score per model and cognitive bias", cog, cog["p"].astype(float) < SIGNIFICANCE))
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
