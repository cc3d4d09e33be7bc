"""`biasmonkey-hf` tokenises a call's requests in batches (batch_encode.py): the same tokens as
lm-eval's HF backend one call at a time."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from transformers import AutoTokenizer

from biasmonkey.harness_ext.lm_eval.backends import batch_encode
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM


def tokens_sent(lm: HFLM, requests: list[Instance]) -> tuple[list, list]:
    """The token-level requests that `lm.loglikelihood` hands to its scoring, and its answers."""
    sent: list = []
    score = lm._loglikelihood_tokens
    lm._loglikelihood_tokens = lambda reqs, **kwargs: (sent.extend(reqs), score(reqs, **kwargs))[1]
    try:
        return sent, lm.loglikelihood(requests, disable_tqdm=True)
    finally:
        del lm._loglikelihood_tokens


@pytest.mark.parametrize("add_bos_token", [False, True])
def test_batched_tokenising_sends_lm_evals_tokens(tiny_model: Path, add_bos_token: bool) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model, add_bos_token=add_bos_token)
    bos = tokenizer.decode(tokenizer.bos_token_id)
    pairs = [
        ("Question: is the sky blue? Answer:", " yes"),
        ("Question: is the sky blue? Answer: ", "no"),  # trailing space: lm-eval moves it to the continuation
        ("", " no"),  # no context: lm-eval's prefix token
        ("Ünïcödé  and\ttabs", " x y"),
        (f"{bos}Is it?", " yes"),  # starts with the BOS text
        ("Question: is the sky blue? Answer:", " yes"),  # a repeat
    ]
    requests = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    common = {"pretrained": str(tiny_model), "tokenizer": tokenizer, "device": "cpu", "batch_size": 2}
    stock, ours = HFLM(**common), PrefixReuseHFLM(**common)
    one_at_a_time = []
    encode = tokenizer.encode
    tokenizer.encode = lambda *args, **kwargs: (one_at_a_time.append(args), encode(*args, **kwargs))[1]
    sent, answers = tokens_sent(ours, requests)
    del tokenizer.encode
    expected_sent, expected = tokens_sent(stock, requests)
    assert sent == expected_sent
    assert [g for _, g in answers] == [g for _, g in expected]
    assert [x for x, _ in answers] == pytest.approx([x for x, _ in expected], abs=1e-4)
    assert one_at_a_time == []  # every string went in a batch
    assert ours._encoded == {}  # the encodings are dropped after the call


def test_batches_are_encoded_in_threads_as_one_batch(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    strings = [f"Question {i}: is {'very ' * (i % 7)}much the same? Answer:" for i in range(203)]
    threads: list[str] = []

    def recording(texts: list[str], **kwargs: object) -> dict:
        threads.append(threading.current_thread().name)
        return tokenizer(texts, **kwargs)

    monkeypatch.setattr(batch_encode, "cores", lambda: 4)
    ids = batch_encode.encode_in_threads(recording, strings, {"add_special_tokens": False}, batch=16)
    assert ids == tokenizer(strings, add_special_tokens=False)["input_ids"]
    assert len(threads) == 13  # ceil(203 / 16) batches, the first on the calling thread
    assert threads[0] == threading.current_thread().name
    assert all(t.startswith("biasmonkey-encode") for t in threads[1:])
    assert batch_encode.encode_in_threads(recording, [], {}, batch=16) == []


def test_the_prefix_token_is_read_once_per_call(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    lm = PrefixReuseHFLM(pretrained=str(tiny_model), tokenizer=tokenizer, device="cpu", batch_size=2)
    reads = []
    stock = HFLM.prefix_token_id.fget
    monkeypatch.setattr(HFLM, "prefix_token_id", property(lambda self: (reads.append(1), stock(self))[1]))
    requests = [Instance("loglikelihood", {}, ("", f" word{i}"), i) for i in range(5)]
    sent, _ = tokens_sent(lm, requests)
    assert len(reads) == 1
    assert {tuple(context) for _, context, _ in sent} == {(stock(lm),)}
    assert "_prefix_id" not in lm.__dict__  # read afresh by the next call
    assert lm.prefix_token_id == stock(lm) and len(reads) == 2
