"""The Hugging Face Hub side of the leaderboard exports: which value each task publishes, and the
Benchmark `eval.yaml` that a results entry's `dataset.task_id` points into.

The Hub's formats (https://huggingface.co/docs/hub/eval-results):

- a model repo holds `.eval_results/*.yaml`, each a list of entries `{dataset: {id, task_id},
  value, date?, source?, notes?}`; `dataset.id` must be a dataset registered as a Benchmark and
  `task_id` one of the `tasks[].id` of that dataset's `eval.yaml`;
- a Benchmark dataset has `eval.yaml` at its root: `name`, `description`, `evaluation_framework`
  (an identifier from huggingface.js `packages/tasks/src/eval.ts`), `tasks[]` with a unique `id`
  (optional `config`, `split`); with `evaluation_framework: inspect-ai` each task also needs
  `field_spec`, `solvers` and `scorers`.

Neither file has a field for a metric's direction, so every published value here is one whose
direction needs no explanation: a magnitude where **lower = less biased** (0 = no effect), the
same for every task, stated in each entry's `notes` and in the Benchmark's description:

- response-bias tasks: |Δ|, the absolute mean change in answer share (percentage points).
  Perturbation tasks: humans show no change, so lower = more robust, and 0 is the human value.
  Bias tasks: humans do shift (Δb > 0), so lower |Δb| means "less moved by the wording", not
  "more human-like"; the signed Δb, its p-value and the human-likeness score stay in the
  lm-eval results file. A signed Δ would rank an opposite-to-human shift (allow/forbid −88) as
  the best, and a larger human-direction shift is not better either.
- yes-no tasks: |bias| = |#yes − #no|/N of the uncorrected answers, in [0, 1] (0 = as many yes as no).
- cognitive tasks: |mean bias score| in [0, 1] (0 = unbiased; a negative mean is a bias in the
  opposite direction, so the signed mean would rank it best).

`eval_yaml_text()` renders the shipped `configs/hub/eval.yaml`; `biasmonkey task-files` regenerates it
with the lm-eval task files.

Publishing (`biasmonkey report … --push-to-hub ORG/MODEL`, docs/exports.md): the Benchmark dataset id
is `--hub-dataset`, else `$BIASMONKEY_HUB_DATASET`, else `dataset:` of `configs/hub/publish.yaml`
(`configured_dataset`); while it is the placeholder, nothing is pushed (`require_registered`).
`push_eval_results` uploads one report entry's `.eval_results/*.yaml`, exactly as the report wrote
them, to the model repo in one commit with huggingface_hub (a pull request unless told otherwise),
or with `dry_run` prints what it would upload.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from biasmonkey.harness_ext.app.default_model import DEFAULT_MODEL_HUB_ID, DEFAULT_MODEL_NOTE, MARKER_FILE
from biasmonkey.tasks.families import FAMILIES
from biasmonkey.tasks.task_files import TASKS_DIR

# A clearly fake dataset id: the Hub cannot list these results until it is replaced by the
# Benchmark dataset the user registered (`biasmonkey report --hub-dataset OWNER/NAME`).
PLACEHOLDER_DATASET = "REPLACE-ME/biasmonkey"
EVALUATION_FRAMEWORK = "inspect-ai"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")

# The metric each family publishes on the Hub (also written to the lm-eval results file).
HUB_METRIC = {name: family.hub_metric for name, family in FAMILIES.items()}


def check_repo_id(repo_id: str, where: str, kind: str = "dataset") -> str:
    """A Hub repo id OWNER/NAME, or a ValueError naming where it was given."""
    if not _REPO_ID.match(repo_id or "") or "--" in repo_id or ".." in repo_id:
        raise ValueError(f"{where} {repo_id!r}: expected a Hub {kind} id OWNER/NAME")
    return repo_id


def check_dataset_id(dataset_id: str, where: str = "--hub-dataset") -> str:
    """A Hub dataset id OWNER/NAME, or a ValueError naming the option (or variable, or file)."""
    return check_repo_id(dataset_id, where)


@functools.cache
def hub_tasks() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every task a report can publish (the families' suite tasks, not their variants), in suite
    order: {lm-eval task name: (family name, the task's fixed arguments)}."""
    from biasmonkey.tasks.contract import lm_eval_task_name
    from biasmonkey.tasks.families import FAMILIES

    return {
        lm_eval_task_name(name): (family.name, dict(fixed))
        for family in FAMILIES.values()
        for name, fixed in family.tasks.items()
        if name not in family.variants
    }


def direction_note(task: str) -> str:
    """The published value's definition and direction, for an entry's `notes`."""
    family, fixed = hub_tasks()[task]
    return FAMILIES[family].hub_note(fixed)


DESCRIPTION = """\
Human-like response biases and cognitive biases of language models, measured by biasmonkey's
lm-evaluation-harness and Inspect tasks (response-bias prompts: github.com/lindiatjuatja/BiasMonkey).
Three suites, one leaderboard per task:
- survey response biases (Tjuatja et al., TACL 2024): 5 biases and 3 typo perturbations of each;
- yes-no bias (Bhatt & Ivanova, CogSci 2025) on COMPS-YNQ, EWoK-YNQ (and its domains), Arith-YNQ, bAbI-YNQ;
- 30 cognitive biases (Malberg et al., 2025; tum-nlp/cognitive-biases-in-llms).
Every value is a magnitude where LOWER = LESS BIASED (0 = no effect): |Δ| in percentage points for
response-bias tasks, |(#yes − #no)/N| of the uncorrected answers for yes-no tasks, |mean bias
score| for cognitive tasks.
On the five bias tasks humans do shift (Δb > 0), so a low |Δb| means less moved by the wording, not
more human-like; signed values, p-values and the human-likeness score are in the lm-eval results
file that `biasmonkey report` writes next to the .eval_results entries.
Values come from `biasmonkey report --hub-dataset <this dataset>` over lm-eval or Inspect runs of the
biasmonkey tasks (`lm_eval --tasks biasmonkey_<task>`, `inspect eval biasmonkey/<task>`). Those tasks
need biasmonkey's own solvers and scorers (question pairs and a t-test of Δ; yes/no log-probabilities
with calibration; control/treatment tests), which `inspect eval hf/<this dataset>` cannot load: it
builds tasks from Inspect's built-in solvers and scorers only. The field_spec, solvers and scorers
below satisfy the inspect-ai schema and do not reproduce the values; the prompt files are not
redistributed here (biasmonkey reads them from their pinned upstream sources).
"""


def eval_yaml() -> dict[str, Any]:
    """The Benchmark `eval.yaml` as data: one task per publishable task id.

    `evaluation_framework: inspect-ai` makes `field_spec`, `solvers` and `scorers` required;
    Inspect's Hub loader (`inspect eval hf/OWNER/NAME`) accepts only its built-in solvers and
    scorers, so these are the minimal valid ones (generate, match) and do not reproduce the
    values (see DESCRIPTION)."""
    return {
        "name": "biasmonkey: response, yes-no and cognitive biases",
        "description": DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [
            {
                "id": task,
                "field_spec": {"input": "input", "target": "target"},
                "solvers": [{"name": "generate"}],
                "scorers": [{"name": "match"}],
            }
            for task in hub_tasks()
        ],
    }


HEADER = """\
# Benchmark definition of biasmonkey for the Hugging Face Hub: upload as `eval.yaml` at the root
# of the dataset repo you register (one-time steps: configs/hub/README.md). Spec:
# https://huggingface.co/docs/hub/eval-results ("Registering a Benchmark", "Eval.yaml specification").
# tasks[].id are the dataset.task_id of the `.eval_results/*.yaml` entries `biasmonkey report` writes.
# Generated from biasmonkey.harness_ext.app.report.hub.eval_yaml_text(); do not edit by hand.
"""


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (`|`), the way a person writes the description."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def eval_yaml_text() -> str:
    return HEADER + yaml.dump(
        eval_yaml(), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None
    )


# ---------------------------------------------------------------------------- publishing: configuration

# Where the Benchmark dataset id is configured, after `--hub-dataset` (see `configured_dataset`).
DATASET_ENV = "BIASMONKEY_HUB_DATASET"
# In a source checkout; a wheel does not ship configs/ (then: the option or the variable).
PUBLISH_CONFIG = TASKS_DIR.parent / "configs" / "hub" / "publish.yaml"
HUB_URL = "https://huggingface.co"
SOURCE_NAME = "biasmonkey report"


def configured_dataset(given: str | None = None, config_file: Path | None = None) -> tuple[str, str]:
    """The Benchmark dataset id the `.eval_results` entries name, and where it was set: `given`
    (`--hub-dataset`), else $BIASMONKEY_HUB_DATASET, else `dataset:` of `configs/hub/publish.yaml`,
    else the placeholder. A malformed id is a ValueError naming where it came from."""
    if given:
        return check_dataset_id(given), "--hub-dataset"
    if value := os.environ.get(DATASET_ENV, "").strip():
        return check_dataset_id(value, f"${DATASET_ENV}"), f"${DATASET_ENV}"
    path = PUBLISH_CONFIG if config_file is None else config_file
    if path.is_file():
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not readable YAML ({err})") from err
        value = data.get("dataset") if isinstance(data, dict) else None
        if value:
            return check_dataset_id(str(value), f"{path} `dataset:`"), str(path)
    return PLACEHOLDER_DATASET, "the default"


def require_registered(dataset_id: str, where: str) -> str:
    """`dataset_id`, or a ValueError naming the fix while it is the placeholder: nothing is published
    under an id no Benchmark has."""
    if dataset_id == PLACEHOLDER_DATASET:
        raise ValueError(
            f"--push-to-hub: the Benchmark dataset id is the placeholder {PLACEHOLDER_DATASET} ({where}); register "
            "the Benchmark once (configs/hub/README.md) and name it with --hub-dataset OWNER/NAME, "
            f"{DATASET_ENV}=OWNER/NAME or `dataset: OWNER/NAME` in configs/hub/publish.yaml"
        )
    return dataset_id


def dataset_url(dataset_id: str) -> str:
    """The Benchmark dataset's page: the entries' `source.url`. Its card says what the values are and
    how biasmonkey computes them (configs/hub/README.md, step 2); the leaderboard is shown there too."""
    return f"{HUB_URL}/datasets/{dataset_id}"


# ---------------------------------------------------------------------------- publishing: the model's Hub id

# lm-eval backends whose `pretrained=` is a transformers model (a Hub id or a local folder); Inspect
# providers whose model name is one (`hf/<id>`, `vllm/<id>`). A served model's name is whatever
# the server calls it, so it is not taken for a Hub id.
HF_BACKENDS = frozenset({"hf", "hf-auto", "huggingface", "biasmonkey-hf", "vllm", "sglang"})
INSPECT_HF_PROVIDERS = frozenset({"hf", "vllm"})


def _model_args(args: Any) -> dict[str, Any]:
    if isinstance(args, str):  # lm-eval's "pretrained=...,dtype=..."
        return dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return dict(args) if isinstance(args, Mapping) else {}


def model_hub_id(model: str, config: Mapping[str, Any]) -> str | None:
    """The Hub id of the model a run evaluated, when the run names one, else None.

    `model` is the model name or path the harness recorded; `config` lm-eval's `config` block
    (`model`: the backend, `model_args`), the `config` of the report's results file, or Inspect's
    model info (`model`: "<provider>/<name>"). Taken: lm-eval's `pretrained=` of a transformers
    backend and Inspect's `hf/<id>` / `vllm/<id>`, when it is OWNER/NAME and not a local path; the
    folder of the bundled default model is SmolLM2-135M-Instruct."""
    backend = str(config.get("model") or "")
    args = _model_args(config.get("model_args"))
    if "/" in backend:  # Inspect's model info: "<provider>/<model>"
        provider, _, name = backend.partition("/")
        if provider not in INSPECT_HF_PROVIDERS:
            return None
    elif backend in HF_BACKENDS:  # lm-eval, or Inspect's model in the report's results file
        name = str(args.get("pretrained") or args.get("model") or model).removeprefix(f"{backend}/")
    elif not backend:  # nothing recorded but the name
        name = model
    else:
        return None
    return _hub_id_of(name)


def _hub_id_of(name: str) -> str | None:

    path = Path(name).expanduser()
    if path.is_dir():
        return DEFAULT_MODEL_HUB_ID if (path / MARKER_FILE).is_file() else None
    if name.startswith(("/", ".", "~")) or not _REPO_ID.match(name) or "--" in name or ".." in name:
        return None
    return name


def model_note(hub_id: str | None, model: str) -> str | None:
    """The model's part of an entry's `notes`, when its Hub id is known."""
    if hub_id is None:
        return None
    if hub_id == DEFAULT_MODEL_HUB_ID and model != DEFAULT_MODEL_HUB_ID:
        return f"model {hub_id} ({DEFAULT_MODEL_NOTE})"
    return f"model {hub_id}"


# ---------------------------------------------------------------------------- publishing: entries


def eval_result(
    dataset_id: str, task: str, value: float, date: str | None, notes: str, source_url: str | None = None
) -> list[dict[str, Any]]:
    """One `.eval_results/<task>.yaml` file as data, through huggingface_hub's own `EvalResultEntry`
    and serialiser (the Hub's field names: `dataset.id`, `dataset.task_id`, `value`, `date`,
    `source.url`/`name`, `notes`)."""
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    entry = EvalResultEntry(
        dataset_id=dataset_id,
        task_id=task,
        value=value,
        date=date,
        source_url=source_url or dataset_url(dataset_id),
        source_name=SOURCE_NAME,
        notes=notes,
    )
    return eval_result_entries_to_yaml([entry])


# ---------------------------------------------------------------------------- publishing: the push

EVAL_RESULTS_DIR = ".eval_results"


class HubPushError(RuntimeError):
    """The push did not happen; the message is one line saying why and what to do."""


@dataclass
class ReportEntry:
    """One model of a report as its leaderboard folder holds it."""

    name: str  # as the report shows it, e.g. "smollm2 (mode=sample)"
    folder: Path  # leaderboard/<slug>
    model: str  # the model name or path the harness recorded
    hub_id: str | None

    @property
    def files(self) -> list[Path]:
        return sorted((self.folder / EVAL_RESULTS_DIR).glob("*.yaml"))

    def describe(self) -> str:
        return f"{self.name!r} (model {self.hub_id or self.model + ', Hub id unknown'})"


def report_entries(leaderboard_dir: Path) -> list[ReportEntry]:
    """Every model of the newest report written into a leaderboard folder (each `<slug>/results_<stamp>.json`
    with the newest file's name: one report gives all its models one stamp; a folder an earlier
    report left for a model not in this one is not taken)."""
    found = []
    written = sorted(leaderboard_dir.glob("*/results_*.json"), key=lambda p: p.stat().st_mtime)
    newest = written[-1].name if written else None
    for results in sorted(p for p in written if p.name == newest):
        data = json.loads(results.read_text())
        config = data.get("config") or {}
        model = str(data.get("model_name") or results.parent.name)
        name = str((config.get("biasmonkey") or {}).get("report_name") or results.parent.name)
        found.append(ReportEntry(name, results.parent, model, model_hub_id(model, config)))
    return found


def choose_entry(entries: list[ReportEntry], repo_id: str, name: str | None = None) -> ReportEntry:
    """The report's model whose entries go to `repo_id`: the one named `name` (its name in the report,
    or its folder), else the one whose Hub id is `repo_id`, else the report's only model when its Hub
    id is unknown. A model whose Hub id is known and another is never pushed to `repo_id`."""
    listing = ", ".join(e.describe() for e in entries) or "none"
    if name is not None:
        chosen = [e for e in entries if name in (e.name, e.folder.name)]
        if not chosen:
            raise ValueError(f"--push-model {name!r}: not a model of this report (its models: {listing})")
    else:
        chosen = [e for e in entries if e.hub_id == repo_id]
        if not chosen and len(entries) == 1 and entries[0].hub_id is None:
            chosen = entries
        if len(chosen) != 1:
            which = "several models of this report are" if chosen else "no model of this report is known as"
            raise ValueError(
                f"--push-to-hub {repo_id}: {which} {repo_id} (its models: {listing}); "
                "name the one to publish with --push-model NAME"
            )
    (entry,) = chosen[:1]
    if entry.hub_id is not None and entry.hub_id != repo_id:
        raise ValueError(
            f"--push-to-hub {repo_id}: the report's model {entry.name!r} is {entry.hub_id}, not {repo_id}; "
            f"push it to {entry.hub_id}"
        )
    return entry


@dataclass
class Upload:
    """What one push sends: the files (path in the repo → content) in one commit or pull request."""

    repo_id: str
    files: dict[str, str]
    create_pr: bool
    commit_message: str
    commit_description: str

    def summary(self) -> list[str]:
        how = "open a pull request on" if self.create_pr else "commit directly to the main branch of"
        lines = [f"would {how} the model repo {self.repo_id} ({HUB_URL}/{self.repo_id}): {len(self.files)} file(s)"]
        lines.append(f"commit message: {self.commit_message}")
        for path, text in self.files.items():
            lines.append(f"--- {path}")
            lines.extend(text.rstrip("\n").splitlines())
        return lines


def plan_upload(entry: ReportEntry, repo_id: str, dataset_id: str, create_pr: bool = True) -> Upload:
    """The upload of one report model's `.eval_results/*.yaml` files as the report wrote them; a
    ValueError when there are none, a file is not in the Hub's format, or an entry names another
    dataset than `dataset_id` (the placeholder is never sent)."""
    from huggingface_hub import parse_eval_result_entries

    require_registered(dataset_id, "the report's dataset")
    files = {}
    for path in entry.files:
        text = path.read_text()
        try:
            parsed = parse_eval_result_entries(yaml.safe_load(text))
        except (yaml.YAMLError, TypeError, KeyError, AttributeError) as err:
            raise ValueError(f"{path}: not a Hub eval-results file ({type(err).__name__}: {err})") from err
        ids = {e.dataset_id for e in parsed}
        if PLACEHOLDER_DATASET in text or ids != {dataset_id}:
            raise ValueError(
                f"{path} names the dataset {', '.join(sorted(ids))}, not {dataset_id}: write the report again "
                f"with --hub-dataset {dataset_id}"
            )
        files[f"{EVAL_RESULTS_DIR}/{path.name}"] = text
    if not files:
        raise ValueError(f"the report's model {entry.name!r} has no .eval_results entries (no task had a value)")
    model = f" of {entry.hub_id}" if entry.hub_id else ""
    return Upload(
        repo_id=repo_id,
        files=files,
        create_pr=create_pr,
        commit_message=f"Add biasmonkey evaluation results ({len(files)} tasks)",
        commit_description=(
            f"Scores{model} on the biasmonkey Benchmark {dataset_url(dataset_id)}: one `.eval_results` entry per "
            "task, written by `biasmonkey report`. Every value is a magnitude where lower = less biased (each "
            "entry's `notes` says what it measures)."
        ),
    )


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:297] + "..."


def push(upload: Upload, api: Any = None, token: str | None = None) -> str:
    """Send `upload` with huggingface_hub (`HfApi.create_commit`; `api`: an `HfApi`, e.g. for another
    endpoint); return the pull request's or the commit's URL. Every failure is a one-line HubPushError."""
    from huggingface_hub import CommitOperationAdd, HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    api = api if api is not None else HfApi(token=token)
    if not (token or getattr(api, "token", None) or get_token()):
        raise HubPushError(
            "no Hugging Face token: log in with `hf auth login` or set HF_TOKEN (a token that may write to "
            f"{upload.repo_id}, or open pull requests on it)"
        )
    operations = [CommitOperationAdd(path, text.encode()) for path, text in upload.files.items()]
    try:
        info = api.create_commit(
            repo_id=upload.repo_id,
            repo_type="model",
            operations=operations,
            commit_message=upload.commit_message,
            commit_description=upload.commit_description,
            create_pr=upload.create_pr,
            token=token,
        )
    except RepositoryNotFoundError as err:
        raise HubPushError(
            f"model repo {upload.repo_id} not found on the Hub, or your token may not see it: check the id "
            f"({HUB_URL}/{upload.repo_id})"
        ) from err
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        fix = {
            401: "the token was refused: log in again (`hf auth login`) or set HF_TOKEN",
            403: "the token may not write there: use a token with write access"
            + ("" if upload.create_pr else ", or open a pull request (leave out --no-pr)"),
        }.get(status, _one_line(err))
        code = f" (HTTP {status})" if status else ""
        raise HubPushError(f"the Hub refused the upload to {upload.repo_id}{code}: {fix}") from err
    except Exception as err:  # network (no connection, timeout, TLS) or anything else on the way
        endpoint = getattr(api, "endpoint", HUB_URL)
        raise HubPushError(
            f"could not upload to {upload.repo_id} at {endpoint}: {type(err).__name__}: {_one_line(err)}"
        ) from err
    return str(getattr(info, "pr_url", None) or getattr(info, "commit_url", ""))


def push_eval_results(
    leaderboard_dir: Path,
    repo_id: str,
    dataset_id: str,
    *,
    model: str | None = None,
    create_pr: bool = True,
    dry_run: bool = False,
    api: Any = None,
    token: str | None = None,
    echo: Callable[[str], None] = print,
) -> str | None:
    """Publish one model of a written report (its leaderboard folder `leaderboard_dir`) to the model
    repo `repo_id`: its `.eval_results/*.yaml` files in one pull request (`create_pr=False`: one
    commit on main). `dry_run`: print what would be uploaded and upload nothing. Returns the pull
    request's or commit's URL (None on a dry run)."""
    check_repo_id(repo_id, "--push-to-hub", "model")
    require_registered(dataset_id, "the report's dataset")
    entry = choose_entry(report_entries(leaderboard_dir), repo_id, model)
    upload = plan_upload(entry, repo_id, dataset_id, create_pr)
    if dry_run:
        echo(f"Dry run, nothing uploaded: the entries of {entry.describe()}")
        for line in upload.summary():
            echo(line)
        return None
    url = push(upload, api=api, token=token)
    what = "Opened a pull request" if create_pr else "Committed"
    echo(f"{what} with {len(upload.files)} .eval_results file(s) of {entry.name!r} on {repo_id}: {url}")
    return url
