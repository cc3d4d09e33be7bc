"""Leaderboard exports per model: an lm-eval results file and Hugging Face `.eval_results/*.yaml`.

`<model>/results_<timestamp>.json` is named and shaped as lm-eval 0.4.13 writes its results
(`lm_eval/loggers/evaluation_tracker.py`: `results_{datetime.now().isoformat()}` with `:` → `-`;
the keys of `lm_eval/result_schema.py` `EvalResults`, in lm-eval's order), so lm-eval's readers
(`lm_eval.utils.get_results_filenames` / `get_latest_filename` / `make_table`, and the `datasets`
json loader its Hub card uses) take it as one of lm-eval's own:

- `results[task]`: `name`, `alias`, `sample_len` and, per metric the task reports in lm-eval,
  `<metric>,none` and `<metric>_stderr,none`, **recomputed from the per-item records** with the
  family's own metric table under the run's options (the stderr of a mean metric is sd/√n, as
  lm-eval's `mean` aggregation gives; other stderrs are "N/A"). NaN, an undefined statistic, is
  written as "N/A". Added by the report: the Holm and Benjamini–Hochberg adjusted p-values of the
  report's test (`delta_p_holm`, `delta_p_bh`, `score_p_holm`, `score_p_bh`) and the value
  published on the Hub (`abs_delta`, `abs_bias`, `abs_score`; see `hub`). A family's
  report module may add entries of its own (`leaderboard_entries`): with response-bias results,
  `results["biasmonkey_human_likeness"]` holds the TACL Table 3 score over the testable biases
  ("N/A" where none is) and `untestable`, the biases whose t-test is undefined (not an lm-eval
  task: it has no `configs` entry).
- `configs`, `versions`, `n-shot`, `n-samples[task]["original"]`, `group_subtasks` (restricted to
  the exported tasks), `config`, `git_hash`, `pretty_env_info`, the version, tokenizer and chat
  keys and `task_hashes` are what the source lm-eval run recorded (its `results_<stamp>.json`,
  the newest run where a model has several). For a task run through Inspect they are filled from
  the Inspect log where it has the information (model, task arguments, dataset size, limit, git
  revision, run time; `task_hashes`: the sha256 of the log file; `configs[task]`: task name,
  metric list, options) and otherwise are placeholders of lm-eval's type: "N/A" for text, None
  for a seed, a version or a chat field, 0 for `bootstrap_iters` (nothing is bootstrapped), no
  tokenizer keys (lm-eval too writes them only for models with a tokenizer).
- `date` is the earliest start (UNIX time) of the source runs, `total_evaluation_time_seconds`
  the sum of their run times, as a string; `model_name` the model's full name and
  `model_name_sanitized` lm-eval's sanitisation of it. Provenance (report name, every task's
  source file and harness, its prompts cut to fit the model's context where `biasmonkey run
  --allow-truncation` cut some, the Hub dataset id) is in `config["biasmonkey"]`.

`<model>/.eval_results/<task>.yaml` follows the Hub's format (https://huggingface.co/docs/hub/eval-results):
a list with one entry `{dataset: {id, task_id}, value, date, source: {url, name}, notes}`, built with
huggingface_hub's `EvalResultEntry`; `dataset.id` is the Benchmark dataset (`--hub-dataset`, or as
configured: `hub.configured_dataset`), `task_id` one of the `tasks[].id` of `configs/hub/eval.yaml`,
`value` the task's `abs_*` metric (lower = less biased), `source.url` the Benchmark dataset's page,
`notes` its definition and direction, the run setup, the prompts cut to fit the model's context
(where `--allow-truncation` cut some) and the model's Hub id where the run names it.
`biasmonkey report --push-to-hub ORG/MODEL` uploads these files (`hub.push_eval_results`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from biasmonkey.harness_ext.app.report.families import call, family_reports
from biasmonkey.harness_ext.app.report.hub import (
    HUB_METRIC,
    PLACEHOLDER_DATASET,
    direction_note,
    eval_result,
    hub_tasks,
    model_hub_id,
    model_note,
)
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.logs import CONNECTION_SETTINGS, RESULTS_FILE, TaskOutput, describe
from biasmonkey.tasks.atomic_write import make_folder, write_text
from biasmonkey.tasks.contract import LM_EVAL_PREFIX, base_task_name, mean_stderr, reported
from biasmonkey.tasks.families import FAMILIES

VERSION = 1.0  # the tasks' `metadata.version` in lm-eval
# lm-eval's top-level keys in the order it writes them (tokenizer keys only for models with a tokenizer).
TOP_LEVEL = (
    "results",
    "group_subtasks",
    "configs",
    "versions",
    "n-shot",
    "higher_is_better",
    "n-samples",
    "config",
    "git_hash",
    "date",
    "pretty_env_info",
    "transformers_version",
    "lm_eval_version",
    "upper_git_hash",
)
TOKENIZER_KEYS = ("tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id", "max_length")
TRACKER_KEYS = (
    "model_source",
    "model_name",
    "model_name_sanitized",
    "system_instruction",
    "system_instruction_sha",
    "fewshot_as_multiturn",
    "chat_template",
    "chat_template_sha",
)


def sanitize_model_name(name: str) -> str:
    """lm-eval's folder name for a model: each run of `"<>:/|\\?*[]` becomes `__`."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def results_file_name(now: datetime) -> str:
    """`results_<timestamp>.json` with lm-eval's timestamp: local ISO time, `:` replaced by `-`."""
    return f"results_{now.isoformat().replace(':', '-')}.json"


def _number(value: Any) -> Any:
    """JSON-safe: NaN or ±inf (an undefined statistic) becomes lm-eval's "N/A"; numpy scalars become Python."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else "N/A"
    return value


def _clean(value: Any) -> Any:
    """A copied structure with every non-finite float as "N/A" (strict JSON)."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return _number(value)


# ---------------------------------------------------------------------------- source runs


@dataclass
class SourceRun:
    """What the harness recorded about the run that produced one task's output."""

    harness: str  # "lm-eval" or "inspect"
    path: Path  # the lm-eval results file (may not exist) or the Inspect log
    results: dict[str, Any] = field(default_factory=dict)  # lm-eval's results file
    header: Any = None  # Inspect's log header

    @property
    def date(self) -> float | None:
        """The run's start as UNIX time."""
        if self.harness == "lm-eval":
            value = self.results.get("date")
            return float(value) if isinstance(value, (int, float)) else None
        return _timestamp(self.header.eval.created)

    @property
    def seconds(self) -> float | None:
        if self.harness == "lm-eval":
            try:
                return float(self.results["total_evaluation_time_seconds"])
            except (KeyError, TypeError, ValueError):
                return None
        started, completed = _timestamp(self.header.stats.started_at), _timestamp(self.header.stats.completed_at)
        return None if started is None or completed is None else completed - started

    def task_options(self, task: str) -> tuple[dict[str, Any], str]:
        """The task's option values as the run received them, and the harness they are for."""
        if self.harness == "lm-eval":
            config = (self.results.get("configs") or {}).get(task) or {}
            return dict(config.get("metadata") or {}), "lm_eval"
        return dict(self.header.eval.task_args or {}), "inspect"


def _timestamp(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _lm_eval_results_path(out: TaskOutput) -> Path:
    """The results file written with a samples file (same stamp; never another run's, so may not exist)."""
    return out.path.parent / f"results_{out.stamp}.json"


def source_runs(m: ModelResults) -> dict[str, SourceRun]:
    """{task: its source run} of one model (each file read once)."""
    cache: dict[Path, SourceRun] = {}
    runs = {}
    for task, out in m.sources.items():
        path = _lm_eval_results_path(out) if out.harness == "lm-eval" else out.path
        if path not in cache:
            if out.harness == "lm-eval":
                try:
                    results = json.loads(path.read_text()) if path.is_file() else {}
                except (json.JSONDecodeError, UnicodeDecodeError) as err:
                    raise ValueError(f"{path}: not a readable lm-eval results file ({err})") from err
                cache[path] = SourceRun("lm-eval", path, results=results)
            else:
                from inspect_ai.log import read_eval_log

                cache[path] = SourceRun("inspect", path, header=read_eval_log(str(path), header_only=True))
        runs[task] = cache[path]
    return runs


# ---------------------------------------------------------------------------- per task


def _options(family: Any, run: SourceRun, task: str) -> Any:
    values, harness = run.task_options(task)
    usable = {f.name for f in family.options_type.option_fields(harness)}
    try:
        return family.options_type.from_mapping({k: v for k, v in values.items() if k in usable}, harness)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{run.path}: the run options of {task} are not ones this biasmonkey accepts ({err}); rerun the task "
            "with this biasmonkey, or report it with the biasmonkey that ran it"
        ) from err


def _table_row(tables: Mapping[str, pd.DataFrame], name: str, **keys: Any) -> dict[str, Any]:
    table = tables.get(name)
    if table is None or not len(table):
        return {}
    mask = np.ones(len(table), dtype=bool)
    for column, value in keys.items():
        if column not in table.columns:
            return {}
        mask &= (table[column] == value).to_numpy()
    rows = table[mask].to_dict("records")
    return rows[0] if rows else {}


@dataclass
class TaskExport:
    """One task of one model in lm-eval's terms."""

    suite: str
    entry: dict[str, Any]  # results[task]
    better: dict[str, bool]  # higher_is_better[task]
    n: int
    options: Any


def task_export(m: ModelResults, task: str, run: SourceRun, tables: Mapping[str, pd.DataFrame]) -> TaskExport:
    """Every metric the task reports in lm-eval, recomputed from the records, plus the report's additions."""
    suite = m.sources[task].suite
    family = FAMILIES[suite]
    fixed = dict(family.tasks[base_task_name(task) or ""])
    options = _options(family, run, task)
    records = m.records[suite][task]
    entry: dict[str, Any] = {"name": task, "alias": task, "sample_len": len(records)}
    better: dict[str, bool] = {}
    values: dict[str, Any] = {}
    for metric in reported(family, options, "lm_eval", fixed):
        per_record = [v for v in map(metric.value, records) if v is not None]
        stderr = math.nan
        if metric.aggregate is None:  # lm-eval's `mean`, with its stderr
            values[metric.name] = metric.compute(records)
            stderr = mean_stderr(per_record)
        else:  # as lm-eval calls the aggregation (a count stays an int)
            values[metric.name] = metric.aggregate(per_record)
        entry[f"{metric.name},none"] = _number(values[metric.name])
        entry[f"{metric.name}_stderr,none"] = _number(stderr)
        better[metric.name] = metric.higher_is_better
    extra: dict[str, tuple[Any, bool]] = {}
    if p_metric := family.adjusted_p:  # from the family's report table, the row of this task
        keys = {"model": m.name, **{k: fixed[k] for k in ("bias", "setting") if k in fixed}}
        row = _table_row(tables, suite, **keys)
        for suffix in ("holm", "bh"):
            extra[f"{p_metric}_{suffix}"] = (row.get(f"p_{suffix}", math.nan), better.get(p_metric, True))
    signed = values.get(family.signed_metric, math.nan)
    extra[family.hub_metric] = (abs(signed) if isinstance(signed, (int, float)) else math.nan, False)
    for name, (value, higher) in extra.items():
        entry[f"{name},none"] = _number(value)
        entry[f"{name}_stderr,none"] = "N/A"
        better[name] = higher
    return TaskExport(suite, entry, better, len(records), options)


def _inspect_config(task: str, export: TaskExport, run: SourceRun) -> dict[str, Any]:
    """`configs[task]` for a task run through Inspect: what lm-eval's task config would say."""
    family = FAMILIES[export.suite]
    metrics = reported(family, export.options, "lm_eval", dict(family.tasks[base_task_name(task) or ""]))
    return {
        "task": task,
        "output_type": "generate_until",  # Inspect's solvers generate (exact mode reads the answer's logprobs)
        "num_fewshot": 0,
        "metric_list": [
            {
                "metric": m.name,
                "aggregation": "mean" if m.aggregate is None else m.name,
                "higher_is_better": m.higher_is_better,
            }
            for m in metrics
        ],
        "metadata": {
            "version": VERSION,
            "harness": "inspect",
            "inspect_task": run.header.eval.task,
            **(run.header.eval.task_args or {}),
        },
    }


# ---------------------------------------------------------------------------- per model


def _placeholder_config(model: str) -> dict[str, Any]:
    """lm-eval's `config` keys with placeholders of their types (no run recorded them)."""
    return {
        "model": "N/A",
        "model_args": {"pretrained": model},
        "batch_size": "N/A",
        "batch_sizes": [],
        "device": "N/A",
        "use_cache": None,
        "limit": None,
        "bootstrap_iters": 0,  # nothing is bootstrapped
        "gen_kwargs": {},
        "random_seed": None,
        "numpy_seed": None,
        "torch_seed": None,
        "fewshot_seed": None,
    }


def _inspect_model_config(run: SourceRun) -> dict[str, Any]:
    """`config` from an Inspect log: the provider as lm-eval's model type, what the log knows, placeholders else."""
    ev = run.header.eval
    provider = ev.model.split("/", 1)[0]
    limit = ev.config.limit
    args = ev.model_args or {}
    generate = run.header.plan.config.model_dump(exclude_none=True) if run.header.plan else {}
    config = _placeholder_config(ev.model)
    config.update(
        model=provider,
        model_args={"model": ev.model, **args},
        # what lm-eval's hf backend adds (its model_num_parameters is not known here)
        model_dtype=f"torch.{args['dtype']}" if args.get("dtype") else "N/A",
        model_revision=str(args.get("revision") or ("main" if provider == "hf" else "N/A")),
        model_sha="",
        device=str(args.get("device", "N/A")),
        limit=float(limit) if isinstance(limit, int) else None,
        gen_kwargs={k: v for k, v in generate.items() if k not in CONNECTION_SETTINGS},
    )
    return config


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def model_exports(
    m: ModelResults, tables: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, SourceRun], dict[str, TaskExport]]:
    """Every task's source run and export of one model."""
    runs = source_runs(m)
    return runs, {task: task_export(m, task, runs[task], tables) for task in sorted(m.sources)}


def results_json(
    m: ModelResults,
    tables: Mapping[str, pd.DataFrame],
    hub_dataset: str = PLACEHOLDER_DATASET,
    exported: tuple[dict[str, SourceRun], dict[str, TaskExport]] | None = None,
) -> dict[str, Any]:
    """One model's numbers as an lm-eval 0.4.13 results file (keys in lm-eval's order)."""
    runs, exports = exported or model_exports(m, tables)
    lm_runs = sorted(
        {id(r): r for r in runs.values() if r.harness == "lm-eval" and r.results}.values(), key=lambda r: r.path.name
    )
    primary = lm_runs[-1].results if lm_runs else {}
    inspect_runs = [r for r in runs.values() if r.harness == "inspect"]

    results = {task: e.entry for task, e in exports.items()}
    better = {task: e.better for task, e in exports.items()}
    configs, versions, n_shot, n_samples, hashes = {}, {}, {}, {}, {}
    for task, e in exports.items():
        run = runs[task]
        if run.harness == "lm-eval":
            configs[task] = _clean((run.results.get("configs") or {}).get(task) or {"task": task})
            versions[task] = _clean((run.results.get("versions") or {}).get(task, VERSION))
            n_shot[task] = (run.results.get("n-shot") or {}).get(task, 0)
            original = ((run.results.get("n-samples") or {}).get(task) or {}).get("original", e.n)
            hashes[task] = (run.results.get("task_hashes") or {}).get(task, "")
        else:
            configs[task] = _clean(_inspect_config(task, e, run))
            versions[task] = VERSION
            n_shot[task] = 0
            original = run.header.eval.dataset.samples or e.n
            hashes[task] = _file_sha256(run.path)
        n_samples[task] = {"original": int(original), "effective": e.n}
    for module in family_reports([m]).values():  # the families' own entries (e.g. the human-likeness score)
        for name, entry in call(module, "leaderboard_entries", m.name, tables, default={}).items():
            results[name] = {key: _number(value) for key, value in entry["results"].items()}
            better[name], n_samples[name] = entry["higher_is_better"], entry["n_samples"]
            versions[name], n_shot[name] = VERSION, 0
    groups: dict[str, list[str]] = {}
    for run in lm_runs:
        for group, subtasks in (run.results.get("group_subtasks") or {}).items():
            kept = [t for t in subtasks if t in exports]
            if kept:
                groups[group] = sorted({*groups.get(group, []), *kept})

    if primary:
        config = dict(primary.get("config") or _placeholder_config(m.model))
    else:
        config = _inspect_model_config(inspect_runs[0]) if inspect_runs else _placeholder_config(m.model)
    config["biasmonkey"] = {
        "report_name": m.name,
        "hub_dataset": hub_dataset,
        "recomputed_from": "per-item records",
        "sources": {
            task: {"harness": out.harness, "path": str(out.path), "settings": describe(out.settings)}
            | ({"truncation": asdict(cuts)} if (cuts := out.truncation) else {})
            for task, out in sorted(m.sources.items())
        },
    }
    dates = [d for r in runs.values() if (d := r.date) is not None]
    seconds = [s for r in {id(r): r for r in runs.values()}.values() if (s := r.seconds) is not None]
    revision = next((r.header.eval.revision for r in inspect_runs if r.header.eval.revision), None)
    out: dict[str, Any] = {
        "results": results,
        "group_subtasks": groups,
        "configs": configs,
        "versions": versions,
        "n-shot": n_shot,
        "higher_is_better": better,
        "n-samples": n_samples,
        "config": _clean(config),
        "git_hash": primary.get("git_hash") if primary else (revision.commit if revision else None),
        "date": min(dates) if dates else time.time(),
        "pretty_env_info": primary.get("pretty_env_info", "N/A"),
        "transformers_version": primary.get("transformers_version", "N/A"),
        "lm_eval_version": primary.get("lm_eval_version", "N/A"),
        "upper_git_hash": primary.get("upper_git_hash"),
    }
    out.update({key: primary[key] for key in TOKENIZER_KEYS if key in primary})
    out["task_hashes"] = hashes
    tracker = {key: primary.get(key) for key in TRACKER_KEYS}
    if not primary:
        tracker["model_source"] = config["model"]
    tracker["model_name"] = m.model
    tracker["model_name_sanitized"] = sanitize_model_name(m.model)
    out.update(tracker)
    out["total_evaluation_time_seconds"] = str(sum(seconds)) if seconds else "N/A"
    return out


# ---------------------------------------------------------------------------- Hub entries


def _iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _setup(run: SourceRun, export: TaskExport) -> str:
    options = export.options.non_defaults()
    mode = getattr(export.options, "mode", None)
    parts = [run.harness] + ([f"mode={mode}"] if mode is not None else [])
    parts += [f"{k}={v}" for k, v in sorted(options.items()) if k != "mode" and k != "data_path"]
    return ", ".join(parts) + f", n={export.n}"


def eval_results_entries(
    m: ModelResults,
    tables: Mapping[str, pd.DataFrame],
    hub_dataset: str = PLACEHOLDER_DATASET,
    exported: tuple[dict[str, SourceRun], dict[str, TaskExport]] | None = None,
    source_url: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """{task: [entry]} in the Hub's `.eval_results` format (built with huggingface_hub's `EvalResultEntry`,
    `hub.eval_result`): the task's `abs_*` value (lower = less biased), the run's date, `source.url`
    (`source_url`, default the Benchmark dataset's page) and `notes`: the value's definition and
    direction, the run setup and, when the run names it, the model's Hub id (`hub.model_hub_id`)."""
    runs, exports = exported or model_exports(m, tables)
    model = model_note(model_hub_id(m.model, m.config), m.model)
    entries = {}
    for task, export in exports.items():
        if task not in hub_tasks():  # not one of the Benchmark's tasks (a wrapped task): the results file only
            continue
        value = export.entry[f"{HUB_METRIC[export.suite]},none"]
        if not isinstance(value, (int, float)):
            continue  # undefined (no record with a value): nothing to publish
        notes = f"{direction_note(task)}; {_setup(runs[task], export)}" + (f"; {model}" if model else "")
        if cuts := m.sources[task].truncation:
            notes += f"; {cuts.sentence()} (--allow-truncation)"
        date = _iso(runs[task].date)
        entries[task] = eval_result(hub_dataset, task, round(float(value), 6), date, notes, source_url)
    return entries


# ---------------------------------------------------------------------------- files


def leaderboard_text(written: list[Path], hub_dataset: str) -> list[str]:
    """The report's "Leaderboard files" section."""
    n_results = sum(p.suffix == ".json" for p in written)
    text = [
        "Per model (per model and setting where one model ran a suite with several settings; never mixed), "
        "`leaderboard/<model>/results_<timestamp>.json` is an lm-eval results file (lm-eval's file name and "
        "keys, so lm-eval's readers and the tools built on them load it; every metric recomputed from the records, plus "
        "Holm/BH adjusted p-values) and `leaderboard/<model>/.eval_results/<task>.yaml` holds the task's Hugging Face Hub "
        "evaluation result. The Hub value is a magnitude where lower = less biased: |Δ| in percentage points for a "
        "response-bias task (on a bias task humans do shift, so a low |Δb| is not more human-like), |bias| for a yes-no "
        "task, |mean bias score| for a cognitive task; each entry's `notes` says so. "
        f"{n_results} results file(s), {len(written) - n_results} Hub entries; `dataset.id`: `{hub_dataset}`."
    ]
    if hub_dataset == PLACEHOLDER_DATASET:
        text.append(
            f"`{PLACEHOLDER_DATASET}` is a placeholder: register the Benchmark dataset once (configs/hub/README.md) and "
            "rerun `biasmonkey report … --hub-dataset OWNER/NAME` (or set BIASMONKEY_HUB_DATASET, or `dataset:` in "
            "configs/hub/publish.yaml) before uploading the `.eval_results` files; `--push-to-hub` refuses until then."
        )
    return text


def _stale(folder: Path) -> list[Path]:
    """Files an earlier report wrote into a model's folder."""
    old = [p for p in folder.glob("results*.json") if p.name == "results.json" or RESULTS_FILE.match(p.name)]
    return old + list((folder / ".eval_results").glob(f"{LM_EVAL_PREFIX}*.yaml"))


def write_leaderboard(
    models: list[ModelResults],
    tables: Mapping[str, pd.DataFrame],
    out_dir: Path,
    hub_dataset: str = PLACEHOLDER_DATASET,
    now: datetime | None = None,
) -> list[Path]:
    """Write `<out_dir>/<model>/results_<timestamp>.json` and `<out_dir>/<model>/.eval_results/<task>.yaml`
    (replacing what an earlier report wrote there), one folder per report entry (a model, or a model and
    the settings that tell it from its other entries: `ModelResults.slug`); return the written paths."""
    name = results_file_name(now or datetime.now())
    written = []
    for m in models:
        folder = out_dir / m.slug
        make_folder(folder)
        for path in _stale(folder):
            path.unlink()
        exported = model_exports(m, tables)
        path = folder / name
        data = results_json(m, tables, hub_dataset, exported)
        write_text(path, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False, default=str))
        written.append(path)
        for task, entry in eval_results_entries(m, tables, hub_dataset, exported).items():
            yaml_path = folder / ".eval_results" / f"{task}.yaml"
            make_folder(yaml_path.parent)
            write_text(yaml_path, yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=1000))
            written.append(yaml_path)
    return written
