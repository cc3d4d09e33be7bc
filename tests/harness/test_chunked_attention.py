"""`attention_chunk` (harness_ext/lm_eval/backends/chunked_attention.py): a prefix-tree forward's
attention in chunks of queries, each over the keys up to its end: the same numbers, fewer keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_model import comb_requests, tiny_llama
from transformers import AutoTokenizer, LlavaConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from biasmonkey.harness_ext.lm_eval.backends import chunked_attention
from biasmonkey.harness_ext.lm_eval.backends.chunked_attention import chunked
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> tuple[Any, Any]:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    return tiny_llama(tokenizer), tokenizer  # 4 query heads over 2 key/value heads


def test_chunks_give_what_one_attention_gives(model) -> None:
    """10 cached keys, then 11 positions of a row in preorder (each sees some of the cache and
    some of the positions before it, itself included): chunks of 4 queries over the keys up to
    their end give the attention over all keys."""
    llama, _ = model
    layer = llama.model.layers[0].self_attn
    generator = torch.Generator().manual_seed(3)
    cached, positions, dim = 10, 11, 16
    query = torch.randn(2, 4, positions, dim, generator=generator)
    key, value = (torch.randn(2, 2, cached + positions, dim, generator=generator) for _ in range(2))
    sees_cache = torch.rand(2, 1, positions, cached, generator=generator) < 0.5
    ancestors = torch.ones(positions, positions, dtype=torch.bool).tril() & (
        torch.rand(2, 1, positions, positions, generator=generator) < 0.6
    )
    mask = torch.cat([sees_cache, ancestors | torch.eye(positions, dtype=torch.bool)], dim=-1)
    whole, _ = sdpa_attention_forward(layer, query, key, value, mask, scaling=layer.scaling)
    parts, _ = chunked_attention._attention(4, layer, query, key, value, mask, scaling=layer.scaling)
    assert parts.shape == whole.shape == (2, positions, 4, dim)
    assert torch.allclose(parts, whole, atol=1e-6)


def test_a_call_in_chunks_gives_the_same_answers(model, monkeypatch: pytest.MonkeyPatch) -> None:
    llama, tokenizer = model
    calls: list[tuple[int, int]] = []  # (queries, keys) of each attention

    def recorded(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        calls.append((query.shape[2], key.shape[2]))
        return sdpa_attention_forward(module, query, key, *args, **kwargs)

    monkeypatch.setattr(chunked_attention, "sdpa_attention_forward", recorded)
    answers = {}
    for chunk in (0, 4):
        lm = PrefixReuseHFLM(pretrained=llama, tokenizer=tokenizer, batch_size=4, row_tokens=16, attention_chunk=chunk)
        answers[chunk] = lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
        assert llama.config._attn_implementation == "sdpa"
    assert [g for _, g in answers[4]] == [g for _, g in answers[0]]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers[4], answers[0])) < 1e-5
    # chunk 0 never reached the chunked attention; chunk 4: every attention of 4 queries at most,
    # and some over fewer keys than the forward holds (the last chunk of each attention holds all)
    assert calls and all(queries <= 4 for queries, _ in calls)
    assert any(keys < later_keys for (_, keys), (_, later_keys) in zip(calls, calls[1:]))


def test_the_model_attends_as_before_outside_and_after_an_error(model) -> None:
    llama, _ = model
    config = llama.config
    with pytest.raises(RuntimeError, match="inside"), chunked(config, 8):
        assert config._attn_implementation == "biasmonkey_sdpa_chunks_of_8"
        raise RuntimeError("inside")
    assert config._attn_implementation == "sdpa"
    with chunked(config, 0):
        assert config._attn_implementation == "sdpa"
    parts = LlavaConfig()  # a model of parts, whose attentions a single name would all set
    parts._attn_implementation = "sdpa"
    with chunked(parts, 8):
        assert parts._attn_implementation == "sdpa"
    config._attn_implementation = "eager"  # (eager adds its mask: its own attention, unchunked)
    try:
        with chunked(config, 8):
            assert config._attn_implementation == "eager"
    finally:
        config._attn_implementation = "sdpa"


@pytest.mark.parametrize("value", ["-1", "some", 1.5])
def test_a_bad_chunk_is_refused(model, value: Any) -> None:
    llama, tokenizer = model
    with pytest.raises(ValueError, match="attention_chunk=.*: use a whole number of positions, 0 or more"):
        PrefixReuseHFLM(pretrained=llama, tokenizer=tokenizer, batch_size=4, attention_chunk=value)
