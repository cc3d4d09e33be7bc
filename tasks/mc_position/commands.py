"""The wrapped multiple-choice tasks on the command line.

- `biasmonkey position-tasks TASK [TASK …] --out DIR`: write the lm-eval wrapper files
  (`wrappers.py`) for `lm_eval --include_path DIR --tasks biasmonkey_position_TASK`.
- `biasmonkey run|plan --position-of TASK[,TASK…]`: the same wrappers, written into the run's
  `<output>/position_tasks` (a temporary folder for `plan`), run or costed with biasmonkey's backends.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.run_checks import check_include_path, check_output
from biasmonkey.tasks.mc_position.wrappers import write_wrappers

log = logging.getLogger(__name__)


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one lm-eval multiple-choice task")
    return names


def _search_path(include_path: list[Path]) -> list[str]:
    """Where wrapped tasks are looked up: biasmonkey's task folder (its examples), then the user's
    (refused if missing: lm-eval would fall back to its built-in task of the same name)."""
    from biasmonkey.harness_ext.app.plan import tasks_dir

    check_include_path(include_path)
    return [str(tasks_dir()), *(str(p) for p in include_path)]


def _add_include_path(parser: Any, searched: str) -> None:
    parser.add_argument(
        "--include-path",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help=f"a folder of your own lm-eval task files, searched for {searched} (repeatable)",
    )


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """`--position-of` and `--include-path` for `run` and `plan`."""
    group = parser.add_argument_group("answer-position bias on any multiple-choice task (docs/mc_position.md)")
    group.add_argument(
        "--position-of",
        type=_names,
        metavar="TASK[,TASK…]",
        help="lm-eval multiple-choice tasks to ask lettered in their original and cyclic orders (instead of "
        "--suite/--tasks); options: --permutations, --letter-spellings, --pride-share, …",
    )
    _add_include_path(group, "the --position-of tasks")


def task_selection(args: argparse.Namespace, root: Path) -> tuple[str, Path] | None:
    """With --position-of: the wrapper tasks (written into `root/position_tasks`, the run's output
    folder for `run`) and their folder, lm-eval's `--tasks` and `--include_path`; None otherwise."""
    if not getattr(args, "position_of", None):
        if getattr(args, "include_path", None):
            log.warning("--include-path applies to --position-of tasks only: ignored")
        return None
    if args.tasks:
        raise ValueError("--position-of and --tasks: run the wrapped tasks and the others separately")
    folder = root / "position_tasks"
    wrapped = write_wrappers(args.position_of, folder, _search_path(args.include_path))
    return ",".join(wrapped), folder


def cmd_position_tasks(args: argparse.Namespace) -> int:
    check_output(args.out, "--out")  # a file in the way is named, before the (slow) task lookup
    wrapped = write_wrappers(args.task, args.out, _search_path(args.include_path))
    for name in wrapped:
        print(args.out / f"{name}.yaml")
    print(f"Run them with: lm_eval --include_path {args.out} --tasks {','.join(wrapped)} --log_samples …")
    return 0


def add_commands(subparsers: Any) -> None:
    """Register `position-tasks` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "position-tasks",
        help="write lm-eval wrapper tasks that ask any multiple-choice task in its cyclic orders (answer-position bias)",
    )
    p.add_argument("task", nargs="+", help="lm-eval multiple-choice task names (no groups)")
    p.add_argument("--out", type=Path, required=True, help="the folder to write into (for lm_eval --include_path)")
    _add_include_path(p, "the tasks")
    p.set_defaults(func=cmd_position_tasks)
