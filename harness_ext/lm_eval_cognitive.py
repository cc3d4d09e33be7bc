"""lm-eval adapter for the cognitive-bias tests: one document = one control/treatment test.

The task YAML files in `biasmonkey/tasks/cognitive/` name `CognitiveBiasTask` as their `class`.
For every test it sends the control then the treatment requests (exact mode: the log-likelihood
of each answer label "Option N:"; generate mode: one greedy answer per prompt), builds a
per-test record with the harness-neutral core and reports per-bias aggregates.

Generate mode here is one step: lm-eval cannot chain a second generation on the first one's
output, so the prompt asks for the option line directly and the paper's regex reads the
answer. The paper's two-step protocol (free answer, then an extraction prompt) needs a
harness that can chain calls (the Inspect adapter).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from biasmonkey.harness_ext.lm_eval_tasks import metric_entry, read_samples_file, t_test_metrics
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import ONE_STEP_MAX_TOKENS, ONE_STEP_STOP, SIDES, answer_labels, answer_prompt, side_text
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, score_answers, score_exact

# Greedy, as the paper decided at temperature 0; long enough for "Option 11: 100%" and some preamble.
GENERATION_KWARGS = {"until": [ONE_STEP_STOP], "do_sample": False, "temperature": 0.0, "max_gen_toks": ONE_STEP_MAX_TOKENS}


def load_docs(bias: str, **metadata: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the tests of one bias as a single `test` split.

    lm-eval passes the task's `dataset_kwargs` (bias) merged with the run metadata
    (`--metadata` and the model arguments); keys that are not our options are ignored.
    """
    docs = CognitiveOptions.from_mapping(metadata).task_docs(bias)
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def metric_list(mode: str) -> list[dict[str, Any]]:
    """What each task reports. `score` uses lm-eval's `mean`, so it gets a stderr.

    A positive score is the biased direction, so lower is better for the scores."""
    metrics = [
        *t_test_metrics("score", "n_tests", False),
        metric_entry("failure_rate", "mean", False),
        metric_entry("random_baseline", "mean", False),
    ]
    if mode == "exact":
        metrics.append(metric_entry("expected_score", "mean", False))
    return metrics


def record_from_results(doc: dict, results: Sequence, mode: str) -> CognitiveRecord:
    """The record of one document from its results (filtered responses, in request order)."""
    if mode == "exact":
        lls = [float(r[0]) for r in results]  # (log-likelihood, is_greedy) per label, control then treatment
        n_control = len(doc["control_options"])
        return score_exact(doc, lls[:n_control], lls[n_control:])
    control, treatment = results
    return score_answers(doc, control, treatment)


def _logged_record(doc: dict, results: list) -> CognitiveRecord:
    # Exact mode logs one (log-likelihood, is_greedy) per label, generate mode one text per side
    # (lm-eval writes the numbers as strings).
    n_labels = len(doc["control_options"]) + len(doc["treatment_options"])
    return record_from_results(doc, results, "exact" if len(results) == n_labels else "generate")


def records_from_samples_file(path: str | Path) -> list[CognitiveRecord]:
    """Rebuild the per-test records of a task from lm-eval's --log_samples JSONL file."""
    return read_samples_file(path, _logged_record, "cognitive-bias")


class CognitiveBiasTask(ConfigurableTask):
    """A cognitive-bias task whose documents are (control, treatment) tests."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # TaskConfig does not know the key lm-eval used to find us
        self.options = CognitiveOptions.from_mapping(config.get("metadata"))
        exact = self.options.mode == "exact"
        config.update(
            output_type="loglikelihood" if exact else "generate_until",
            test_split="test",
            process_results=self.process_test,
            metric_list=metric_list(self.options.mode),
        )
        if not exact:
            config["generation_kwargs"] = dict(GENERATION_KWARGS)
        super().__init__(config=config, **kwargs)

    # lm-eval renders "views" {"prompt": text}, one per side; a whole test shows its control.
    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return doc["prompt"] if "prompt" in doc else answer_prompt(side_text(doc, "control"))

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return ""  # a bias test has no correct answer

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs: Any) -> list[str]:
        """The control and treatment contexts (system prompt and chat template applied by lm-eval)."""
        if num_fewshot:
            raise ValueError(f"{self.config.task}: the cognitive-bias tests are zero-shot; drop --num_fewshot")
        return [
            super(CognitiveBiasTask, self).fewshot_context(
                doc={"prompt": answer_prompt(side_text(doc, side))}, num_fewshot=0, **kwargs
            )
            for side in SIDES
        ]

    def construct_requests(self, doc: dict, ctx: list[str], **kwargs: Any) -> list[Instance]:
        chat = kwargs.pop("apply_chat_template", False)
        kwargs.pop("chat_template", None)
        # One spelling per label: after "Answer:" with a space, at the start of a chat template's
        # assistant turn without. (The response-bias tasks score both spellings of their
        # one-token letters at no cost; multi-token labels each need a forward pass.)
        delimiter = "" if chat else self.config.target_delimiter
        arguments = []
        for side, context in zip(SIDES, ctx):
            if self.options.mode == "exact":
                arguments += [(context, delimiter + label) for label in answer_labels(len(doc[f"{side}_options"]))]
            else:
                arguments.append((context, dict(self.config.generation_kwargs)))
        return [
            Instance(request_type=self.OUTPUT_TYPE, doc=doc, arguments=arg, idx=i, **kwargs)
            for i, arg in enumerate(arguments)
        ]

    def process_test(self, doc: dict, results: list) -> dict[str, float]:
        record = record_from_results(doc, results, self.options.mode)
        # A failed test (generate mode: no valid "Option N" on a side) is left out of `score`
        # (lm-eval's mean) and enters the other score metrics as NaN, which their aggregations
        # skip; n_tests counts the scored tests and failure_rate the failed ones.
        score = math.nan if record.score is None else record.score
        out = {name: score for name in ("score_t", "score_p", "score_ci_low", "score_ci_high", "n_tests")}
        if record.score is not None:
            out["score"] = record.score
        out["failure_rate"] = float(record.failed)
        out["random_baseline"] = record.random_baseline
        if record.expected_score is not None:
            out["expected_score"] = record.expected_score
        return out
