"""The answer-position tasks through both harnesses on the tiny random model (plumbing, not
realism): lm-eval's eight loglikelihood requests per question share one context; Inspect (hf/,
raw prompt, one token with the whole vocabulary's log-probabilities) gives the same per-question
records and the same metrics; the logged records recompute the reported numbers; `--num_fewshot`
is refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from test_inspect import metrics
from test_lm_eval_e2e import metric, run_lm_eval
from test_yesno_inspect import RAW_PROMPT
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.tasks.answer_position.family import FAMILY
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.prompts import CONTINUATIONS, render_prompt
from biasmonkey.tasks.answer_position.scoring import McqRecord
from biasmonkey.tasks.contract import reported

pytestmark = pytest.mark.usefixtures("data_dir")

TASKS = ("answer_position_abstract_algebra", "answer_position_anatomy_fewshot")
LIMIT = 16  # the first 16 questions of each subject
REPORTED = [
    m.name for m in reported(FAMILY, AnswerPositionOptions(), "lm_eval", {"subject": "anatomy", "prompt": "zeroshot"})
]


@pytest.fixture(scope="module")
def both_runs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory):
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert all(len(tok(c, add_special_tokens=False).input_ids) == 1 for c in CONTINUATIONS)
    out = tmp_path_factory.mktemp("answer-position")
    logs = inspect_eval(
        [f"biasmonkey/{t}" for t in TASKS],
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", "batch_size": 1, "dtype": "float64", **RAW_PROMPT},
        limit=LIMIT,
        task_args={"top_logprobs": len(tok)},
        log_dir=str(out / "inspect"),
        display="none",
    )
    results, samples = run_lm_eval(
        tiny_model,
        out / "lm_eval",
        ",".join(f"biasmonkey_{t}" for t in TASKS),
        "--limit",
        str(LIMIT),
        batch_size=1,
        dtype="float64",
    )
    return logs, results, samples


def test_requests_share_one_context_per_question(both_runs) -> None:
    _, _, samples = both_runs
    for task in TASKS:
        prompt = FAMILY.tasks[task]["prompt"]
        for line in samples[f"biasmonkey_{task}"].read_text().splitlines():
            sample = json.loads(line)
            args = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
            assert args == [(render_prompt(sample["doc"]["query"], prompt), c) for c in CONTINUATIONS]  # one context


def test_logged_records_recompute_the_reported_numbers(both_runs) -> None:
    _, results, samples = both_runs
    for task in TASKS:
        records = records_from_samples_file(samples[f"biasmonkey_{task}"])
        assert len(records) == LIMIT and all(isinstance(r, McqRecord) for r in records)
        summary = FAMILY.summarize(records)
        task_results = results["results"][f"biasmonkey_{task}"]
        assert set(REPORTED) <= {k.split(",")[0] for k in task_results}
        assert metric(task_results, "accuracy") == pytest.approx(summary.accuracy, abs=1e-12)
        assert metric(task_results, "rstd") == pytest.approx(summary.rstd, abs=1e-12, nan_ok=True)
        assert metric(task_results, "rstd_specific") == pytest.approx(summary.rstd_specific, abs=1e-12, nan_ok=True)
        assert metric(task_results, "n") == LIMIT


def test_both_harnesses_give_the_same_records_and_metrics(both_runs) -> None:
    logs, results, samples = both_runs
    assert [log.status for log in logs] == ["success"] * len(TASKS)
    for log in logs:
        task = log.eval.task.removeprefix("biasmonkey/")
        ours = records_from_eval_log(log.location)
        theirs = {r.id: r for r in records_from_samples_file(samples[f"biasmonkey_{task}"])}
        assert [r.id for r in ours] == list(theirs) and len(ours) == LIMIT
        for rec in ours:
            other = theirs[rec.id]
            # Inspect's hf provider takes the log-softmax of float32 logits (see test_yesno_inspect)
            assert rec.logprobs == pytest.approx(other.logprobs, abs=2e-6), rec.id
            assert rec.answers() == other.answers(), rec.id
        m = metrics(log)
        assert m["imputed_continuations"] == 0
        for name in REPORTED:
            expected = metric(results["results"][f"biasmonkey_{task}"], name)
            assert m[name] == pytest.approx(expected, abs=1e-4, nan_ok=True), (task, name)
        assert not any(math.isnan(m[name]) for name in ("accuracy", "n"))


def test_num_fewshot_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from test_lm_eval_e2e import REPO

    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model}"]
    cmd += ["--device", "cpu", "--include_path", str(REPO / "tasks"), "--tasks", f"biasmonkey_{TASKS[0]}"]
    cmd += ["--limit", "1", "--num_fewshot", "2", "--output_path", str(tmp_path / "out")]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0 and "take no --num_fewshot" in proc.stdout + proc.stderr
