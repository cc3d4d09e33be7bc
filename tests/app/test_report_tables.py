"""The report's tables and multiple-testing corrections against hand-computed numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import records
from records import cognitive_test, yesno_item

from biasmonkey.harness_ext.app.report.inputs import ModelResults, parse_names, short_name, suite_of
from biasmonkey.harness_ext.app.report.tables import adjust_all, build_tables
from biasmonkey.metrics.multiple_testing import benjamini_hochberg, holm
from biasmonkey.tasks.cognitive import report as cognitive_report
from biasmonkey.tasks.response_bias.report_tables import (
    NOT_CODED,
    draws_table,
    grid,
    human_likeness_table,
    response_bias_table,
    topic_table,
    uncertainty_table,
)
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.topics import NO_TOPIC, load_topics
from biasmonkey.tasks.yesno import report as yesno_report

CODED = Path(__file__).parent.parent / "fixtures" / "report" / "coded.csv"


def pair(key: str, bias: str, setting: str, delta: float | None, u_q: float = 0.5, u_qp: float = 0.5) -> PairRecord:
    return records.pair(key, setting, delta, bias=bias, uncertainty_q=u_q, uncertainty_qp=u_qp)


def model(name: str, suite: str, tasks: dict[str, list]) -> ModelResults:
    m = ModelResults(name=name, model=f"/models/{name}")
    m.records[suite].update(tasks)
    return m


# ---------------------------------------------------------------------------- Holm and BH


def test_holm_by_hand() -> None:
    # sorted p: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1); m = 4
    # steps 4·0.005 = 0.02, 3·0.01 = 0.03, 2·0.03 = 0.06, 1·0.04 = 0.04 → running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1: 2·0.5 = 1.0, 1·0.6 → running max 1.0, 1.0
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_benjamini_hochberg_by_hand() -> None:
    # p·m/rank: 0.005·4/1 = 0.02, 0.01·4/2 = 0.02, 0.03·4/3 = 0.04, 0.04·4/4 = 0.04; running min from the top
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # 0.5·2/1 = 1.0, 0.6·2/2 = 0.6 → min from the top: 0.6, 0.6
    assert benjamini_hochberg([0.5, 0.6]) == pytest.approx([0.6, 0.6])


def test_nan_is_not_part_of_the_family() -> None:
    # m = 2: Holm 2·0.01 = 0.02, 1·0.04; BH 0.01·2/1 = 0.02, 0.04·2/2 = 0.04
    assert np.allclose(holm([0.01, math.nan, 0.04]), [0.02, math.nan, 0.04], equal_nan=True)
    assert np.allclose(benjamini_hochberg([0.01, math.nan, 0.04]), [0.02, math.nan, 0.04], equal_nan=True)
    assert np.isnan(holm([math.nan])).all() and holm([]).size == 0


def test_p_values_outside_0_1_are_rejected() -> None:
    with pytest.raises(ValueError, match="lie in"):
        holm([0.2, 1.5])


# ---------------------------------------------------------------------------- response biases


def acquiescence_model() -> ModelResults:
    return model(
        "m1",
        "response_bias",
        {
            # Δ 1, 2, 3, 6 (and one pair without Δ): mean 3; deviations −2, −1, 0, 3 → SS 14, var 14/3, sd 2.1602,
            # stderr 2.1602/2 = 1.0801, t = 3/1.0801 = 2.7775, df 3
            "biasmonkey_acquiescence": [
                pair("K1", "acquiescence", "bias", 1, 0.1, 0.5),
                pair("K2", "acquiescence", "bias", 2, 0.2, 0.5),
                pair("K3", "acquiescence", "bias", 3, 0.3, 0.7),
                pair("K4", "acquiescence", "bias", 6, 0.4, 0.7),
                pair("K5", "acquiescence", "bias", None, 0.5, None),
            ],
            "biasmonkey_acquiescence_key_typo": [
                pair(k, "acquiescence", "key_typo", d) for k, d in [("K1", 1), ("K2", -1), ("K3", 2), ("K4", -2)]
            ],
        },
    )


def test_response_bias_table_by_hand() -> None:
    table = response_bias_table([acquiescence_model()])
    row = table[(table["setting"] == "bias")].iloc[0]
    assert row["protocol"] == "exact"  # log-probabilities, no sampled answers
    assert row["n_pairs"] == 4 and row["delta"] == pytest.approx(3.0)
    assert row["delta_stderr"] == pytest.approx(math.sqrt(14 / 3) / 2)
    assert row["t"] == pytest.approx(2.7775, abs=1e-4)
    from scipy import stats  # the t distribution's tail, independently of the code under test

    assert row["p"] == pytest.approx(2 * stats.t.sf(2.7775, 3), rel=1e-3)
    # uncertainty of q: mean over all 5 pairs (0.1 + … + 0.5)/5 = 0.3; of q': over the 4 with a value (0.5+0.5+0.7+0.7)/4 = 0.6
    assert row["uncertainty_q"] == pytest.approx(0.3) and row["uncertainty_qp"] == pytest.approx(0.6)
    typo = table[(table["setting"] == "key_typo")].iloc[0]
    assert typo["delta"] == pytest.approx(0.0) and typo["p"] == pytest.approx(1.0)  # t = 0


def test_uncertainty_table_by_hand() -> None:
    m = acquiescence_model()
    # |Δ| 1, 2, 3, 6 against entropy 0.1, 0.2, 0.3, 0.4: dx −.15 −.05 .05 .15, dy −2 −1 0 3;
    # Σdxdy = .3 + .05 + 0 + .45 = .8, Σdx² = .05, Σdy² = 14 → r = .8/√(.05·14) = .8/.83666 = 0.95618
    # t = r√2/√(1 − r²) = 1.35225/0.29277 = 4.6188; df 2: p = 1 − t/√(t² + 2) = 1 − 4.6188/4.8305 = 0.04382 (= 1 − r)
    row = uncertainty_table([m]).iloc[0]
    assert (row["bias"], row["setting"], row["n_pairs"]) == ("acquiescence", "bias", 4)
    assert row["r_side"] == "q"  # the paper's choice for acquiescence
    assert row["r"] == pytest.approx(0.95618, abs=1e-5)
    assert row["r_p"] == pytest.approx(0.04382, abs=1e-4)
    assert row["uncertainty_q"] == pytest.approx(0.3) and row["uncertainty_qp"] == pytest.approx(0.6)


def test_uncertainty_table_follows_the_paper_side_per_bias_or_the_option() -> None:
    # response order: the paper correlates |Δ| with the entropy of q′ (TACL Table 4).
    # |Δ| 1, 2, 3, 6 against q′ entropy 0.4, 0.3, 0.2, 0.1: the mirror image of the acquiescence
    # case above, r = −0.95618 (same p); against q's (all 0.5) r is undefined.
    records = [
        pair(k, "response_order", "bias", d, 0.5, u)
        for k, d, u in [("K1", 1, 0.4), ("K2", 2, 0.3), ("K3", 3, 0.2), ("K4", 6, 0.1)]
    ]
    typo = [
        pair(k, "response_order", "key_typo", d, u, 0.5)
        for k, d, u in [("K1", 1, 0.1), ("K2", 2, 0.2), ("K3", 3, 0.3), ("K4", 6, 0.4)]
    ]
    m = model("m1", "response_bias", {"biasmonkey_response_order": records, "biasmonkey_response_order_key_typo": typo})
    paper = uncertainty_table([m]).set_index("setting")
    assert paper.loc["bias", "r_side"] == "qp" and paper.loc["bias", "r"] == pytest.approx(-0.95618, abs=1e-5)
    assert paper.loc["bias", "r_p"] == pytest.approx(0.04382, abs=1e-4)
    # perturbation rows: the paper reports no r; q (the unperturbed original) is used
    assert paper.loc["key_typo", "r_side"] == "q" and paper.loc["key_typo", "r"] == pytest.approx(0.95618, abs=1e-5)
    forced = uncertainty_table([m], "q").set_index("setting")
    assert forced.loc["bias", "r_side"] == "q" and math.isnan(forced.loc["bias", "r"])
    other = uncertainty_table([m], "qp").set_index("setting")
    assert other.loc["key_typo", "r_side"] == "qp" and math.isnan(other.loc["key_typo", "r"])
    with pytest.raises(ValueError, match="uncertainty side 'both': expected one of paper, q, qp"):
        uncertainty_table([m], "both")
    # the report's test family tests the chosen side's r
    tests = build_tables([m], baselines=False, topics=False, uncertainty_side="q")["all_tests"]
    assert tests[tests["table"] == "uncertainty"]["p"].notna().sum() == 1  # the key-typo row only


def test_human_likeness_and_grid() -> None:
    strong = [10, 11, 12, 13, 14]
    m = model(
        "m1",
        "response_bias",
        {
            "biasmonkey_acquiescence": [
                pair(f"K{i}", "acquiescence", "bias", d) for i, d in enumerate(strong)
            ],  # significant > 0: +1
            "biasmonkey_allow_forbid": [
                pair(f"K{i}", "allow_forbid", "bias", -d) for i, d in enumerate(strong)
            ],  # significant < 0: −1
            "biasmonkey_response_order": [
                pair(f"K{i}", "response_order", "bias", d) for i, d in enumerate([1, -1, 2, -2])
            ],  # mean 0: 0
            "biasmonkey_opinion_float": [
                pair(f"K{i}", "opinion_float", "bias", d) for i, d in enumerate([5, 6, 7, 8])
            ],  # +1
            "biasmonkey_odd_even_letter_swap": [
                pair(f"K{i}", "odd_even", "letter_swap", d) for i, d in enumerate([5, 6, 7, 8])
            ],
        },
    )
    rb = response_bias_table([m])
    hl = human_likeness_table(rb).iloc[0]
    assert (hl["acquiescence"], hl["allow_forbid"], hl["response_order"], hl["opinion_float"]) == (1, -1, 0, 1)
    assert pd.isna(hl["odd_even"])  # no bias row: no score, and it does not count
    assert hl["score"] == 1 and hl["n_biases"] == 4  # +1 − 1 + 0 + 1
    deltas = grid(rb, "m1")
    assert list(deltas.index) == ["acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even"]
    assert list(deltas.columns) == ["bias", "key_typo", "middle_random", "letter_swap"]
    assert deltas.loc["allow_forbid", "bias"] == pytest.approx(-12.0)  # mean of −10 … −14
    assert deltas.loc["odd_even", "letter_swap"] == pytest.approx(6.5)  # (5 + 6 + 7 + 8)/4
    assert math.isnan(deltas.loc["odd_even", "bias"])


def test_topic_table_by_hand() -> None:
    topics = load_topics(CODED)
    assert topics["K3"] == ("Personal and social identity", "National / political issues")
    assert topics["K4"] == (NO_TOPIC,)
    m = model(
        "m1",
        "response_bias",
        {
            "biasmonkey_acquiescence": [
                pair("K1", "acquiescence", "bias", 2),
                pair("K2", "acquiescence", "bias", 4),
                pair("K3", "acquiescence", "bias", 6),
                pair("K4", "acquiescence", "bias", 8),
                pair("K5", "acquiescence", "bias", 10),  # K5 is not in the coded file
                pair("K6", "acquiescence", "bias", None),  # no Δ: in no row
            ]
        },
    )
    table = topic_table([m], topics).set_index("topic")
    # Personal: K1, K3 → Δ 2, 6: mean 4, sd √8, stderr 2, t 2, df 1: p = 2(½ − atan(2)/π) = 0.29517
    personal = table.loc["Personal and social identity"]
    assert (personal["n_pairs"], personal["delta"], personal["delta_stderr"], personal["t"]) == (
        2,
        pytest.approx(4),
        pytest.approx(2),
        pytest.approx(2),
    )
    assert personal["p"] == pytest.approx(0.29517, abs=1e-5)
    assert (table.loc["Science and technology", "n_pairs"], table.loc["Science and technology", "delta"]) == (1, 4)
    assert (table.loc["National / political issues", "delta"], table.loc[NO_TOPIC, "delta"]) == (6, 8)
    assert table.loc[NOT_CODED, "n_pairs"] == 1 and math.isnan(table.loc[NOT_CODED, "p"])


def test_coded_file_errors_name_file_and_row(tmp_path: Path) -> None:
    bad = tmp_path / "coded.csv"
    bad.write_text(CODED.read_text().replace("K2,q2,0,1,0", "K2,q2,0,yes,0"))
    with pytest.raises(ValueError, match=r"coded.csv, row 3: topic flag 'Science and technology' is 'yes'"):
        load_topics(bad)
    bad.write_text("key,question\nK1,q\n")
    with pytest.raises(ValueError, match="missing column"):
        load_topics(bad)


# ---------------------------------------------------------------------------- yes-no and cognitive


def test_yesno_table_by_hand() -> None:
    # margins yes − no: +1 (gold Yes), +2 (No), −2 (No), −0.6 (Yes) → Yes, Yes, No, No: bias 0, accuracy 2/4
    # Generic (yes₀ −2, no₀ −1): margins + 1 → 2, 3, −1, 0.4 → Yes, Yes, No, Yes: bias (3 − 1)/4 = 0.5, accuracy 3/4
    # Specific: 4 items in 5 folds → one item per fold, c = mean half-margin of the other three:
    # half-margins .5, 1, −1, −.3 (sum .2) → c = −.1, −.2667, .4, .1667; margins − 2c = 1.2, 2.53, −2.8, −0.93: bias 0, accuracy .5
    records = [
        yesno_item(1, "Yes", -1, -2),
        yesno_item(2, "No", -1, -3),
        yesno_item(3, "No", -3, -1),
        yesno_item(4, "Yes", -2, -1.4),
    ]
    table = yesno_report.tables([model("m1", "yesno", {"biasmonkey_yesno_comps": records})])["yesno"]
    table = table.set_index("correction")
    assert table.loc["base", ["bias", "accuracy"]].tolist() == pytest.approx([0.0, 0.5])
    assert table.loc["generic", ["bias", "accuracy"]].tolist() == pytest.approx([0.5, 0.75])
    assert table.loc["specific", ["bias", "accuracy"]].tolist() == pytest.approx([0.0, 0.5])
    assert set(table["task"]) == {"yesno_comps"} and set(table["n"]) == {4}


def test_cognitive_table_by_hand() -> None:

    # scores .5, 1 (one failed test): mean .75, sd .35355, stderr .25, t 3, df 1: p = 2(½ − atan(3)/π) = 0.20483
    table = cognitive_report.tables(
        [
            model(
                "m1",
                "cognitive",
                {
                    "biasmonkey_cognitive_anchoring": [
                        cognitive_test(1, 0.5, 0.0),
                        cognitive_test(2, 1.0, 0.1),
                        cognitive_test(3, None, 0.2),
                    ]
                },
            )
        ]
    )["cognitive"]
    row = table.iloc[0]
    assert (row["bias"], row["n_tests"], row["failures"]) == ("anchoring", 3, 1)
    assert (row["score"], row["score_stderr"], row["t"]) == (
        pytest.approx(0.75),
        pytest.approx(0.25),
        pytest.approx(3.0),
    )
    assert row["p"] == pytest.approx(0.20483, abs=1e-5)
    assert row["random_baseline"] == pytest.approx(0.1)  # (0 + .1 + .2)/3: over all tests


# ---------------------------------------------------------------------------- all tests together


def test_adjustment_runs_over_every_test_of_the_report() -> None:
    tables = build_tables([acquiescence_model()], baselines=False, topics_file=CODED)
    tests = tables["all_tests"]
    raw = tests["p"].to_numpy()
    m = int(np.isfinite(raw).sum())
    assert m == 4
    # response_bias: 2 tests; topics: Personal (K1, K3) has a p, Science, National and no-topic hold one pair each
    # (p NaN, outside the family); uncertainty: the bias row (the key-typo pairs all have entropy 0.5: r undefined) → m = 4
    assert list(tests["table"].unique()) == ["response_bias", "topics", "uncertainty"]
    smallest = np.nanargmin(raw)
    assert tests["p_holm"].iloc[smallest] == pytest.approx(min(1.0, m * raw[smallest]))  # Holm's first step: m · p_(1)
    assert tests["p_bh"].iloc[smallest] <= tests["p_holm"].iloc[smallest]
    rb = tables["response_bias"]
    assert list(rb.columns[rb.columns.get_loc("p") :][:3]) == ["p", "p_holm", "p_bh"]  # beside the raw p
    assert rb["p_holm"].tolist() == pytest.approx(tests[tests["table"] == "response_bias"]["p_holm"].tolist())
    unc = tables["uncertainty"]
    assert list(unc.columns[unc.columns.get_loc("r_p") :][:3]) == ["r_p", "r_p_holm", "r_p_bh"]  # beside the raw p


def test_adjust_all_with_two_tables_by_hand() -> None:
    tables = {
        "response_bias": pd.DataFrame({"model": ["a", "a"], "p": [0.01, 0.04]}),
        "cognitive": pd.DataFrame({"model": ["a", "a"], "p": [0.03, 0.005]}),
    }
    adjust_all(tables)
    # the family is the four p-values of test_holm_by_hand, across both tables
    assert tables["response_bias"]["p_holm"].tolist() == pytest.approx([0.03, 0.06])
    assert tables["cognitive"]["p_holm"].tolist() == pytest.approx([0.06, 0.02])
    assert tables["cognitive"]["p_bh"].tolist() == pytest.approx([0.04, 0.02])


def test_names_and_suites() -> None:
    assert suite_of("biasmonkey_odd_even_key_typo") == "response_bias"
    assert suite_of("biasmonkey_yesno_ewok_agent_properties_fewshot") == "yesno"
    assert suite_of("biasmonkey_cognitive_anchoring") == "cognitive"
    assert suite_of("biasmonkey_unknown") is None and suite_of("hellaswag") is None
    assert short_name("hf//root/models/SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"
    assert parse_names(["a=b", "/x/y=z"]) == {"a": "b", "/x/y": "z"}
    with pytest.raises(ValueError, match="MODEL=NAME"):
        parse_names(["oops"])


# ---------------------------------------------------------------------------- perturbation draws


def test_draws_table_and_the_task_row_count_each_question_once() -> None:
    # Two questions × two draws of acquiescence/key_typo.
    # draw 1: Δ 1, 3 → mean 2; draw 2: Δ 3, 5 → mean 4. range 4 − 2 = 2; SD (ddof 1) of (2, 4) = √2.
    # Per question over the draws: k1 (1 + 3)/2 = 2, k2 (3 + 5)/2 = 4 → the task row: n 2, mean 3.
    def seeded(key: str, seed: int, delta: float) -> PairRecord:
        return PairRecord(
            key=key,
            bias="acquiescence",
            setting="key_typo",
            p_q=None,
            p_qp=None,
            delta=delta,
            uncertainty_q=0.5,
            uncertainty_qp=0.5,
            perturbation_seed=seed,
        )

    records = [seeded("k1", 1, 1.0), seeded("k2", 1, 3.0), seeded("k1", 2, 3.0), seeded("k2", 2, 5.0)]
    m = model("m", "response_bias", {"acquiescence_key_typo": records})
    draws = draws_table([m])
    assert draws["draw"].tolist() == [1, 2]
    assert draws["delta"].tolist() == pytest.approx([2.0, 4.0])
    assert draws["n_pairs"].tolist() == [2, 2]
    assert draws["delta_range"].iloc[0] == pytest.approx(2.0)
    assert draws["delta_sd"].iloc[0] == pytest.approx(math.sqrt(2))
    assert "range 2.00, SD 1.41" in draws["line"].iloc[0]
    row = response_bias_table([m]).iloc[0]
    assert (row["n_pairs"], row["n_draws"]) == (2, 2)
    assert row["delta"] == pytest.approx(3.0)
    assert "perturbation_draws" in build_tables([m], baselines=False, topics=False)
    assert "perturbation_draws" not in build_tables(
        [model("m", "response_bias", {"acquiescence": [pair("k", "acquiescence", "bias", 1.0)]})],
        baselines=False,
        topics=False,
    )
