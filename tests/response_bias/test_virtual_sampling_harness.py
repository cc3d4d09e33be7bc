"""Virtual sampling through both harnesses on the tiny random model: lm-eval (`--metadata
virtual_samples=… virtual_seed=…`) and Inspect (`-T virtual_samples=…`) give the same virtual Δ
per pair, the same invalid-answer mass, and aggregates that recompute from the logged records.

The parity set-up is the one of test_inspect_parity.py (float64, one request at a time, raw
prompt, top-k covering the tiny vocabulary). The two harnesses' probabilities differ by < 1e-6,
so a virtual answer could only differ if one of the 2 · 50 uniforms of a side fell within 1e-6
of a cumulative-probability boundary (chance < 1e-3 over this run; the draws are fixed by the
seed, so the test is deterministic either way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from test_inspect import output, prompts, run, scripted
from test_inspect_parity import RAW_PROMPT
from test_lm_eval_e2e import metric, run_lm_eval
from transformers import AutoTokenizer

from biasmonkey.harness_ext.inspect.logs import read_finished_log
from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.metrics.virtual_sampling import virtual_delta, virtual_statistics

pytestmark = pytest.mark.usefixtures("data_dir")
TASKS = ("response_order", "odd_even_key_typo")
N, SEED, LIMIT = 50, 7, 4
VIRTUAL_METRICS = (
    "virtual_delta",
    "virtual_delta_t",
    "virtual_delta_p",
    "virtual_delta_ci_low",
    "virtual_delta_ci_high",
)


@pytest.fixture(scope="module")
def lm_eval_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, Path]]:
    metadata = json.dumps({"virtual_samples": N, "virtual_seed": SEED})
    return run_lm_eval(
        tiny_model,
        tmp_path_factory.mktemp("lm_eval"),
        ",".join(f"biasmonkey_{t}" for t in TASKS),
        "--limit",
        str(LIMIT),
        "--metadata",
        metadata,
        batch_size=1,
        dtype="float64",
    )


@pytest.fixture(scope="module")
def inspect_logs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))
    logs = inspect_eval(
        [f"biasmonkey/{t}" for t in TASKS],
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", "dtype": "float64", **RAW_PROMPT},
        limit=LIMIT,
        task_args={"top_logprobs": min(vocab, 1000), "virtual_samples": N, "virtual_seed": SEED},
        log_dir=str(tmp_path_factory.mktemp("inspect")),
        display="none",
        max_connections=1,
    )
    assert all(log.status == "success" for log in logs)
    return {log.eval.task.removeprefix("biasmonkey/"): log.location for log in logs}


@pytest.mark.parametrize("task", TASKS)
def test_both_harnesses_draw_the_same_virtual_answers(task: str, lm_eval_run, inspect_logs) -> None:
    results, samples = lm_eval_run
    lm_records = {r.key: r for r in records_from_samples_file(samples[f"biasmonkey_{task}"])}
    logged = {
        json.loads(line)["doc"]["key"]: json.loads(line)
        for line in samples[f"biasmonkey_{task}"].read_text().splitlines()
    }
    log = read_finished_log(inspect_logs[task])
    inspect_values = {s.id: s.scores["pair_scorer"].value for s in log.samples}
    inspect_records = {r.key: r for r in records_from_eval_log(inspect_logs[task])}
    assert set(lm_records) == set(inspect_records) == set(logged) and len(logged) == LIMIT
    for key, rec in lm_records.items():
        other = inspect_records[key]
        # the pair's virtual Δ: identical in both harnesses and recomputed from either record
        v = virtual_delta(rec, N, SEED)
        assert logged[key]["virtual_delta"] == pytest.approx(v, abs=1e-9)
        assert inspect_values[key]["virtual_delta"] == pytest.approx(v, abs=1e-9)
        assert virtual_delta(other, N, SEED) == pytest.approx(v, abs=1e-9)
        # a count share is a multiple of 1/50, so Δ is a multiple of 2 points
        assert v / 2 == pytest.approx(round(v / 2), abs=1e-9)
        # valid masses: real probabilities, equal in both harnesses (the top-k covers the vocabulary)
        assert 0 < rec.valid_mass_q < 1 and 0 < rec.valid_mass_qp < 1
        assert other.valid_mass_q == pytest.approx(rec.valid_mass_q, abs=1e-6)
        assert other.valid_mass_qp == pytest.approx(rec.valid_mass_qp, abs=1e-6)
        assert logged[key]["invalid_mass"] == pytest.approx(1 - (rec.valid_mass_q + rec.valid_mass_qp) / 2, abs=1e-9)

    # the reported aggregates are the statistics recomputed from the logged records
    stats = virtual_statistics(lm_records.values(), N, SEED)
    expected = {
        "virtual_delta": stats.delta.mean,
        "virtual_delta_t": stats.delta.t,
        "virtual_delta_p": stats.delta.p,
        "virtual_delta_ci_low": stats.delta.ci_low,
        "virtual_delta_ci_high": stats.delta.ci_high,
        "virtual_n_pairs": stats.delta.n,
        "invalid_mass": stats.invalid_mass,
        "virtual_expected_draws": stats.expected_draws,
    }
    lm_results = results["results"][f"biasmonkey_{task}"]
    inspect_metrics = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    for name, value in expected.items():
        assert metric(lm_results, name) == pytest.approx(value, rel=1e-6, abs=1e-9), name
        assert inspect_metrics[name] == pytest.approx(value, rel=1e-6, abs=1e-6), name
    assert stats.delta.n == LIMIT and stats.pairs_without_valid_mass == 0


def test_virtual_metrics_only_with_the_option(tiny_model: Path, tmp_path: Path) -> None:
    """Without virtual_samples an Inspect task reports no virtual metrics (tiny model, one pair)."""
    logs = inspect_eval(
        "biasmonkey/response_order",
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", **RAW_PROMPT},
        limit=1,
        task_args={"top_logprobs": 50},
        log_dir=str(tmp_path),
        display="none",
    )
    names = set(logs[0].results.scores[0].metrics)
    assert "delta" in names and not names & {*VIRTUAL_METRICS, "invalid_mass", "virtual_expected_draws"}
    # the record still carries the valid masses, so the virtual statistics can be computed later
    (rec,) = records_from_eval_log(logs[0].location)
    assert 0 < rec.valid_mass_q < 1 and virtual_statistics([rec], 10, 0).delta.n == 1


def test_inspect_valid_mass_from_the_top_logprobs_by_hand(tmp_path: Path) -> None:
    ((q, qp),) = prompts(1)
    model = scripted(
        {
            # q: A = " A" .3 + "A" .1 = .4, B = "ĠB" .2 + "B", not in the top-k: floor min(smallest .1,
            #    unreturned .1 / 1) = .1 → B = .3, valid mass .7, p_q = (4/7, 3/7); 1 imputed
            q: lambda: output("A", [(" A", 0.3), ("x", 0.3), ("ĠB", 0.2), ("A", 0.1)]),
            # q': "A", " B", "B" not in the top-k: floor min(smallest .05, unreturned .05 / 3) = 1/60 each
            #     → A = .9 + 1/60, B = 2/60, valid mass .95 (imputed floors included); 3 imputed
            qp: lambda: output("A", [(" A", 0.9), ("x", 0.05)]),
        }
    )
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=1, task_args={"virtual_samples": 10})
    assert log.status == "success", log.error
    m = {name: v.value for name, v in log.results.scores[0].metrics.items()}
    # invalid mass (.3 + .05) / 2 = .175; draws for 10 valid answers (10/.7 + 10/.95) / 2 = 12.4060
    assert m["invalid_mass"] == pytest.approx(0.175) and m["imputed_options"] == 4
    assert m["virtual_expected_draws"] == pytest.approx((10 / 0.7 + 10 / 0.95) / 2)
    (rec,) = records_from_eval_log(log.location)
    assert (rec.valid_mass_q, rec.valid_mass_qp) == (pytest.approx(0.7), pytest.approx(0.95))
    assert rec.p_q == pytest.approx([4 / 7, 3 / 7]) and rec.p_qp == pytest.approx([(0.9 + 1 / 60) / 0.95, 2 / 57])
    # the seed defaults to 0; one pair's Δ from 10 answers per side is a multiple of 10 points
    assert m["virtual_delta"] == virtual_delta(rec, 10, 0)
    assert m["virtual_delta"] / 10 == pytest.approx(round(m["virtual_delta"] / 10), abs=1e-9)
    assert m["virtual_n_pairs"] == 1
