"""The Inspect tasks offline: `mockllm/model` with scripted answers (log-probs and usage set,
so nothing is downloaded), and one `inspect eval` run of the CLI on the tiny hf model."""

from __future__ import annotations

import csv
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    Logprob,
    Logprobs,
    ModelOutput,
    ModelUsage,
    TopLogprob,
    get_model,
)
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log
from biasmonkey.metrics.top_logprobs import label_logprobs
from biasmonkey.tasks.response_bias.inspect_task import TASKS, pair_samples
from biasmonkey.tasks.response_bias.options import RunOptions

pytestmark = pytest.mark.usefixtures("data_dir")
REPO = Path(__file__).resolve().parents[2]
Top = list[tuple[str, float]]  # (token, probability)


def output(completion: str, top: Top | None = None) -> ModelOutput:
    """A scripted model answer; `top` becomes the first token's top_logprobs."""
    logprobs = None
    if top is not None:
        alternatives = [TopLogprob(token=t, logprob=math.log(p)) for t, p in top]
        first = alternatives[0]
        logprobs = Logprobs(content=[Logprob(token=first.token, logprob=first.logprob, top_logprobs=alternatives)])
    return ModelOutput(
        model="mockllm",
        choices=[ChatCompletionChoice(message=ChatMessageAssistant(content=completion), logprobs=logprobs)],
        usage=ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2),  # else mockllm downloads a tokenizer
    )


def scripted(by_prompt: dict[str, Callable[[], ModelOutput]], default: ModelOutput | None = None):
    """A mockllm model answering each prompt with its own script."""

    def answer(messages, tools, tool_choice, config) -> ModelOutput:
        prompt = messages[-1].text
        if prompt in by_prompt:
            return by_prompt[prompt]()
        assert default is not None, f"unscripted prompt {prompt[:60]!r}"
        return default

    return get_model("mockllm/model", custom_outputs=answer)


def prompts(n: int = 2) -> list[tuple[str, str]]:
    """(q prompt, q' prompt) of the first n acquiescence pairs."""
    return [(s.input, s.metadata["qp_prompt"]) for s in pair_samples(RunOptions(), "acquiescence", "bias")[:n]]


def run(task: str, model, tmp_path: Path, **kwargs) -> EvalLog:
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", **kwargs)
    return log


def metrics(log: EvalLog) -> dict[str, float]:
    return {name: m.value for name, m in log.results.scores[0].metrics.items()}


def test_exact_mode_reads_both_spellings_of_each_letter(tmp_path: Path) -> None:
    (q1, qp1), (q2, qp2) = prompts()
    model = scripted(
        {
            # pair 1: q  A = " A" .3 + "A" .1 = .4, B = "ĠB" .2 → p_q = [2/3, 1/3]
            #         q' A = "▁A" .5 + "A" .1 = .6, B = "B" .2 → p_q' = [3/4, 1/4]
            #         acquiescence Δ = 100(q'[a] − q[a]) = 100(.75 − .6667) = 8.3333
            # (fillers bring each list's mass to 1: a spelling not returned gets the floor 0, counted)
            q1: lambda: output("A", [(" A", 0.3), ("x", 0.3), ("ĠB", 0.2), ("A", 0.1), ("y", 0.1)]),
            qp1: lambda: output("A", [("▁A", 0.5), ("B", 0.2), ("A", 0.1), ("y", 0.1), ("z", 0.1)]),
            # pair 2: p_q = [.5, .5], p_q' = [.7, .1]/.8 = [.875, .125] → Δ = 37.5
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            qp2: lambda: output("A", [(" A", 0.7), (" B", 0.1), ("x", 0.2)]),
        }
    )
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=2)
    assert log.status == "success", log.error
    m = metrics(log)
    # mean (8.3333 + 37.5)/2 = 22.9167; stderr = |37.5 − 8.3333|/2 = 14.5833; t = 1.5714 on 1 df,
    # whose two-sided p is 1 − (2/π)·atan(t)
    assert m["delta"] == pytest.approx(22.916667, abs=1e-5)
    assert m["delta_stderr"] == pytest.approx(14.583333, abs=1e-5)
    assert m["delta_t"] == pytest.approx(22.916667 / 14.583333, abs=1e-5)
    assert m["delta_p"] == pytest.approx(1 - 2 / math.pi * math.atan(22.916667 / 14.583333), abs=1e-6)
    # spellings not returned, each counted: q1 "B", q'1 " B", q2 and q'2 "A" and "B"
    assert m["n_pairs"] == 2 and m["imputed_options"] == 6 and m["invalid_rate"] == 0
    # H(2/3, 1/3)/ln 2 = 0.918296 and H(.5, .5)/ln 2 = 1 → mean 0.959148
    assert m["uncertainty_q"] == pytest.approx(0.959148, abs=1e-6)

    sample = log.samples[0]
    value = sample.scores["pair_scorer"].value
    assert sample.id == sample.metadata["key"]
    assert value["q_0"] == pytest.approx(2 / 3) and value["qp_1"] == pytest.approx(0.25)
    assert value["delta"] == pytest.approx(25 / 3) and value["n_imputed"] == 2
    records = records_from_eval_log(log.location)
    assert [r.delta for r in records] == pytest.approx([25 / 3, 37.5])


def test_an_option_missing_from_the_top_k_gets_the_documented_floor(tmp_path: Path) -> None:
    ((q1, qp1),) = prompts(n=1)
    model = scripted(
        {
            q1: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            # q: "A" and "B" not returned, the mass 1 all returned: floor 0 → [.5, .5] (2 imputed).
            # q': " A", " B" and "B" not returned: each spelling gets the floor min(smallest returned .08,
            # unreturned (1 − .98)/3) = 1/150 → A = .6 + 1/150 = 91/150, B = 2/150 → p_q'[A] = 91/93;
            # Δ = 100(91/93 − .5) = 47.8495 (3 imputed)
            qp1: lambda: output("A", [("A", 0.6), ("x", 0.3), ("y", 0.08)]),
        }
    )
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1)
    m = metrics(log)
    assert m["imputed_options"] == 5
    assert m["delta"] == pytest.approx(100 * (91 / 93 - 0.5), abs=1e-5)
    # No option at all in the top-k: each of the 4 spellings gets min(.3, (1 − .9)/4) = .025, each
    # letter .05 → uniform.
    lps, n_imputed = label_logprobs([("x", math.log(0.6)), ("y", math.log(0.3))], ["A", "B"])
    assert n_imputed == 4 and lps == pytest.approx([math.log(0.05)] * 2)


def test_sample_mode_counts_invalid_answers(tmp_path: Path) -> None:
    ((q1, qp1),) = prompts(n=1)
    q_answers, qp_answers = iter(["A", "A", "B", ""]), iter(["A", "B", "B", "Maybe"])
    model = scripted({q1: lambda: output(next(q_answers)), qp1: lambda: output(next(qp_answers))})
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1, task_args={"mode": "sample", "n_samples": 4})
    m = metrics(log)
    # q: A 2, B 1 (1 invalid) → p_q = [2/3, 1/3]; q': A 1, B 2 (1 invalid) → [1/3, 2/3]
    # Δ = 100(1/3 − 2/3) = −33.333; invalid answers 2 of 8
    assert m["delta"] == pytest.approx(-100 / 3)
    assert m["invalid_rate"] == pytest.approx(0.25)
    (record,) = records_from_eval_log(log.location)
    assert (record.n_answers, record.n_invalid) == (8, 2)


def test_epochs_pool_the_sampled_answers_per_key(tmp_path: Path) -> None:
    ((q1, qp1),) = prompts(n=1)
    q_answers, qp_answers = iter(["A", "B", "", ""]), iter(["A", "A", "A", "B"])
    model = scripted({q1: lambda: output(next(q_answers)), qp1: lambda: output(next(qp_answers))})
    log = run(
        "biasmonkey/acquiescence", model, tmp_path, limit=1, epochs=4, task_args={"mode": "sample", "n_samples": 1}
    )
    # Pooled over the 4 epochs: q = [1, 1] → [.5, .5]; q' = [3, 1] → [.75, .25]; Δ = 100(.75 − .5) = 25.
    # (A mean of per-epoch Δs could only be 0 or 50 here: two epochs have no valid q answer.)
    m = metrics(log)
    assert m["delta"] == pytest.approx(25.0)
    assert m["invalid_rate"] == pytest.approx(2 / 8)
    (record,) = records_from_eval_log(log.location)
    assert record.p_q == pytest.approx([0.5, 0.5]) and record.p_qp == pytest.approx([0.75, 0.25])


def test_a_provider_without_logprobs_fails_with_a_pointer_to_sampling(tmp_path: Path) -> None:
    model = scripted({}, default=output("A"))
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1)
    assert log.status == "error"
    assert "returned no top_logprobs" in log.error.message and "-T mode=sample" in log.error.message
    with pytest.raises(ValueError, match="the eval did not complete .status error: .*LogprobsUnavailable"):
        records_from_eval_log(log.location)


def test_every_task_is_registered_and_runs(tmp_path: Path) -> None:
    names = [f"biasmonkey/{name}" for name in TASKS]
    assert len(names) == 20 and "biasmonkey/odd_even_letter_swap" in names
    top = [(spelling, 0.05 + 0.01 * i) for i, letter in enumerate("ABCDEF") for spelling in (f" {letter}", letter)]
    logs = inspect_eval(
        names, model=scripted({}, default=output("A", top)), limit=1, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert [log.status for log in logs] == ["success"] * 20
    assert all(metrics(log)["n_pairs"] == 1 and metrics(log)["imputed_options"] == 0 for log in logs)


def test_task_parameters_are_validated() -> None:
    task = TASKS["acquiescence"]
    with pytest.raises(ValueError, match="option mode='bogus' is invalid"):
        task(mode="bogus")
    with pytest.raises(ValueError, match="option top_logprobs=0 must be a positive integer"):
        task(top_logprobs=0)
    with pytest.raises(ValueError, match="perturbation_rules='typo' is unknown"):
        task(perturbation_rules="typo")
    # allow_forbid_all keeps the 8 pairs the published analysis excludes: 40 → 48 samples
    assert len(TASKS["allow_forbid"]().dataset) == 40
    assert len(TASKS["allow_forbid"](allow_forbid_all=True).dataset) == 48
    # a perturbation seed draws new typos (same keys, other prompts)
    published, seeded = (
        TASKS["acquiescence_key_typo"]().dataset,
        TASKS["acquiescence_key_typo"](perturbation_seed=7).dataset,
    )
    assert sorted(s.id for s in published) == sorted(s.id for s in seeded)
    assert {s.metadata["qp_prompt"] for s in published} != {s.metadata["qp_prompt"] for s in seeded}


def test_inspect_cli_runs_a_task_from_any_directory(tiny_model: Path, tmp_path: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))  # every token's log-prob: nothing imputed
    cmd = [
        str(inspect),
        "eval",
        "biasmonkey/acquiescence_key_typo",
        "--model",
        f"hf/{tiny_model}",
        "-M",
        "device=cpu",
        "-T",
        f"top_logprobs={vocab}",
        "--limit",
        "3",
        "--log-dir",
        str(tmp_path / "logs"),
        "--display",
        "none",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    records = records_from_eval_log(log_file)
    assert len(records) == 3 and all(r.setting == "key_typo" for r in records)
    assert all(sum(r.p_q) == pytest.approx(1) for r in records)
    assert metrics(read_eval_log(log_file))["imputed_options"] == 0


def test_summarize_reads_inspect_logs(tmp_path: Path) -> None:
    from biasmonkey.harness_ext.app.cli import main

    (q1, qp1), (q2, qp2) = prompts()
    model = scripted(
        {
            q1: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            qp1: lambda: output("A", [(" A", 0.6), (" B", 0.4)]),
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            qp2: lambda: output("A", [(" A", 0.8), (" B", 0.2)]),
        }
    )
    run("biasmonkey/acquiescence", model, tmp_path, limit=2)
    assert main(["summarize", str(tmp_path / "logs")]) == 0
    md = (tmp_path / "logs" / "summary.md").read_text()
    # Δ = 10 and 30 → mean 20, stderr 10
    assert "| acquiescence | bias | 2 | 20.000 | 10.000 |" in md
    assert "# Summary: model" in md and "## Survey response biases" in md  # mockllm/model → "model"


def test_the_eval_set_config_runs_the_whole_suite(tiny_model: Path, tmp_path: Path) -> None:
    from biasmonkey.harness_ext.app.cli import main

    config = REPO / "configs" / "inspect_response_bias.yaml"
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))
    log_dir = tmp_path / "logs"
    args = [
        "inspect-eval-set",
        str(config),
        "--model",
        f"hf/{tiny_model}",
        "--log-dir",
        str(log_dir),
        "--limit",
        "2",
        "-T",
        f"top_logprobs={vocab}",
    ]
    assert main(args) == 0
    assert main(["summarize", str(log_dir)]) == 0
    rows = list(csv.DictReader((log_dir / "summary.csv").open()))
    assert len(rows) == 20 and {r["n_pairs"] for r in rows} == {"2"}


def test_eval_set_config_errors_name_the_problem(tmp_path: Path) -> None:
    from biasmonkey.harness_ext.inspect.eval_set import load_eval_set_config, parse_task_args

    bad = tmp_path / "set.yaml"
    bad.write_text("tasks: [biasmonkey/acquiescence]\nlog_dri: logs\n")
    with pytest.raises(ValueError, match="set.yaml: unknown key.s. log_dri"):
        load_eval_set_config(bad)
    bad.write_text("log_dir: logs\n")
    with pytest.raises(ValueError, match="expected a mapping with a `tasks` list"):
        load_eval_set_config(bad)
    assert parse_task_args(["mode=sample", "n_samples=5"]) == {"mode": "sample", "n_samples": 5}
    with pytest.raises(ValueError, match="'mode' is not key=value"):
        parse_task_args(["mode"])


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_eval_set_limit_below_one_is_refused(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    from biasmonkey.harness_ext.app.cli import main

    with pytest.raises(SystemExit) as exit_info:  # argparse, before the config is read
        main(["inspect-eval-set", "no-such.yaml", "--model", "mockllm/model", "--limit", limit])
    assert exit_info.value.code == 2
    assert f"argument --limit: {limit} must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (b"tasks: [5]\n", "set.yaml: `tasks` must list task names like biasmonkey/acquiescence, not 5"),
        (b"tasks: [biasmonkey/acquiescence]\ntask_args: 5\n", "set.yaml: `task_args` must be a mapping or null, not 5"),
        (b"tasks: [biasmonkey/acquiescence]\nretry_attempts: abc\n", "set.yaml: `retry_attempts` must be an integer"),
        (
            b"tasks: [biasmonkey/acquiescence]\nincomplete_action: ask\n",
            "`incomplete_action` must be 'retry' or 'error'",
        ),
        (b"tasks: [biasmonkey/acquiescence]\nlimit: -1\n", "set.yaml: `limit` must be at least 1"),
        (b"tasks: [biasmonkey/acquiescence]\n# caf\xe9\n", "set.yaml: not UTF-8 text"),
        (b"tasks: [biasmonkey/nope]\ntasks: [biasmonkey/acquiescence]\n", "set.yaml: .* line 2: duplicate key `tasks`"),
        (
            b"tasks: [biasmonkey/acquiescence]\nlog_dir: afile/logs\n",
            "set.yaml: `log_dir` afile/logs: .*afile is a file",
        ),
    ],
)
def test_eval_set_config_values_are_checked(
    text: bytes, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from biasmonkey.harness_ext.app.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    (tmp_path / "set.yaml").write_bytes(text)
    assert main(["inspect-eval-set", "set.yaml", "--model", "mockllm/model"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("biasmonkey: error: ") and err.count("\n") == 1
    assert re.search(error, err), err


def test_eval_set_log_dir_must_not_be_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from biasmonkey.harness_ext.app.cli import main

    config, log_file = tmp_path / "set.yaml", tmp_path / "logs"
    config.write_text("tasks: [biasmonkey/acquiescence]\n")
    log_file.write_text("")
    assert main(["inspect-eval-set", str(config), "--model", "mockllm/model", "--log-dir", str(log_file)]) == 2
    assert f"biasmonkey: error: --log-dir {log_file}: a file is in the way" in capsys.readouterr().err
