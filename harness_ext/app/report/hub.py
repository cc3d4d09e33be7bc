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
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from biasmonkey.tasks.families import FAMILIES

# A clearly fake dataset id: the Hub cannot list these results until it is replaced by the
# Benchmark dataset the user registered (`biasmonkey report --hub-dataset OWNER/NAME`).
PLACEHOLDER_DATASET = "REPLACE-ME/biasmonkey"
EVALUATION_FRAMEWORK = "inspect-ai"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")

# The metric each family publishes on the Hub (also written to the lm-eval results file).
HUB_METRIC = {name: family.hub_metric for name, family in FAMILIES.items()}


def check_dataset_id(dataset_id: str) -> str:
    """A Hub dataset id OWNER/NAME, or a ValueError naming the option."""
    if not _REPO_ID.match(dataset_id or "") or "--" in dataset_id or ".." in dataset_id:
        raise ValueError(f"--hub-dataset {dataset_id!r}: expected a Hub dataset id OWNER/NAME")
    return dataset_id


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
