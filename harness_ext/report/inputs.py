"""Find harness outputs and rebuild their per-item records, per model and task.

A results path is an lm-eval `--output_path` folder (one sub-folder per model holding
`results_<stamp>.json` and `samples_<task>_<stamp>.jsonl`), an Inspect log folder, or a single
Inspect log (`.eval`/`.json`). Per model and task the newest output wins. Every number of the
report is recomputed from the records read here, never from the aggregates a harness printed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.metrics import BIASES, SETTINGS
from biasmonkey.tasks.response_bias.pairs import task_name

PREFIX = "biasmonkey_"
SUITES = ("response_bias", "yesno", "cognitive")
RESPONSE_BIAS_TASKS = frozenset(PREFIX + task_name(b, s) for b in BIASES for s in SETTINGS)
SAMPLES_FILE = re.compile(r"^samples_(biasmonkey_[a-z0-9_]+)_(\d{4}-\d\d-\d\dT[\d\-.]+)\.jsonl$")
RESULTS_FILE = re.compile(r"^results_(\d{4}-\d\d-\d\dT[\d\-.]+)\.json$")


def suite_of(task: str) -> str | None:
    """The suite of an lm-eval task name (biasmonkey_…), or None for any other task."""
    if task in RESPONSE_BIAS_TASKS:
        return "response_bias"
    for suite, prefix in (("yesno", "yesno_"), ("cognitive", "cognitive_")):
        if task.startswith(PREFIX + prefix):
            return suite
    return None


def _lm_eval_reader(suite: str) -> Callable[[Path], list]:
    if suite == "response_bias":
        from biasmonkey.harness_ext.lm_eval_tasks import records_from_samples_file
    elif suite == "yesno":
        from biasmonkey.harness_ext.lm_eval_yesno import records_from_samples_file
    else:
        from biasmonkey.harness_ext.lm_eval_cognitive import records_from_samples_file
    return records_from_samples_file


def _inspect_reader(suite: str) -> Callable[[Path], list]:
    if suite == "response_bias":
        from biasmonkey.harness_ext.inspect_tasks import records_from_eval_log
    elif suite == "yesno":
        from biasmonkey.harness_ext.inspect_yesno import records_from_eval_log
    else:
        from biasmonkey.harness_ext.inspect_cognitive import records_from_eval_log
    return records_from_eval_log


@dataclass(frozen=True)
class TaskOutput:
    """One task's newest output file for one model."""

    task: str  # the lm-eval task name, biasmonkey_…
    suite: str
    harness: str  # "lm-eval" or "inspect"
    path: Path
    stamp: str  # sortable creation time (newest wins)

    def read_records(self) -> list:
        reader = (_lm_eval_reader if self.harness == "lm-eval" else _inspect_reader)(self.suite)
        try:
            records = reader(self.path)
        except Exception as err:  # a truncated or corrupt file
            if str(self.path) in str(err):
                raise  # the reader's error already names the file (and line)
            raise ValueError(f"{self.path}: cannot read {self.harness} output of {self.task} ({type(err).__name__}: {err})") from err
        if not records:
            raise ValueError(f"{self.path}: no records for {self.task}")
        return records


@dataclass
class ModelResults:
    """Everything found for one model: its records per suite and task, and run metadata."""

    name: str  # the short name used in tables
    model: str  # the full model name or path the harness recorded
    sources: dict[str, TaskOutput] = field(default_factory=dict)
    records: dict[str, dict[str, list]] = field(default_factory=lambda: {s: {} for s in SUITES})
    config: dict[str, Any] = field(default_factory=dict)  # lm-eval's config block or Inspect's model info

    def tasks(self, suite: str) -> dict[str, list]:
        return self.records[suite]


# ---------------------------------------------------------------------------- lm-eval


def _model_of_results(results: Mapping[str, Any], folder: Path) -> tuple[str, dict[str, Any]]:
    config = dict(results.get("config") or {})
    args = config.get("model_args")
    pretrained = args.get("pretrained") if isinstance(args, dict) else None
    if isinstance(args, str):  # older lm-eval: "pretrained=...,dtype=..."
        pretrained = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv).get("pretrained")
    return str(results.get("model_name") or pretrained or folder.name), config


def lm_eval_outputs(root: Path) -> list[tuple[str, dict[str, Any], list[TaskOutput]]]:
    """(model, config, newest output per task) for each model folder under an lm-eval output path."""
    folders: dict[Path, dict[str, TaskOutput]] = {}
    for path in root.rglob("samples_biasmonkey_*.jsonl"):
        if (m := SAMPLES_FILE.match(path.name)) and (suite := suite_of(m.group(1))):
            newest = folders.setdefault(path.parent, {})
            out = TaskOutput(m.group(1), suite, "lm-eval", path, m.group(2))
            if m.group(1) not in newest or out.stamp > newest[m.group(1)].stamp:
                newest[m.group(1)] = out
    found = []
    for folder, outputs in sorted(folders.items()):
        results_files = sorted((p for p in folder.glob("results_*.json") if RESULTS_FILE.match(p.name)), key=lambda p: p.name)
        model, config = folder.name, {}
        if results_files:
            try:
                model, config = _model_of_results(json.loads(results_files[-1].read_text()), folder)
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
                raise ValueError(f"{results_files[-1]}: not a readable lm-eval results file ({err})") from err
        found.append((model, config, sorted(outputs.values(), key=lambda o: o.task)))
    return found


# ---------------------------------------------------------------------------- Inspect


INSPECT_JSON_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+')  # Inspect writes a JSON log's version first


def _is_inspect_json(path: Path) -> bool:
    with path.open("rb") as f:
        return bool(INSPECT_JSON_START.match(f.read(64)))


def _inspect_candidates(path: Path) -> list[Path]:
    """A given file, or the `.eval` files and the JSON files that start like an Inspect log under a
    folder (other JSON files, e.g. lm-eval results or an earlier report's tables, are not logs)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and (p.suffix == ".eval" or (p.suffix == ".json" and _is_inspect_json(p))))


def same_model_as_lm_eval(inspect_model: str) -> str:
    """Inspect's `hf/<path or hub id>` names the model lm-eval's `--model hf` calls `<path or hub id>`:
    drop the provider so that one model run through both harnesses is one model here."""
    return inspect_model.removeprefix("hf/") if inspect_model.startswith("hf/") else inspect_model


def inspect_outputs(path: Path) -> list[tuple[str, dict[str, Any], list[TaskOutput]]]:
    """(model, info, newest log per task) for each model with biasmonkey logs in a folder or file."""
    candidates = _inspect_candidates(path)
    if not candidates:
        return []
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as err:  # Inspect is an optional extra
        raise ValueError(f"{path}: reading Inspect logs needs inspect-ai (pip install 'biasmonkey[inspect]')") from err
    per_model: dict[str, dict[str, TaskOutput]] = {}
    info: dict[str, dict[str, Any]] = {}
    for log_path in candidates:
        try:
            header = read_eval_log(str(log_path), header_only=True)
        except Exception as err:
            raise ValueError(f"{log_path}: not a readable Inspect log ({type(err).__name__}: {err})") from err
        task = PREFIX + header.eval.task.removeprefix("biasmonkey/")
        if not header.eval.task.startswith("biasmonkey/") or not (suite := suite_of(task)):
            continue
        model = same_model_as_lm_eval(header.eval.model)
        newest = per_model.setdefault(model, {})
        out = TaskOutput(task, suite, "inspect", log_path, str(header.eval.created))
        if task not in newest or out.stamp > newest[task].stamp:
            newest[task] = out
        info.setdefault(model, {"model": header.eval.model, "harness": "inspect", "inspect_version": header.eval.packages.get("inspect_ai")})
    return [(model, info[model], sorted(outs.values(), key=lambda o: o.task)) for model, outs in sorted(per_model.items())]


# ---------------------------------------------------------------------------- discovery


def short_name(model: str) -> str:
    """A readable name: the last path component (hf/org/name, /models/name → name)."""
    return Path(model.rstrip("/")).name or model


def parse_names(pairs: Iterable[str]) -> dict[str, str]:
    """--name MODEL=NAME options → {MODEL: NAME}; MODEL is the full or the short model name."""
    names = {}
    for pair in pairs:
        model, sep, name = pair.partition("=")
        if not sep or not model or not name:
            raise ValueError(f"--name {pair!r}: expected MODEL=NAME")
        names[model] = name
    return names


def discover(paths: Sequence[str | Path], names: Mapping[str, str] | None = None) -> list[ModelResults]:
    """Every model's newest biasmonkey outputs under the given paths, records read, in name order.

    Errors name the path: a path that does not exist or holds no biasmonkey output, a file that
    cannot be read, the same task of one model found twice (in two harnesses or two folders)."""
    names = dict(names or {})
    models: dict[str, ModelResults] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ValueError(f"{path}: no such file or folder")
        found = ([] if path.is_file() else lm_eval_outputs(path)) + inspect_outputs(path)
        if not found:
            raise ValueError(
                f"{path}: no biasmonkey outputs (lm-eval samples_biasmonkey_*.jsonl written with --log_samples, "
                "or Inspect logs of biasmonkey/ tasks)"
            )
        for model, config, outputs in found:
            name = names.get(model) or names.get(short_name(model)) or short_name(model)
            entry = models.setdefault(name, ModelResults(name=name, model=model, config=config))
            if entry.model != model:
                raise ValueError(
                    f"{path}: models {entry.model!r} and {model!r} both have the short name {name!r}; "
                    f"tell them apart with --name {model}=OTHER_NAME"
                )
            for out in outputs:
                if (prev := entry.sources.get(out.task)) is not None:
                    raise ValueError(
                        f"{out.task} of model {model!r} found twice: {prev.path} ({prev.harness}) and {out.path} "
                        f"({out.harness}); give one of them"
                    )
                entry.sources[out.task] = out
    from rich.progress import track

    outputs = [(entry, task, out) for entry in models.values() for task, out in sorted(entry.sources.items())]
    for entry, task, out in track(outputs, description="Reading per-item records", transient=True):
        entry.records[out.suite][task] = out.read_records()
    return [models[name] for name in sorted(models)]
