"""`--model biasmonkey-server` with multi-token continuations (the cognitive tasks' "Option N:" labels
in exact mode), against tests/fault_server.py taught to echo prompt log-probabilities as vLLM does
(tiny model's tokenizer): the request shape (token-id prompt, `echo`, `logprobs=1`), one request per
distinct token sequence, one-token continuations in the same call still one request per distinct
prompt, sums and is_greedy, the cache hook fed per request; and the clear, unretried error of a
server that cannot give prompt log-probabilities (llama.cpp's: text prompts only, no echo).
The same against a real vLLM server: tests/harness/test_vllm.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer, logprob
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM, ServerError

CONTEXTS = ("Which option? Answer:", "Pick one.\nAnswer:")
LABELS = (" Option 1:", " Option 2:", " Option 10:")
ALTERNATIVE = math.log(0.1)  # the echoed top alternative at every position (token id 0)
FIXES = r"'Option N:' labels.*vLLM.*--backend hf.*mode.*generate"


def echoed(tokens: list[int], i: int) -> float:
    """The fake model's log-probability of tokens[i] after tokens[:i] (at most log 0.45)."""
    return logprob(" ".join(map(str, tokens[:i])), str(tokens[i]), 2)


class EchoServer(FaultServer):
    """Answers `echo` requests with prompt log-probabilities as vLLM does (`token_id:` keys when
    `return_tokens_as_token_ids`, else text keys); `mangle`: what the server makes of the prompt's
    token ids (e.g. prepends BOS), if not them."""

    mangle: Callable[[list[int]], list[int]] | None = None

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("echo"):
            return super()._completion(body)
        tokens = list(body["prompt"])
        tokens = (self.mangle(tokens) if self.mangle else tokens) + [7]  # 7: the one generated token
        key = (lambda t: f"token_id:{t}") if body.get("return_tokens_as_token_ids") else (lambda t: f"<{t}>")
        values: list[float | None] = [None] + [echoed(tokens, i) for i in range(1, len(tokens))]
        tops = [None] + [{key(t): v, key(0): ALTERNATIVE} for t, v in zip(tokens[1:], values[1:])]
        logprobs = {"tokens": [key(t) for t in tokens], "token_logprobs": values, "top_logprobs": tops}
        return {"choices": [{"index": 0, "text": "", "finish_reason": "length", "logprobs": logprobs}]}


def served(url: str, tiny_model: Path, **kwargs: Any) -> ServedLM:
    return ServedLM(base_url=url, model="m", tokenizer=str(tiny_model), **{"num_concurrent": 1, **kwargs})


def recorded_cache(lm: ServedLM) -> list[tuple]:
    """What the backend hands lm-eval's cache hook, in order."""
    added: list[tuple] = []
    lm.cache_hook.add_partial = lambda attr, req, res: added.append((attr, req, res))  # type: ignore[method-assign]
    return added


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_BACKOFF", 0.0)


@pytest.mark.parametrize("token_ids", [True, False])
def test_multi_token_continuations_are_scored_from_echoed_prompt_logprobs(tiny_model: Path, token_ids: bool) -> None:
    with EchoServer() as server:
        lm = served(server.url, tiny_model, token_id_logprobs=token_ids)
        assert all(len(lm.tok_encode(label.strip())) > 1 for label in LABELS)  # several tokens each
        pairs = [(c, label) for c in CONTEXTS for label in LABELS] + [(CONTEXTS[0], " A"), (CONTEXTS[0], " B")]
        pairs += [(CONTEXTS[0], LABELS[0]), ("", " Option 1:"), (CONTEXTS[1], "")]  # a repeat; no context; nothing
        requests = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
        added = recorded_cache(lm)
        answers = lm.loglikelihood(requests, disable_tqdm=True)

        encoded = [lm._encode_pair(c, x) if c else ([lm.prefix_token_id], lm.tok_encode(x)) for c, x in pairs[:-1]]
        sequences = list(dict.fromkeys(tuple(a + b) for a, b in encoded if len(b) > 1))
        assert len(sequences) == len(LABELS) * len(CONTEXTS) + 1  # the repeat is not sent again
        posts = [r.body for r in server.posts]
        # the multi-token requests first, each a token-id prompt with echo; then the one prompt of " A"/" B"
        assert [tuple(p["prompt"]) for p in posts[: len(sequences)]] == sequences
        for body in posts[: len(sequences)]:
            assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1
            assert body["temperature"] == 0 and "logprob_token_ids" not in body and "logit_bias" not in body
            assert body.get("return_tokens_as_token_ids", False) is token_ids
        assert [p["prompt"] for p in posts[len(sequences) :]] == [CONTEXTS[0]]
        assert "echo" not in posts[-1]
        assert lm.requests_sent == len(posts) == len(sequences) + 1
        assert (lm.sequences_scored, lm.prompts_scored) == (len(sequences), 1)

        for (context_enc, continuation_enc), (value, greedy) in zip(encoded, answers):
            if len(continuation_enc) == 1:
                continue
            tokens = context_enc + continuation_enc
            expected = [echoed(tokens, i) for i in range(len(context_enc), len(tokens))]
            assert value == pytest.approx(math.fsum(expected), abs=1e-12)
            assert greedy is all(v >= ALTERNATIVE for v in expected)
        assert answers[-1] == (0.0, True)  # an empty continuation: nothing sent
        # some labels greedy, some not: both branches of is_greedy are exercised
        assert {g for (_, x), (_, g) in zip(pairs, answers) if x in LABELS} == {True, False}
        assert sorted(req for _, req, _ in added) == sorted(pairs)  # every request cached


def test_is_greedy_only_when_every_continuation_token_is_the_top_one(tiny_model: Path) -> None:
    context, label = CONTEXTS[0], LABELS[2]
    with FaultServer() as probe:
        lm = served(probe.url, tiny_model)
    context_enc, continuation_enc = lm._encode_pair(context, label)
    tokens = context_enc + continuation_enc
    n = len(tokens)

    def answer(top_of: list[bool]) -> dict:
        """Each continuation token -1.0, the top one where `top_of` says so (else a -0.5 alternative)."""
        values = [None] + [-1.0] * (n - 1)
        tops = [None] + [{f"token_id:{t}": -1.0} for t in tokens[1:]]
        for position, top in zip(range(len(context_enc), n), top_of):
            if not top:
                tops[position]["token_id:1"] = -0.5
        logprobs = {"tokens": [f"token_id:{t}" for t in tokens], "token_logprobs": values, "top_logprobs": tops}
        return {"choices": [{"text": "", "logprobs": logprobs}]}

    k = len(continuation_enc)
    script = [
        (200, answer([True] * k)),
        (200, answer([True] * (k - 1) + [False])),
        (200, answer([False] + [True] * (k - 1))),
    ]
    with FaultServer(script=script) as server:
        lm = served(server.url, tiny_model)
        got = [
            lm.loglikelihood([Instance("loglikelihood", {}, (context, label), 0)], disable_tqdm=True)[0] for _ in script
        ]
    assert got == [(-1.0 * k, True), (-1.0 * k, False), (-1.0 * k, False)]


@pytest.mark.usefixtures("no_backoff")
def test_a_server_without_prompt_logprobs_is_a_clear_error_at_the_first_request(tiny_model: Path) -> None:
    mixed = [Instance("loglikelihood", {}, (c, x), 0) for c in CONTEXTS for x in (" A", LABELS[0])]
    # answers without the prompt's log-probabilities (echo ignored): not retried, no other request started
    with FaultServer() as server:
        lm = served(server.url, tiny_model)
        with pytest.raises(
            ServerError, match=rf"^{server.url}/completions: HTTP 200, but .*for 1 token\(s\).*not echoed.*{FIXES}"
        ):
            lm.loglikelihood(mixed, disable_tqdm=True)
        assert lm.requests_sent == len(server.posts) == 1 and server.posts[0].body["echo"] is True
    # a server that refuses token-id prompts (HTTP 422), or says so with HTTP 500 (llama.cpp's server
    # answers its validation errors so): not retried
    refusal = {
        "detail": [{"type": "string_type", "loc": ["body", "prompt", "str"], "msg": "Input should be a valid string"}]
    }
    llama = {"error": {"message": "228 validation errors:\n  {'type': 'string_type', 'input': [2683, 359]}"}}
    for status, body in [(422, refusal), (500, llama)]:
        with FaultServer(script=[(status, body)]) as server:
            lm = served(server.url, tiny_model)
            with pytest.raises(ServerError, match=rf"HTTP {status}: .*(valid string|validation error).*\n.*{FIXES}"):
                lm.loglikelihood(mixed, disable_tqdm=True)
            assert lm.requests_sent == 1
    # a server that rejects the token-id keys gets the request again without them (not an attempt)
    rejected = (400, {"error": "return_tokens_as_token_ids: extra inputs are not permitted"})
    with EchoServer(script=[rejected]) as server:
        lm = served(server.url, tiny_model, max_retries=0)
        (value, _), *_ = lm.loglikelihood(mixed[1:2], disable_tqdm=True)
        assert ["return_tokens_as_token_ids" in r.body for r in server.posts] == [True, False]
        assert math.isfinite(value) and not lm.token_id_logprobs


@pytest.mark.parametrize(
    ("mangle", "token_ids", "message"),
    [
        (lambda t: [0, *t], True, "echoes .* tokens for the .* prompt tokens sent.*BOS"),
        (lambda t: [0, *t], False, "echoes .* tokens for the .* prompt tokens sent.*BOS"),
        (lambda t: [t[0] + 1, *t[1:]], True, "the echoed tokens .* are not the prompt's token ids"),
    ],
    ids=["bos-token-ids", "bos-text", "other-tokens"],
)
def test_echoed_tokens_other_than_those_sent_are_an_error(
    tiny_model: Path, mangle: Callable[[list[int]], list[int]], token_ids: bool, message: str
) -> None:
    """A server that prepends a token (BOS) to a token-id prompt would shift every position; one that
    re-tokenizes would score other tokens."""
    with EchoServer() as server:
        server.mangle = mangle
        lm = served(server.url, tiny_model, token_id_logprobs=token_ids)
        with pytest.raises(ServerError, match=message):
            lm.loglikelihood([Instance("loglikelihood", {}, (CONTEXTS[0], LABELS[0]), 0)], disable_tqdm=True)
        assert lm.requests_sent == 1


def test_scored_sequences_are_cached_at_once_and_a_rerun_sends_only_the_rest(tiny_model: Path, tmp_path: Path) -> None:
    """Never lost: the server fails after two echoed sequences; those two are in lm-eval's request
    cache on disk, and the rerun sends only the other four."""
    from lm_eval.api.model import CachingLM
    from test_served_faults import db_entries

    pairs = [(c, label) for c in CONTEXTS for label in LABELS]
    requests = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    db = tmp_path / "cache.db"
    with EchoServer(fail_after=2) as broken, pytest.raises(ServerError, match=rf"{broken.url}/completions: "):
        CachingLM(served(broken.url, tiny_model, max_retries=0), str(db)).loglikelihood(requests)
    assert len(db_entries(db)) == 2
    with EchoServer() as healthy:
        resumed = CachingLM(served(healthy.url, tiny_model), str(db)).loglikelihood(requests)
        assert len(healthy.posts) == 4  # only the missing sequences
        healthy.clear()
        fresh = served(healthy.url, tiny_model).loglikelihood(requests, disable_tqdm=True)
    assert resumed == fresh
