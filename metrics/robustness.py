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


def _shown(value: float, fmt: str) -> str:
    return "n/a" if np.isnan(value) else format(value, fmt)


@dataclass(frozen=True)
class DrawVariation:
    """One bias×perturbation over its draws."""

    bias: str
    setting: str
    draws: dict[int, DeltaSummary]  # seed -> mean Δ and t-test over that draw's pairs with a Δ
    delta_range: float  # max − min of the draws' mean Δ (over the draws with a Δ; NaN: none)
    delta_sd: float  # standard deviation (ddof 1) of the draws' mean Δ (same draws); NaN below two
    n_significant: int  # draws with p < 0.05
    n_significant_positive: int  # of those, draws with a positive mean Δ
    # Each question's Δ averaged over the draws in which it has one, then t-tested over the
    # questions: a pooled test that counts every question once (pooling the pairs of all draws
    # would count it once per draw).
    pooled: DeltaSummary

    @property
    def n_significant_negative(self) -> int:
        return self.n_significant - self.n_significant_positive

    @property
    def n_untestable(self) -> int:
        """Draws whose t-test is undefined (fewer than 2 pairs with a Δ, or no spread)."""
        return sum(s.significant is None for s in self.draws.values())

    def report_line(self) -> str:
        """e.g. `acquiescence/key_typo: Δ per draw s1 1.20 (p 0.031, n 88), s2 …; range 0.80, SD 0.40;
        significant in 2 of 3 testable draws (2+, 0−); pooled 1.10 (p 0.020, 176 questions)`; draws
        whose test is undefined are counted apart (`…; 1 untestable: s3 1 pair: no t-test`)."""
        per_draw = ", ".join(
            f"s{seed} {_shown(s.mean, '.2f')} (p {_shown(s.p, '.3g')}, n {s.n})" for seed, s in self.draws.items()
        )
        with_delta = sum(s.n > 0 for s in self.draws.values())
        over = f" over the {with_delta} draws with a Δ" if with_delta < len(self.draws) else ""
        untestable = [f"s{seed} {s.undefined_reason}" for seed, s in self.draws.items() if s.significant is None]
        testable = len(self.draws) - len(untestable)
        counted = f"significant in {self.n_significant} of {testable} testable draws"
        if testable:
            counted += f" ({self.n_significant_positive}+, {self.n_significant_negative}−)"
        if untestable:
            counted += f"; {len(untestable)} untestable ({', '.join(untestable)})"
        return (
            f"{self.bias}/{self.setting}: Δ per draw {per_draw}; range {_shown(self.delta_range, '.2f')}, "
            f"SD {_shown(self.delta_sd, '.2f')}{over}; {counted}; "
            f"pooled {_shown(self.pooled.mean, '.2f')} (p {_shown(self.pooled.p, '.3g')}, {self.pooled.n} questions)"
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
    means = np.array([s.mean for s in summaries.values() if s.n], dtype=float)  # draws with a Δ
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
        delta_range=float(np.ptp(means)) if means.size else float("nan"),
        delta_sd=float(np.std(means, ddof=1)) if means.size > 1 else float("nan"),
        n_significant=len(significant),
        n_significant_positive=sum(s.mean > 0 for s in significant),
        pooled=summarize_deltas(float(np.mean(v)) for v in per_question.values()),
    )
