"""`biasmonkey yesno-compare`: base vs instruction-tuned model pairs on the yes-no tasks (Table 1).

Each model's bias is recomputed from the per-item records of its runs (lm-eval `--log_samples`
files or Inspect logs), never from printed aggregates. The units of the comparison are, with
`--unit domain` (the default, as the authors' `instructvbase_stats.py` did), one (model pair,
set) for COMPS, Arith and bAbI and one (model pair, EWoK domain) for EWoK, the domains' biases
computed from the EWoK task's items; with `--unit task`, one (model pair, task) per task. Per row:
mean |bias| of base and instruct models, their mean difference (negative: the instruct models are
less biased), the paired effect size d_z (positive: less biased, the paper's Table 1 sign) and the
paired t-test (`biasmonkey.metrics.yesno.instruction_tuning_effect`).

Each folder must hold one run (one model, one setting; `biasmonkey.harness_ext.logs.Run`), and
the base and instruct runs of a pair must cover the same items of each compared task: otherwise the
comparison is refused, naming what is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.compare_pairs import check_distinct_pairs, common_rows, coverage_problems, pair_effects
from biasmonkey.harness_ext.logs import TaskOutput, newest, one_run, scan
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.yesno.compare import CORRECTIONS, bias_caveats, unit_biases
from biasmonkey.tasks.yesno.scoring import ItemRecord

UNITS = ("domain", "task")


def latest_yesno_outputs(output_dir: Path) -> dict[str, TaskOutput]:
    """Newest output (lm-eval samples file or Inspect log) of each yes-no task of the one run (model
    and settings) under a folder; a folder with several runs is an error that names them."""
    found = newest((o for o in scan(output_dir) if o.suite == "yesno"), key=lambda o: None)
    how = "Give each --pair folder one run: lm-eval writes one folder per model, <output>/<model>."
    return {lm_eval_task_name(o.task): o for o in one_run(found, output_dir, how)}


def yesno_records(output_dir: Path) -> dict[str, list[ItemRecord]]:
    """{task: its item records} of the one run of yes-no tasks under a folder."""
    outputs = latest_yesno_outputs(output_dir)
    if not outputs:
        raise ValueError(
            f"{output_dir}: no samples_biasmonkey_yesno_*.jsonl files or yes-no Inspect logs (run lm_eval with --log_samples)"
        )
    return {task: out.read_records() for task, out in sorted(outputs.items())}


def item_differences(
    pair: tuple[Path, Path], records: tuple[Mapping[str, Sequence[ItemRecord]], ...], tasks: Iterable[str]
) -> list[str]:
    """Per task where the base and instruct runs (`records`, of the folders in `pair`) differ: how
    many of the other's items each lacks, and which (a few ids)."""
    return [
        problem
        for task in tasks
        for problem in coverage_problems(
            task, [(folder, {r.id for r in run[task]}) for folder, run in zip(pair, records)]
        )
    ]


def compare_dirs(
    pairs: Sequence[tuple[Path, Path]], correction: str = "base", unit: str = "domain"
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """One row per task found in every folder, the tasks left out because some folder lacks them,
    and what qualifies the compared biases, per folder and task (`compare.bias_caveats`: exact ties, …).
    Every folder must hold one run, and a pair's two runs the same items of each compared task
    (the rows: `harness_ext.app.compare_pairs.pair_effects`, as `biasmonkey compare --pairs` computes them)."""
    if not pairs:
        raise ValueError("give at least one --pair BASE_DIR INSTRUCT_DIR")
    check_distinct_pairs([(str(a.resolve()), str(b.resolve())) for a, b in pairs], "--pair")
    if unit not in UNITS:
        raise ValueError(f"--unit {unit!r} is invalid; use one of {', '.join(UNITS)}")
    records = [tuple(yesno_records(folder) for folder in pair) for pair in pairs]
    biases = [tuple(unit_biases(r, correction, unit) for r in pair) for pair in records]
    common = common_rows(b for pair in biases for b in pair)
    if problems := [p for pair, recs in zip(pairs, records) for p in item_differences(pair, recs, common)]:
        raise ValueError(
            "the base and instruct runs do not cover the same items, so their biases cannot be compared (run both "
            "models on the same items: the same --limit and data):\n  " + "\n  ".join(problems)
        )
    rows, skipped = pair_effects(biases, unit)
    caveats = [
        f"{folder}: {line}"
        for pair, recs in zip(pairs, records)
        for folder, run in zip(pair, recs)
        for line in bias_caveats({task: run[task] for task in common}, correction)
    ]
    return rows, skipped, caveats


def undefined_note(rows: Sequence[dict[str, Any]], correction: str) -> str | None:
    """The line that says which units had no bias (e.g. too few items for the correction) and were left out."""
    left = [f"{r['task']} ({r['undefined_units']})" for r in rows if r.get("undefined_units")]
    if not left:
        return None
    return (
        f"biasmonkey: units without a finite {correction} bias (too few items for the correction, or no answers), "
        f"left out of the comparison: {', '.join(left)}"
    )


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def cmd_yesno_compare(args: argparse.Namespace) -> int:
    pairs = [(Path(b), Path(i)) for b, i in args.pair or []]
    rows, skipped, caveats = compare_dirs(pairs, args.correction, args.unit)
    if skipped:
        print(f"biasmonkey: tasks not in every folder, left out: {', '.join(skipped)}", file=sys.stderr)
    if not rows:
        raise ValueError("no yes-no task is present in every folder")
    if note := undefined_note(rows, args.correction):
        print(note, file=sys.stderr)
    for line in caveats:
        print(f"biasmonkey: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{args.correction} bias, one unit per model pair and {'EWoK domain / set' if args.unit == 'domain' else 'task'}; "
        "mean diff = mean(|b_instruct| − |b_base|) (< 0: the instruct models are less biased), "
        "Cohen's d_z = −mean diff / SD of the differences (> 0: less biased, the paper's Table 1 sign), "
        "p: paired t-test"
    )
    print(f"{'task':<48}{'units':>6}{'|b| base':>10}{'|b| inst':>10}{'mean diff':>11}{'d':>8}{'p':>8}")
    for r in rows:
        values = [_fmt(r.get(k, math.nan)) for k in ("mean_abs_base", "mean_abs_instruct", "mean_difference")]
        print(
            f"{r['task']:<48}{r['n']:>6}{values[0]:>10}{values[1]:>10}{values[2]:>11}"
            f"{_fmt(r.get('cohens_d', math.nan)):>8}{_fmt(r.get('p_value', math.nan)):>8}"
        )
    return 0


def add_commands(subparsers: Any) -> None:
    """Register `yesno-compare` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "yesno-compare",
        help="compare the yes-no bias of base models and their instruct versions (bias change, paired Cohen's d)",
    )
    p.add_argument(
        "--pair",
        nargs=2,
        action="append",
        metavar=("BASE_DIR", "INSTRUCT_DIR"),
        required=True,
        help="output folders (lm-eval --log_samples or Inspect logs) of a base model and its instruct version; repeat per pair",
    )
    p.add_argument(
        "--correction", choices=tuple(CORRECTIONS), default="base", help="which bias to compare (default: base)"
    )
    p.add_argument(
        "--unit",
        choices=UNITS,
        default="domain",
        help="unit of analysis: one per model pair and EWoK domain / set, as the authors did (default), or per task",
    )
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.set_defaults(func=cmd_yesno_compare)
