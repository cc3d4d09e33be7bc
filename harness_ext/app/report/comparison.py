"""The report's comparison section: where the results hold several runs (model + settings) of the
same tasks, each run against a baseline run, paired on the items both have (`biasmonkey compare`'s
code: `compare.item_rows`, `compare.compare_pairs`, `compare_output`).

The baseline is the report's first run (the order of its tables: models by name, then each model's
runs by settings) or the run `biasmonkey report --baseline RUN` names. Only runs asked the same
questions as the baseline are compared: a run that differs from it in a setting that changes the
prompts of the tasks both have (`compare.prompt_changes`: chat template, few-shot, system
instruction, a family's prompt options on its own tasks) or has no task in common with it is left out, and the section names it and why. Items
both runs have are compared (`--common-items`), the dropped ones counted. The section's p-values
form a Holm family of their own, apart from the report's (its "Multiple comparisons").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.harness_ext.app.compare import (
    ALPHA,
    CompareRun,
    Comparison,
    compare_pairs,
    item_rows,
    pick,
    prompt_changes,
    settings_text,
)
from biasmonkey.harness_ext.app.compare_output import ITEM_COLUMNS, ITEMS_TEXT, adjustment_text, cells, pair_rows
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.harness_ext.logs import Run, TaskOutput

TITLE = "Comparison of runs"
FIGURE = "comparison_forest.png"


def runs_of(models: Sequence[Any]) -> list[CompareRun]:
    """The report's runs in its order: per report entry (`inputs.ModelResults`), one run per model and
    settings (as `biasmonkey compare` keys them), its records those the report read."""
    found: list[tuple[str, CompareRun]] = []
    for m in models:
        groups: dict[Run, dict[str, TaskOutput]] = {}
        for task, out in sorted(m.sources.items()):
            groups.setdefault(out.run, {})[task] = out
        for run, outputs in sorted(groups.items()):
            records = {task: m.records[out.suite][task] for task, out in outputs.items()}
            where = next(iter(outputs.values())).path.parent
            found.append((m.distinct or f"[{m.name}]", CompareRun(run.label, run, where, dict(outputs), records)))
    labels = [r.label for _, r in found]
    for entry, r in found:  # one run in two entries (both harnesses, two places): what tells the entries apart
        if labels.count(r.label) > 1:
            r.label = f"{r.label} {entry}"
    return [r for _, r in found]


def _shared(a: CompareRun, b: CompareRun) -> bool:
    return bool(set(a.outputs) & set(b.outputs))


def choose(runs: Sequence[CompareRun], baseline: str | None) -> tuple[CompareRun, list[CompareRun], list[dict]]:
    """The baseline, the runs compared with it and those left out ({run, role, reason} rows)."""
    base = pick(baseline, runs, "--baseline") if baseline is not None else runs[0]
    compared, table = [], [{"run": base.label, "role": "baseline", "reason": ""}]
    for r in runs:
        if r is base:
            continue
        if changed := prompt_changes(base, r):
            why = f"differs from the baseline in settings that change the prompts: {settings_text(changed)}"
        elif not _shared(base, r):
            why = "no task in common with the baseline"
        else:
            compared.append(r)
            table.append({"run": r.label, "role": "compared", "reason": ""})
            continue
        table.append({"run": r.label, "role": "left out", "reason": why})
    return base, compared, table


def comparison(
    models: Sequence[Any], baseline: str | None = None
) -> tuple[Comparison | None, pd.DataFrame | None, list[str]]:
    """The comparison of the report's runs with the baseline (None where no two runs share a task, or
    no run can be compared with the baseline), the runs' table (None: no section) and the notes."""
    runs = runs_of(models)
    if not any(_shared(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]):
        if baseline is not None:
            listed = "; ".join(r.label for r in runs)
            raise ValueError(f"--baseline {baseline}: no two runs of the report share a task ({listed}): no comparison")
        return None, None, []
    base, compared, table = choose(runs, baseline)
    if not compared:
        return None, pd.DataFrame(table), []
    pairs = [(base, r) for r in compared]
    rows, notes = item_rows(pairs, common_items=True)
    if not rows:
        return None, pd.DataFrame(table), notes
    return compare_pairs(pairs, rows, notes, "items", "holm"), pd.DataFrame(table), notes


def section(
    models: Sequence[Any], fig_dir: Path, baseline: str | None = None, report_tests: int = 0
) -> tuple[Section | None, dict[str, pd.DataFrame], str | None]:
    """The section, its tables ({name: frame}, for the tables folder) and its markdown (`compare.md`'s
    text, for `tables/comparison.md`); (None, {}, None) where the report holds no two runs of one task."""
    from biasmonkey.harness_ext.app.compare_output import forest_figure, markdown, plain
    from biasmonkey.harness_ext.app.report.figures import save

    result, runs, notes = comparison(models, baseline)
    if runs is None:
        return None, {}, None
    base = runs["run"].iloc[0]
    how = (
        "`--baseline`"
        if baseline is not None
        else "the first run in the report's order; `--baseline RUN` chooses another"
    )
    s = Section(
        TITLE, [f"Each run compared with the baseline, **{base}** ({how}), item by item on the items both have."]
    )
    s.blocks.append(Table("Runs", runs))
    left = runs[runs["role"] == "left out"]
    if len(left):
        s.blocks.append(
            f"{len(left)} run{'s' * (len(left) != 1)} left out, never paired with the baseline: "
            + "; ".join(f"{r} ({why})" for r, why in zip(left["run"], left["reason"]))
            + "."
        )
    tables = {"comparison_runs": runs}
    if result is None:
        s.blocks.append("No run could be compared with the baseline.")
        return s, tables, None
    s.blocks.append(
        ITEMS_TEXT
        + adjustment_text(result)
        + f" These p-values form their own Holm family, apart from the report's {report_tests} tests "
        "(Multiple comparisons)."
    )
    for pair in result.pairs:
        frame = pd.DataFrame(cells(pair_rows(result, pair), ITEM_COLUMNS), columns=list(ITEM_COLUMNS.values()))
        differ = f"; settings that differ (A vs B): {pair['differing_settings']}" if pair["differing_settings"] else ""
        legend = f"A = {pair['a']}, B = {pair['b']}; * p adj. < {ALPHA} (Holm over this section's tests)."
        s.blocks.append(Table(f"{pair['b']} vs {pair['a']}{differ}", frame, legend=legend))
    s.blocks.append(
        Figure(
            "Comparison of runs: B − A of each task's bias measure with its 95% CI, one panel per family "
            "(filled: significant after Holm over this section's tests)",
            save(forest_figure(result), fig_dir / FIGURE),
        )
    )
    s.blocks += [f"- {note}" for note in notes]
    rows = pd.DataFrame([plain(r) for r in result.rows])
    return s, tables | {"comparison": rows}, markdown(result)
