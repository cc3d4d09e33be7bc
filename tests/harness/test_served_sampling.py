"""`--model biasmonkey-server` in sample mode, token-id greediness and the prefix-cache counters.

Sampled requests are independent draws (the OpenAI `n`, or one request per draw, seed + i), greedy
ones are sent once; `is_greedy` is the model's top token over the vocabulary, not the best of the
requested ids; the prefix-cache hit rate comes from a vLLM server's /metrics. Scripted answers of
tests/fault_server.py, and llama.cpp's server on SmolLM2 (skipped without llama-cpp-python, unless
BIASMONKEY_REQUIRE_ALL is set): its draws at temperature 1 follow its own next-token distribution.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from fault_server import FaultServer
from lm_eval.api.instance import Instance
from test_served import completion, free_port, llama_server, served_lm

from biasmonkey.harness_ext.lm_eval.backends.served import (
    ServedLM,
    prefix_cache_hit_rate,
    read_prefix_cache,
)

SAMPLED = {"do_sample": True, "temperature": 1.0, "max_gen_toks": 1, "until": []}
GREEDY = {"do_sample": False, "max_gen_toks": 1, "until": ["\n"]}


class Hook:
    """Stands in for lm-eval's cache hook: records every add_partial."""

    def __init__(self) -> None:
        self.added: list[tuple[str, Any, Any]] = []

    def add_partial(self, attr: str, req: Any, res: Any) -> None:
        self.added.append((attr, req, res))


def tiny_served(url: str, tiny_model: Path, **kwargs: Any) -> ServedLM:
    lm = ServedLM(base_url=url, model="m", tokenizer=str(tiny_model), num_concurrent=2, **kwargs)
    lm.set_cache_hook(Hook())
    return lm


def generations(prompt: str, settings: dict[str, Any], copies: int) -> list[Instance]:
    return [Instance("generate_until", {}, (prompt, dict(settings)), i) for i in range(copies)]


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_BACKOFF", 0.0)


# ---------------------------------------------------------------------------- sampled draws (fault server)


def test_sampled_copies_are_drawn_greedy_copies_sent_once(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_N", 4)
    requests = (
        generations("Q1?", {**SAMPLED, "seed": 7}, 6)  # 6 draws: n=4 (seeds 7…10), then n=2 (seeds 11, 12)
        + generations("Q2?", GREEDY, 3)  # one request
        + generations("Q3?", {**SAMPLED, "temperature": 0.0}, 2)  # temperature 0 is greedy: one request
    )
    with FaultServer() as server:
        lm = tiny_served(server.url, tiny_model)
        texts = lm.generate_until(requests, disable_tqdm=True)
        posts = sorted((r.body for r in server.posts), key=lambda b: (b["prompt"], b.get("seed", 0)))
    assert texts == [" A"] * len(requests)
    assert [(b["prompt"], b.get("n"), b.get("seed"), b["temperature"]) for b in posts] == [
        ("Q1?", 4, 7, 1.0),
        ("Q1?", 2, 11, 1.0),
        ("Q2?", None, None, 0.0),
        ("Q3?", None, None, 0.0),
    ]
    # the model's own distribution: no top-k, min-p, top-p or repetition penalty unless the task sets them
    assert {k: posts[0][k] for k in ("top_p", "top_k", "min_p", "repeat_penalty", "repetition_penalty")} == {
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "repetition_penalty": 1.0,
    }
    # every request answered is handed to lm-eval's cache, each draw as it arrives
    added = Counter(args[0] for _, args, _ in lm.cache_hook.added)
    assert added == Counter(r.args[0] for r in requests)
    assert lm.draws == 6 and lm.sample_n


def test_a_server_ignoring_n_gets_one_request_per_draw_with_its_own_seed(tiny_model: Path) -> None:
    with FaultServer(honor_n=False) as server:  # one choice whatever `n` says, as llama.cpp
        lm = tiny_served(server.url, tiny_model)
        assert lm.generate_until(generations("Q?", {**SAMPLED, "seed": 10}, 4), disable_tqdm=True) == [" A"] * 4
        assert [(r.body.get("n"), r.body["seed"]) for r in server.posts] == [
            (4, 10),
            (None, 11),
            (None, 12),
            (None, 13),
        ]
        assert not lm.sample_n
        server.clear()
        lm.generate_until(generations("Q?", SAMPLED, 3), disable_tqdm=True)  # no seed: the server draws freely
        assert [("n" in r.body, "seed" in r.body) for r in server.posts] == [(False, False)] * 3


@pytest.mark.usefixtures("no_backoff")
def test_rejected_n_and_sampling_fields_are_dropped_without_using_up_attempts(tiny_model: Path) -> None:
    script = [
        (400, {"object": "error", "message": "top_k must be -1 (disable), or at least 1, got 0."}),  # older vLLM
        (400, {"error": {"message": "Only one completion choice is allowed"}}),  # llama.cpp's C++ server
    ]
    with FaultServer(script=script) as server:
        lm = tiny_served(server.url, tiny_model, max_retries=0)
        assert lm.generate_until(generations("Q?", SAMPLED, 3), disable_tqdm=True) == [" A"] * 3
        assert [(r.body.get("n"), r.body.get("top_k")) for r in server.posts] == [
            (3, 0),
            (3, -1),
            (None, -1),
            (None, -1),
            (None, -1),
        ]
    script = [(400, {"error": "Unrecognized request argument supplied: repeat_penalty, top_k"})] * 2  # OpenAI
    with FaultServer(script=script) as server:
        lm = tiny_served(server.url, tiny_model, max_retries=0)
        lm.generate_until(generations("Q?", GREEDY, 1), disable_tqdm=True)
        assert [("repeat_penalty" in r.body, r.body.get("top_k")) for r in server.posts] == [
            (True, 0),
            (False, -1),
            (False, None),
        ]


@pytest.mark.usefixtures("no_backoff")
def test_a_rejection_nothing_explains_is_still_an_error(tiny_model: Path) -> None:
    from biasmonkey.harness_ext.lm_eval.backends.served import ServerError

    with FaultServer(script=[(400, {"error": "prompt is too long"})] * 3) as server:
        lm = tiny_served(server.url, tiny_model)
        with pytest.raises(ServerError, match="HTTP 400.*prompt is too long"):
            lm.generate_until(generations("Q?", SAMPLED, 3), disable_tqdm=True)
        # asked once with n, once without (a server may refuse n that way), then the error
        assert [r.body.get("n") for r in server.posts] == [3, None]


# ---------------------------------------------------------------------------- is_greedy with token ids


def test_is_greedy_is_the_models_top_token_not_the_best_requested_id(tiny_model: Path) -> None:
    lm = tiny_served("http://unused", tiny_model)
    a, b = lm.tok_encode(" A")[0], lm.tok_encode(" B")[0]
    requested = {f"token_id:{a}": -1.2, f"token_id:{b}": -1.5}  # each top-k below: at most all the mass

    def answer(top: dict[str, float], generated: str) -> dict:
        body = completion(top)
        body["choices"][0]["logprobs"]["tokens"] = [generated]
        return body

    script = [
        (200, answer(requested, "token_id:7")),  # only the requested ids; the model's top token is another
        (200, answer(requested, f"token_id:{a}")),  # the top token is " A"
        (200, answer({**requested, "token_id:9": -0.9}, "token_id:9")),  # top-k with the ids: 9 is the top
        (200, answer({" B": -0.9, " A": -1.2, " C": -2.0}, " B")),  # text keys (llama.cpp): the top-k decides
        # a special token (biased away from the generated one) is the model's top: no spelling is greedy
        (200, answer({**requested, "token_id:0": -0.8}, f"token_id:{a}")),
    ]
    request = [Instance("loglikelihood", {}, ("Q? Answer:", c), i) for i, c in enumerate([" A", " B"])]
    with FaultServer(script=script) as server:
        lm = tiny_served(server.url, tiny_model)
        results = [lm.loglikelihood(request, disable_tqdm=True) for _ in script]
        sent = server.posts[0].body
    # the top-k is asked for alongside, and the special tokens' log-probabilities after the spellings'
    specials = sorted(set(lm.tokenizer.all_special_ids) - {a, b})
    assert sent["logprob_token_ids"][:2] == [a, b] and sorted(sent["logprob_token_ids"][2:]) == specials
    assert specials and sent["logprobs"] >= 1
    assert results[0] == [(-1.2, False), (-1.5, False)]  # before: " A" was judged greedy
    assert results[1] == [(-1.2, True), (-1.5, False)]
    assert results[2] == [(-1.2, False), (-1.5, False)]
    assert results[3] == [(-1.2, False), (-0.9, True)]
    assert results[4] == [(-1.2, False), (-1.5, False)]


# ---------------------------------------------------------------------------- prefix cache (/metrics)


def vllm_metrics(queries: float, hits: float) -> str:
    """/metrics as vLLM's Prometheus client writes it: two engines, comments, _created samples."""
    lines = ["# HELP vllm:num_requests_running Number of requests.", "# TYPE vllm:num_requests_running gauge"]
    lines.append('vllm:num_requests_running{engine="0",model_name="m"} 0.0')
    for name, value in (("queries", queries), ("hits", hits)):
        lines += [f"# HELP vllm:prefix_cache_{name} Prefix cache {name}.", f"# TYPE vllm:prefix_cache_{name} counter"]
        for engine, share in (("0", 0.75), ("1", 0.25)):
            lines.append(f'vllm:prefix_cache_{name}_total{{engine="{engine}",model_name="m"}} {value * share:e}')
            lines.append(f'vllm:prefix_cache_{name}_created{{engine="{engine}",model_name="m"}} 1.7e+09')
    return "\n".join(lines) + "\n"


def test_prefix_cache_hit_rate_is_read_from_metrics_and_logged(
    tiny_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    counts = iter([(1000, 250), (1400, 550), (1400, 550), (1500, 560)])
    with FaultServer(metrics=lambda: vllm_metrics(*next(counts))) as server:
        assert read_prefix_cache(server.url) == {"queries": 1000.0, "hits": 250.0}
        assert prefix_cache_hit_rate(server.url) == pytest.approx(550 / 1400)
        lm = tiny_served(server.url, tiny_model)
        assert lm.prefix_cache is None
        with caplog.at_level(logging.INFO, logger=ServedLM.__module__):
            lm.loglikelihood([Instance("loglikelihood", {}, ("Q? Answer:", " A"), 0)], disable_tqdm=True)
        assert lm.prefix_cache == {"queries": 100.0, "hits": 10.0}
        assert "prefix cache: 10.0% of 100 prompt tokens hit" in caplog.text

    with FaultServer() as server:  # no /metrics (llama.cpp, SGLang without metrics): None, nothing logged
        assert read_prefix_cache(server.url) is None and prefix_cache_hit_rate(server.url) is None
        lm = tiny_served(server.url, tiny_model)
        lm.generate_until(generations("Q?", GREEDY, 1), disable_tqdm=True)
        assert lm.prefix_cache is None
    with FaultServer(metrics="# only comments\nother_metric 3\n") as server:
        assert read_prefix_cache(server.url) is None
    assert read_prefix_cache(f"http://127.0.0.1:{free_port()}/v1") is None  # nothing listens: None, no error


# ---------------------------------------------------------------------------- llama.cpp: the draws' distribution

PROMPT = "Pick a random letter from A, B, C or D.\nThe letter I pick is"
N_DRAWS = 200


@pytest.mark.slow
def test_llama_cpp_draws_follow_the_models_next_token_distribution() -> None:
    """N draws of one token at temperature 1 against the server's own log-probabilities of that
    token (chi-square goodness of fit, rare tokens pooled); and not one answer copied N times."""
    from scipy.stats import chisquare

    with llama_server("--logits_all", "true") as url:
        assert prefix_cache_hit_rate(url) is None  # llama.cpp has no Prometheus /metrics
        lm = served_lm(url)
        lm.set_cache_hook(Hook())
        body = {"model": "smollm2", "prompt": PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 100}
        body["logit_bias"] = lm.stop_bias  # a token is generated, so log-probabilities come back
        top = httpx.post(f"{url}/completions", json=body, timeout=60).json()["choices"][0]["logprobs"]
        expected = {token: math.exp(lp) for token, lp in top["top_logprobs"][0].items()}

        draws = lm.generate_until(generations(PROMPT, {**SAMPLED, "seed": 1234}, N_DRAWS), disable_tqdm=True)
        assert lm.requests_sent == N_DRAWS and not lm.sample_n  # llama.cpp answers one choice whatever `n` says
        unseeded = lm.generate_until(generations(PROMPT, SAMPLED, 20), disable_tqdm=True)
        assert lm.prefix_cache is None

    assert len(set(unseeded)) > 1 and len(set(draws)) > 5
    kept = [token for token, p in expected.items() if p * N_DRAWS >= 5]  # expected counts >= 5; the rest pooled
    observed = Counter(token if token in kept else "<other>" for token in draws)
    f_obs = [observed[token] for token in kept] + [observed["<other>"]]
    f_exp = [expected[token] * N_DRAWS for token in kept] + [(1 - sum(expected[t] for t in kept)) * N_DRAWS]
    print(dict(zip([*kept, "<other>"], zip(f_obs, [round(e, 1) for e in f_exp], strict=True))))
    assert len(kept) >= 4 and f_exp[-1] >= 5
    assert chisquare(f_obs, f_exp).pvalue > 0.001
