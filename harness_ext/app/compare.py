"""`biasmonkey compare RUN RUN [RUN …]`: paired comparisons of runs on the same items, every family.

A RUN is a results path (an lm-eval `--output_path` or model folder, an Inspect log folder or log
file; any mix); a path holding several runs (models, or settings of one model) gives each of them.
A run is a model with its settings, as `biasmonkey summarize` keys them (`harness_ext.logs.Run`).
Pairs: every pair in the order given, or with `--baseline` the baseline against each other run;
`--pairs A:B,C:D` gives the model-pairs form instead (`compare_pairs`).

For every task both runs of a pair have, each measure its family gives (`tasks/<family>/compare.py`:
`item_measures`, `item_ids`, `PROMPT_SETTINGS`, and optionally `run_scores`, `unit_biases`) is
compared on the items matched by id (`compare_stats`); a run score is computed on those items too. Refused, unless asked: runs whose items
differ (`--common-items` keeps the shared ones and says how many were dropped) and runs whose
settings change the prompts (`--allow-settings`; the differing settings are named either way).
Every p-value of the command is adjusted together, Holm's method by default (`--correction bh`).
A family may pool its tasks into rows of its own (`overall_measures`, e.g. answer position over all
subjects). `--published FAMILY[:MODEL,…]` compares each run with published models instead, where the
family gives their per-item data (`published_models`, `published_records`: the response-bias paper's
nine models), on the items both have. Where a family's published data are per-model summaries instead
(`published_biases`: the yes-no authors' per-domain biases), `compare --published FAMILY[:SELECTION,…]`
without RUN gives the published models' own model-pairs table (their paper's pairs by default, or
`--pairs A:B,…` of published models), and a run is not paired with them item by item (an error says
so). The report's comparison section (`report/comparison.py`) pairs the runs it found with `item_rows`
and `compare_pairs`.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.compare_pairs import check_distinct_pairs, coverage_problems, pair_effects
from biasmonkey.harness_ext.app.compare_stats import measure_row
from biasmonkey.harness_ext.app.summary import runs_in
from biasmonkey.harness_ext.logs import Run, TaskOutput, short_name
from biasmonkey.metrics.paired import CORRECTIONS, adjust
from biasmonkey.tasks.contract import Family, ItemMeasure, lm_eval_task_name
from biasmonkey.tasks.families import FAMILIES, family_module, family_of

ALPHA = 0.05
# Harness settings that change the prompt text (`harness_ext.logs` names them so in both harnesses);
# "settings" is the unknown settings of a samples file without its results file.
PROMPT_SETTINGS = frozenset(
    {"apply_chat_template", "num_fewshot", "system_instruction", "fewshot_as_multiturn", "settings"}
)


@dataclass
class CompareRun:
    """One run to compare: its label, the path it was found under and its records per task."""

    label: str
    run: Run
    where: Path
    outputs: dict[str, TaskOutput | None]  # lm-eval task name -> output (None: published data, records given)
    records: dict[str, list] = field(default_factory=dict, repr=False)

    def task_names(self, family: Family) -> list[str]:
        """The run's tasks of one family (lm-eval names), in the family's order (a family whose task
        table lists none, the wrapped tasks: by name); no records are read."""
        names = [lm_eval_task_name(task) for task in family.tasks] or sorted(
            name for name in self.outputs if family_of(name) is family
        )
        return [name for name in names if name in self.outputs]

    def tasks(self, family: Family) -> dict[str, list]:
        """{lm-eval task name: records} of one family's tasks, in `task_names`' order."""
        return {name: self.records_of(name) for name in self.task_names(family)}

    def records_of(self, task: str) -> list:
        if task not in self.records:
            self.records[task] = self.outputs[task].read_records()
        return self.records[task]

    def options(self, task: str) -> Any:
        """The family's run options of a task (None for published data)."""
        output = self.outputs[task]
        return None if output is None else output.options


def hooks(family: Family) -> Any:
    """The family's `compare` module (tasks/<family>/compare.py)."""
    module = family_module(family.name, "compare")
    if module is None:
        raise ValueError(f"the {family.title} family has no tasks/{family.name}/compare.py: it cannot be compared")
    return module


def load_runs(paths: Sequence[Path]) -> list[CompareRun]:
    """Every run under the given paths, in the order given (each path's runs in run order), each
    labelled apart (`label_runs`). Results given twice (the same path, or a folder and a file or
    folder in it) are refused: paired with themselves, they would look like a comparison."""
    runs = []
    for path in paths:
        for run, outputs in runs_in(path).items():
            runs.append(CompareRun(run.label, run, path, {lm_eval_task_name(o.task): o for o in outputs}))
        if not any(r.where == path for r in runs):
            raise ValueError(f"{path}: no biasmonkey results (lm-eval --log_samples files or Inspect logs)")
    read: dict[Path, CompareRun] = {}
    for r in runs:
        for output in r.outputs.values():
            if (first := read.setdefault(output.path.resolve(), r)) is not r:
                raise ValueError(
                    f"the same run is given twice: {r.run}, under {first.where} and {r.where} "
                    f"(both read {output.path}); give each run once"
                )
    label_runs(runs, [str(r.where) for r in runs])
    return runs


def label_runs(runs: Sequence[CompareRun], places: Sequence[str]) -> None:
    """Give each run a label of its own: its short label (`Run.label`, "tiny (limit=4)"); where runs of
    two models share it (hf/tiny, hf/m2/tiny), their full names (`str(run)`, as `summarize` titles
    them); where one model with one setting is found twice (e.g. under both harnesses' paths), its
    place after it ("tiny (limit=4) [place]")."""
    models: dict[str, set[Run]] = {}
    for r in runs:
        models.setdefault(r.run.label, set()).add(r.run)
    for r in runs:
        r.label = str(r.run) if len(models[r.run.label]) > 1 else r.run.label
    counts = Counter(r.label for r in runs)
    for r, place in zip(runs, places):
        if counts[r.label] > 1:
            r.label = f"{r.label} [{place}]"


def pick(name: str, runs: Sequence[CompareRun], option: str) -> CompareRun:
    """The run named by a label, a model's full or short name, or the path it was given as."""
    found = [
        r
        for r in runs
        if name in (r.label, str(r.run), r.run.model, short_name(r.run.model), str(r.where))
        or Path(name).resolve() == r.where.resolve()
    ]
    if len(found) == 1:
        return found[0]
    listed = "; ".join(r.label for r in (found or runs))
    what = "several runs" if found else "no run"
    raise ValueError(f"{option} {name}: {what} of that name ({listed}); give a run's label or its path")


def split_outside_brackets(text: str, sep: str) -> list[str]:
    """`text` split at each `sep` outside parentheses and brackets: a run's label keeps its settings
    ("tiny (dtype=float32, limit=2)") and place ("[path]") whole."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        if char == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def parse_pairs(pairs: str, names: str = "a run's label, model name or path") -> list[tuple[str, str]]:
    """`--pairs A:B,C:D` as [(A, B), …]: pairs split at the commas, each at its last colon, outside
    parentheses and brackets (so a label's settings may hold commas); `names`: what A and B may be."""
    chosen = []
    for text in split_outside_brackets(pairs, ","):
        *first, b = split_outside_brackets(text.strip(), ":")
        a = ":".join(first)
        if not a or not b:
            raise ValueError(
                f"--pairs {pairs}: write each pair as A:B, separated by commas (A:B,C:D), A and B each {names}"
            )
        chosen.append((a, b))
    return chosen


def check_runs_used_once(chosen: Sequence[tuple[CompareRun, CompareRun]]) -> None:
    """Each run in one pair only: two pairs that share a run are not independent units (what one
    run's noise does to one pair it does to the other), so the paired t-test over the pairs, which
    takes them as independent, would overstate the evidence (as a pair given twice would)."""
    seen: dict[int, str] = {}  # id(run) -> its pair
    for a, b in chosen:
        pair = f"{a.label}:{b.label}"
        for r in (a, b):
            if id(r) in seen:
                raise ValueError(
                    f"--pairs: the run {r.label} is in two pairs ({seen[id(r)]} and {pair}); the pairs are the "
                    "test's independent units, and two pairs sharing a run are not: give each run in one pair only"
                )
            seen[id(r)] = pair


def run_pairs(
    runs: Sequence[CompareRun], baseline: str | None, pairs: str | None
) -> list[tuple[CompareRun, CompareRun]]:
    if pairs:
        chosen = [(pick(a, runs, "--pairs"), pick(b, runs, "--pairs")) for a, b in parse_pairs(pairs)]
        check_distinct_pairs([(a.label, b.label) for a, b in chosen], "--pairs")
        check_runs_used_once(chosen)
        return chosen
    if len(runs) < 2:
        raise ValueError(f"found {len(runs)} run ({', '.join(r.label for r in runs)}): compare needs two or more")
    if baseline is not None:
        base = pick(baseline, runs, "--baseline")
        return [(base, r) for r in runs if r is not base]
    return list(itertools.combinations(runs, 2))


def prompt_settings(families: Iterable[Family] | None = None) -> frozenset[str]:
    """The settings that change the prompts: the harness's and those of `families` (default: every family's)."""
    chosen = FAMILIES.values() if families is None else families
    return PROMPT_SETTINGS.union(*(getattr(hooks(f), "PROMPT_SETTINGS", frozenset()) for f in chosen))


def prompt_changes(a: CompareRun, b: CompareRun) -> dict[str, tuple[str, str]]:
    """The settings the runs differ in that change the prompts of the tasks both have: the harness's,
    and each family's only where both runs have a task of it (a yes-no `seed`, which moves its Specific
    folds, is not the cognitive prompts' `seed`); none where they share no task."""
    shared = [f for f in FAMILIES.values() if set(a.task_names(f)) & set(b.task_names(f))]
    if not shared:
        return {}
    prompts = prompt_settings(shared)
    return {k: v for k, v in differing_settings(a.run, b.run).items() if k in prompts}


def differing_settings(a: Run, b: Run) -> dict[str, tuple[str, str]]:
    """{setting: (A's value, B's value)} of the settings the runs differ in ("unset" where one has none)."""
    sa, sb = dict(a.settings), dict(b.settings)
    return {k: (sa.get(k, "unset"), sb.get(k, "unset")) for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)}


def settings_text(differ: dict[str, tuple[str, str]]) -> str:
    return ", ".join(f"{k} ({a} vs {b})" for k, (a, b) in differ.items())


def check_settings(pairs: Sequence[tuple[CompareRun, CompareRun]], allow: bool) -> None:
    """Refuse pairs that differ in a setting that changes the prompts of their common tasks
    (`prompt_changes`), unless `allow`."""
    for a, b in pairs:
        if (changed := prompt_changes(a, b)) and not allow:
            raise ValueError(
                f"{a.label} and {b.label} differ in settings that change the prompts: {settings_text(changed)}; "
                "their items are not the same questions. Give --allow-settings to compare them all the same"
            )


@dataclass
class Coverage:
    """The items of each task both runs of a pair have, and what was dropped."""

    ids: dict[str, list[str]]  # task -> the common item ids, in A's order
    notes: list[str]
    problems: list[str]


def coverage(a: CompareRun, b: CompareRun, family: Family, tasks: Iterable[str]) -> Coverage:
    cover = Coverage({}, [], [])
    ids_of = hooks(family).item_ids
    for task in tasks:
        ia, ib = ids_of(a.records_of(task)), ids_of(b.records_of(task))
        common = [i for i in dict.fromkeys(ia) if i in set(ib)]
        cover.ids[task] = common
        sa, sb = set(ia), set(ib)
        if sa != sb:
            cover.problems += coverage_problems(task, [(a.label, sa), (b.label, sb)])
            cover.notes.append(
                f"{task}: {len(sa - sb)} items of {a.label} and {len(sb - sa)} of {b.label} dropped, "
                f"{len(common)} compared"
            )
    return cover


def refuse_mismatch(problems: list[str]) -> None:
    if problems:
        raise ValueError(
            "the runs do not cover the same items, so they cannot be paired (run both on the same items: the same "
            "--limit and data), or give --common-items to compare the items they share:\n  " + "\n  ".join(problems)
        )


@dataclass
class Comparison:
    """What the command found: its rows (every p adjusted together) and the lines that qualify them."""

    mode: str  # "items" or "pairs"
    correction: str
    pairs: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    notes: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "correction": self.correction, "alpha": ALPHA, "pairs": self.pairs} | {
            "rows": self.rows,
            "notes": self.notes,
        }


def pair_info(a: CompareRun, b: CompareRun) -> dict[str, Any]:
    return {"a": a.label, "b": b.label, "differing_settings": settings_text(differing_settings(a.run, b.run))}


def common_tasks(a: CompareRun, b: CompareRun, family: Family, notes: list[str]) -> list[str]:
    ta, tb = a.tasks(family), b.tasks(family)
    if only := sorted(set(ta) ^ set(tb)):
        notes.append(f"{a.label} vs {b.label}: tasks not in both runs, left out: {', '.join(only)}")
    return [t for t in ta if t in tb]


def item_rows(pairs: Sequence[tuple[CompareRun, CompareRun]], common_items: bool) -> tuple[list[dict], list[str]]:
    """The rows of every measure of every task of every pair (items matched by id)."""
    rows, notes, problems = [], [], []
    for a, b in pairs:
        for family in FAMILIES.values():
            tasks = common_tasks(a, b, family, notes)
            if not tasks:
                continue
            cover = coverage(a, b, family, tasks)
            problems += cover.problems
            notes += cover.notes
            if cover.problems and not common_items:
                continue
            head = {"a": a.label, "b": b.label, "family": family.name}
            module = hooks(family)
            for task in tasks:
                measures_a = module.item_measures(task, a.records_of(task), a.options(task))
                measures_b = module.item_measures(task, b.records_of(task), b.options(task))
                rows += measure_rows(head | {"task": task}, measures_a, measures_b, cover.ids[task])
            if overall := getattr(module, "overall_measures", None):
                rows += overall_rows(head, overall, a, b, tasks, cover)
            if scores := getattr(module, "run_scores", None):
                rows += run_rows(head, scores, a, b, family, cover, notes)
    if not common_items:
        refuse_mismatch(problems)
    return rows, notes + row_notes(rows)


def run_rows(
    head: dict[str, Any], scores: Any, a: CompareRun, b: CompareRun, family: Family, cover: Coverage, notes: list[str]
) -> list[dict[str, Any]]:
    """The family's one-number-per-run rows (`run_scores({task: records})`), each run scored on the
    items both have (none where they share no item: a note says so); a score undefined (NaN) for a run
    says so in the row's note."""
    shared = sum(map(len, cover.ids.values()))
    if not shared:
        notes.append(f"{a.label} vs {b.label}: {family.title} run scores left out, the runs share no item")
        return []
    sa, sb = scores(_kept(a, family, cover.ids)), scores(_kept(b, family, cover.ids))
    untested = {"task": "(run)", "n": shared, "p": math.nan, "test": "none (one number per run)"}
    rows = []
    for name in (n for n in sa if n in sb):
        undefined = " and ".join(r.label for r, s in ((a, sa), (b, sb)) if math.isnan(s[name]))
        note = f"n/a for {undefined}: undefined on the items both runs have" if undefined else ""
        values = {"value_a": sa[name], "value_b": sb[name], "difference": sb[name] - sa[name], "note": note}
        rows.append(head | untested | {"measure": name} | values)
    return rows


def row_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One note per row with something to say (why its CI or p is n/a), naming the pair, task and measure."""
    return [f"{r['a']} vs {r['b']}: {r['task']} {r['measure']}: {r['note']}" for r in rows if r.get("note")]


def measure_rows(
    head: dict[str, Any], measures_a: Sequence[ItemMeasure], measures_b: Sequence[ItemMeasure], ids: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per measure both runs have, on the items `ids`."""
    by_name = {m.name: m for m in measures_b}
    return [
        head | {"headline": m.headline} | measure_row(m, by_name[m.name], ids) for m in measures_a if m.name in by_name
    ]


def overall_rows(
    head: dict[str, Any], overall: Any, a: CompareRun, b: CompareRun, tasks: Sequence[str], cover: Coverage
) -> list[dict[str, Any]]:
    """The family's pooled rows: its `overall_measures({task: records}, {task: options})` gives {row:
    measures} whose items are (task, item id); compared on the items both runs have of each task."""
    found_a = overall({t: a.records_of(t) for t in tasks}, {t: a.options(t) for t in tasks})
    found_b = overall({t: b.records_of(t) for t in tasks}, {t: b.options(t) for t in tasks})
    rows = []
    for name, measures in found_a.items():
        if name in found_b and measures:
            ids = [(t, i) for t in tasks for i in cover.ids[t] if (t, i) in measures[0].values]
            rows += measure_rows(head | {"task": name}, measures, found_b[name], ids)
    return rows


def _kept(run: CompareRun, family: Family, ids: dict[str, list[str]]) -> dict[str, list]:
    """{task: the run's records of the items in `ids`} (all of them where the runs cover the same items)."""
    ids_of = hooks(family).item_ids
    kept = {}
    for task, keep in ids.items():
        records, wanted = run.records_of(task), set(keep)
        kept[task] = [r for r, i in zip(records, ids_of(records)) if i in wanted]
    return kept


def model_pair_rows(pairs: Sequence[tuple[CompareRun, CompareRun]], common_items: bool) -> tuple[list[dict], list[str]]:
    """The model-pairs form per family: one row per task, its units over the pairs (`compare_pairs`)."""
    rows, notes, problems = [], [], []
    for family in FAMILIES.values():
        if not all(a.tasks(family) and b.tasks(family) for a, b in pairs):
            continue
        tasks = sorted(set.intersection(*(set(r.tasks(family)) for pair in pairs for r in pair)))
        covers = [coverage(a, b, family, tasks) for a, b in pairs]
        problems += [p for c in covers for p in c.problems]
        notes += [n for c in covers for n in c.notes]
        units = hooks(family).unit_biases
        kept = [(_kept(a, family, c.ids), _kept(b, family, c.ids)) for (a, b), c in zip(pairs, covers)]
        biases = [(units(a), units(b)) for a, b in kept]
        caveats = getattr(hooks(family), "bias_caveats", None)  # e.g. yes-no's exact ties
        if caveats is not None:
            seen = {id(r): (r, records) for pair, kept_pair in zip(pairs, kept) for r, records in zip(pair, kept_pair)}
            notes += [f"{run.label}: {line}" for run, records in seen.values() for line in caveats(records)]
        family_rows, left = pair_effects(biases, getattr(hooks(family), "PAIR_UNIT", "task"))
        rows += [{"family": family.name} | r for r in family_rows]
        only = sorted({t for pair in pairs for r in pair for t in r.tasks(family)} - set(tasks))
        if only:
            notes.append(f"{family.title}: tasks not in every run, left out: {', '.join(only)}")
    if not common_items:
        refuse_mismatch(problems)
    return rows, notes


def with_hook(hook: str) -> list[str]:
    """The families whose `compare` module has `hook`."""
    return [f for f in FAMILIES if hasattr(family_module(f, "compare"), hook)]


def published_family(spec: str) -> tuple[Family, Any, list[str]]:
    """`--published FAMILY[:WHAT,…]`: the family, its `compare` module and the words after the colon."""
    name, _, words = spec.partition(":")
    family = FAMILIES.get(name)
    module = None if family is None else family_module(family.name, "compare")
    if family is None or not (hasattr(module, "published_records") or hasattr(module, "published_biases")):
        have = sorted(set(with_hook("published_records")) | set(with_hook("published_biases")))
        raise ValueError(f"--published {spec}: no published data for {name!r} (families with some: {', '.join(have)})")
    return family, module, [w.strip() for w in words.split(",") if w.strip()]


def per_item_family(spec: str) -> tuple[Family, Any, list[str]]:
    """`published_family` of a family with published per-item data (`published_records`), else an error
    that says why a run cannot be paired with its published models."""
    family, module, models = published_family(spec)
    name = family.name
    if not hasattr(module, "published_records"):
        raise ValueError(
            f"--published {spec}: no published per-item data for {name!r}: the published {family.title} data are "
            f"per-model summaries (one bias per model and {getattr(module, 'PAIR_UNIT', 'task')}), not per-item "
            "answers, so a run cannot be paired with those models item by item. Without RUN, "
            f"`biasmonkey compare --published {name}` gives the published models' own model-pairs table "
            f"(families with per-item data: {', '.join(with_hook('published_records'))})"
        )
    return family, module, models


def published_pairs(spec: str, runs: Sequence[CompareRun]) -> tuple[list[tuple[CompareRun, CompareRun]], list[str]]:
    """`--published FAMILY[:MODEL,…]`: each run (B) paired with each published model (A) of the
    family, as rescored on the run's own items by the family's `published_records` hook; and notes."""
    family, module, models = per_item_family(spec)
    chosen = module.published_models(models)
    pairs, notes = [], []
    for run in runs:
        ids = {task: module.item_ids(records) for task, records in run.tasks(family).items()}
        if not ids:
            notes.append(f"{run.label}: no {family.title} task, not compared with the published models")
            continue
        for model in chosen:
            label, records = module.published_records(model, ids)
            run_of = Run(label, module.published_settings())
            pairs.append((CompareRun(label, run_of, Path(model), dict.fromkeys(records), records), run))
    if not pairs:
        raise ValueError(f"--published {spec}: none of the runs has a {family.title} task")
    notes.append(
        f"published models ({family.title}): their released answers rescored on each run's own items (matched by "
        "id); the items they lack are dropped and counted, and their prompts are the paper's, whatever the run's settings"
    )
    return pairs, notes


def published_model_pairs(pairs: str | None, names: Sequence[str], default: Sequence[tuple[str, str]]) -> list:
    """The model pairs of a published table: `--pairs A:B,C:D` of published model names (checked, with a
    suggestion), or the family's default pairs (no --pairs, or --pairs without pairs)."""
    if not pairs:
        return list(default)
    chosen = []
    for a, b in parse_pairs(pairs, "a published model's name"):
        for model in (a, b):
            if model not in names:
                close = difflib.get_close_matches(model, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"--pairs {pairs}: no published model {model!r}{hint} (known: {', '.join(names)})")
        chosen.append((a, b))
    check_distinct_pairs(chosen, "--pairs")
    return chosen


def published_table(spec: str, pairs: str | None, correction: str = "holm") -> Comparison:
    """`--published FAMILY[:SELECTION,…]` without runs: the model-pairs form (`pair_effects`) of the
    published models' biases that the family's `published_biases(selection)` gives, over its default
    pairs or `pairs`; rows in the family's order, every p adjusted together (`correction`)."""
    family, module, selection = published_family(spec)
    if not hasattr(module, "published_biases"):
        raise ValueError(
            f"--published {spec} needs the runs to compare with the published models (RUN …): the {family.title} "
            f"published data are per item, for runs (families with a published table: {', '.join(with_hook('published_biases'))})"
        )
    found = module.published_biases(selection)
    chosen = published_model_pairs(pairs, list(found.models), found.pairs)
    family_rows, left = pair_effects([(found.models[a], found.models[b]) for a, b in chosen], found.unit)
    order = list(found.rows)
    rows = [
        {"family": family.name, "task": r["task"], **found.rows.get(r["task"], {})} | r
        for r in sorted(family_rows, key=lambda r: order.index(r["task"]) if r["task"] in order else len(order))
    ]
    notes = list(found.notes)
    if left:
        notes.append(f"{family.title}: rows not in every published model of the pairs, left out: {', '.join(left)}")
    result = compare_pairs([], rows, notes, "pairs", correction)
    result.pairs = [{"a": a, "b": b, "differing_settings": ""} for a, b in chosen]
    return result


def compare(
    paths: Sequence[Path],
    baseline: str | None = None,
    pairs: str | None = None,
    common_items: bool = False,
    allow_settings: bool = False,
    correction: str = "holm",
    published: str | None = None,
) -> Comparison:
    """Every comparison the command makes, its p-values adjusted together (`correction`). With
    `published` ("response_bias" or "response_bias:MODEL,…"), each run (or the `baseline` run only)
    against each published model of the family, on their common items; without `paths`, the published
    models' own model-pairs table where the family has one (`published_table`)."""
    if published is not None and not paths:
        if baseline is not None:
            raise ValueError("--published without RUN compares published models only: --baseline names no run")
        return published_table(published, pairs, correction)
    if not paths:
        raise ValueError(
            "give the runs to compare (RUN …), or --published FAMILY without RUN for a family's published table"
        )
    if pairs == "":
        raise ValueError(
            "--pairs needs the pairs, A:B,C:D (a bare --pairs only with --published FAMILY and no RUN: "
            "the published models' default pairs)"
        )
    if published is not None:
        per_item_family(published)  # before reading the runs: a family without per-item data says so
        if pairs is not None:
            raise ValueError(
                "--published and --pairs with RUN: give one of them (--pairs without RUN: published pairs)"
            )
        runs = load_runs(paths)
        chosen, notes = published_pairs(published, [pick(baseline, runs, "--baseline")] if baseline else runs)
        rows, more = item_rows(chosen, common_items=True)
        return compare_pairs(chosen, rows, notes + more, "items", correction)
    if baseline is not None and pairs is not None:
        raise ValueError("--baseline and --pairs: give one of them")
    chosen = run_pairs(load_runs(paths), baseline, pairs)
    check_settings(chosen, allow_settings)
    mode = "pairs" if pairs else "items"
    rows, notes = (model_pair_rows if pairs else item_rows)(chosen, common_items)
    return compare_pairs(chosen, rows, notes, mode, correction)


def compare_pairs(
    chosen: Sequence[tuple[CompareRun, CompareRun]], rows: list[dict], notes: list[str], mode: str, correction: str
) -> Comparison:
    """The comparison of the rows found: every p adjusted together (`correction`); a row without a test
    (p NaN) is neither significant nor not (`significant` None, shown n/a)."""
    if not rows:
        raise ValueError("no task is present in both runs of any pair: nothing to compare")
    p_key = "p_value" if mode == "pairs" else "p"
    adjusted = adjust([r.get(p_key, math.nan) for r in rows], correction)
    for row, p in zip(rows, adjusted):
        row["p_adjusted"] = float(p)
        row["significant"] = None if math.isnan(p) else bool(p < ALPHA)
    return Comparison(mode, correction, [pair_info(a, b) for a, b in chosen], rows, notes)


def cmd_compare(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.app.compare_output import markdown, plain, write_outputs

    result = compare(
        args.runs, args.baseline, args.pairs, args.common_items, args.allow_settings, args.correction, args.published
    )
    for note in result.notes:
        print(f"biasmonkey: {note}", file=sys.stderr)
    print(json.dumps(plain(result.as_dict()), indent=2) if args.json else markdown(result))
    if args.output is not None:
        written = write_outputs(result, args.output)
        print(f"Comparison written to {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="paired comparisons of runs on the same items (every family): differences, CIs, tests, Holm",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "runs",
        type=Path,
        nargs="*",
        metavar="RUN",
        help="lm-eval output folders, Inspect log folders or log files (none: --published FAMILY's own table)",
    )
    p.add_argument(
        "--baseline", metavar="RUN", help="compare every other run with this one (a run's label, model or path)"
    )
    p.add_argument(
        "--pairs",
        metavar="A:B,C:D",
        nargs="?",
        const="",
        help="model pairs (e.g. base:instruct): the mean over pairs of the change in each task's bias measure, "
        "Cohen's d and p (Bhatt & Ivanova's Table 1 form); with --published FAMILY and no RUN, pairs of published "
        "models (bare --pairs or none: the authors' pairs)",
    )
    p.add_argument(
        "--published",
        metavar="FAMILY[:WHAT,…]",
        help="compare each run (or the --baseline run) with published models on the items both have, e.g. "
        "response_bias (the paper's nine models, their released samples rescored) or response_bias:llama2-7b,gpt-3.5-turbo; "
        "without RUN, the published models' own model-pairs table: yesno (the yes-no authors' Table 1 from their "
        "per-model biases), yesno:fewshot or yesno:zeroshot,ewok (prompt types and sets)",
    )
    p.add_argument(
        "--common-items",
        action="store_true",
        help="compare the items both runs have (else: refuse runs on other items)",
    )
    p.add_argument(
        "--allow-settings",
        action="store_true",
        help="compare runs whose settings change the prompts (named in the output)",
    )
    p.add_argument(
        "--correction",
        choices=tuple(CORRECTIONS),
        default="holm",
        help="multiple-comparison adjustment over every p-value of the command (default: holm)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--output", type=Path, metavar="DIR", help="also write compare.md, .csv, .json and forest.png here")
    p.set_defaults(func=cmd_compare)
