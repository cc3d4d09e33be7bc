"""`biasmonkey tasks list`: the task families, their tasks, modes and run options, from the registry.

Everything comes from the families' declarations (`biasmonkey.tasks.families.FAMILIES`): the task
tables, the lm-eval groups and tags, and the options dataclasses (`option(...)` fields: default,
help, harnesses, choices). Nothing loads data unless `--prompts` asks for the distinct prompts per
task, which `biasmonkey plan`'s code counts by building every task's requests as lm-eval would
(default options, no model).

The human listing is one block per family (a few task names and the lm-eval groups and tags that
group them; `--all` lists every task); `--json` prints the same content as one JSON document.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

from biasmonkey.tasks.contract import Family, inspect_task_name, lm_eval_group_name, lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES

HARNESS_LABELS = {"lm_eval": "lm-eval", "inspect": "Inspect"}
# Task names the compact listing shows per family (`--all` shows every one).
SHOWN_TASKS = 4


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def option_info(f: dataclasses.Field, inspect_defaults: dict[str, Any]) -> dict[str, Any]:
    """One option: its name (lm-eval `--metadata` key, Inspect `-T` key), `biasmonkey run` flag, default,
    help; `inspect_defaults`: the Inspect `-T` parameters' defaults (`Options.inspect_parameters`)."""
    harnesses = list(f.metadata.get("harnesses", HARNESS_LABELS))
    info: dict[str, Any] = {
        "name": f.name,
        "run_flag": _flag(f.name) if "lm_eval" in harnesses else None,
        "default": f.default,
        "harnesses": harnesses,
        "choices": list(f.metadata["choices"]) if f.metadata.get("choices") else None,
        "help": f.metadata.get("help", ""),
    }
    if f.name in inspect_defaults and inspect_defaults[f.name] != f.default:
        info["inspect_default"] = inspect_defaults[f.name]
    return info


def modes(family: Family) -> list[dict[str, Any]]:
    """The family's modes (the choices of its `mode` option; none without one), each with the
    harnesses that run it (Inspect where the family declares calls for it)."""
    field = next((f for f in family.options_type.option_fields() if f.name == "mode"), None)
    if field is None:
        return []
    out = []
    for mode in field.metadata.get("choices") or [field.default]:
        harnesses = [h for h in HARNESS_LABELS if h in field.metadata.get("harnesses", HARNESS_LABELS)]
        if "inspect" in harnesses:
            try:
                if family.inspect_calls(family.options_type(mode=mode)) is None:
                    harnesses.remove("inspect")
            except ValueError:  # a mode whose defaults need other options: say nothing about Inspect
                pass
        out.append({"name": mode, "default": mode == field.default, "harnesses": harnesses})
    return out


def family_info(family: Family) -> dict[str, Any]:
    """A family as `tasks list --json` prints it (without distinct prompts)."""
    suite = [name for name in family.tasks if name not in family.variants]
    groups = {lm_eval_group_name(g.name): list(g.tasks) for g in family.lm_eval_groups}
    tags = {lm_eval_group_name(tag): list(members) for tag, members in family.lm_eval_tags.items()}
    inspect_defaults = {p.name: p.default for p in family.options_type.inspect_parameters()}
    return {
        "name": family.name,
        "title": family.title,
        "suite": family.suite,
        "open_tasks": family.open_tasks,
        "unit": family.unit,
        "modes": modes(family),
        "options": [option_info(f, inspect_defaults) for f in family.options_type.option_fields()],
        "lm_eval_groups": groups,
        "lm_eval_tags": tags,
        "tasks": [
            {
                "name": name,
                "lm_eval": lm_eval_task_name(name),
                "inspect": inspect_task_name(name),
                "in_suite": name in suite,
                "arguments": dict(fixed),
            }
            for name, fixed in family.tasks.items()
        ],
    }


def add_prompts(info: dict[str, Any], family: Family) -> None:
    """Add each task's distinct prompts (and the family's, all tasks together) under the default
    options, counted as `biasmonkey plan` counts them; a family whose data cannot be loaded gets
    `prompts_error` instead."""
    from biasmonkey.harness_ext.app.plan import build_requests

    if not family.lm_eval_tasks():  # an open task table: nothing to count
        return
    try:
        built = {t.name: t for t in build_requests(",".join(family.lm_eval_tasks()))}
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        info["prompts_error"] = str(err)
        return
    for task in info["tasks"]:
        task["distinct_prompts"] = len({r.context for r in built[task["lm_eval"]].requests})
    info["distinct_prompts"] = len({r.context for t in built.values() for r in t.requests})


# ---------------------------------------------------------------------------- human output


def _value(value: Any) -> str:
    return "none" if value is None else json.dumps(value) if isinstance(value, str) else str(value).lower()


def _table(rows: Sequence[Sequence[str]], indent: str) -> list[str]:
    """Plain columns, left-aligned, two spaces apart (as `biasmonkey plan` prints its table)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]


def _harnesses(names: Sequence[str]) -> str:
    return ", ".join(HARNESS_LABELS.get(h, h) for h in names)


def format_family(info: dict[str, Any], show_all: bool) -> list[str]:
    tasks = info["tasks"]
    in_suite = sum(t["in_suite"] for t in tasks)
    variants = len(tasks) - in_suite
    counts = (
        f"{len(tasks)} tasks ({in_suite} in the suite, {variants} outside it)" if variants else f"{len(tasks)} tasks"
    )
    lines = [f"{info['name']}: {info['title']}"]
    if info["open_tasks"]:
        lines.append(f"  tasks: {info['open_tasks']}; documents are {info['unit']}")
    else:
        lines.append(
            f"  suite {info['suite']} (biasmonkey run --suite {info['name']}); {counts}; documents are {info['unit']}"
        )
    prompts = "distinct_prompts" in info
    if "prompts_error" in info:
        lines.append(f"  distinct prompts: not counted: {info['prompts_error']}")
    elif prompts:
        per_task = [t["distinct_prompts"] for t in tasks]
        lines.append(
            f"  distinct prompts (default options): {info['distinct_prompts']:,} over all tasks together, "
            f"{min(per_task):,} to {max(per_task):,} per task"
        )
    if show_all:
        header = (
            ["task", "lm-eval", "Inspect"] + (["distinct prompts"] if prompts else []) + (["suite"] if variants else [])
        )
        rows = [header]
        for t in tasks:
            row = [t["name"], t["lm_eval"], t["inspect"]]
            row += [f"{t['distinct_prompts']:,}"] if prompts else []
            row += ["yes" if t["in_suite"] else "no (variant)"] if variants else []
            rows.append(row)
        lines += ["  tasks:", *_table(rows, "    ")]
    elif tasks:
        shown = ", ".join(t["name"] for t in tasks[:SHOWN_TASKS])
        more = f", … (+{len(tasks) - SHOWN_TASKS}; --all lists every task)" if len(tasks) > SHOWN_TASKS else ""
        lines.append(f"  tasks: {shown}{more}")
    grouping = [f"{name} ({len(members)})" for name, members in info["lm_eval_groups"].items()]
    tagging = [f"{name} ({len(members)})" for name, members in info["lm_eval_tags"].items()]
    if grouping:
        lines.append(f"  lm-eval groups: {', '.join(grouping)}")
    if tagging:
        lines.append(f"  lm-eval tags: {', '.join(tagging)}")
    if info["modes"]:
        described = [
            f"{m['name']}{' (default)' if m['default'] else ''}"
            + ("" if len(m["harnesses"]) == len(HARNESS_LABELS) else f" [{_harnesses(m['harnesses'])} only]")
            for m in info["modes"]
        ]
        lines.append(f"  modes (--mode): {', '.join(described)}")
    else:
        lines.append("  modes: one (no --mode option)")
    rows = [["option", "run flag", "default", "harnesses", "help"]]
    for o in info["options"]:
        default = _value(o["default"])
        if "inspect_default" in o:
            default += f" (Inspect: {_value(o['inspect_default'])})"
        text = o["help"] + (f" [{', '.join(map(str, o['choices']))}]" if o["choices"] and o["name"] != "mode" else "")
        rows.append([o["name"], o["run_flag"] or "–", default, _harnesses(o["harnesses"]), text])
    lines += ["  options (lm-eval --metadata / Inspect -T keys):", *_table(rows, "    ")]
    return lines


def format_listing(families: Sequence[dict[str, Any]], show_all: bool) -> str:
    total = sum(len(f["tasks"]) for f in families)
    lines = [
        f"biasmonkey tasks: {len(families)} famil{'ies' if len(families) != 1 else 'y'}, {total} tasks "
        f"(a task <name> is {lm_eval_task_name('<name>')} in lm-eval, {inspect_task_name('<name>')} in Inspect)"
    ]
    for info in families:
        lines += ["", *format_family(info, show_all)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- command


def cmd_list(args: argparse.Namespace) -> int:
    chosen = [FAMILIES[name] for name in dict.fromkeys(args.family)] if args.family else list(FAMILIES.values())
    infos = []
    for family in chosen:
        info = family_info(family)
        if args.prompts:
            add_prompts(info, family)
        infos.append(info)
    if args.json:
        print(json.dumps({"families": infos}, indent=2, default=str))
    else:
        print(format_listing(infos, args.all))
    failed = [info["name"] for info in infos if "prompts_error" in info]
    if failed:
        print(f"biasmonkey: error: distinct prompts not counted for {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def add_subcommand(subparsers: Any) -> None:
    """Register `tasks` (with `list`) on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser("tasks", help="list the task families, their tasks, modes and options")
    sub = p.add_subparsers(dest="tasks_command", required=True)
    ls = sub.add_parser(
        "list",
        help="list the task families: their tasks (lm-eval and Inspect names), modes and options with defaults",
        description="List the task families (name, title, suite, unit), their tasks (lm-eval name biasmonkey_<task>, "
        "Inspect name biasmonkey/<task>), modes and run options with their defaults and help.",
    )
    ls.add_argument(
        "--family",
        action="append",
        choices=list(FAMILIES),
        metavar="NAME",
        help=f"only this family (repeatable): {', '.join(FAMILIES)}",
    )
    ls.add_argument("--all", action="store_true", help="list every task (default: a few names per family)")
    ls.add_argument(
        "--prompts",
        action="store_true",
        help="also count each task's distinct prompts under the default options (loads the data, as "
        "`biasmonkey plan` does; seconds to a minute)",
    )
    ls.add_argument("--json", action="store_true", help="print one JSON document with the same content")
    ls.set_defaults(func=cmd_list)
