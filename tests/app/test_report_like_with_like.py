"""The report compares like with like (issue 34): the paper's models are scored on the user's
biases and pairs (matched by question key) before they stand beside the user's models; a run too
small to detect the paper's effect sizes says so; marks have legends; the odd/even footnote; the
headline's titles stay within the figure; the yes-no and answer-position sentences say over how
many items each side was computed. Numbers by hand in the comments."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from records import pair, yesno_item

from biasmonkey.harness_ext.app.report.headline import Panel, draw_headline, wrap_title
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.render import DEFAULT_BOLD_LEGEND, Page, Section, Table, to_html, to_markdown
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.response_bias import report as rb_report
from biasmonkey.tasks.response_bias.report_tables import MIRRORED_NOTE, matched_table, paper_label, power_table

PAPER = paper_label("llama2-7b")


def user_model(deltas: list[float], keys: list[str] | None = None) -> ModelResults:
    """Acquiescence Δb on the given keys (default K0, K1, …)."""
    m = ModelResults(name="mine", model="/models/mine")
    keys = keys or [f"K{i}" for i in range(len(deltas))]
    m.records["response_bias"]["biasmonkey_acquiescence"] = [pair(k, "bias", d) for k, d in zip(keys, deltas)]
    return m


# The paper's model over all its pairs: 1, 3, 2, 2, 2, 2 → mean 2, sd √0.4 = 0.63246, t 7.746, df 5,
# p 0.00057 → human-like +1. On the user's keys K0, K1 only: 1, 3 → mean 2, sd √2, stderr 1, t 2,
# df 1, p = 0.29517 → 0.
FULL = {"K0": 1.0, "K1": 3.0, "Z1": 2.0, "Z2": 2.0, "Z3": 2.0, "Z4": 2.0}
PUBLISHED = {"llama2-7b": {("acquiescence", "bias"): FULL}}


def test_the_paper_models_are_scored_on_the_users_pairs() -> None:
    # The user's Δb 10 … 14 on K0 … K4: mean 12, p 7.07e-5 → +1.
    matched = matched_table([user_model([10, 11, 12, 13, 14])], PUBLISHED)
    (row,) = matched.to_dict("records")
    assert (row["compared_with"], row["model"], row["bias"], row["setting"]) == ("mine", PAPER, "acquiescence", "bias")
    assert (row["n_pairs"], row["n_pairs_all"], row["matched"]) == (2, 6, True)
    assert row["delta"] == pytest.approx(2.0) and row["delta_stderr"] == pytest.approx(1.0)
    assert row["t"] == pytest.approx(2.0) and row["p"] == pytest.approx(0.29517, abs=1e-5)


def test_keys_they_do_not_hold_use_all_their_pairs_and_say_so() -> None:
    matched = matched_table([user_model([10, 11], keys=["X1", "X2"])], PUBLISHED)
    (row,) = matched.to_dict("records")
    assert (row["n_pairs"], row["matched"]) == (6, False)
    assert row["p"] == pytest.approx(0.00057325, rel=1e-4)


def test_the_verdict_sets_matched_scores_beside_the_run() -> None:
    tables = build_tables([user_model([10, 11, 12, 13, 14])], baselines=PUBLISHED, topics=False)
    # Over all its pairs (tables/human_likeness.csv, as published) the paper's model scores +1 …
    hl = tables["human_likeness"].set_index("model")
    assert hl.loc[PAPER, "score"] == 1
    # … on the user's one bias and the two pairs they share it scores 0.
    matched = tables["human_likeness_matched"]
    assert matched[["compared_with", "model", "score", "n_biases"]].values.tolist() == [["mine", PAPER, 0, 1]]
    sentence = rb_report.summary_sentence(tables["summary"].iloc[0].to_dict(), tables)
    assert (
        "human-likeness score +1 over 1 bias (acquiescence +1); the paper's 1 model score +0 to +0 (1 below it, "
        "0 above) on the same bias and the 2 of this run's 5 pairs they hold (matched by question key)."
    ) in sentence
    # The headline's paper row is the matched Δ (2.0 on K0, K1), not the published one.
    panel = rb_report.headline(tables)
    assert panel.values.loc[PAPER, "acquiescence"] == pytest.approx(2.0)
    assert not panel.significant.loc[PAPER, "acquiescence"] and panel.references == 1
    # They hold 2 of the run's 5 keys: the title says so (was "on the same pairs").
    assert panel.title.endswith("the paper's models by question key: acquiescence on the 2 of 5 pairs they hold")


def test_the_same_pairs_when_the_run_is_within_theirs() -> None:
    tables = build_tables([user_model([10, 11], keys=["K0", "K1"])], baselines=PUBLISHED, topics=False)
    sentence = rb_report.summary_sentence(tables["summary"].iloc[0].to_dict(), tables)
    assert "on the same bias and the same 2 pairs (matched by question key)." in sentence


# ---------------------------------------------------------------------------- power


def test_power_table_by_hand() -> None:
    tables = build_tables([user_model([10, 11, 12, 13, 14])], baselines=PUBLISHED, topics=False)
    (row,) = tables["power"].to_dict("records")
    # Run: n 5, sd √2.5 = 1.58114; MDE = (2.776445 + 0.940965) · 1.58114 / √5 = 2.62861.
    assert row["sd_source"] == "run" and row["sd"] == pytest.approx(math.sqrt(2.5))
    assert row["mde"] == pytest.approx(2.62861, abs=1e-5)
    # The paper's effect: |mean Δ| 2 over its 6 pairs; 2.63 > 2 with 5 < 6 pairs → underpowered.
    assert (row["paper_abs_delta"], row["paper_n_pairs"], row["underpowered"]) == (2.0, 6, True)
    sentence = rb_report.summary_sentence(tables["summary"].iloc[0].to_dict(), tables)
    assert (
        "Too few pairs to detect the paper's effect sizes in 1 of 1 test: acquiescence Δb (n 5: detectable "
        "|Δ| ≥ 2.6; the paper's models' median |Δ| 2.0 over 6 pairs). Rule: minimum detectable Δ = "
        "(t_{0.975,n−1} + t_{0.8,n−1}) · sd/√n, two-sided t-test at α 0.05 with power 0.8"
    ) in sentence


def test_power_with_too_few_pairs_uses_the_paper_sd() -> None:
    mine = pd.DataFrame(
        [
            # two equal Δs: sd 0 → the paper's sd √0.4 = 0.63246;
            # MDE = (12.706205 + 1.376382) · 0.63246 / √2 = 6.29792
            {"model": "m", "bias": "acquiescence", "setting": "bias", "n_pairs": 2, "delta": 5.0, "delta_stderr": 0.0},
            # one pair: no t-test
            {"model": "m", "bias": "acquiescence", "setting": "key_typo", "n_pairs": 1, "delta": 5.0},
            # as many pairs as the paper: never "too few", whatever the MDE
            {"model": "m", "bias": "allow_forbid", "setting": "bias", "n_pairs": 6, "delta": 1.0, "delta_stderr": 9.0},
        ]
    )
    sd = math.sqrt(0.4) / math.sqrt(6)  # stderr of the paper's 6 pairs
    paper = pd.DataFrame(
        [
            {"model": PAPER, "bias": b, "setting": s, "n_pairs": 6, "delta": 2.0, "delta_stderr": sd}
            for b, s in (("acquiescence", "bias"), ("acquiescence", "key_typo"), ("allow_forbid", "bias"))
        ]
    )
    power = power_table(mine, paper).set_index("setting", drop=False)
    two, one = power.iloc[0], power.iloc[1]
    assert two["sd_source"] == "paper" and two["sd"] == pytest.approx(0.632456, abs=1e-6)
    assert two["mde"] == pytest.approx(6.29792, abs=1e-5) and two["underpowered"]
    assert one["mde"] == math.inf and one["underpowered"]
    assert not power.iloc[2]["underpowered"]
    tables = {"power": power_table(mine, paper)}
    assert (
        "acquiescence key typo Δp (n 1: no t-test with 1 pair; the paper's models' median |Δ| 2.0 over 6 pairs)"
        in rb_report.power_sentence(tables, "m")
    )
    # Without the paper's models nothing is compared, but the MDE is still in the table.
    alone = power_table(mine, paper.iloc[:0])
    assert not alone["underpowered"].any() and math.isnan(alone["paper_abs_delta"].iloc[0])


# ---------------------------------------------------------------------------- marks, legends, footnote


def test_comparison_table_marks_and_the_odd_even_footnote() -> None:
    rows = pd.DataFrame(
        [
            {"model": "mine", "protocol": "exact", "bias": "opinion_float", "setting": "key_typo", "n_pairs": 9,
             "delta": 1.0, "p": 0.01, "p_holm": 0.2, "note": None},
            {"model": PAPER, "protocol": "paper: 50 samples", "bias": "opinion_float", "setting": "key_typo",
             "n_pairs": 9, "delta": 3.0, "p": 0.01, "p_holm": math.nan, "note": MIRRORED_NOTE},
        ]
    )  # fmt: skip
    table = rb_report.comparison_table(rows)
    # mine: raw p 0.01 but Holm 0.2 → no *; the paper's model: raw p (no Holm) → *, and † (its odd/even row);
    # n = mine's 9 pairs, n (paper) = the paper model's 9
    assert table.iloc[0].tolist() == ["opinion_float", "key_typo", 9, "9", "+1.0", "+3.0*†"]
    assert "so the paper's opinion_float perturbation values equal their odd_even ones" in rb_report._mirrored_note(
        rows
    )


def test_every_bold_table_has_a_legend(tmp_path: Path) -> None:
    frame = pd.DataFrame({"model": ["a", "b"], "p": [0.01, 0.5]})
    plain = Table("no marks", frame)
    assert plain.legend is None
    bold = Table("bold rows", frame, frame["p"] < 0.05)
    assert bold.legend == DEFAULT_BOLD_LEGEND and "raw p < 0.05" in bold.legend
    starred = Table("marked cells", frame, legend="Marks: * = p < 0.05 after Holm.")
    page = Page("t", ["v"], None, [Section("S", [plain, bold, starred])])
    md = to_markdown(page, tmp_path)
    assert md.count(DEFAULT_BOLD_LEGEND) == 1 and "Marks: * = p < 0.05 after Holm." in md
    assert md.index("| **a** |") < md.index(DEFAULT_BOLD_LEGEND) < md.index("Marks: *")
    html = to_html(page)
    assert html.count('<p class="legend">') == 2 and "<b>Bold</b> rows: raw p" in html


# ---------------------------------------------------------------------------- the headline's titles


def test_headline_titles_stay_within_the_figure() -> None:
    long_title = "A very long panel title " * 8
    panels = [
        Panel(long_title, pd.DataFrame({"a": [1.0]}, index=["m"]), vmax=2, unit="u"),
        Panel("Short", pd.DataFrame({c: [0.5] for c in "abcdefgh"}, index=["m"]), vmax=2, unit="u"),
    ]
    fig = draw_headline(panels)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    titles = [t for t in fig.texts if t.get_text().startswith(("A very", "Short"))]
    assert len(titles) == 2 and "\n" in titles[0].get_text()  # the long one wrapped
    for text in titles:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width, (box, width)
    # every axes (grids and colour bars) lies within the figure too
    for ax in fig.axes:
        assert ax.get_position().x1 <= 1.0
    plt.close(fig)
    assert wrap_title("short", 5.0) == "short"


# ---------------------------------------------------------------------------- yes-no and answer position


def test_yesno_sentence_counts_the_items() -> None:
    from biasmonkey.tasks.yesno import report as yesno_report

    m = ModelResults(name="m1", model="org/m1")
    m.records["yesno"]["biasmonkey_yesno_comps"] = [yesno_item(i, "Yes", -1.0, -3.0) for i in range(3)]
    tables = {"yesno": yesno_report.tables([m])["yesno"]}
    summary = yesno_report.summary(m, tables)
    assert summary["yesno_items"] == 3
    sentence = yesno_report.summary_sentence({"model": "m1", **summary}, tables)
    assert (
        sentence
        == "Yes-no bias (mean over 1 task, 0 = unbiased): +1.00, n/a after the Specific correction (this run: 3 items)."
    )  # (all 3 gold yes: one gold answer leaves the Specific correction undefined, not a bias of 0)
    authors = pd.DataFrame([{"task": "yesno_comps", "model": "a", "bias": 0.2}])
    sentence = yesno_report.summary_sentence({"model": "m1", **summary}, {**tables, "yesno_authors": authors})
    assert (
        "after the Specific correction (this run: 3 items; the authors': every item of each task); the authors' 1 model"
        in sentence
    )


def test_answer_position_sentence_counts_questions_and_subjects() -> None:
    from biasmonkey.tasks.answer_position import report as ap_report

    table = pd.DataFrame(
        [
            {"prompt": "zeroshot", "source": "this run", "model": "m1", "subjects": 2, "rstd": 0.1, "rstd_specific": 0.05},
            *(
                {"prompt": "zeroshot", "source": ap_report.AUTHORS, "model": f"a{i}", "subjects": 2, "rstd": r,
                 "rstd_specific": r}
                for i, r in enumerate([0.02, 0.2])
            ),
        ]
    )  # fmt: skip
    row = {"model": "m1", "answer_position_rstd": 0.1, "answer_position_rstd_specific": 0.05}
    sentence = ap_report.summary_sentence({**row, "answer_position_questions": 8}, {"answer_position": table})
    assert sentence.endswith(
        "0.100, 0.050 after the Specific correction (this run: 8 questions in 2 subjects); the authors' 2 models on "
        "the same 2 subjects, all their questions: 0.020 to 0.200 (1 below it)."
    )


@pytest.mark.requires("shared_data")
def test_answer_position_authors_on_the_runs_subjects(data_dir: Path) -> None:
    from biasmonkey.tasks.answer_position import baselines
    from biasmonkey.tasks.answer_position import report as ap_report

    per_subject = baselines.subject_results("zeroshot")
    anatomy = per_subject[per_subject["subject"] == "anatomy"].set_index("model")
    table = ap_report.baseline_table("zeroshot", subjects=["anatomy"]).set_index("model")
    assert (table["subjects"] == 1).all() and len(table) == 16
    assert table["rstd"].to_dict() == pytest.approx(anatomy["rstd"].to_dict())
    # each model's own subjects in the report: tests/answer_position/test_answer_position_report.py
