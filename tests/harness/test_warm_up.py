"""`biasmonkey-hf`'s warm-up (harness_ext/lm_eval/backends/warm_up.py): forwards like a call's, in a
thread started when the model is made, that change no answer, counter or cache."""

from __future__ import annotations

import copy
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch
from lm_eval.api.model import CacheHook
from tiny_model import comb_requests
from transformers import AutoModelForCausalLM, AutoTokenizer

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM
from biasmonkey.harness_ext.lm_eval.backends.prompt_trie import ROOT, PromptTrie, plan_rows
from biasmonkey.harness_ext.lm_eval.backends.warm_up import warm_up_requests

COUNTERS = ("distinct_contexts", "trie_tokens", "computed_tokens", "padding_tokens", "forward_passes", "rows")


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> tuple[Any, Any]:
    model = AutoModelForCausalLM.from_pretrained(tiny_model, attn_implementation="sdpa").eval()
    return model, AutoTokenizer.from_pretrained(tiny_model)


class Recorder(CacheHook):
    def __init__(self) -> None:
        super().__init__(None)
        self.entries: list[Any] = []

    def add_partial(self, attr: str, req: Any, res: Any) -> None:
        self.entries.append((attr, req, res))


@pytest.mark.parametrize("pack_rows", ["true", "false"])
def test_warm_up_runs_forwards_like_a_call_s_in_its_own_thread(tiny, pack_rows: str) -> None:
    model, tokenizer = tiny
    forwards: list[tuple[str, tuple[int, ...], int]] = []  # (thread, input shape, cached positions)

    def record(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        cache = kwargs.get("cache", kwargs.get("past_key_values"))
        cached = 0 if cache is None else cache.get_seq_length()
        forwards.append((threading.current_thread().name, tuple(kwargs["input_ids"].shape), cached))

    handle = model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        common = {
            "pretrained": model,
            "tokenizer": tokenizer,
            "batch_size": 4,
            "row_tokens": 16,
            "pack_rows": pack_rows,
        }
        lm = PrefixReuseHFLM(**common, warm_up="true")
        hook = Recorder()
        lm.set_cache_hook(hook)  # as CachingLM does while the warm-up may still run
        lm.settle_warm_up()
        warm_up = list(forwards)
        # 4 contexts: a shared prefix of 8 tokens, 8 tokens each of their own, continuations [0] and
        # [1, 2] (9 nodes a branch). Row 1: the prefix and 8 nodes of one branch (a kept spine,
        # nothing cached); then over the cached prefix (8 positions) the other 3 branches, and over
        # 16 that branch's last node: packed beside one of the others, else alone (4 rows of 9
        # positions would pad the 28 real ones by more than 10 %).
        after = [((3, 10), 16)] if pack_rows == "true" else [((3, 9), 8), ((1, 1), 16)]
        assert warm_up == [("biasmonkey-hf warm-up", shape, cached) for shape, cached in [((1, 16), 0), *after]]
        assert all(getattr(lm, name) == 0 for name in COUNTERS) and lm.peak_cached_tokens == 0
        assert hook.entries == []

        forwards.clear()
        answers = lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
        assert {name for name, _, _ in forwards} == {threading.current_thread().name}
        cold = PrefixReuseHFLM(**common, warm_up="false")
        assert cold._warm_up is None
        assert cold._loglikelihood_tokens(comb_requests(), disable_tqdm=True) == answers
        assert [getattr(lm, name) for name in COUNTERS] == [getattr(cold, name) for name in COUNTERS]
    finally:
        handle.remove()


def test_warm_up_without_prefix_sharing_runs_whole_contexts(tiny) -> None:
    model, tokenizer = tiny
    shapes: list[tuple[int, ...]] = []
    handle = model.register_forward_pre_hook(
        lambda m, a, k: shapes.append(tuple(k["input_ids"].shape)), with_kwargs=True
    )
    try:
        lm = PrefixReuseHFLM(
            pretrained=model, tokenizer=tokenizer, batch_size=4, row_tokens=16, prefix_sharing=False, warm_up="true"
        )
        lm.settle_warm_up()
    finally:
        handle.remove()
    assert shapes == [(4, 16)] and lm.forward_passes == 0  # 4 contexts of 8 + 8 tokens, one pass


def test_warm_up_is_for_cuda_by_default(tiny) -> None:
    model, tokenizer = tiny
    common = {"pretrained": model, "tokenizer": tokenizer, "batch_size": 4}
    assert PrefixReuseHFLM(**common)._warm_up is None  # CPU: no kernels loaded at a first launch
    assert PrefixReuseHFLM(**common, warm_up="no")._warm_up is None
    with pytest.raises(ValueError, match="warm_up='sometimes': use auto, true or false"):
        PrefixReuseHFLM(**common, warm_up="sometimes")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_warm_up_runs_by_default_on_cuda_and_changes_no_answer(tiny) -> None:
    model, tokenizer = tiny
    common = {"pretrained": copy.deepcopy(model).to("cuda"), "tokenizer": tokenizer, "batch_size": 4, "row_tokens": 16}
    lm = PrefixReuseHFLM(**common)
    assert lm._warm_up is not None
    answers = lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
    assert (
        PrefixReuseHFLM(**common, warm_up="false")._loglikelihood_tokens(comb_requests(), disable_tqdm=True) == answers
    )


def test_a_failed_warm_up_is_logged_and_the_call_goes_on(tiny, caplog: pytest.LogCaptureFixture) -> None:
    model, tokenizer = tiny

    class Failing(PrefixReuseHFLM):
        def _warm_up_forwards(self) -> None:
            raise RuntimeError("out of memory (as a test)")

    with caplog.at_level(logging.WARNING):
        lm = Failing(pretrained=model, tokenizer=tokenizer, batch_size=4, row_tokens=16, warm_up="true")
        answers = lm._loglikelihood_tokens(comb_requests(), disable_tqdm=True)
    assert len(answers) == len(comb_requests()) and lm.forward_passes > 0
    assert (
        "biasmonkey-hf warm-up failed (RuntimeError: out of memory (as a test)); the first call goes on" in caplog.text
    )


@pytest.mark.parametrize(
    "row_tokens, rows, vocabulary, limit",
    [(512, 32, 49152, 8192), (512, 8, 50257, 600), (16, 4, 3, 2048), (4, 2, 100, 2048)],
)
def test_warm_up_requests_plan_a_kept_prefix_then_a_full_forward(row_tokens, rows, vocabulary, limit) -> None:
    contexts, groups = warm_up_requests(row_tokens, rows, vocabulary, True, limit)
    assert len(contexts) == min(rows, vocabulary) and len(set(contexts)) == len(contexts)
    assert len(groups) == 2 * len(contexts) and sorted(i for ids in groups.values() for i in ids) == list(
        range(len(groups))
    )
    assert all(len(contexts[n]) + len(cont) - 1 <= limit and max(contexts[n] + cont) < vocabulary for n, cont in groups)
    trie = PromptTrie()
    for number, cont in groups:
        trie.insert(contexts[number] + cont[:-1])
    planned = plan_rows(trie, row_tokens)
    first = planned[0]
    assert first.anchor == ROOT and first.spines and len(first.nodes) == row_tokens  # the kept prefix, a full row
    assert all(row.anchor != ROOT for row in planned[1:])  # the rest over cached prefixes


def test_a_process_that_never_calls_the_model_waits_for_the_warm_up_at_exit(tiny_model: Path, tmp_path: Path) -> None:
    """The warm-up thread is waited for at exit, not stopped midway (on a device, mid-forward)."""
    mark = tmp_path / "warmed"
    code = (
        "import time\n"
        "from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM\n"
        "class Slow(PrefixReuseHFLM):\n"
        "    def _warm_up_forwards(self):\n"
        "        time.sleep(1)\n"
        "        super()._warm_up_forwards()\n"
        f"        open({str(mark)!r}, 'w').write(str(self.forward_passes))\n"
        f"Slow(pretrained={str(tiny_model)!r}, device='cpu', batch_size=4, row_tokens=16, warm_up='true')\n"
        "print('made')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "made", done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert mark.read_text() == "0"  # finished, its counters zeroed
