"""Real runs of the stock `lm_eval` CLI on a tiny random model (plumbing, not realism).

Each run's logged samples are turned back into per-pair records by the core code and must
recompute to the numbers lm-eval reported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.metrics import BIASES, PERTURBATIONS, summarize_deltas
from biasmonkey.tasks.families import RESPONSE_BIAS
from biasmonkey.tasks.response_bias.prompts import render_prompt

REPO = Path(__file__).resolve().parents[2]
ALL_TASKS = [f"biasmonkey_{b}" for b in BIASES] + [f"biasmonkey_{b}_{p}" for b in BIASES for p in PERTURBATIONS]
EXACT_METRICS = {
    "delta",
    "delta_stderr",
    "delta_t",
    "delta_p",
    "delta_ci_low",
    "delta_ci_high",
    "n_pairs",
    "uncertainty_q",
    "uncertainty_qp",
}

pytestmark = pytest.mark.usefixtures("data_dir")


def run_lm_eval(
    model: Path,
    out: Path,
    tasks: str,
    *extra: str,
    include: str | None = None,
    cwd: Path = REPO,
    batch_size: int = 8,
    dtype: str = "float32",
    launcher: bool = True,
) -> tuple[dict, dict[str, Path]]:
    """Run lm-eval's CLI through biasmonkey's launcher, which indexes only the include path (15-20 s
    less a run on 2 cores; `launcher=False`: the stock `lm_eval` command, for the tests of what a user
    types); return the results dict and each task's samples file. The model backend is stock `hf`
    either way."""
    cmd = [
        sys.executable,
        "-m",
        "biasmonkey.harness_ext.lm_eval" if launcher else "lm_eval",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={model},dtype={dtype}",
        "--device",
        "cpu",
        "--batch_size",
        str(batch_size),
        "--include_path",
        include or str(REPO / "tasks"),
        "--tasks",
        tasks,
        "--output_path",
        str(out),
        "--log_samples",
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results_file = next(out.rglob("results_*.json"))
    samples = {p.name.split("_20")[0].removeprefix("samples_"): p for p in out.rglob("samples_*.jsonl")}
    return json.loads(results_file.read_text()), samples


def metric(task_results: dict, name: str) -> float:
    (value,) = [v for k, v in task_results.items() if k.split(",")[0] == name]
    return float("nan") if value == "N/A" else float(value)


def assert_recomputes(task_results: dict, samples_file: Path, n_pairs: int) -> list:
    """Logged per-pair records reproduce the per-doc values and the reported aggregates."""
    records = records_from_samples_file(samples_file)
    logged = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(records) == len(logged) == n_pairs
    for rec, sample in zip(records, logged):
        assert rec.key == sample["doc"]["key"]
        if rec.delta is not None:
            assert rec.delta == pytest.approx(sample["delta"], abs=1e-9)
    summary = summarize_deltas([r.delta for r in records if r.delta is not None])
    assert metric(task_results, "n_pairs") == summary.n
    for name, expected in [
        ("delta", summary.mean),
        ("delta_stderr", summary.stderr),
        ("delta_t", summary.t),
        ("delta_p", summary.p),
        ("delta_ci_low", summary.ci_low),
        ("delta_ci_high", summary.ci_high),
    ]:
        if summary.n:
            assert metric(task_results, name) == pytest.approx(expected, rel=1e-9, abs=1e-12), name
    unc_q = [r.uncertainty_q for r in records if r.uncertainty_q is not None]
    if unc_q:
        assert metric(task_results, "uncertainty_q") == pytest.approx(sum(unc_q) / len(unc_q))
    return records


@pytest.fixture(scope="module")
def exact_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    """All 20 tasks (the suite's tag), exact mode, through `biasmonkey tasks-dir` from an unrelated directory."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    tasks_dir = subprocess.run(
        [str(Path(sys.executable).with_name("biasmonkey")), "tasks-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return run_lm_eval(
        tiny_model, cwd / "out", "biasmonkey-response_bias", "--limit", "3", include=tasks_dir, cwd=cwd, launcher=False
    )


def test_suite_tag_runs_all_20_tasks_with_every_metric(exact_run) -> None:
    results, samples = exact_run
    assert set(results["results"]) == set(ALL_TASKS)
    for task in ALL_TASKS:
        reported = {k.split(",")[0] for k in results["results"][task]} - {"alias", "name", "sample_len", "sample_count"}
        assert reported >= EXACT_METRICS, task
        assert "invalid_rate" not in reported  # only sampling has invalid answers
        assert metric(results["results"][task], "delta_stderr") > 0  # lm-eval's mean gives a stderr
        assert results["n-samples"][task]["effective"] == 3


def test_exact_records_recompute_to_reported_aggregates(exact_run) -> None:
    results, samples = exact_run
    for task in ALL_TASKS:
        records = assert_recomputes(results["results"][task], samples[task], 3)
        for rec in records:
            assert sum(rec.p_q) == pytest.approx(1.0) and sum(rec.p_qp) == pytest.approx(1.0)
            assert 0 < rec.uncertainty_q <= 1


def test_exact_requests_are_the_option_letters_after_the_paper_prompt(exact_run) -> None:
    _, samples = exact_run
    sample = json.loads(samples["biasmonkey_odd_even"].read_text().splitlines()[0])
    doc = sample["doc"]
    args = list(sample["arguments"].values())
    # 5 letters for q, then 4 for q' (the odd/even question without its middle option),
    # each with and without a leading space
    assert [a["arg_1"] for a in args] == [
        " A",
        "A",
        " B",
        "B",
        " C",
        "C",
        " D",
        "D",
        " E",
        "E",
        " A",
        "A",
        " B",
        "B",
        " C",
        "C",
        " D",
        "D",
    ]
    assert {a["arg_0"] for a in args[:10]} == {render_prompt(doc["q"])}
    assert {a["arg_0"] for a in args[10:]} == {render_prompt(doc["qp"])}
    assert doc["qp_positions"] == [0, 1, 3, 4]


def test_checkout_include_path_group_and_allow_forbid_exclusion(tiny_model: Path, tmp_path: Path) -> None:
    """`--include_path tasks` from the checkout; the `biasmonkey` group; the 40 published pairs."""
    results, samples = run_lm_eval(
        tiny_model, tmp_path / "out", "biasmonkey", "--limit", "1", include="tasks", launcher=False
    )
    assert set(ALL_TASKS) <= set(results["results"])
    assert set(results["group_subtasks"]["biasmonkey"]) == set(ALL_TASKS)
    assert results["n-samples"]["biasmonkey_allow_forbid"]["original"] == 40


def test_sampling_mode_keeps_all_answers_and_counts_invalid(tiny_model: Path, tmp_path: Path) -> None:
    results, samples = run_lm_eval(
        tiny_model,
        tmp_path / "out",
        "biasmonkey_acquiescence,biasmonkey_response_order_letter_swap",
        "--limit",
        "2",
        "--metadata",
        '{"mode": "sample", "n_samples": 6}',
    )
    for task in ("biasmonkey_acquiescence", "biasmonkey_response_order_letter_swap"):
        task_results = results["results"][task]
        records = assert_recomputes(task_results, samples[task], 2)
        logged = [json.loads(line) for line in samples[task].read_text().splitlines()]
        for sample in logged:
            assert [len(side) for side in sample["filtered_resps"]] == [6, 6]  # all N answers kept
            args = list(sample["arguments"].values())
            assert args[0]["arg_1"]["do_sample"] is True and args[0]["arg_1"]["temperature"] == 1.0
        invalid = sum(r.n_invalid for r in records) / sum(r.n_answers for r in records)
        assert metric(task_results, "invalid_rate") == pytest.approx(invalid)
        assert all(r.n_answers == 12 for r in records)


def test_chat_template_and_fewshot_draws_are_identical_for_q_and_qp(tiny_model: Path, tmp_path: Path) -> None:
    _, samples = run_lm_eval(
        tiny_model,
        tmp_path / "out",
        "biasmonkey_response_order",
        "--limit",
        "2",
        "--apply_chat_template",
        "--num_fewshot",
        "2",
    )
    for line in samples["biasmonkey_response_order"].read_text().splitlines():
        sample = json.loads(line)
        doc = sample["doc"]
        args = list(sample["arguments"].values())
        n_q = 2 * len(doc["q_letters"])
        ctx_q, ctx_qp = args[0]["arg_0"], args[n_q]["arg_0"]
        # Each letter is scored with and without a leading space, chat template or not.
        assert [a["arg_1"] for a in args[:n_q]] == [s for letter in doc["q_letters"] for s in (f" {letter}", letter)]
        assert ctx_q.endswith("<|im_start|>assistant\n")
        # The two contexts differ only in the final question: same shots, same order.
        shots_q = ctx_q[: ctx_q.index(render_prompt(doc["q"]))]
        shots_qp = ctx_qp[: ctx_qp.index(render_prompt(doc["qp"]))]
        assert shots_q == shots_qp and shots_q.count("Question:") == 2
        assert doc["key"] not in shots_q


def test_bad_run_option_is_a_clear_error(tiny_model: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_model}",
        "--device",
        "cpu",
        "--include_path",
        str(REPO / "tasks"),
        "--tasks",
        "biasmonkey_acquiescence",
        "--limit",
        "1",
        "--metadata",
        '{"mode": "greedy"}',
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "mode='greedy' is invalid" in proc.stderr


def test_records_file_that_is_not_ours_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "samples_x.jsonl"
    bad.write_text(json.dumps({"doc": {"question": "?"}, "filtered_resps": [["-1.0", "False"]]}) + "\n")
    with pytest.raises(ValueError, match=r"samples_x.jsonl, line 1: not a biasmonkey pair sample"):
        records_from_samples_file(bad, RESPONSE_BIAS)


def test_lm_eval_config_file_in_configs(tiny_model: Path, tmp_path: Path) -> None:
    """`lm_eval --config configs/lm_eval_response_bias.yaml` runs the suite (CLI args override)."""
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "--config",
        str(REPO / "configs/lm_eval_response_bias.yaml"),
        "--model_args",
        f"pretrained={tiny_model}",
        "--tasks",
        "biasmonkey_opinion_float",
        "--limit",
        "2",
        "--output_path",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    assert metric(results["results"]["biasmonkey_opinion_float"], "n_pairs") == 2
    assert next((tmp_path / "out").rglob("samples_biasmonkey_opinion_float_*.jsonl"))


def test_perturbation_seed_draws_fresh_typos_reproducibly(tiny_model: Path, tmp_path: Path) -> None:
    def prompts(run: str, seed: int, rules: str) -> list[tuple[str, str]]:
        _, samples = run_lm_eval(
            tiny_model,
            tmp_path / run,
            "biasmonkey_allow_forbid_letter_swap",
            "--limit",
            "3",
            "--metadata",
            json.dumps({"perturbation_seed": seed, "perturbation_rules": rules}),
        )
        docs = [
            json.loads(line)["doc"] for line in samples["biasmonkey_allow_forbid_letter_swap"].read_text().splitlines()
        ]
        assert {d["source"] for d in docs} == {f"seeded:{seed}:{rules}"}
        return [(d["q"], d["qp"]) for d in docs]

    first, again = prompts("a", 3, "paper"), prompts("b", 3, "paper")
    assert first == again  # same seed, byte-identical prompts
    assert all(q != qp for q, qp in first)
    assert prompts("c", 3, "published") != first  # the rule set changes which words are touched
