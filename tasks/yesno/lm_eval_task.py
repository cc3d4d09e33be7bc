"""lm-eval requests of the yes-no tasks: one document = one yes-no question.

Per document eight `loglikelihood` requests: the four answer continuations (" Yes", "Yes", " No",
"No") after the prompt, then the same four after an empty context, which lm-eval's HF backend
scores after the model's prefix token alone (BOS, else EOS: `TemplateLM.loglikelihood` with
`prefix_token_id`) — the no-context log-probabilities of the Generic correction. They are the
same for every document, and lm-eval's logits cache computes them once.
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.task import FamilyTask, family_dataset
from biasmonkey.tasks.yesno.codecs import from_lm_eval
from biasmonkey.tasks.yesno.family import FAMILY
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt
from biasmonkey.tasks.yesno.scoring import ItemRecord


def load_items(**arguments: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the items of a question set or EWoK domain (dataset_kwargs: dataset, domain, prompt)."""
    return family_dataset(FAMILY, arguments)


class YesNoTask(FamilyTask):
    """A yes-no task; its question set, EWoK domain and prompt come from the family's task table."""

    family = FAMILY

    def harness_config(self) -> dict[str, Any]:
        # The continuations carry their own leading space or none.
        return {"output_type": "loglikelihood", "target_delimiter": ""}

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return render_prompt(doc["query"], doc["dataset"], self.fixed["prompt"])

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

    def record(self, doc: dict, results: list) -> ItemRecord:
        return from_lm_eval(doc, results)
