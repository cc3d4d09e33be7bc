"""Real runs of the stock `lm_eval` CLI on the cognitive-bias tasks with a tiny random model
(plumbing, not realism) over our fixtures. Logged samples are turned back into per-test
records by the core code and must recompute to what lm-eval reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from lm_eval.tasks import TaskManager
from test_lm_eval_e2e import REPO, metric, run_lm_eval

from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.tasks.cognitive.data import BIASES, DataError
from biasmonkey.tasks.cognitive.lm_eval_task import generation_kwargs
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import answer_prompt, side_text
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, summarize_records
from biasmonkey.tasks.families import COGNITIVE

FIXTURES = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
ALL_TASKS = [f"biasmonkey_cognitive_{slug}" for slug in BIASES]
# An 11-option task and a 7-option one whose control and treatment options differ; each has
# a test that the default seed reverses and one it does not.
EXACT_TASKS = ["biasmonkey_cognitive_hindsight_bias", "biasmonkey_cognitive_information_bias"]
OPTION_LINE = re.compile(r"^Option (\d+): (.*)$", re.MULTILINE)


def metadata(**options: object) -> str:
    return json.dumps({"data_path": str(FIXTURES), **options})


def logged(samples_file: Path) -> list[dict]:
    return [json.loads(line) for line in samples_file.read_text().splitlines()]


def assert_recomputes(task_results: dict, samples_file: Path, n_tests: int) -> list[CognitiveRecord]:
    """Logged records reproduce the per-test values and every aggregate lm-eval reported."""
    records = records_from_samples_file(samples_file)
    samples = logged(samples_file)
    assert len(records) == len(samples) == n_tests
    for record, sample in zip(records, samples):
        assert record.id == sample["doc"]["id"]
        assert sample["failure_rate"] == float(record.failed)
        if record.score is not None:
            assert sample["score"] == pytest.approx(record.score, abs=1e-12)
    summary = summarize_records(records)
    assert metric(task_results, "n_tests") == summary.score.n
    assert metric(task_results, "failure_rate") == pytest.approx(summary.failure_rate)
    assert metric(task_results, "random_baseline") == pytest.approx(summary.random_baseline, abs=1e-12)
    if summary.score.n:
        for name, expected in [
            ("score", summary.score.mean),
            ("score_stderr", summary.score.stderr),
            ("score_t", summary.score.t),
            ("score_p", summary.score.p),
            ("score_ci_low", summary.score.ci_low),
            ("score_ci_high", summary.score.ci_high),
        ]:
            assert metric(task_results, name) == pytest.approx(expected, rel=1e-9, abs=1e-12, nan_ok=True), name
    if summary.expected_score is not None:
        assert metric(task_results, "expected_score") == pytest.approx(summary.expected_score, abs=1e-12)
    return records


@pytest.fixture(scope="module")
def exact_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """Two tasks in exact mode with the default option reversal (the authors' rule)."""
    return run_lm_eval(
        tiny_model, tmp_path_factory.mktemp("exact") / "out", ",".join(EXACT_TASKS), "--metadata", metadata()
    )


def test_exact_mode_reports_every_metric_and_recomputes(exact_run) -> None:
    results, samples = exact_run
    for task in EXACT_TASKS:
        task_results = results["results"][task]
        reported = {k.split(",")[0] for k in task_results} - {"alias", "name", "sample_len", "sample_count"}
        assert {
            "score",
            "score_stderr",
            "score_t",
            "score_p",
            "score_ci_low",
            "score_ci_high",
            "n_tests",
            "failure_rate",
            "random_baseline",
            "expected_score",
            "expected_score_stderr",
        } <= reported
        assert metric(task_results, "score_stderr") >= 0  # lm-eval's mean gives the score a stderr
        records = assert_recomputes(task_results, samples[task], 2)
        for record in records:
            assert not record.failed
            assert sum(record.p_control) == pytest.approx(1.0) and sum(record.p_treatment) == pytest.approx(1.0)
            assert -1 <= record.expected_score <= 1


def test_exact_requests_score_each_label_after_each_prompt(exact_run) -> None:
    _, samples = exact_run
    for sample in logged(samples["biasmonkey_cognitive_hindsight_bias"]):
        doc, args = sample["doc"], list(sample["arguments"].values())
        assert [a["arg_1"] for a in args] == 2 * [f" Option {i}:" for i in range(1, 12)]
        assert {a["arg_0"] for a in args[:11]} == {answer_prompt(side_text(doc, "control"))}
        assert {a["arg_0"] for a in args[11:]} == {answer_prompt(side_text(doc, "treatment"))}


def test_reversed_answers_are_mapped_back_to_the_original_options(exact_run) -> None:
    """Recompute each distribution from the prompt the model actually saw, matching the offered
    options to the original ones by their text: a wrong index mapping would not survive this."""
    _, samples = exact_run
    orders = set()
    for task in EXACT_TASKS:
        for sample, record in zip(logged(samples[task]), records_from_samples_file(samples[task])):
            doc, args = sample["doc"], list(sample["arguments"].values())
            lls = np.array([float(r[0]) for r in sample["filtered_resps"]])
            start = 0
            for side, p_record in (("control", record.p_control), ("treatment", record.p_treatment)):
                n = len(doc[f"{side}_options"])
                offered = [text for _, text in OPTION_LINE.findall(args[start]["arg_0"])][-n:]
                side_lls = lls[start : start + n]
                p_offered = np.exp(side_lls - side_lls.max())
                p_offered /= p_offered.sum()
                assert p_record == pytest.approx([p_offered[offered.index(text)] for text in doc[f"{side}_options"]])
                orders.add(offered == doc[f"{side}_options"])
                assert offered == (doc[f"{side}_options"][::-1] if doc["reversed"] else doc[f"{side}_options"])
                start += n
    assert orders == {True, False}  # the run had reversed and unreversed tests


@pytest.fixture(scope="module")
def plain_chat_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    """The two hindsight-bias tests (the second reversed by default) with reversal off, under a chat template."""
    return run_lm_eval(
        tiny_model,
        tmp_path_factory.mktemp("plain") / "out",
        "biasmonkey_cognitive_hindsight_bias",
        "--apply_chat_template",
        "--metadata",
        metadata(reverse_options=False),
    )


def test_reversal_can_be_switched_off(exact_run, plain_chat_run) -> None:
    task = "biasmonkey_cognitive_hindsight_bias"
    results, samples = plain_chat_run
    assert_recomputes(results["results"][task], samples[task], 2)
    plain, default = logged(samples[task])[1], logged(exact_run[1][task])[1]
    assert plain["doc"]["id"] == default["doc"]["id"]
    # the authors' rule: the fixture's rows 25 and 26 are the first two of their batch (seeds 42, 43)
    assert [d["doc"]["reversed"] for d in logged(exact_run[1][task])] == [False, True]
    assert (default["doc"]["reversed"], plain["doc"]["reversed"]) == (True, False)
    context = list(plain["arguments"].values())[0]["arg_0"]
    assert [text for _, text in OPTION_LINE.findall(context)] == [f"{10 * i}%" for i in range(11)]


def test_chat_template_contexts(plain_chat_run) -> None:
    _, samples = plain_chat_run
    sample = logged(samples["biasmonkey_cognitive_hindsight_bias"])[0]
    args = list(sample["arguments"].values())
    assert args[0]["arg_0"].endswith("<|im_start|>assistant\n")
    assert answer_prompt(side_text(sample["doc"], "control")) in args[0]["arg_0"]
    # Labels start the assistant turn: no leading space under a chat template.
    assert [a["arg_1"] for a in args[:11]] == [f"Option {i}:" for i in range(1, 12)]


def test_one_step_generate_mode_reads_answers_and_counts_failures(tiny_model: Path, tmp_path: Path) -> None:
    """Greedy answers to our one-step prompt read with the paper's regex; the random model names
    no valid option, and every such test is counted as a failure."""
    results, samples = run_lm_eval(
        tiny_model,
        tmp_path / "out",
        ",".join(EXACT_TASKS),
        "--metadata",
        metadata(mode="generate", protocol="one_step"),
    )
    for task in EXACT_TASKS:
        task_results = results["results"][task]
        assert "expected_score" not in {k.split(",")[0] for k in task_results}
        records = assert_recomputes(task_results, samples[task], 2)
        for sample, record in zip(logged(samples[task]), records):
            args = list(sample["arguments"].values())
            assert [a["arg_0"] for a in args] == [
                answer_prompt(side_text(sample["doc"], side)) for side in ("control", "treatment")
            ]
            # greedy (do_sample false, temperature 0), 48 tokens, cut at the first blank line
            one_step = generation_kwargs(CognitiveOptions(mode="generate", protocol="one_step"))
            assert (
                args[0]["arg_1"]
                == one_step
                == {
                    "until": ["\n\n"],
                    "do_sample": False,
                    "temperature": 0.0,
                    "max_gen_toks": 48,
                }
            )
            assert [record.response_control, record.response_treatment] == sample["filtered_resps"]
            assert record.failed == (record.failure is not None)


def test_group_and_globs_through_the_task_manager() -> None:
    manager = TaskManager(
        include_path=str(REPO / "tasks"), include_defaults=False, metadata={"data_path": str(FIXTURES)}
    )
    assert sorted(manager.match_tasks(["biasmonkey_cognitive_*"])) == sorted(ALL_TASKS)
    # 'biasmonkey_*' matches only tasks, never a group together with its members (lm-eval rejects that).
    assert "biasmonkey-cognitive" in manager.all_groups
    assert not set(manager.match_tasks(["biasmonkey_*"])) & set(manager.all_groups)
    loaded = manager.load(["biasmonkey-cognitive"])
    assert sorted(loaded["group_map"]["biasmonkey-cognitive"]) == sorted(ALL_TASKS)
    assert all(len(task.eval_docs) == 2 for task in loaded["tasks"].values())


def test_missing_data_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    manager = TaskManager(
        include_path=str(REPO / "tasks"), include_defaults=False, metadata={"data_path": str(missing)}
    )
    with pytest.raises(DataError, match=f"cognitive-bias data file {missing} does not exist"):
        manager.load(["biasmonkey_cognitive_reactance"])


def test_records_file_that_is_not_ours_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "samples_x.jsonl"
    bad.write_text(json.dumps({"doc": {"q": "?"}, "filtered_resps": [["-1.0", "False"]]}) + "\n")
    with pytest.raises(ValueError, match=r"samples_x.jsonl, line 1: not a biasmonkey cognitive-bias sample"):
        records_from_samples_file(bad, COGNITIVE)
