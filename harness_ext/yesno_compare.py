"""`biasmonkey yesno-compare`: base vs instruction-tuned model pairs on the yes-no tasks (Table 1).

Each model's bias is recomputed from the per-item records of its runs (lm-eval `--log_samples`
files or Inspect logs), never from printed aggregates. The units of the comparison are, with
`--unit domain` (the default, as the authors' `instructvbase_stats.py` did), one (model pair,
set) for COMPS, Arith and bAbI and one (model pair, EWoK domain) for EWoK, the domains' biases
computed from the EWoK task's items; with `--unit task`, one (model pair, task) per task. Per row:
mean |bias| of base and instruct models, their mean difference, the paired effect size d_z and
the paired t-test (`biasmonkey.metrics.yesno.instruction_tuning_effect`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import TaskOutput, newest, scan
from biasmonkey.metrics.yesno import instruction_tuning_effect
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import YESNO
from biasmonkey.tasks.yesno.scoring import ItemRecord, summarize

CORRECTIONS = {"base": "bias", "generic": "bias_generic", "specific": "bias_specific"}
UNITS = ("domain", "task")


def latest_yesno_outputs(output_dir: Path) -> dict[str, TaskOutput]:
    """Newest output (lm-eval samples file or Inspect log) of each yes-no task under a folder."""
    found = newest((o for o in scan(output_dir) if o.suite == "yesno"), key=lambda o: None)
    return {f"biasmonkey_{o.task}": o for o in found}


def _bias(records: Sequence[ItemRecord], correction: str) -> float:
    return float(getattr(summarize(records), CORRECTIONS[correction]))


def unit_biases(output_dir: Path, correction: str = "base", unit: str = "domain") -> dict[str, dict[str, float]]:
    """{row: {unit: bias}} of the yes-no tasks in a folder. unit "task": every task is its own row
    and unit; unit "domain": the EWoK tasks' units are their domains, the per-domain tasks are
    left out (their items are the EWoK task's), every other set is one unit."""
    outputs = latest_yesno_outputs(output_dir)
    if not outputs:
        raise ValueError(
            f"{output_dir}: no samples_biasmonkey_yesno_*.jsonl files or yes-no Inspect logs (run lm_eval with --log_samples)"
        )
    rows: dict[str, dict[str, float]] = {}
    for task, out in sorted(outputs.items()):
        records = out.read_records()
        if unit == "task":
            rows[task] = {task: _bias(records, correction)}
        elif records[0].dataset == "ewok":
            if YESNO.tasks.get(base_task_name(task), {}).get("domain"):
                continue  # a per-domain task (its name says so; a --limit run may hold one domain only)
            by_domain: dict[str, list[ItemRecord]] = defaultdict(list)
            for r in records:
                by_domain[str(r.domain)].append(r)
            rows[task] = {domain: _bias(items, correction) for domain, items in sorted(by_domain.items())}
        else:
            rows[task] = {task: _bias(records, correction)}
    return rows


def compare_dirs(
    pairs: Sequence[tuple[Path, Path]], correction: str = "base", unit: str = "domain"
) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per task found in every folder, and the tasks left out because some folder lacks them."""
    if not pairs:
        raise ValueError("give at least one --pair BASE_DIR INSTRUCT_DIR")
    if unit not in UNITS:
        raise ValueError(f"--unit {unit!r} is invalid; use one of {', '.join(UNITS)}")
    biases = [
        (unit_biases(base, correction, unit), unit_biases(instruct, correction, unit)) for base, instruct in pairs
    ]
    all_tasks = set().union(*(set(b) | set(i) for b, i in biases))
    common = sorted(set.intersection(*(set(b) & set(i) for b, i in biases)))
    rows = []
    for task in common:
        base, instruct = [], []
        for b, i in biases:
            if set(b[task]) != set(i[task]):
                raise ValueError(
                    f"{task}: the base and instruct runs hold different EWoK domains: {sorted(b[task])}, {sorted(i[task])}"
                )
            base += [b[task][u] for u in sorted(b[task])]
            instruct += [i[task][u] for u in sorted(b[task])]
        effect = instruction_tuning_effect(base, instruct)
        rows.append({"task": task, "unit": unit, "n_pairs": len(pairs), **effect.as_dict()})
    return rows, sorted(all_tasks - set(common))


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.3f}"


def cmd_yesno_compare(args: argparse.Namespace) -> int:
    pairs = [(Path(b), Path(i)) for b, i in args.pair or []]
    rows, skipped = compare_dirs(pairs, args.correction, args.unit)
    if skipped:
        print(f"biasmonkey: tasks not in every folder, left out: {', '.join(skipped)}", file=sys.stderr)
    if not rows:
        raise ValueError("no yes-no task is present in every folder")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{args.correction} bias, one unit per model pair and {'EWoK domain / set' if args.unit == 'domain' else 'task'}; "
        "mean diff = mean(|b_instruct| − |b_base|), Cohen's d_z = mean diff / SD of the differences "
        "(< 0: the instruct models are less biased), p: paired t-test"
    )
    print(f"{'task':<48}{'units':>6}{'|b| base':>10}{'|b| inst':>10}{'mean diff':>11}{'d':>8}{'p':>8}")
    for r in rows:
        print(
            f"{r['task']:<48}{r['n']:>6}{_fmt(r['mean_abs_base']):>10}{_fmt(r['mean_abs_instruct']):>10}"
            f"{_fmt(r['mean_difference']):>11}{_fmt(r['cohens_d']):>8}{_fmt(r['p_value']):>8}"
        )
    return 0


def add_subcommand(subparsers: Any) -> None:
    """Register `yesno-compare` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "yesno-compare",
        help="compare base vs instruct model pairs on the yes-no tasks (bias change, paired Cohen's d)",
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
