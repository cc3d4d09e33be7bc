"""Cognitive-bias metric (Malberg et al., 2025) for one control/treatment test and per bias.

A test asks the same decision twice: control (answer a_1) and treatment (answer a_2), both
zero-based option indices in the original option order. With the test's parameters k = ±1,
x_1, x_2 the bias score is

    m = k · (|a_1 − x_1| − |a_2 − x_2|) / (max(|a_1 − x_1|, |a_2 − x_2|) + 1e-8)  ∈ [−1, 1],

as in the published dataset card (the paper's eq. 1 without the 1e-8 guard, which makes
m = 0 when both answers sit on their x). Positive m is the direction the bias predicts.

x_1 and x_2 are zero-based option indices too (the authors' `RatioScaleMetric` compares them with
the zero-based decisions, and mirrors an answer as n − 1 − a), so each must lie in [0, n − 1] of
its side's n options: a reference beyond the scale keeps |m| from ever reaching 1 and is refused
(`check_params`), as are answers outside the options.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas

EPSILON = 1e-8


def check_params(k: float, x_1: float, x_2: float, n_1: int, n_2: int) -> None:
    """ValueError unless k = ±1 and each x is a zero-based index of its side's options:
    0 ≤ x_1 ≤ n_1 − 1 (control) and 0 ≤ x_2 ≤ n_2 − 1 (treatment)."""
    if k not in (1, -1):
        raise ValueError(f"k must be 1 or -1, got {k!r}")
    if not (math.isfinite(x_1) and math.isfinite(x_2)):
        raise ValueError(f"x_1 and x_2 must be finite numbers, got {x_1!r}, {x_2!r}")
    if n_1 < 1 or n_2 < 1:
        raise ValueError(f"option counts must be positive, got {n_1} and {n_2}")
    for name, x, n, side in (("x_1", x_1, n_1, "control"), ("x_2", x_2, n_2, "treatment")):
        if not 0 <= x <= n - 1:
            raise ValueError(f"{name} = {x:g} is outside the {n} {side} options' zero-based indices 0 to {n - 1}")


def bias_score(a_1: int, a_2: int, k: float, x_1: float, x_2: float, *, n_1: int, n_2: int) -> float:
    """m for the control answer a_1 and the treatment answer a_2 (zero-based, original order) of a
    test with n_1 control and n_2 treatment options."""
    if not (0 <= a_1 < n_1 and 0 <= a_2 < n_2):
        raise ValueError(
            f"answers are zero-based option indices (control 0 to {n_1 - 1}, treatment 0 to {n_2 - 1}), "
            f"got {a_1} and {a_2}"
        )
    return float(metric_matrix(n_1, n_2, k, x_1, x_2)[a_1, a_2])


def metric_matrix(n_1: int, n_2: int, k: float, x_1: float, x_2: float) -> np.ndarray:
    """M[a_1, a_2] = m(a_1, a_2) for every control answer a_1 < n_1 and treatment answer a_2 < n_2."""
    check_params(k, x_1, x_2, n_1, n_2)
    d_1 = np.abs(np.arange(n_1, dtype=float) - x_1)[:, None]
    d_2 = np.abs(np.arange(n_2, dtype=float) - x_2)[None, :]
    return k * (d_1 - d_2) / (np.maximum(d_1, d_2) + EPSILON) + 0.0  # + 0.0 turns -0.0 into 0.0


def _distribution(p: Sequence[float], side: str) -> np.ndarray:
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1 or arr.size < 1 or np.any(arr < 0) or not math.isclose(arr.sum(), 1.0, abs_tol=1e-6):
        raise ValueError(f"{side} answers: not a probability distribution: {list(np.atleast_1d(arr))}")
    return arr


def expected_metric(p_1: Sequence[float], p_2: Sequence[float], k: float, x_1: float, x_2: float) -> float:
    """E[m] when a_1 ~ p_1 and a_2 ~ p_2 independently (the two prompts are answered separately)."""
    control = _distribution(p_1, "control")
    treatment = _distribution(p_2, "treatment")
    return float(control @ metric_matrix(control.size, treatment.size, k, x_1, x_2) @ treatment)


def random_baseline(n_1: int, n_2: int, k: float, x_1: float, x_2: float) -> float:
    """E[m] when both answers are uniform over their options: what a random chooser scores."""
    return float(metric_matrix(n_1, n_2, k, x_1, x_2).mean())


@dataclass(frozen=True)
class BiasSummary:
    """Set-level numbers of one bias (one task).

    `score` summarises m at the model's answers (argmax in exact mode, the extracted answer in
    generate mode) over the tests that did not fail; `expected_score` is the mean of E[m]
    (exact mode only). Failed tests are counted in `failures`, never averaged in.
    """

    n_tests: int
    failures: int
    score: DeltaSummary
    expected_score: float | None
    random_baseline: float

    @property
    def failure_rate(self) -> float:
        return self.failures / self.n_tests if self.n_tests else float("nan")


def summarize_bias(
    scores: Sequence[float | None],
    baselines: Sequence[float],
    expected_scores: Sequence[float] | None = None,
) -> BiasSummary:
    """Per-bias summary; `scores` holds None for a failed test (no valid answer on a side)."""
    if len(baselines) != len(scores):
        raise ValueError(f"{len(scores)} scores but {len(baselines)} random baselines")
    valid = [s for s in scores if s is not None]

    def mean(values: Sequence[float]) -> float:
        return float(np.mean(values)) if len(values) else float("nan")

    return BiasSummary(
        n_tests=len(scores),
        failures=len(scores) - len(valid),
        score=summarize_deltas(valid),
        expected_score=None if expected_scores is None else mean(expected_scores),
        random_baseline=mean(baselines),
    )
