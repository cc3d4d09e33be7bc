"""Which question's uncertainty the |Δ| correlation uses (tasks/response_bias/uncertainty.py), checked
against the Pearson r of TACL Table 4 recomputed from the authors' released samples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from biasmonkey.tasks.response_bias.released_samples import GROUPS, pair_deltas, read_samples
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.summary import summarize
from biasmonkey.tasks.response_bias.uncertainty import PAPER_SIDES, correlated_side, uncertainty_correlation

# TACL 2024 Table 4, "pearson r" per model and bias (|Δb| against the uncertainty, over the questions).
TABLE_4_R = {
    "llama2-7b": {
        "acquiescence": 0.182,
        "response_order": -0.503,
        "odd_even": -0.102,
        "opinion_float": -0.252,
        "allow_forbid": -0.739,
    },
    "llama2-13b": {
        "acquiescence": -0.412,
        "response_order": -0.664,
        "odd_even": 0.192,
        "opinion_float": -0.023,
        "allow_forbid": -0.739,
    },
    "llama2-70b": {
        "acquiescence": -0.018,
        "response_order": -0.140,
        "odd_even": 0.12,
        "opinion_float": -0.033,
        "allow_forbid": -0.628,
    },
    "llama2-7b-chat": {
        "acquiescence": -0.099,
        "response_order": -0.315,
        "odd_even": -0.315,
        "opinion_float": -0.086,
        "allow_forbid": -0.161,
    },
    "llama2-13b-chat": {
        "acquiescence": -0.095,
        "response_order": -0.324,
        "odd_even": -0.163,
        "opinion_float": -0.106,
        "allow_forbid": -0.131,
    },
    "llama2-70b-chat": {
        "acquiescence": 0.452,
        "response_order": 0.465,
        "odd_even": -0.231,
        "opinion_float": 0.440,
        "allow_forbid": 0.280,
    },
    "llama2-70b-ift": {  # Solar
        "acquiescence": 0.187,
        "response_order": 0.248,
        "odd_even": -0.385,
        "opinion_float": 0.291,
        "allow_forbid": 0.145,
    },
    "gpt-3.5-turbo": {
        "acquiescence": 0.334,
        "response_order": 0.198,
        "odd_even": -0.273,
        "opinion_float": 0.467,
        "allow_forbid": 0.206,
    },
    "gpt-3.5-turbo-instruct": {
        "acquiescence": 0.334,
        "response_order": 0.275,
        "odd_even": -0.073,
        "opinion_float": 0.360,
        "allow_forbid": 0.437,
    },
}
# Options per prompt as the authors normalise the entropy (analysis/utils.py, get_indiv_entropies):
# the row's num_options, except odd/even q′ (4) and opinion-float q′ (6), which they set by hand
# (the released files' num_options column is not reliable for these).
FIXED_OPTIONS = {("odd_even", "qp"): 4, ("opinion_float", "qp"): 6}


def test_paper_side_per_bias_and_the_options() -> None:
    assert {b: correlated_side(b, "bias") for b in PAPER_SIDES} == {
        "acquiescence": "q",
        "allow_forbid": "qp",
        "response_order": "qp",
        "opinion_float": "qp",
        "odd_even": "q",
    }
    assert {correlated_side(b, "letter_swap") for b in PAPER_SIDES} == {"q"}  # no paper r for perturbations
    assert correlated_side("acquiescence", "bias", "qp") == "qp"
    assert correlated_side("response_order", "key_typo", "qp") == "qp"
    with pytest.raises(ValueError, match="uncertainty side 'q_prime': expected one of paper, q, qp"):
        correlated_side("acquiescence", "bias", "q_prime")


def test_summary_row_reports_both_correlations() -> None:
    # |Δ| 1, 2, 3, 6 against q′ entropy .4 .3 .2 .1 (r = −0.95618, test_report_tables) and q's .1 .2 .3 .4 (+0.95618)
    records = [
        PairRecord(f"K{i}", "opinion_float", "bias", None, None, d, u, 0.5 - u)
        for i, (d, u) in enumerate([(1, 0.1), (2, 0.2), (3, 0.3), (6, 0.4)])
    ]
    row = summarize(records)
    assert row["uncertainty_side"] == "qp"
    assert row["r_absdelta_uncertainty"] == pytest.approx(-0.95618, abs=1e-5)
    assert row["r_absdelta_uncertainty_q"] == pytest.approx(0.95618, abs=1e-5)
    assert summarize(records, "q")["r_absdelta_uncertainty"] == pytest.approx(0.95618, abs=1e-5)


def released_records(sample_dir: Path, bias: str) -> list[PairRecord]:
    """Per question of a bias row: Δ as `biasmonkey score-samples` counts it, and the entropy of
    the answers to q and to q′ as the authors compute it: over the letters answered (whatever
    they are), divided by the log of the prompt's option count."""
    samples = read_samples(sample_dir / f"{bias}.csv", GROUPS[bias])
    records = []
    for key, delta in pair_deltas(sample_dir, bias, "bias").items():
        entropies = []
        for side, group in zip(("q", "qp"), samples[key]):
            total = sum(group.counts.values())
            h = -sum(c / total * math.log(c / total) for c in group.counts.values() if c)
            entropies.append(h / math.log(FIXED_OPTIONS.get((bias, side), group.num_options)))
        records.append(PairRecord(key, bias, "bias", None, None, delta, *entropies))
    return records


def test_released_samples_reproduce_table_4_with_the_paper_sides(data_dir: Path) -> None:
    """The paper side gives Table 4's r within 0.05 in all 45 cells (the authors took entropies
    from their pickled answers, not released as text), to the third decimal for most of Solar's,
    and is nearer to the published r than the other side in every cell."""
    samples = data_dir / "biasmonkey" / "samples"
    for model, published in TABLE_4_R.items():
        for bias, r_paper in published.items():
            records = released_records(samples / model, bias)
            side = PAPER_SIDES[bias]
            r = summarize(records)["r_absdelta_uncertainty"]
            assert r == pytest.approx(uncertainty_correlation(records, side).r)
            other = uncertainty_correlation(records, "q" if side == "qp" else "qp").r
            assert abs(r - r_paper) < 0.05, (model, bias, r, r_paper)
            assert abs(r - r_paper) < abs(other - r_paper), (model, bias, r, other, r_paper)
    solar = samples / "llama2-70b-ift"
    for bias in ("acquiescence", "response_order", "odd_even", "opinion_float"):
        r = summarize(released_records(solar, bias))["r_absdelta_uncertainty"]
        assert round(r, 3) == TABLE_4_R["llama2-70b-ift"][bias]
    # llama2-7b response order: −0.503 with q′'s entropy, as published (q's would give −0.846)
    records = released_records(samples / "llama2-7b", "response_order")
    assert round(uncertainty_correlation(records, "qp").r, 3) == -0.503
    assert round(uncertainty_correlation(records, "q").r, 3) == -0.846
