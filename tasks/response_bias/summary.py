"""The set-level summary of a response-bias task, from its per-pair records."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biasmonkey.metrics import BIASES, SETTINGS, DeltaSummary, draw_variation, summarize_deltas
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE, correlated_side, uncertainty_correlation

# A Δ row's t-test columns, in table order (`delta_columns`).
DELTA_COLUMNS = ("n_pairs", "delta", "delta_stderr", "ci_low", "ci_high", "t", "p", "significant")


def delta_columns(s: DeltaSummary) -> dict[str, Any]:
    """The t-test of a set of Δ as table columns (DELTA_COLUMNS)."""
    values = (s.n, s.mean, s.stderr, s.ci_low, s.ci_high, s.t, s.p, s.significant)
    return dict(zip(DELTA_COLUMNS, values))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def summarize(records: Sequence[PairRecord], uncertainty_side: str = DEFAULT_CHOICE) -> dict[str, Any]:
    """One task's statistics from its per-pair records: Δ with its t-test and CI, the mean
    uncertainty of q and q', Pearson r of |Δ| with q's uncertainty (`r_absdelta_uncertainty_q`)
    and with the uncertainty of the side that `uncertainty_side` picks (`r_absdelta_uncertainty`; the
    side, "q" or "qp", in `uncertainty_side`): "paper" (default) is the authors' per-bias choice
    (module `uncertainty`), "q" or "qp" forces one. In sampling mode also the invalid-answer rate
    and the pairs left without a Δ.

    A task run with several perturbation draws (option perturbation_seeds) holds each question
    once per draw; its row tests each question once (its Δ averaged over the draws), since
    pooling the pairs of all draws would overstate the evidence. `n_draws` says so.
    """
    scored = [r for r in records if r.delta is not None]
    variation = draw_variation(records)
    s = variation[0].pooled if variation else summarize_deltas([r.delta for r in scored])
    bias, setting = records[0].bias, records[0].setting
    side = correlated_side(bias, setting, uncertainty_side)
    row: dict[str, Any] = {
        "bias": bias,
        "setting": setting,
        **delta_columns(s),
        "uncertainty_q": _mean([x.uncertainty_q for x in records if x.uncertainty_q is not None]),
        "uncertainty_qp": _mean([x.uncertainty_qp for x in records if x.uncertainty_qp is not None]),
        "r_absdelta_uncertainty_q": uncertainty_correlation(records, "q").r,
        "uncertainty_side": side,
        "r_absdelta_uncertainty": uncertainty_correlation(records, side).r,
    }
    if variation:
        row["n_draws"] = len(variation[0].draws)
    answers = sum(x.n_answers for x in records)
    if answers:  # sampling mode: report invalid answers and the pairs left without a Δ
        row["invalid_rate"] = sum(x.n_invalid for x in records) / answers
        row["pairs_without_delta"] = len(records) - len(scored)
    return row


def rows_in_suite_order(
    records_per_task: Iterable[Sequence[PairRecord]], uncertainty_side: str = DEFAULT_CHOICE
) -> list[dict[str, Any]]:
    """One summary row per task's records, in suite order (biases, then their perturbations);
    `uncertainty_side` picks the side of the uncertainty correlation (see `summarize`)."""
    rows = [summarize(records, uncertainty_side) for records in records_per_task if records]
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    return sorted(rows, key=lambda r: order[(r["bias"], r["setting"])])


def bias_summaries(rows: Iterable[Mapping[str, Any]]) -> dict[str, DeltaSummary]:
    """The Δ summaries of the bias rows (setting "bias"), by bias."""
    return {
        r["bias"]: DeltaSummary(
            r["n_pairs"],
            r["delta"],
            r["delta_stderr"],
            r["t"],
            r["p"],
            max(r["n_pairs"] - 1, 0),
            r["ci_low"],
            r["ci_high"],
        )
        for r in rows
        if r["setting"] == "bias"
    }
