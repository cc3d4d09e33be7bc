"""Summary table (markdown + CSV) of a response-bias run, recomputed from the per-pair records.

Reads the `samples_biasmonkey_*.jsonl` files lm-eval writes with `--log_samples`, or the logs of
`inspect eval biasmonkey/...` (`.eval`/`.json`), rebuilds each task's per-pair records and
computes every number with `biasmonkey.metrics` (never from the aggregates a harness printed).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import TaskOutput, newest, scan
from biasmonkey.metrics import SIGNIFICANCE, human_likeness
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
    """The newest output of each response-bias task in a folder (one harness's output)."""
    found = newest((o for o in scan(output_dir) if o.suite == "response_bias"), key=lambda o: o.harness)
    harnesses: dict[str, TaskOutput] = {}
    for out in found:
        if harnesses.setdefault(out.task, out) is not out:
            raise ValueError(
                f"{output_dir} holds lm-eval samples and Inspect logs of biasmonkey_{out.task}: "
                "summarize one harness's output at a time"
            )
    return found


def task_records(output_dir: Path) -> dict[str, list[PairRecord]]:
    """Per-pair records per task (lm-eval name) from an lm-eval output folder or an Inspect log folder."""
    return {f"biasmonkey_{out.task}": out.read_records() for out in response_bias_outputs(output_dir)}


def summary_rows(output_dir: Path, uncertainty_side: str = DEFAULT_CHOICE) -> list[dict[str, Any]]:
    """One row per response-bias task in the folder, in suite order (`uncertainty_side`: the side
    of the uncertainty correlation, see `biasmonkey.tasks.response_bias.summary.summarize`)."""
    return rows_in_suite_order(task_records(output_dir).values(), uncertainty_side)


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


def to_markdown(rows: list[dict[str, Any]], title: str, uncertainty_side: str = DEFAULT_CHOICE) -> str:
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
        "mean normalised entropy of the answers to q and q'; r_absdelta_uncertainty: Pearson correlation of |Δ| "
        f"with the uncertainty of the side in uncertainty_side ({UNCERTAINTY_NOTE[uncertainty_side]}; "
        "summary.csv also has r_absdelta_uncertainty_q, with q's uncertainty, on every row).",
    ]
    return "\n".join(lines) + "\n"


def model_label(output_dir: Path) -> str:
    """The model's name as the newest output in the folder records it."""
    outputs = response_bias_outputs(output_dir)
    return Path(max(outputs, key=lambda o: o.stamp).model).name if outputs else "model"


def write_summary(
    output_dir: Path, out_dir: Path | None = None, uncertainty_side: str = DEFAULT_CHOICE
) -> tuple[Path, Path]:
    """Write summary.md and summary.csv for an lm-eval output or Inspect log folder (into out_dir
    or the folder); `uncertainty_side` ("paper", "q" or "qp") picks the side of the uncertainty correlation."""
    rows = summary_rows(output_dir, uncertainty_side)
    if not rows:
        raise ValueError(
            f"no samples_biasmonkey_*.jsonl files or biasmonkey Inspect logs under {output_dir}: "
            "run lm_eval with --log_samples, or give the Inspect log folder"
        )
    out_dir = Path(out_dir or output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / "summary.md", out_dir / "summary.csv"
    md.write_text(to_markdown(rows, f"Survey response biases: {model_label(output_dir)}", uncertainty_side))
    fieldnames = list(dict.fromkeys(k for r in rows for k in r))
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path
