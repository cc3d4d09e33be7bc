"""A short summary table (markdown + CSV) of the response-bias tasks in an lm-eval results file."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

from biasmonkey.metrics import BIASES, SETTINGS, SIGNIFICANCE, DeltaSummary, human_likeness

TASK_NAME = re.compile(rf"^biasmonkey_({'|'.join(BIASES)})(?:_({'|'.join(SETTINGS[1:])}))?$")
COLUMNS = ("bias", "setting", "n_pairs", "delta", "delta_stderr", "ci_low", "ci_high", "t", "p", "significant")


def latest_results_file(output_dir: Path) -> Path:
    """The newest results_*.json lm-eval wrote under output_dir."""
    files = sorted(Path(output_dir).rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise FileNotFoundError(f"no lm-eval results_*.json under {output_dir}")
    return files[-1]


def _value(metrics: dict[str, Any], name: str) -> float:
    """A metric of a task, whatever lm-eval filter name it was reported under."""
    for key, value in metrics.items():
        if key.split(",")[0] == name:
            return float("nan") if value in (None, "N/A") else float(value)
    return float("nan")


def summary_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per response-bias task found in an lm-eval results dict, in suite order."""
    rows = []
    for task, metrics in results.get("results", {}).items():
        m = TASK_NAME.match(task)
        if not m:
            continue
        p = _value(metrics, "delta_p")
        rows.append(
            {
                "bias": m.group(1),
                "setting": m.group(2) or "bias",
                "n_pairs": int(_value(metrics, "n_pairs")) if math.isfinite(_value(metrics, "n_pairs")) else 0,
                "delta": _value(metrics, "delta"),
                "delta_stderr": _value(metrics, "delta_stderr"),
                "ci_low": _value(metrics, "delta_ci_low"),
                "ci_high": _value(metrics, "delta_ci_high"),
                "t": _value(metrics, "delta_t"),
                "p": p,
                "significant": bool(p < SIGNIFICANCE),
                **({"invalid_rate": _value(metrics, "invalid_rate")} if any(k.startswith("invalid_rate") for k in metrics) else {}),
            }
        )
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    return sorted(rows, key=lambda r: order[(r["bias"], r["setting"])])


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)


def human_likeness_line(rows: list[dict[str, Any]]) -> str | None:
    """The TACL Table 3 score from the bias rows: +1 / −1 per significant bias Δ, 0 otherwise."""
    summaries = {
        r["bias"]: DeltaSummary(r["n_pairs"], r["delta"], r["delta_stderr"], r["t"], r["p"], max(r["n_pairs"] - 1, 0), r["ci_low"], r["ci_high"])
        for r in rows
        if r["setting"] == "bias"
    }
    if not summaries:
        return None
    scores = human_likeness(summaries)
    parts = ", ".join(f"{bias} {score:+d}" if score else f"{bias} 0" for bias, score in scores.items())
    return f"Human-likeness score: {sum(scores.values()):+d} of {len(scores)} ({parts})."


def to_markdown(rows: list[dict[str, Any]], title: str) -> str:
    columns = list(COLUMNS) + (["invalid_rate"] if any("invalid_rate" in r for r in rows) else [])
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c, float("nan"))) for c in columns) + " |" for r in rows]
    if (score := human_likeness_line(rows)) is not None:
        lines += ["", score]
    lines += [
        "",
        f"Δ in percentage points (mean over pairs, ± stderr, 95% CI); t and p from a two-sided one-sample "
        f"t-test against 0; significant = p < {SIGNIFICANCE}. On bias rows Δ > 0 is the human-like "
        "direction; humans show no change on the perturbation (typo) rows.",
    ]
    return "\n".join(lines) + "\n"


def write_summary(results_file: Path, out_dir: Path) -> tuple[Path, Path]:
    results = json.loads(Path(results_file).read_text())
    rows = summary_rows(results)
    if not rows:
        raise ValueError(f"{results_file} holds no biasmonkey response-bias task results")
    model = Path(str(results.get("model_name") or "model")).name
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / "summary.md", out_dir / "summary.csv"
    md.write_text(to_markdown(rows, f"Survey response biases: {model}"))
    with csv_path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path
