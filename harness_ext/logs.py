"""Find harness outputs of biasmonkey tasks and read them into the families' records.

One scanner for every reader (summary, report, comparisons). A results path is an lm-eval
`--output_path` folder (one sub-folder per model holding `results_<stamp>.json` and
`samples_<task>_<stamp>.jsonl`), an Inspect log folder, or a single Inspect log (`.eval`/`.json`).
Reading lm-eval output imports neither harness; Inspect's log reader is imported only when an
Inspect log is found.

Every output carries its run identity (`Run`): the model and the settings that change its numbers,
so that no reader mixes two models or two settings of one model. The settings of an output:

- the task's run options as its family reads them (`--metadata` in lm-eval, `-T` in Inspect) that
  differ from their defaults, except `data_path` (where the checked data files lie);
- lm-eval: an input that differs between outputs of one folder, model and settings: the weights
  (another model folder of the same name, or weights rewritten in place) or an input file's content
  (the cognitive `--data-path`), as `biasmonkey run` records them beside the results
  (`harness_ext/run_inputs.py`; `weights=<digest>`, `data_path=sha256:<digest>`);
- the model arguments except the model itself and those about where and how fast it runs
  (`NEUTRAL_MODEL_ARGS`);
- lm-eval: `--limit`, a `--samples` selection (`samples=<picked> of <documents>`), `--gen_kwargs`, `--num_fewshot`, `--apply_chat_template`,
  `--system_instruction`, `--fewshot_as_multiturn` and seeds other than lm-eval's defaults, read
  from the `results_<stamp>.json` written with the samples file (same stamp; a samples file without
  one has the model of its folder and the settings "settings=unknown");
- Inspect: the model's and the eval's generate config (temperature, seed, …; not the connection
  settings; its `system_message` is lm-eval's `system_instruction`), `--limit`, `--sample-id`,
  `--sample-shuffle`, `--epochs` above 1 (not its reducer: every reader takes the mean over epochs,
  `harness_ext/inspect/logs.py`) and the task's version (`task_version`) where it is an earlier one
  than the installed task's (a later one is refused: this biasmonkey cannot read it);
- the prompt format, in both: `apply_chat_template` (lm-eval's flag; in Inspect, a chat template
  applied by the provider: the default of `hf/` and `vllm/` unless the `chat_template` model argument
  passes the prompt through, and always for chat APIs), so that a raw-prompt run and a chat-template
  run of one model are two settings in every summary, report and export.

Not settings: the harness and the lm-eval backend (`hf`, `biasmonkey-hf`, …; they give the same
numbers), batch size, device, concurrency, output and cache paths.

Every reader checks what it reads against what the run said it wrote, so that no number stands on
other items than the run's: an lm-eval samples file holds each doc_id once and, beside its results
file, as many documents as that file's `n-samples` says (doc_ids 0…n−1 unless lm-eval's `--samples`
picked them); an Inspect log holds each (sample, epoch) once and as many completed samples as its
header says, none of them failed (`harness_ext/inspect/logs.py`). Anything else is an error naming the file, the task and
the counts. Prompts `biasmonkey run --allow-truncation` cut to fit the model's context are recorded
beside the samples (`harness_ext/truncation.py`) and read with them (`TaskOutput.truncation`), so that
every output states them. The lm-eval check is `tasks/samples_check.py`, shared with the tasks that read an earlier
run's samples (the cognitive two-step protocol).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.run_inputs import DEFAULT as DEFAULT_INPUT
from biasmonkey.harness_ext.run_inputs import UNKNOWN as UNKNOWN_INPUT
from biasmonkey.harness_ext.run_inputs import default_input_key, distinguish, recorded_inputs
from biasmonkey.harness_ext.truncation import TaskCuts, truncation_of
from biasmonkey.tasks.contract import INSPECT_PREFIX, LM_EVAL_PREFIX, Family, base_task_name, lm_eval_task_name
from biasmonkey.tasks.families import family_module, family_of
from biasmonkey.tasks.samples_check import REWRITTEN, SAMPLES_FILE, LoggedDoc, check_samples, read_results

RESULTS_FILE = re.compile(r"^results_(\d{4}-\d\d-\d\dT[\d\-.]+)\.json$")
INSPECT_JSON_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+')  # Inspect writes a JSON log's version first
# Model arguments that name the model, say where and how fast it runs, or hold a key: not settings.
NEUTRAL_MODEL_ARGS = frozenset(
    {
        "pretrained",
        "model",
        "device",
        "device_map",
        "batch_size",
        "max_batch_size",
        "parallelize",
        "num_concurrent",
        "base_url",
        "max_retries",
        "timeout",
        "trust_remote_code",
        "api_key",  # a secret: never a label, a table cell or a leaderboard field
        "api_key_env",
    }
)
LM_EVAL_SEEDS = {"random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234}  # its defaults
# Inspect GenerateConfig fields that are about connections, not generation.
CONNECTION_SETTINGS = frozenset(
    {
        "max_retries",
        "timeout",
        "attempt_timeout",
        "stream_idle_timeout",
        "max_connections",
        "adaptive_connections",
        "batch",
        "cache",
    }
)

# Inspect model arguments that choose the prompt format: read as `apply_chat_template` (inspect_prompt_format).
PROMPT_FORMAT_ARGS = frozenset({"chat_template", "use_chat_template"})
# Inspect's names of settings that lm-eval names otherwise: one setting, one name, in both harnesses.
SAME_SETTING = {"system_message": "system_instruction"}

Settings = tuple[tuple[str, str], ...]  # sorted (name, value as text) pairs
UNKNOWN_SETTINGS: Settings = (("settings", "unknown"),)  # an lm-eval samples file without its results file


def short_name(model: str) -> str:
    """A readable name: the last path component (hf/org/name, /models/name → name)."""
    return Path(model.rstrip("/")).name or model


def _text(value: Any) -> str:
    """A setting's value as comparable text (2.0 → "2", [1, 2] → "1,2"; long text → its sha256)."""
    if isinstance(value, bool):
        text = str(value).lower()
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, (list, tuple)):
        text = ",".join(map(_text, value))
    elif isinstance(value, Mapping):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = str(value)
    return text if len(text) <= 40 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:12]


def as_settings(values: Mapping[str, Any]) -> Settings:
    """Settings from {name: value}, each value as comparable text."""
    return tuple(sorted((k, _text(v)) for k, v in values.items()))


def describe(settings: Settings) -> str:
    """The settings as text, e.g. "mode=sample, n_samples=3" ("default settings" when there are none)."""
    return ", ".join(f"{k}={v}" for k, v in settings) or "default settings"


@dataclass(frozen=True, order=True)
class Run:
    """What makes results comparable: the model and the settings that change its numbers."""

    model: str
    settings: Settings = ()

    @property
    def label(self) -> str:
        """The short model name with its settings, e.g. "tiny (limit=2, mode=sample)"."""
        return short_name(self.model) + (f" ({describe(self.settings)})" if self.settings else "")

    def __str__(self) -> str:
        return f"{self.model} ({describe(self.settings)})"


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
    settings: Settings = ()  # the settings that change its numbers (module docstring)
    given_options: Mapping[str, Any] = field(default_factory=dict, repr=False)  # as the harness logged them

    @property
    def contract_harness(self) -> str:
        """The harness as the family's contract names it ("lm_eval" or "inspect")."""
        return "inspect" if self.harness == "inspect" else "lm_eval"

    @property
    def options(self) -> Any:
        """The family's run options of this output (`--metadata` in lm-eval, `-T` in Inspect); an
        error naming the file when the run logged options the family does not accept."""
        try:
            return self.family.options_type.from_mapping(self.given_options, self.contract_harness)
        except (TypeError, ValueError) as err:
            how = "-T task arguments" if self.harness == "inspect" else "--metadata options"
            raise ValueError(
                f"{self.path}: the {how} logged for {self.task} are not valid ({err}); rerun the task with valid "
                "options (`biasmonkey tasks list` names them)"
            ) from err

    @property
    def suite(self) -> str:
        return self.family.name

    @property
    def run(self) -> Run:
        return Run(self.model, self.settings)

    @property
    def truncation(self) -> TaskCuts | None:
        """The prompts of this output cut to fit the model's context (`biasmonkey run --allow-truncation`)."""
        return truncation_of(self.path) if self.harness == "lm-eval" else None

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
    of the family's samples is an error naming the file and line, and so are samples that differ
    from what the run said it wrote (`check_samples`)."""
    records, logged = [], []
    with Path(path).open() as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue  # a blank line (e.g. a trailing one) holds no sample
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as err:  # e.g. a file cut inside a line by a copy or a crash
                raise ValueError(
                    f"{path}, line {line_no}: not a JSON sample ({err.msg} at character {err.pos + 1} of the line); "
                    f"{REWRITTEN}, or restore the samples file as lm-eval wrote it"
                ) from err
            try:
                records.append(to_record(sample["doc"], sample["filtered_resps"]))
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"{path}, line {line_no}: not a biasmonkey {item} sample ({err})") from err
            logged.append(LoggedDoc.of(line_no, sample))
    check_samples(Path(path), logged)
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
        task = logged_task(read_eval_log(str(path), header_only=True))
        family = family_of(task)
        if family is None:
            raise ValueError(f"{path}: the log of {task!r}, not of a biasmonkey task")
    return [family.from_inspect(s) for s in logged_scores(path, family.scorer, family.inspect_per_epoch)]


def logged_task(header: Any) -> str:
    """The task an Inspect log is of: the biasmonkey task its task's metadata names
    (`biasmonkey_task`: a task that wraps another, `biasmonkey/position -T task=mc` →
    `biasmonkey/position_mc`), else the log's task name."""
    named = (header.eval.metadata or {}).get("biasmonkey_task")
    return INSPECT_PREFIX + named if isinstance(named, str) and named else header.eval.task


# ---------------------------------------------------------------------------- run identity


def _model_args(config: Mapping[str, Any]) -> dict[str, Any]:
    args = config.get("model_args")
    if isinstance(args, str):  # "pretrained=...,dtype=..."
        return dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return dict(args) if isinstance(args, Mapping) else {}


def task_options(family: Family, values: Mapping[str, Any], harness: str) -> dict[str, Any]:
    """The family's run options among `values` (harness "lm_eval" or "inspect") that differ from
    their defaults; the options naming where inputs lie (`data_path`, …) are not among them."""
    locations = family.options_type.locations
    defaults = {f.name: f.default for f in family.options_type.option_fields(harness) if f.name not in locations}
    given = {k: v for k, v in values.items() if k in defaults}
    try:
        return family.options_type.from_mapping(given, harness).non_defaults()
    except (TypeError, ValueError):  # a value the options no longer accept: compare as given
        return {k: v for k, v in given.items() if v != defaults[k]}


def _given_options(family: Family, values: Mapping[str, Any], harness: str) -> dict[str, Any]:
    """The family's run options among the values a harness logged (other keys left out)."""
    return {f.name: values[f.name] for f in family.options_type.option_fields(harness) if f.name in values}


def lm_eval_settings(results: Mapping[str, Any], task: str, family: Family) -> dict[str, Any]:
    """The settings of one task of an lm-eval run, from its results file (module docstring)."""
    config = results.get("config") or {}
    settings = {k: v for k, v in _model_args(config).items() if k not in NEUTRAL_MODEL_ARGS and v is not None}
    settings |= {k: config[k] for k, default in LM_EVAL_SEEDS.items() if config.get(k, default) != default}
    shots = (results.get("n-shot") or {}).get(task)
    flags = {
        "limit": config.get("limit"),
        "samples": _selection(results, task),
        "gen_kwargs": config.get("gen_kwargs"),
        "num_fewshot": shots,
        "apply_chat_template": bool(results.get("chat_template")),
        "system_instruction": results.get("system_instruction"),
        # lm-eval turns it on with --apply_chat_template; it changes nothing without few-shot examples
        "fewshot_as_multiturn": results.get("fewshot_as_multiturn") and bool(shots),
    }
    settings |= {k: v for k, v in flags.items() if v}
    return settings | task_options(family, _task_metadata(results, task), "lm_eval")


def _selection(results: Mapping[str, Any], task: str) -> str | None:
    """How many documents lm-eval's `--samples` picked, e.g. "2 of 176" (None: no selection). lm-eval
    records neither the flag nor the ids, only fewer documents than the task has without a --limit."""
    counts = (results.get("n-samples") or {}).get(task) or {}
    effective, original = counts.get("effective"), counts.get("original")
    if (results.get("config") or {}).get("limit") is not None or not isinstance(effective, int):
        return None
    return f"{effective} of {original}" if isinstance(original, int) and effective < original else None


def passes_prompt_through(template: Any) -> bool:
    """Whether a chat template renders a one-message chat as the message's text alone (the raw
    prompt, as lm-eval sends it without --apply_chat_template)."""
    if not isinstance(template, str):
        return False
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    probe = "Question: is 2 + 2 = 4?\nAnswer:"
    try:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders them
        chat = [{"role": "user", "content": probe}]
        rendered = env.from_string(template).render(messages=chat, add_generation_prompt=True)
    except TemplateError:
        return False
    return rendered == probe


def inspect_prompt_format(model: str, model_args: Mapping[str, Any]) -> dict[str, Any]:
    """The prompt format of an Inspect run as lm-eval's settings name it: nothing for the raw prompt
    (an `hf/` or `vllm/` model whose `chat_template` model argument passes the prompt through),
    `apply_chat_template=true` for a chat template (those providers' default, and every chat API),
    `apply_chat_template=role_prefix` for `use_chat_template=false` (Inspect then writes "user: …")."""
    local = model.split("/", 1)[0] in ("hf", "vllm")
    if local and model_args.get("use_chat_template") is False:
        return {"apply_chat_template": "role_prefix"}
    if local and passes_prompt_through(model_args.get("chat_template")):
        return {}
    return {"apply_chat_template": True}


def inspect_settings(header: Any, family: Family) -> dict[str, Any]:
    """The settings of an Inspect log, from its header (module docstring)."""
    ev = header.eval
    model_args = ev.model_args or {}
    settings = {
        k: v for k, v in model_args.items() if k not in NEUTRAL_MODEL_ARGS | PROMPT_FORMAT_ARGS and v is not None
    }
    settings |= inspect_prompt_format(ev.model, model_args)
    # the model's generate config, then the eval's (`inspect eval --temperature …`), which wins
    for config in (ev.model_generate_config, header.plan.config if header.plan else None):
        generate = config.model_dump(exclude_none=True) if config is not None else {}
        settings |= {SAME_SETTING.get(k, k): v for k, v in generate.items() if k not in CONNECTION_SETTINGS}
    settings |= {k: v for k in ("limit", "sample_id", "sample_shuffle") if (v := getattr(ev.config, k)) is not None}
    if (ev.config.epochs or 1) > 1:  # (not its reducer: the readers take the mean over epochs whatever it was)
        settings["epochs"] = ev.config.epochs
    if ev.task_version != scoring_version(family):  # scored by an earlier version of the task
        settings["task_version"] = ev.task_version
    return settings | task_options(family, ev.task_args or {}, "inspect")


def scoring_version(family: Family) -> int:
    """The version of the family's Inspect tasks (`SCORING_VERSION` in `tasks/<family>/inspect_task.py`)."""
    module = family_module(family.name, "inspect_task")
    return module.SCORING_VERSION if module is not None else 0


def check_task_version(path: Path, header: Any, family: Family) -> None:
    """An Inspect log of a task version this biasmonkey reads (its own or an earlier one), else an
    error naming the file: a later version stores what this one cannot read."""
    version, current = header.eval.task_version, scoring_version(family)
    if not isinstance(version, int) or not 0 <= version <= current:
        raise ValueError(
            f"{path}: {header.eval.task} scored by task version {version!r}, which this biasmonkey does not "
            f"know (its {family.name} tasks are version {current}): upgrade biasmonkey, or rerun the task with this one"
        )


def one_run(outputs: list[TaskOutput], where: str | Path, how: str) -> list[TaskOutput]:
    """The outputs, when they are of one run; else an error naming every run and where it is, with `how` to pick one."""
    runs: dict[Run, set[str]] = {}
    for out in outputs:
        runs.setdefault(out.run, set()).add(str(out.path.parent))
    if len(runs) > 1:
        listed = "; ".join(f"{run} in {', '.join(sorted(folders))}" for run, folders in sorted(runs.items()))
        raise ValueError(f"{where} holds the results of {len(runs)} runs, not to be mixed: {listed}. {how}")
    return outputs


# ---------------------------------------------------------------------------- scanning


def _model_of_results(results: Mapping[str, Any], folder: Path) -> tuple[str, dict[str, Any]]:
    config = dict(results.get("config") or {})
    return str(results.get("model_name") or _model_args(config).get("pretrained") or folder.name), config


def _variant(task: str) -> bool:
    """Whether a task is one of a family's variants outside its suite (summaries and reports leave it
    out of the family's tables; a summary gives them tables of their own)."""
    family = family_of(task)
    return family is not None and (base_task_name(task) or task) in family.variants


def lm_eval_outputs(root: Path, left_out: list[TaskOutput] | None = None) -> list[TaskOutput]:
    """Every biasmonkey samples file under an lm-eval output path, with the model and settings of
    the results file written with it (same stamp); the variants' outputs go to `left_out` (where
    given; else nowhere)."""
    results: dict[Path, dict[str, Any]] = {}
    found: list[tuple[TaskOutput, dict[str, str]]] = []  # (output, its inputs: run_inputs.py)
    for path in sorted(root.rglob(f"samples_{LM_EVAL_PREFIX}*.jsonl")):
        m = SAMPLES_FILE.match(path.name)
        family = family_of(m.group(1)) if m else None
        if m is None or family is None or (_variant(m.group(1)) and left_out is None):
            continue
        task, stamp = m.group(1), m.group(2)
        results_path = path.parent / f"results_{stamp}.json"
        if results_path.is_file():
            if results_path not in results:
                results[results_path] = read_results(results_path)
            if _intermediate(results[results_path], task, family):
                continue  # a step whose outputs feed another run (e.g. free answers before extraction)
            model, config = _model_of_results(results[results_path], path.parent)
            settings = (  # (no run configuration in the file: its settings are not known)
                as_settings(lm_eval_settings(results[results_path], task, family))
                if isinstance(results[results_path].get("config"), dict)
                else UNKNOWN_SETTINGS
            )
            given = _given_options(family, _task_metadata(results[results_path], task), "lm_eval")
            recorded = recorded_inputs(results_path)
        else:  # no results file of this run: the folder's model, settings unknown
            model, config, settings, given, recorded = _folder_model(path.parent), {}, UNKNOWN_SETTINGS, {}, {}
        name = base_task_name(task) or ""
        output = TaskOutput(name, family, "lm-eval", path, stamp, model, config, settings, given)
        found.append((output, _inputs(family, recorded, given)))
    outputs = _distinguished(found)
    if left_out is not None:
        left_out += [out for out in outputs if _variant(out.task)]
    return [out for out in outputs if not _variant(out.task)]


def _inputs(family: Family, recorded: Mapping[str, str], given: Mapping[str, Any]) -> dict[str, str]:
    """An output's inputs (run_inputs.py): as `biasmonkey run` recorded them, else the weights unknown
    and an input file's path as the run gave it."""
    options = family.options_type
    inputs = {"weights": recorded.get("weights", UNKNOWN_INPUT)}
    for name in (f.name for f in options.option_fields("lm_eval") if f.name in options.input_files):
        default = recorded.get(default_input_key(family.name, name), DEFAULT_INPUT)  # the family's own copy
        inputs[name] = recorded.get(name) or (_text(given[name]) if given.get(name) else default)
    return inputs


def _same_label(out: TaskOutput) -> tuple[Path, str, Settings]:
    return out.path.parent, short_name(out.model), out.settings


def _distinguished(found: list[tuple[TaskOutput, dict[str, str]]]) -> list[TaskOutput]:
    """The outputs, each input that differs among outputs of one folder, model name and settings made
    a setting of its own (weights=…, data_path=sha256:…), so that they are never read as one run, nor
    shown under one label (two folders `tiny` of other weights)."""
    groups: dict[tuple[Path, str, Settings], list[dict[str, str]]] = {}
    for out, inputs in found:
        groups.setdefault(_same_label(out), []).append(inputs)
    differing = distinguish(groups)
    outputs = []
    for out, inputs in found:
        extra = [(k, inputs[k]) for k in differing[_same_label(out)] if k in inputs]
        outputs.append(replace(out, settings=tuple(sorted(out.settings + tuple(extra)))) if extra else out)
    return outputs


def _task_metadata(results: Mapping[str, Any], task: str) -> Mapping[str, Any]:
    """The run options (`--metadata`) of one task, from an lm-eval results file."""
    return ((results.get("configs") or {}).get(task) or {}).get("metadata") or {}


def _intermediate(results: Mapping[str, Any], task: str, family: Family) -> bool:
    try:
        return family.options_type.from_mapping(_task_metadata(results, task), "lm_eval").intermediate()
    except (TypeError, ValueError):
        return False


def _folder_model(folder: Path) -> str:
    """The model of an lm-eval model folder, from its newest results file (else the folder's name)."""
    results_files = sorted(p for p in folder.glob("results_*.json") if RESULTS_FILE.match(p.name))
    if not results_files:
        return folder.name
    return _model_of_results(read_results(results_files[-1]), folder)[0]


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


def inspect_outputs(path: Path, left_out: list[TaskOutput] | None = None) -> list[TaskOutput]:
    """Every log of a biasmonkey task in an Inspect log folder or file; the variants' logs go to
    `left_out` (where given; else nowhere)."""
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
        task = logged_task(header)
        family = family_of(task) if task.startswith(INSPECT_PREFIX) else None
        variant = family is not None and _variant(task)
        if family is None or (variant and left_out is None):
            continue
        check_task_version(log_path, header, family)
        info = {
            "model": header.eval.model,
            "harness": "inspect",
            "inspect_version": header.eval.packages.get("inspect_ai"),
        }
        (left_out if variant else found).append(  # type: ignore[union-attr]
            TaskOutput(
                base_task_name(task) or "",
                family,
                "inspect",
                log_path,
                str(header.eval.created),
                same_model_as_lm_eval(header.eval.model),
                info,
                as_settings(inspect_settings(header, family)),
                _given_options(family, header.eval.task_args or {}, "inspect"),
            )
        )
    return found


def scan(path: str | Path, left_out: list[TaskOutput] | None = None) -> list[TaskOutput]:
    """Every biasmonkey output under a results path (lm-eval folders and Inspect logs) of a family's
    suite; the outputs of its variants go to `left_out` (where given), which no family table, score
    or report reads (`variants_note`; `biasmonkey summarize` gives them tables of their own)."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    return ([] if path.is_file() else lm_eval_outputs(path, left_out)) + inspect_outputs(path, left_out)


def variants_note(left_out: Iterable[TaskOutput], summarized: bool = False) -> str | None:
    """The line that says which variants a summary or report leaves out of its families' tables
    (None: none); `summarized`: the summary's own tables of them follow."""
    names = sorted({lm_eval_task_name(out.task) for out in left_out})
    if not names:
        return None
    one = len(names) == 1
    what = "a variant outside its family's suite" if one else "variants outside their families' suites"
    where = (
        "in a table of their own below"
        if summarized
        else "in `biasmonkey summarize` and the harness's own results (lm-eval's results file and table, the Inspect log)"
    )
    return (
        f"Not in the families' tables, scores or verdicts: {', '.join(names)}, run here but {what} (`biasmonkey "
        f"tasks list --all` marks them); {'its' if one else 'their'} numbers are {where}."
    )


def run_of(out: TaskOutput) -> tuple[str, str, Run]:
    """What makes one run: the harness, for lm-eval the model's output folder, the model and its settings."""
    return (out.harness, str(out.path.parent) if out.harness == "lm-eval" else "", out.run)


def newest(outputs: Iterable[TaskOutput], key: Callable[[TaskOutput], Any] = run_of) -> list[TaskOutput]:
    """The newest output of each task per `key` (default: `run_of`); every key holds the model and
    its settings, so that the newest output of one never hides another's."""
    best: dict[tuple[Any, Run, str], TaskOutput] = {}
    for out in outputs:
        k = (key(out), out.run, out.task)
        if k not in best or out.stamp > best[k].stamp:
            best[k] = out
    return sorted(best.values(), key=lambda o: (run_of(o), o.task))
