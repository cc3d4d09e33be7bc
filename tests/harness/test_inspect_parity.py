"""Parity: the same model and prompts give the same per-pair records and aggregates in Inspect
(`hf/` provider, top log-probabilities) and in lm-eval (`--model hf`, log-likelihoods).

Both run the model in float64, one request at a time (lm-eval batch size 1, Inspect max_connections 1). In float32 the two harnesses' forward passes
(generate with an attention mask vs a plain forward) round differently, by up to ~3e-6 in a
probability on SmolLM2, i.e. ~3e-4 points of Δ. In float64 only transformers' generate casting
the next-token logits to float32 remains (up to ~5e-7 in a probability, ~5e-5 points of Δ on
SmolLM2 with the raw prompt), inside the 1e-4-point tolerance on Δ. Under SmolLM2's chat
template (a longer context with a system prompt) the same cast moves Δ by up to ~4e-4 points,
so that one check uses 1e-3."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from inspect_ai import eval as inspect_eval
from test_lm_eval_e2e import REPO, run_lm_eval
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file
from biasmonkey.metrics import summarize_deltas
from biasmonkey.tasks.response_bias.scoring import PairRecord

pytestmark = pytest.mark.usefixtures("data_dir")
RAW_PROMPT = yaml.safe_load((REPO / "configs" / "inspect_hf_raw_prompt.yaml").read_text())
TASKS = ("response_order", "odd_even_key_typo")


def inspect_records(model: Path, log_dir: Path, limit: int, raw_prompt: bool) -> dict[str, list[PairRecord]]:
    model_args = {"device": "cpu", "dtype": "float64", **(RAW_PROMPT if raw_prompt else {})}
    vocab = len(AutoTokenizer.from_pretrained(model))
    logs = inspect_eval(
        [f"biasmonkey/{t}" for t in TASKS],
        model=f"hf/{model}",
        model_args=model_args,
        limit=limit,
        task_args={"top_logprobs": min(vocab, 1000)},
        log_dir=str(log_dir),
        display="none",
        max_connections=1,  # Inspect's hf/ provider batches concurrent requests up to this limit
    )
    assert all(log.status == "success" for log in logs)
    return {log.eval.task.removeprefix("biasmonkey/"): records_from_eval_log(log.location) for log in logs}


def lm_eval_records(model: Path, out: Path, limit: int, chat: bool) -> dict[str, list[PairRecord]]:
    extra = ["--limit", str(limit)] + (["--apply_chat_template"] if chat else [])
    _, samples = run_lm_eval(
        model, out, ",".join(f"biasmonkey_{t}" for t in TASKS), *extra, batch_size=1, dtype="float64"
    )
    return {t: records_from_samples_file(samples[f"biasmonkey_{t}"]) for t in TASKS}


def assert_parity(
    inspect: dict[str, list[PairRecord]], lm_eval: dict[str, list[PairRecord]], limit: int, tol: float = 1e-4
) -> None:
    """Same pairs, same distributions, same Δ per pair and the same aggregates (tol: Δ points)."""
    for task in TASKS:
        ours, theirs = inspect[task], {r.key: r for r in lm_eval[task]}
        assert len(ours) == len(theirs) == limit and {r.key for r in ours} == set(theirs)
        for rec in ours:
            other = theirs[rec.key]
            assert rec.delta == pytest.approx(other.delta, abs=tol), rec.key
            assert rec.p_q == pytest.approx(other.p_q, abs=tol / 10), rec.key
            assert rec.p_qp == pytest.approx(other.p_qp, abs=tol / 10), rec.key
        a, b = (summarize_deltas([r.delta for r in records]) for records in (ours, list(theirs.values())))
        assert a.n == b.n and a.mean == pytest.approx(b.mean, abs=tol)
        assert a.t == pytest.approx(b.t, rel=tol) and a.p == pytest.approx(b.p, abs=tol)


@pytest.mark.parametrize("chat", [False, True], ids=["raw-prompt", "chat-template"])
def test_tiny_model_gives_the_same_records_in_both_harnesses(tiny_model: Path, tmp_path: Path, chat: bool) -> None:
    limit = 4
    assert_parity(
        inspect_records(tiny_model, tmp_path / "inspect", limit, raw_prompt=not chat),
        lm_eval_records(tiny_model, tmp_path / "lm_eval", limit, chat=chat),
        limit,
    )
