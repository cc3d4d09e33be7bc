"""`biasmonkey yesno-compare`: base vs instruct model pairs on the yes-no tasks (paper's Table 1).

Each model's bias is recomputed from the per-item records in its lm-eval output folder (the
`samples_biasmonkey_yesno_*.jsonl` files written with `--log_samples`), never from printed
aggregates. For every task present in all folders, the pairs give the mean change in bias
magnitude (|instruct| − |base|; negative = the instruct models are less biased) and Cohen's d
(positive for a reduction); see `biasmonkey.metrics.yesno.compare_pairs`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasmonkey.metrics.yesno import compare_pairs
from biasmonkey.tasks.yesno.scoring import summarize

TASK_PREFIX = "biasmonkey_yesno_"
CORRECTIONS = {"base": "bias", "generic": "bias_generic", "specific": "bias_specific"}


def latest_yesno_samples(output_dir: Path) -> dict[str, Path]:
    """Newest lm-eval samples file of each yes-no task under an output folder."""
    from biasmonkey.harness_ext.summary import SAMPLES_FILE  # loads lm-eval: imported when needed

    newest = {}
    # Names differ only by their timestamp within a task, so name order is time order.
    for path in sorted(Path(output_dir).rglob(f"samples_{TASK_PREFIX}*.jsonl"), key=lambda p: p.name):
        if m := SAMPLES_FILE.match(path.name):
            newest[m.group(1)] = path
    return newest


def task_biases(output_dir: Path, correction: str = "base") -> dict[str, float]:
    """Bias of every yes-no task in an lm-eval output folder, from its logged items."""
    from biasmonkey.harness_ext.lm_eval_yesno import records_from_samples_file  # loads lm-eval

    files = latest_yesno_samples(output_dir)
    if not files:
        raise ValueError(f"{output_dir}: no samples_{TASK_PREFIX}*.jsonl files (run lm_eval with --log_samples)")
    field = CORRECTIONS[correction]
    return {task: getattr(summarize(records_from_samples_file(path)), field) for task, path in sorted(files.items())}


def compare_dirs(pairs: Sequence[tuple[Path, Path]], correction: str = "base") -> tuple[list[dict[str, Any]], list[str]]:
    """One row per task found in every folder, and the tasks left out because some folder lacks them."""
    if not pairs:
        raise ValueError("give at least one --pair BASE_DIR INSTRUCT_DIR")
    biases = [(task_biases(base, correction), task_biases(instruct, correction)) for base, instruct in pairs]
    all_tasks = set().union(*(set(b) | set(i) for b, i in biases))
    common = sorted(set.intersection(*(set(b) & set(i) for b, i in biases)))
    rows = []
    for task in common:
        c = compare_pairs([b[task] for b, _ in biases], [i[task] for _, i in biases])
        rows.append({
            "task": task,
            "n_pairs": c.n_pairs,
            "mean_abs_bias_base": c.mean_abs_bias_base,
            "mean_abs_bias_instruct": c.mean_abs_bias_instruct,
            "mean_diff": c.mean_diff,
            "cohen_d": c.cohen_d,
            "t": c.paired.t,
            "p": c.paired.p,
        })
    return rows, sorted(all_tasks - set(common))


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def cmd_yesno_compare(args: argparse.Namespace) -> int:
    pairs = [(Path(b), Path(i)) for b, i in args.pair or []]
    rows, skipped = compare_dirs(pairs, args.correction)
    if skipped:
        print(f"biasmonkey: tasks not in every folder, left out: {', '.join(skipped)}", file=sys.stderr)
    if not rows:
        raise ValueError("no yes-no task is present in every folder")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{args.correction} bias; mean diff = mean(|b_instruct| − |b_base|), Cohen's d > 0 = less biased instruct models")
    print(f"{'task':<48}{'pairs':>6}{'|b| base':>10}{'|b| inst':>10}{'mean diff':>11}{'d':>8}{'p':>8}")
    for r in rows:
        print(
            f"{r['task']:<48}{r['n_pairs']:>6}{_fmt(r['mean_abs_bias_base']):>10}{_fmt(r['mean_abs_bias_instruct']):>10}"
            f"{_fmt(r['mean_diff']):>11}{_fmt(r['cohen_d']):>8}{_fmt(r['p']):>8}"
        )
    return 0


def add_subcommand(subparsers: Any) -> None:
    """Register `yesno-compare` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "yesno-compare", help="compare base vs instruct model pairs on the yes-no tasks (bias change, Cohen's d)"
    )
    p.add_argument(
        "--pair", nargs=2, action="append", metavar=("BASE_DIR", "INSTRUCT_DIR"), required=True,
        help="lm-eval output folders (--log_samples) of a base model and its instruct version; repeat per pair",
    )
    p.add_argument("--correction", choices=tuple(CORRECTIONS), default="base", help="which bias to compare (default: base)")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.set_defaults(func=cmd_yesno_compare)
