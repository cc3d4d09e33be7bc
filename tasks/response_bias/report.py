"""The response-bias family's part of the report (`biasmonkey report`): its tables (with the
paper's nine models as reference rows), warnings, summary entries and verdict sentence, headline
panel, section, inputs note and leaderboard entry. `harness_ext/app/report` calls these hooks
(`harness_ext/app/report/families.py` lists them) for every family that has results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.metrics import BIASES, SETTINGS, SIGNIFICANCE
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.response_bias import report_figures
from biasmonkey.tasks.response_bias.report_figures import DELTA_SCALE, significant
from biasmonkey.tasks.response_bias.report_tables import (
    FAMILY,
    NOT_CODED,
    PAPER_PROTOCOL,
    draws_table,
    human_likeness_table,
    largest_effects,
    load_baselines,
    paper_label,
    protocol_of,
    published_table,
    response_bias_table,
    topic_table,
    uncertainty_table,
)
from biasmonkey.tasks.response_bias.topics import load_topics
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE as DEFAULT_UNCERTAINTY
from biasmonkey.tasks.response_bias.uncertainty import check_choice as check_uncertainty_side

AUTHORS = "Tjuatja et al., TACL 2024"
PAPER_MODELS = "The paper's models"
# How the summary names each table's tests.
TEST_NAMES = {"response_bias": "Δ", "uncertainty": "uncertainty correlation", "topics": "topic"}
HUMAN_LIKENESS = lm_eval_task_name("human_likeness")  # the leaderboard entry of TACL Table 3's score


# ---------------------------------------------------------------------------- tables


def tables(
    models: Sequence[Any],
    baselines: bool | str | Sequence[str] = True,
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
    topics: bool = True,
    topics_file: Path | None = None,
) -> dict[str, pd.DataFrame]:
    """`response_bias` (Δ per model × bias × setting; the paper's models appended as reference rows,
    protocol "paper: 50 samples"), `human_likeness` (TACL Table 3), `topics`, `uncertainty`,
    `perturbation_draws` (where run) and `baselines` (the paper's models loaded, or why not).

    `baselines`: True = all nine of `published_samples.PUBLISHED_MODELS` (left out, with a warning,
    when their samples cannot be had), a list (or comma-separated names) = those (an error if they
    cannot be loaded), False = none; or their Δs already loaded. `topics`: Δb per ATP topic from
    `topics_file` (default: the pinned `all-questions-coded.csv`). `uncertainty_side`: "paper" (the authors' per-bias choice),
    "q" or "qp" (`biasmonkey.tasks.response_bias.uncertainty`)."""
    check_uncertainty_side(uncertainty_side)
    mine = response_bias_table(models)
    published, error = load_baselines(baselines)
    paper = published_table(published) if published else mine.iloc[:0]
    rb = pd.concat([part for part in (mine, paper) if len(part)], ignore_index=True) if len(paper) else mine
    out = {
        "response_bias": rb,
        "human_likeness": human_likeness_table(rb),
        "uncertainty": uncertainty_table(models, uncertainty_side),
        "baselines": baselines_table(list(published), error),
    }
    if topics:
        out["topics"] = topic_table(models, load_topics(topics_file))
    if len(draws := draws_table(models)):
        out["perturbation_draws"] = draws
    return out


def baselines_table(loaded: Sequence[str], error: str | None) -> pd.DataFrame:
    """The paper's models in the report: one row per model loaded, or one row saying why none was."""
    from biasmonkey.tasks.response_bias.data import UPSTREAM_COMMIT, UPSTREAM_REPO

    source = f"{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}"
    rows = [{"model": paper_label(name), "source": f"{source} results/{name}/csv/", "error": None} for name in loaded]
    if error:
        rows.append({"model": PAPER_MODELS, "source": source, "error": error})
    return pd.DataFrame(rows, columns=["model", "source", "error"])


def reference_rows(name: str, table: pd.DataFrame) -> pd.Series | None:
    """The paper's models' rows: reference values, outside the report's multiple-comparison family."""
    if name == "response_bias" and "protocol" in table.columns:
        return table["protocol"] == PAPER_PROTOCOL
    return None


# ---------------------------------------------------------------------------- warnings and summary


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Invalid sampled answers, pairs left without Δ, imputed option log-probabilities, and the
    paper's models when they could not be loaded."""
    rows = []
    for m in models:
        for task, records in m.tasks(FAMILY).items():
            answers, invalid = sum(r.n_answers for r in records), sum(r.n_invalid for r in records)
            if invalid:
                detail = f"{invalid / answers:.1%} of {answers:g} sampled answers"
                rows.append({"model": m.name, "task": task, "warning": "invalid answers", "detail": detail})
            if no_delta := sum(r.delta is None for r in records):
                detail = f"{no_delta} of {len(records)} pairs (not tested)"
                rows.append({"model": m.name, "task": task, "warning": "pairs without Δ", "detail": detail})
            if imputed := sum(r.n_imputed for r in records):
                pairs = sum(r.n_imputed > 0 for r in records)
                detail = f"{imputed:g} option log-probabilities imputed (not in the top-k) in {pairs} of {len(records)} pairs"
                rows.append({"model": m.name, "task": task, "warning": "imputed log-probabilities", "detail": detail})
    failed = tables["baselines"].dropna(subset=["error"])
    rows += [
        {"model": r["model"], "task": "", "warning": "not shown", "detail": r["error"]} for _, r in failed.iterrows()
    ]
    return rows


SUMMARY_COLUMNS = (
    "protocol",
    "human_likeness",
    "n_biases",
    "human_likeness_per_bias",
    "perturbations",
    "perturbations_significant_holm",
    "perturbations_significant_raw",
    "largest_effects",
)


def _signed(value: float) -> str:
    return f"{value:+.2f}".rstrip("0").rstrip(".") if value % 1 else f"{int(value):+d}"


def _count(n: float, noun: str) -> str:
    n = int(n)
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: protocol, human-likeness score (and per bias),
    perturbations whose Δp is significant after Holm over the report's family (and at raw p), and
    the largest Holm-significant effects."""
    rb, hl = tables["response_bias"], tables["human_likeness"]
    mine = rb[rb["model"] == model.name]
    score = hl[hl["model"] == model.name]
    perturbations = mine[(mine["setting"] != "bias") & mine["p"].notna()]
    per_bias = (
        ", ".join(
            f"{b.replace('_', ' ')} {_signed(score[b].iloc[0])}"
            for b in BIASES
            if b in score and pd.notna(score[b].iloc[0])
        )
        if len(score)
        else ""
    )
    return {
        "protocol": protocol_of(model),
        "human_likeness": score["score"].iloc[0] if len(score) else np.nan,
        "n_biases": score["n_biases"].iloc[0] if len(score) else 0,
        "human_likeness_per_bias": per_bias,
        "perturbations": len(perturbations),
        "perturbations_significant_holm": int((perturbations["p_holm"] < SIGNIFICANCE).sum()),
        "perturbations_significant_raw": int((perturbations["p"] < SIGNIFICANCE).sum()),
        "largest_effects": "; ".join(largest_effects(mine)),
    }


def _paper_scores(tables: Mapping[str, pd.DataFrame]) -> pd.Series:
    hl = tables["human_likeness"]
    if "protocol" not in hl.columns:
        return pd.Series(dtype=float)
    return hl.loc[hl["protocol"] == PAPER_PROTOCOL].set_index("model")["score"].astype(float)


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str | None:
    """The verdict on a model's survey response biases, beside the paper's models where shown."""
    if not isinstance(row.get("protocol"), str):
        return None
    parts = [f"Survey response biases ({row['protocol']}):"]
    score = row["human_likeness"]
    if pd.notna(score):
        parts.append(
            f"human-likeness score {_signed(score)} over {_count(row['n_biases'], 'bias')} ({row['human_likeness_per_bias']})"
        )
        paper = _paper_scores(tables)
        if len(paper):
            below, above = int((paper < score).sum()), int((paper > score).sum())
            parts[-1] += (
                f"; the paper's {_count(len(paper), 'model')} score {_signed(paper.min())} to {_signed(paper.max())} "
                f"({below} below it, {above} above)."
            )
        else:
            parts[-1] += "."
    else:
        parts.append("no bias setting run, so no human-likeness score.")
    if row["perturbations"]:
        parts.append(
            f"{int(row['perturbations_significant_holm'])} of {_count(row['perturbations'], 'perturbation')} move "
            f"answers significantly after Holm ({int(row['perturbations_significant_raw'])} at raw p < {SIGNIFICANCE}); "
            "humans' answers do not move under them."
        )
    effects = row["largest_effects"]
    parts.append(f"Largest effects: {effects}." if effects else "No Δ is significant after Holm.")
    return " ".join(parts)


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's response-bias columns, as shown (counts as "k / n")."""
    if "protocol" not in summary:
        return {}
    return {
        "protocol": list(summary["protocol"].fillna("–")),
        "human-likeness": [
            "–" if pd.isna(s) else f"{_signed(s)} / {int(n)}"
            for s, n in zip(summary["human_likeness"], summary["n_biases"])
        ],
        "perturbations significant (Holm)": [
            "–" if pd.isna(n) or not n else f"{int(k)} / {int(n)}"
            for k, n in zip(summary["perturbations_significant_holm"], summary["perturbations"])
        ],
        "largest effects (Holm p < 0.05)": list(summary["largest_effects"].fillna("–")),
    }


def summary_notes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The paper's models in one line: human-likeness score and perturbations with raw p < 0.05."""
    rb = tables["response_bias"]
    paper = rb[rb["protocol"] == PAPER_PROTOCOL]
    if not len(paper):
        return []
    scores = _paper_scores(tables)
    items = []
    for label, rows in paper.groupby("model", sort=False):
        perturbations = rows[rows["setting"] != "bias"]
        n_sig = int((perturbations["p"] < SIGNIFICANCE).sum())
        items.append(f"{label.removesuffix(paper_label(''))} {_signed(scores[label])} ({n_sig}/{len(perturbations)})")
    return [
        f"- {PAPER_MODELS} ({AUTHORS}; released samples, 50 answers per prompt; reference values outside the test "
        f"family): human-likeness score and perturbations with raw p < {SIGNIFICANCE}: " + ", ".join(items) + "."
    ]


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Δb per bias (the bias setting), the user's models then the paper's."""
    rb = tables["response_bias"]
    bias_rows = rb[rb["setting"] == "bias"].assign(significant=significant(rb))
    if not len(bias_rows):
        return None
    models = list(dict.fromkeys(rb["model"]))
    values = bias_rows.pivot(index="model", columns="bias", values="delta").reindex(index=models)
    values = values[[b for b in BIASES if b in values.columns]]
    marks = bias_rows.pivot(index="model", columns="bias", values="significant").reindex_like(values)
    return Panel(
        title=f"Survey response biases ({AUTHORS}): Δb per bias, points (> 0 = the human direction)",
        values=values,
        significant=marks.fillna(False).astype(bool),
        vmax=DELTA_SCALE,
        unit="Δb (points)",
        references=int((rb.drop_duplicates("model")["protocol"] == PAPER_PROTOCOL).sum()),
    )


# ---------------------------------------------------------------------------- section

RB_COLUMNS = [
    "model",
    "protocol",
    "bias",
    "setting",
    "n_pairs",
    "n_draws",
    "delta",
    "delta_stderr",
    "t",
    "p",
    "p_holm",
    "p_bh",
    "uncertainty_q",
    "uncertainty_qp",
    "invalid_rate",
    "pairs_without_delta",
]
PAPER_NOTE = (
    f"{PAPER_MODELS} ({AUTHORS}) are scored from their released samples — 50 sampled answers per question and "
    f"prompt, the paper's protocol (`protocol` = `{PAPER_PROTOCOL}`), exactly as `biasmonkey score-samples` prints them — "
    "not from log-probabilities; they are reference values, not tests of your models, so they are outside the "
    "multiple-comparison family (no `p_holm`/`p_bh`)."
)
UNCERTAINTY_SIDE_TEXT = {
    "paper": "the authors' choice, TACL Table 4: q for acquiescence and odd/even, q' for response order, opinion "
    "float and allow/forbid; q on the perturbation rows, for which the paper reports no r. Other choices: "
    "`--uncertainty-side q|qp`",
    "q": "q on every row (`--uncertainty-side q`; the paper's choice is q' for response order, opinion float and "
    "allow/forbid)",
    "qp": "q' on every row (`--uncertainty-side qp`; the paper's choice is q for acquiescence and odd/even)",
}


def _show(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return frame[[c for c in columns if c in frame.columns]]


def _significant(frame: pd.DataFrame, column: str = "p") -> pd.Series:
    return frame[column].astype(float) < SIGNIFICANCE


def comparison_table(rb: pd.DataFrame) -> pd.DataFrame:
    """Δ per bias × setting (rows) and model (columns, the user's then the paper's), "*" where p < 0.05."""
    models = list(dict.fromkeys(rb["model"]))
    rows = []
    for bias, setting in ((b, s) for b in BIASES for s in SETTINGS):
        by_model = rb[(rb["bias"] == bias) & (rb["setting"] == setting)].set_index("model")
        if not len(by_model):
            continue
        row = {"bias": bias, "setting": setting}
        for m in models:
            if m in by_model.index:
                d, p = by_model.loc[m, "delta"], by_model.loc[m, "p"]
                row[m] = f"{d:+.1f}" + ("*" if p < SIGNIFICANCE else "")
            else:
                row[m] = "–"
        rows.append(row)
    return pd.DataFrame(rows, columns=["bias", "setting", *models])


def section(
    tables: Mapping[str, pd.DataFrame],
    fig_dir: Path,
    models: Sequence[Any] = (),
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
) -> Section:
    rb = tables["response_bias"]
    paper = rb["protocol"] == PAPER_PROTOCOL
    mine = rb[~paper]
    s = Section(f"Survey response biases ({AUTHORS})")
    s.blocks.append(
        "Δ in percentage points per pair (q = original, q' = modified question), averaged over pairs; t and p from a two-sided "
        f"one-sample t-test against 0; **bold** rows have p < {SIGNIFICANCE}. `p_holm` and `p_bh` are the Holm and "
        "Benjamini–Hochberg adjusted p-values over all tests in this report. On bias rows Δ > 0 is the human-like direction; "
        "humans show no change on the perturbation rows (key typo, middle random, letter swap). `protocol`: `exact` = "
        "answer probabilities from log-probabilities, `sampled` = shares of sampled answers."
    )
    s.blocks.append(Table("Δ per model, bias and setting", _show(mine, RB_COLUMNS), _significant(mine)))
    if paper.any():
        s.blocks.append(PAPER_NOTE + " Their rows are in `tables/response_bias.csv`; here they stand beside yours.")
        s.blocks.append(
            Table(
                f"Δ (points) beside the paper's models; * p < {SIGNIFICANCE} (raw, as in the paper)",
                comparison_table(rb),
            )
        )
    hl = tables["human_likeness"]
    if len(hl):
        s.blocks.append(
            "Human-likeness score (TACL Table 3): +1 per bias with a significant positive Δb, −1 significant negative, 0 otherwise (raw p < 0.05)."
        )
        s.blocks.append(Table("Human-likeness score per model", hl))
    grid_caption = f"colour = Δ (points; the darkest at ±{DELTA_SCALE:g}), {report_figures.SIGNIFICANCE_TEXT}"
    for m in models:
        if m.tasks(FAMILY):
            path = report_figures.bias_grid(rb, m.name, fig_dir / f"bias_grid_{m.slug}.png")
            s.blocks.append(Figure(f"{m.name}: Δ per bias and setting; {grid_caption}", path))
    if paper.any():
        names = list(dict.fromkeys(rb.loc[paper, "model"]))
        path = report_figures.bias_grids(
            rb, names, fig_dir / "bias_grid_paper_models.png", "The paper's models (released samples, 50 per prompt)"
        )
        s.blocks.append(
            Figure(
                "The paper's models, scored from their released samples (the paper's sampling protocol): Δ per bias and "
                f"setting; {grid_caption}",
                path,
            )
        )
    s.blocks.append(_dendrogram(rb, paper.any(), fig_dir))
    unc = tables["uncertainty"]
    s.blocks.append(
        "Uncertainty: mean normalised entropy H(p)/log(n) of the answers to the original (q) and modified (q') question, "
        "and Pearson r between |Δ| and the entropy of one of them over the pairs, with its p; `r_side` says which "
        f"({UNCERTAINTY_SIDE_TEXT[uncertainty_side]})."
    )
    s.blocks.append(Table("Uncertainty per model, bias and setting", unc, _significant(unc, "r_p")))
    s.blocks.append(
        Figure(
            "|Δb| against the normalised entropy of the side the uncertainty table correlates (its `r_side`, "
            "q or q'; legend: that side, Pearson r and p)",
            report_figures.uncertainty_scatter(
                [m for m in models if m.tasks(FAMILY)], unc, fig_dir / "uncertainty_scatter.png"
            ),
        )
    )
    if (draws := tables.get("perturbation_draws")) is not None:
        s.blocks.append(
            "Perturbation draws (option `perturbation_seeds`): Δp of each seeded draw and its spread. The Δ table above tests "
            "each question once (its Δ averaged over the draws); the per-draw p-values are not in the multiple-comparison family."
        )
        s.blocks.extend(f"- {model}: {line}" for (model, line), _ in draws.groupby(["model", "line"], sort=False))
        s.blocks.append(
            Table("Δp per model, bias, perturbation and draw", draws.drop(columns=["line"]), _significant(draws))
        )
    if (topics := tables.get("topics")) is not None and len(topics):
        missing = topics[topics["topic"] == NOT_CODED]
        s.blocks.append(
            "Δb by ATP topic (topic flags of `all-questions-coded.csv`, matched by question key; a question with several "
            "topics counts in each). Keys the coded file does not list are left out of the topic rows and counted in the "
            f"`{NOT_CODED}` rows: {int(missing['n_pairs'].sum())} pair(s) in all."
        )
        tested = topics[topics["topic"] != NOT_CODED]
        s.blocks.append(Table("Δb per model, bias and topic", topics, _significant(topics)))
        if tested["delta"].notna().any():
            s.blocks.append(
                Figure(
                    "Δb per bias and ATP topic (error bars: stderr)",
                    report_figures.topic_bars(tested, fig_dir / "topics.png"),
                )
            )
    return s


def _dendrogram(rb: pd.DataFrame, with_paper: bool, fig_dir: Path) -> str | Figure:
    matrix = figures.feature_matrix(rb, "delta", ["bias", "setting"])
    tree = figures.model_dendrogram(
        matrix, fig_dir / "response_bias_dendrogram.png", "Euclidean distance between Δ vectors (points)"
    )
    if tree is None:
        return (
            f"Model clustering needs at least {figures.MIN_MODELS_FOR_TREE} models with a common bias × setting cell; "
            f"this report has {rb['model'].nunique()}, so no response-bias dendrogram is drawn."
        )
    mixed = " Protocols differ (exact or sampled answers), which moves Δ too." if with_paper else ""
    return Figure(
        f"Models clustered by their Δ over the {matrix.shape[1]} bias × setting cells all of them have "
        f"(complete linkage, Euclidean distance, as Malberg et al. cluster models).{mixed}",
        tree,
    )


# ---------------------------------------------------------------------------- inputs and leaderboard


def inputs_notes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    loaded = tables["baselines"].dropna(subset=["source"])
    loaded = loaded[loaded["error"].isna()]
    if not len(loaded):
        return []
    names = ", ".join(m.removesuffix(paper_label("")) for m in loaded["model"])
    source = loaded["source"].iloc[0].split(" ")[0]
    return [
        f"{PAPER_MODELS}: the released samples of {names} (`{source}`, `results/<model>/csv/`), checked against their sha256."
    ]


def leaderboard_entries(model: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, Any]]:
    """`biasmonkey_human_likeness`: the TACL Table 3 score (not an lm-eval task: no `configs` entry)."""
    hl = tables["human_likeness"]
    rows = hl[hl["model"] == model].to_dict("records")
    if not rows:
        return {}
    n = int(rows[0].get("n_biases", 0) or 0)
    entry = {"name": HUMAN_LIKENESS, "alias": HUMAN_LIKENESS, "sample_len": n, "score,none": rows[0]["score"]}
    return {
        HUMAN_LIKENESS: {
            "results": entry | {"score_stderr,none": "N/A"},
            "higher_is_better": {"score": True},
            "n_samples": {"original": len(BIASES), "effective": n},
        }
    }
