"""lm-eval requests of the cognitive-bias tasks: one document = one control/treatment test.

For every test it sends the control then the treatment requests:

- exact mode: the log-likelihood of each answer label "Option N:" after our one-step prompt;
- generate mode, `protocol=one_step`: one greedy answer to our one-step prompt, cut at the first
  blank line, read with the paper's regex;
- generate mode, `protocol=two_step` (the paper's): lm-eval builds all requests before it answers
  any, so the two calls of a side are two runs (`biasmonkey.tasks.cognitive.two_step`): step one
  sends the decision prompts and logs the free answers; step two (`decisions=<step one's
  output>`) sends the extraction prompts built from them and scores the replies as Inspect does.
  Both steps are greedy and end only at the model's end of text or `max_tokens`.
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.task import FamilyTask, family_dataset
from biasmonkey.tasks.cognitive.codecs import record_from_results
from biasmonkey.tasks.cognitive.family import FAMILY
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    ONE_STEP_STOP,
    SIDES,
    answer_labels,
    answer_prompt,
    decision_prompt,
    extraction_prompt,
    side_options,
    side_text,
)
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord
from biasmonkey.tasks.cognitive.two_step import DECIDE, EXTRACT, STEP

log = logging.getLogger(__name__)


def generation_kwargs(options: CognitiveOptions) -> dict[str, Any]:
    """Greedy, as the paper decided at temperature 0. one_step stops at the first blank line;
    two_step, like the authors' API calls, only at the model's end of text (or max_tokens)."""
    return {
        "until": [ONE_STEP_STOP] if options.protocol == "one_step" else [],
        "do_sample": False,
        "temperature": 0.0,
        "max_gen_toks": options.generation_tokens("lm_eval"),
    }


def side_prompt(doc: dict[str, Any], side: str) -> str:
    """What one side of a document asks: the decision or extraction prompt at a step of the
    two-step protocol, else our one-step prompt."""
    step = doc.get(STEP)
    if step == DECIDE:
        return decision_prompt(side_text(doc, side), doc["prompts"])
    if step == EXTRACT:
        return extraction_prompt(side_options(doc, side), doc[f"decision_{side}"], doc["prompts"])
    return answer_prompt(side_text(doc, side))


def load_docs(**arguments: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the tests of one bias (dataset_kwargs: bias)."""
    return family_dataset(FAMILY, arguments)


class CognitiveBiasTask(FamilyTask):
    """A cognitive-bias task whose documents are (control, treatment) tests."""

    family = FAMILY

    def harness_config(self) -> dict[str, Any]:
        if self.options.mode == "exact":
            return {"output_type": "loglikelihood"}
        if self.options.lm_eval_step == DECIDE:
            log.info(
                "biasmonkey: two-step protocol, step one (free answers, no scores yet); run step two with the same "
                "model and options plus --metadata decisions=<this run's --output_path>"
            )
        return {"output_type": "generate_until", "generation_kwargs": generation_kwargs(self.options)}

    # lm-eval renders "views" {"prompt": text}, one per side; a whole test shows its control.
    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return doc["prompt"] if "prompt" in doc else side_prompt(doc, "control")

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return ""  # a bias test has no correct answer

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs: Any) -> list[str]:
        """The control and treatment contexts (system prompt and chat template applied by lm-eval)."""
        if num_fewshot:
            raise ValueError(f"{self.config.task}: the cognitive-bias tests are zero-shot; drop --num_fewshot")
        return [
            super(CognitiveBiasTask, self).fewshot_context(
                doc={"prompt": side_prompt(doc, side)}, num_fewshot=0, **kwargs
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

    def record(self, doc: dict, results: list) -> CognitiveRecord:
        return record_from_results(doc, results, self.options.mode)
