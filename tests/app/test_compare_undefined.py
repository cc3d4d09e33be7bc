"""`biasmonkey compare` where a CI or p is undefined, on hand-made runs (numbers by hand in the comments):
a bootstrap with too few valid resamples, strata of one item, identical runs (no spread, so no test in
Holm's m), the one-number-per-run rows on the items both runs share, and a row without a test, neither
significant nor not (n/a, no *)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from records import pair

from biasmonkey.harness_ext.app.compare import CompareRun, compare_pairs, item_rows
from biasmonkey.harness_ext.app.compare_output import adjustment_text, markdown, write_outputs
from biasmonkey.harness_ext.logs import Run
from biasmonkey.tasks.answer_position.scoring import McqRecord
from biasmonkey.tasks.response_bias.family import FAMILY as RB

ACQ = "biasmonkey_acquiescence"
ALGEBRA = "biasmonkey_answer_position_abstract_algebra"
ANATOMY = "biasmonkey_answer_position_anatomy"
OVERALL = "all 2 subjects (zeroshot)"


def mcq(subject: str, gold: str, answers: str) -> list[McqRecord]:
    """Questions mmlu-<subject>-0, 1, … of the given gold letters, answered with the given letters."""
    return [
        McqRecord(f"mmlu-{subject}-{i}", subject, g, (), tuple(0.0 if x == a else -5.0 for x in "ABCD"))
        for i, (g, a) in enumerate(zip(gold, answers))
    ]


def run(name: str, records: dict[str, list]) -> CompareRun:
    return CompareRun(name, Run(name), Path(name), dict.fromkeys(records), records)


def rows_by(rows: list[dict], task: str) -> dict[str, dict]:
    return {r["measure"]: r for r in rows if r["task"] == task}


def test_rstd_with_few_valid_resamples_is_na_and_counted(tmp_path: Path) -> None:
    # 4 questions, gold A, B, C, D. A answers right (recalls 1, 1, 1, 1: RStd 0), B always "A" (recalls 1, 0, 0,
    # 0: RStd = population SD = √(1/4 − 1/16) = √3/4 = 0.43301). A resample has an RStd only when it draws every
    # gold letter: P = 4!/4⁴ = 24/256 = 9.4 %, about 188 of 2000. The kept ones are reorderings of the four
    # questions, all giving 0.43301: it was CI [0.433, 0.433], p = 0.010 (significant). Now CI and p are n/a.
    a, b = (
        run("A", {ALGEBRA: mcq("abstract_algebra", "ABCD", "ABCD")}),
        run("B", {ALGEBRA: mcq("abstract_algebra", "ABCD", "AAAA")}),
    )
    rows, notes = item_rows([(a, b)], common_items=False)
    rstd = rows_by(rows, ALGEBRA)["rstd"]
    draws = np.random.default_rng(0).integers(0, 4, size=(2000, 4))  # the documented draws, seed 0
    valid = sum(len(set(row)) == 4 for row in draws.tolist())
    assert 150 < valid < 230
    assert rstd["difference"] == pytest.approx(math.sqrt(3) / 4)
    assert math.isnan(rstd["ci_low"]) and math.isnan(rstd["p"])
    assert (rstd["resamples"], rstd["resamples_valid"]) == (2000, valid)
    assert rstd["note"] == f"CI and p n/a: only {valid} of 2000 resamples have the statistic in both runs (under 90%)"
    assert f"A vs B: {ALGEBRA} rstd: {rstd['note']}" in notes
    # accuracy: A 4/4, B 1/4; discordant n10 = 3 → exact McNemar p = 2 · P(X ≤ 0 | 3, ½) = 2/8 = 0.25: the one test
    result = compare_pairs([(a, b)], rows, notes, "items", "holm")
    assert rows_by(result.rows, ALGEBRA)["accuracy"]["p"] == pytest.approx(0.25)
    assert "over the 1 tests" in adjustment_text(result)
    md = markdown(result)
    assert f"| paired bootstrap (2000 resamples, seed 0) | {valid}/2000 | n/a | n/a |" in md
    assert "## Notes" in md and rstd["note"] in md
    # the count is in the CSV and the JSON too
    write_outputs(result, tmp_path)
    (saved,) = [r for r in csv.DictReader((tmp_path / "compare.csv").open()) if r["measure"] == "rstd"]
    assert (saved["resamples"], saved["resamples_valid"], saved["p"]) == ("2000", str(valid), "")  # n/a: empty
    (saved,) = [r for r in json.loads((tmp_path / "compare.json").read_text())["rows"] if r["measure"] == "rstd"]
    assert saved["resamples_valid"] == valid and saved["p"] is None and saved["note"] == rstd["note"]


def test_strata_of_one_item_give_no_ci() -> None:
    # A answers both subjects' four questions right; B has only question 0 of each (gold A), answered "B" (wrong).
    # Common items: one per subject. Pooled accuracy 1 vs 0 (B − A = −1), resampled within subjects: each
    # resample is the same two questions (it was CI [−1, −1]); each subject's own row has one question.
    a = run("A", {ALGEBRA: mcq("abstract_algebra", "ABCD", "ABCD"), ANATOMY: mcq("anatomy", "ABCD", "ABCD")})
    b = run("B", {ALGEBRA: mcq("abstract_algebra", "A", "B"), ANATOMY: mcq("anatomy", "A", "B")})
    rows, notes = item_rows([(a, b)], common_items=True)
    pooled = rows_by(rows, OVERALL)["accuracy"]
    assert (pooled["n"], pooled["difference"]) == (2, -1)
    assert math.isnan(pooled["ci_low"]) and math.isnan(pooled["ci_high"]) and pooled["resamples"] == 0
    assert pooled["note"].startswith("CI n/a: every stratum has a single item (2 strata)")
    # McNemar over the 2 questions: n10 = 2 → p = 2 · P(X ≤ 0 | 2, ½) = 2/4 = 0.5, still a test
    assert pooled["p"] == pytest.approx(0.5)
    single = rows_by(rows, ALGEBRA)["accuracy"]
    assert single["n"] == 1 and math.isnan(single["ci_low"]) and single["note"].startswith("CI n/a: 1 item")
    # B with algebra's questions 0, 1 (gold A, B) answered "B", "B" (B − A = −1, 0) and anatomy's question 0 alone
    # (−1, in every resample). Pooled B − A = (−1 + 0 − 1)/3 = −⅔; a resample: (two algebra draws − 1)/3 = −1 (¼),
    # −⅔ (½), −⅓ (¼): CI [−1, −⅓], given, and the note counts the question that adds no variance.
    b = run("B", {ALGEBRA: mcq("abstract_algebra", "AB", "BB"), ANATOMY: mcq("anatomy", "A", "B")})
    pooled = rows_by(item_rows([(a, b)], common_items=True)[0], OVERALL)["accuracy"]
    assert (pooled["difference"], pooled["ci_low"], pooled["ci_high"]) == (
        pytest.approx(-2 / 3),
        pytest.approx(-1),
        pytest.approx(-1 / 3),
    )
    assert pooled["note"] == "items alone in their stratum: 1 (the same in every resample, no variance from them)"


def test_identical_runs_add_no_bootstrap_test_to_holm() -> None:
    # One subject of 40 questions (gold A, B, C, D × 10: a resample lacks a letter with P ≈ 4 · (3/4)⁴⁰ ≈ 4e-5,
    # so all 2000 are valid), answered alike by both runs: every resampled difference of RStd is 0. It was
    # CI [0, 0] and p = 1, counted by Holm. Acquiescence differs: Δ A 1, 2, 3; B 2, 2, 5 → B − A = 1, 0, 2, a
    # defined paired t-test. Holm's m is 1: the bootstrap rows (before and after Specific) are n/a, and McNemar
    # has no discordant question.
    gold, answers = "ABCD" * 10, "AABC" * 10
    same = {ALGEBRA: mcq("abstract_algebra", gold, answers)}
    a = run("A", same | {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([1, 2, 3])]})
    b = run("B", same | {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([2, 2, 5])]})
    rows, notes = item_rows([(a, b)], common_items=False)
    measures = rows_by(rows, ALGEBRA)
    for name in ("rstd", "rstd_specific"):
        r = measures[name]
        assert r["difference"] == 0 and math.isnan(r["p"]) and math.isnan(r["ci_low"]) and r["resamples_valid"] == 2000
        assert r["note"] == "CI and p n/a: no spread (every resample gives the same difference, 0)"
    assert measures["accuracy"]["note"].endswith("p n/a: no item that one run got right and the other wrong")
    result = compare_pairs([(a, b)], rows, notes, "items", "holm")
    assert [r["measure"] for r in result.rows if not math.isnan(r["p"])] == ["delta"]
    assert "p adjusted by Holm over the 1 tests" in adjustment_text(result)


def test_run_scores_on_the_common_items_only() -> None:
    # Human-likeness per run: +1 for a significant Δ > 0, −1 for a significant Δ < 0, 0 otherwise.
    # A has K0…K5 with Δ 20, 21, 22, 23, 1, −1: mean 14.33, SD 11.17, t = 3.14 (df 5), p = 0.026 → +1 on its own
    # items; B has K4…K9 with Δ 1, −1, −20, −21, −22, −23: the mirror, −1. It was A +1, B −1 from their own
    # (different) items. On the common items K4, K5 both have Δ 1, −1: mean 0, t = 0, p = 1 → 0 and 0.
    a = run("A", {ACQ: [pair(f"K{i}", "bias", d) for i, d in enumerate([20, 21, 22, 23, 1, -1])]})
    b = run("B", {ACQ: [pair(f"K{i + 4}", "bias", d) for i, d in enumerate([1, -1, -20, -21, -22, -23])]})
    rows, notes = item_rows([(a, b)], common_items=True)
    score = rows_by(rows, "(run)")["human_likeness"]
    assert (score["value_a"], score["value_b"], score["difference"]) == (0, 0, 0) and score["n"] == 2
    assert rows_by(rows, ACQ)["delta"]["n"] == 2
    # no item in common: no run row, and a note says why
    c, d = run("C", {ACQ: a.records[ACQ][:2]}), run("D", {ACQ: b.records[ACQ][2:]})  # K0, K1 and K6 … K9
    rows, notes = item_rows([(c, d)], common_items=True)
    assert rows_by(rows, "(run)") == {}
    assert f"C vs D: {RB.title} run scores left out, the runs share no item" in notes


def test_a_row_without_a_test_is_neither_significant_nor_not(tmp_path: Path) -> None:
    # Acquiescence: A Δ 2, 2, 2 and B Δ 3, 3, 3 → B − A = 1, 1, 1: no spread, the paired t is undefined (p NaN).
    # It was `significant` False. Its key typo rows: A 0, 1, 2, 3; B 10, 12, 14, 16 → B − A = 10, 11, 12, 13:
    # mean 11.5, SD √(5/3) = 1.291, t = 11.5 / (1.291/√4) = 17.82 on 3 df, p = 3.86e-4: the one test (Holm's
    # m = 1, p adj. = p), significant. Human-likeness: each run's acquiescence Δ has no spread, so no bias is
    # testable: n/a for both (the untestable count 1 each), with a note.
    typo = "biasmonkey_acquiescence_key_typo"
    a = run(
        "A", {ACQ: [pair(f"K{i}", "bias", 2) for i in range(3)], typo: [pair(f"T{i}", "key_typo", i) for i in range(4)]}
    )
    b = run(
        "B",
        {
            ACQ: [pair(f"K{i}", "bias", 3) for i in range(3)],
            typo: [pair(f"T{i}", "key_typo", 10 + 2 * i) for i in range(4)],
        },
    )
    rows, notes = item_rows([(a, b)], common_items=False)
    result = compare_pairs([(a, b)], rows, notes, "items", "holm")
    delta, tested = rows_by(result.rows, ACQ)["delta"], rows_by(result.rows, typo)["delta"]
    assert math.isnan(delta["p"]) and math.isnan(delta["p_adjusted"]) and delta["significant"] is None
    assert tested["p"] == pytest.approx(3.856e-4, rel=1e-3) and tested["p_adjusted"] == tested["p"]
    assert tested["significant"] is True
    scores = rows_by(result.rows, "(run)")
    assert math.isnan(scores["human_likeness"]["value_a"]) and math.isnan(scores["human_likeness"]["value_b"])
    assert (scores["human_likeness_untestable"]["value_a"], scores["human_likeness_untestable"]["value_b"]) == (1, 1)
    assert all(r["significant"] is None for r in scores.values())
    assert "A vs B: (run) human_likeness: n/a for A and B: undefined on the items both runs have" in result.notes
    assert scores["human_likeness_untestable"]["note"] == ""
    # markdown: n/a p and p adj. without "*"; the tested row's p adj. marked
    md = markdown(result)
    assert (
        f"| response_bias | {ACQ} | delta | 3 | 2.000 | 3.000 | 1.000 | n/a | paired t | n/a | n/a | n/a | n/a |" in md
    )
    assert f"| {typo} | delta | 4 |" in md and "| 0.000386 | 0.000386 * |" in md and md.count(" * |") == 1
    # CSV: empty (no value), not "False"; JSON: null, not false
    write_outputs(result, tmp_path)
    saved = {(r["task"], r["measure"]): r for r in csv.DictReader((tmp_path / "compare.csv").open())}
    assert (saved[ACQ, "delta"]["significant"], saved[typo, "delta"]["significant"]) == ("", "True")
    assert saved[ACQ, "delta"]["p_adjusted"] == ""  # n/a: empty, as every missing value
    saved = {(r["task"], r["measure"]): r for r in json.loads((tmp_path / "compare.json").read_text())["rows"]}
    assert saved[ACQ, "delta"]["significant"] is None and saved[ACQ, "delta"]["p_adjusted"] is None
    assert saved["(run)", "human_likeness"]["significant"] is None and saved[typo, "delta"]["significant"] is True


def test_model_pairs_name_yes_no_ties() -> None:
    """`compare --pairs`: a run whose yes-no answers are exact ties (yes == no) has bias 0 without
    saying anything; its pair notes say so (one line per run and task, as yesno-compare does)."""
    from records import yesno_item

    from biasmonkey.harness_ext.app.compare import model_pair_rows

    comps = "biasmonkey_yesno_comps"
    gold = ["Yes", "No"] * 2
    tied = run("tied", {comps: [yesno_item(i, g, -1.0, -1.0) for i, g in enumerate(gold)]})
    leaning = run("leaning", {comps: [yesno_item(i, g, -1.0, -3.0) for i, g in enumerate(gold)]})
    others = [run(n, {comps: [yesno_item(i, g, -2.0, -1.0) for i, g in enumerate(gold)]}) for n in ("c", "d")]
    rows, notes = model_pair_rows([(tied, leaning), (others[0], others[1])], common_items=False)
    (line,) = [n for n in notes if "exact ties" in n]  # none for the runs without ties
    assert line.startswith(f"tied: {comps}: 4 of 4 answers are exact ties (yes == no")
    assert rows  # the comparison itself is still made
