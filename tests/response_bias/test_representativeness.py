"""Representativeness (metrics/representativeness.py), the human-distribution loader
(tasks/response_bias/human_distributions.py) with real files in fixtures/representativeness/, the
choice of the question the respondents saw (tasks/response_bias/survey_questions.py), and
`biasmonkey representativeness` on a real Inspect run (mockllm with scripted log-probs)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from test_inspect import output, run, scripted

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.metrics.representativeness import mean_representativeness, question_representativeness
from biasmonkey.tasks.response_bias.human_distributions import (
    HumanDistribution,
    load_human_distributions,
    model_questions,
    score_questions,
)
from biasmonkey.tasks.response_bias.inspect_task import pair_samples
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.survey_questions import SurveyQuestion, survey_questions

FIXTURES = Path(__file__).parent.parent / "fixtures" / "representativeness"


def test_w1_score_by_hand() -> None:
    # model (.5, .3, .2), human (.2, .3, .5): CDFs (.5, .8, 1) and (.2, .5, 1)
    # W1 = |.5 − .2| + |.8 − .5| = .6 → score = 1 − .6 / (3 − 1) = .7
    s = question_representativeness("K", [0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    assert s.wasserstein == pytest.approx(0.6) and s.score == pytest.approx(0.7) and s.n_options == 3
    # all mass at opposite ends of 4 options: W1 = 3 → 0; the same distribution → 1
    assert question_representativeness("K", [1, 0, 0, 0], [0, 0, 0, 1]).score == pytest.approx(0.0)
    assert question_representativeness("K", [0.1, 0.9], [0.1, 0.9]).score == pytest.approx(1.0)
    # mean of .7, 0, 1 = 1.7 / 3
    scores = [
        question_representativeness("K", *d)
        for d in (([0.5, 0.3, 0.2], [0.2, 0.3, 0.5]), ([1, 0], [0, 1]), ([1, 0], [1, 0]))
    ]
    assert mean_representativeness(scores) == pytest.approx(1.7 / 3)


def test_refusals_are_excluded_and_reported() -> None:
    # option D (position 3) is a refusal. model (.4, .2, .2, .2) → ordinal (.5, .25, .25), refusal .2
    # human (.25, .25, .3, .1) plus .1 refused without an option → ordinal (.3125, .3125, .375),
    # refusal .1 + .1 = .2.  CDFs (.5, .75, 1) vs (.3125, .625, 1): W1 = .1875 + .125 = .3125
    # → score = 1 − .3125 / 2 = .84375
    s = question_representativeness(
        "K", [0.4, 0.2, 0.2, 0.2], [0.25, 0.25, 0.3, 0.1], refusal_options=[3], human_extra_refusal=0.1
    )
    assert s.n_options == 3 and s.wasserstein == pytest.approx(0.3125) and s.score == pytest.approx(0.84375)
    assert s.model_refusal == pytest.approx(0.2) and s.human_refusal == pytest.approx(0.2)


def test_metric_errors() -> None:
    with pytest.raises(ValueError, match="question K: the model has 2 options, the human data 3"):
        question_representativeness("K", [0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="question K: representativeness needs at least two ordinal options, got 1"):
        question_representativeness("K", [0.5, 0.5], [0.5, 0.5], refusal_options=[1])
    with pytest.raises(ValueError, match="question K: the human data puts no mass on the ordinal options"):
        question_representativeness("K", [0.5, 0.3, 0.2], [0, 0, 1.0], refusal_options=[2])


def test_csv_and_json_files_load_the_same_distributions() -> None:
    for name in ("human", "opinionqa"):
        csv_data = load_human_distributions(FIXTURES / f"{name}.csv")
        assert csv_data == load_human_distributions(FIXTURES / f"{name}.json")
    assert csv_data["RACESURV18a_W43"] == HumanDistribution("RACESURV18a_W43", (0.3, 0.3, 0.2, 0.1, 0.05), 0.05, (4,))
    human = load_human_distributions(FIXTURES / "human.csv")
    assert human["HAPPENa_W41"] == HumanDistribution("HAPPENa_W41", (0.4, 0.4), 0.2, ())
    assert human["HAPPEN2a_W41"] == HumanDistribution("HAPPEN2a_W41", (0.25, 0.25, 0.3, 0.1), 0.1, ())


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad_sum.csv", r"bad_sum.csv, question ELDCARE_W41: shares sum to 0.9000, not 1"),
        ("bad_negative.csv", r"bad_negative.csv, row 3: share '-0.2' must be a non-negative number"),
        ("bad_gap.csv", r"bad_gap.csv, question ELDCARE_W41: options AC are not A, B, … without gaps"),
        ("bad_duplicate.csv", r"bad_duplicate.csv, row 3: option A of question ELDCARE_W41 appears twice"),
        ("bad_header.csv", r"bad_header.csv: missing column\(s\) option; expected key,option,share"),
        ("bad_refusal_flag.csv", r"bad_refusal_flag.csv, row 2: refusal 'maybe' must be one of yes/no"),
        ("bad_field.json", r"bad_field.json, question ELDCARE_W41: unknown field\(s\) refusals"),
    ],
)
def test_loader_errors_name_the_file_and_row_or_key(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_human_distributions(FIXTURES / name)


def test_csv_with_a_bom_loads_like_one_without(tmp_path: Path) -> None:
    # Excel's "CSV UTF-8" starts the file with a byte-order mark
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "human.csv").read_bytes())
    assert load_human_distributions(path) == load_human_distributions(FIXTURES / "human.csv")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "latin1.csv",
            b"key,option,share\nK,A\xff,0.5\nK,B,0.5\n",
            r"latin1.csv: not UTF-8 text \(byte 0xff on line 2\)",
        ),
        ("latin1.json", b'{"K\xe9": {"shares": [0.5, 0.5]}}', r"latin1.json: not UTF-8 text \(byte 0xe9 on line 1\)"),
        ("header_only.csv", b"key,option,share,refusal\n", r"header_only.csv: no rows below the header"),
        ("empty.json", b"{}", r"empty.json: no questions"),
        ("bool.json", b'{"K": {"shares": [true, false]}}', r"bool.json, question K: share true is not a number"),
        (
            "bool_refusal.json",
            b'{"K": {"shares": [0.5, 0.5], "refusal": false}}',
            r"bool_refusal.json, question K: share false is not a number",
        ),
    ],
)
def test_unreadable_or_empty_human_files_are_errors_naming_the_file(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_human_distributions(tmp_path / name)


def test_cli_refuses_a_non_utf8_human_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"key,option,share\nK,A\xff,0.5\nK,B,0.5\n")
    assert main(["representativeness", str(tmp_path), "--human", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"biasmonkey: error: {path}: not UTF-8 text") and err.count("\n") == 1


def rec(key: str, bias: str, setting: str, p_q: list[float] | None, p_qp: list[float] | None = None) -> PairRecord:
    return PairRecord(key, bias, setting, p_q, p_qp, None, None, None)


# A hand-made survey table (the real one comes from the prompt files, test below).
SURVEY = {
    # a 4-option original: the odd/even q′ (no middle option) is what the respondents saw
    "K4": SurveyQuestion("K4", "odd_even", "qp", ("a", "b", "d", "e")),
    # a 5-option original: q, also asked by opinion float and every perturbation task of both
    "K5": SurveyQuestion("K5", "odd_even", "q", ("a", "b", "c", "d", "e")),
    "K2": SurveyQuestion("K2", "acquiescence", "q", ("yes", "no")),
}


def test_model_side_is_the_question_the_respondents_saw() -> None:
    model = model_questions(
        [
            rec("K4", "opinion_float", "bias", [0.2] * 5, [0.1] * 5 + [0.5]),  # 5-option q: not what humans saw
            rec("K4", "odd_even", "bias", [0.2] * 5, [0.1, 0.2, 0.3, 0.4]),
            rec("K5", "odd_even", "key_typo", [0.1, 0.1, 0.2, 0.3, 0.3], [0.2] * 5),
            rec("K5", "opinion_float", "bias", [0.1, 0.2, 0.2, 0.2, 0.3], [0.1] * 5 + [0.5]),
            rec("K5", "odd_even", "bias", [0.1, 0.2, 0.2, 0.2, 0.3], [0.25] * 4),
            rec("K2", "acquiescence", "letter_swap", [0.6, 0.4], [0.5, 0.5]),
            rec("K2", "allow_forbid", "bias", [0.9, 0.1], [0.2, 0.8]),  # Yes/No rewording: never used
            rec("AF", "allow_forbid", "bias", [0.9, 0.1], [0.2, 0.8]),
            rec("K9", "response_order", "bias", [0.2, 0.8], [0.5, 0.5]),  # not in the survey table
        ],
        SURVEY,
    )
    k4, k5, k2 = model["K4"], model["K5"], model["K2"]
    assert (k4.question, k4.task, k4.p, k4.spread) == ("odd_even q′", "odd_even", (0.1, 0.2, 0.3, 0.4), 0.0)
    assert k4.note == "original without a middle option"
    # opinion float first (the same q prompt as odd/even's); spread over the other tasks asking it:
    # |0.2 − 0.1| against odd_even_key_typo's q
    assert (k5.question, k5.task, k5.p) == ("odd_even q", "opinion_float", (0.1, 0.2, 0.2, 0.2, 0.3))
    assert k5.spread == pytest.approx(0.1)
    assert (k2.question, k2.task, k2.p) == ("acquiescence q", "acquiescence_letter_swap", (0.6, 0.4))
    assert model["AF"].p is None and "Yes/No rewording" in model["AF"].missing
    assert model["K9"].p is None and "no prompt file" in model["K9"].missing
    # without the odd/even bias task, no run holds K4's 4-option question
    only_float = model_questions([rec("K4", "opinion_float", "bias", [0.2] * 5, [0.1] * 5 + [0.5])], SURVEY)
    assert only_float["K4"].p is None
    assert "odd_even q′ (4 options), asked by biasmonkey_odd_even;" in only_float["K4"].missing
    with pytest.raises(ValueError, match=r"no model answers .* for 1 of 1 key\(s\) \(K4: the respondents' question"):
        score_questions({"K4": HumanDistribution("K4", (0.25,) * 4)}, only_float)


def test_keys_and_option_counts_must_match_the_results() -> None:
    model = model_questions([rec("ELDCARE_W41", "acquiescence", "bias", [0.5, 0.5])], SURVEY)
    with pytest.raises(
        ValueError, match=r"unknown_key.json: question key\(s\) NOT_A_KEY_W99 are not in the results \(1 of 2 keys\)"
    ):
        score_questions(load_human_distributions(FIXTURES / "unknown_key.json"), model, FIXTURES / "unknown_key.json")
    model = model_questions([rec("K2", "acquiescence", "bias", [0.5, 0.5])], SURVEY)
    with pytest.raises(
        ValueError,
        match=r"question K2: 3 option shares, but the question the respondents saw \(acquiescence q\) offers 2",
    ):
        score_questions({"K2": HumanDistribution("K2", (0.2, 0.3, 0.5))}, model, "file.json")
    with pytest.raises(FileNotFoundError, match="no_such.csv: no such human-distribution file"):
        load_human_distributions(FIXTURES / "no_such.csv")


@pytest.mark.usefixtures("data_dir")
def test_survey_question_table_from_the_prompt_files() -> None:
    table = survey_questions()
    odd_even = [s for s in table.values() if s.bias == "odd_even"]
    # orig middle option: True for 54 keys (5-option originals: q), False for 72 (4-option originals: q′)
    assert sum(s.side == "q" and len(s.options) == 5 for s in odd_even) == 54
    assert sum(s.side == "qp" and len(s.options) == 4 for s in odd_even) == 72
    assert {s.side for s in table.values() if s.bias != "odd_even"} == {"q"}
    assert len(table) == 572  # 176 acquiescence + 271 response order − 1 in both + 126 odd/even
    happen = table["HAPPEN2a_W41"]  # OpinionQA: 4 options and Refused
    assert (happen.label, happen.options, happen.reordered, happen.not_offered) == (
        "odd_even q′",
        ("Will definitely happen", "Will probably happen", "Will probably not happen", "Will definitely not happen"),
        False,
        (),
    )
    # the survey lists "Neither" last; the prompt puts it in the middle
    assert table["AGEMAJ_W41"].survey_to_prompt == (0, 1, 3, 4, 2) and table["AGEMAJ_W41"].reordered
    assert sum(s.reordered for s in table.values()) == 33
    assert table["RACESURV18a_W43"].not_offered == ("Not sure",)
    assert sum(bool(s.not_offered) for s in table.values()) == 6
    assert "RACESURV47a_W43" not in table  # only allow/forbid asks it (as a Yes/No rewording)
    # every other prompt lists its options in the survey's order
    assert sum(s.survey_to_prompt == tuple(range(len(s.options))) for s in table.values()) == 572 - 33 - 6


def opinionqa_records() -> list[PairRecord]:
    return [
        # HAPPEN2a_W41: q adds a middle option (5), q′ is the 4-option survey question
        rec("HAPPEN2a_W41", "odd_even", "bias", [0.9, 0.025, 0.025, 0.025, 0.025], [0.1, 0.2, 0.3, 0.4]),
        rec("HAPPEN2a_W41", "opinion_float", "bias", [0.9, 0.025, 0.025, 0.025, 0.025], [0.1] * 5 + [0.5]),
        rec("RACESURV18a_W43", "odd_even", "bias", [0.2] * 5, [0.25] * 4),
        # AGEMAJ_W41 (5-option original): the prompt's order is very good, somewhat good, neither, somewhat bad, very bad
        rec("AGEMAJ_W41", "odd_even", "bias", [0.1, 0.2, 0.2, 0.3, 0.2], [0.25] * 4),
        rec("RACESURV47a_W43", "allow_forbid", "bias", [0.5, 0.5], [0.5, 0.5]),
    ]


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize("name", ["opinionqa.csv", "opinionqa.json"])
def test_opinionqa_shaped_human_data_by_hand(name: str) -> None:
    model = model_questions(opinionqa_records())
    scores = {s.key: s for s in score_questions(load_human_distributions(FIXTURES / name), model, name)}
    # HAPPEN2a_W41: human (.38, .285, .19, .095)/.95 = (.4, .3, .2, .1), .05 refused; model q′ (.1, .2, .3, .4)
    #   CDFs (.4, .7, .9) vs (.1, .3, .6): W1 = .3 + .4 + .3 = 1.0 over its 4 positions → 1 − 1/3
    happen = scores["HAPPEN2a_W41"]
    assert (happen.n_options, model["HAPPEN2a_W41"].task) == (4, "odd_even")
    assert happen.wasserstein == pytest.approx(1.0) and happen.score == pytest.approx(2 / 3)
    assert (happen.human_refusal, happen.model_refusal) == (pytest.approx(0.05), 0.0)
    # RACESURV18a_W43: E "Not sure" is not offered (refusal) → human (.3, .3, .2, .1)/.9, refusal .05 + .05;
    #   CDFs (1/3, 2/3, 8/9) vs model (1/4, 1/2, 3/4): W1 = 1/12 + 1/6 + 5/36 = 7/18 → 1 − 7/54 = 47/54
    race = scores["RACESURV18a_W43"]
    assert race.wasserstein == pytest.approx(7 / 18) and race.score == pytest.approx(47 / 54)
    assert race.human_refusal == pytest.approx(0.1)
    # AGEMAJ_W41: survey order (A very good .1, B somewhat good .2, C somewhat bad .3, D very bad .2, E neither .2)
    #   in the prompt's order (.1, .2, .2, .3, .2) = the model's → 1 (letter by letter it would be 1 − .1/4)
    assert scores["AGEMAJ_W41"].score == pytest.approx(1.0)
    assert mean_representativeness(scores.values()) == pytest.approx((2 / 3 + 47 / 54 + 1) / 3)


@pytest.mark.usefixtures("data_dir")
@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "middle_added.json",
            r"question HAPPEN2a_W41: 5 option shares, but the survey question has 4 options \(A 'Will definitely "
            r"happen', .*; Refused left out\), the model's \(odd_even q′\) 4",
        ),
        (
            "not_offered.json",
            r"question RACESURV18a_W43: option E \('Not sure'\) of the survey question is not offered to the model "
            r"\(odd_even q′\); mark it as a refusal",
        ),
        (
            "allow_forbid_only.json",
            r"no model answers to the question the respondents saw for 1 of 1 key\(s\) \(RACESURV47a_W43: only "
            r"allow/forbid asks it, and its q is a Yes/No rewording",
        ),
    ],
)
def test_human_data_that_does_not_fit_the_question_is_an_error(name: str, message: str) -> None:
    model = model_questions(opinionqa_records())
    with pytest.raises(ValueError, match=message):
        score_questions(load_human_distributions(FIXTURES / name), model, FIXTURES / name)


@pytest.mark.usefixtures("data_dir")
def test_not_offered_option_may_be_left_out_into_refused() -> None:
    model = model_questions(opinionqa_records())
    # "Not sure" folded into the refused share: the 4 offered options in the survey's order
    human = {"RACESURV18a_W43": HumanDistribution("RACESURV18a_W43", (0.3, 0.3, 0.2, 0.1), 0.1)}
    (score,) = score_questions(human, model)
    assert score.score == pytest.approx(47 / 54) and score.human_refusal == pytest.approx(0.1)


@pytest.mark.usefixtures("data_dir")
def test_cli_scores_an_inspect_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q1, q2 = [s.input for s in pair_samples(RunOptions(), "acquiescence", "bias")[:2]]
    happen = pair_samples(RunOptions(), "odd_even", "bias")[0]
    assert happen.id == "HAPPEN2a_W41"
    model = scripted(
        {
            q1: lambda: output("A", [(" A", 0.4), (" B", 0.2), ("x", 0.4)]),  # ELDCARE_W41 p_q = (2/3, 1/3)
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),  # HAPPENa_W41 p_q = (.5, .5)
            # HAPPEN2a_W41: q (with the added middle option) is not the survey question ...
            happen.input: lambda: output("A", [(" A", 0.4), (" B", 0.2), (" C", 0.1), (" D", 0.1), (" E", 0.2)]),
            # ... its 4-option q′ is: p_qp = (.4, .2, .1, .1)/.8 (the top-k holds all the mass, so the
            # bare spellings "A" … "D" get the floor 1e-300)
            happen.metadata["qp_prompt"]: lambda: output(
                "A", [(" A", 0.4), (" B", 0.2), (" C", 0.1), (" D", 0.1), ("x", 0.2)]
            ),
        },
        default=output("A", [(" A", 0.5), (" B", 0.3), (" C", 0.1), (" D", 0.1)]),
    )
    for task in ("acquiescence", "odd_even"):
        assert run(f"biasmonkey/{task}", model, tmp_path, limit=2).status == "success"
    out_csv = tmp_path / "rep.csv"
    assert (
        main(
            [
                "representativeness",
                str(tmp_path / "logs"),
                "--human",
                str(FIXTURES / "human.csv"),
                "--out",
                str(out_csv),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    # ELDCARE: W1 = |2/3 − .3333| = .333367 → score .666633
    # HAPPENa: human (.4, .4) + .2 refused → ordinal (.5, .5) = model → 1 (human refusal .2)
    # HAPPEN2a: the odd/even q′ answers (.4, .2, .1, .1)/.8 = (9, 4.5, 2.25, 2.25)/18 over its 4 positions;
    #   human (.25, .25, .3, .1)/.9 = (5, 5, 6, 2)/18, refusal .1.
    #   CDFs (9, 13.5, 15.75)/18 vs (5, 10, 16)/18: W1 = (4 + 3.5 + .25)/18 = 7.75/18 = .430556
    #   → score = 1 − .430556/3 = .856481
    # mean = (.666633 + 1 + .856481)/3 = .841038
    with out_csv.open(newline="") as f:
        rows = {r["key"]: r for r in csv.DictReader(f)}
    assert float(rows["ELDCARE_W41"]["representativeness"]) == pytest.approx(1 - (2 / 3 - 0.3333), abs=1e-9)
    assert float(rows["HAPPENa_W41"]["representativeness"]) == pytest.approx(1.0)
    assert float(rows["HAPPENa_W41"]["human_refusal"]) == pytest.approx(0.2)
    happen_row = rows["HAPPEN2a_W41"]
    assert (happen_row["question"], happen_row["task"], happen_row["n_options"]) == ("odd_even q′", "odd_even", "4")
    assert happen_row["note"] == "original without a middle option"
    assert float(happen_row["representativeness"]) == pytest.approx(1 - 7.75 / 54, abs=1e-9)
    assert float(happen_row["model_refusal"]) == 0.0 and float(happen_row["human_refusal"]) == pytest.approx(0.1)
    assert rows["ELDCARE_W41"]["question"] == "acquiescence q"
    assert "Mean representativeness over 3 questions: 0.841" in printed
    assert "acquiescence q for 2 key(s), odd_even q′ for 1 key(s)" in printed
    assert not math.isnan(float(happen_row["model_spread"]))
    # a human file with a key the run does not hold: a clear error, exit code 2
    assert main(["representativeness", str(tmp_path / "logs"), "--human", str(FIXTURES / "unknown_key.json")]) == 2
    assert "NOT_A_KEY_W99 are not in the results" in capsys.readouterr().err
