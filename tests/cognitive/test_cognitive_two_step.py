"""The paper's two-step protocol in lm-eval (two runs: free answers, then their extraction) against
Inspect's (one solver): the same texts in give the same records and metrics out. lm-eval runs
in-process with a scripted model that answers each prompt with its scripted text."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from lm_eval import simple_evaluate
from lm_eval.api.model import LM
from lm_eval.tasks import TaskManager
from test_cognitive_inspect import HASH, SCORE_METRICS, by_id, cognitive_run, docs, model_for, two_step_script
from test_cognitive_lm_eval import FIXTURES
from test_inspect import metrics
from test_lm_eval_e2e import REPO, metric

from biasmonkey.harness_ext.logs import records_from_eval_log
from biasmonkey.tasks.cognitive.codecs import from_lm_eval
from biasmonkey.tasks.cognitive.data import DataError
from biasmonkey.tasks.cognitive.lm_eval_task import generation_kwargs
from biasmonkey.tasks.cognitive.options import LM_EVAL_TWO_STEP_MAX_TOKENS, CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import decision_prompt, side_text
from biasmonkey.tasks.cognitive.scoring import STEP_ONE_ONLY

TASK = "biasmonkey_cognitive_bandwagon_effect"
STAMP = "2025-01-01T00-00-00.000000"


class ScriptLM(LM):
    """An lm-eval model that answers each generation request with the text scripted for its prompt."""

    def __init__(self, replies: dict[str, Any]) -> None:
        super().__init__()
        self.replies = replies
        self.requests: list[tuple[str, dict]] = []

    def generate_until(self, requests: list, disable_tqdm: bool = False) -> list[str]:
        self.requests += [r.args for r in requests]
        return [self.replies[context] for context, _ in (r.args for r in requests)]

    def loglikelihood(self, requests: list, disable_tqdm: bool = False) -> list:
        raise NotImplementedError

    loglikelihood_rolling = loglikelihood


def lm_eval_run(lm: LM, tasks: list[str], limit: int | None = None, tracker: Any = None, **options: Any) -> dict:
    metadata = {"data_path": str(FIXTURES), "mode": "generate", **options}
    manager = TaskManager(include_path=str(REPO / "tasks"), include_defaults=False, metadata=metadata)
    return simple_evaluate(
        model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True, evaluation_tracker=tracker
    )


def log_step_one(results: dict, folder: Path) -> Path:
    """Step one's samples as the lm_eval CLI's --log_samples writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    for task, samples in results["samples"].items():
        lines = [json.dumps({"doc": s["doc"], "filtered_resps": s["filtered_resps"]}) for s in samples]
        (folder / f"samples_{task}_{STAMP}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def bandwagon_script() -> dict[str, str]:
    """The hand-computed script of test_two_step_protocol_maps_reversed_answers_back (hash
    reversal): m = 1 and 0.5, mean 0.75."""
    a, b = docs("bandwagon_effect")
    return {
        **two_step_script(a, "control", "The fourth option fits best.", "Option 4"),
        **two_step_script(a, "treatment", "I pick the first one.", "Option 1"),
        **two_step_script(b, "control", "Option five.", "Option 5"),
        **two_step_script(b, "treatment", "The second.", "The answer is option 2."),
    }


def test_lm_eval_two_step_runs_give_inspects_records(tmp_path: Path) -> None:
    script = bandwagon_script()
    lm = ScriptLM(script)
    # Step one: the decision prompts, greedy, ended only by the model (no stop sequence), up to 2048 tokens.
    first = lm_eval_run(lm, [TASK], **HASH)
    assert metric(first["results"][TASK], "n_decisions") == 2
    assert not {"score", "failure_rate"} & {k.split(",")[0] for k in first["results"][TASK]}
    a, b = docs("bandwagon_effect")
    assert [context for context, _ in lm.requests] == [
        decision_prompt(side_text(doc, side)) for doc in (a, b) for side in ("control", "treatment")
    ]
    kwargs = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": LM_EVAL_TWO_STEP_MAX_TOKENS}
    assert all(k == kwargs for _, k in lm.requests)
    assert generation_kwargs(CognitiveOptions(mode="generate")) == kwargs
    step_one = [from_lm_eval(s["doc"], s["filtered_resps"]) for s in first["samples"][TASK]]
    assert {r.failure for r in step_one} == {STEP_ONE_ONLY} and step_one[
        0
    ].decision_control == "The fourth option fits best."

    # Step two: the extraction prompts built from the logged free answers.
    lm.requests.clear()
    second = lm_eval_run(lm, [TASK], decisions=str(log_step_one(first, tmp_path / "step1")), **HASH)
    assert len(lm.requests) == 4 and all(context in script for context, _ in lm.requests)
    ours = by_id([from_lm_eval(s["doc"], s["filtered_resps"]) for s in second["samples"][TASK]])

    # Inspect, one solver, the same texts: the same records, field by field, and the same metrics.
    log = cognitive_run("bandwagon_effect", model_for(script), tmp_path / "inspect")
    theirs = by_id(records_from_eval_log(log.location))
    assert ours == theirs
    assert (ours[a["id"]].answer_control, ours[a["id"]].answer_treatment) == (3, 6)  # mapped back: m = 1
    assert ours[a["id"]].score == pytest.approx(1.0)
    assert ours[b["id"]].decision_treatment == "The second." and ours[b["id"]].response_treatment == (
        "The answer is option 2."
    )
    reported, m = second["results"][TASK], metrics(log)
    assert metric(reported, "score") == pytest.approx(0.75)  # hand-computed in the Inspect test
    for name in (*SCORE_METRICS, "n_tests", "failure_rate", "random_baseline"):
        assert m[name] == pytest.approx(metric(reported, name), rel=1e-12, abs=1e-12), name


def test_failed_extractions_count_alike_in_both_harnesses(tmp_path: Path) -> None:
    a, b = docs("stereotyping")
    script = {
        **two_step_script(a, "control", "Hard to say.", "No option selected"),
        **two_step_script(a, "treatment", "The ninth.", "Option 9"),  # only 7 options
        **two_step_script(b, "control", "Neutral.", "Option 4"),
        **two_step_script(b, "treatment", "Rather high.", "Option 6"),
    }
    task = "biasmonkey_cognitive_stereotyping"
    first = lm_eval_run(ScriptLM(script), [task], **HASH)
    second = lm_eval_run(ScriptLM(script), [task], decisions=str(log_step_one(first, tmp_path / "s1")), **HASH)
    ours = by_id([from_lm_eval(s["doc"], s["filtered_resps"]) for s in second["samples"][task]])
    theirs = by_id(records_from_eval_log(cognitive_run("stereotyping", model_for(script), tmp_path).location))
    assert ours == theirs
    assert (
        ours[a["id"]].failure == "control: no 'Option N' in the answer; treatment: Option 9 is not one of the 7 options"
    )
    reported = second["results"][task]
    assert (metric(reported, "n_tests"), metric(reported, "failure_rate")) == (1, 0.5)


def test_step_two_reads_only_a_matching_step_one(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = bandwagon_script()
    first = lm_eval_run(ScriptLM(script), [TASK], **HASH)
    folder = log_step_one(first, tmp_path / "step1")
    with pytest.raises(DataError, match="no such file or folder"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(tmp_path / "missing"), **HASH)
    with pytest.raises(
        DataError, match="expected one step-one samples file of the task biasmonkey_cognitive_anchoring"
    ):
        lm_eval_run(ScriptLM(script), ["biasmonkey_cognitive_anchoring"], decisions=str(folder), **HASH)
    # asked with other prompts, or the options in another order: an error, not a silent mix
    with pytest.raises(DataError, match="with prompts='paper', step two has prompts='biasmonkey'"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(folder), prompts="biasmonkey", **HASH)
    with pytest.raises(DataError, match="with reversed=True, step two has reversed=False"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(folder), reverse_options=False, **HASH)
    with pytest.raises(ValueError, match="decisions='x' is step two of the two-step protocol"):
        CognitiveOptions(decisions="x")  # mode=exact
    # a second step-one run in the same folder: which one is meant is not guessed
    (folder / f"samples_{TASK}_2025-01-02T00-00-00.000000.jsonl").write_text(
        (folder / f"samples_{TASK}_{STAMP}.jsonl").read_text()
    )
    with pytest.raises(DataError, match="found 2: "):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(folder), **HASH)
    # step one with --limit 1: step two extracts that test only, with a warning
    limited = log_step_one(lm_eval_run(ScriptLM(script), [TASK], limit=1, **HASH), tmp_path / "limited")
    with caplog.at_level(logging.WARNING):
        second = lm_eval_run(ScriptLM(script), [TASK], decisions=str(limited), **HASH)
    assert "free answers for 1 of the 2 tests" in caplog.text
    assert [s["doc"]["id"] for s in second["samples"][TASK]] == [docs("bandwagon_effect")[0]["id"]]


def test_step_one_samples_are_checked_against_their_run(tmp_path: Path) -> None:
    """Step one's samples file as the lm_eval CLI writes it (doc ids, and the results file beside
    it): a line repeated or lost after the run is an error naming the file, not free answers of
    other tests (`tasks/samples_check.py`, the check every reader of samples files applies)."""
    from lm_eval.loggers import EvaluationTracker

    script = bandwagon_script()
    tracker = EvaluationTracker(output_path=str(tmp_path / "step1"))
    results = lm_eval_run(ScriptLM(script), [TASK], tracker=tracker, **HASH)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name=TASK, samples=samples[TASK])
    (path,) = (tmp_path / "step1").rglob(f"samples_{TASK}_*.jsonl")
    assert len(list(path.parent.glob("results_*.json"))) == 1
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 2 and [json.loads(line)["doc_id"] for line in lines] == [0, 1]
    assert len(lm_eval_run(ScriptLM(script), [TASK], decisions=str(path), **HASH)["samples"][TASK]) == 2

    path.write_text("".join(lines + lines[:1]))  # the first test's line repeated
    with pytest.raises(DataError) as repeated:
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(path), **HASH)
    message = str(repeated.value)
    assert message.startswith(f"option decisions (step one of the two-step protocol): {path}: 3 samples for {TASK}")
    assert "says 2: doc_id 0 twice (lines 1, 3)" in message and "rerun the task" in message

    path.write_text(lines[0])  # the second test's line lost
    with pytest.raises(DataError, match=r"1 samples for .* says 2: doc_id 1 missing; .*restore the samples file"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(path), **HASH)
    # a line that is no sample, or a sample of no step one: the line and the fix
    path.write_text(lines[0] + "{not json\n")
    with pytest.raises(DataError, match=r"line 2: not an lm-eval sample \(.*\); give the samples file of a step-one"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(path), **HASH)
    second = json.loads(lines[1])
    second["filtered_resps"] = ["only one answer"]
    path.write_text(lines[0] + json.dumps(second) + "\n")
    with pytest.raises(DataError, match=r"line 2: not a step-one sample \(two free answers\); .*or rerun step one"):
        lm_eval_run(ScriptLM(script), [TASK], decisions=str(path), **HASH)
