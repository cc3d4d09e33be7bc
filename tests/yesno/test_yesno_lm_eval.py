"""The yes-no tasks through the stock `lm_eval` CLI on a tiny random model (plumbing, not realism).

Every run's logged samples are turned back into per-item records by the core code and must
recompute to the numbers lm-eval reported; `biasmonkey yesno-compare` reads the same files.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_lm_eval_e2e import REPO, metric, run_lm_eval
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app.cli import main as biasmonkey_main
from biasmonkey.harness_ext.app.cli import tasks_dir
from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.metrics.yesno import correctness, votes
from biasmonkey.tasks.families import YESNO
from biasmonkey.tasks.yesno.data import EWOK_DOMAINS
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt
from biasmonkey.tasks.yesno.scoring import summarize

MAIN_TASKS = [
    "biasmonkey_yesno_comps",
    "biasmonkey_yesno_comps_fewshot",
    "biasmonkey_yesno_ewok",
    "biasmonkey_yesno_ewok_fewshot",
]
DOMAIN_TASKS = [f"biasmonkey_yesno_ewok_{d}" for d in EWOK_DOMAINS]
DOMAIN_FEWSHOT_TASKS = [f"{t}_fewshot" for t in DOMAIN_TASKS]
REPORTED = [
    "bias",
    "accuracy",
    "bias_generic",
    "accuracy_generic",
    "bias_specific",
    "accuracy_specific",
    "delta_pct_bias_generic",
    "delta_pct_accuracy_generic",
    "delta_pct_bias_specific",
    "delta_pct_accuracy_specific",
    "p_yes_gold_yes",
    "p_yes_gold_no",
    "n",
    "n_ties",
    "n_no_specific",
]
LIMIT = 8  # items per task: every EWoK domain then has two blocks of 4 items, i.e. two Specific folds


def expected_metrics(records: list) -> list[str]:
    """REPORTED, without mean P(yes) for a gold answer no document has (lm-eval leaves out a
    metric no document produced: the first Arith items are all "No")."""
    golds = {"p_yes_gold_yes": True, "p_yes_gold_no": False}
    return [m for m in REPORTED if m not in golds or any(r.gold_yes == golds[m] for r in records)]


pytestmark = pytest.mark.usefixtures("data_dir")


def _task_setup(task: str) -> tuple[str, str]:
    """(dataset, prompt variant) of a task name."""
    return ("comps" if "_comps" in task else "ewok"), ("fewshot" if task.endswith("_fewshot") else "zeroshot")


def assert_recomputes(task_results: dict, samples_file: Path, n: int) -> list:
    """The logged records reproduce every reported number and each document's own values."""
    records = records_from_samples_file(samples_file)
    logged = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(records) == len(logged) == n
    summary = summarize(records).as_dict()
    for name in expected_metrics(records):
        assert metric(task_results, name) == pytest.approx(summary[name], rel=1e-9, abs=1e-12, nan_ok=True), name
    for rec, sample in zip(records, logged):
        assert rec.id == sample["doc"]["id"]
        vote = votes([rec.yes], [rec.no])
        assert sample["bias"] == vote[0] and sample["accuracy"] == correctness(vote, [rec.gold_yes])[0]
    return records


@pytest.fixture(scope="module")
def glob_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    """Every yes-no task through the glob, with the installed tasks dir, from an unrelated directory."""
    cwd = tmp_path_factory.mktemp("elsewhere")
    include = str(tasks_dir())
    return run_lm_eval(
        tiny_model, cwd / "out", "biasmonkey_yesno_*", "--limit", str(LIMIT), include=include, cwd=cwd, launcher=False
    )


@pytest.fixture(scope="module")
def tag_group_chat_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    """The `biasmonkey-yesno` tag, the few-shot domain group, with the chat template."""
    out = tmp_path_factory.mktemp("tag") / "out"
    return run_lm_eval(
        tiny_model,
        out,
        "biasmonkey-yesno,biasmonkey-yesno-ewok-domains-fewshot",
        "--limit",
        str(LIMIT),
        "--apply_chat_template",
    )


def test_glob_selects_every_yesno_task_with_every_metric(glob_run) -> None:
    results, samples = glob_run
    tasks = YESNO.lm_eval_tasks()  # the paper's sets and the authors' Arith/bAbI, 3 prompt types, EWoK domains
    assert set(MAIN_TASKS + DOMAIN_TASKS + DOMAIN_FEWSHOT_TASKS) < set(tasks) and len(tasks) == 45
    assert set(results["results"]) == set(tasks) == set(samples)
    for task in tasks:
        reported = {k.split(",")[0] for k in results["results"][task]} - {"alias", "name", "sample_len", "sample_count"}
        expected = expected_metrics(records_from_samples_file(samples[task]))
        assert set(REPORTED) - {"p_yes_gold_yes", "p_yes_gold_no"} <= set(expected) <= reported, task
        assert metric(results["results"][task], "n") == LIMIT
        assert isinstance(results["results"][task]["bias_stderr,none"], float)  # lm-eval's mean gives a stderr


def test_logged_records_recompute_to_reported_aggregates(glob_run) -> None:
    results, samples = glob_run
    for task in results["results"]:
        assert_recomputes(results["results"][task], samples[task], LIMIT)


def test_summarize_shows_each_reported_metric_under_its_name(glob_run, tmp_path: Path, capsys) -> None:
    """`biasmonkey summarize` on a yes-no run: one row per task, each metric the task reported (as
    lm-eval aggregated it from the same records) under the metric's own name."""
    results, samples = glob_run
    folder = samples["biasmonkey_yesno_comps"].parent
    assert biasmonkey_main(["summarize", str(folder), "--out", str(tmp_path)]) == 0
    md = capsys.readouterr().out
    assert "## Yes-no bias (Bhatt & Ivanova, CogSci 2025)" in md
    rows = {r["task"]: r for r in csv.DictReader((tmp_path / "summary.csv").open())}
    assert {f"biasmonkey_{task}" for task in rows} == set(results["results"])
    for task, row in rows.items():
        assert row["family"] == "yesno"
        reported = results["results"][f"biasmonkey_{task}"]
        for name in ("bias", "accuracy", "bias_generic", "bias_specific", "accuracy_specific", "n"):
            assert float(row[name]) == pytest.approx(metric(reported, name), nan_ok=True), (task, name)


def test_requests_are_the_prompt_then_the_empty_context(glob_run) -> None:
    _, samples = glob_run
    null_values = set()
    for task in MAIN_TASKS:
        dataset, prompt = _task_setup(task)
        for line in samples[task].read_text().splitlines():
            sample = json.loads(line)
            args = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
            context = render_prompt(sample["doc"]["query"], dataset, prompt)
            assert args == [(context, c) for c in CONTINUATIONS] + [("", c) for c in CONTINUATIONS]
            null_values.add(tuple(r[0] for r in sample["filtered_resps"][4:]))
    assert len(null_values) == 1  # one no-context measurement per model, identical in every document


def test_empty_context_is_scored_after_the_prefix_token_alone(glob_run, tiny_model: Path) -> None:
    """lm-eval's empty context = the BOS token (EOS for this GPT-2) as the only context."""
    _, samples = glob_run
    logged = [
        float(r[0])
        for r in json.loads(samples["biasmonkey_yesno_comps"].read_text().splitlines()[0])["filtered_resps"][4:]
    ]
    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    expected = []
    for text in CONTINUATIONS:
        cont = tok(text, add_special_tokens=False).input_ids
        ids = torch.tensor([[tok.bos_token_id, *cont]])
        with torch.no_grad():
            logprobs = torch.log_softmax(model(ids).logits[0], dim=-1)
        expected.append(sum(logprobs[i, t].item() for i, t in enumerate(cont)))  # position i predicts token i+1
    assert logged == pytest.approx(expected, abs=1e-4)


def test_tag_group_and_chat_template(tag_group_chat_run) -> None:
    results, samples = tag_group_chat_run
    group = "biasmonkey-yesno-ewok-domains-fewshot"
    assert set(results["group_subtasks"][group]) == set(DOMAIN_FEWSHOT_TASKS)
    assert set(MAIN_TASKS) <= set(results["results"])
    for task in MAIN_TASKS + DOMAIN_FEWSHOT_TASKS:
        assert_recomputes(results["results"][task], samples[task], LIMIT)

    # Group values are item-weighted means of the domains; for bias that is the pooled bias.
    pooled = [r for task in DOMAIN_FEWSHOT_TASKS for r in records_from_samples_file(samples[task])]
    assert len(pooled) == 11 * LIMIT
    assert metric(results["results"][group], "bias") == pytest.approx(
        sum(votes([r.yes for r in pooled], [r.no for r in pooled])) / len(pooled)
    )
    # Specific calibrates each domain on its own, so the group's Specific values are those of the
    # domains' items pooled in one summary (which calibrates per domain too).
    spec = [metric(results["results"][t], "bias_specific") for t in DOMAIN_FEWSHOT_TASKS]
    assert not any(math.isnan(x) for x in spec)
    assert metric(results["results"][group], "bias_specific") == pytest.approx(sum(spec) / len(spec))
    assert summarize(pooled).bias_specific == pytest.approx(sum(spec) / len(spec))
    assert summarize(pooled).accuracy_specific == pytest.approx(metric(results["results"][group], "accuracy_specific"))

    sample = json.loads(samples["biasmonkey_yesno_comps_fewshot"].read_text().splitlines()[0])
    args = [(a["arg_0"], a["arg_1"]) for a in sample["arguments"].values()]
    prompt = render_prompt(sample["doc"]["query"], "comps", "fewshot")
    assert args[0] == (f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n", " Yes")
    assert args[4:] == [("", c) for c in CONTINUATIONS]  # no chat template around the no-context requests


def test_num_fewshot_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_model}",
        "--include_path",
        str(REPO / "tasks"),
        "--tasks",
        "biasmonkey_yesno_comps",
        "--limit",
        "2",
        "--num_fewshot",
        "2",
        "--output_path",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "take no --num_fewshot (got 2)" in proc.stderr


def test_yesno_compare_cli(glob_run, tag_group_chat_run, capsys: pytest.CaptureFixture) -> None:
    (_, samples_a), (_, samples_b) = glob_run, tag_group_chat_run
    dir_a, dir_b = samples_a["biasmonkey_yesno_comps"].parent, samples_b["biasmonkey_yesno_comps"].parent

    # One unit per model pair and task.
    assert biasmonkey_main(["yesno-compare", "--unit", "task", "--pair", str(dir_a), str(dir_b), "--json"]) == 0
    captured = capsys.readouterr()
    rows = {r["task"]: r for r in json.loads(captured.out)}
    assert set(rows) == set(MAIN_TASKS + DOMAIN_FEWSHOT_TASKS)  # the tasks in both folders
    left_out = captured.err.split("left out: ")[1].strip().split(", ")
    assert left_out == sorted(set(samples_a) - set(rows))  # e.g. the zero-shot domains: only in the first folder
    for task, row in rows.items():
        b_a = summarize(records_from_samples_file(samples_a[task])).bias
        b_b = summarize(records_from_samples_file(samples_b[task])).bias
        assert row["n"] == row["n_pairs"] == 1 and math.isnan(row["cohens_d"])
        assert row["mean_difference"] == pytest.approx(abs(b_b) - abs(b_a))

    # The pair reversed: each difference negated (the same pair in both orders at once is refused).
    assert biasmonkey_main(["yesno-compare", "--unit", "task", "--pair", str(dir_b), str(dir_a), "--json"]) == 0
    for row in json.loads(capsys.readouterr().out):
        assert row["n"] == 1 and row["mean_difference"] == pytest.approx(-rows[row["task"]]["mean_difference"])

    # The authors' units (the default): EWoK's domains, from the EWoK task's items; the per-domain
    # tasks are not rows of their own.
    assert biasmonkey_main(["yesno-compare", "--pair", str(dir_a), str(dir_b), "--json"]) == 0
    rows = {r["task"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(MAIN_TASKS)
    for task in ("biasmonkey_yesno_ewok", "biasmonkey_yesno_ewok_fewshot"):
        diffs = []
        for domain in sorted({r.domain for r in records_from_samples_file(samples_a[task])}):
            b_a, b_b = (
                summarize([r for r in records_from_samples_file(s[task]) if r.domain == domain]).bias
                for s in (samples_a, samples_b)
            )
            diffs.append(abs(b_b) - abs(b_a))
        assert rows[task]["n"] == len(diffs) and rows[task]["mean_difference"] == pytest.approx(sum(diffs) / len(diffs))

    assert biasmonkey_main(["yesno-compare", "--pair", str(dir_a), str(dir_b)]) == 0
    table = capsys.readouterr().out
    assert "biasmonkey_yesno_ewok_fewshot" in table and "Cohen's d" in table


def test_yesno_compare_without_samples_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert biasmonkey_main(["yesno-compare", "--pair", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "no samples_biasmonkey_yesno_*.jsonl files" in capsys.readouterr().err
