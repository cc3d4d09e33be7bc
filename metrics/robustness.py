"""How a perturbation's Δ varies across seeded draws of the perturbed questions (the paper's
robustness experiment: three randomisations of each non-bias perturbation)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas


class DrawRecord(Protocol):
    """What is read from a per-pair record (e.g. `biasmonkey.tasks.response_bias.scoring.PairRecord`)."""

    key: str
    bias: str
    setting: str
    delta: float | None
    perturbation_seed: int | None


@dataclass(frozen=True)
class DrawVariation:
    """One bias×perturbation over its draws."""

    bias: str
    setting: str
    draws: dict[int, DeltaSummary]  # seed -> mean Δ and t-test over that draw's pairs with a Δ
    delta_range: float  # max − min of the draws' mean Δ
    delta_sd: float  # standard deviation (ddof 1) of the draws' mean Δ; NaN with one draw
    n_significant: int  # draws with p < 0.05
    n_significant_positive: int  # of those, draws with a positive mean Δ
    # Each question's Δ averaged over the draws in which it has one, then t-tested over the
    # questions: a pooled test that counts every question once (pooling the pairs of all draws
    # would count it once per draw).
    pooled: DeltaSummary

    @property
    def n_significant_negative(self) -> int:
        return self.n_significant - self.n_significant_positive

    def report_line(self) -> str:
        """e.g. `acquiescence/key_typo: Δ per draw s1 1.20 (p 0.031), s2 …; range 0.80, SD 0.40;
        significant in 2/3 draws (2+, 0−); pooled 1.10 (p 0.020, 176 questions)`."""
        per_draw = ", ".join(f"s{seed} {s.mean:.2f} (p {s.p:.3g})" for seed, s in self.draws.items())
        return (
            f"{self.bias}/{self.setting}: Δ per draw {per_draw}; range {self.delta_range:.2f}, "
            f"SD {self.delta_sd:.2f}; significant in {self.n_significant}/{len(self.draws)} draws "
            f"({self.n_significant_positive}+, {self.n_significant_negative}−); "
            f"pooled {self.pooled.mean:.2f} (p {self.pooled.p:.3g}, {self.pooled.n} questions)"
        )


def draw_variation(records: Iterable[DrawRecord]) -> list[DrawVariation]:
    """Per bias×perturbation with seeded draws: Δ and p of each draw and their spread.

    Records without a `perturbation_seed` (bias tasks, published perturbations) are skipped;
    pairs without a Δ are left out of their draw's t-test (each summary's n tells how many
    remain). Groups come in the order first seen, draws in seed order.
    """
    groups: dict[tuple[str, str], dict[int, dict[str, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if r.perturbation_seed is None:
            continue
        draw = groups[(r.bias, r.setting)][r.perturbation_seed]
        if r.key in draw:
            raise ValueError(f"{r.bias}/{r.setting}: pair {r.key} appears twice in draw {r.perturbation_seed}")
        draw[r.key] = r.delta
    return [_variation(bias, setting, draws) for (bias, setting), draws in groups.items()]


def _variation(bias: str, setting: str, draws: dict[int, dict[str, float | None]]) -> DrawVariation:
    summaries = {seed: summarize_deltas(d for d in draws[seed].values() if d is not None) for seed in sorted(draws)}
    means = np.array([s.mean for s in summaries.values()], dtype=float)
    significant = [s for s in summaries.values() if s.significant]
    per_question: dict[str, list[float]] = defaultdict(list)
    for draw in draws.values():
        for key, delta in draw.items():
            if delta is not None:
                per_question[key].append(delta)
    return DrawVariation(
        bias=bias,
        setting=setting,
        draws=summaries,
        delta_range=float(np.ptp(means)),
        delta_sd=float(np.std(means, ddof=1)) if means.size > 1 else float("nan"),
        n_significant=len(significant),
        n_significant_positive=sum(s.mean > 0 for s in significant),
        pooled=summarize_deltas(float(np.mean(v)) for v in per_question.values()),
    )
