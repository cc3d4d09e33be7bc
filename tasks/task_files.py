"""The lm-eval task files of every family, generated from its task table and `lm_eval_*` fields.

lm-eval reads the YAML files from disk (`--include_path tasks/`, the installed package data), so
they are committed; `python -m biasmonkey.tasks.task_files` rewrites them and `--check` fails
(exit 1) when a committed file differs, is missing or is not generated. Per family, in
`tasks/<family>/`: one `<task>.yaml` per task (the family-name prefix dropped from the file name),
which includes the hand-written shared settings `_<family>.yaml`, and one file per `LmEvalGroup`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from biasmonkey.tasks.atomic_write import make_folder, write_text
from biasmonkey.tasks.contract import Family, LmEvalGroup, lm_eval_group_name, lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES

TASKS_DIR = Path(__file__).resolve().parent
# What to do when a task file cannot be written (tasks.atomic_write messages).
WRITABLE_HINT = "run it in a writable checkout of biasmonkey, or give another --root"


def _flow(value: Any) -> str:
    """One-line YAML: `[a, b]`, `{bias: anchoring}`."""
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6).strip()


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in text.splitlines()) if text else ""


def shared_file(family: Family) -> str:
    """The hand-written settings every task file of `family` includes."""
    return f"_{family.name}.yaml"


def task_file(family: Family, name: str, fixed: Mapping[str, Any]) -> str:
    """A task's file: its tags and its fixed arguments as `dataset_kwargs` (None and False, the
    loaders' defaults, left out)."""
    tags = [lm_eval_group_name(tag) for tag, members in family.lm_eval_tags.items() if name in members]
    kwargs = {key: value for key, value in fixed.items() if value is not None and value is not False}
    return (
        _comment(family.lm_eval_comments.get(name, ""))
        + f"include: {shared_file(family)}\ntask: {lm_eval_task_name(name)}\n"
        + (f"tag: {_flow(tags)}\n" if tags else "")
        + f"dataset_kwargs: {_flow(kwargs)}\n"
    )


def group_file(group: LmEvalGroup) -> str:
    """A group file; a group with aggregated metrics carries a version, as lm-eval asks."""
    text = _comment(group.comment) + f"group: {lm_eval_group_name(group.name)}\ntask:\n"
    text += "".join(f"  - {lm_eval_task_name(task)}\n" for task in group.tasks)
    if group.weighted_means:
        text += "aggregate_metric_list:\n"
        weight = str(group.weight_by_size).lower()
        text += "".join(f"  - metric: {metric}\n    weight_by_size: {weight}\n" for metric in group.weighted_means)
        text += "metadata:\n  version: 1.0\n"
    return text


def task_files(families: Mapping[str, Family] = FAMILIES) -> dict[str, str]:
    """Every generated file, by its path under `tasks/`."""
    files: dict[str, str] = {}
    for family in families.values():
        for name, fixed in family.tasks.items():
            files[f"{family.name}/{name.removeprefix(family.name + '_')}.yaml"] = task_file(family, name, fixed)
        for group in family.lm_eval_groups:
            files[f"{family.name}/{group.file}"] = group_file(group)
    return files


def differences(root: Path = TASKS_DIR, families: Mapping[str, Family] = FAMILIES) -> list[str]:
    """What `write` would change under `root`: differing, missing and extra (not generated, not
    shared) YAML files, as messages; empty when the committed files are current."""
    files = task_files(families)
    shared = {f"{family.name}/{shared_file(family)}" for family in families.values() if family.tasks}
    shared |= {f"{family.name}/{path}" for family in families.values() for path in family.hand_written_files}
    on_disk = {path.relative_to(root).as_posix() for path in root.rglob("*.yaml")}
    return [
        *(f"differs: {p}" for p in sorted(files.keys() & on_disk) if (root / p).read_text() != files[p]),
        *(f"missing: {p}" for p in sorted(files.keys() - on_disk)),
        *(f"missing shared file: {p}" for p in sorted(shared - on_disk)),
        *(f"not generated: {p}" for p in sorted(on_disk - files.keys() - shared)),
    ]


def write(root: Path = TASKS_DIR, families: Mapping[str, Family] = FAMILIES) -> list[str]:
    """Writes the generated files under `root`; returns those that changed. Extra files are left
    for a person to remove (`differences` lists them)."""
    changed = []
    for path, text in task_files(families).items():
        target = root / path
        if not target.exists() or target.read_text() != text:
            make_folder(target.parent, WRITABLE_HINT)
            write_text(target, text, WRITABLE_HINT)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a file is not current")
    parser.add_argument("--root", type=Path, default=TASKS_DIR, help="the tasks folder (default: this package's)")


def run(args: argparse.Namespace) -> int:
    if args.check:
        problems = differences(args.root)
        print("\n".join(problems) or "task files are current", file=sys.stderr if problems else sys.stdout)
        return 1 if problems else 0
    for path in write(args.root):
        print(f"wrote {path}")
    leftovers = differences(args.root)  # stray files, a missing shared file
    print("\n".join(leftovers), file=sys.stderr, end="\n" if leftovers else "")
    return 1 if leftovers else 0


if __name__ == "__main__":
    sys.exit(main())
