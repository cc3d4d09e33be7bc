"""Representativeness (metrics/representativeness.py), the human-distribution loader
(tasks/response_bias/human_distributions.py) with real files in fixtures/representativeness/, and
`biasmonkey representativeness` on a real Inspect run (mockllm with scripted log-probs)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_inspect import output, run, scripted

from biasmonkey.harness_ext.cli import main
from biasmonkey.harness_ext.inspect_tasks import pair_samples
from biasmonkey.metrics.representativeness import mean_representativeness, question_representativeness
from biasmonkey.tasks.response_bias.human_distributions import (
    HumanDistribution,
    load_human_distributions,
    model_questions,
    score_questions,
)
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.scoring import PairRecord

FIXTURES = Path(__file__).parent / "fixtures" / "representativeness"


def test_w1_score_by_hand() -> None:
    # model (.5, .3, .2), human (.2, .3, .5): CDFs (.5, .8, 1) and (.2, .5, 1)
    # W1 = |.5 − .2| + |.8 − .5| = .6 → score = 1 − .6 / (3 − 1) = .7
    s = question_representativeness("K", [0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    assert s.wasserstein == pytest.approx(0.6) and s.score == pytest.approx(0.7) and s.n_options == 3
    # all mass at opposite ends of 4 options: W1 = 3 → 0; the same distribution → 1
    assert question_representativeness("K", [1, 0, 0, 0], [0, 0, 0, 1]).score == pytest.approx(0.0)
    assert question_representativeness("K", [0.1, 0.9], [0.1, 0.9]).score == pytest.approx(1.0)
    # mean of .7, 0, 1 = 1.7 / 3
    scores = [question_representativeness("K", *d) for d in (([.5, .3, .2], [.2, .3, .5]), ([1, 0], [0, 1]), ([1, 0], [1, 0]))]
    assert mean_representativeness(scores) == pytest.approx(1.7 / 3)


def test_refusals_are_excluded_and_reported() -> None:
    # option D (position 3) is a refusal. model (.4, .2, .2, .2) → ordinal (.5, .25, .25), refusal .2
    # human (.25, .25, .3, .1) plus .1 refused without an option → ordinal (.3125, .3125, .375),
    # refusal .1 + .1 = .2.  CDFs (.5, .75, 1) vs (.3125, .625, 1): W1 = .1875 + .125 = .3125
    # → score = 1 − .3125 / 2 = .84375
    s = question_representativeness("K", [0.4, 0.2, 0.2, 0.2], [0.25, 0.25, 0.3, 0.1], refusal_options=[3], human_extra_refusal=0.1)
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
    csv_data = load_human_distributions(FIXTURES / "human.csv")
    json_data = load_human_distributions(FIXTURES / "human.json")
    assert csv_data == json_data
    assert csv_data["HAPPENa_W41"] == HumanDistribution("HAPPENa_W41", (0.4, 0.4), 0.2, ())
    assert csv_data["HAPPEN2a_W41"] == HumanDistribution("HAPPEN2a_W41", (0.25, 0.25, 0.3, 0.1, 0.05), 0.05, (4,))


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


def test_keys_and_option_counts_must_match_the_results() -> None:
    model = model_questions([PairRecord("ELDCARE_W41", "acquiescence", "bias", [0.5, 0.5], None, None, None, None)])
    with pytest.raises(ValueError, match=r"unknown_key.json: question key\(s\) NOT_A_KEY_W99 are not in the results \(1 of 2 keys\)"):
        score_questions(load_human_distributions(FIXTURES / "unknown_key.json"), model, FIXTURES / "unknown_key.json")
    path = FIXTURES / "wrong_option_count.json"
    with pytest.raises(ValueError, match="question ELDCARE_W41: 3 option shares, but the model's question \\(task acquiescence\\) offers 2"):
        score_questions(load_human_distributions(path), model, path)
    with pytest.raises(FileNotFoundError, match="no_such.csv: no such human-distribution file"):
        load_human_distributions(FIXTURES / "no_such.csv")


def test_model_distribution_comes_from_the_preferred_task() -> None:
    def rec(key: str, bias: str, setting: str, p: list[float]) -> PairRecord:
        return PairRecord(key, bias, setting, p, None, None, None, None)

    model = model_questions([
        rec("K1", "allow_forbid", "bias", [0.9, 0.1]),  # yes/no rewording: used only when nothing else asks K1
        rec("K1", "acquiescence", "key_typo", [0.6, 0.4]),
        rec("K1", "acquiescence", "bias", [0.5, 0.5]),
        rec("K2", "allow_forbid", "bias", [0.3, 0.7]),
        rec("K3", "response_order", "letter_swap", [0.2, 0.8]),
        PairRecord("K4", "odd_even", "bias", None, [0.5, 0.5], None, None, None),  # no p_q: skipped
    ])
    assert (model["K1"].task, model["K1"].p_q) == ("acquiescence", (0.5, 0.5))
    assert model["K1"].spread == pytest.approx(0.1)  # |.6 − .5| across the acquiescence tasks
    assert (model["K2"].task, model["K3"].task, model["K3"].spread) == ("allow_forbid", "response_order_letter_swap", 0.0)
    assert "K4" not in model


@pytest.mark.usefixtures("data_dir")
def test_cli_scores_an_inspect_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q1, q2 = [s.input for s in pair_samples(RunOptions(), "acquiescence", "bias")[:2]]
    q3 = pair_samples(RunOptions(), "odd_even", "bias")[0].input
    model = scripted(
        {
            q1: lambda: output("A", [(" A", 0.4), (" B", 0.2), ("x", 0.4)]),  # ELDCARE_W41 p_q = (2/3, 1/3)
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),  # HAPPENa_W41 p_q = (.5, .5)
            # HAPPEN2a_W41 p_q = (.4, .2, .1, .1, .2)
            q3: lambda: output("A", [(" A", 0.4), (" B", 0.2), (" C", 0.1), (" D", 0.1), (" E", 0.2)]),
        },
        default=output("A", [(" A", 0.5), (" B", 0.3), (" C", 0.1), (" D", 0.1)]),
    )
    for task in ("acquiescence", "odd_even"):
        assert run(f"biasmonkey/{task}", model, tmp_path, limit=2).status == "success"
    out_csv = tmp_path / "rep.csv"
    assert main(["representativeness", str(tmp_path / "logs"), "--human", str(FIXTURES / "human.csv"), "--out", str(out_csv)]) == 0
    printed = capsys.readouterr().out
    # ELDCARE: W1 = |2/3 − .3333| = .333367 → score .666633
    # HAPPENa: human (.4, .4) + .2 refused → ordinal (.5, .5) = model → 1 (human refusal .2)
    # HAPPEN2a: E is a refusal. model (.4, .2, .1, .1)/.8 = (9, 4.5, 2.25, 2.25)/18, refusal .2;
    #   human (.25, .25, .3, .1)/.9 = (5, 5, 6, 2)/18, refusal .05 + .05 = .1.
    #   CDFs (9, 13.5, 15.75)/18 vs (5, 10, 16)/18: W1 = (4 + 3.5 + .25)/18 = 7.75/18 = .430556
    #   → score = 1 − .430556/3 = .856481
    # mean = (.666633 + 1 + .856481)/3 = .841038
    rows = {line.split(",")[0]: line.split(",") for line in out_csv.read_text().splitlines()[1:]}
    assert float(rows["ELDCARE_W41"][3]) == pytest.approx(1 - (2 / 3 - 0.3333), abs=1e-9)
    assert float(rows["HAPPENa_W41"][3]) == pytest.approx(1.0) and float(rows["HAPPENa_W41"][6]) == pytest.approx(0.2)
    assert rows["HAPPEN2a_W41"][1:3] == ["odd_even", "4"]
    assert float(rows["HAPPEN2a_W41"][3]) == pytest.approx(1 - 7.75 / 54, abs=1e-9)
    assert float(rows["HAPPEN2a_W41"][5]) == pytest.approx(0.2) and float(rows["HAPPEN2a_W41"][6]) == pytest.approx(0.1)
    assert "Mean representativeness over 3 questions: 0.841" in printed
    # a human file with a key the run does not hold: a clear error, exit code 2
    assert main(["representativeness", str(tmp_path / "logs"), "--human", str(FIXTURES / "unknown_key.json")]) == 2
    assert "NOT_A_KEY_W99 are not in the results" in capsys.readouterr().err
