"""The cognitive-bias Inspect tasks: `mockllm/model` with scripted answers (hand-computed
metrics), the published two-step prompts as sent, one `hf/` run on the tiny model, and parity
with lm-eval's generate mode."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import get_model
from test_cognitive_lm_eval import FIXTURES
from test_inspect import metrics, output, run
from test_inspect_parity import RAW_PROMPT
from test_lm_eval_e2e import metric, run_lm_eval

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.tasks.cognitive.data import BIASES
from biasmonkey.tasks.cognitive.inspect_task import EXACT_MODE_UNAVAILABLE, TASKS
from biasmonkey.tasks.cognitive.lm_eval_task import generation_kwargs
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    ONE_STEP_MAX_TOKENS,
    ONE_STEP_STOP,
    answer_prompt,
    decision_prompt,
    extraction_prompt,
    offered,
    side_text,
)
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, summarize_records

T_975_1DF = 12.706204736  # two-sided 95% Student t quantile, 1 degree of freedom
SCORE_METRICS = ("score", "score_stderr", "score_ci_low", "score_ci_high", "score_t", "score_p")


# The hand-computed scripts below were written for the hash reversal (seed 42); which tests the
# default (the authors' rule) reverses is tested in test_default_reversal_is_the_authors_rule.
HASH = {"reversal": "hash"}


def docs(bias: str) -> list[dict]:
    """The fixture documents of a bias with the hash option reversal, seed 42."""
    return CognitiveOptions(data_path=str(FIXTURES), **HASH).task_docs(bias)


def model_for(answers: dict[str, str], calls: list | None = None):
    """mockllm answering each scripted prompt with its text; `calls` collects (prompt, config)."""

    def answer(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        if calls is not None:
            calls.append((prompt, config))
        assert prompt in answers, f"unscripted prompt {prompt[:80]!r}"
        reply = answers[prompt]
        return output(reply() if callable(reply) else reply)

    return get_model("mockllm/model", custom_outputs=answer)


def two_step_script(doc: dict, side: str, decision: str, extraction) -> dict:
    """The decision prompt's free answer, and the extraction prompt (built from the options in
    the order they were offered and that answer) answered with `extraction`."""
    options = offered(doc[f"{side}_options"], doc["reversed"])
    return {
        decision_prompt(side_text(doc, side)): decision,
        extraction_prompt(options, decision): extraction,
    }


def by_id(items: list) -> dict:
    """Log samples or records by test id (Inspect orders a log's samples by id)."""
    return {item.id: item for item in items}


def cognitive_run(bias: str, model, tmp_path: Path, limit: int | None = None, epochs: int = 1, **task_args) -> EvalLog:
    """One task on the fixture tests; keyword arguments are -T parameters."""
    task_args = {"data_path": str(FIXTURES), **HASH, **task_args}
    return run(f"biasmonkey/cognitive_{bias}", model, tmp_path, limit=limit, epochs=epochs, task_args=task_args)


def test_two_step_protocol_maps_reversed_answers_back(tmp_path: Path) -> None:
    a, b = docs("bandwagon_effect")
    # a: reversed, 7 options, k = 1, x_1 = 0, x_2 = 6; b: not reversed, k = 1, x_1 = 6, x_2 = 0
    assert (a["reversed"], a["x_1"], a["x_2"]) == (True, 0, 6) and (b["reversed"], b["x_1"], b["x_2"]) == (False, 6, 0)
    calls: list = []
    model = model_for(
        {
            # a, control: offered "Option 4" of 7 reversed → original index 7 − 1 − 3 = 3, |3 − 0| = 3
            **two_step_script(a, "control", "The fourth option fits best.", "Option 4"),
            # a, treatment: offered "Option 1" → original 6, |6 − 6| = 0 → m = (3 − 0)/3 = 1
            # (unmapped, the answers 3 and 0 would give (3 − 6)/6 = −0.5)
            **two_step_script(a, "treatment", "I pick the first one.", "Option 1"),
            # b, not reversed: control "Option 5" → 4, |4 − 6| = 2; treatment "option 2" → 1, |1 − 0| = 1
            # → m = (2 − 1)/2 = 0.5
            **two_step_script(b, "control", "Option five.", "Option 5"),
            **two_step_script(b, "treatment", "The second.", "The answer is option 2."),
        },
        calls,
    )
    log = cognitive_run("bandwagon_effect", model, tmp_path)
    assert log.status == "success", log.error
    # Per test: decision then extraction, control then treatment, greedy, no stop sequence, no
    # token limit (the provider's default, as the authors sent none)
    assert len(calls) == 8
    assert {(c.temperature, c.max_tokens, c.stop_seqs) for _, c in calls} == {(0.0, None, None)}
    m = metrics(log)
    # m = 1 and 0.5: mean 0.75, stderr = sd/√2 = 0.353553/1.414214 = 0.25, t = 3 on 1 df with
    # two-sided p = 1 − (2/π)·atan(3) = 0.204833, CI 0.75 ± 12.706205·0.25
    assert m["score"] == pytest.approx(0.75, abs=1e-7)
    assert m["score_stderr"] == pytest.approx(0.25, abs=1e-7)
    assert m["score_t"] == pytest.approx(3.0, abs=1e-6)
    assert m["score_p"] == pytest.approx(1 - 2 / math.pi * math.atan(3), abs=1e-7)
    assert m["score_ci_low"] == pytest.approx(0.75 - T_975_1DF * 0.25, abs=1e-6)
    assert m["score_ci_high"] == pytest.approx(0.75 + T_975_1DF * 0.25, abs=1e-6)
    assert (m["n_tests"], m["failure_rate"]) == (2, 0)
    # x_1, x_2 at opposite ends: |a_1 − x_1| and |a_2 − x_2| are both uniform on 0..6 for random
    # answers, and m is antisymmetric in them, so the random baseline is 0.
    assert m["random_baseline"] == pytest.approx(0.0, abs=1e-12)

    sample = by_id(log.samples)[a["id"]]
    value = sample.scores["cognitive_scorer"].value
    assert sample.metadata == a
    assert value == pytest.approx(
        {
            "score": 1.0,
            "failed": 0.0,
            "control_failed": 0.0,
            "treatment_failed": 0.0,
            "answer_control": 3.0,
            "answer_treatment": 6.0,
            "random_baseline": 0.0,
        },
        abs=1e-7,
    )
    records = records_from_eval_log(log.location)
    ra, rb = (by_id(records)[doc["id"]] for doc in (a, b))
    assert (ra.answer_control, ra.answer_treatment, rb.answer_control, rb.answer_treatment) == (3, 6, 4, 1)
    assert (ra.response_treatment, rb.response_treatment) == ("Option 1", "The answer is option 2.")
    assert sample.scores["cognitive_scorer"].metadata["decision_control"] == "The fourth option fits best."
    summary = summarize_records(records)
    assert summary.score.mean == pytest.approx(m["score"]) and summary.score.p == pytest.approx(m["score_p"])


# One hand-made test (3 options) whose prompts can be written out in full.
SHOP_CONTROL = (
    "Situation:\nYou run a small shop.\n\nPrompt:\nHow much of the usual stock do you order?\n\n"
    "Answer Options:\nOption 1: 0%\nOption 2: 50%\nOption 3: 100%\n"
)
SHOP_TREATMENT = SHOP_CONTROL.replace("Prompt:\n", "Prompt:\nDo you order more than 90%? ")


def shop_test(tmp_path: Path) -> str:
    path = tmp_path / "shop.csv"
    pd.DataFrame(
        [
            {
                "bias": "Anchoring",
                "scenario": "A shop owner ordering stock.",
                "control": SHOP_CONTROL,
                "treatment": SHOP_TREATMENT,
                "metric_params": "{'k': 1, 'x_1': 2, 'x_2': 2}",
            }
        ]
    ).to_csv(path, index=False)
    return str(path)


# The authors' prompts as their code sends them (simonmalberg/cognitive-biases-in-llms,
# models/<Developer>/prompts.yml after YAML loading, filled as core/base.py LLM._decide fills
# them; the same words as Malberg et al. 2025, Appendix D), for the reversed shop test: the
# test text ends with a newline, so a blank line precedes "Select exactly one option."; the
# extraction prompt gets the options in the offered order and the first reply unstripped.
PAPER_CONTROL_DECISION = (
    "You will be given a decision-making task with multiple answer options.\n"
    "Situation:\nYou run a small shop.\n\nPrompt:\nHow much of the usual stock do you order?\n\n"
    "Answer Options:\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
    "Select exactly one option."
)
PAPER_CONTROL_EXTRACTION = (
    "You will be given answer options from a decision-making task and a written answer.\n"
    "--- OPTIONS ---\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
    "--- ANSWER ---\n I would order everything: Option 1.\n\n\n"
    "--- INSTRUCTION ---\n"
    'Extract the option selected in the above answer (explicitly write "Option N" and nothing else where N is '
    "the number of the option). If you cannot extract the selected option, write 'No option selected'."
)
# Our wording (prompts=biasmonkey), the two-step prompts before the published ones were added.
OURS_CONTROL_DECISION = (
    "You are given a decision task with several answer options.\n\n"
    "Situation:\nYou run a small shop.\n\nPrompt:\nHow much of the usual stock do you order?\n\n"
    "Answer Options:\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
    "Choose exactly one of the options."
)
OURS_CONTROL_EXTRACTION = (
    "Below are the answer options of a decision task, followed by a written answer to that task.\n\n"
    "OPTIONS:\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\n"
    "ANSWER:\nI would order everything: Option 1.\n\n"
    'Which option does the answer choose? Write only "Option N", where N is the number of that option. '
    'If the answer chooses no option, write "No option selected".'
)


@pytest.mark.parametrize(
    ("prompts", "decision", "extraction"),
    [
        (None, PAPER_CONTROL_DECISION, PAPER_CONTROL_EXTRACTION),  # the default
        ("paper", PAPER_CONTROL_DECISION, PAPER_CONTROL_EXTRACTION),
        ("biasmonkey", OURS_CONTROL_DECISION, OURS_CONTROL_EXTRACTION),
    ],
)
def test_two_step_sends_the_published_prompts_by_default(
    tmp_path: Path, prompts: str | None, decision: str, extraction: str
) -> None:
    data_path = shop_test(tmp_path)
    task_args = {"data_path": data_path, "seed": 2, **({"prompts": prompts} if prompts else {})}
    (doc,) = CognitiveOptions(data_path=data_path, seed=2, **HASH).task_docs("anchoring")
    assert doc["reversed"]  # seed 2 reverses this test: offered 100%, 50%, 0%
    sent: list = []
    replies = iter([" I would order everything: Option 1.\n", "Option 1", "Nothing at all.", "Option 3"])

    def answer(messages, tools, tool_choice, config):
        sent.append([(m.role, m.text) for m in messages])
        return output(next(replies))

    log = cognitive_run("anchoring", get_model("mockllm/model", custom_outputs=answer), tmp_path, **task_args)
    assert log.status == "success", log.error
    # Each call is one user message (no system message, no history), as in the authors' code.
    assert [len(messages) for messages in sent] == [1] * 4 and {m[0][0] for m in sent} == {"user"}
    assert [m[0][1] for m in sent[:2]] == [decision, extraction]
    treatment_decision = decision.replace("Prompt:\n", "Prompt:\nDo you order more than 90%? ")
    assert sent[2][0][1] == treatment_decision
    assert log.samples[0].input == decision
    # control "Option 1" of the reversed list → 100% (index 2); treatment "Option 3" → 0% (index 0):
    # m = (|2 − 2| − |0 − 2|)/(max(0, 2) + 1e-8) = −1
    (record,) = records_from_eval_log(log.location)
    assert (record.answer_control, record.answer_treatment) == (2, 0)
    assert record.score == pytest.approx(-1.0)
    assert log.eval.metadata["prompts"] == (prompts or "paper")  # the task's metadata names the prompt set


def test_unreadable_extractions_are_failures_left_out_of_the_mean(tmp_path: Path) -> None:
    a, b = docs("stereotyping")
    # k = −1, x_1 = x_2 = 3 on 7 options; a is reversed, b is not
    assert (a["reversed"], b["reversed"], b["k"], b["x_1"], b["x_2"]) == (True, False, -1, 3, 3)
    model = model_for(
        {
            **two_step_script(a, "control", "Hard to say.", "No option selected"),
            **two_step_script(a, "treatment", "The ninth.", "Option 9"),  # only 7 options
            # b: control "Option 4" → 3, |3 − 3| = 0; treatment "Option 6" → 5, |5 − 3| = 2
            # → m = −1·(0 − 2)/2 = 1
            **two_step_script(b, "control", "Neutral.", "Option 4"),
            **two_step_script(b, "treatment", "Rather high.", "Option 6"),
        }
    )
    log = cognitive_run("stereotyping", model, tmp_path)
    m = metrics(log)
    # One scored test of two: mean 2/(2 + 1e-8) ≈ 1, no spread statistics from a single value.
    assert (m["score"], m["n_tests"], m["failure_rate"]) == (pytest.approx(1.0, abs=1e-7), 1, 0.5)
    assert all(math.isnan(m[name]) for name in ("score_stderr", "score_t", "score_p", "score_ci_low"))
    # |a − 3| has the same distribution on both sides for random answers → baseline 0
    assert m["random_baseline"] == pytest.approx(0.0, abs=1e-12)
    failed = by_id(log.samples)[a["id"]].scores["cognitive_scorer"]
    assert failed.value["failed"] == failed.value["control_failed"] == failed.value["treatment_failed"] == 1.0
    assert math.isnan(failed.value["score"]) and math.isnan(failed.value["answer_control"])
    assert failed.explanation == "control: no 'Option N' in the answer; treatment: Option 9 is not one of the 7 options"
    records = by_id(records_from_eval_log(log.location))
    assert (records[a["id"]].failed, records[b["id"]].failed) == (True, False)
    assert summarize_records(list(records.values())).failure_rate == 0.5


def test_one_step_protocol_asks_as_lm_eval_does(tmp_path: Path) -> None:
    doc = docs("hindsight_bias")[0]
    assert (doc["reversed"], len(doc["control_options"]), doc["k"], doc["x_1"], doc["x_2"]) == (True, 11, 1, 6, 6)
    calls: list = []
    model = model_for(
        {
            # offered "Option 3" of 11 reversed → original 8, |8 − 6| = 2; the text after the blank
            # line is cut off as lm-eval cuts it
            answer_prompt(side_text(doc, "control")): "Option 3: 80%\n\nOption 11",
            # offered "Option 5" → original 6, |6 − 6| = 0 → m = (2 − 0)/2 = 1
            answer_prompt(side_text(doc, "treatment")): "Option 5: 60%",
        },
        calls,
    )
    log = cognitive_run("hindsight_bias", model, tmp_path, protocol="one_step", limit=1)
    assert [prompt for prompt, _ in calls] == [answer_prompt(side_text(doc, side)) for side in ("control", "treatment")]
    # The lm-eval task's generation settings: greedy, 48 tokens, stop at a blank line.
    assert generation_kwargs(CognitiveOptions(mode="generate", protocol="one_step")) == {
        "until": [ONE_STEP_STOP],
        "do_sample": False,
        "temperature": 0.0,
        "max_gen_toks": ONE_STEP_MAX_TOKENS,
    }
    assert {(c.temperature, c.max_tokens, tuple(c.stop_seqs)) for _, c in calls} == {(0.0, 48, ("\n\n",))}
    (record,) = records_from_eval_log(log.location)
    assert (record.response_control, record.answer_control, record.answer_treatment) == ("Option 3: 80%", 8, 6)
    assert record.score == pytest.approx(1.0) and metrics(log)["score"] == pytest.approx(1.0)
    assert log.samples[0].input == answer_prompt(side_text(doc, "control"))


def test_epochs_average_the_valid_answers_and_count_failed_attempts(tmp_path: Path) -> None:
    a = docs("bandwagon_effect")[0]
    extractions = iter(["Option 4", "I cannot tell."])
    model = model_for(
        {
            **two_step_script(a, "control", "The fourth.", lambda: next(extractions)),
            **two_step_script(a, "treatment", "The first.", "Option 1"),
        }
    )
    log = cognitive_run("bandwagon_effect", model, tmp_path, limit=1, epochs=2)
    # One epoch scores m = 1 (as in the two-step test), the other fails: the test keeps m = 1,
    # and half of its attempts failed.
    m = metrics(log)
    assert (m["score"], m["n_tests"], m["failure_rate"]) == (pytest.approx(1.0), 1, 0.5)
    records = records_from_eval_log(log.location)
    assert len(records) == 2 and sorted(r.failed for r in records) == [False, True]


def test_exact_mode_and_bad_parameters_are_refused() -> None:
    task = TASKS["cognitive_anchoring"]
    with pytest.raises(ValueError) as err:
        task(mode="exact", data_path=str(FIXTURES))
    assert str(err.value) == EXACT_MODE_UNAVAILABLE
    assert "-T mode=generate" in EXACT_MODE_UNAVAILABLE and "lm_eval" in EXACT_MODE_UNAVAILABLE
    with pytest.raises(ValueError, match="option mode='sample' is invalid"):
        task(mode="sample")
    with pytest.raises(ValueError, match="option protocol='three_step' is invalid; use one of two_step, one_step"):
        task(protocol="three_step")
    with pytest.raises(ValueError, match="option prompts='ours' is invalid; use one of paper, biasmonkey"):
        task(prompts="ours")
    with pytest.raises(ValueError, match="option max_tokens=0 must be a positive integer"):
        task(max_tokens=0)
    with pytest.raises(ValueError, match="option seed='x' must be an integer"):
        task(seed="x", data_path=str(FIXTURES))
    with pytest.raises(Exception, match="missing.csv does not exist"):
        task(data_path="missing.csv")
    # Reversal: by default the authors' rule (fixture rows 1 and 2: seeds 42 and 43, the second
    # reversed); the hash rule with seed 42 reverses both anchoring tests; off, nothing is reversed.
    assert [s.metadata["reversed"] for s in task(data_path=str(FIXTURES)).dataset] == [False, True]
    assert [s.metadata["reversed"] for s in task(data_path=str(FIXTURES), **HASH).dataset] == [True, True]
    with pytest.raises(ValueError, match="option reversal='coin' is invalid; use one of authors, hash"):
        task(reversal="coin")
    with pytest.raises(ValueError, match="option metric_params='new' is invalid; use one of corrected, published"):
        task(metric_params="new")
    assert [s.metadata["reversed"] for s in task(data_path=str(FIXTURES), reverse_options=False).dataset] == [
        False,
        False,
    ]


def test_all_30_tasks_are_registered_and_run(tmp_path: Path) -> None:
    names = [f"biasmonkey/cognitive_{slug}" for slug in BIASES]
    assert len(names) == 30 and sorted(TASKS) == sorted(n.removeprefix("biasmonkey/") for n in names)
    model = get_model("mockllm/model", custom_outputs=lambda *args: output("Option 1"))
    logs = inspect_eval(
        names,
        model=model,
        limit=1,
        log_dir=str(tmp_path / "logs"),
        display="none",
        task_args={"data_path": str(FIXTURES)},
    )
    assert [log.eval.task for log in logs] == names and [log.status for log in logs] == ["success"] * 30
    for log in logs:
        (record,) = records_from_eval_log(log.location)
        assert record.bias == log.eval.task.removeprefix("biasmonkey/cognitive_")
        # "Option 1" on both sides is the first offered option: mapped back, the same original option
        assert (
            record.answer_control
            == record.answer_treatment
            == (len(docs(record.bias)[0]["control_options"]) - 1) * record.reversed
        )
        assert metrics(log)["n_tests"] == 1 and metrics(log)["score"] == pytest.approx(record.score)


# ---------------------------------------------------------------------------- real models


def test_hf_tiny_model_runs_both_steps(tiny_model: Path, tmp_path: Path) -> None:
    log = cognitive_run("information_bias", f"hf/{tiny_model}", tmp_path, max_tokens=6)
    # hf/ samples unless told otherwise: the task says how to decide greedily
    assert log.status == "error" and "-M do_sample=false" in log.error.message
    (log,) = inspect_eval(
        "biasmonkey/cognitive_information_bias",
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", "do_sample": False},
        log_dir=str(tmp_path / "hf"),
        display="none",
        task_args={"data_path": str(FIXTURES), "max_tokens": 6},
    )
    assert log.status == "success", log.error
    log = read_eval_log(log.location, resolve_attachments=True)
    records = records_from_eval_log(log.location)
    assert sorted(r.id for r in records) == sorted(d["id"] for d in docs("information_bias"))
    for sample, record in zip(log.samples, records):
        # each side: a free answer, then the extraction prompt built from it; the random model
        # names no option, and each such test is counted as a failure
        events = [e for e in sample.events if e.event == "model"]
        assert len(events) == 4
        decision = sample.scores["cognitive_scorer"].metadata["decision_control"]
        assert events[1].input[-1].text == extraction_prompt(
            offered(sample.metadata["control_options"], sample.metadata["reversed"]), decision
        )
        assert record.response_control == events[1].output.completion
    m = metrics(log)
    assert m["failure_rate"] == sum(r.failed for r in records) / 2
    assert m["n_tests"] == sum(not r.failed for r in records)


def assert_generate_parity(
    model: Path,
    tmp_path: Path,
    tasks: tuple[str, ...],
    limit: int,
    protocol: str = "one_step",
    chat: bool = False,
    **options: object,
) -> list[CognitiveRecord]:
    """Inspect and lm-eval in generate mode with `protocol` on the same model (raw prompt, or the
    chat template in both; greedy, float64, batch size 1): the same texts (two_step: free answers
    and extraction replies, lm-eval in two runs), answers and per-bias aggregates."""
    task_options = {"data_path": str(FIXTURES), "protocol": protocol, **HASH, **options}
    logs = inspect_eval(
        [f"biasmonkey/cognitive_{t}" for t in tasks],
        model=f"hf/{model}",
        limit=limit,
        model_args={"device": "cpu", "dtype": "float64", "do_sample": False, **({} if chat else RAW_PROMPT)},
        max_connections=1,  # one request at a time, as lm-eval with batch size 1 (hf/ batches concurrent ones)
        task_args=task_options,
        log_dir=str(tmp_path / "inspect"),
        display="none",
    )
    assert [log.status for log in logs] == ["success"] * len(tasks)

    def lm_eval(out: str, **more: object) -> tuple[dict, dict[str, Path]]:
        metadata = json.dumps({"mode": "generate", **task_options, **more})
        lm_tasks = ",".join(f"biasmonkey_cognitive_{t}" for t in tasks)
        chat_flag = ["--apply_chat_template"] if chat else []
        args = ["--limit", str(limit), "--metadata", metadata, *chat_flag]
        return run_lm_eval(model, tmp_path / out, lm_tasks, *args, batch_size=1, dtype="float64")

    if protocol == "two_step":  # step one logs the free answers, step two extracts them
        lm_eval("lm_eval_step_one")
        results, samples = lm_eval("lm_eval", decisions=str(tmp_path / "lm_eval_step_one"))
    else:
        results, samples = lm_eval("lm_eval")
    every = []
    for task, log in zip(tasks, logs):
        ours = by_id(records_from_eval_log(log.location))
        theirs = by_id(records_from_samples_file(samples[f"biasmonkey_cognitive_{task}"]))
        assert sorted(ours) == sorted(theirs) and len(ours) == limit
        for id_ in ours:
            assert ours[id_] == theirs[id_], id_  # texts, answers, scores, failures: every field
        reported = results["results"][f"biasmonkey_cognitive_{task}"]
        m = metrics(log)
        for name in (*SCORE_METRICS, "n_tests", "failure_rate", "random_baseline"):
            # lm-eval leaves out `score` (and its stderr) when no test was scored
            expected = metric(reported, name) if any(k.startswith(f"{name},") for k in reported) else math.nan
            assert m[name] == pytest.approx(expected, rel=1e-9, abs=1e-12, nan_ok=True), (task, name)
        every += ours.values()
    return every


def test_one_step_parity_with_lm_eval_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    # The first tests of an 11-option task (reversed) and of a 7-option one (not reversed).
    records = assert_generate_parity(tiny_model, tmp_path, ("hindsight_bias", "information_bias"), limit=1)
    assert [r.reversed for r in records] == [True, False]
    # The random model writes 48 tokens of noise and never names an option: both tests fail.
    assert all(r.response_control and r.failed for r in records)


def test_two_step_parity_with_lm_eval_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    """The paper's protocol: Inspect's solver and lm-eval's two runs send the same four prompts per
    test and read the same replies (10 tokens each: the tiny model's context is 1,024)."""
    records = assert_generate_parity(
        tiny_model, tmp_path, ("hindsight_bias", "information_bias"), limit=1, protocol="two_step", max_tokens=10
    )
    assert all(r.decision_control and r.response_control and r.failed for r in records)


@pytest.mark.slow
@pytest.mark.requires("smollm2")
def test_one_step_parity_with_lm_eval_on_smollm2(tmp_path: Path) -> None:
    """SmolLM2-135M-Instruct names valid options in some tests and none in others: both harnesses
    must agree on every answer text, hence on the scores, the failures and the aggregates."""
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    records = assert_generate_parity(
        ensure_default_model(), tmp_path, ("hindsight_bias", "information_bias", "bandwagon_effect"), limit=1
    )
    scored = sum(not r.failed for r in records)
    assert 1 <= scored < len(records)  # both kinds of test occur (2 of 3 scored when measured)


@pytest.mark.slow
@pytest.mark.requires("smollm2")
def test_two_step_parity_with_lm_eval_on_smollm2(tmp_path: Path) -> None:
    """The paper's protocol on SmolLM2-135M-Instruct under its chat template (each call one user
    message): Inspect's solver and lm-eval's two runs agree on every free answer and extraction
    reply, hence on the records and the aggregates."""
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    records = assert_generate_parity(
        ensure_default_model(), tmp_path, ("hindsight_bias", "information_bias"), 1, "two_step", True, max_tokens=100
    )
    assert all(r.decision_control and r.decision_treatment and r.response_control for r in records)
