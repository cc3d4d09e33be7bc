"""Statistical power of the one-sample (paired) t-test that every Δ of the report uses.

The minimum detectable effect (MDE) at n pairs: the smallest true mean Δ that a two-sided
one-sample t-test at level α finds with probability `power`, by the usual approximation

    MDE ≈ (t_{1−α/2, n−1} + t_{power, n−1}) · sd / √n

with sd the per-pair standard deviation of Δ. A run whose MDE exceeds the effects it is compared
with cannot tell "no effect" from "too few pairs"."""

from __future__ import annotations

import math

from scipy import stats

ALPHA = 0.05
POWER = 0.8


def minimum_detectable_effect(n: int, sd: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The MDE of a two-sided one-sample t-test over `n` pairs with per-pair SD `sd` (same unit as
    sd). Infinite below 2 pairs (no t-test); NaN for an sd that is undefined, negative or 0 (with no
    spread the t-test is undefined: `statistics.summarize_deltas`)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha {alpha} and power {power} must lie in (0, 1)")
    if not (math.isfinite(sd) and sd > 0):
        return math.nan
    if n < 2:
        return math.inf
    df = n - 1
    t_alpha = float(stats.t.ppf(1 - alpha / 2, df))
    t_power = float(stats.t.ppf(power, df))
    return (t_alpha + t_power) * sd / math.sqrt(n)


def pairs_needed(
    effect: float, sd: float, alpha: float = ALPHA, power: float = POWER, max_n: int = 1_000_000
) -> int | None:
    """The fewest pairs whose MDE is at most |effect| (None: none up to `max_n`, effect 0, or an sd
    without an MDE: undefined, negative or 0). The MDE falls monotonically with n, so a bisection finds it."""
    effect = abs(effect)
    if not math.isfinite(effect) or effect == 0 or not (math.isfinite(sd) and sd > 0):
        return None
    if minimum_detectable_effect(max_n, sd, alpha, power) > effect:
        return None
    low, high = 1, max_n  # MDE(low) > effect (infinite), MDE(high) <= effect
    while high - low > 1:
        mid = (low + high) // 2
        if minimum_detectable_effect(mid, sd, alpha, power) <= effect:
            high = mid
        else:
            low = mid
    return high


__all__ = ["ALPHA", "POWER", "minimum_detectable_effect", "pairs_needed"]
