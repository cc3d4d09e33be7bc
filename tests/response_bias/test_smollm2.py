"""Realism checks on the bundled SmolLM2-135M-Instruct through the stock lm_eval CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_inspect_parity import assert_parity, inspect_records, lm_eval_records
from test_lm_eval_e2e import assert_recomputes, metric, run_lm_eval
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.tasks.response_bias.prompts import answer_continuations, render_prompt

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("data_dir"),
    pytest.mark.requires("smollm2"),
]


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return ensure_default_model()


def test_exact_mode_matches_a_plain_transformers_forward(smollm2: Path, tmp_path: Path) -> None:
    tasks = "biasmonkey_response_order,biasmonkey_acquiescence_key_typo"
    results, samples = run_lm_eval(smollm2, tmp_path / "out", tasks, "--limit", "6")
    for task in tasks.split(","):
        records = assert_recomputes(results["results"][task], samples[task], 6)
        # A real instruct model is far from indifferent between the options.
        assert metric(results["results"][task], "uncertainty_q") < 0.9
        assert all(r.delta is not None for r in records)

    # The option distribution lm-eval produced equals one forward pass of transformers.
    sample = json.loads(samples["biasmonkey_response_order"].read_text().splitlines()[0])
    doc = sample["doc"]
    tok = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    ids = tok(render_prompt(doc["q"]), return_tensors="pt").input_ids
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0, -1], dim=-1)
    continuations = answer_continuations(doc["q_letters"])  # " A", "A", " B", "B", …
    token_ids = [tok(c, add_special_tokens=False).input_ids for c in continuations]
    assert all(len(i) == 1 for i in token_ids)
    expected = [logprobs[i[0]].item() for i in token_ids]
    logged = [float(r[0]) for r in sample["filtered_resps"][: len(continuations)]]
    assert logged == pytest.approx(expected, abs=1e-4)


def test_sampling_mode_counts_the_invalid_answers(smollm2: Path, tmp_path: Path) -> None:
    """With the paper's raw prompt SmolLM2 mostly ends its turn: those answers are counted."""
    results, samples = run_lm_eval(
        smollm2,
        tmp_path / "out",
        "biasmonkey_response_order",
        "--limit",
        "2",
        "--metadata",
        '{"mode": "sample", "n_samples": 10}',
    )
    task_results = results["results"]["biasmonkey_response_order"]
    records = assert_recomputes(task_results, samples["biasmonkey_response_order"], 2)
    assert sum(r.n_answers for r in records) == 40
    assert 0 < metric(task_results, "invalid_rate") < 1


@pytest.mark.parametrize("chat", [False, True], ids=["raw-prompt", "chat-template"])
def test_inspect_and_lm_eval_give_the_same_records(smollm2: Path, tmp_path: Path, chat: bool) -> None:
    """Parity on a real instruct model, with and without its chat template (see
    test_inspect_parity for the tolerance under the chat template)."""
    limit = 3
    assert_parity(
        inspect_records(smollm2, tmp_path / "inspect", limit, raw_prompt=not chat),
        lm_eval_records(smollm2, tmp_path / "lm_eval", limit, chat=chat),
        limit,
        tol=1e-3 if chat else 1e-4,
    )
