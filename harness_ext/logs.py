"""Find harness outputs of biasmonkey tasks and read them into the families' records.

One scanner for every reader (summary, report, comparisons). A results path is an lm-eval
`--output_path` folder (one sub-folder per model holding `results_<stamp>.json` and
`samples_<task>_<stamp>.jsonl`), an Inspect log folder, or a single Inspect log (`.eval`/`.json`).
Reading lm-eval output imports neither harness; Inspect's log reader is imported only when an
Inspect log is found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.tasks.contract import Family, base_task_name
from biasmonkey.tasks.families import family_of

SAMPLES_FILE = re.compile(r"^samples_(biasmonkey_[a-z0-9_]+)_(\d{4}-\d\d-\d\dT[\d\-.]+)\.jsonl$")
RESULTS_FILE = re.compile(r"^results_(\d{4}-\d\d-\d\dT[\d\-.]+)\.json$")
INSPECT_JSON_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+')  # Inspect writes a JSON log's version first


@dataclass(frozen=True)
class TaskOutput:
    """One task's output file for one model."""

    task: str  # the task name without prefix, e.g. "acquiescence"
    family: Family = field(repr=False)
    harness: str  # "lm-eval" or "inspect"
    path: Path
    stamp: str  # sortable creation time (newest wins)
    model: str  # the model name or path the harness recorded
    config: Mapping[str, Any] = field(
        default_factory=dict, repr=False
    )  # lm-eval's config block or Inspect's model info

    @property
    def suite(self) -> str:
        return self.family.name

    def read_records(self) -> list:
        """The family's records of this output; errors name the file."""
        try:
            if self.harness == "lm-eval":
                records = records_from_samples_file(self.path, self.family)
            else:
                records = records_from_eval_log(self.path, self.family)
        except Exception as err:  # a truncated or corrupt file
            if str(self.path) in str(err):
                raise  # the reader's error already names the file (and line)
            raise ValueError(
                f"{self.path}: cannot read {self.harness} output of {self.task} ({type(err).__name__}: {err})"
            ) from err
        if not records:
            raise ValueError(f"{self.path}: no records for {self.task}")
        return records


# ---------------------------------------------------------------------------- readers


def read_jsonl_records(path: str | Path, to_record: Callable[[dict, list], Any], item: str) -> list:
    """Records of every document in an lm-eval --log_samples JSONL file; a line that is not one
    of the family's samples is an error naming the file and line."""
    records = []
    with Path(path).open() as f:
        for line_no, line in enumerate(f, 1):
            sample = json.loads(line)
            try:
                records.append(to_record(sample["doc"], sample["filtered_resps"]))
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"{path}, line {line_no}: not a biasmonkey {item} sample ({err})") from err
    return records


def records_from_samples_file(path: str | Path, family: Family | None = None) -> list:
    """The records of an lm-eval --log_samples file (family: from the file name when not given)."""
    if family is None:
        m = SAMPLES_FILE.match(Path(path).name)
        family = family_of(m.group(1)) if m else None
        if family is None:
            raise ValueError(
                f"{path}: not the samples file of a biasmonkey task (samples_biasmonkey_<task>_<time>.jsonl)"
            )
    return read_jsonl_records(path, family.from_lm_eval, family.item)


def records_from_eval_log(path: str | Path, family: Family | None = None) -> list:
    """The records of a finished Inspect log (family: from the log's task name when not given):
    from the epoch-reduced scores as the task's metrics saw them, or per epoch for a family that
    reads its logs so (the cognitive tasks keep each epoch's answer texts)."""
    from biasmonkey.harness_ext.inspect.logs import logged_scores, read_eval_log

    if family is None:
        task = read_eval_log(str(path), header_only=True).eval.task
        family = family_of(task)
        if family is None:
            raise ValueError(f"{path}: the log of {task!r}, not of a biasmonkey task")
    return [family.from_inspect(s) for s in logged_scores(path, family.scorer, family.inspect_per_epoch)]


# ---------------------------------------------------------------------------- scanning


def _model_of_results(results: Mapping[str, Any], folder: Path) -> tuple[str, dict[str, Any]]:
    config = dict(results.get("config") or {})
    args = config.get("model_args")
    pretrained = args.get("pretrained") if isinstance(args, dict) else None
    if isinstance(args, str):  # "pretrained=...,dtype=..."
        pretrained = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv).get("pretrained")
    return str(results.get("model_name") or pretrained or folder.name), config


def _reported(task: str) -> Family | None:
    """The family of a task that summaries and reports list (not a variant outside its suite)."""
    family = family_of(task)
    return None if family is None or base_task_name(task) in family.variants else family


def lm_eval_outputs(root: Path) -> list[TaskOutput]:
    """Every biasmonkey samples file under an lm-eval output path, with its folder's model."""
    models: dict[Path, tuple[str, dict[str, Any]]] = {}
    found = []
    for path in sorted(root.rglob("samples_biasmonkey_*.jsonl")):
        m = SAMPLES_FILE.match(path.name)
        family = _reported(m.group(1)) if m else None
        if m is None or family is None:
            continue
        if path.parent not in models:
            models[path.parent] = _folder_model(path.parent)
        model, config = models[path.parent]
        found.append(TaskOutput(base_task_name(m.group(1)) or "", family, "lm-eval", path, m.group(2), model, config))
    return found


def _folder_model(folder: Path) -> tuple[str, dict[str, Any]]:
    """The model of an lm-eval model folder, from its newest results file (else the folder's name)."""
    results_files = sorted(
        (p for p in folder.glob("results_*.json") if RESULTS_FILE.match(p.name)), key=lambda p: p.name
    )
    if not results_files:
        return folder.name, {}
    try:
        return _model_of_results(json.loads(results_files[-1].read_text()), folder)
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        raise ValueError(f"{results_files[-1]}: not a readable lm-eval results file ({err})") from err


def _is_inspect_json(path: Path) -> bool:
    with path.open("rb") as f:
        return bool(INSPECT_JSON_START.match(f.read(64)))


def inspect_candidates(path: Path) -> list[Path]:
    """A given file, or the `.eval` files and the JSON files that start like an Inspect log under a
    folder (other JSON files, e.g. lm-eval results or an earlier report's tables, are not logs)."""
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and (p.suffix == ".eval" or (p.suffix == ".json" and _is_inspect_json(p)))
    )


def same_model_as_lm_eval(inspect_model: str) -> str:
    """Inspect's `hf/<path or hub id>` names the model lm-eval's `--model hf` calls `<path or hub id>`:
    drop the provider so that one model run through both harnesses is one model."""
    return inspect_model.removeprefix("hf/")


def inspect_outputs(path: Path) -> list[TaskOutput]:
    """Every log of a biasmonkey task in an Inspect log folder or file."""
    candidates = inspect_candidates(path)
    if not candidates:
        return []
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as err:  # Inspect is an optional extra
        raise ValueError(f"{path}: reading Inspect logs needs inspect-ai (pip install 'biasmonkey[inspect]')") from err
    found = []
    for log_path in candidates:
        try:
            header = read_eval_log(str(log_path), header_only=True)
        except Exception as err:
            raise ValueError(f"{log_path}: not a readable Inspect log ({type(err).__name__}: {err})") from err
        family = _reported(header.eval.task) if header.eval.task.startswith("biasmonkey/") else None
        if family is None:
            continue
        info = {
            "model": header.eval.model,
            "harness": "inspect",
            "inspect_version": header.eval.packages.get("inspect_ai"),
        }
        found.append(
            TaskOutput(
                base_task_name(header.eval.task) or "",
                family,
                "inspect",
                log_path,
                str(header.eval.created),
                same_model_as_lm_eval(header.eval.model),
                info,
            )
        )
    return found


def scan(path: str | Path) -> list[TaskOutput]:
    """Every biasmonkey output under a results path (lm-eval folders and Inspect logs)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    return ([] if path.is_file() else lm_eval_outputs(path)) + inspect_outputs(path)


def run_of(out: TaskOutput) -> tuple[str, str, str]:
    """What makes one run of a model: the harness, and for lm-eval the model's output folder."""
    return (out.harness, str(out.path.parent) if out.harness == "lm-eval" else "", out.model)


def newest(outputs: Iterable[TaskOutput], key: Callable[[TaskOutput], Any] = run_of) -> list[TaskOutput]:
    """The newest output of each task per `key` (default: per harness, model and lm-eval folder)."""
    best: dict[tuple[Any, str], TaskOutput] = {}
    for out in outputs:
        k = (key(out), out.task)
        if k not in best or out.stamp > best[k].stamp:
            best[k] = out
    return sorted(best.values(), key=lambda o: (run_of(o), o.task))
