"""Summary table (markdown + CSV) of a response-bias run, recomputed from the per-pair records.

Reads the `samples_biasmonkey_*.jsonl` files lm-eval writes with `--log_samples`, or the logs of
`inspect eval biasmonkey/...` (`.eval`/`.json`), rebuilds each task's per-pair records and
computes every number with `biasmonkey.metrics` (never from the aggregates a harness printed).
Runs are never mixed: each model, and each setting of one model (`biasmonkey.harness_ext.logs.Run`),
gets its own table and its own rows.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import Run, TaskOutput, describe, newest, one_run, scan, short_name
from biasmonkey.metrics import SIGNIFICANCE, human_likeness
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.summary import DELTA_COLUMNS, bias_summaries, rows_in_suite_order
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE

COLUMNS = (
    "bias",
    "setting",
    *DELTA_COLUMNS,
    "uncertainty_q",
    "uncertainty_qp",
    "uncertainty_side",
    "r_absdelta_uncertainty",
)


def response_bias_outputs(output_dir: Path) -> list[TaskOutput]:
    """The newest output of each response-bias task per run (model and settings) in a folder."""
    found = newest((o for o in scan(output_dir) if o.suite == "response_bias"), key=lambda o: o.harness)
    harnesses: dict[tuple[Run, str], TaskOutput] = {}
    for out in found:
        if harnesses.setdefault((out.run, out.task), out) is not out:
            raise ValueError(
                f"{output_dir} holds lm-eval samples and Inspect logs of {lm_eval_task_name(out.task)} of {out.run}: "
                "summarize one harness's output at a time"
            )
    return found


def _picked(run: Run, model: str) -> bool:
    return model in (run.model, short_name(run.model), run.label, str(run))


def response_bias_runs(output_dir: Path, model: str | None = None) -> dict[Run, list[TaskOutput]]:
    """The response-bias outputs of each run in a folder, in run order; `model` (full or short
    name, or a run's label as a summary titles it) keeps that model's runs only."""
    runs: dict[Run, list[TaskOutput]] = {}
    for out in response_bias_outputs(output_dir):
        runs.setdefault(out.run, []).append(out)
    if model is not None:
        picked = {run: outs for run, outs in runs.items() if _picked(run, model)}
        if not picked:
            found = "; ".join(str(run) for run in sorted(runs)) or "none"
            raise ValueError(
                f"--model {model}: no response-bias results of that model under {output_dir} (found: {found})"
            )
        runs = picked
    return dict(sorted(runs.items()))


def task_records(output_dir: Path) -> dict[str, list[PairRecord]]:
    """Per-pair records per task (lm-eval name) of the one run in an lm-eval output folder or an
    Inspect log folder (an error names the runs of a folder that holds several)."""
    outputs = one_run(
        response_bias_outputs(output_dir),
        output_dir,
        "Give the folder of one run (lm-eval writes one folder per model).",
    )
    return {lm_eval_task_name(out.task): out.read_records() for out in outputs}


def summary_rows(
    output_dir: Path, uncertainty_side: str = DEFAULT_CHOICE, model: str | None = None
) -> dict[Run, list[dict[str, Any]]]:
    """Per run (model and settings), one row per response-bias task, in suite order
    (`uncertainty_side`: the side of the uncertainty correlation, see
    `biasmonkey.tasks.response_bias.summary.summarize`)."""
    return {
        run: rows_in_suite_order([out.read_records() for out in outputs], uncertainty_side)
        for run, outputs in response_bias_runs(output_dir, model).items()
    }


def human_likeness_line(rows: list[dict[str, Any]]) -> str | None:
    """The TACL Table 3 score from the bias rows: +1 / −1 per significant bias Δ, 0 otherwise."""
    summaries = bias_summaries(rows)
    if not summaries:
        return None
    scores = human_likeness(summaries)
    parts = ", ".join(f"{bias} {score:+d}" if score else f"{bias} 0" for bias, score in scores.items())
    return f"Human-likeness score: {sum(scores.values()):+d} of {len(scores)} ({parts})."


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)


UNCERTAINTY_NOTE = {
    "paper": "the authors' choice, TACL Table 4: q for acquiescence and odd/even, q' for response order, "
    "opinion float and allow/forbid; q on perturbation rows",
    "q": "q on every row, as asked",
    "qp": "q' on every row, as asked",
}


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """The markdown table of a run's rows and its human-likeness line."""
    columns = list(COLUMNS) + [c for c in ("invalid_rate", "pairs_without_delta") if any(c in r for r in rows)]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(format_value(r.get(c, math.nan)) for c in columns) + " |" for r in rows]
    if (score := human_likeness_line(rows)) is not None:
        lines += ["", score]
    return lines


def to_markdown(
    rows: list[dict[str, Any]],
    title: str,
    uncertainty_side: str = DEFAULT_CHOICE,
    runs: Mapping[str, list[dict[str, Any]]] | None = None,
) -> str:
    """The summary: `rows` under `title`, or, given `runs` ({heading: rows}), one section per run."""
    lines = [f"# {title}", ""]
    if runs is None:
        lines += _table(rows)
    else:
        for heading, run_rows in runs.items():
            lines += [f"## {heading}", "", *_table(run_rows), ""]
        lines.pop()
    lines += [
        "",
        "Δ in percentage points: mean over pairs with its stderr and 95% CI; t and p from a two-sided "
        f"one-sample t-test against 0; significant = p < {SIGNIFICANCE}. On bias rows Δ > 0 is the "
        "human-like direction; humans show no change on the perturbation (typo) rows. Uncertainty: "
        "mean normalised entropy of the answers to q and q'; r_absdelta_uncertainty: Pearson correlation of |Δ| "
        f"with the uncertainty of the side in uncertainty_side ({UNCERTAINTY_NOTE[uncertainty_side]}; "
        "summary.csv also has r_absdelta_uncertainty_q, with q's uncertainty, on every row).",
    ]
    return "\n".join(lines) + "\n"


def write_summary(
    output_dir: Path, out_dir: Path | None = None, uncertainty_side: str = DEFAULT_CHOICE, model: str | None = None
) -> tuple[Path, Path]:
    """Write summary.md and summary.csv for an lm-eval output or Inspect log folder (into out_dir
    or the folder); `uncertainty_side` ("paper", "q" or "qp") picks the side of the uncertainty
    correlation. Every run (model and settings) gets its own table, titled with its model and
    settings, and its own rows in the CSV (columns `model` and `settings`); `model` keeps one
    model's runs (`response_bias_runs`)."""
    runs = summary_rows(output_dir, uncertainty_side, model)
    if not runs:
        raise ValueError(
            f"no samples_biasmonkey_*.jsonl files or biasmonkey Inspect logs under {output_dir}: "
            "run lm_eval with --log_samples, or give the Inspect log folder"
        )
    out_dir = Path(out_dir or output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / "summary.md", out_dir / "summary.csv"
    labels = {run: run.label for run in runs}
    if len(set(labels.values())) < len(labels):  # two models with one short name: their full names
        labels = {run: str(run) for run in runs}
    if len(runs) == 1:
        ((run, rows),) = runs.items()
        text = to_markdown(rows, f"Survey response biases: {labels[run]}", uncertainty_side)
    else:
        title = f"Survey response biases: {len(runs)} runs (models and settings), each in its own table"
        text = to_markdown([], title, uncertainty_side, {labels[run]: rows for run, rows in runs.items()})
    md.write_text(text)
    rows = [
        {**row, "model": run.model, "settings": describe(run.settings)} for run, rows in runs.items() for row in rows
    ]
    fieldnames = list(dict.fromkeys(k for r in rows for k in r))
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path
