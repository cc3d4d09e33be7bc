"""The cognitive-bias metric, its expectation, the random baseline, per-bias summaries and the
per-test records, against numbers computed by hand (arithmetic in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from biasmonkey.metrics.cognitive import bias_score, expected_metric, metric_matrix, random_baseline, summarize_bias
from biasmonkey.tasks.cognitive.codecs import from_inspect, from_lm_eval
from biasmonkey.tasks.cognitive.scoring import score_answers, score_exact, summarize_records
from biasmonkey.tasks.contract import LoggedScore

TOL = 1e-7  # the metric's 1e-8 guard in the denominator moves values by less than this


@pytest.mark.parametrize(
    ("a_1", "a_2", "k", "x_1", "x_2", "expected"),
    [
        (4, 2, 1, 0, 0, 0.5),  # d1 = 4, d2 = 2: (4 - 2) / 4
        (4, 2, -1, 0, 0, -0.5),  # the same with k = -1
        (4, 8, 1, 9, 9, 0.8),  # anchor at option 9 (90%): d1 = |4-9| = 5, d2 = |8-9| = 1: (5 - 1) / 5
        (1, 3, 1, 0, 6, -2 / 3),  # d1 = 1, d2 = |3-6| = 3: (1 - 3) / 3
        (0, 2, 1, 2.5, 2.5, 0.8),  # d1 = 2.5, d2 = 0.5: (2.5 - 0.5) / 2.5
        (6, 0, 1, 0, 0, 1.0),  # d1 = 6, d2 = 0: 6 / 6, the largest possible score
        (3, 3, -1, 3, 3, 0.0),  # both answers on x: 0 / (0 + 1e-8) = 0
        (5, 5, 1, 5, 0, -1.0),  # d1 = 0, d2 = 5: (0 - 5) / 5
    ],
)
def test_bias_score_by_hand(a_1: int, a_2: int, k: int, x_1: float, x_2: float, expected: float) -> None:
    assert bias_score(a_1, a_2, k, x_1, x_2, n_1=11, n_2=11) == pytest.approx(expected, abs=TOL)


def test_metric_matrix_stays_in_range_and_rejects_bad_parameters() -> None:
    m = metric_matrix(11, 11, -1, 3, 7)
    assert m.shape == (11, 11) and m.min() >= -1 and m.max() <= 1
    with pytest.raises(ValueError, match="k must be 1 or -1"):
        metric_matrix(7, 7, 2, 0, 0)
    with pytest.raises(ValueError, match="finite"):
        metric_matrix(7, 7, 1, math.nan, 0)
    with pytest.raises(ValueError, match="zero-based"):
        bias_score(-1, 0, 1, 0, 0, n_1=7, n_2=7)


def test_references_and_answers_must_be_indices_of_the_options() -> None:
    # x = 10 on a 7-point scale (indices 0..6): d_2 = |a_2 - 10| >= 4, so |m| could never reach 1
    # (the auditor's bias_score(0, 6, 1, 10, 10) = (10 - 4) / 10 = 0.6 at the extreme answers)
    with pytest.raises(ValueError, match=r"x_1 = 10 is outside the 7 control options' zero-based indices 0 to 6"):
        bias_score(0, 6, 1, 10, 10, n_1=7, n_2=7)
    with pytest.raises(ValueError, match=r"x_2 = -1 is outside the 5 treatment options' zero-based indices 0 to 4"):
        metric_matrix(7, 5, 1, 0, -1)
    with pytest.raises(ValueError, match=r"x_2 = 6.5 is outside"):
        random_baseline(7, 7, 1, 3, 6.5)
    with pytest.raises(ValueError, match=r"x_1 = 11 is outside"):
        expected_metric(np.eye(11)[0], np.eye(11)[0], 1, 11, 0)
    # an answer beyond the options (the auditor's bias_score(20, 0, 1, 3, 3) = 0.82)
    with pytest.raises(ValueError, match=r"control 0 to 6, treatment 0 to 6\), got 20 and 0"):
        bias_score(20, 0, 1, 3, 3, n_1=7, n_2=7)
    # the ends of the scale are valid references: x = 6 = n - 1, answers 0 and 6 give
    # d_1 = 6, d_2 = 0: m = (6 - 0) / 6 = 1
    assert bias_score(0, 6, 1, 6, 6, n_1=7, n_2=7) == pytest.approx(1.0, abs=TOL)


def test_expected_metric_by_hand() -> None:
    # Three options, k = 1, x = 0: m(a1, a2) = (a1 - a2) / max(a1, a2), so
    # M = [[0, -1, -1], [1, 0, -1/2], [1, 1/2, 0]].
    # p1 = (.5, .5, 0), p2 = (0, .5, .5): the pairs (0,1) (0,2) (1,1) (1,2) each have prob .25,
    # E = .25 * (-1 - 1 + 0 - 0.5) = -0.625
    assert expected_metric([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], 1, 0, 0) == pytest.approx(-0.625, abs=TOL)
    # Point masses give the score of those answers: anchor at 9, answers 4 and 8 -> 0.8 (above).
    p_1, p_2 = np.eye(11)[4], np.eye(11)[8]
    assert expected_metric(p_1, p_2, 1, 9, 9) == pytest.approx(0.8, abs=TOL)
    with pytest.raises(ValueError, match="control answers: not a probability distribution"):
        expected_metric([0.5, 0.6], [1.0, 0.0], 1, 0, 0)


def test_random_baseline_by_hand() -> None:
    # n = 3, k = 1, x1 = 1, x2 = 0: d1 takes 1, 0, 1 (a1 = 0, 1, 2), d2 takes 0, 1, 2.
    #   d1 = 0 (once):  d2 = 0 -> 0, 1 -> -1, 2 -> -1            sum -2
    #   d1 = 1 (twice): d2 = 0 -> 1, 1 -> 0, 2 -> (1-2)/2 = -1/2  sum 1/2, twice: 1
    # mean over the 9 pairs: (-2 + 1) / 9 = -1/9
    assert random_baseline(3, 3, 1, 1, 0) == pytest.approx(-1 / 9, abs=TOL)
    # n = 7, k = -1, x1 = 3 (the middle), x2 = 0: d1 = 3,2,1,0,1,2,3 (counts 0:1, 1:2, 2:2, 3:2),
    # d2 = 0..6. Sum over d2 of (d1 - d2) / max(d1, d2) for each d1:
    #   d1 = 0: six times -1                                                 = -6      (x1: -6)
    #   d1 = 1: 1 + 0 - (1/2 + 2/3 + 3/4 + 4/5 + 5/6) = 1 - 213/60            = -2.55   (x2: -5.1)
    #   d1 = 2: 1 + 1/2 + 0 - (1/3 + 1/2 + 3/5 + 2/3) = 1.5 - 126/60          = -0.6    (x2: -1.2)
    #   d1 = 3: 1 + 2/3 + 1/3 + 0 - (1/4 + 2/5 + 1/2) = 2 - 1.15              = 0.85    (x2: 1.7)
    # total -6 - 5.1 - 1.2 + 1.7 = -10.6; with k = -1 the mean is 10.6 / 49
    assert random_baseline(7, 7, -1, 3, 0) == pytest.approx(10.6 / 49, abs=TOL)
    # The same x on both sides (or mirrored x: 0 and n-1) gives identical distance distributions,
    # so the baseline is 0 by symmetry (the score is antisymmetric in the two distances).
    assert random_baseline(11, 11, 1, 9, 9) == pytest.approx(0.0, abs=TOL)
    assert random_baseline(7, 7, 1, 0, 6) == pytest.approx(0.0, abs=TOL)


def test_summarize_bias_by_hand() -> None:
    # Scored tests 0.5, -0.25, 1.0 and one failure:
    #   mean 1.25 / 3 = 0.416667; deviations 0.083333, -0.666667, 0.583333,
    #   squares sum 0.006944 + 0.444444 + 0.340278 = 0.791667, variance /2 = 0.395833,
    #   sd 0.629153, stderr 0.629153 / sqrt(3) = 0.363242, t = 0.416667 / 0.363242 = 1.147079
    summary = summarize_bias([0.5, None, -0.25, 1.0], [0.0, 0.0, 0.1, -0.1], [0.2, 0.1, 0.0, 0.3])
    assert (summary.n_tests, summary.failures, summary.failure_rate) == (4, 1, 0.25)
    assert summary.score.n == 3
    assert summary.score.mean == pytest.approx(0.416667, abs=1e-6)
    assert summary.score.stderr == pytest.approx(0.363242, abs=1e-6)
    assert summary.score.t == pytest.approx(1.147079, abs=1e-6)
    assert summary.score.p == pytest.approx(stats.ttest_1samp([0.5, -0.25, 1.0], 0).pvalue, abs=1e-12)
    half = stats.t.ppf(0.975, 2) * 0.363242  # 95% CI: mean ± t(0.975, df=2) * stderr
    assert (summary.score.ci_low, summary.score.ci_high) == pytest.approx((0.416667 - half, 0.416667 + half), abs=1e-5)
    assert summary.random_baseline == pytest.approx(0.0)  # (0 + 0 + 0.1 - 0.1) / 4
    assert summary.expected_score == pytest.approx(0.15)  # (0.2 + 0.1 + 0 + 0.3) / 4
    assert summarize_bias([0.5], [0.0]).expected_score is None  # generate mode has none


def _doc(n: int, reversed_options: bool, k: int = 1, x: float = 0) -> dict:
    """A harness document with n options per side (texts o1..on), as data.CognitiveTest.to_doc builds it."""
    options = [f"o{i}" for i in range(1, n + 1)]
    return {
        "id": "t1",
        "bias": "anchoring",
        "scenario": "s",
        "k": k,
        "x_1": x,
        "x_2": x,
        "reversed": reversed_options,
        "control_stem": "Control?",
        "control_options": options,
        "treatment_stem": "Treatment?",
        "treatment_options": options,
    }


def test_exact_record_maps_reversed_options_back() -> None:
    # Offered in reverse: offered position i shows original option n-1-i.
    # Control log-probs over the offered labels: log(.7, .2, .1) -> original order (.1, .2, .7);
    # treatment log(.2, .3, .5) -> original (.5, .3, .2).
    record = score_exact(_doc(3, True), np.log([0.7, 0.2, 0.1]), np.log([0.2, 0.3, 0.5]))
    assert record.p_control == pytest.approx([0.1, 0.2, 0.7])
    assert record.p_treatment == pytest.approx([0.5, 0.3, 0.2])
    # argmax answers a1 = 2, a2 = 0 (k = 1, x = 0): m = (2 - 0) / 2 = 1
    assert (record.answer_control, record.answer_treatment) == (2, 0)
    assert record.score == pytest.approx(1.0, abs=TOL)
    # With M from test_expected_metric_by_hand: p1 M = (.2 + .7, -.1 + .35, -.1 - .1) = (.9, .25, -.2),
    # E = .9 * .5 + .25 * .3 - .2 * .2 = .485
    assert record.expected_score == pytest.approx(0.485, abs=TOL)
    assert record.random_baseline == pytest.approx(0.0, abs=TOL)  # M is antisymmetric
    assert not record.failed
    # Unreversed, the same numbers are already in the original order: a different record.
    plain = score_exact(_doc(3, False), np.log([0.7, 0.2, 0.1]), np.log([0.2, 0.3, 0.5]))
    assert plain.p_control == pytest.approx([0.7, 0.2, 0.1])
    assert (plain.answer_control, plain.answer_treatment) == (0, 2)
    assert plain.score == pytest.approx(-1.0, abs=TOL)  # (0 - 2) / 2
    with pytest.raises(ValueError, match="2 log-likelihoods for the 3 control options"):
        score_exact(_doc(3, False), [0.0, 0.0], [0.0, 0.0, 0.0])


def test_records_refuse_a_reference_outside_the_options() -> None:
    """The auditor's run: x_1 = x_2 = 25 on an 11-option scale scored 0.18 (t 22) without a word."""
    doc = _doc(11, False, x=25)
    message = r"test t1: metric parameters: x_1 = 25 is outside the 11 control options' zero-based indices 0 to 10"
    with pytest.raises(ValueError, match=message):
        score_exact(doc, np.log(np.full(11, 1 / 11)), np.log(np.full(11, 1 / 11)))
    with pytest.raises(ValueError, match=message):
        score_answers(doc, "Option 1", "Option 2")
    with pytest.raises(ValueError, match=message):
        from_lm_eval(doc, ["Option 1", "Option 2"])
    score = LoggedScore("t1", {"score": 0.5}, score_answers(_doc(11, False), "Option 1", "Option 2").as_dict(), doc)
    with pytest.raises(ValueError, match=message):
        from_inspect(score)
    assert score_answers(_doc(11, False, x=10), "Option 1", "Option 11").score == pytest.approx(1.0, abs=TOL)


def test_generate_record_reads_answers_and_counts_failures() -> None:
    doc = _doc(7, True, k=-1)
    # Offered "Option 2" is original index 7 - 1 - 1 = 5, offered "Option 7" is original 0.
    record = score_answers(doc, "I would pick Option 2: o6, because...", "option 7")
    assert (record.answer_control, record.answer_treatment) == (5, 0)
    assert record.score == pytest.approx(-1.0, abs=TOL)  # k = -1: -(5 - 0) / 5
    assert record.failure is None and record.expected_score is None
    # The paper's regex takes the whole number: "Option 10" is never read as option 1.
    eleven = score_answers(_doc(11, False), "Option 10: o10", "Option 1: o1")
    assert (eleven.answer_control, eleven.answer_treatment) == (9, 0)

    failed = score_answers(doc, "No option selected", "Option 9")
    assert failed.failed and failed.score is None
    assert failed.failure == "control: no 'Option N' in the answer; treatment: Option 9 is not one of the 7 options"
    assert failed.random_baseline == pytest.approx(0.0, abs=TOL)

    summary = summarize_records([record, failed])
    assert (summary.n_tests, summary.failures, summary.score.n) == (2, 1, 1)
    assert summary.score.mean == pytest.approx(-1.0, abs=TOL)
    assert summary.expected_score is None
