"""Which question's answer uncertainty the correlation with |Δ| uses, per bias.

Tjuatja et al. (TACL 2024, §4 and Table 4, "pearson r") correlate, over the questions of each
bias, |Δb| with the normalised entropy H(p)/log(n) of the answers to ONE prompt of the pair. The
authors' code takes the prompt group that `get_groups` names second
(lindiatjuatja/BiasMonkey@f81a013, `analysis/utils.py`: `get_groups`, `get_indiv_entropies`;
`analysis/uncertainty_analysis.ipynb`, last cell: `stats.pearsonr(|Δ|/100, entropy)` per model and
bias): `orig alpha` (q) for acquiescence, `middle alpha` (q, 5 options) for odd/even, and the
modified question for response order (`reversed alpha`), opinion float (`float alpha`, 6 options)
and allow/forbid (`forbid alpha`). That is `PAPER_SIDES`.

The authors compute it for the bias rows only (Table 4 has no r for the perturbations). For a
perturbation row the paper choice is q here, the unperturbed original question that all three
perturbations of a bias share (their q′ is q with typos).

Rescoring the released samples with these sides gives Table 4's r within 0.05 for all 45
model × bias cells, to the third decimal for Solar (llama2-70b-ift), and closer than the other
side in every cell (`tests/response_bias/test_uncertainty.py`); the small gaps come from the authors computing
entropies from their pickled answers, which are not released as text.

A perturbation task run with several seeded draws (option `perturbation_seeds`) holds each question
once per draw; the correlation counts each question once (`question_points`), as the Δ test does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from biasmonkey.metrics import BIASES, Correlation, pearson

SIDES = ("q", "qp")
PAPER = "paper"
CHOICES = (PAPER, *SIDES)  # the `--uncertainty-side` values
DEFAULT_CHOICE = PAPER
# The side whose entropy Table 4 correlates with |Δb|, per bias (sources above).
PAPER_SIDES = {
    "acquiescence": "q",
    "allow_forbid": "qp",
    "response_order": "qp",
    "opinion_float": "qp",
    "odd_even": "q",
}
assert set(PAPER_SIDES) == set(BIASES)


def check_choice(choice: str) -> str:
    """`choice` if it is one of CHOICES, else a ValueError naming the option."""
    if choice not in CHOICES:
        raise ValueError(f"uncertainty side {choice!r}: expected one of {', '.join(CHOICES)}")
    return choice


def correlated_side(bias: str, setting: str, choice: str = DEFAULT_CHOICE) -> str:
    """ "q" or "qp": the side whose uncertainty is correlated with |Δ| on a (bias, setting) row."""
    if check_choice(choice) != PAPER:
        return choice
    if bias not in PAPER_SIDES:
        raise ValueError(f"unknown bias {bias!r}; expected one of {', '.join(PAPER_SIDES)}")
    return PAPER_SIDES[bias] if setting == "bias" else "q"


def side_uncertainty(record: Any, side: str) -> float | None:
    """The record's normalised entropy of q or of q′ (None: that side has no valid answer)."""
    return record.uncertainty_q if side == "q" else record.uncertainty_qp


def question_points(records: Sequence[Any], side: str) -> list[tuple[float, float]]:
    """(|Δ|, entropy of `side`) per question having both. A question asked in several perturbation
    draws (`perturbation_seed`) counts once, with |Δ| of its Δ averaged over those draws and its entropy
    averaged over them too, as the Δ test counts it: its draws are not independent pairs."""
    if side not in SIDES:
        raise ValueError(f"side {side!r}: expected q or qp")
    per_question: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.delta is not None and (u := side_uncertainty(r, side)) is not None:
            per_question[r.key if getattr(r, "perturbation_seed", None) is not None else i].append((r.delta, u))
    return [(abs(float(np.mean([d for d, _ in v]))), float(np.mean([u for _, u in v]))) for v in per_question.values()]


def uncertainty_correlation(records: Sequence[Any], side: str) -> Correlation:
    """Pearson r (with its two-sided p) of |Δ| with the entropy of `side` over the questions having
    both (`question_points`: each question once, whatever the number of draws)."""
    points = question_points(records, side)
    return pearson([d for d, _ in points], [u for _, u in points])


def undefined_correlation(records: Sequence[Any], side: str) -> str | None:
    """Why `uncertainty_correlation` is undefined (r and p NaN; `metrics.pearson`'s conditions), else None."""
    points = question_points(records, side)
    if len(points) < 3:
        return f"{len(points)} pair{'' if len(points) == 1 else 's'} with a Δ: fewer than 3"
    deltas, entropies = (np.array(v) for v in zip(*points))
    if np.ptp(deltas) == 0:
        return "no spread of |Δ|"
    if np.ptp(entropies) == 0:
        return "no spread of the entropy"
    return None
