"""The `biasmonkey report`: tables, figures and leaderboard files from harness outputs.

`write_report(paths, out_dir)` finds every model's newest lm-eval samples / Inspect logs under
`paths` (`inputs`), recomputes all statistics from the per-item records (`tables`, with
`biasmonkey.metrics`), draws the figures (`figures`), writes the leaderboard files
(`leaderboard`) and renders `report.md` and a self-contained `report.html` (`render`).
Sections appear only for the suites present.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from biasmonkey.harness_ext.report import figures
from biasmonkey.harness_ext.report.inputs import ModelResults, discover
from biasmonkey.harness_ext.report.leaderboard import write_leaderboard
from biasmonkey.harness_ext.report.render import Figure, Section, Table, to_html, to_markdown
from biasmonkey.harness_ext.report.tables import NOT_CODED, build_tables
from biasmonkey.harness_ext.report.topics import load_topics
from biasmonkey.metrics import SIGNIFICANCE

__all__ = ["write_report", "discover", "build_tables"]

RB_COLUMNS = ["model", "bias", "setting", "n_pairs", "n_draws", "delta", "delta_stderr", "t", "p", "p_holm", "p_bh", "uncertainty_q",
              "uncertainty_qp", "invalid_rate", "pairs_without_delta"]


def _show(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return frame[[c for c in columns if c in frame.columns]]


def _significant(frame: pd.DataFrame, column: str = "p") -> pd.Series:
    return frame[column].astype(float) < SIGNIFICANCE


def write_tables(tables: Mapping[str, pd.DataFrame], folder: Path) -> None:
    """Every table as CSV and as JSON (a list of row objects; NaN → null)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
        records = json.loads(frame.to_json(orient="records"))
        (folder / f"{name}.json").write_text(json.dumps(records, indent=1))


def inputs_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    rows = [{"model": m.name, "model_path": m.model, "suite": out.suite, "task": task, "harness": out.harness,
             "n_records": len(m.records[out.suite][task]), "file": str(out.path)}
            for m in models for task, out in sorted(m.sources.items())]
    return pd.DataFrame(rows)


def response_bias_section(models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    rb = tables["response_bias"]
    s = Section("Survey response biases (Tjuatja et al., TACL 2024)")
    s.blocks.append(
        "Δ in percentage points per pair (q = original, q' = modified question), averaged over pairs; t and p from a two-sided "
        f"one-sample t-test against 0; **bold** rows have p < {SIGNIFICANCE}. `p_holm` and `p_bh` are the Holm and "
        "Benjamini–Hochberg adjusted p-values over all tests in this report. On bias rows Δ > 0 is the human-like direction; "
        "humans show no change on the perturbation rows (key typo, middle random, letter swap)."
    )
    s.blocks.append(Table("Δ per model, bias and setting", _show(rb, RB_COLUMNS), _significant(rb)))
    hl = tables["human_likeness"]
    if len(hl):
        s.blocks.append("Human-likeness score (TACL Table 3): +1 per bias with a significant positive Δb, −1 significant negative, 0 otherwise (raw p < 0.05).")
        s.blocks.append(Table("Human-likeness score per model", hl))
    for m in models:
        if m.tasks("response_bias"):
            path = figures.bias_grid(rb, m.name, fig_dir / f"bias_grid_{m.name}.png")
            s.blocks.append(Figure(f"{m.name}: Δ per bias and perturbation; coloured by sign where p < {SIGNIFICANCE}, hatched otherwise", path))
    unc = tables["uncertainty"]
    s.blocks.append(
        "Uncertainty: mean normalised entropy H(p)/log(n) of the answers to the original (q) and modified (q') question, "
        "and Pearson r between |Δ| and the entropy of q over the pairs, with its p."
    )
    s.blocks.append(Table("Uncertainty per model, bias and setting", unc, _significant(unc, "r_p")))
    s.blocks.append(Figure("|Δb| against the normalised entropy of q (legend: Pearson r, p)", figures.uncertainty_scatter(
        [m for m in models if m.tasks("response_bias")], unc, fig_dir / "uncertainty_scatter.png")))
    if (draws := tables.get("perturbation_draws")) is not None:
        s.blocks.append(
            "Perturbation draws (option `perturbation_seeds`): Δp of each seeded draw and its spread. The Δ table above tests "
            "each question once (its Δ averaged over the draws); the per-draw p-values are not in the multiple-comparison family."
        )
        s.blocks.extend(f"- {model}: {line}" for (model, line), _ in draws.groupby(["model", "line"], sort=False))
        s.blocks.append(Table("Δp per model, bias, perturbation and draw", draws.drop(columns=["line"]), _significant(draws)))
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
            s.blocks.append(Figure("Δb per bias and ATP topic (error bars: stderr)", figures.topic_bars(tested, fig_dir / "topics.png")))
    return s


def yesno_section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    s = Section("Yes-no bias (Bhatt & Ivanova, CogSci 2025)")
    s.blocks.append(
        "bias = (#yes − #no)/N ∈ [−1, 1] (0 unbiased) and accuracy, before (`base`) and after the Generic (no-context) "
        "and Specific (5-fold) log-probability corrections."
    )
    s.blocks.append(Table("Bias and accuracy per model, task and correction", tables["yesno"]))
    s.blocks.append(Figure("Bias and accuracy before and after each correction", figures.yesno_bars(tables["yesno"], fig_dir / "yesno.png")))
    return s


def cognitive_section(tables: Mapping[str, pd.DataFrame], fig_dir: Path) -> Section:
    cog = tables["cognitive"]
    s = Section("Cognitive biases (Malberg et al., 2025)")
    s.blocks.append(
        "Mean bias score m ∈ [−1, 1] per bias over the tests that did not fail (> 0 = biased direction), its t-test against 0 "
        "with Holm/BH adjusted p, failed tests, and the score of a uniformly random chooser."
    )
    s.blocks.append(Table("Mean bias score per model and cognitive bias", cog, _significant(cog)))
    s.blocks.append(Figure("Mean bias score per cognitive bias and model", figures.cognitive_heatmap(cog, fig_dir / "cognitive_heatmap.png")))
    tree = figures.model_dendrogram(cog, fig_dir / "cognitive_dendrogram.png")
    if tree is None:
        n = cog["model"].nunique()
        s.blocks.append(f"Model clustering needs at least {figures.MIN_MODELS_FOR_TREE} models; this report has {n}, so no dendrogram is drawn.")
    else:
        s.blocks.append(Figure("Models clustered by their per-bias mean scores (average linkage, Euclidean distance)", tree))
    return s


def multiple_testing_section(tests: pd.DataFrame) -> Section:
    s = Section("Multiple comparisons")
    valid = tests.dropna(subset=["p"])
    s.blocks.append(
        f"{len(valid)} tests in this report form one family ({len(tests) - len(valid)} undefined p-values left out). "
        f"Significant at {SIGNIFICANCE}: {int((valid['p'] < SIGNIFICANCE).sum())} raw, "
        f"{int((valid['p_holm'] < SIGNIFICANCE).sum())} after Holm (family-wise error), "
        f"{int((valid['p_bh'] < SIGNIFICANCE).sum())} after Benjamini–Hochberg (false discovery rate). "
        "Every test is listed in `tables/all_tests.csv`."
    )
    counts = valid.groupby("table", sort=False).agg(
        tests=("p", "size"), raw=("p", lambda p: int((p < SIGNIFICANCE).sum())),
        holm=("p_holm", lambda p: int((p < SIGNIFICANCE).sum())), bh=("p_bh", lambda p: int((p < SIGNIFICANCE).sum())),
    ).reset_index()
    s.blocks.append(Table(f"Tests with p < {SIGNIFICANCE} per table", counts))
    return s


def write_report(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    names: Mapping[str, str] | None = None,
    topics_file: Path | None = None,
) -> Path:
    """Write report.md, report.html, tables/*.csv|json, figures/*.png and leaderboard/ into out_dir;
    return the path of report.md. `names` maps a model's full or short name to the name shown."""
    out = Path(out_dir)
    models = discover(paths, names)
    has_rb = any(m.tasks("response_bias") for m in models)
    tables = build_tables(models, load_topics(topics_file) if has_rb else None)
    fig_dir = out / "figures"
    sections = [Section("Inputs", ["Each model's newest output per task; every number below is recomputed from its per-item records.",
                                   Table("Models and tasks", inputs_table(models).drop(columns=["file"]))])]
    if has_rb:
        sections.append(response_bias_section(models, tables, fig_dir))
    if "yesno" in tables:
        sections.append(yesno_section(tables, fig_dir))
    if "cognitive" in tables:
        sections.append(cognitive_section(tables, fig_dir))
    if len(tables["all_tests"]):
        sections.append(multiple_testing_section(tables["all_tests"]))
    write_tables({**tables, "inputs": inputs_table(models)}, out / "tables")
    written = write_leaderboard(models, tables, out / "leaderboard")
    sections.append(Section("Leaderboard files", [
        "Per model, `leaderboard/<model>/results.json` (lm-eval's results shape) and "
        "`leaderboard/<model>/.eval_results/<task>.yaml` (Hugging Face Hub evaluation results, one headline value per task; "
        f"the `notes` field gives each metric's direction): {len(written)} files."]))
    title = "biasmonkey report: " + ", ".join(m.name for m in models)
    md = out / "report.md"
    md.write_text(to_markdown(title, sections, out))
    (out / "report.html").write_text(to_html(title, sections))
    return md
