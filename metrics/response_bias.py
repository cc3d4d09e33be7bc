"""Per-pair change Δ for the survey response biases (Tjuatja et al., TACL 2024).

A pair is (q, q'): the control question q and the treatment q' (a biased rewording or a
perturbed copy of q). Each side has an answer distribution over its own options. q'
options are first mapped onto q's option positions (response order reverses them; the
4-option odd/even question skips the middle position), then Δ compares the probability
mass on the bias's target options, in percentage points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BIASES = ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
PERTURBATIONS = ("key_typo", "middle_random", "letter_swap")
SETTINGS = ("bias", *PERTURBATIONS)

A, B, C, D = 0, 1, 2, 3  # option positions in the original question


@dataclass(frozen=True)
class DeltaRule:
    """Δ = sign · 100 · (mass of q' on treatment_targets − mass of q on control_targets)."""

    control_targets: tuple[int, ...]
    treatment_targets: tuple[int, ...]
    sign: int


# (bias, is_perturbation) -> rule; perturbation rows use the bias's targets on both sides.
_RULES: dict[tuple[str, bool], DeltaRule] = {
    ("acquiescence", False): DeltaRule((A,), (A,), +1),
    ("acquiescence", True): DeltaRule((A,), (A,), +1),
    ("allow_forbid", False): DeltaRule((B,), (A,), -1),  # q[b] − q'[a] (TACL sign)
    ("allow_forbid", True): DeltaRule((B,), (B,), -1),
    ("response_order", False): DeltaRule((A,), (A,), -1),
    ("response_order", True): DeltaRule((A,), (A,), -1),
    ("opinion_float", False): DeltaRule((C,), (C,), -1),
    ("opinion_float", True): DeltaRule((C,), (C,), -1),
    ("odd_even", False): DeltaRule((B, D), (B, D), +1),
    ("odd_even", True): DeltaRule((B, D), (B, D), +1),
}


def delta_rule(bias: str, setting: str) -> DeltaRule:
    if bias not in BIASES:
        raise ValueError(f"unknown bias {bias!r}; expected one of {', '.join(BIASES)}")
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    return _RULES[(bias, setting != "bias")]


def to_original_positions(dist: Sequence[float], positions: Sequence[int]) -> np.ndarray:
    """Place q' option i's mass at original position positions[i]."""
    if len(dist) != len(positions):
        raise ValueError(f"{len(dist)} probabilities for {len(positions)} option positions")
    mapped = np.zeros(max(positions) + 1)
    mapped[list(positions)] = dist
    return mapped


def pair_delta(
    bias: str,
    setting: str,
    p_q: Sequence[float],
    p_qp: Sequence[float],
    qp_positions: Sequence[int] | None = None,
) -> float:
    """Δ in percentage points from the answer distributions of q and q'.

    p_q and p_qp are probabilities (or count shares) over each question's options in the
    order they were offered; qp_positions maps q' options to q's positions (identity if None).
    """
    rule = delta_rule(bias, setting)
    q = np.asarray(p_q, dtype=float)
    qp = np.asarray(p_qp, dtype=float)
    if qp_positions is not None:
        qp = to_original_positions(qp, qp_positions)
    for name, dist, targets in (("q", q, rule.control_targets), ("q'", qp, rule.treatment_targets)):
        if max(targets) >= len(dist):
            raise ValueError(
                f"{bias}/{setting}: {name} has {len(dist)} options but Δ needs option {'abcde'[max(targets)]}"
            )
    treated = qp[list(rule.treatment_targets)].sum()
    control = q[list(rule.control_targets)].sum()
    return float(rule.sign * 100.0 * (treated - control))


def distribution_from_logprobs(logprobs: Sequence[float]) -> np.ndarray:
    """Softmax over the offered options' log-probabilities (exact mode)."""
    x = np.asarray(logprobs, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"option log-probabilities must be finite, got {list(x)}")
    e = np.exp(x - x.max())
    return e / e.sum()


def distribution_from_counts(counts: Sequence[int], total: int | None = None) -> np.ndarray:
    """Answer shares from counts; total defaults to the number of valid answers.

    The authors' released samples divide by the number of rows (50) even when some rows are
    empty, so score-samples passes that row count as total.
    """
    c = np.asarray(counts, dtype=float)
    if np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError(f"answer counts must be finite and non-negative, got {list(c)}")
    n = float(c.sum() if total is None else total)
    if n <= 0:
        raise ValueError("no answers to build a distribution from")
    if n < c.sum():
        raise ValueError(f"total {total} is smaller than the {int(c.sum())} counted answers")
    return c / n
