"""Realism checks of the cognitive-bias tasks on the bundled SmolLM2-135M-Instruct (slow)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from test_cognitive_lm_eval import FIXTURES, assert_recomputes, logged, metadata
from test_lm_eval_e2e import run_lm_eval
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.tasks.cognitive.data import bias_tests
from biasmonkey.tasks.cognitive.prompts import answer_prompt, side_text

pytestmark = [
    pytest.mark.slow,
    pytest.mark.requires("smollm2"),
]

# An 11-option test and a 7-option one whose control and treatment options differ.
TASKS = ["biasmonkey_cognitive_hindsight_bias", "biasmonkey_cognitive_information_bias"]


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return ensure_default_model()


@pytest.fixture(scope="module")
def model_and_tokenizer(smollm2: Path):
    return AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32), AutoTokenizer.from_pretrained(smollm2)


def continuation_logprob(model, tok, context: str, continuation: str) -> float:
    """log P(continuation | context) from one plain forward pass, tokenised as lm-eval does
    (trailing whitespace of the context moves to the continuation; the joint text is encoded)."""
    stripped = context.rstrip()
    continuation = context[len(stripped) :] + continuation
    context_ids = tok(stripped, add_special_tokens=False).input_ids
    whole = tok(stripped + continuation, add_special_tokens=False).input_ids
    assert whole[: len(context_ids)] == context_ids
    with torch.no_grad():
        logits = model(torch.tensor([whole])).logits[0, len(context_ids) - 1 : -1]
    logprobs = torch.log_softmax(logits, dim=-1)
    return sum(logprobs[i, token].item() for i, token in enumerate(whole[len(context_ids) :]))


def test_exact_mode_matches_a_plain_transformers_forward(smollm2: Path, model_and_tokenizer, tmp_path: Path) -> None:
    results, samples = run_lm_eval(
        smollm2,
        tmp_path / "out",
        ",".join(TASKS),
        "--limit",
        "1",
        "--apply_chat_template",
        "--metadata",
        metadata(reversal="hash"),
    )
    model, tok = model_and_tokenizer
    for task in TASKS:
        (record,) = assert_recomputes(results["results"][task], samples[task], 1)
        (sample,) = logged(samples[task])
        args = list(sample["arguments"].values())
        # The first, second and last control labels and the first and last treatment labels.
        n_control = len(sample["doc"]["control_options"])
        checked = [0, 1, n_control - 1, n_control, len(args) - 1]
        logged_lls = [float(sample["filtered_resps"][i][0]) for i in checked]
        expected = [continuation_logprob(model, tok, args[i]["arg_0"], args[i]["arg_1"]) for i in checked]
        assert logged_lls == pytest.approx(expected, abs=1e-4)
        if task == "biasmonkey_cognitive_hindsight_bias":
            # SmolLM2 strongly prefers whichever option is offered first (p ≈ 0.5 of 11; the paper
            # reverses half of the tests for this reason): mapped back, that is the last original
            # option of this test, which the hash reversal with seed 42 reverses.
            assert record.reversed
            assert (record.answer_control, record.answer_treatment) == (10, 10)
            assert min(record.p_control[10], record.p_treatment[10]) > 0.3


def test_bare_option_labels_would_contain_their_two_digit_extensions(smollm2: Path, model_and_tokenizer) -> None:
    """Why exact mode scores "Option N:": SmolLM2 writes numbers digit by digit, so "Option 1"
    is a token prefix of "Option 10" and "Option 11" and its probability includes theirs."""
    model, tok = model_and_tokenizer
    assert (
        tok(" Option 10", add_special_tokens=False).input_ids[:-1]
        == tok(" Option 1", add_special_tokens=False).input_ids
    )
    test = bias_tests("anchoring", FIXTURES)[0]
    context = answer_prompt(side_text(test.to_doc(reversed_options=False), "control"))
    p = {
        label: math.exp(continuation_logprob(model, tok, context, label))
        for label in (" Option 1", " Option 10", " Option 11", " Option 1:")
    }
    assert p[" Option 1"] >= p[" Option 10"] + p[" Option 11"] + p[" Option 1:"]
    assert p[" Option 10"] + p[" Option 11"] > 0.1 * p[" Option 1"]  # not a negligible share
