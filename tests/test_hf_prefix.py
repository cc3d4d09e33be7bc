"""`--model biasmonkey-hf` (harness_ext/lm_eval/backends/hf_prefix.py) against stock `--model hf`.

Both backends run the same tasks of each suite on the same model: per-request log-likelihoods
agree to 1e-4 and is_greedy exactly, so do the per-document records and the reported results;
biasmonkey-hf runs one prefix sequence per distinct prompt (counted with a forward hook).
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from lm_eval import simple_evaluate
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import ContinuationTrie, PrefixReuseHFLM
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import family_of

REPO = Path(__file__).resolve().parent.parent
COGNITIVE_FIXTURE = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
TOLERANCE = 1e-4

# suite -> (tasks, run metadata, documents per task)
SUITES: dict[str, tuple[list[str], dict[str, Any], int]] = {
    "response_bias": (["biasmonkey_odd_even", "biasmonkey_response_order"], {"mode": "exact"}, 3),
    "yesno": (["biasmonkey_yesno_comps"], {}, 4),
    "cognitive": (
        # 11 options (anchoring, hindsight bias) and 7 (information bias)
        [
            "biasmonkey_cognitive_anchoring",
            "biasmonkey_cognitive_hindsight_bias",
            "biasmonkey_cognitive_information_bias",
        ],
        {"data_path": str(COGNITIVE_FIXTURE), "mode": "exact"},
        2,
    ),
}


class RowCounter:
    """Counts batch rows through the model's forward: prefix rows (no cached keys/values) and
    rows run over a cache."""

    def __init__(self, model: torch.nn.Module):
        self.prefix = self.cached = 0
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        rows = int((args[0] if args else kwargs["input_ids"]).shape[0])
        if kwargs.get("past_key_values") is None:
            self.prefix += rows
        else:
            self.cached += rows


@functools.cache
def task_manager(suite: str) -> TaskManager:
    """One per suite (indexing the task folders takes seconds)."""
    return TaskManager(include_path=str(REPO / "tasks"), metadata=SUITES[suite][1])


def evaluate(lm: HFLM, suite: str) -> tuple[dict, RowCounter]:
    tasks, _, limit = SUITES[suite]
    counter = RowCounter(lm.model)
    try:
        manager = task_manager(suite)
        results = simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True)
    finally:
        counter.handle.remove()
    return results, counter


def samples_by_doc(results: dict, task: str) -> list[dict]:
    return sorted(results["samples"][task], key=lambda s: s["doc_id"])


def request_args(sample: dict) -> list[tuple]:
    """A sample's request arguments: a list in memory, {"gen_args_0": {"arg_0": …}} in a samples file."""
    args = sample["arguments"]
    return [tuple(a.values()) for a in args.values()] if isinstance(args, dict) else [tuple(a) for a in args]


def distinct_contexts(results: dict) -> set[str]:
    return {arg[0] for samples in results["samples"].values() for s in samples for arg in request_args(s)}


def answer(response: list | tuple) -> tuple[float, bool]:
    """(log-likelihood, is_greedy) of a logged response (a samples file holds them as strings)."""
    ll, greedy = response
    return float(ll), greedy if isinstance(greedy, bool) else greedy == "True"


def approx_equal(a: Any, b: Any, tol: float) -> bool:
    """Numbers to `tol` (relative or absolute; NaN equals NaN), everything else exactly, recursively."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(approx_equal(a[k], b[k], tol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(approx_equal(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)):
            return a == b
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return a == b


def assert_same_runs(stock: dict, prefix: dict, tol: float = TOLERANCE) -> None:
    """Same requests, log-likelihoods to `tol`, is_greedy, per-document records and results."""
    assert stock["samples"].keys() == prefix["samples"].keys()
    for task in stock["samples"]:
        family = family_of(base_task_name(task))
        for a, b in zip(samples_by_doc(stock, task), samples_by_doc(prefix, task), strict=True):
            assert a["doc_id"] == b["doc_id"] and request_args(a) == request_args(b)
            lls_a, lls_b = ([answer(r) for r in s["filtered_resps"]] for s in (a, b))
            assert [g for _, g in lls_a] == [g for _, g in lls_b], (task, a["doc_id"])
            assert max(abs(x - y) for (x, _), (y, _) in zip(lls_a, lls_b)) <= tol, (task, a["doc_id"])
            records = [family.from_lm_eval(s["doc"], s["filtered_resps"]).as_dict() for s in (a, b)]
            assert approx_equal(*records, tol), (task, a["doc_id"])
        assert approx_equal(stock["results"][task], prefix["results"][task], tol), task


# ---------------------------------------------------------------------------- tiny model, every suite


@pytest.fixture(scope="module")
def tiny_lms(tiny_model: Path) -> tuple[HFLM, PrefixReuseHFLM]:
    args = {"pretrained": str(tiny_model), "device": "cpu", "batch_size": 4, "dtype": "float32"}
    return HFLM(**args), PrefixReuseHFLM(**args)


@pytest.fixture(scope="module", params=list(SUITES))
def suite_runs(request: pytest.FixtureRequest, tiny_lms, data_dir: Path):
    stock_lm, prefix_lm = tiny_lms
    stock, stock_rows = evaluate(stock_lm, request.param)
    prefix_lm.reset_counters()
    received: list[tuple] = []  # the token-level requests lm-eval hands the backend
    score = prefix_lm._loglikelihood_tokens
    prefix_lm._loglikelihood_tokens = lambda requests, **kw: received.extend(requests) or score(requests, **kw)
    try:
        prefix, prefix_rows = evaluate(prefix_lm, request.param)
    finally:
        del prefix_lm._loglikelihood_tokens
    return request.param, stock, prefix, stock_rows, prefix_rows, prefix_lm, received


def test_same_loglikelihoods_records_and_results(suite_runs) -> None:
    _, stock, prefix, *_ = suite_runs
    assert_same_runs(stock, prefix)


def test_one_prefix_sequence_per_distinct_prompt(suite_runs) -> None:
    suite, stock, prefix, stock_rows, prefix_rows, lm, received = suite_runs
    contexts = distinct_contexts(prefix)
    assert len({tuple(ctx) for _, ctx, _ in received}) == len(contexts)
    assert prefix_rows.prefix == lm.prefix_sequences == len(contexts)
    # a second pass (one trie row) only for contexts with a continuation of several tokens
    deeper = {tuple(ctx) for _, ctx, cont in received if len(cont) > 1}
    assert prefix_rows.cached == lm.continuation_rows == len(deeper)
    assert lm.fallback_requests == 0
    if suite == "cognitive":
        # a test = a control and a treatment prompt, each with multi-token labels "Option N:"
        n_docs = sum(len(s) for s in prefix["samples"].values())
        assert len(contexts) == len(deeper) == 2 * n_docs
        assert stock_rows.prefix == len(received)  # stock: one sequence per label
    if suite == "response_bias":
        assert not deeper  # one-token letters
        assert stock_rows.prefix == len(contexts)  # stock's logits cache already manages this
    if suite == "yesno":
        assert "" in contexts  # the no-context requests: the prefix token alone, run once


def test_launcher_runs_biasmonkey_hf(tiny_model: Path, tiny_lms, tmp_path: Path) -> None:
    """`python -m biasmonkey.harness_ext.lm_eval --model biasmonkey-hf` gives stock hf's numbers."""
    tasks, metadata, limit = SUITES["cognitive"]
    cmd = [
        sys.executable,
        "-m",
        "biasmonkey.harness_ext.lm_eval",
        "--model",
        "biasmonkey-hf",
        "--model_args",
        f"pretrained={tiny_model},dtype=float32",
        "--device",
        "cpu",
        "--batch_size",
        "4",
        "--include_path",
        str(REPO / "tasks"),
        "--tasks",
        ",".join(tasks),
        "--metadata",
        json.dumps(metadata),
        "--limit",
        str(limit),
        "--output_path",
        str(tmp_path / "out"),
        "--log_samples",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    assert results["config"]["model"] == "biasmonkey-hf"
    logged = {p.name.split("_20")[0].removeprefix("samples_"): p for p in (tmp_path / "out").rglob("samples_*.jsonl")}
    results["samples"] = {task: [json.loads(line) for line in logged[task].read_text().splitlines()] for task in tasks}
    stock, _ = evaluate(tiny_lms[0], "cognitive")
    assert_same_runs(stock, results)


# ---------------------------------------------------------------------------- request-level behaviour


def greedy_tokens(lm: HFLM, context: list[int], n: int) -> list[int]:
    """The model's greedy continuation of `context`, n tokens."""
    with torch.no_grad():
        out = lm.model.generate(torch.tensor([context]), max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return out[0, len(context) :].tolist()


def synthetic_requests(lm: HFLM) -> list[tuple]:
    """Contexts of several lengths, one- and multi-token continuations sharing prefixes, greedy
    continuations, duplicated requests."""
    requests = []
    for n, length in enumerate([1, 5, 12, 30]):
        context = [(7 * n + 3 * i) % 500 + 10 for i in range(length)]
        greedy = greedy_tokens(lm, context, 3)
        conts = [greedy, greedy[:1], greedy[:2] + [11], [12, 13, 14], [12, 13, 15], [12], [16, 17]]
        requests += [((f"ctx{n}", f"cont{k}"), context, cont) for k, cont in enumerate(conts)]
    return requests + requests[:3]


def test_synthetic_requests_match_stock_and_feed_the_cache_hook(tiny_lms) -> None:
    stock_lm, lm = tiny_lms
    requests = synthetic_requests(stock_lm)
    expected = stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    stored: list[tuple] = []
    lm.cache_hook.add_partial = lambda attr, req, res: stored.append((attr, req, res))
    lm.reset_counters()
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert [g for _, g in answers] == [g for _, g in expected]
    assert any(g for _, g in expected[::7])  # the greedy continuations are greedy
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE
    assert lm.prefix_sequences == 4 and lm.continuation_rows == 4
    assert sorted((req, res) for _, req, res in stored) == sorted(zip([r[0] for r in requests], answers))
    assert {attr for attr, _, _ in stored} == {"loglikelihood"}


def test_continuation_trie_shares_prefixes() -> None:
    labels = [(1, 2, 3, 9), (1, 2, 4, 9), (1, 2, 3, 5, 9), (7,)]
    trie = ContinuationTrie.of(labels)
    assert trie.tokens == [1, 2, 3, 4, 5]  # inputs: "1", "2" shared; the last tokens are never inputs
    assert trie.positions((1, 2, 3, 5, 9)) == [0, 1, 2, 3, 5]
    assert trie.path(4) == [4, 2, 1, 0]
    assert trie.positions((7,)) == [0]


def test_too_long_requests_fall_back_to_stock(tiny_model: Path) -> None:
    """A request whose context + continuation exceed max_length is truncated as stock lm-eval does."""
    args = {"pretrained": str(tiny_model), "device": "cpu", "batch_size": 3, "dtype": "float32", "max_length": 16}
    stock_lm, lm = HFLM(**args), PrefixReuseHFLM(**args)
    requests = [
        (("a", "x"), list(range(20, 32)), [5, 6, 7, 8]),  # 12 + 4 - 1 = 15 tokens seen: fits
        (("b", "x"), list(range(20, 33)), [5, 6, 7, 8, 9]),  # 17 seen: stock truncates
        (("c", "x"), list(range(40, 70)), [5]),  # a context beyond max_length
        (("d", "x"), [3], [5, 6]),
    ]
    expected = stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert lm.fallback_requests == 2 and lm.prefix_sequences == 2
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE

    # loglikelihood_rolling windows take the stock path too
    text = "How much do you agree with the following statement? " * 4
    rolling = [Instance(request_type="loglikelihood_rolling", doc={}, arguments=(text,), idx=0)]
    assert lm.loglikelihood_rolling(rolling, disable_tqdm=True) == pytest.approx(
        stock_lm.loglikelihood_rolling(rolling, disable_tqdm=True), abs=TOLERANCE
    )


# ---------------------------------------------------------------------------- SmolLM2


@pytest.mark.slow
def test_smollm2_matches_stock_hf_on_every_suite(data_dir: Path) -> None:
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    stock_lm = HFLM(pretrained=str(ensure_default_model()), device="cpu", batch_size=8, dtype="float32")
    lm = PrefixReuseHFLM(pretrained=stock_lm.model, tokenizer=stock_lm.tokenizer, device="cpu", batch_size=8)
    for suite in SUITES:
        lm.reset_counters()
        prefix, _ = evaluate(lm, suite)
        stock, _ = evaluate(stock_lm, suite)
        assert_same_runs(stock, prefix)
        assert lm.prefix_sequences == len(distinct_contexts(prefix))
