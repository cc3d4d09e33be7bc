"""lm-eval adapter of the yes-no suite: one document = one yes-no question.

The YAML files in `biasmonkey/tasks/yesno/` name `YesNoTask` as their `class`. Per document it
sends eight `loglikelihood` requests: the four answer continuations (" Yes", "Yes", " No", "No")
after the prompt, then the same four after an empty context, which lm-eval's HF backend scores
after the model's prefix token alone (BOS, else EOS: `TemplateLM.loglikelihood` with
`prefix_token_id`) — the no-context log-probabilities of the Generic correction. They are the
same for every document, and lm-eval's logits cache computes them once.

Per-item numbers (bias, accuracy, Generic, P(yes)) use lm-eval's `mean` (with a stderr); the
Specific correction and the Δ% columns need the whole task, so their aggregations receive each
document's record and call `biasmonkey.tasks.yesno.scoring.summarize`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from biasmonkey.harness_ext.lm_eval_tasks import metric_entry, read_samples_file
from biasmonkey.metrics.yesno import YesNoSummary, correctness, generic_correction, p_yes, votes
from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt
from biasmonkey.tasks.yesno.scoring import ItemRecord, score_item, summarize


def load_items(dataset: str, domain: str | None = None, **kwargs: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the items of a dataset (or one EWoK domain) as a `test` split.

    lm-eval calls it with the task's `dataset_kwargs` merged with the run metadata; other keys
    (the prompt variant, model arguments) are ignored.
    """
    items = [item.as_dict() for item in data.load_items(dataset, domain)]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(items)})


# ---------------------------------------------------------------------------- aggregations


def _summary(values: Sequence[Mapping[str, Any]]) -> YesNoSummary:
    return summarize([ItemRecord.from_dict(v) for v in values])


def task_level(field: str) -> Callable[[Sequence[Mapping[str, Any]]], float]:
    """Aggregation reporting one YesNoSummary field, computed over all of a task's records."""

    def aggregate(values: Sequence[Mapping[str, Any]]) -> float:
        return getattr(_summary(values), field)

    aggregate.__name__ = field
    return aggregate


def n_items(values: Sequence[Any]) -> int:
    return len(values)


# Bias: 0 is unbiased, its sign tells the direction, so "higher is better" is False for bias
# and Δ% bias (−100 % = bias removed); True for accuracy.
METRICS = [
    metric_entry("bias", "mean", False),
    metric_entry("accuracy", "mean", True),
    metric_entry("bias_generic", "mean", False),
    metric_entry("accuracy_generic", "mean", True),
    metric_entry("bias_specific", task_level("bias_specific"), False),
    metric_entry("accuracy_specific", task_level("accuracy_specific"), True),
    metric_entry("delta_pct_bias_generic", task_level("delta_pct_bias_generic"), False),
    metric_entry("delta_pct_accuracy_generic", task_level("delta_pct_accuracy_generic"), True),
    metric_entry("delta_pct_bias_specific", task_level("delta_pct_bias_specific"), False),
    metric_entry("delta_pct_accuracy_specific", task_level("delta_pct_accuracy_specific"), True),
    metric_entry("p_yes_gold_yes", "mean", True),
    metric_entry("p_yes_gold_no", "mean", False),
    metric_entry("n", n_items, True),
]
TASK_LEVEL = [m["metric"] for m in METRICS if m["aggregation"] != "mean"]


# ---------------------------------------------------------------------------- records


def item_record(doc: Mapping[str, Any], results: Sequence) -> ItemRecord:
    """The record of one document from its eight (log-likelihood, is_greedy) results."""
    lls = [float(r[0]) for r in results]  # lm-eval logs the numbers as strings
    if len(lls) != 2 * len(CONTINUATIONS):
        raise ValueError(f"item {doc['id']}: {len(lls)} results, expected {2 * len(CONTINUATIONS)}")
    return score_item(doc, lls[: len(CONTINUATIONS)], lls[len(CONTINUATIONS):])


def records_from_samples_file(path: str | Path) -> list[ItemRecord]:
    """Rebuild the per-item records of a yes-no task from lm-eval's --log_samples JSONL file."""
    return read_samples_file(path, item_record, "yes-no")


# ---------------------------------------------------------------------------- the task


class YesNoTask(ConfigurableTask):
    """A yes-no task; `dataset_kwargs` gives the dataset, the prompt variant and an EWoK domain."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # TaskConfig does not know the key lm-eval used to find us
        self.prompt_variant = (config.get("dataset_kwargs") or {}).get("prompt", "zeroshot")
        config.update(
            output_type="loglikelihood",
            test_split="test",
            target_delimiter="",  # the continuations carry their own leading space or none
            process_results=self.process_item,
            metric_list=METRICS,
        )
        super().__init__(config=config, **kwargs)

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return render_prompt(doc["query"], doc["dataset"], self.prompt_variant)

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return doc["gold"]

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs: Any) -> str:
        if num_fewshot:
            raise ValueError(
                f"{self.config.task}: the yes-no tasks use the paper's fixed prompts and take no "
                f"--num_fewshot (got {num_fewshot}); the *_fewshot tasks hold the two-example prompt"
            )
        return super().fewshot_context(doc=doc, num_fewshot=0, **kwargs)

    def construct_requests(self, doc: dict, ctx: str, **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        # An empty context is scored after the model's prefix token (BOS/EOS) alone.
        args = [(ctx, c) for c in CONTINUATIONS] + [("", c) for c in CONTINUATIONS]
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=arg, idx=i, **kwargs)
            for i, arg in enumerate(args)
        ]

    def process_item(self, doc: dict, results: list) -> dict[str, Any]:
        record = item_record(doc, results)
        gold = [record.gold_yes]
        vote = votes([record.yes], [record.no])
        generic_vote = votes(*generic_correction([record.yes], [record.no], record.null_yes, record.null_no))
        out: dict[str, Any] = {
            "bias": float(vote[0]),
            "accuracy": float(correctness(vote, gold)[0]),
            "bias_generic": float(generic_vote[0]),
            "accuracy_generic": float(correctness(generic_vote, gold)[0]),
            # Only items of that gold answer enter each mean.
            "p_yes_gold_yes" if record.gold_yes else "p_yes_gold_no": float(p_yes([record.yes], [record.no])[0]),
        }
        out.update({name: record.as_dict() for name in TASK_LEVEL})
        return out
