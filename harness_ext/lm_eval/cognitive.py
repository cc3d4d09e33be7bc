"""lm-eval requests of the cognitive-bias tasks: one document = one control/treatment test.

For every test it sends the control then the treatment requests (exact mode: the log-likelihood
of each answer label "Option N:"; generate mode: one greedy answer per prompt).

Generate mode here is one step: lm-eval cannot chain a second generation on the first one's
output, so the prompt asks for the option line directly and the paper's regex reads the
answer. That prompt (`prompts.BIASMONKEY_ONE_STEP_PROMPT`, also exact mode's) is our own
wording, by necessity: the paper has none. The paper's two-step protocol with the authors'
exact prompts (free answer, then an extraction prompt) needs a harness that can chain calls
(the Inspect adapter).
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.task import FamilyTask, family_dataset
from biasmonkey.tasks.cognitive.codecs import record_from_results
from biasmonkey.tasks.cognitive.family import FAMILY
from biasmonkey.tasks.cognitive.prompts import (
    ONE_STEP_MAX_TOKENS,
    ONE_STEP_STOP,
    SIDES,
    answer_labels,
    answer_prompt,
    side_text,
)
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord

# Greedy, as the paper decided at temperature 0; long enough for "Option 11: 100%" and some preamble.
GENERATION_KWARGS = {
    "until": [ONE_STEP_STOP],
    "do_sample": False,
    "temperature": 0.0,
    "max_gen_toks": ONE_STEP_MAX_TOKENS,
}


def load_docs(**arguments: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the tests of one bias (dataset_kwargs: bias)."""
    return family_dataset(FAMILY, arguments)


class CognitiveBiasTask(FamilyTask):
    """A cognitive-bias task whose documents are (control, treatment) tests."""

    family = FAMILY

    def harness_config(self) -> dict[str, Any]:
        if self.options.mode == "exact":
            return {"output_type": "loglikelihood"}
        return {"output_type": "generate_until", "generation_kwargs": dict(GENERATION_KWARGS)}

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

    def record(self, doc: dict, results: list) -> CognitiveRecord:
        return record_from_results(doc, results, self.options.mode)
