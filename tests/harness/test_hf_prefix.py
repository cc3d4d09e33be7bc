"""`--model biasmonkey-hf` (harness_ext/lm_eval/backends/hf_prefix.py) against stock `--model hf`.

Both backends run the same tasks of each suite on the same model: per-request log-likelihoods
agree to 1e-4 and is_greedy exactly, so do the per-document records and the reported results;
biasmonkey-hf runs each node of the prompts' prefix tree through the model once (its counters,
checked against `trie_token_count` and a forward hook).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import math
import random
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
from tiny_model import tiny_llama

from biasmonkey.harness_ext.lm_eval.backends import hf_prefix
from biasmonkey.harness_ext.lm_eval.backends.context import ContextTooLong
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import DEFAULT_ROW_TOKENS, PrefixReuseHFLM, cache_argument
from biasmonkey.harness_ext.lm_eval.backends.prompt_trie import (
    ROOT,
    PromptTrie,
    RowPlanner,
    plan_rows,
    trie_token_count,
)
from biasmonkey.tasks.contract import base_task_name
from biasmonkey.tasks.families import family_of

REPO = Path(__file__).resolve().parents[2]
COGNITIVE_FIXTURE = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
TOLERANCE = 1e-4
# Task results (in percentage points, CIs from t quantiles: with 3 pairs t(0.975, 2) = 4.3) amplify
# float32 noise in the log-likelihoods: SmolLM2's odd/even delta_ci_low moved by 5.2e-4 between
# stock hf and biasmonkey-hf on an AVX-512 machine, with every log-likelihood within 1e-4.
RESULTS_TOLERANCE = 1e-3

# suite -> (tasks, run metadata, documents per task)
SUITES: dict[str, tuple[list[str], dict[str, Any], int]] = {
    "response_bias": (
        ["biasmonkey_acquiescence", "biasmonkey_odd_even", "biasmonkey_response_order"],
        {"mode": "exact"},
        3,
    ),
    "yesno": (["biasmonkey_yesno_comps"], {}, 4),
    "yesno_fewshot": (["biasmonkey_yesno_comps_fewshot"], {}, 4),
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
    "answer_position": (
        ["biasmonkey_answer_position_abstract_algebra", "biasmonkey_answer_position_anatomy_fewshot"],
        {},
        3,
    ),
}


class RowCounter:
    """Counts the model's forward calls, their batch rows, and the cache argument names used."""

    def __init__(self, model: torch.nn.Module):
        self.calls = self.rows = 0
        self.cache_names: set[str] = set()
        self.handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        self.calls += 1
        self.rows += int((args[0] if args else kwargs["input_ids"]).shape[0])
        self.cache_names |= {name for name in ("cache", "past_key_values") if kwargs.get(name) is not None}


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
    """Same requests, log-likelihoods to `tol`, is_greedy, per-document records, and results (to
    RESULTS_TOLERANCE at least)."""
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
        assert approx_equal(stock["results"][task], prefix["results"][task], max(tol, RESULTS_TOLERANCE)), task


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


def test_each_prefix_tree_token_computed_once(suite_runs) -> None:
    suite, stock, prefix, stock_rows, prefix_rows, lm, received = suite_runs
    contexts = {tuple(ctx) for _, ctx, _ in received}
    assert len(contexts) == len(distinct_contexts(prefix)) == lm.distinct_contexts
    assert lm.context_tokens == sum(map(len, contexts))
    assert lm.computed_tokens == lm.trie_tokens == trie_token_count(contexts)
    assert lm.computed_tokens / lm.trie_tokens <= 1.1
    # continuation tokens beyond the contexts: the distinct inputs of the multi-token continuations
    extra = PromptTrie()
    for _, ctx, cont in received:
        extra.insert(ctx + cont[:-1])
    assert lm.continuation_tokens == len(extra) - lm.trie_tokens
    assert lm.fallback_requests == 0
    assert prefix_rows.calls == lm.forward_passes and prefix_rows.rows == lm.rows
    assert prefix_rows.cache_names <= {cache_argument(lm.model)}
    if suite == "cognitive":
        assert stock_rows.rows == len(received)  # stock: one sequence per label
    if suite in ("yesno", "yesno_fewshot"):
        assert "" in distinct_contexts(prefix)  # the no-context requests: the prefix token alone
    if suite == "yesno_fewshot":
        assert lm.context_tokens > 2 * lm.trie_tokens  # the shared examples, computed once


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
    assert lm.distinct_contexts == 4 and lm.computed_tokens == lm.trie_tokens == 1 + 5 + 12 + 30  # no shared prefix
    assert sorted((req, res) for _, req, res in stored) == sorted(zip([r[0] for r in requests], answers))
    assert {attr for attr, _, _ in stored} == {"loglikelihood"}


def test_contexts_are_told_apart_by_tokens_whatever_their_objects(tiny_lms) -> None:
    """Requests of one context share its list (as lm-eval's tokenising gives them) or each hold a
    copy, a tuple, or a list that equals another context's: the same groups and answers."""
    stock_lm, lm = tiny_lms
    shared = synthetic_requests(stock_lm)
    copied = [(key, list(context) if i % 2 else tuple(context), cont) for i, (key, context, cont) in enumerate(shared)]
    answers = {}
    for name, requests in (("shared", shared), ("copied", copied)):
        lm.reset_counters()
        answers[name] = lm._loglikelihood_tokens(requests, disable_tqdm=True)
        assert lm.distinct_contexts == 4
    assert answers["shared"] == answers["copied"]


def tree_requests(seed: int = 0) -> list[tuple]:
    """Contexts branching at many depths off a shared head (a comb), with variants, and one- and
    multi-token continuations sharing prefixes."""
    rng = random.Random(seed)
    head = [rng.randrange(10, 400) for _ in range(30)]
    requests = []
    for _ in range(25):
        middle = head[: rng.randrange(0, 31)] + [rng.randrange(10, 400) for _ in range(rng.randrange(0, 25))]
        for _ in range(rng.randrange(1, 4)):
            context = middle + [rng.randrange(10, 400) for _ in range(rng.randrange(1, 6))]
            for cont in ([5], [6], [7, 8, 9], [7, 8, 10], [7, 11]):
                requests.append(((str(context), str(cont)), context, cont))
    return requests


@pytest.mark.parametrize(
    "settings",
    [
        {"row_tokens": 16, "prefix_cache_tokens": 0},  # deep anchors, one kept path at a time
        {"row_tokens": 8, "prefix_cache_tokens": 40},
        {"row_tokens": 2},  # every other node an anchor
        {},
        {"prefix_sharing": False},  # one pass per context; multi-token continuations to stock
        {"row_tokens": 16, "prefix_cache_tokens": 0, "pack_rows": True},  # rows side by side in a batch row
        {"row_tokens": 8, "prefix_cache_tokens": 40, "pack_rows": "true"},
        {"row_tokens": 2, "pack_rows": True},
        {"pack_rows": True},
    ],
    ids=[
        "rows16-nocache",
        "rows8-cache40",
        "rows2",
        "defaults",
        "no-sharing",
        "packed16",
        "packed8",
        "packed2",
        "packed",
    ],
)
def test_tree_requests_match_stock_under_any_settings(tiny_lms, settings: dict) -> None:
    stock_lm, _ = tiny_lms
    lm = PrefixReuseHFLM(pretrained=stock_lm.model, tokenizer=stock_lm.tokenizer, batch_size=4, **settings)
    requests = tree_requests()
    expected = stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE
    contexts = {tuple(ctx) for _, ctx, _ in requests}
    assert lm.trie_tokens == trie_token_count(contexts) < lm.context_tokens
    if settings.get("prefix_sharing", True):
        assert lm.computed_tokens == lm.trie_tokens and lm.fallback_requests == 0
        # beyond the limit: one batch's kept spines (4 rows), and the path of the deepest row
        limit = settings.get("prefix_cache_tokens", 16384) + 4 * settings.get("row_tokens", DEFAULT_ROW_TOKENS)
        assert lm.peak_cached_tokens <= limit + max(map(len, contexts))
        # each forward pads by at most 10% of its real positions, or to at most row_tokens positions
        real = lm.computed_tokens + lm.continuation_tokens
        assert lm.padding_tokens <= 0.1 * real + lm.row_tokens * lm.forward_passes
    else:
        assert lm.computed_tokens == lm.context_tokens and lm.fallback_requests == 3 * len(contexts)


@pytest.mark.parametrize("row_tokens", [16, 64])
def test_packed_rows_take_fewer_forwards_for_the_same_answers(
    tiny_lms, row_tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packing several planned rows into one batch row over the union of their cached paths: the
    same log-likelihoods in fewer forwards of fewer batch rows, each tree node still computed once.
    Packed, the last rows go with the forward before them rather than take one of their own: as
    few forwards as with no limit on padding (a forward's fixed cost counts where rows are packed)."""
    stock_lm, _ = tiny_lms
    requests = tree_requests(1)

    def run(pack: bool) -> tuple[PrefixReuseHFLM, list]:
        lm = PrefixReuseHFLM(
            pretrained=stock_lm.model, tokenizer=stock_lm.tokenizer, batch_size=4, row_tokens=row_tokens, pack_rows=pack
        )
        return lm, lm._loglikelihood_tokens(requests, disable_tqdm=True)

    (single, expected), (packed, answers) = run(False), run(True)
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE
    assert packed.computed_tokens == single.computed_tokens == packed.trie_tokens
    assert packed.forward_passes < single.forward_passes and packed.rows < single.rows
    monkeypatch.setattr(hf_prefix, "PADDING_SLACK", math.inf)
    assert run(True)[0].forward_passes == packed.forward_passes


def test_pack_rows_defaults_to_accelerators_only(tiny_lms) -> None:
    stock_lm, _ = tiny_lms
    common = {"pretrained": stock_lm.model, "tokenizer": stock_lm.tokenizer, "batch_size": 4}
    assert PrefixReuseHFLM(**common).pack_rows is False  # CPU: time follows the positions attended
    assert PrefixReuseHFLM(**common, pack_rows="yes").pack_rows is True
    with pytest.raises(ValueError, match="pack_rows='sometimes': use auto, true or false"):
        PrefixReuseHFLM(**common, pack_rows="sometimes")
    with pytest.raises(ValueError, match="prefix_sharing='often': use true or false"):
        PrefixReuseHFLM(**common, prefix_sharing="often")


@pytest.mark.parametrize(
    ("argument", "value", "least"),
    [
        ("row_tokens", "0", 1),
        ("row_tokens", "wide", 1),
        ("prefix_cache_tokens", "-5", 0),
        ("prefix_cache_tokens", 2.5, 0),
    ],
)
def test_bad_position_counts_are_refused_by_name(tiny_lms, argument: str, value: object, least: int) -> None:
    stock_lm, _ = tiny_lms
    common = {"pretrained": stock_lm.model, "tokenizer": stock_lm.tokenizer, "batch_size": 4}
    with pytest.raises(ValueError, match=f"{argument}={value!r}: use a whole number of positions, {least} or more"):
        PrefixReuseHFLM(**common, **{argument: value})
    assert PrefixReuseHFLM(**common, **{argument: " 7 "}).__dict__[argument] == 7


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_matches_stock_on_cuda(tiny_model: Path) -> None:
    args = {"pretrained": str(tiny_model), "device": "cuda", "batch_size": 4, "dtype": "float32"}
    stock_lm, lm = HFLM(**args), PrefixReuseHFLM(**args, row_tokens=16)
    requests = tree_requests(1)
    expected = stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert lm.computed_tokens == lm.trie_tokens and lm.fallback_requests == 0
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_scores_on_a_device_other_than_the_current_one(tiny_lms) -> None:
    """On `cuda:1` while the current device is `cuda:0`: the scores are read after the copies off
    `cuda:1` (an event recorded on the current device's stream would not wait for them)."""
    tokenizer = tiny_lms[0].tokenizer
    requests = tree_requests(1)
    expected = PrefixReuseHFLM(
        pretrained=tiny_llama(tokenizer, "cpu"), tokenizer=tokenizer, batch_size=4, row_tokens=16
    )._loglikelihood_tokens(requests, disable_tqdm=True)
    lm = PrefixReuseHFLM(pretrained=tiny_llama(tokenizer, "cuda:1"), tokenizer=tokenizer, batch_size=4, row_tokens=16)
    assert torch.cuda.current_device() == 0
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert [g for _, g in answers] == [g for _, g in expected]
    assert max(abs(a - b) for (a, _), (b, _) in zip(answers, expected)) <= TOLERANCE


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("settings", [{"row_tokens": 16, "pack_rows": "true"}, {"prefix_sharing": False}])
def test_host_never_waits_for_the_device_on_cuda(tiny_lms, settings: dict) -> None:
    """Copies to the device are queued from pinned memory and scores read through events, so the
    host prepares the next forward while one runs: no synchronising operation in a whole call
    (CUDA's sync debug mode raises at the first one). Without sharing: single-token requests (the
    others go to the stock code)."""
    tokenizer = tiny_lms[0].tokenizer
    lm = PrefixReuseHFLM(pretrained=tiny_llama(tokenizer, "cuda"), tokenizer=tokenizer, batch_size=4, **settings)
    requests = [r for r in tree_requests(1) if settings.get("prefix_sharing", True) or len(r[2]) == 1]
    expected = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    torch.cuda.set_sync_debug_mode("error")
    try:
        answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert lm.forward_passes > 2 and lm.fallback_requests == 0 and answers == expected


def test_cache_goes_by_the_current_name(tiny_lms, caplog: pytest.LogCaptureFixture) -> None:
    """`cache=` where the model's forward takes it (transformers >= 5.24): no deprecation warning."""
    stock_lm, _ = tiny_lms
    lm = PrefixReuseHFLM(pretrained=stock_lm.model, tokenizer=stock_lm.tokenizer, batch_size=4, row_tokens=8)
    expected = "cache" if "cache" in inspect.signature(lm.model.forward).parameters else "past_key_values"
    assert cache_argument(lm.model) == expected
    counter = RowCounter(lm.model)
    try:
        with caplog.at_level(logging.WARNING):
            lm._loglikelihood_tokens(tree_requests(2)[:40], disable_tqdm=True)
    finally:
        counter.handle.remove()
    assert counter.cache_names == {expected}
    assert not [r for r in caplog.records if "deprecated" in r.getMessage()]


def test_counters_are_logged(tiny_lms, caplog: pytest.LogCaptureFixture) -> None:
    _, lm = tiny_lms
    lm.reset_counters()
    with caplog.at_level(logging.INFO, logger="biasmonkey.harness_ext.lm_eval.backends.hf_prefix"):
        lm._loglikelihood_tokens(tree_requests(3)[:20], disable_tqdm=True)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("biasmonkey-hf:")]
    assert f"{lm.trie_tokens} trie tokens, {lm.computed_tokens} computed (1.000 x trie)" in line


def test_trie_token_count() -> None:
    assert trie_token_count([]) == 0
    assert trie_token_count([[1, 2, 3], [1, 2, 4], [1, 2, 3], [5], [1, 2]]) == 5
    assert trie_token_count([(1, 2, 3, 4), (1, 2, 3, 4, 5)]) == 5


def test_inserting_below_a_node_builds_the_tree_of_the_whole_sequences() -> None:
    """A continuation inserted below its context's last node: the same nodes, ids, parents and depths
    as context + continuation inserted from the root (the backend inserts each context once); the
    node returned is the sequence's last, and `path_to` gives the nodes of its prefixes."""
    whole, split = PromptTrie(), PromptTrie()
    for _, context, cont in tree_requests(4):
        sequence = context + cont
        last = whole.insert(sequence)
        assert split.insert(cont, split.insert(context)) == last
        walked, kids = [], whole.roots  # the node of each prefix, step by step
        for token in sequence:
            walked.append(kids[token])
            kids = whole.children[walked[-1]]
        assert whole.path_to(last, len(sequence)) == walked and whole.path_to(last, 2) == walked[-2:]
    assert (whole.token, whole.parent, whole.depth) == (split.token, split.parent, split.depth)
    assert split.insert([], 3) == 3 and split.insert([]) == ROOT and len(split) == len(whole)
    with pytest.raises(ValueError, match="fewer than 3 nodes"):
        split.path_to(split.insert(tree_requests(4)[0][1][:2]), 3)


@pytest.mark.parametrize("row_tokens", [1, 3, 8, 64])
def test_rows_cover_the_tree_once_with_valid_masks(row_tokens: int) -> None:
    trie = PromptTrie()
    for _, context, cont in tree_requests(4):
        trie.insert(context + cont[:-1])
    rows = plan_rows(trie, row_tokens)
    assert sorted(n for row in rows for n in row.nodes) == list(range(len(trie)))
    done = {ROOT}  # anchors available: ROOT and the nodes of kept spines, in the order the rows run
    pending = list(rows)
    while pending:
        runnable = [row for row in pending if row.anchor in done]
        assert runnable  # no row waits for an anchor that no row keeps
        for row in runnable:
            assert len(row.nodes) <= row_tokens
            for i, node in enumerate(row.nodes):
                # in-row ancestors are exactly the row nodes j <= i with i < end[j]
                ancestors, n = set(), trie.parent[node]
                while n != ROOT:
                    ancestors.add(n)
                    n = trie.parent[n]
                in_row = {row.nodes[j] for j in range(i) if i < row.ends[j]}
                assert in_row == ancestors & set(row.nodes)
                # the others are the anchor's path
                outside, n = ancestors - in_row, row.anchor
                path = set()
                while n != ROOT:
                    path.add(n)
                    n = trie.parent[n]
                assert outside == path
            for spine in row.spines:
                done |= {row.nodes[i] for i in spine}
            pending.remove(row)


@pytest.mark.parametrize("row_tokens", [1, 3, 8, 64])
def test_rows_planned_when_their_anchor_is_kept_are_the_same_rows(row_tokens: int) -> None:
    """`RowPlanner.take` plans an anchor's rows when an executor asks for them (its spine kept):
    the same rows as planning all at once, per anchor in the same order."""
    trie = PromptTrie()
    for _, context, cont in tree_requests(4):
        trie.insert(context + cont[:-1])

    def per_anchor(rows: list) -> dict[int, list]:
        out: dict[int, list] = {}
        for row in rows:
            out.setdefault(row.anchor, []).append((row.nodes, row.ends, row.spines))
        return out

    planner = RowPlanner(trie, row_tokens)
    taken, ready = [], planner.take(ROOT)
    while ready:
        row = planner.rows[ready.pop(0)]
        taken.append(row)
        for spine in row.spines:
            for i in spine:
                ready += planner.take(row.nodes[i])
    assert planner.left == 0 and planner.take(ROOT) == [] and len(taken) == len(planner.rows)
    assert per_anchor(taken) == per_anchor(plan_rows(trie, row_tokens))
    eager = RowPlanner(trie, row_tokens)
    assert per_anchor(eager.plan_all()) == per_anchor(taken) and eager.left > 0
    first = eager.take(ROOT)
    assert [eager.rows[r].anchor for r in first] == [ROOT] * len(first) and eager.take(ROOT) == []


def test_too_long_requests_fall_back_to_stock(tiny_model: Path) -> None:
    """A request whose context + continuation exceed max_length is an error, or, with
    allow_truncation, truncated as stock lm-eval does and counted."""
    args = {"pretrained": str(tiny_model), "device": "cpu", "batch_size": 3, "dtype": "float32", "max_length": 16}
    stock_lm, lm = HFLM(**args), PrefixReuseHFLM(**args, allow_truncation=True)
    strict = PrefixReuseHFLM(**args)
    with pytest.raises(ContextTooLong, match="2 requests do not fit the model's context of 16 tokens"):
        strict._loglikelihood_tokens(
            [
                (("a", "x"), list(range(20, 32)), [5]),  # fits
                (("c", "x"), list(range(40, 70)), [5]),
                (("b", "x"), list(range(20, 33)), [5, 6, 7, 8, 9]),
            ]
        )
    assert strict.forward_passes == 0 and strict.truncation_cuts.requests == 0  # refused before any forward
    requests = [
        (("a", "x"), list(range(20, 32)), [5, 6, 7, 8]),  # 12 + 4 - 1 = 15 tokens seen: fits
        (("b", "x"), list(range(20, 33)), [5, 6, 7, 8, 9]),  # 17 seen: stock truncates
        (("c", "x"), list(range(40, 70)), [5]),  # a context beyond max_length
        (("d", "x"), [3], [5, 6]),
    ]
    expected = stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert lm.fallback_requests == 2 and lm.distinct_contexts == 2
    assert (lm.truncation_cuts.requests, lm.truncation_cuts.most) == (2, 14)
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
        assert lm.distinct_contexts == len(distinct_contexts(prefix))
        assert lm.computed_tokens == lm.trie_tokens < lm.context_tokens


def test_a_model_split_across_devices_goes_to_the_stock_code(
    tiny_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Weights on two devices (here CPU and `meta`, where accelerate leaves weights offloaded to disk;
    on a GPU machine `parallelize=True` splits the layers across GPUs): the prefix-tree path keeps all
    layers' keys and values on one device, so every request goes to the stock code, with a warning once."""
    args = {"pretrained": str(tiny_model), "device": "cpu", "batch_size": 4, "dtype": "float32"}
    stock_lm, lm = HFLM(**args), PrefixReuseHFLM(**args, row_tokens=16, warm_up="true")
    assert lm._warm_up is not None  # one device when it was made
    lm.settle_warm_up()
    lm._devices = None
    lm.model.register_buffer("offloaded", torch.empty(1, device="meta"), persistent=False)
    requests = tree_requests(2)
    with caplog.at_level(logging.WARNING):
        answers = lm._loglikelihood_tokens(requests, disable_tqdm=True)
        lm._loglikelihood_tokens(requests[:3], disable_tqdm=True)
    assert answers == stock_lm._loglikelihood_tokens(requests, disable_tqdm=True)
    assert lm.fallback_requests == len(requests) + 3 and lm.forward_passes == 0
    assert caplog.text.count("biasmonkey-hf: the model is split across cpu, meta; prefix sharing needs it") == 1
    split = PrefixReuseHFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=4, warm_up="true")
    assert split._warm_up is None
