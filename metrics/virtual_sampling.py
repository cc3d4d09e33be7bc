"""Virtual sampling: the paper's "re-ask until N valid answers" protocol, drawn from exact mode.

Exact mode gives each question's answer distribution renormalised over the valid options, which
is exactly the distribution of a valid answer under the re-ask protocol. Drawing N answers from it
reproduces the protocol's sampling noise without N forward passes; the probability mass outside
the valid options (valid_mass < 1) is what the protocol would have re-asked, so a side needs
N / valid_mass draws on average to collect N valid answers.

Determinism: each side's draws come from its own PCG64 stream seeded with a sha256 of
(seed, task, key, side and the perturbation draw if any), so the same seed gives the same answers on every machine and in both
harnesses. The draws are inverse-CDF lookups of uniforms built from the raw 64-bit PCG64 output
((x >> 11) · 2⁻⁵³), which NumPy pins across versions; `Generator.multinomial` is not used because
NumPy allows its algorithm to change between releases and it calls the platform's libm.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from biasmonkey.metrics.response_bias import distribution_from_counts, pair_delta
from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas

SIDES = ("q", "qp")
VALID_MASS_TOLERANCE = 1e-6  # float slack above 1 for a sum of probabilities


class VirtualPair(Protocol):
    """What virtual sampling needs of a per-pair record (`PairRecord` has these fields)."""

    key: str
    bias: str
    setting: str
    p_q: list[float] | None
    p_qp: list[float] | None
    qp_positions: list[int] | None
    valid_mass_q: float | None
    valid_mass_qp: float | None


def side_generator(seed: int, label: str) -> np.random.Generator:
    """The PCG64 stream of one question side: seeded with sha256(f"{seed}:{label}")."""
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "big")))


def draw_counts(p: Sequence[float], n: int, seed: int, label: str) -> np.ndarray:
    """Counts per option of n answers drawn from distribution p (the side's own seeded stream)."""
    probs = np.asarray(p, dtype=float)
    if probs.size == 0 or np.any(probs < 0) or not math.isclose(probs.sum(), 1.0, abs_tol=1e-6):
        raise ValueError(f"{label}: not a probability distribution: {list(probs)}")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"virtual samples must be a positive integer, got {n!r}")
    raw = side_generator(seed, label).bit_generator.random_raw(n)
    uniforms = (raw >> np.uint64(11)).astype(float) * 2.0**-53  # in [0, 1)
    cdf = np.cumsum(probs)
    # Option i takes [cdf[i-1], cdf[i]); a zero-probability option has an empty interval. A
    # uniform above the rounded total goes to the last option with positive probability.
    options = np.minimum(np.searchsorted(cdf, uniforms, side="right"), np.flatnonzero(probs)[-1])
    return np.bincount(options, minlength=probs.size)


def side_label(pair: VirtualPair, side: str) -> str:
    """The stream name of one side: task, pair key and perturbation draw (when the record has
    one), so every task's and every draw's virtual answers are independent."""
    draw = getattr(pair, "perturbation_seed", None)
    return f"{pair.bias}:{pair.setting}:{pair.key}:{side}" + ("" if draw is None else f":draw{draw}")


def virtual_counts(pair: VirtualPair, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The n virtual answers per option of q and of q' (in the order each side offered them)."""
    if pair.p_q is None or pair.p_qp is None:
        raise ValueError(f"pair {pair.key}: virtual sampling needs both answer distributions (exact mode)")
    return draw_counts(pair.p_q, n, seed, side_label(pair, "q")), draw_counts(
        pair.p_qp, n, seed, side_label(pair, "qp")
    )


def virtual_delta(pair: VirtualPair, n: int, seed: int) -> float:
    """Δ of the pair computed from its virtual answer counts, as the paper computes it from samples."""
    q, qp = virtual_counts(pair, n, seed)
    return pair_delta(
        pair.bias, pair.setting, distribution_from_counts(q), distribution_from_counts(qp), pair.qp_positions
    )


def invalid_masses(pair: VirtualPair) -> tuple[float, float] | None:
    """1 − valid mass of q and of q' (None when the record has no valid mass, e.g. an old log)."""
    if pair.valid_mass_q is None or pair.valid_mass_qp is None:
        return None
    out = []
    for side, mass in zip(SIDES, (pair.valid_mass_q, pair.valid_mass_qp)):
        if not 0 < mass <= 1 + VALID_MASS_TOLERANCE:
            raise ValueError(f"pair {pair.key}: valid mass of {side} is {mass}, not a probability in (0, 1]")
        out.append(max(1.0 - mass, 0.0))
    return out[0], out[1]


def expected_draws(pair: VirtualPair, n: int) -> float | None:
    """Mean over q and q' of n / valid mass: answers the re-ask protocol draws to keep n valid ones."""
    masses = invalid_masses(pair)
    return None if masses is None else float(np.mean([n / (1.0 - m) for m in masses]))


def mean_invalid_mass(pair: VirtualPair) -> float | None:
    """Mean over q and q' of the invalid-answer mass the re-ask protocol would have re-asked."""
    masses = invalid_masses(pair)
    return None if masses is None else float(np.mean(masses))


@dataclass(frozen=True)
class VirtualStatistics:
    """The sampled-protocol statistics of one task's pairs."""

    n_samples: int
    seed: int
    delta: DeltaSummary  # t-test of the virtual Δ over the pairs with both distributions
    pairs_without_distribution: int  # pairs left out (a side had no answer distribution)
    invalid_mass: float  # mean over pair sides of 1 − valid mass (NaN if no record has it)
    expected_draws: float  # mean over pair sides of n / valid mass
    pairs_without_valid_mass: int  # records without a valid mass (sample mode, logs before it)


def virtual_statistics(pairs: Iterable[VirtualPair], n: int, seed: int) -> VirtualStatistics:
    """Virtual Δ t-test, invalid mass and expected draws of a task, from its per-pair records."""
    pairs = list(pairs)
    scored = [p for p in pairs if p.p_q is not None and p.p_qp is not None]
    invalid = [m for m in map(mean_invalid_mass, pairs) if m is not None]
    draws = [d for d in (expected_draws(p, n) for p in pairs) if d is not None]
    return VirtualStatistics(
        n_samples=n,
        seed=seed,
        delta=summarize_deltas([virtual_delta(p, n, seed) for p in scored]),
        pairs_without_distribution=len(pairs) - len(scored),
        invalid_mass=float(np.mean(invalid)) if invalid else math.nan,
        expected_draws=float(np.mean(draws)) if draws else math.nan,
        pairs_without_valid_mass=len(pairs) - len(invalid),
    )


def pair_virtual_values(pair: VirtualPair, n: int, seed: int) -> dict[str, float]:
    """One exact-mode pair's `virtual_delta`, `invalid_mass` and `virtual_expected_draws`, as both
    harness adapters report them per pair (NaN where the record has no valid mass)."""
    invalid, draws = mean_invalid_mass(pair), expected_draws(pair, n)
    return {
        "virtual_delta": virtual_delta(pair, n, seed),
        "invalid_mass": math.nan if invalid is None else invalid,
        "virtual_expected_draws": math.nan if draws is None else draws,
    }
