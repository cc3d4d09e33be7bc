"""What the readers make of a real Inspect log that is finished but not as the task runs it: another
epochs reducer, failed samples, an unfinished eval, task arguments or a task version this biasmonkey
does not accept. Each is read right or refused with one line naming the file and the fix."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from inspect_ai import Epochs
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import get_model
from test_inspect import output, prompts, run, scripted

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.logs import records_from_eval_log, scan

pytestmark = pytest.mark.usefixtures("data_dir")
TOP = [(" A", 0.6), (" B", 0.4)]  # exact mode: p = [.6, .4] on both sides → Δ 0


def summarize(path: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["summarize", str(path)])
    return status, capsys.readouterr().err


def assert_refused(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert err.startswith("biasmonkey: error: ") and len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


def edited_log(tmp_path: Path, edit) -> Path:
    """A real 2-pair acquiescence log, edited by `edit(log)`, written as JSON into its own folder."""
    log = run("biasmonkey/acquiescence", scripted({}, default=output("A", TOP)), tmp_path, limit=2)
    changed = read_eval_log(log.location)
    edit(changed)
    path = tmp_path / "edited" / "acquiescence.json"
    path.parent.mkdir(exist_ok=True)
    write_eval_log(changed, str(path))
    return path


@pytest.mark.parametrize("reducer", ["max", "median", "mean"])
def test_the_records_pool_the_epochs_whatever_the_reducer(
    reducer: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    ((q1, qp1),) = prompts(n=1)
    q_answers, qp_answers = iter(["A", "B", ""]), iter(["A", "A", "B"])
    model = scripted({q1: lambda: output(next(q_answers)), qp1: lambda: output(next(qp_answers))})
    epochs = Epochs(3, reducer)
    log = run(
        "biasmonkey/acquiescence", model, tmp_path, limit=1, epochs=epochs, task_args={"mode": "sample", "n_samples": 1}
    )
    assert log.reductions[0].reducer == reducer
    # Pooled over the 3 epochs: q = [1, 1] → [.5, .5]; q' = [2, 1] → [2/3, 1/3]; Δ = 100(2/3 − 1/2) = 16.667;
    # 1 invalid answer of 6. (`max` key by key gave q = q' = [1, 1] → Δ 0, and 1 invalid of 2.)
    (record,) = records_from_eval_log(log.location)
    assert record.p_q == pytest.approx([0.5, 0.5]) and record.p_qp == pytest.approx([2 / 3, 1 / 3])
    assert record.delta == pytest.approx(100 / 6)
    assert record.n_invalid / record.n_answers == pytest.approx(1 / 6)
    # the reducer changes no number: not a setting
    (out,) = scan(tmp_path / "logs")
    assert dict(out.settings)["epochs"] == "3" and "epochs_reducer" not in dict(out.settings)
    status, err = summarize(tmp_path / "logs", capsys)
    assert status == 0, err
    (row,) = csv.DictReader((tmp_path / "logs" / "summary.csv").open())
    assert float(row["delta"]) == pytest.approx(100 / 6) and float(row["invalid_rate"]) == pytest.approx(1 / 6)


def test_failed_samples_are_refused_and_eval_retry_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (q1, _), (q2, _) = prompts()

    def answer(messages, tools, tool_choice, config):
        if messages[-1].text == q2:
            raise RuntimeError("flaky provider")
        return output("A", TOP)

    model = get_model("mockllm/model", custom_outputs=answer)
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=3, fail_on_error=False)
    assert log.status == "success" and log.results.completed_samples == 2  # Inspect calls it a success
    failed = next(s.id for s in log.samples if s.error)
    status, err = summarize(tmp_path / "logs", capsys)
    assert_refused(
        status,
        err,
        f"{log.location}: 1 of 3 samples failed (first: sample {failed!r} epoch 1: RuntimeError('flaky provider'))",
        f"rerun them with `inspect eval-retry {log.location}`",
    )

    # the advice works: eval-retry reruns the failed sample (mockllm from the log answers without the script)
    from inspect_ai import eval_retry
    from inspect_ai.model._providers.mockllm import MockLLM

    async def answers(self, input, tools, tool_choice, config):
        return output("A", TOP)

    monkeypatch.setattr(MockLLM, "generate", answers)
    (retried,) = eval_retry(log.location, log_dir=str(tmp_path / "logs"), display="none")
    assert retried.status == "success" and not any(s.error for s in retried.samples)
    status, err = summarize(tmp_path / "logs", capsys)  # the retried log is the newest in the folder
    assert status == 0, err
    assert [r["n_pairs"] for r in csv.DictReader((tmp_path / "logs" / "summary.csv").open())] == ["3"]


def test_a_log_whose_every_sample_failed_says_so(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    def answer(messages, tools, tool_choice, config):
        raise RuntimeError("no connection")

    log = run(
        "biasmonkey/acquiescence",
        get_model("mockllm/model", custom_outputs=answer),
        tmp_path,
        limit=2,
        fail_on_error=False,
    )
    assert log.status == "success"
    status, err = summarize(tmp_path / "logs", capsys)
    assert_refused(status, err, "2 of 2 samples failed", "RuntimeError('no connection')", "inspect eval-retry")


def test_an_unfinished_eval_names_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    log = run("biasmonkey/acquiescence", scripted({}, default=output("A")), tmp_path, limit=1)  # no logprobs
    assert log.status == "error"
    status, err = summarize(tmp_path / "logs", capsys)
    assert_refused(
        status,
        err,
        f"{log.location}: the eval did not complete (status error: ",
        f"resume it with `inspect eval-retry {log.location}`, or move it out of the folder",
    )


def test_task_arguments_the_family_refuses_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    def bad_top_logprobs(log) -> None:
        log.eval.task_args["top_logprobs"] = "lots"

    path = edited_log(tmp_path, bad_top_logprobs)
    status, err = summarize(path.parent, capsys)
    assert_refused(
        status,
        err,
        f"{path}: the -T task arguments logged for acquiescence are not valid",
        "top_logprobs='lots' must be a positive integer",
        "rerun the task with valid options",
    )


def test_a_later_task_version_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = edited_log(tmp_path, lambda log: setattr(log.eval, "task_version", 99))
    status, err = summarize(path.parent, capsys)
    assert_refused(status, err, f"{path}: biasmonkey/acquiescence scored by task version 99", "upgrade biasmonkey")


def test_an_earlier_task_version_is_a_setting_of_its_own(tmp_path: Path) -> None:
    earlier = edited_log(tmp_path, lambda log: setattr(log.eval, "task_version", 0))
    current = edited_log(tmp_path / "now", lambda log: None)
    current.rename(earlier.with_name("current.json"))
    settings = {o.path.name: dict(o.settings) for o in scan(earlier.parent)}
    assert settings["acquiescence.json"]["task_version"] == "0"
    assert "task_version" not in settings["current.json"]
