"""lm-eval adapter: one document = one (q, q') pair of a response-bias task.

The task YAML files in `biasmonkey/tasks/response_bias/` name `PairedResponseTask` as their
`class`. It sends the requests of q then q' for every pair (exact mode: the log-likelihood of
each option letter; sample mode: N sampled answers), turns them into a per-pair record with the
core scoring code, and aggregates records with `biasmonkey.metrics`.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from biasmonkey.metrics import PERTURBATIONS, DeltaSummary, summarize_deltas
from biasmonkey.metrics.virtual_sampling import pair_virtual_values
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.prompts import ANSWER_SPELLINGS, answer_continuations, render_prompt
from biasmonkey.tasks.response_bias.templates import get_template
from biasmonkey.tasks.response_bias.scoring import PairRecord, option_logprobs, score_exact, score_samples

SIDES = ("q", "qp")
R = TypeVar("R")


def load_pairs(bias: str, setting: str, **metadata: Any) -> datasets.DatasetDict:
    """`custom_dataset` hook: the task's pairs as a single `test` split.

    lm-eval calls it with the task's `dataset_kwargs` (bias, setting, optionally reword) merged
    with the run metadata (`--metadata` and the model arguments), so unknown keys are ignored.
    """
    pairs = RunOptions.from_mapping(metadata).task_pairs(bias, setting, reword=bool(metadata.get("reword", False)))
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(pairs)})


# ---------------------------------------------------------------------------- aggregations


def _summary(values: Sequence[float]) -> DeltaSummary:
    """Summary over the pairs that have a Δ (NaN marks a pair without a valid answer)."""
    return summarize_deltas([v for v in values if math.isfinite(v)])


def t_statistic(values: Sequence[float]) -> float:
    return _summary(values).t


def p_value(values: Sequence[float]) -> float:
    return _summary(values).p


def ci_low(values: Sequence[float]) -> float:
    return _summary(values).ci_low


def ci_high(values: Sequence[float]) -> float:
    return _summary(values).ci_high


def count(values: Sequence[float]) -> int:
    return _summary(values).n


def metric_entry(name: str, aggregation: str | Callable, higher_is_better: bool) -> dict[str, Any]:
    return {"metric": name, "aggregation": aggregation, "higher_is_better": higher_is_better}


def t_test_metrics(name: str, count_name: str, higher_is_better: bool) -> list[dict[str, Any]]:
    """The mean of a per-document value (lm-eval's `mean`, with a stderr) and its one-sample
    t-test against 0: `<name>`, `<name>_t`, `<name>_p`, `<name>_ci_low`, `<name>_ci_high`, and
    the number of documents with a value."""
    return [
        metric_entry(name, "mean", higher_is_better),
        metric_entry(f"{name}_t", t_statistic, higher_is_better),
        metric_entry(f"{name}_p", p_value, not higher_is_better),
        metric_entry(f"{name}_ci_low", ci_low, higher_is_better),
        metric_entry(f"{name}_ci_high", ci_high, higher_is_better),
        metric_entry(count_name, count, True),
    ]


def metric_list(mode: str, is_bias: bool, virtual: bool = False) -> list[dict[str, Any]]:
    """What each task reports. `delta` uses lm-eval's `mean`, so it gets a stderr. With virtual
    sampling on, also the Δ of the virtual answers with its t-test, the invalid-answer mass the
    re-ask protocol would have re-asked and its expected draws per question side."""
    metrics = [
        # Positive Δ on a bias task is the human-like direction; on a perturbation, humans show none.
        *t_test_metrics("delta", "n_pairs", is_bias),
        metric_entry("uncertainty_q", "mean", False),
        metric_entry("uncertainty_qp", "mean", False),
    ]
    if mode == "sample":
        metrics.append(metric_entry("invalid_rate", "mean", False))
    if virtual:
        metrics += [
            *t_test_metrics("virtual_delta", "virtual_n_pairs", is_bias),
            metric_entry("invalid_mass", "mean", False),
            metric_entry("virtual_expected_draws", "mean", False),
        ]
    return metrics


def draw_metrics(seeds: Sequence[int], is_bias: bool) -> list[dict[str, Any]]:
    """Per perturbation draw (option perturbation_seeds): `delta_s<seed>` with its t-test and
    `n_pairs_s<seed>`; lm-eval aggregates each over the documents that return it, i.e. its draw."""
    return [m for seed in seeds for m in t_test_metrics(f"delta_s{seed}", f"n_pairs_s{seed}", is_bias)]


def t_test_values(name: str, count_name: str, delta: float | None) -> dict[str, float]:
    """A pair's values for `t_test_metrics(name, count_name, …)`. A pair without Δ (no valid
    answer on a side) is left out of `name` (lm-eval's mean) and enters the other metrics as
    NaN, which their aggregations skip; `count_name` counts the pairs with a Δ, so the shortfall
    is reported, never hidden."""
    value = math.nan if delta is None else delta
    out = dict.fromkeys((f"{name}_t", f"{name}_p", f"{name}_ci_low", f"{name}_ci_high", count_name), value)
    if delta is not None:
        out[name] = delta
    return out


# ---------------------------------------------------------------------------- records


def pair_record(doc: dict, results: Sequence, mode: str) -> PairRecord:
    """The per-pair record from one document's results (filtered responses, in request order)."""
    if mode == "exact":
        # (log-likelihood, is_greedy) per continuation: each option's spellings, q then q'
        lls = option_logprobs([float(r[0]) for r in results])
        n_q = len(doc["q_letters"])
        return score_exact(doc, lls[:n_q], lls[n_q:])
    q_answers, qp_answers = results
    return score_samples(doc, q_answers, qp_answers)


def read_samples_file(path: str | Path, to_record: Callable[[dict, list], R], suite: str) -> list[R]:
    """Records of every document in an lm-eval --log_samples JSONL file; a line that is not
    one of the suite's samples is an error naming the file and line."""
    records = []
    with Path(path).open() as f:
        for line_no, line in enumerate(f, 1):
            sample = json.loads(line)
            try:
                records.append(to_record(sample["doc"], sample["filtered_resps"]))
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"{path}, line {line_no}: not a biasmonkey {suite} sample ({err})") from err
    return records


def read_logged_pair(doc: dict, results: list) -> PairRecord:
    """The record of one logged document (its doc and filtered responses)."""
    # Exact mode logs one (log-likelihood, is_greedy) per spelling of each option, sample mode
    # one list of answers per side (lm-eval writes numbers as strings).
    n_options = len(doc["q_letters"]) + len(doc["qp_letters"])
    mode = "exact" if len(results) == n_options * len(ANSWER_SPELLINGS) else "sample"
    return pair_record(doc, results, mode)


def records_from_samples_file(path: str | Path) -> list[PairRecord]:
    """Rebuild the per-pair records of a task from lm-eval's --log_samples JSONL file."""
    return read_samples_file(path, read_logged_pair, "pair")


# ---------------------------------------------------------------------------- the task


class _FixedShots:
    """Stands in for lm-eval's few-shot sampler: hands out the shots drawn for the current pair."""

    def __init__(self, shots: list[dict[str, str]]):
        self.shots = shots

    def sample(self, n: int, eval_doc: Any = None) -> list[dict[str, str]]:
        return self.shots[:n]


class PairedResponseTask(ConfigurableTask):
    """A response-bias task whose documents are (q, q') pairs."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # TaskConfig does not know the key lm-eval used to find us
        self.options = RunOptions.from_mapping(config.get("metadata"))
        setting = (config.get("dataset_kwargs") or {}).get("setting")
        is_bias = setting == "bias"
        # Perturbation tasks run with perturbation_seeds report every draw beside the pooled numbers.
        self.draw_seeds = (self.options.perturbation_seeds or ()) if setting in PERTURBATIONS else ()
        config.update(
            output_type="loglikelihood" if self.options.mode == "exact" else "generate_until",
            test_split="test",
            process_results=self.process_pair,
            metric_list=metric_list(self.options.mode, is_bias, virtual=self.options.virtual_samples > 0)
            + draw_metrics(self.draw_seeds, is_bias),
        )
        if self.options.mode == "sample":
            n = self.options.n_samples
            template = get_template(self.options.template)
            config.update(
                repeats=n,
                # The paper's protocol: one answer token at temperature 1 (a generation template:
                # up to its max_new_tokens, to the end of text). With lm-eval's cache on,
                # do_sample must be explicit or repeats would be served from the cache.
                generation_kwargs={
                    "until": [] if template.generates else ["\n"],
                    "do_sample": True,
                    "temperature": 1.0,
                    "max_gen_toks": template.max_new_tokens,
                },
                # Keep every sampled answer (lm-eval's default filter keeps only the first).
                filter_list=[{"name": "all_samples", "filter": [{"function": "take_first_k", "k": n}]}],
            )
        super().__init__(config=config, **kwargs)

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
                # Each letter with and without a leading space: one forward pass per context
                # all the same, since every continuation is a single token.
                args = [(context, cont) for cont in answer_continuations(doc[f"{side}_letters"])]
            else:
                args = [(context, dict(self.config.generation_kwargs))]
            for arg in args:
                requests.append(
                    Instance(request_type=self.OUTPUT_TYPE, doc=doc, arguments=arg, idx=len(requests), **kwargs)
                )
        return requests

    def process_pair(self, doc: dict, results: list) -> dict[str, float]:
        record = pair_record(doc, results, self.options.mode)
        out = t_test_values("delta", "n_pairs", record.delta)
        if record.uncertainty_q is not None:
            out["uncertainty_q"] = record.uncertainty_q
        if record.uncertainty_qp is not None:
            out["uncertainty_qp"] = record.uncertainty_qp
        if self.options.mode == "sample":
            out["invalid_rate"] = record.n_invalid / record.n_answers
        if self.options.virtual_samples:
            values = pair_virtual_values(record, self.options.virtual_samples, self.options.virtual_seed)
            # the t-test aggregations read the pair's virtual Δ, as the `delta` ones read Δ
            t_test_names = ("virtual_delta_t", "virtual_delta_p", "virtual_delta_ci_low", "virtual_delta_ci_high", "virtual_n_pairs")
            out.update(values, **dict.fromkeys(t_test_names, values["virtual_delta"]))
        if self.draw_seeds:
            seed = record.perturbation_seed
            out.update(t_test_values(f"delta_s{seed}", f"n_pairs_s{seed}", record.delta))
        return out
