"""Pre-flight checks of real model folders, hub ids, launcher options and prompt lengths.

Each bad input is exit status 2 and one line naming the culprit and the fix, before any model
loads (lm-eval never starts): a config.json that does not parse, a folder without tokenizer files,
truncated or missing weights, a hub id the Hub cannot serve (no network: HF_ENDPOINT is a closed
local port), a missing `--tokenizer` for `plan`, bad `--metadata` or a refused `--num_fewshot`
given to the launcher, and prompts longer than the model's context. With `--allow-truncation` the
run goes on, the run line counts the cut prompts, and the count, recorded beside the results, is in
every later summary, report, table and export of the folder.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from biasmonkey.harness_ext.app.context_check import context_length
from biasmonkey.harness_ext.app.model_checks import check_safetensors
from biasmonkey.harness_ext.truncation import TRUNCATION_FILE, TaskCuts, record_truncation, truncation_of

CLOSED_PORT = "http://127.0.0.1:9"
SHORT_CONTEXT = 48


def cli(*argv: str, env: dict[str, str] | None = None, module: str = "biasmonkey.harness_ext.app.cli"):
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=600, env=env)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str, code: int = 2) -> None:
    assert proc.returncode == code, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr[-3000:]


def run_fails_before_lm_eval(model: Path | str, tmp_path: Path, *fragments: str, env: dict | None = None) -> None:
    start = time.monotonic()
    proc = cli(
        "run",
        *["--model", str(model), "--tasks", "biasmonkey_acquiescence", "--limit", "1"],
        *["--output", str(tmp_path / "out")],
        env=env,
    )
    assert_one_line_error(proc, *fragments)
    assert "lm_eval" not in proc.stderr and "Selected Tasks" not in proc.stderr  # lm-eval never started
    assert proc.stderr.strip().splitlines()[-1].startswith("biasmonkey: error: ")
    assert not list((tmp_path / "out").rglob("*.json*"))  # no lm-eval output
    assert time.monotonic() - start < 120  # no model loaded (CLI start-up only)


def variant(tiny_model: Path, tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(tiny_model, folder)
    return folder


# ---------------------------------------------------------------------------- model folders


def test_config_that_does_not_parse(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    model = variant(tiny_model, tmp_path, "broken-config")
    (model / "config.json").write_text('{\n  "model_type": "gpt2",\n  "n_embd": ,\n}\n')
    run_fails_before_lm_eval(model, tmp_path, "config.json is not valid JSON", "line 3")


def test_folder_without_tokenizer_files(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    model = variant(tiny_model, tmp_path, "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model / name).unlink()
    run_fails_before_lm_eval(model, tmp_path, "no tokenizer files", "tokenizer.json")


def test_truncated_safetensors(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    model = variant(tiny_model, tmp_path, "truncated")
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    run_fails_before_lm_eval(model, tmp_path, "model.safetensors", "truncated", "re-download")


def test_safetensors_header_checks(tiny_model: Path, tmp_path: Path) -> None:
    check_safetensors(tiny_model / "model.safetensors", "--model", "m")  # a whole file passes
    cases = {
        "short.safetensors": b"\x01\x02",
        "huge-header.safetensors": (10**9).to_bytes(8, "little") + b"{}",
        "bad-header.safetensors": (4).to_bytes(8, "little") + b"{no}",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match="re-download"):
            check_safetensors(tmp_path / name, "--model", "m")


def test_sharded_checkpoint_with_a_missing_shard(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    model = variant(tiny_model, tmp_path, "sharded")
    (model / "model.safetensors").rename(model / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    run_fails_before_lm_eval(model, tmp_path, "missing shard", "model-00002-of-00002.safetensors")


def test_folder_without_weights(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    model = variant(tiny_model, tmp_path, "no-weights")
    (model / "model.safetensors").unlink()
    run_fails_before_lm_eval(model, tmp_path, "no weights", "model.safetensors")


# ---------------------------------------------------------------------------- hub ids and --tokenizer


def offline_hub_env(tmp_path: Path) -> dict[str, str]:
    """No network: an empty cache, and the Hub at a closed local port (the request fails at once)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return env | {"HF_ENDPOINT": CLOSED_PORT, "HF_HOME": str(tmp_path / "hf-home")}


def test_hub_id_that_cannot_be_reached(data_dir: Path, tmp_path: Path) -> None:
    run_fails_before_lm_eval(
        "HuggingFaceTB/SmolLM2-360M-Instruct",
        tmp_path,
        "--model HuggingFaceTB/SmolLM2-360M-Instruct: not a local folder, not in the Hugging Face cache",
        "the Hub cannot be reached",
        "download it first or give a local folder",
        env=offline_hub_env(tmp_path),
    )


def test_plan_with_a_missing_tokenizer(data_dir: Path, tmp_path: Path) -> None:
    proc = cli("plan", "--tasks", "biasmonkey_acquiescence", "--tokenizer", str(tmp_path / "no-such-tokenizer"))
    assert_one_line_error(proc, "--tokenizer", "no such tokenizer folder")
    proc = cli("plan", "--tasks", "biasmonkey_acquiescence", "--tokenizer", "org/tok", env=offline_hub_env(tmp_path))
    assert_one_line_error(proc, "--tokenizer org/tok", "the Hub cannot be reached")


# ---------------------------------------------------------------------------- the launcher


def launcher(*argv: str) -> subprocess.CompletedProcess:
    """`python -m biasmonkey.harness_ext.lm_eval` with a model that would fail to load: an error that
    names the model would mean it was loaded before the tasks were checked."""
    return cli(
        *["--model", "biasmonkey-hf", "--model_args", "pretrained=/nonexistent/model"],
        *["--include_path", "tasks", "--limit", "1", *argv],
        module="biasmonkey.harness_ext.lm_eval",
    )


def test_launcher_checks_metadata_before_the_model(data_dir: Path) -> None:
    proc = launcher("--tasks", "biasmonkey_yesno_comps", "--metadata", '{"seed": "x"}')
    assert_one_line_error(proc, "lm-eval not started", "seed")
    assert "/nonexistent/model" not in proc.stderr


def test_launcher_refuses_few_shot_before_the_model(data_dir: Path) -> None:
    proc = launcher("--tasks", "biasmonkey-yesno", "--num_fewshot", "2")
    assert_one_line_error(proc, "lm-eval not started", "--num_fewshot")
    assert "/nonexistent/model" not in proc.stderr


@pytest.mark.parametrize(
    ("model", "model_args", "extra", "problem"),
    [
        ("biasmonkey-hf", ",row_tokens=0", [], "row_tokens=0: use a whole number of positions, 1 or more"),
        ("biasmonkey-hf", ",pack_rows=maybe", [], "pack_rows='maybe': use auto, true or false"),
        ("biasmonkey-hf", ",prefix_sharing=2", [], "prefix_sharing=2: use true or false"),
        ("biasmonkey-hf", "", ["--batch_size", "0"], "batch_size='0': use a whole number of rows, 1 or more"),
        ("biasmonkey-server", ",base_url=http://127.0.0.1:9/v1,timeout=0", [], "timeout=0 must be a positive number"),
    ],
)
def test_launcher_refuses_a_bad_model_argument_before_the_weights(
    data_dir: Path, model: str, model_args: str, extra: list[str], problem: str
) -> None:
    """One line, exit 2, and the (nonexistent) weights never looked for: they were a traceback after loading."""
    proc = cli(
        *["--model", model, "--model_args", f"pretrained=/nonexistent/model,tokenizer=/nonexistent/model{model_args}"],
        *["--include_path", "tasks", "--limit", "1", "--tasks", "biasmonkey_acquiescence", *extra],
        module="biasmonkey.harness_ext.lm_eval",
    )
    assert_one_line_error(proc, "lm-eval not started", problem)
    assert "cannot load the tokenizer" not in proc.stderr


# ---------------------------------------------------------------------------- prompt lengths


@pytest.fixture(scope="module")
def short_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 that loads, with a context of SHORT_CONTEXT tokens (the tiny model's tokenizer)."""
    import torch
    from tiny_model import build_tiny_model
    from transformers import GPT2Config, GPT2LMHeadModel

    path = build_tiny_model(tmp_path_factory.mktemp("short-model"))
    config = GPT2Config.from_pretrained(path)
    config.n_positions = SHORT_CONTEXT
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        GPT2LMHeadModel(config).save_pretrained(path)
    return path


def test_context_length_is_lm_evals(short_model: Path) -> None:
    from lm_eval.models.utils import resolve_max_length
    from transformers import AutoConfig, AutoTokenizer

    config, tokenizer = AutoConfig.from_pretrained(short_model), AutoTokenizer.from_pretrained(short_model)
    assert context_length(config, tokenizer) == (SHORT_CONTEXT, "config.json n_positions")
    assert resolve_max_length(config, tokenizer) == SHORT_CONTEXT
    assert context_length(config, tokenizer, max_length=32)[0] == 32


def test_prompts_longer_than_the_context_are_an_error(short_model: Path, data_dir: Path, tmp_path: Path) -> None:
    run_fails_before_lm_eval(
        short_model,
        tmp_path,
        "biasmonkey_acquiescence:",
        "do not fit the model's context",
        f"takes {SHORT_CONTEXT} (config.json n_positions)",
        "--allow-truncation",
    )


def test_allowed_truncation_is_counted_in_the_outputs(short_model: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = cli(
        "run",
        *["--model", str(short_model), "--tasks", "biasmonkey_acquiescence", "--limit", "1", "--no-cache"],
        *["--output", str(out), "--allow-truncation"],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_line = next(line for line in proc.stdout.splitlines() if line.startswith("biasmonkey run:"))
    assert "TRUNCATED (--allow-truncation)" in run_line and f"context of {SHORT_CONTEXT} tokens" in run_line
    summary = (out / "summary.md").read_text()
    assert "**Truncated prompts** (--allow-truncation)" in summary and "biasmonkey_acquiescence" in summary
    assert "biasmonkey-hf:" in proc.stderr and "cut from the left" in proc.stderr  # the backend's own count
    # The count stays beside the results: every later reader of the folder states it.
    (samples,) = out.rglob("samples_biasmonkey_acquiescence_*.jsonl")
    record = json.loads((samples.parent / TRUNCATION_FILE).read_text())[samples.name]
    assert record["limit"] == SHORT_CONTEXT and record["prompts"] >= 1 and record["most_cut"] > 0
    cut = f"{record['prompts']} prompt(s) truncated to the model's context of {SHORT_CONTEXT} tokens"
    assert "biasmonkey_truncation.json" not in {p.name for p in out.glob("*")}  # beside the samples, not above
    for stale in ("summary.md", "summary.csv"):
        (out / stale).unlink()
    shutil.rmtree(out / "report")
    assert cli("summarize", str(out)).returncode == 0
    summary = (out / "summary.md").read_text()
    assert f"**Truncated prompts** (--allow-truncation): {record['prompts']} distinct prompt(s)" in summary
    assert f"biasmonkey_acquiescence {record['prompts']} (up to {record['most_cut']} tokens)" in summary
    with (out / "summary.csv").open() as f:
        assert {row["truncated_prompts"] for row in csv.DictReader(f)} == {str(record["prompts"])}
    report = tmp_path / "report"
    assert cli("report", str(out), "--out", str(report)).returncode == 0
    text = (report / "report.md").read_text()
    assert "truncated prompts (--allow-truncation)" in text and cut in text  # the Summary's warnings
    assert ": truncated prompts** (`biasmonkey run --allow-truncation`)" in text  # the Inputs' note
    with (report / "tables" / "warnings.csv").open() as f:
        assert [r["task"] for r in csv.DictReader(f) if r["warning"].startswith("truncated prompts")] == [
            "acquiescence"
        ]
    with (report / "tables" / "inputs.csv").open() as f:
        assert {r["task"]: r["truncated_prompts"] for r in csv.DictReader(f)} == {
            "biasmonkey_acquiescence": str(record["prompts"])
        }
    (results,) = report.rglob("leaderboard/*/results_*.json")
    sources = json.loads(results.read_text())["config"]["biasmonkey"]["sources"]
    assert sources["biasmonkey_acquiescence"]["truncation"] == record
    (entry,) = report.rglob(".eval_results/biasmonkey_acquiescence.yaml")
    assert cut in yaml.safe_load(entry.read_text())[0]["notes"]


def test_backend_refuses_over_long_requests(short_model: Path, data_dir: Path, tmp_path: Path) -> None:
    """Through the launcher, without `biasmonkey run`'s pre-flight: biasmonkey-hf itself refuses."""
    proc = cli(
        *["--model", "biasmonkey-hf", "--model_args", f"pretrained={short_model}", "--device", "cpu"],
        *["--include_path", "tasks", "--tasks", "biasmonkey_acquiescence", "--limit", "1"],
        module="biasmonkey.harness_ext.lm_eval",
    )
    assert_one_line_error(proc, "lm-eval stopped: biasmonkey-hf:", f"context of {SHORT_CONTEXT} tokens", code=1)


def test_served_backend_refuses_over_long_requests_before_sending(tiny_model: Path) -> None:
    """biasmonkey-server with max_length: an over-long request is an error before any request is sent."""
    from biasmonkey.harness_ext.lm_eval.backends.context import ContextTooLong
    from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM

    lm = ServedLM(base_url=f"{CLOSED_PORT}/v1", model="m", tokenizer=str(tiny_model), max_length=8)
    request = (("a long context " * 4, " A"), list(range(12)), [5])
    with pytest.raises(ContextTooLong, match="1 requests do not fit the model's context of 8 tokens"):
        lm._loglikelihood_tokens([request])
    assert lm.requests_sent == 0
    with pytest.raises(ValueError, match="allow_truncation='maybe': use true or false"):
        ServedLM(base_url=f"{CLOSED_PORT}/v1", model="m", tokenizer=str(tiny_model), allow_truncation="maybe")


def test_truncation_records_merge_and_a_damaged_one_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    first, second = (folder / f"samples_biasmonkey_{t}_2025-01-01T00-00-00.000000.jsonl" for t in ("a", "b"))
    cuts = TaskCuts(limit=48, prompts=2, longest=90, most_cut=42, total_cut=60)
    assert record_truncation([first, folder / "results_x.json"], {"biasmonkey_a": cuts}) == [folder / TRUNCATION_FILE]
    assert record_truncation([second], {"biasmonkey_a": cuts}) == []  # task b: nothing cut
    later = TaskCuts(limit=32, prompts=1, longest=40, most_cut=8, total_cut=8)
    record_truncation([second], {"biasmonkey_b": later})  # a later run: the earlier entries stay
    assert (truncation_of(first), truncation_of(second)) == (cuts, later)
    assert truncation_of(folder / "samples_biasmonkey_c_2025-01-01T00-00-00.000000.jsonl") is None
    assert not list(folder.glob(".*.tmp"))  # written atomically
    (folder / TRUNCATION_FILE).write_text('{"x": {"limit": 48}')
    with pytest.raises(ValueError, match=f"{folder / TRUNCATION_FILE}: not a readable truncation record"):
        truncation_of(first)
