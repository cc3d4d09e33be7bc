"""`fuse_norms` (harness_ext/lm_eval/backends/fused_norms.py): RMSNorm modules whose formula is
`F.rms_norm`'s run it during biasmonkey-hf's own forwards, and only then; other formulas keep theirs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from tiny_model import comb_requests, tiny_llama
from transformers import AutoTokenizer
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from biasmonkey.harness_ext.lm_eval.backends.fused_norms import fusable_norms, installed
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path) -> Any:
    return AutoTokenizer.from_pretrained(tiny_model)


class EpsilonOutsideRMSNorm(LlamaRMSNorm):
    """x / (rms + eps): another formula, which only rows of small scale tell apart."""

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        rms = hidden_states.float().pow(2).mean(-1, keepdim=True).sqrt()
        return self.weight * (hidden_states.float() / (rms + self.variance_epsilon)).to(hidden_states.dtype)


class Float32OutRMSNorm(LlamaRMSNorm):
    """Llama's formula with the product taken in float32 and left there (another output dtype)."""

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        x = hidden_states.float()
        return self.weight.float() * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)


def norms_of(*modules: torch.nn.Module) -> torch.nn.Module:
    for module in modules:
        torch.nn.init.uniform_(module.weight, 0.5, 1.5)
    return torch.nn.ModuleList(modules)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llama_norms_are_fused_and_give_their_own_outputs(tokenizer, dtype: torch.dtype) -> None:
    model = tiny_llama(tokenizer, dtype=dtype)
    norms = fusable_norms(model)
    expected = [m for m in model.modules() if isinstance(m, LlamaRMSNorm)]
    assert [m for m, _ in norms] == expected and len(expected) == 2 * 2 + 1
    hidden = torch.randn(3, 7, 64, generator=torch.Generator().manual_seed(1)).to(dtype) * 3
    ulp = torch.finfo(dtype).eps
    for module, forward in norms:
        own, fused = module(hidden).float(), forward(hidden).float()
        assert forward(hidden).dtype == dtype
        # float32: the same to rounding; bfloat16: one rounding against two, within a unit or two
        assert ((own - fused).abs() <= 2 * ulp * own.abs() + 1e-6).all()


def test_norms_of_another_formula_or_dtype_keep_their_own_forward() -> None:
    llama, gemma = LlamaRMSNorm(32, eps=1e-5), GemmaRMSNorm(32, eps=1e-5)
    outside, float32_out = EpsilonOutsideRMSNorm(32, eps=1e-5), Float32OutRMSNorm(32, eps=1e-5)
    model = norms_of(llama, gemma, outside, float32_out).to(torch.bfloat16)
    assert [m for m, _ in fusable_norms(model)] == [llama]
    assert [m for m, _ in fusable_norms(norms_of(outside).float())] == []  # eps: only the probe's small rows


def test_installed_forwards_are_removed_on_leaving_even_after_an_error() -> None:
    model = norms_of(LlamaRMSNorm(16), LlamaRMSNorm(16))
    norms = fusable_norms(model)
    with pytest.raises(RuntimeError, match="boom"), installed(norms):
        assert all(m.forward is f for m, f in norms)
        raise RuntimeError("boom")
    assert all("forward" not in vars(m) and m.forward.__func__ is LlamaRMSNorm.forward for m, _ in norms)


def test_a_norm_whose_instance_has_a_forward_of_its_own_is_left_alone() -> None:
    """accelerate's hooks set `forward` on the instance: fusing would bypass the hook, and leaving
    would remove it."""
    hooked, plain = LlamaRMSNorm(16), LlamaRMSNorm(16)
    calls: list[int] = []

    def hook_forward(hidden_states: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return LlamaRMSNorm.forward(hooked, hidden_states)

    hooked.forward = hook_forward
    norms = fusable_norms(norms_of(hooked, plain))
    assert [m for m, _ in norms] == [plain]
    with installed(norms):
        hooked(torch.ones(2, 16))
    assert calls == [1] and hooked.forward is hook_forward and "forward" not in vars(plain)


def test_norms_are_found_while_another_instance_has_its_forwards_installed() -> None:
    """Two biasmonkey-hf on one model (a warm-up thread's forwards installed while the other looks,
    as bench_gpu.py's variants are made): every norm is still found, probed against its class."""
    model = norms_of(LlamaRMSNorm(16), LlamaRMSNorm(16), EpsilonOutsideRMSNorm(16, eps=1e-5)).float()
    first = fusable_norms(model)
    assert len(first) == 2
    with installed(first):
        assert [m for m, _ in fusable_norms(model)] == [m for m, _ in first]
    # the probe compares with the class's own forward, not with one of ours the instance carries
    model[2].forward = first[0][1]
    assert [m for m, _ in fusable_norms(model)] == [m for m, _ in first]


def counting_rms_norm(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = F.rms_norm

    def counted(*args: Any, **kwargs: Any) -> torch.Tensor:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "rms_norm", counted)
    return calls


def test_a_call_with_fused_norms_gives_the_unfused_answers(
    tokenizer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    common = {"tokenizer": tokenizer, "batch_size": 2, "row_tokens": 16}
    unfused = PrefixReuseHFLM(pretrained=tiny_llama(tokenizer), fuse_norms="false", **common)
    expected = unfused._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
    calls = counting_rms_norm(monkeypatch)
    assert not calls
    model = tiny_llama(tokenizer)
    lm = PrefixReuseHFLM(pretrained=model, fuse_norms="true", **common)
    with caplog.at_level(logging.INFO):
        answers = lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
    assert "biasmonkey-hf: 5 norms (LlamaRMSNorm) run as F.rms_norm" in caplog.text
    assert lm.forward_passes > 2 and lm.fallback_requests == 0
    # the probe's call, then 5 norms in each forward
    assert len(calls) == 1 + 5 * lm.forward_passes
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= 1e-5
    # outside the call, and in the stock code it sends requests to, the model's own forwards
    assert not any("forward" in vars(m) for m in model.modules())
    calls.clear()
    lm.prefix_sharing = False  # two-token continuations then go to the stock code
    two_tokens = [r for r in comb_requests() if len(r[2]) == 2]
    lm._loglikelihood_tokens(two_tokens, disable_tqdm=True)
    assert lm.fallback_requests == len(two_tokens) and not calls


def test_auto_fuses_on_cuda_only_and_bad_values_are_refused(tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counting_rms_norm(monkeypatch)
    lm = PrefixReuseHFLM(pretrained=tiny_llama(tokenizer), tokenizer=tokenizer, batch_size=2, row_tokens=16)
    lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
    assert lm.fuse_norms is False and not calls  # auto, on CPU
    with pytest.raises(ValueError, match="fuse_norms='sometimes': use auto, true or false"):
        PrefixReuseHFLM(pretrained=lm.model, tokenizer=tokenizer, fuse_norms="sometimes")
