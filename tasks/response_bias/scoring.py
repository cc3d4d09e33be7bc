"""Per-pair records: the contract between the harness adapters and the metrics.

An adapter turns one pair's model outputs (option log-probabilities in exact mode, sampled
answers in sample mode) into a PairRecord; every set-level number is computed from a list of
records by `biasmonkey.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from biasmonkey.metrics import (
    distribution_from_counts,
    distribution_from_logprobs,
    normalized_entropy,
    pair_delta,
)
from biasmonkey.tasks.response_bias.prompts import ANSWER_SPELLINGS, parse_output


@dataclass(frozen=True)
class PairRecord:
    key: str
    bias: str
    setting: str
    p_q: list[float] | None  # answer distribution over q's options (None: no valid answer)
    p_qp: list[float] | None  # over q''s options, in the order they were offered
    delta: float | None  # percentage points; None when a side has no valid answer
    uncertainty_q: float | None
    uncertainty_qp: float | None
    n_answers: float = 0  # sampled answers per pair (both sides; an epoch mean in Inspect); 0 in exact mode
    n_invalid: float = 0
    # Exact mode: total probability of all option spellings before renormalising (1 − the mass
    # the re-ask protocol would re-ask); None in sample mode and in records from older logs.
    valid_mass_q: float | None = None
    valid_mass_qp: float | None = None
    qp_positions: list[int] | None = None  # q' option -> q position (None: identity), for re-scoring
    perturbation_seed: int | None = None  # the seeded perturbation draw of q' (None: the published q')
    # Exact mode from top log-probabilities (Inspect, served models): options missing from the
    # top-k, given the documented floor (`biasmonkey.metrics.top_logprobs`); 0 where every option was scored.
    n_imputed: float = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PairRecord:
        return cls(**d)


def _record(
    doc: Mapping[str, Any], p_q: np.ndarray | None, p_qp: np.ndarray | None, **counts: float | None
) -> PairRecord:
    delta = None
    if p_q is not None and p_qp is not None:
        delta = pair_delta(doc["bias"], doc["setting"], p_q, p_qp, doc["qp_positions"])
    return PairRecord(
        key=doc["key"],
        bias=doc["bias"],
        setting=doc["setting"],
        p_q=None if p_q is None else p_q.tolist(),
        p_qp=None if p_qp is None else p_qp.tolist(),
        delta=delta,
        uncertainty_q=None if p_q is None else normalized_entropy(p_q),
        uncertainty_qp=None if p_qp is None else normalized_entropy(p_qp),
        qp_positions=list(doc["qp_positions"]),
        perturbation_seed=doc.get("perturbation_seed"),
        **counts,
    )


def score_exact(
    doc: Mapping[str, Any], q_logprobs: Sequence[float], qp_logprobs: Sequence[float], n_imputed: int = 0
) -> PairRecord:
    """Exact mode: each side's option log-probabilities, renormalised over the offered options
    (n_imputed: how many of them are imputed floors)."""
    for side, lps, letters in (("q", q_logprobs, doc["q_letters"]), ("q'", qp_logprobs, doc["qp_letters"])):
        if len(lps) != len(letters):
            raise ValueError(f"pair {doc['key']}: {len(lps)} log-probabilities for {side}'s {len(letters)} options")
    return _record(
        doc,
        distribution_from_logprobs(q_logprobs),
        distribution_from_logprobs(qp_logprobs),
        valid_mass_q=valid_mass(q_logprobs),
        valid_mass_qp=valid_mass(qp_logprobs),
        n_imputed=n_imputed,
    )


def valid_mass(option_logprobs: Sequence[float]) -> float:
    """Total probability of a side's valid answers (its options' log-probabilities, all spellings)."""
    return float(np.exp(np.logaddexp.reduce(np.asarray(option_logprobs, dtype=float))))


def score_weights(
    doc: Mapping[str, Any],
    q_weights: Sequence[float],
    qp_weights: Sequence[float],
    n_answers: float = 0,
    n_invalid: float = 0,
    valid_mass_q: float | None = None,
    valid_mass_qp: float | None = None,
    n_imputed: float = 0,
) -> PairRecord:
    """A record from non-negative answer weights per option (probabilities, or counts of valid
    answers pooled over epochs); a side whose weights sum to 0 has no valid answer."""
    sides = []
    for side, weights, letters in (("q", q_weights, doc["q_letters"]), ("q'", qp_weights, doc["qp_letters"])):
        if len(weights) != len(letters):
            raise ValueError(f"pair {doc['key']}: {len(weights)} weights for {side}'s {len(letters)} options")
        sides.append(distribution_from_counts(weights) if sum(weights) > 0 else None)
    return _record(
        doc,
        *sides,
        n_answers=n_answers,
        n_invalid=n_invalid,
        valid_mass_q=valid_mass_q,
        valid_mass_qp=valid_mass_qp,
        n_imputed=n_imputed,
    )


def option_logprobs(spelling_logprobs: Sequence[float]) -> list[float]:
    """Per-option log-probabilities from the log-probabilities of each option's spellings
    (ordered as `answer_continuations` lists them): log(P(" A") + P("A")) for option A."""
    n = len(ANSWER_SPELLINGS)
    if len(spelling_logprobs) % n:
        raise ValueError(f"{len(spelling_logprobs)} log-probabilities is not {n} spellings per option")
    grouped = np.asarray(spelling_logprobs, dtype=float).reshape(-1, n)
    return np.logaddexp.reduce(grouped, axis=1).tolist()


def answer_counts(answers: Sequence[str], letters: Sequence[str], template: str = "default") -> tuple[np.ndarray, int]:
    """Counts per option and the number of invalid answers (outputs read as `template` asks)."""
    counts = np.zeros(len(letters), dtype=int)
    invalid = 0
    for text in answers:
        idx = parse_output(text, tuple(letters), template)
        if idx is None:
            invalid += 1
        else:
            counts[idx] += 1
    return counts, invalid


def sample_counts(
    doc: Mapping[str, Any], q_answers: Sequence[str], qp_answers: Sequence[str]
) -> tuple[list[int], list[int], int, int]:
    """Valid answers per option of q and of q', the number of answers and of invalid ones
    (read with the doc's prompt template; docs without one used the default)."""
    template = doc.get("template") or "default"
    q_counts, q_invalid = answer_counts(q_answers, doc["q_letters"], template)
    qp_counts, qp_invalid = answer_counts(qp_answers, doc["qp_letters"], template)
    return q_counts.tolist(), qp_counts.tolist(), len(q_answers) + len(qp_answers), q_invalid + qp_invalid


def score_samples(doc: Mapping[str, Any], q_answers: Sequence[str], qp_answers: Sequence[str]) -> PairRecord:
    """Sample mode: shares of valid answers (the paper re-asked until an answer was valid).

    Invalid answers are counted in n_invalid; a side without any valid answer has no
    distribution, and the pair has no Δ (it is excluded from the t-test and reported).
    """
    return score_weights(doc, *sample_counts(doc, q_answers, qp_answers))
