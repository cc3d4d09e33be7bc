"""Audit of the response-bias section of `biasmonkey report`: what the paper's models are compared
on (pairs per bias, untestable biases left out), NaN shown as n/a with why, counts that say what
they are over (draws, untestable perturbations, the paper's copied rows), the uncertainty side and
the uncertainty correlation counted per question. Numbers by hand in the comments."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from records import pair

from biasmonkey.harness_ext.app.report import multiple_testing_section
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.render import Figure, Table
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.response_bias import report as rb_report
from biasmonkey.tasks.response_bias import report_figures
from biasmonkey.tasks.response_bias.report_tables import paper_label, topic_table, uncertainty_table
from biasmonkey.tasks.response_bias.summary import summarize
from biasmonkey.tasks.response_bias.topics import load_topics

PAPER = paper_label("llama2-7b")
CODED = Path(__file__).parent.parent / "fixtures" / "report" / "coded.csv"
# The paper's model: acquiescence on K0, K1 only (Δ 1, 3: mean 2, stderr 1, t 2, df 1 → p 0.295: 0);
# odd/even on O1 … O4 (Δ 4 … 7: mean 5.5, stderr 0.6455, t 8.52, df 3 → p 0.0034: +1).
PUBLISHED = {
    "llama2-7b": {
        ("acquiescence", "bias"): {"K0": 1.0, "K1": 3.0},
        ("odd_even", "bias"): {"O1": 4.0, "O2": 5.0, "O3": 6.0, "O4": 7.0},
    }
}


def user(tasks: dict[str, list]) -> ModelResults:
    m = ModelResults(name="mine", model="/models/mine")
    m.records["response_bias"].update({f"biasmonkey_{task}": records for task, records in tasks.items()})
    return m


def acquiescence(deltas: list[float], keys: list[str], **extra: float) -> list:
    return [pair(k, "bias", d, **extra) for k, d in zip(keys, deltas)]


def odd_even(deltas: list[float], keys: list[str]) -> list:
    return [pair(k, "bias", d, bias="odd_even") for k, d in zip(keys, deltas)]


def verdict_of(tables: dict) -> str:
    return rb_report.summary_sentence(tables["summary"].iloc[0].to_dict(), tables)


def comparison(tables: dict, models: list[ModelResults], tmp_path: Path) -> Table:
    section = rb_report.section(tables, tmp_path, models)
    (table,) = [b for b in section.blocks if isinstance(b, Table) and "beside the paper's models" in b.caption]
    return table


# ---------------------------------------------------------------------------- what the paper's models are on


def test_some_keys_held_is_not_the_same_pairs(tmp_path: Path) -> None:
    # The run: acquiescence Δ 10 … 14 on K0 … K4; the paper's model holds K0, K1 only: 2 of the 5 pairs.
    m = user({"acquiescence": acquiescence([10, 11, 12, 13, 14], ["K0", "K1", "K2", "K3", "K4"])})
    tables = build_tables([m], baselines=PUBLISHED, topics=False)
    table = comparison(tables, [m], tmp_path)
    assert not table.caption.endswith("on the same pairs")  # was "… beside the paper's models on the same pairs"
    # n = the run's 5 pairs, n (paper) = the 2 they hold; their Δ (1 + 3)/2 = 2.0 (was: n 5 alone)
    assert table.frame.iloc[0].tolist() == ["acquiescence", "bias", 5, "2", "+12.0*", "+2.0"]
    assert "The paper's models hold only some of mine's question keys for acquiescence bias" in table.legend
    assert rb_report.headline(tables).title.endswith(
        "the paper's models by question key: acquiescence on the 2 of 5 pairs they hold"
    )  # was "… the paper's models on the same pairs"


def test_one_unmatched_bias_is_said_per_bias(tmp_path: Path) -> None:
    # acquiescence on K0, K1 (Δ 10, 14: mean 12, stderr 2, t 6, df 1 → p 0.105: 0), both held by the paper's model;
    # odd/even on X1 … X3 (Δ 1, 2, 3: t 3.46, df 2 → p 0.074: 0), none held: their 4 pairs are used.
    m = user(
        {"acquiescence": acquiescence([10, 14], ["K0", "K1"]), "odd_even": odd_even([1, 2, 3], ["X1", "X2", "X3"])}
    )
    tables = build_tables([m], baselines=PUBLISHED, topics=False)
    # The paper's model: acquiescence 0 (p 0.295) + odd/even +1 (p 0.0034) = +1.
    assert (
        verdict_of(tables)
        .split("; the paper's ")[1]
        .startswith(
            "1 model score +1 to +1 (0 below it, 1 above) on the same 2 biases (by question key: acquiescence on the "
            "same 2 pairs; odd even on all their 4 pairs, sharing no question key)."
        )
    )  # was "… on the same 2 biases but over all their pairs …", acquiescence included
    assert rb_report.headline(tables).title.endswith(
        "the paper's models by question key: acquiescence on the same 2 pairs; odd even on all their 4 pairs, "
        "sharing no question key"
    )  # was "… the paper's models over all their pairs"
    table = comparison(tables, [m], tmp_path)
    assert table.frame[["setting", "n", "n (paper)"]].values.tolist() == [["bias", 2, "2"], ["bias", 3, "4"]]
    assert "None of mine's question keys is in the paper's samples for odd_even bias" in table.legend


def test_the_paper_score_range_leaves_out_the_runs_untestable_bias() -> None:
    # acquiescence as above (testable, 0); odd/even Δ 5, 5 on O1, O2: no spread, untestable, not scored. The
    # paper's score beside it is over acquiescence alone (0 on K0, K1), so 1 bias and 2 pairs, not 2 and 4.
    m = user({"acquiescence": acquiescence([10, 14], ["K0", "K1"]), "odd_even": odd_even([5, 5], ["O1", "O2"])})
    sentence = verdict_of(build_tables([m], baselines=PUBLISHED, topics=False))
    assert (
        "the paper's 1 model score +0 to +0 (0 below it, 0 above) on the same bias and the same 2 pairs "
        "(matched by question key)."
    ) in sentence  # was "on the same 2 biases and the same 4 pairs"
    # odd/even: n 2 without spread → the paper's sd is used, which the rule now says
    # (the paper's sd of 4 … 7 is 1.291: MDE (12.706 + 1.376) · 1.291 / √2 = 12.9 > 5.5 with 2 < 4 pairs)
    assert "odd even Δb (n 2: detectable |Δ| ≥ 12.9, with the paper's sd;" in sentence
    assert (
        "sd = this run's per-pair sd, or the median sd of the paper's models where this run has fewer than 5 pairs "
        "or no spread of Δ;"
    ) in sentence  # was "(the paper models' below 5 pairs)"


def test_a_paper_score_over_fewer_biases_is_said() -> None:
    # The run: acquiescence on K0 … K2 (Δ 10, 11, 13), odd/even on O1 … O3 (Δ 1, 2, 4), both testable. The paper's
    # model holds only K0 of acquiescence (one pair: its t-test undefined, not scored) and O1 … O3 of odd/even
    # (Δ 4, 5, 6: mean 5, stderr 0.577, t 8.66, df 2 → p 0.013: +1): its score +1 is over odd/even alone.
    m = user(
        {
            "acquiescence": acquiescence([10, 11, 13], ["K0", "K1", "K2"]),
            "odd_even": odd_even([1, 2, 4], ["O1", "O2", "O3"]),
        }
    )
    published = {
        "llama2-7b": {
            ("acquiescence", "bias"): {"K0": 1.0, "Z1": 3.0},
            ("odd_even", "bias"): {"O1": 4.0, "O2": 5.0, "O3": 6.0},
        }
    }
    sentence = verdict_of(build_tables([m], baselines=published, topics=False))
    assert (
        "the paper's 1 model score +1 to +1 (0 below it, 0 above, 1 over fewer biases, one of theirs untestable on "
        f"these pairs ({PAPER}: acquiescence))"
    ) in sentence  # was silent: their +1 read as over both biases


def test_a_missing_delta_is_na_not_nan() -> None:
    rows = pd.DataFrame(
        [{"model": "mine", "protocol": "sampled", "bias": "response_order", "setting": "bias", "n_pairs": 0,
          "delta": math.nan, "p": math.nan, "p_holm": math.nan}]
    )  # fmt: skip
    assert rb_report.comparison_table(rows).iloc[0].tolist() == [
        "response_order",
        "bias",
        0,
        "–",
        "n/a°",
    ]  # was "+nan°"


def test_headline_without_a_bias_row_is_no_panel() -> None:
    # Only a perturbation task: no Δb to draw (was: an AttributeError, or a pivot error beside the paper's models).
    m = user({"acquiescence_key_typo": [pair(f"K{i}", "key_typo", d) for i, d in enumerate([1, 2, 4])]})
    assert rb_report.headline(build_tables([m], baselines=False, topics=False)) is None
    published = {"llama2-7b": {("acquiescence", "key_typo"): {"K0": 1.0, "K1": 2.0, "K2": 4.0}}}
    assert rb_report.headline(build_tables([m], baselines=published, topics=False)) is None


# ---------------------------------------------------------------------------- counts that say what they are over


def test_the_paper_line_counts_their_copied_rows_once() -> None:
    odd_even_typo = {"O1": 4.0, "O2": 5.0, "O3": 6.0, "O4": 7.0}  # p 0.0034
    published = {
        "llama2-7b": {
            ("acquiescence", "bias"): {"K0": 1.0, "K1": 3.0, "Z1": 2.0, "Z2": 2.0, "Z3": 2.0, "Z4": 2.0},  # +1
            ("acquiescence", "key_typo"): {"K0": 1.0, "K1": -1.0, "K2": 2.0, "K3": -2.0},  # mean 0: p 1
            ("odd_even", "key_typo"): odd_even_typo,
            ("opinion_float", "key_typo"): odd_even_typo,  # the odd/even row again, as upstream scores it (†)
        }
    }
    m = user({"acquiescence": acquiescence([10, 11, 12, 13, 14], [f"K{i}" for i in range(5)])})
    (line,) = rb_report.summary_notes(build_tables([m], baselines=published, topics=False))
    # 2 distinct perturbation rows, 1 with raw p < 0.05 (was 2/3, the copy counted again)
    assert "llama2-7b +1 (1/2)." in line and "copies of their odd_even ones, †, so not counted again" in line


def test_untestable_perturbations_are_shown_in_the_summary() -> None:
    summary = pd.DataFrame(
        {
            "protocol": ["exact", "exact", "exact"],
            "human_likeness": [1.0, 1.0, 1.0],
            "n_biases": [1, 1, 1],
            "n_untestable": [0, 0, 0],
            "perturbations": [1, 0, 0],
            "perturbations_untestable": [2, 1, 0],
            "perturbations_significant_holm": [1, 0, 0],
            "largest_effects": ["", "", ""],
        }
    )
    shown = rb_report.summary_display(summary)["perturbations significant (Holm)"]
    assert shown == ["1 / 1 (2 untestable)", "n/a (1 untestable)", "–"]  # was "1 / 1", "–", "–"


def draws(deltas: dict[int, list[float | None]], **extra: float) -> list:
    """Acquiescence key typo, questions k0, k1, … in each seeded draw; entropy of q 0.1, 0.2, … per question."""
    return [
        dataclasses.replace(pair(f"k{i}", "key_typo", d, uncertainty_q=0.1 * (i + 1), **extra), perturbation_seed=seed)
        for seed, row in deltas.items()
        for i, d in enumerate(row)
    ]


def test_draw_pairs_without_delta_are_told_apart_from_untested_questions() -> None:
    # 4 questions × 2 draws, sampled answers; k0 has no Δ in draw 2 only: every question is still tested.
    one = user({"acquiescence_key_typo": draws({1: [1, 2, 3, 6], 2: [None, 2, 5, 4]}, n_answers=100)})
    (warning,) = build_tables([one], baselines=False, topics=False)["warnings"].to_dict("records")
    assert warning["detail"] == (
        "1 of 8 question × draw pairs (left out of their draw's t-test); all 4 questions have a Δ in some draw and "
        "are tested"
    )  # was "1 of 8 pairs (not tested)"
    # k0 without a Δ in both draws: 2 draw pairs, 1 question untested (n 3 questions)
    records = draws({1: [None, 2, 3, 6], 2: [None, 2, 5, 4]}, n_answers=100)
    (warning,) = build_tables([user({"acquiescence_key_typo": records})], baselines=False, topics=False)[
        "warnings"
    ].to_dict("records")
    assert warning["detail"] == (
        "2 of 8 question × draw pairs (left out of their draw's t-test); 1 of 4 questions without a Δ in any draw "
        "(not tested)"
    )
    row = summarize(records)
    assert (row["n_pairs"], row["pairs_without_delta"], row["draw_pairs_without_delta"]) == (3, 1, 2)  # was 2 (pairs)


def test_not_coded_topic_rows_are_not_tests() -> None:
    # K5, K7, K8 are not in the coded file: one `not coded` row, a count with no p. Entropies .1, .2, .4 against
    # |Δ| 10, 11, 13 give a defined r, so every test of the report is defined.
    records = [
        pair(k, "bias", d, uncertainty_q=u) for k, d, u in zip(["K5", "K7", "K8"], [10, 11, 13], [0.1, 0.2, 0.4])
    ]
    tables = build_tables([user({"acquiescence": records})], baselines=False, topics_file=CODED)
    assert tables["topics"]["topic"].tolist() == ["not coded"]
    assert "topics" not in set(tables["all_tests"]["table"])
    assert "(0 undefined p-values left out)" in multiple_testing_section(tables["all_tests"]).blocks[0]  # was 1


# ---------------------------------------------------------------------------- uncertainty


def test_the_uncertainty_side_reaches_the_delta_table() -> None:
    # |Δ| 1, 2, 3, 6 against q' entropy .4 .3 .2 .1: dx −2 −1 0 3, dy .15 .05 −.05 −.15;
    # r = −0.8 / √(14 · 0.05) = −0.95618 (q's entropy .1 … .4: +0.95618, the paper's side for acquiescence)
    records = [
        pair(f"K{i}", "bias", d, uncertainty_q=u, uncertainty_qp=0.5 - u)
        for i, (d, u) in enumerate([(1, 0.1), (2, 0.2), (3, 0.3), (6, 0.4)])
    ]
    tables = build_tables([user({"acquiescence": records})], baselines=False, topics=False, uncertainty_side="qp")
    row = tables["response_bias"].iloc[0]
    assert row["uncertainty_side"] == "qp"  # was "q"
    assert row["r_absdelta_uncertainty"] == pytest.approx(-0.95618, abs=1e-5)  # was +0.95618
    assert tables["uncertainty"]["r"].iloc[0] == pytest.approx(-0.95618, abs=1e-5)


def test_the_uncertainty_correlation_counts_each_question_once() -> None:
    # Draw 1: Δ 1, 2, 3, 6; draw 2: 3, 2, 5, 4 → per question 2, 2, 4, 5, against entropy .1 .2 .3 .4:
    # dx −.15 −.05 .05 .15, dy −1.25 −1.25 .75 1.75; r = 0.55 / √(0.05 · 6.75) = 0.946729, n 4 (was n 8, pooled)
    m = user({"acquiescence_key_typo": draws({1: [1, 2, 3, 6], 2: [3, 2, 5, 4]})})
    row = uncertainty_table([m]).iloc[0]
    assert row["n_pairs"] == 4 and row["r"] == pytest.approx(0.946729, abs=1e-6)
    assert summarize(m.tasks("response_bias")["biasmonkey_acquiescence_key_typo"])[
        "r_absdelta_uncertainty"
    ] == pytest.approx(0.946729, abs=1e-6)


def test_an_undefined_r_says_why(tmp_path: Path) -> None:
    m = user(
        {
            # 2 pairs: no r
            "acquiescence": [pair("K1", "bias", 5, uncertainty_q=0.3), pair("K2", "bias", 7, uncertainty_q=0.6)],
            # 4 pairs of one entropy (0.5): no spread of it
            "odd_even": odd_even([5, 7, 6, 8], ["O1", "O2", "O3", "O4"]),
        }
    )
    unc = uncertainty_table([m])
    assert unc["test_note"].tolist() == ["2 pairs with a Δ: fewer than 3", "no spread of the entropy"]
    labels = [label for label, _, _ in report_figures._scatter_series(m, unc)]
    assert labels == [
        "acquiescence (q): r n/a (2 pairs with a Δ: fewer than 3)",
        "odd even (q): r n/a (no spread of the entropy)",
    ]  # was "r +nan (p nan)"
    tables = build_tables([m], baselines=False, topics_file=CODED)
    section = rb_report.section(tables, tmp_path, [m])
    (table,) = [b for b in section.blocks if isinstance(b, Table) and b.caption.startswith("Uncertainty per model")]
    assert table.legend.endswith(
        "n/a: Pearson r undefined (r and r_p left out) for 2 row(s): mine acquiescence/bias (2 pairs with a Δ: "
        "fewer than 3); mine odd_even/bias (no spread of the entropy)."
    )
    # The topic figure: K1 Personal, K2 Science (1 pair each: stderr undefined, no error bar) — said in the caption.
    (topics,) = [b for b in section.blocks if isinstance(b, Figure) and b.caption.startswith("Δb per bias and ATP")]
    assert topics.caption.endswith(
        '"n/a" over a bar: stderr undefined (1 pair), so no error bar, in mine acquiescence Personal and social '
        "identity, mine acquiescence Science and technology"
    )


def test_topic_bars_mark_an_undefined_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # K1, K3 Personal (Δ 2, 6: stderr 2); K2 Science (1 pair), K3 National (1 pair), K4 no topic (1 pair)
    m = user({"acquiescence": acquiescence([2, 4, 6, 8], ["K1", "K2", "K3", "K4"])})
    topics = topic_table([m], load_topics(CODED))
    drawn: dict[str, plt.Figure] = {}

    def keep(fig: plt.Figure, path: Path) -> Path:
        drawn["fig"] = fig
        return path

    monkeypatch.setattr(report_figures, "save", keep)
    report_figures.topic_bars(topics, tmp_path / "topics.png")
    (ax,) = drawn["fig"].axes
    assert [t.get_text() for t in ax.texts] == ["n/a"] * 3  # Science, National, no topic (was: no mark at all)
    assert report_figures.NO_STDERR_LABEL in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(drawn["fig"])
