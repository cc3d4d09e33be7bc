"""Self-explaining Inspect samples (issue 29): each family's `Score.answer` (what the model
chose), `Score.explanation` (the option probabilities and the rule that scored it) and the
metadata added for `inspect view` (both prompts, yes-no's P(yes)/P(no)/decision), read back
from the log of a tiny offline eval (`mockllm/model`, scripted answers), with the records the
codecs decode from that log unchanged."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log
from test_cognitive_inspect import by_id, cognitive_run, docs, model_for, two_step_script
from test_inspect import output, prompts, run, scripted
from test_yesno_inspect import ITEM_TOPS, NULL_TOP, comps_prompts

from biasmonkey.harness_ext.logs import records_from_eval_log
from biasmonkey.tasks.answer_position.inspect_task import TASKS as ANSWER_POSITION_TASKS
from biasmonkey.tasks.answer_position.scoring import McqRecord
from biasmonkey.tasks.cognitive.prompts import decision_prompt, side_text
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, random_baseline_of
from biasmonkey.tasks.response_bias.inspect_task import explained, pair_samples
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.scoring import PairRecord, score_exact
from biasmonkey.tasks.yesno.scoring import ItemRecord

pytestmark = pytest.mark.usefixtures("data_dir")


def logged_score(log, scorer: str, index: int = 0):
    """A sample's score as written to the log file (not the in-memory EvalLog)."""
    sample = read_eval_log(log.location).samples[index]
    return sample, sample.scores[scorer]


def without(metadata: dict, *keys: str) -> dict:
    return {k: v for k, v in metadata.items() if k not in keys}


def test_response_bias_exact_mode(tmp_path: Path) -> None:
    ((q, qp),) = prompts(n=1)
    model = scripted(
        {
            # q: A = " A" .3 + "A" .1 = .4, B .2 → [2/3, 1/3]; q': A .6, B .2 → [.75, .25]
            q: lambda: output("A", [(" A", 0.3), ("x", 0.3), ("ĠB", 0.2), ("A", 0.1), ("y", 0.1)]),
            qp: lambda: output("A", [("▁A", 0.5), ("B", 0.2), ("A", 0.1), ("y", 0.1), ("z", 0.1)]),
        }
    )
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1)
    assert log.status == "success", log.error
    sample, score = logged_score(log, "pair_scorer")
    assert score.answer == "q: A, q': A"
    # acquiescence Δ = +100·(q'[a] − q[a]) = 100(.75 − .6667) = +8.3
    assert score.explanation == (
        "q: A 0.67, B 0.33; q': A 0.75, B 0.25 (option probabilities renormalised); "
        "Δ = +8.3 points = +100·(q'[a] − q[a])"
    )
    assert score.metadata["prompts"] == {"q": q, "qp": qp} and sample.input == q
    # the record as before: the value's keys, and the record decoded from the log
    assert set(score.value) == {"delta", "uncertainty_q", "uncertainty_qp", "n_answers", "n_invalid", "n_imputed"} | {
        "q_0",
        "q_1",
        "qp_0",
        "qp_1",
        "valid_mass_q",
        "valid_mass_qp",
    }
    (record,) = records_from_eval_log(log.location)
    assert record.delta == pytest.approx(25 / 3)
    assert record.p_q == pytest.approx([2 / 3, 1 / 3]) and record.p_qp == pytest.approx([0.75, 0.25])
    in_metadata = PairRecord.from_dict(without(score.metadata, "prompts"))
    assert (record.key, record.bias, record.setting, record.valid_mass_q) == (
        in_metadata.key,
        in_metadata.bias,
        in_metadata.setting,
        pytest.approx(in_metadata.valid_mass_q),
    )


def test_response_bias_sample_mode(tmp_path: Path) -> None:
    ((q, qp),) = prompts(n=1)
    q_answers, qp_answers = iter(["A", "A", "B", ""]), iter(["A", "B", "B", "Maybe"])
    model = scripted({q: lambda: output(next(q_answers)), qp: lambda: output(next(qp_answers))})
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1, task_args={"mode": "sample", "n_samples": 4})
    _, score = logged_score(log, "pair_scorer")
    # the modes of the valid answers: q A (2 of 3), q' B (2 of 3); Δ = 100(1/3 − 2/3) = −33.3
    assert score.answer == "q: A, q': B"
    assert score.explanation == (
        "q: A 0.67, B 0.33 (of 3 valid answers); q': A 0.33, B 0.67 (of 3 valid answers) "
        "(shares of the valid sampled answers); Δ = -33.3 points = +100·(q'[a] − q[a]); 2 of 8 answers invalid"
    )
    assert score.metadata["prompts"] == {"q": q, "qp": qp}
    (record,) = records_from_eval_log(log.location)
    assert (record.n_answers, record.n_invalid, record.delta) == (8, 2, pytest.approx(-100 / 3))


def test_response_bias_explanation_names_the_mapped_positions() -> None:
    doc = pair_samples(RunOptions(), "response_order", "bias")[0].metadata
    assert doc["qp_positions"] == [2, 1, 0]
    # q: [.5, .3, .2]; q' (reversed options): [.1, .2, .7] → q'[a] (its option C) = .7;
    # response order Δ = −100·(q'[a] − q[a]) = −100(.7 − .5) = −20
    record = score_exact(doc, [math.log(p) for p in (0.5, 0.3, 0.2)], [math.log(p) for p in (0.1, 0.2, 0.7)])
    answer, explanation = explained(doc, record)
    assert answer == "q: A, q': C"
    assert explanation == (
        "q: A 0.50, B 0.30, C 0.20; q': A 0.10, B 0.20, C 0.70 (option probabilities renormalised); "
        "Δ = -20.0 points = −100·(q'[a] − q[a]); q' options at q positions A→c, B→b, C→a"
    )


def test_yesno(tmp_path: Path) -> None:
    items = comps_prompts(3)
    model = scripted(
        {"": lambda: output("Yes", NULL_TOP), **{p: (lambda t=t: output("Yes", t)) for p, t in zip(items, ITEM_TOPS)}}
    )
    log = run("biasmonkey/yesno_comps", model, tmp_path, limit=3)
    assert log.status == "success", log.error
    # comps-1 (gold Yes): yes .5, no .3 → P(yes) = .625, P(no) = .375, mass .8 → Yes, right
    sample, score = logged_score(log, "yesno_scorer", 0)
    assert sample.id == "comps-1" and score.answer == "Yes"
    assert score.explanation == (
        "P(yes)=0.625, P(no)=0.375 → Yes (log-sum-exp of ' Yes'/'Yes' vs ' No'/'No', renormalised over the two; "
        "their first-token mass 0.80); gold Yes: right. Generic/Specific corrections: see the task metrics"
    )
    assert score.metadata["decision"] == "Yes"
    assert (score.metadata["p_yes"], score.metadata["p_no"]) == pytest.approx((0.625, 0.375))
    assert score.metadata["null_prompt"] == ""
    # comps-3 (gold No): yes .6, no .2 → .75, .25 → Yes, wrong
    sample, score = logged_score(log, "yesno_scorer", 2)
    assert sample.id == "comps-3" and score.answer == "Yes"
    assert score.explanation.startswith("P(yes)=0.750, P(no)=0.250 → Yes (")
    assert score.explanation.endswith("gold No: wrong. Generic/Specific corrections: see the task metrics")
    assert (score.metadata["p_yes"], score.metadata["p_no"]) == pytest.approx((0.75, 0.25))
    records = {r.id: r for r in records_from_eval_log(log.location)}
    assert records["comps-3"] == ItemRecord.from_dict(score.metadata)
    assert (records["comps-3"].yes, records["comps-3"].no) == pytest.approx((math.log(0.6), math.log(0.2)))
    assert records["comps-3"].null_yes == pytest.approx(math.log(0.6))


def test_cognitive_two_step(tmp_path: Path) -> None:
    a, b = docs("bandwagon_effect")
    model = model_for(
        {
            # a: reversed, 7 options, k = 1, x_1 = 0, x_2 = 6; offered "Option 4" → original 3, "Option 1" → 6
            **two_step_script(a, "control", "The fourth option fits best.", "Option 4"),
            **two_step_script(a, "treatment", "I pick the first one.", "Option 1"),
            **two_step_script(b, "control", "Option five.", "Option 5"),
            **two_step_script(b, "treatment", "The second.", "The answer is option 2."),
        }
    )
    log = cognitive_run("bandwagon_effect", model, tmp_path)
    assert log.status == "success", log.error
    samples = by_id(read_eval_log(log.location).samples)
    score = samples[a["id"]].scores["cognitive_scorer"]
    assert score.answer == "control Option 4, treatment Option 7 (original numbering)"
    # m = 1·(3 − 0)/max(3, 0) = 1
    baseline = random_baseline_of(a)
    assert score.explanation == (
        "control Option 4, treatment Option 7 (offered in reverse order, original numbering) → m = +1.000 = "
        "k·(d₁ − d₂)/max(d₁, d₂) with k = 1, d₁ = |3 − 0| = 3, d₂ = |6 − 6| = 0 (zero-based options); "
        f"random baseline {baseline:+.3f}"
    )
    assert score.metadata["prompts"] == {side: decision_prompt(side_text(a, side)) for side in ("control", "treatment")}
    assert samples[a["id"]].input == score.metadata["prompts"]["control"]
    # b, not reversed: control Option 5 → 4, |4 − 6| = 2; treatment Option 2 → 1, |1 − 0| = 1 → m = .5
    assert (
        samples[b["id"]]
        .scores["cognitive_scorer"]
        .explanation.startswith("control Option 5, treatment Option 2 (original numbering) → m = +0.500 = ")
    )
    records = by_id(records_from_eval_log(log.location))
    assert records[a["id"]] == CognitiveRecord.from_dict(without(score.metadata, "prompts"))
    assert (records[a["id"]].answer_control, records[a["id"]].answer_treatment) == (3, 6)
    assert records[a["id"]].score == pytest.approx(1.0) and records[b["id"]].score == pytest.approx(0.5)


def test_answer_position(tmp_path: Path) -> None:
    (item,) = ANSWER_POSITION_TASKS["answer_position_anatomy"]().dataset[:1]
    assert item.target == "A"
    # A .1, B " B" .2 + "B" .3 = .5, C .2, D .1 → of .9: .111, .556, .222, .111
    top = [("B", 0.3), (" B", 0.2), (" C", 0.2), (" A", 0.1), ("D", 0.1), ("x", 0.1)]
    log = run("biasmonkey/answer_position_anatomy", scripted({item.input: lambda: output("B", top)}), tmp_path, limit=1)
    assert log.status == "success", log.error
    sample, score = logged_score(log, "answer_position_scorer")
    assert score.answer == "B"
    assert score.explanation == (
        "A 0.11, B 0.56, C 0.22, D 0.11 → B (log-sum-exp of ' X'/'X' per letter, renormalised over A–D); gold A: wrong"
    )
    assert score.metadata["probabilities"] == pytest.approx({"A": 1 / 9, "B": 5 / 9, "C": 2 / 9, "D": 1 / 9})
    (record,) = records_from_eval_log(log.location)
    assert record == McqRecord.from_dict(score.metadata)
    assert record.letters == pytest.approx(tuple(math.log(p) for p in (0.1, 0.5, 0.2, 0.1)))
