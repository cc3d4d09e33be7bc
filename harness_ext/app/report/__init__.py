"""The `biasmonkey report`: tables, figures and leaderboard files from harness outputs.

`write_report(paths, out_dir)` finds every model's newest lm-eval samples / Inspect logs under
`paths`, per model and per setting where one model ran a suite with several (`inputs`: never
mixed), recomputes all statistics from the per-item records (`tables`, with
`biasmonkey.metrics`), draws the figures (`figures`), writes the leaderboard files
(`leaderboard`) and renders `report.md` and a self-contained `report.html` (`render`).
The report opens with a summary (per model: human-likeness score, perturbations significant
after Holm, largest effects, warnings) and ends with its inputs. With response-bias results, the
nine models of Tjuatja et al. are placed beside the user's as baselines, scored from their
released samples (`biasmonkey.tasks.response_bias.published_samples`); `baselines=False` leaves
them out. Sections appear only for the suites present.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.families import family_reports
from biasmonkey.harness_ext.app.report.hub import PLACEHOLDER_DATASET
from biasmonkey.harness_ext.app.report.inputs import ModelResults, discover
from biasmonkey.harness_ext.app.report.leaderboard import leaderboard_text, write_leaderboard
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table, to_html, to_markdown
from biasmonkey.harness_ext.app.report.tables import (
    NOT_CODED,
    PAPER_PROTOCOL,
    build_tables,
    paper_label,
)
from biasmonkey.harness_ext.app.report.topics import load_topics
from biasmonkey.harness_ext.logs import describe
from biasmonkey.metrics import BIASES, SETTINGS, SIGNIFICANCE
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE as DEFAULT_UNCERTAINTY
from biasmonkey.tasks.response_bias.uncertainty import check_choice as check_uncertainty_side

__all__ = ["write_report", "discover", "build_tables"]

log = logging.getLogger(__name__)

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
    rows = [
        {
            "model": m.name,
            "model_path": m.model,
            "suite": out.suite,
            "task": task,
            "harness": out.harness,
            "settings": describe(out.settings),
            "n_records": len(m.records[out.suite][task]),
            "file": str(out.path),
        }
        for m in models
        for task, out in sorted(m.sources.items())
    ]
    columns = ["model", "model_path", "suite", "task", "harness", "settings", "n_records", "file"]
    return pd.DataFrame(rows, columns=columns)


PAPER_NOTE = (
    "The paper's models (Tjuatja et al.) are scored from their released samples — 50 sampled answers per question and "
    f"prompt, the paper's protocol (`protocol` = `{PAPER_PROTOCOL}`), exactly as `biasmonkey score-samples` prints them — "
    "not from log-probabilities; they are reference values, not tests of your models, so they are outside the "
    "multiple-comparison family (no `p_holm`/`p_bh`)."
)


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


def inputs_section(models: Sequence[ModelResults], published: Sequence[str]) -> Section:
    s = Section(
        "Inputs",
        [
            "Each model's newest output per setting and task; every number above is recomputed from its per-item "
            "records. `settings`: what changes the numbers (run options, limit, sampling, seeds, …) as the harness "
            "recorded it; a model run with several settings of one suite is one model per setting, named with the "
            "settings that differ.",
            Table("Models and tasks", inputs_table(models).drop(columns=["file"])),
        ],
    )
    if published:
        from biasmonkey.tasks.response_bias.data import UPSTREAM_COMMIT, UPSTREAM_REPO

        s.blocks.append(
            f"The paper's models: the released samples of {', '.join(published)} "
            f"(`{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}`, `results/<model>/csv/`), checked against their sha256."
        )
    return s


UNCERTAINTY_SIDE_TEXT = {
    "paper": "the authors' choice, TACL Table 4: q for acquiescence and odd/even, q' for response order, opinion "
    "float and allow/forbid; q on the perturbation rows, for which the paper reports no r. Other choices: "
    "`--uncertainty-side q|qp`",
    "q": "q on every row (`--uncertainty-side q`; the paper's choice is q' for response order, opinion float and "
    "allow/forbid)",
    "qp": "q' on every row (`--uncertainty-side qp`; the paper's choice is q for acquiescence and odd/even)",
}


def response_bias_section(
    models: Sequence[ModelResults],
    tables: Mapping[str, pd.DataFrame],
    fig_dir: Path,
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
) -> Section:
    rb = tables["response_bias"]
    paper = rb["protocol"] == PAPER_PROTOCOL
    mine = rb[~paper]
    s = Section("Survey response biases (Tjuatja et al., TACL 2024)")
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
    for m in models:
        if m.tasks("response_bias"):
            path = figures.bias_grid(rb, m.name, fig_dir / f"bias_grid_{m.slug}.png")
            s.blocks.append(
                Figure(
                    f"{m.name}: Δ per bias and perturbation; coloured by sign where p < {SIGNIFICANCE}, hatched otherwise",
                    path,
                )
            )
    if paper.any():
        names = list(dict.fromkeys(rb.loc[paper, "model"]))
        path = figures.bias_grids(
            rb, names, fig_dir / "bias_grid_paper_models.png", "The paper's models (released samples, 50 per prompt)"
        )
        s.blocks.append(
            Figure(
                "The paper's models, scored from their released samples (the paper's sampling protocol): Δ per bias and "
                f"perturbation; coloured by sign where p < {SIGNIFICANCE}, hatched otherwise",
                path,
            )
        )
    matrix = figures.feature_matrix(rb, "delta", ["bias", "setting"])
    tree = figures.model_dendrogram(
        matrix, fig_dir / "response_bias_dendrogram.png", "Euclidean distance between Δ vectors (points)"
    )
    if tree is None:
        s.blocks.append(
            f"Model clustering needs at least {figures.MIN_MODELS_FOR_TREE} models with a common bias × setting cell; "
            f"this report has {rb['model'].nunique()}, so no response-bias dendrogram is drawn."
        )
    else:
        mixed = " Protocols differ (exact or sampled answers), which moves Δ too." if paper.any() else ""
        s.blocks.append(
            Figure(
                f"Models clustered by their Δ over the {matrix.shape[1]} bias × setting cells all of them have "
                f"(complete linkage, Euclidean distance, as Malberg et al. cluster models).{mixed}",
                tree,
            )
        )
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
            figures.uncertainty_scatter(
                [m for m in models if m.tasks("response_bias")], unc, fig_dir / "uncertainty_scatter.png"
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
                    "Δb per bias and ATP topic (error bars: stderr)", figures.topic_bars(tested, fig_dir / "topics.png")
                )
            )
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


def _signed(value: float) -> str:
    return f"{value:+.2f}".rstrip("0").rstrip(".") if value % 1 else f"{int(value):+d}"


def _count(n: float, noun: str) -> str:
    n = int(n)
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def _holm_family(tests: pd.DataFrame) -> str:
    n = int(tests["p"].notna().sum())
    kinds = {
        "response_bias": "Δ",
        "uncertainty": "uncertainty correlation",
        "topics": "topic",
    }
    present = [kinds.get(t, t) for t in dict.fromkeys(tests.dropna(subset=["p"])["table"])]
    return f"Holm over the report's family of {n} tests ({', '.join(present) or 'none'} tests of your models)"


def model_lines(row: Mapping, hl: pd.DataFrame | None) -> str:
    """The summary paragraph of one model (a row of the summary table)."""
    parts = [f"- **{row['model']}**"]
    if "protocol" in row and isinstance(row["protocol"], str):
        parts[0] += f" ({row['protocol']}):"
        score = row["human_likeness"]
        if pd.notna(score):
            scores = hl[hl["model"] == row["model"]].iloc[0] if hl is not None else {}
            per_bias = ", ".join(
                f"{b.replace('_', ' ')} {_signed(scores[b])}" for b in BIASES if b in scores and pd.notna(scores[b])
            )
            parts.append(f"human-likeness score {_signed(score)} over {_count(row['n_biases'], 'bias')} ({per_bias}).")
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
    else:
        parts[0] += ":"
    for hooks in family_reports().values():
        if hasattr(hooks, "summary_sentence") and (sentence := hooks.summary_sentence(row)):
            parts.append(sentence)
    return " ".join(parts)


def summary_display(summary: pd.DataFrame) -> pd.DataFrame:
    """The compact summary table as shown (counts as "k / n")."""
    shown = pd.DataFrame({"model": summary["model"]})
    if "protocol" in summary:
        shown["protocol"] = summary["protocol"]
        shown["human-likeness"] = [
            "–" if pd.isna(s) else f"{_signed(s)} / {int(n)}"
            for s, n in zip(summary["human_likeness"], summary["n_biases"])
        ]
        shown["perturbations significant (Holm)"] = [
            "–" if pd.isna(n) or not n else f"{int(k)} / {int(n)}"
            for k, n in zip(summary["perturbations_significant_holm"], summary["perturbations"])
        ]
        shown["largest effects (Holm p < 0.05)"] = summary["largest_effects"].fillna("–")
    for hooks in family_reports().values():
        if hasattr(hooks, "summary_display"):
            shown = shown.assign(**hooks.summary_display(summary))
    shown["warnings"] = summary["warnings"]
    return shown


def summary_section(tables: Mapping[str, pd.DataFrame], baseline_error: str | None = None) -> Section:
    summary, hl = tables["summary"], tables.get("human_likeness")
    s = Section("Summary")
    s.blocks.append(
        f"Significance counts use p < {SIGNIFICANCE} after the multiple-comparison correction: "
        f"{_holm_family(tables['all_tests'])}. Δ in percentage points."
    )
    s.blocks.extend(model_lines(row, hl) for row in summary.to_dict("records"))
    rb = tables.get("response_bias")
    if rb is not None and (rb["protocol"] == PAPER_PROTOCOL).any():
        paper = rb[rb["protocol"] == PAPER_PROTOCOL]
        scores = hl.set_index("model")["score"] if hl is not None else pd.Series(dtype=float)
        items = []
        for label, rows in paper.groupby("model", sort=False):
            perturbations = rows[rows["setting"] != "bias"]
            n_sig = int((perturbations["p"] < SIGNIFICANCE).sum())
            items.append(
                f"{label.removesuffix(paper_label(''))} {_signed(scores[label])} ({n_sig}/{len(perturbations)})"
            )
        s.blocks.append(
            "- The paper's models (released samples, 50 answers per prompt; reference values outside the test family): "
            f"human-likeness score and perturbations with raw p < {SIGNIFICANCE}: " + ", ".join(items) + "."
        )
    s.blocks.append(Table("Summary per model", summary_display(summary)))
    warns = tables.get("warnings")
    lines = []
    if warns is not None and len(warns):
        for (model, warning), rows in warns.groupby(["model", "warning"], sort=False):
            lines.append(
                f"- **{model}**, {warning} — " + "; ".join(f"{t}: {d}" for t, d in zip(rows["task"], rows["detail"]))
            )
    if baseline_error:
        lines.append(f"- **The paper's models** are not shown: {baseline_error}")
    if lines:
        s.blocks.append("**Warnings**")
        s.blocks.extend(lines)
    return s


def load_baselines(baselines: bool | str | Sequence[str]) -> tuple[dict, str | None]:
    """The released samples' Δs of the chosen published models ({model: {(bias, setting): {key: Δ}}}),
    and the reason when the default set (True) cannot be loaded; an explicit list must load."""
    from biasmonkey.tasks.fetch import DataError
    from biasmonkey.tasks.response_bias.published_samples import PUBLISHED_MODELS, check_models, published_deltas

    if baselines is False or baselines is None:
        return {}, None
    if isinstance(baselines, str):
        baselines = [b.strip() for b in baselines.split(",") if b.strip()]
    chosen = PUBLISHED_MODELS if baselines is True else check_models(baselines)
    try:
        return {name: published_deltas(name) for name in chosen}, None
    except DataError as err:
        if baselines is not True:
            raise
        log.warning("the paper's models are left out of the report: %s", err)
        return {}, str(err)


def write_report(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    names: Mapping[str, str] | None = None,
    topics_file: Path | None = None,
    hub_dataset: str = PLACEHOLDER_DATASET,
    baselines: bool | str | Sequence[str] = True,
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
) -> Path:
    """Write report.md, report.html, tables/*.csv|json, figures/*.png and leaderboard/ into out_dir;
    return the path of report.md. `names` maps a model's full or short name to the name shown;
    `hub_dataset` is the Hub Benchmark dataset the `.eval_results` entries name.

    `baselines`: with response-bias results, the paper's models shown beside the user's (True: all
    nine, and the report is still written, with a warning, when their samples cannot be had;
    a list or comma-separated names of `published_samples.PUBLISHED_MODELS`: those, and an error if
    they cannot be loaded; False: none).

    `uncertainty_side`: whose entropy the uncertainty correlation uses, "paper" (the authors'
    per-bias choice), "q" or "qp" (`biasmonkey.tasks.response_bias.uncertainty`)."""
    check_uncertainty_side(uncertainty_side)
    out = Path(out_dir)
    models = discover(paths, names)
    has_rb = any(m.tasks("response_bias") for m in models)
    published, baseline_error = load_baselines(baselines) if has_rb else ({}, None)
    tables = build_tables(models, load_topics(topics_file) if has_rb else None, published, uncertainty_side)
    fig_dir = out / "figures"
    sections = [summary_section(tables, baseline_error)]
    if has_rb:
        sections.append(response_bias_section(models, tables, fig_dir, uncertainty_side))
    sections += [hooks.section(tables, fig_dir) for hooks in family_reports(models).values()]
    if len(tables["all_tests"]):
        sections.append(multiple_testing_section(tables["all_tests"]))
    write_tables({**tables, "inputs": inputs_table(models)}, out / "tables")
    written = write_leaderboard(models, tables, out / "leaderboard", hub_dataset)
    sections.append(Section("Leaderboard files", leaderboard_text(written, hub_dataset)))
    sections.append(inputs_section(models, list(published)))
    title = "biasmonkey report: " + ", ".join(m.name for m in models)
    md = out / "report.md"
    md.write_text(to_markdown(title, sections, out))
    (out / "report.html").write_text(to_html(title, sections))
    return md
