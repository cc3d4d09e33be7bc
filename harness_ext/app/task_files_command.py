"""`biasmonkey task-files [--check]`: regenerate the lm-eval task YAMLs from the families' task
tables, or check that the committed ones are current (see `biasmonkey.tasks.task_files`)."""

from __future__ import annotations

from typing import Any

from biasmonkey.tasks.task_files import add_arguments, run


def add_subcommand(subparsers: Any) -> None:
    """Register `task-files` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser("task-files", help="regenerate the lm-eval task YAMLs (--check: exit 1 if stale)")
    add_arguments(p)
    p.set_defaults(func=run)
