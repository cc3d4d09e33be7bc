"""Summary table (markdown + CSV) of a response-bias run, recomputed from the per-pair records.

Reads the `samples_biasmonkey_*.jsonl` files lm-eval writes with `--log_samples`, or the logs of
`inspect eval biasmonkey/...` (`.eval`/`.json`), rebuilds each task's per-pair records and
computes every number with `biasmonkey.metrics` (never from the aggregates a harness printed).
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from biasmonkey.harness_ext.lm_eval_tasks import records_from_samples_file
from biasmonkey.metrics import (
    BIASES, SETTINGS, SIGNIFICANCE, DeltaSummary, draw_variation, human_likeness, pearson, summarize_deltas,
)
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord

SAMPLES_FILE = re.compile(r"^samples_(biasmonkey_[a-z_]+)_(\d{4}-\d\d-\d\dT[\d\-.]+)\.jsonl$")
# The response-bias task names (the yes-no and cognitive suites share the biasmonkey_ prefix).
TASK_NAMES = frozenset(task_name(b, s) for b in BIASES for s in SETTINGS)
COLUMNS = (
    "bias", "setting", "n_pairs", "delta", "delta_stderr", "ci_low", "ci_high", "t", "p", "significant",
    "uncertainty_q", "uncertainty_qp", "r_absdelta_uncertainty_q",
)


def latest_samples_files(output_dir: Path) -> dict[str, Path]:
    """Newest samples file per biasmonkey task under an lm-eval output folder."""
    newest: dict[str, tuple[str, Path]] = {}
    for path in Path(output_dir).rglob("samples_biasmonkey_*.jsonl"):
        if (m := SAMPLES_FILE.match(path.name)) and m.group(1).removeprefix("biasmonkey_") in TASK_NAMES:
            task, stamp = m.groups()
            if task not in newest or stamp > newest[task][0]:
                newest[task] = (stamp, path)
    return {task: path for task, (_, path) in newest.items()}


def latest_inspect_logs(output_dir: Path) -> dict[str, Path]:
    """Newest Inspect log per biasmonkey response-bias task under a log folder."""
    try:
        from inspect_ai.log import list_eval_logs, read_eval_log
    except ImportError:  # Inspect is an optional extra
        return {}
    newest: dict[str, Path] = {}
    for info in list_eval_logs(str(output_dir), descending=True):  # newest first
        task = read_eval_log(info, header_only=True).eval.task
        if task.startswith("biasmonkey/") and task.removeprefix("biasmonkey/") in TASK_NAMES:
            newest.setdefault("biasmonkey_" + task.removeprefix("biasmonkey/"), Path(info.name.removeprefix("file://")))
    return newest


def task_records(output_dir: Path) -> dict[str, list[PairRecord]]:
    """Per-pair records per task from an lm-eval output folder or an Inspect log folder."""
    from_lm_eval, from_inspect = latest_samples_files(output_dir), latest_inspect_logs(output_dir)
    if both := sorted(set(from_lm_eval) & set(from_inspect)):
        raise ValueError(f"{output_dir} holds lm-eval samples and Inspect logs of {both[0]}: summarize one harness's output at a time")
    records = {task: records_from_samples_file(path) for task, path in from_lm_eval.items()}
    if from_inspect:
        from biasmonkey.harness_ext.inspect_tasks import records_from_eval_log

        records.update({task: records_from_eval_log(path) for task, path in from_inspect.items()})
    return records


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def summary_row(records: list[PairRecord]) -> dict[str, Any]:
    """One task's statistics from its per-pair records.

    A task run with several perturbation draws (option perturbation_seeds) holds each question
    once per draw; its row tests each question once (its Δ averaged over the draws), since
    pooling the pairs of all draws would overstate the evidence. `n_draws` says so.
    """
    scored = [r for r in records if r.delta is not None]
    variation = draw_variation(records)
    s = variation[0].pooled if variation else summarize_deltas([r.delta for r in scored])
    r = pearson([abs(x.delta) for x in scored], [x.uncertainty_q for x in scored])
    row: dict[str, Any] = {
        "bias": records[0].bias,
        "setting": records[0].setting,
        "n_pairs": s.n,
        "delta": s.mean,
        "delta_stderr": s.stderr,
        "ci_low": s.ci_low,
        "ci_high": s.ci_high,
        "t": s.t,
        "p": s.p,
        "significant": s.significant,
        "uncertainty_q": _mean([x.uncertainty_q for x in records if x.uncertainty_q is not None]),
        "uncertainty_qp": _mean([x.uncertainty_qp for x in records if x.uncertainty_qp is not None]),
        "r_absdelta_uncertainty_q": r.r,
    }
    if variation:
        row["n_draws"] = len(variation[0].draws)
    answers = sum(x.n_answers for x in records)
    if answers:  # sampling mode: report invalid answers and the pairs left without a Δ
        row["invalid_rate"] = sum(x.n_invalid for x in records) / answers
        row["pairs_without_delta"] = len(records) - len(scored)
    return row


def summary_rows(output_dir: Path) -> list[dict[str, Any]]:
    """One row per response-bias task in the folder, in suite order."""
    return rows_in_suite_order(task_records(output_dir).values())


def rows_in_suite_order(records_per_task: Iterable[list[PairRecord]]) -> list[dict[str, Any]]:
    """One summary row per task's records, in suite order (biases, then their perturbations)."""
    rows = [summary_row(records) for records in records_per_task if records]
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    return sorted(rows, key=lambda r: order[(r["bias"], r["setting"])])


def bias_summaries(rows: Iterable[Mapping[str, Any]]) -> dict[str, DeltaSummary]:
    """The Δ summaries of the bias rows (setting "bias"), by bias."""
    return {
        r["bias"]: DeltaSummary(r["n_pairs"], r["delta"], r["delta_stderr"], r["t"], r["p"], max(r["n_pairs"] - 1, 0), r["ci_low"], r["ci_high"])
        for r in rows
        if r["setting"] == "bias"
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


def to_markdown(rows: list[dict[str, Any]], title: str) -> str:
    columns = list(COLUMNS) + [c for c in ("invalid_rate", "pairs_without_delta") if any(c in r for r in rows)]
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(format_value(r.get(c, math.nan)) for c in columns) + " |" for r in rows]
    if (score := human_likeness_line(rows)) is not None:
        lines += ["", score]
    lines += [
        "",
        "Δ in percentage points: mean over pairs with its stderr and 95% CI; t and p from a two-sided "
        f"one-sample t-test against 0; significant = p < {SIGNIFICANCE}. On bias rows Δ > 0 is the "
        "human-like direction; humans show no change on the perturbation (typo) rows. Uncertainty: "
        "mean normalised entropy of the answers to q and q'; r: Pearson correlation of |Δ| with q's uncertainty.",
    ]
    return "\n".join(lines) + "\n"


def model_label(output_dir: Path) -> str:
    """The model's name from the newest lm-eval results file or Inspect log, if any."""
    files = sorted(Path(output_dir).rglob("results_*.json"), key=lambda p: p.name)
    if files:
        name = json.loads(files[-1].read_text()).get("model_name") or "model"
    elif logs := latest_inspect_logs(output_dir):
        from inspect_ai.log import read_eval_log

        name = read_eval_log(str(next(iter(logs.values()))), header_only=True).eval.model
    else:
        name = "model"
    return Path(str(name)).name


def write_summary(output_dir: Path, out_dir: Path | None = None) -> tuple[Path, Path]:
    """Write summary.md and summary.csv for an lm-eval output or Inspect log folder (into out_dir or the folder)."""
    rows = summary_rows(output_dir)
    if not rows:
        raise ValueError(
            f"no samples_biasmonkey_*.jsonl files or biasmonkey Inspect logs under {output_dir}: "
            "run lm_eval with --log_samples, or give the Inspect log folder"
        )
    out_dir = Path(out_dir or output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / "summary.md", out_dir / "summary.csv"
    md.write_text(to_markdown(rows, f"Survey response biases: {model_label(output_dir)}"))
    fieldnames = list(dict.fromkeys(k for r in rows for k in r))
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path
