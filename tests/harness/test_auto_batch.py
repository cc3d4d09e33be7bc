"""`batch_size=auto` in `biasmonkey-hf` (harness_ext/lm_eval/backends/auto_batch.py): rows per forward
from the model's shape and the free memory, once per call, with no probe forward."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from lm_eval.models.huggingface import HFLM

from biasmonkey.harness_ext.lm_eval.backends import auto_batch
from biasmonkey.harness_ext.lm_eval.backends.auto_batch import auto_rows, row_bytes
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM

# hidden 8, 2 heads of 4, 1 key/value head, 3 layers, MLP 16, vocabulary 10
CONFIG = SimpleNamespace(
    hidden_size=8,
    num_attention_heads=2,
    num_key_value_heads=1,
    num_hidden_layers=3,
    intermediate_size=16,
    vocab_size=10,
)


def test_row_bytes_by_hand() -> None:
    # bfloat16 (2 bytes), a row of 5 positions over 3 cached ones, 2 scored:
    # kept keys/values per position: 2 * 3 layers * 1 head * 4 dims * 2 bytes = 48, over 3 + 5 positions = 384;
    # activations per position: (4*8 + (2 + 2*1)*4 + 3*16) * 2 = (32 + 16 + 48) * 2 = 192, twice = 384;
    # mask per position: (3 + 5) * (1 + 2) = 24; so 5 * (384 + 24) = 2040;
    # logits: 2 scored * 10 * (2 + 4 + 4) = 200.
    assert row_bytes(CONFIG, torch.bfloat16, width=5, depth=3, scored=2) == 384 + 2040 + 200
    # float32 (4 bytes), no cached prefix, 1 scored: kept 96 * 4 = 384; activations 96 * 4 * 2 = 768;
    # mask 4 * 5 = 20; logits 10 * 12 = 120
    assert row_bytes(CONFIG, torch.float32, width=4, depth=0, scored=1) == 384 + 4 * (768 + 20) + 120


def test_auto_rows_fits_half_the_free_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    one = row_bytes(CONFIG, torch.float32, width=4, depth=0, scored=1)  # 3656
    monkeypatch.setattr(auto_batch, "free_memory", lambda device: 10 * one)
    assert auto_rows(CONFIG, torch.float32, torch.device("cpu"), 4, 1, most=64) == 5  # half of 10 rows
    assert auto_rows(CONFIG, torch.float32, torch.device("cpu"), 4, 1, most=3) == 3  # at most max_batch_size
    monkeypatch.setattr(auto_batch, "free_memory", lambda device: one // 3)
    assert auto_rows(CONFIG, torch.float32, torch.device("cpu"), 4, 1, most=64) == 1  # at least one row


def test_free_memory_on_cpu_is_positive() -> None:
    assert auto_batch.free_memory(torch.device("cpu")) > 0


@pytest.mark.parametrize("batch_size", ["auto", "auto:4"])
def test_auto_matches_a_fixed_batch_without_lm_eval_probe(
    tiny_model: Path, batch_size: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fixed = PrefixReuseHFLM(pretrained=str(tiny_model), device="cpu", batch_size=4, dtype="float32", row_tokens=16)
    auto = PrefixReuseHFLM(
        pretrained=fixed.model, tokenizer=fixed.tokenizer, batch_size=batch_size, max_batch_size=8, row_tokens=16
    )

    def probe(*args, **kwargs):
        raise AssertionError("lm-eval's batch-size probe ran")

    monkeypatch.setattr(HFLM, "_detect_batch_size", probe)
    head = list(range(20, 50))
    requests = [((str(i), "c"), head + [60 + i, 70 + i], [5 + i % 3]) for i in range(40)]
    requests += [((str(i), "m"), head[:10] + [80 + i], [7, 8]) for i in range(10)]  # multi-token labels
    expected = fixed._loglikelihood_tokens(requests, disable_tqdm=True)
    with caplog.at_level("INFO"):
        answers = auto._loglikelihood_tokens(requests, disable_tqdm=True)
    assert "batch_size=auto: 8 rows of 16 positions per forward" in caplog.text  # max_batch_size on a roomy CPU
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= 1e-5
    assert auto.computed_tokens == auto.trie_tokens and auto.fallback_requests == 0
