"""Representativeness of a model's answers to human ones (OpinionQA; Tjuatja et al. preprint, App. E).

Per question with n ordinal options at positions 0 … n−1:
    score = 1 − W1(model, human) / (n − 1),
W1 being the 1-Wasserstein distance between the two answer distributions over the positions
(for unit-spaced positions, the sum of the absolute differences of the two CDFs). 1 means the
same distribution; 0 means all mass at opposite ends. Refusal options (a survey's "Refused") are
not ordinal: they are removed from both distributions, which are renormalised over the ordinal
options, and their shares are reported beside the score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import wasserstein_distance


@dataclass(frozen=True)
class QuestionScore:
    key: str
    n_options: int  # ordinal options compared
    score: float  # 1 − W1 / (n − 1)
    wasserstein: float
    model_refusal: float  # model's share on refusal options (0 when the question offers none)
    human_refusal: float  # human share on refusal options and answers the model was not offered


def _ordinal_shares(shares: Sequence[float], refusal: Sequence[int], who: str, key: str) -> tuple[np.ndarray, float]:
    """The distribution over the non-refusal options, renormalised, and the refusal options' share
    (as given: a share of all answers)."""
    p = np.asarray(shares, dtype=float)
    if np.any(p < 0) or not np.all(np.isfinite(p)):
        raise ValueError(f"question {key}: {who} shares must be finite and non-negative, got {list(p)}")
    keep = np.ones(p.size, dtype=bool)
    keep[list(refusal)] = False
    ordinal = p[keep]
    if ordinal.sum() <= 0:
        raise ValueError(f"question {key}: {who} puts no mass on the ordinal options")
    return ordinal / ordinal.sum(), float(p[~keep].sum())


def question_representativeness(
    key: str,
    model: Sequence[float],
    human: Sequence[float],
    refusal_options: Sequence[int] = (),
    human_extra_refusal: float = 0.0,
) -> QuestionScore:
    """Score of one question. `model` and `human` are shares over the same offered options (in
    order), each a share of all answers; `refusal_options` are the positions of refusal options
    among them; `human_extra_refusal` is the human share of a refusal the model was not offered."""
    if len(model) != len(human):
        raise ValueError(f"question {key}: the model has {len(model)} options, the human data {len(human)}")
    if any(not 0 <= i < len(model) for i in refusal_options):
        raise ValueError(
            f"question {key}: refusal option positions {list(refusal_options)} outside 0..{len(model) - 1}"
        )
    m, model_refusal = _ordinal_shares(model, refusal_options, "the model", key)
    h, human_refusal = _ordinal_shares(human, refusal_options, "the human data", key)
    n = m.size
    if n < 2:
        raise ValueError(f"question {key}: representativeness needs at least two ordinal options, got {n}")
    positions = np.arange(n)
    w1 = float(wasserstein_distance(positions, positions, m, h))
    return QuestionScore(key, n, 1 - w1 / (n - 1), w1, model_refusal, human_refusal + human_extra_refusal)


def mean_representativeness(scores: Iterable[QuestionScore]) -> float:
    """The mean score over questions (NaN for none)."""
    values = [s.score for s in scores]
    return float(np.mean(values)) if values else math.nan
