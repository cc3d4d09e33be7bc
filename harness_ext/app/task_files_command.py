"""`biasmonkey task-files [--check]`: regenerate what is generated from the families' task tables
(the lm-eval task YAMLs, `biasmonkey.tasks.task_files`; in a checkout also the Hub Benchmark
definition `configs/hub/eval.yaml`), or check that the committed files are current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from biasmonkey.tasks.atomic_write import write_text
from biasmonkey.tasks.task_files import TASKS_DIR, WRITABLE_HINT, add_arguments
from biasmonkey.tasks.task_files import run as run_task_files

# In a checkout (not an installed package) the Hub Benchmark definition lies beside tasks/.
HUB_CONFIG = TASKS_DIR.parent / "configs" / "hub" / "eval.yaml"


def run(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.app.report.hub import eval_yaml_text

    code = run_task_files(args)
    if not HUB_CONFIG.parent.is_dir() or args.root != TASKS_DIR:
        return code
    text = eval_yaml_text()
    if HUB_CONFIG.is_file() and HUB_CONFIG.read_text() == text:
        return code
    if args.check:
        print(f"differs: {HUB_CONFIG}", file=sys.stderr)
        return 1
    write_text(HUB_CONFIG, text, WRITABLE_HINT)
    print(f"wrote {Path('configs/hub/eval.yaml')}")
    return code


def add_subcommand(subparsers: Any) -> None:
    """Register `task-files` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "task-files",
        help="regenerate the lm-eval task YAMLs and the Hub Benchmark definition (--check: exit 1 if stale)",
    )
    add_arguments(p)
    p.set_defaults(func=run)
