"""Per-pair records to and from what each harness logs.

- lm-eval `--log_samples`: each document's `doc` (the pair) and `filtered_resps` (exact mode: one
  `(log-likelihood, is_greedy)` per spelling of each option, q then q'; sample mode: one list of
  answers per side; lm-eval writes the numbers as strings, an imputed top-k floor as "-7.25 imputed").
- Inspect: `Score.value` holds the record's numbers as a flat dict, so that `--epochs` reduce it
  key by key: `delta`, `uncertainty_q`, `uncertainty_qp`, `n_answers`, `n_invalid`, `n_imputed`,
  the answer weights per offered option `q_0`, `q_1`, …, `qp_0`, … (probabilities in exact mode,
  counts of valid answers in sample mode, so sampled answers pool over epochs), the valid masses in
  exact mode and the pair's virtual-sampling values when that option is on. The sample's
  metadata is the pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from biasmonkey.metrics.top_logprobs import logged_logprob
from biasmonkey.metrics.virtual_sampling import pair_virtual_values
from biasmonkey.tasks.contract import LoggedScore
from biasmonkey.tasks.response_bias.prompts import ANSWER_SPELLINGS
from biasmonkey.tasks.response_bias.scoring import (
    PairRecord,
    option_logprobs,
    score_exact,
    score_samples,
    score_weights,
)

SIDES = ("q", "qp")


def record_from_results(doc: Mapping[str, Any], results: Sequence[Any], mode: str) -> PairRecord:
    """The record of one lm-eval document from its results (filtered responses, in request order)."""
    if mode == "exact":
        values = [logged_logprob(r[0]) for r in results]
        lls = option_logprobs([lp for lp, _ in values])
        n_q = len(doc["q_letters"])
        return score_exact(doc, lls[:n_q], lls[n_q:], n_imputed=sum(imputed for _, imputed in values))
    q_answers, qp_answers = results
    return score_samples(doc, q_answers, qp_answers)


def from_lm_eval(doc: Mapping[str, Any], results: list[Any]) -> PairRecord:
    """The record of one logged document; the number of results tells the mode."""
    n_options = len(doc["q_letters"]) + len(doc["qp_letters"])
    mode = "exact" if len(results) == n_options * len(ANSWER_SPELLINGS) else "sample"
    return record_from_results(doc, results, mode)


def score_value(
    record: PairRecord,
    q_weights: Sequence[float],
    qp_weights: Sequence[float],
    virtual_samples: int = 0,
    virtual_seed: int = 0,
) -> dict[str, float]:
    """The record as Inspect's `Score.value` (see the module docstring)."""
    value: dict[str, float] = {
        "delta": math.nan if record.delta is None else record.delta,
        "uncertainty_q": math.nan if record.uncertainty_q is None else record.uncertainty_q,
        "uncertainty_qp": math.nan if record.uncertainty_qp is None else record.uncertainty_qp,
        "n_answers": record.n_answers,
        "n_invalid": record.n_invalid,
        "n_imputed": record.n_imputed,
    }
    for side, weights in zip(SIDES, (q_weights, qp_weights)):
        value.update({f"{side}_{i}": float(w) for i, w in enumerate(weights)})
    if record.valid_mass_q is not None and record.valid_mass_qp is not None:
        value.update(valid_mass_q=record.valid_mass_q, valid_mass_qp=record.valid_mass_qp)
    if virtual_samples:
        value.update(pair_virtual_values(record, virtual_samples, virtual_seed))
    return value


def from_inspect(score: LoggedScore) -> PairRecord:
    """The record behind a (possibly epoch-reduced) score: the pair's distributions rebuilt from
    the (averaged) answer weights."""
    doc, value = score.sample_metadata, score.value
    if not isinstance(value, dict) or "key" not in doc:
        raise ValueError(f"sample {score.sample_id}: not a biasmonkey pair score")
    q, qp = ([value[f"{side}_{i}"] for i in range(len(doc[f"{side}_letters"]))] for side in SIDES)
    return score_weights(
        doc,
        q,
        qp,
        n_answers=value["n_answers"],
        n_invalid=value["n_invalid"],
        valid_mass_q=value.get("valid_mass_q"),
        valid_mass_qp=value.get("valid_mass_qp"),  # absent in older logs
        n_imputed=value.get("n_imputed", 0),
    )
