"""Realism checks of the yes-no tasks on the bundled SmolLM2-135M-Instruct (40 items per task)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_lm_eval_e2e import metric, run_lm_eval
from test_yesno_lm_eval import assert_recomputes
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("data_dir"),
    pytest.mark.requires("smollm2"),
]

TASKS = {"biasmonkey_yesno_comps": ("comps", "zeroshot"), "biasmonkey_yesno_ewok_fewshot": ("ewok", "fewshot")}
N = 40


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return ensure_default_model()


@pytest.fixture(scope="module")
def run(smollm2: Path, tmp_path_factory: pytest.TempPathFactory):
    return run_lm_eval(smollm2, tmp_path_factory.mktemp("smol") / "out", ",".join(TASKS), "--limit", str(N))


def _next_token_logprobs(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], dim=-1)


def test_logprobs_equal_a_plain_transformers_forward(run, smollm2: Path) -> None:
    _, samples = run
    tok = AutoTokenizer.from_pretrained(smollm2)
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32)
    cont_ids = [tok(c, add_special_tokens=False).input_ids for c in CONTINUATIONS]
    assert all(len(i) == 1 for i in cont_ids)  # " Yes", "Yes", " No", "No" are single tokens
    # No context: the continuations after SmolLM2's BOS token (<|im_start|>) alone.
    null = _next_token_logprobs(model, [tok.bos_token_id])
    for task, (dataset, prompt) in TASKS.items():
        for line in samples[task].read_text().splitlines()[:3]:
            sample = json.loads(line)
            context = tok(render_prompt(sample["doc"]["query"], dataset, prompt)).input_ids
            after_prompt = _next_token_logprobs(model, context)
            logged = [float(r[0]) for r in sample["filtered_resps"]]
            assert logged[:4] == pytest.approx([after_prompt[i[0]].item() for i in cont_ids], abs=1e-4)
            assert logged[4:] == pytest.approx([null[i[0]].item() for i in cont_ids], abs=1e-4)


def test_specific_correction_removes_smollm2s_no_bias(run) -> None:
    results, samples = run
    for task in TASKS:
        task_results = results["results"][task]
        assert_recomputes(task_results, samples[task], N)
        # SmolLM2 answers No to nearly everything (P(yes) < 0.5 whatever the gold answer) ...
        assert metric(task_results, "bias") <= -0.9
        assert metric(task_results, "p_yes_gold_yes") < 0.5 and metric(task_results, "p_yes_gold_no") < 0.5
        # ... and the Specific correction brings the bias close to 0.
        assert abs(metric(task_results, "bias_specific")) <= 0.3
