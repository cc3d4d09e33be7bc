"""lm-eval requests of the answer-position tasks: one document = one MMLU question.

Per document eight `loglikelihood` requests sharing one context, the question's prompt: the
continuations " A", "A", " B", "B", " C", "C", " D", "D". Each is one token for common
tokenizers, so lm-eval's HF backend scores all eight from one forward pass (its logits cache
groups single-token continuations of a context), and the biasmonkey-hf backend groups requests
by context.
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.task import FamilyTask, family_dataset
from biasmonkey.tasks.answer_position.codecs import from_lm_eval
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.prompts import CONTINUATIONS, render_prompt
from biasmonkey.tasks.answer_position.scoring import McqRecord


def load_items(**arguments: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the questions of one MMLU subject (dataset_kwargs: subject, prompt)."""
    return family_dataset(FAMILY, arguments)


class AnswerPositionTask(FamilyTask):
    """An answer-position task; its subject and prompt type come from the family's task table."""

    family = FAMILY

    def harness_config(self) -> dict[str, Any]:
        # The continuations carry their own leading space or none.
        return {"output_type": "loglikelihood", "target_delimiter": ""}

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return render_prompt(doc["query"], self.fixed["prompt"])

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return doc["gold"]

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs: Any) -> str:
        if num_fewshot:
            raise ValueError(
                f"{self.config.task}: the answer-position tasks use the authors' fixed prompts and take no "
                f"--num_fewshot (got {num_fewshot}); the *_fewshot tasks hold the two-example prompt"
            )
        return super().fewshot_context(doc=doc, num_fewshot=0, **kwargs)

    def construct_requests(self, doc: dict, ctx: str, **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=(ctx, c), idx=i, **kwargs)
            for i, c in enumerate(CONTINUATIONS)
        ]

    def record(self, doc: dict, results: list) -> McqRecord:
        return from_lm_eval(doc, results)
