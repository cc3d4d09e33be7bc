"""`biasmonkey summarize`: summary tables (markdown + CSV) of a results folder, recomputed from the
per-document records.

Reads the `samples_biasmonkey_*.jsonl` files lm-eval writes with `--log_samples`, or the logs of
`inspect eval biasmonkey/...` (`.eval`/`.json`), rebuilds each task's records and computes every
number from them with the family's own code (never from the aggregates a harness printed). Each
family gives its table (`Family.summary_table`), or one row per task of the metrics it reports,
under the metrics' names. Runs are never mixed: each model, and each setting of one model
(`biasmonkey.harness_ext.logs.Run`), gets its own tables and its own rows.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.logs import Run, TaskOutput, describe, newest, one_run, scan, short_name, variants_note
from biasmonkey.harness_ext.truncation import TaskCuts, summary_lines
from biasmonkey.tasks.atomic_write import atomic_open, make_folder, write_text
from biasmonkey.tasks.contract import Family, SummaryTable, lm_eval_task_name, reported
from biasmonkey.tasks.families import FAMILIES


def _family_and_harness(out: TaskOutput) -> tuple[str, str]:
    return out.family.name, out.harness


def latest_outputs(
    output_dir: Path, family: Family | None = None, left_out: list[TaskOutput] | None = None
) -> list[TaskOutput]:
    """The newest output of each task per run (model and settings) in a folder, of one family or all;
    `left_out` gets the variants' outputs (`logs.scan`)."""
    found = newest(
        (o for o in scan(output_dir, left_out) if family is None or o.family is family),
        key=_family_and_harness,
    )
    harnesses: dict[tuple[Run, str], TaskOutput] = {}
    for out in found:
        if harnesses.setdefault((out.run, out.task), out) is not out:
            raise ValueError(
                f"{output_dir} holds lm-eval samples and Inspect logs of {lm_eval_task_name(out.task)} of {out.run}: "
                "summarize one harness's output at a time"
            )
    return found


def _picked(run: Run, model: str) -> bool:
    return model in (run.model, short_name(run.model), run.label, str(run))


def runs_in(
    output_dir: Path, model: str | None = None, left_out: list[TaskOutput] | None = None
) -> dict[Run, list[TaskOutput]]:
    """The outputs of each run in a folder, in run order; `model` (full or short name, or a run's
    label as a summary titles it) keeps that model's runs only; `left_out` gets the variants' outputs."""
    runs: dict[Run, list[TaskOutput]] = {}
    for out in latest_outputs(output_dir, left_out=left_out):
        runs.setdefault(out.run, []).append(out)
    if model is not None:
        picked = {run: outs for run, outs in runs.items() if _picked(run, model)}
        if not picked:
            found = "; ".join(str(run) for run in sorted(runs)) or "none"
            raise ValueError(
                f"--model {model}: no biasmonkey results of that model under {output_dir} (found: {found})"
            )
        runs = picked
    return dict(sorted(runs.items()))


def task_records(output_dir: Path, family: Family) -> dict[str, list]:
    """The records per task (lm-eval name) of one family's tasks of the one run in an lm-eval
    output folder or an Inspect log folder (an error names the runs of a folder that holds several)."""
    outputs = one_run(
        latest_outputs(output_dir, family),
        output_dir,
        "Give the folder of one run (lm-eval writes one folder per model).",
    )
    return {lm_eval_task_name(out.task): out.read_records() for out in outputs}


def metric_table(family: Family, outputs: Sequence[TaskOutput]) -> SummaryTable:
    """One row per task: each metric the task reports in its harness, under its name, computed from
    the records; a task run in both harnesses gets a row per harness, named in a `harness` column."""
    both = len({out.harness for out in outputs}) > 1
    rows = []
    for out in outputs:
        records = out.read_records()
        metrics = reported(family, out.options, out.contract_harness, family.tasks[out.task])
        where = {"harness": out.harness} if both else {}
        rows.append({"task": out.task, **where, **{m.name: m.compute(records) for m in metrics}})
    return SummaryTable(rows, list(dict.fromkeys(k for r in rows for k in r)))


def family_table(family: Family, outputs: Sequence[TaskOutput], **options: Any) -> SummaryTable:
    """A family's summary table of one run's outputs (tasks in the family's order)."""
    order = {name: i for i, name in enumerate(family.tasks)}
    outputs = sorted(outputs, key=lambda o: order.get(o.task, len(order)))
    if family.summary_table is None:
        return metric_table(family, outputs)
    return family.summary_table(
        [out.read_records() for out in outputs],
        run_options=[out.options for out in outputs],
        tasks=[out.task for out in outputs],
        harnesses=[out.contract_harness for out in outputs],
        **options,
    )


def summary_tables(output_dir: Path, model: str | None = None, **options: Any) -> dict[Run, dict[str, SummaryTable]]:
    """Per run (model and settings), each family's table, in the registry's order; `options` are
    the families' summary options (e.g. `uncertainty_side`)."""
    return tables_of(runs_in(output_dir, model), **options)


def variant_tables(outputs: Sequence[TaskOutput], model: str | None = None) -> dict[Run, dict[str, SummaryTable]]:
    """Per run, a table per family of its variants outside the suite (`metric_table`: each metric
    the task reports), the newest output of each; `model` keeps that model's runs only."""
    tables: dict[Run, dict[str, list[TaskOutput]]] = {}
    for out in newest(outputs, key=_family_and_harness):
        if model is None or _picked(out.run, model):
            tables.setdefault(out.run, {}).setdefault(out.family.name, []).append(out)
    return {
        run: {name: metric_table(FAMILIES[name], outs) for name, outs in families.items()}
        for run, families in tables.items()
    }


def tables_of(runs: Mapping[Run, Sequence[TaskOutput]], **options: Any) -> dict[Run, dict[str, SummaryTable]]:
    """Each run's family tables (`summary_tables`)."""
    tables: dict[Run, dict[str, SummaryTable]] = {}
    for run, outputs in runs.items():
        tables[run] = {
            name: family_table(family, mine, **options)
            for name, family in FAMILIES.items()
            if (mine := [o for o in outputs if o.family is family])
        }
    return tables


def truncated(outputs: Sequence[TaskOutput]) -> dict[str, TaskCuts]:
    """The prompts cut to fit the model's context, per task (lm-eval name) of a run's outputs."""
    return {lm_eval_task_name(out.task): cuts for out in outputs if (cuts := out.truncation)}


def format_value(value: Any) -> str:
    """A table cell: an undefined value (None or NaN) as "n/a", a bool as yes/no, a float to 3 decimals."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)


def table_lines(table: SummaryTable) -> list[str]:
    """A family's table in markdown, then its notes."""
    columns = list(table.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(format_value(r.get(c, math.nan)) for c in columns) + " |" for r in table.rows]
    for note in table.notes:
        lines += ["", note]
    return lines


def to_markdown(
    tables: Mapping[Run, Mapping[str, SummaryTable]],
    labels: Mapping[Run, str],
    engine: Sequence[str] = (),
    notes: Mapping[Run, Sequence[str]] | None = None,
    folder_notes: Sequence[str] = (),
    variants: Mapping[Run, Mapping[str, SummaryTable]] | None = None,
) -> str:
    """The summary: one run's tables under its title, or one section per run; then `engine`, lines
    about the served engine of the `biasmonkey run` that wrote it (its prefix-cache hit rate).
    `notes`: per run, lines under its title that qualify every number of it (its truncated prompts);
    `folder_notes`: lines under the title about the whole folder (the variants left out of the
    families' tables); `variants`: per run, its variants' tables, after its families' tables."""
    if len(tables) == 1:
        ((run, families),) = tables.items()
        lines, level = [f"# Summary: {labels[run]}"], "##"
    else:
        lines, level = [f"# Summary: {len(tables)} runs (models and settings), each in its own tables"], "###"
    for note in folder_notes:
        lines += ["", note]
    for run, families in tables.items():
        if level == "###":
            lines += ["", f"## {labels[run]}"]
        for note in (notes or {}).get(run, ()):
            lines += ["", note]
        for name, table in families.items():
            lines += ["", f"{level} {FAMILIES[name].title}", "", *table_lines(table)]
        for name, table in (variants or {}).get(run, {}).items():
            lines += ["", f"{level} {FAMILIES[name].title}: variants outside the suite", "", *table_lines(table)]
    if engine:
        lines += ["", "## Served engine (this biasmonkey run)", "", *engine]
    return "\n".join(lines) + "\n"


def write_summary(
    output_dir: Path,
    out_dir: Path | None = None,
    model: str | None = None,
    engine: Sequence[str] = (),
    **options: Any,
) -> tuple[Path, Path]:
    """Write summary.md and summary.csv for an lm-eval output or Inspect log folder (into out_dir or
    the folder). Every run (model and settings) gets its own tables, titled with its model and
    settings, and its own rows in the CSV (the last columns `model`, `settings` and `family`, then
    `truncated_prompts` where prompts were cut: below); `model` keeps one model's runs (`runs_in`);
    `engine`: lines closing summary.md about the served engine of the `biasmonkey run` that writes it
    (`run.engine_lines`); `options` are the families' summary options.
    A run whose prompts were cut to fit the model's context (`biasmonkey run --allow-truncation`, as
    recorded beside its results) says so under its title and in the CSV's `truncated_prompts` column
    (the run's cut prompts, on each of its rows)."""
    left_out: list[TaskOutput] = []
    runs = runs_in(output_dir, model, left_out)
    tables = tables_of(runs, **options)
    variants = variant_tables(left_out, model)
    for run in variants:  # a run of variants only: their tables alone
        tables.setdefault(run, {})
        runs.setdefault(run, [])
    tables = dict(sorted(tables.items()))
    if not tables:
        raise ValueError(
            f"no samples_biasmonkey_*.jsonl files or biasmonkey Inspect logs under {output_dir}: "
            "run lm_eval with --log_samples, or give the Inspect log folder"
        )
    note = variants_note(left_out, summarized=True)
    out_dir = make_folder(out_dir or output_dir)
    md, csv_path = out_dir / "summary.md", out_dir / "summary.csv"
    labels = {run: run.label for run in tables}
    if len(set(labels.values())) < len(labels):  # two models with one short name: their full names
        labels = {run: str(run) for run in tables}
    cuts = {run: truncated(outputs) for run, outputs in runs.items()}
    notes = {run: summary_lines(cuts[run]) for run in tables}
    write_text(md, to_markdown(tables, labels, engine, notes, [note] if note else [], variants))
    variant_families = {run: {f"{name} (variant)": t for name, t in v.items()} for run, v in variants.items()}
    rows = [
        {**row, "model": run.model, "settings": describe(run.settings), "family": name}
        | ({"truncated_prompts": sum(c.prompts for c in cuts[run].values())} if cuts[run] else {})
        for run, families in tables.items()
        for name, table in (families | variant_families.get(run, {})).items()
        for row in table.rows
    ]
    fieldnames = list(dict.fromkeys(k for r in rows for k in r))
    with atomic_open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fieldnames)
        writer.writeheader()
        writer.writerows(rows)
    return md, csv_path
