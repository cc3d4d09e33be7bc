"""lm-eval requests of the response-bias tasks: one document = one (q, q') pair.

For every pair it sends the requests of q then q': in exact mode the log-likelihood of each
option letter with and without a leading space (one forward pass per context all the same,
since every continuation is a single token), in sample mode N sampled answers per side.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import datasets
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.task import FamilyTask, family_dataset
from biasmonkey.tasks.response_bias.codecs import SIDES, record_from_results
from biasmonkey.tasks.response_bias.family import FAMILY
from biasmonkey.tasks.response_bias.prompts import answer_continuations, render_prompt
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.templates import get_template


def load_pairs(**arguments: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the task's pairs (dataset_kwargs: bias, setting, reword)."""
    return family_dataset(FAMILY, arguments)


class _FixedShots:
    """Stands in for lm-eval's few-shot sampler: hands out the shots drawn for the current pair."""

    def __init__(self, shots: list[dict[str, str]]):
        self.shots = shots

    def sample(self, n: int, eval_doc: Any = None) -> list[dict[str, str]]:
        return self.shots[:n]


class PairedResponseTask(FamilyTask):
    """A response-bias task whose documents are (q, q') pairs."""

    family = FAMILY

    def harness_config(self) -> dict[str, Any]:
        if self.options.mode == "exact":
            return {"output_type": "loglikelihood"}
        n = self.options.n_samples
        template = get_template(self.options.template)
        return {
            "output_type": "generate_until",
            "repeats": n,
            # The paper's protocol: one answer token at temperature 1 (a generation template: up
            # to its max_new_tokens, to the end of text). With lm-eval's cache on, do_sample must
            # be explicit or repeats would be served from the cache.
            "generation_kwargs": {
                "until": [] if template.generates else ["\n"],
                "do_sample": True,
                "temperature": 1.0,
                "max_gen_toks": template.max_new_tokens,
            },
            # Keep every sampled answer (lm-eval's default filter keeps only the first).
            "filter_list": [{"name": "all_samples", "filter": [{"function": "take_first_k", "k": n}]}],
        }

    # Documents are rendered per side: a "view" {"question": text, "target": letter?}.
    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        question = doc["question"] if "question" in doc else doc["q"]
        return render_prompt(question, self.options.template)

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return doc.get("target", "")

    def _draw_shots(self, doc: dict, num_fewshot: int) -> list[dict[str, str]]:
        """Few-shot examples for a pair: other pairs' original questions, drawn once per pair.

        Survey questions have no correct answer; each example shows a letter drawn uniformly
        from its options, which demonstrates the format without favouring an option position.
        """
        if num_fewshot <= 0:
            return []
        # other questions, once each (with perturbation_seeds a question has one doc per draw)
        others = list({d["key"]: d for d in self.eval_docs if d["key"] != doc["key"]}.values())
        if num_fewshot > len(others):
            raise ValueError(f"{self.config.task}: num_fewshot={num_fewshot} but only {len(others)} other pairs")
        seed = hashlib.sha256(f"{self.options.fewshot_seed}:{doc['key']}".encode()).digest()
        rng = random.Random(int.from_bytes(seed[:8], "big"))
        return [{"question": d["q"], "target": rng.choice(d["q_letters"])} for d in rng.sample(others, num_fewshot)]

    def fewshot_context(self, doc: dict, num_fewshot: int, **kwargs: Any) -> list[str]:
        """Contexts for q and q', built by lm-eval from the same few-shot draw."""
        self.sampler = _FixedShots(self._draw_shots(doc, num_fewshot))
        return [
            super(PairedResponseTask, self).fewshot_context(
                doc={"question": doc[side]}, num_fewshot=len(self.sampler.shots), **kwargs
            )
            for side in SIDES
        ]

    def construct_requests(self, doc: dict, ctx: list[str], **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        requests = []
        for side, context in zip(SIDES, ctx):
            if self.options.mode == "exact":
                args = [(context, cont) for cont in answer_continuations(doc[f"{side}_letters"])]
            else:
                args = [(context, dict(self.config.generation_kwargs))]
            for arg in args:
                requests.append(
                    Instance(request_type=self.OUTPUT_TYPE, doc=doc, arguments=arg, idx=len(requests), **kwargs)
                )
        return requests

    def record(self, doc: dict, results: list) -> PairRecord:
        return record_from_results(doc, results, self.options.mode)
