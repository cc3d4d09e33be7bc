"""`--model biasmonkey-server`: exact mode against any OpenAI-compatible completions server.

Works with vLLM (`vllm serve`), SGLang and llama.cpp's server (`python -m llama_cpp.server`).
lm-eval's own API backends (`local-completions`, `vllm`, `sglang`) score each (context,
continuation) request as one full sequence with `echo` and prompt log-probabilities, which costs
one sequence per answer spelling and switches the server's prefix cache off. This backend sends
**one request per distinct prompt** instead: one generated token (`max_tokens=1`, temperature 0,
no `echo`, so no prompt log-probabilities) with its top-k alternatives, and reads every answer
spelling's log-probability from that one response (multi-token continuations: one request per
distinct token sequence, below).

- Token ids: the request also asks for the log-probabilities of the spellings' token ids
  (`logprob_token_ids`, vLLM >= 0.26) with token-id keys (`return_tokens_as_token_ids`), so on
  vLLM nothing is imputed. Servers that ignore the fields (llama.cpp) answer with their top-k
  as text; a server that rejects them gets the request again without them.
- Imputed floor: a spelling missing from the returned top-k gets the floor of
  `biasmonkey.metrics.top_logprobs` (min of the smallest returned probability and the unreturned
  mass shared by the missing spellings). Its log-likelihood is an `ImputedLogprob`; the tasks
  count these (`imputed_options`, `imputed_continuations`) and lm-eval's sample log marks them.
  Raise `top_logprobs` to avoid them.
- Stop tokens: the model's special tokens get `logit_bias` -100 so that the one generated token
  is never end-of-text (servers return no log-probabilities then). vLLM and llama.cpp report
  log-probabilities computed before the bias, so the values read are the model's own.
- Multi-token continuations (the cognitive tasks' "Option N:" labels in exact mode) cannot be read
  from one next-token distribution: each distinct token sequence (lm-eval's context tokens, then
  the continuation's) is sent as its own request, the prompt given as **token ids** (so the split
  between context and continuation is exactly lm-eval's), with `echo` and `logprobs=1` (the
  OpenAI completions API's prompt log-probabilities; `max_tokens=1`, temperature 0). The
  continuation's log-likelihood is the sum of its tokens' prompt log-probabilities, and
  `is_greedy` is true only when each continuation token is the top token at its position (its
  log-probability at least that of every returned alternative; prompt log-probabilities are over
  the whole vocabulary, special tokens included). With token ids (`return_tokens_as_token_ids`)
  the echoed tokens are checked against those sent. One-token continuations in the same call keep
  their one request per distinct prompt; the multi-token requests are sent first. This needs a
  server that takes token-id prompts and echoes their log-probabilities (vLLM; lm-eval's own
  `local-completions` relies on the same fields). A server that refuses such a request (HTTP 400,
  404 or 422, or 500 for a validation error: llama.cpp's server, which takes text prompts only)
  or answers it without the prompt's log-probabilities fails the run at the first such request,
  not retried, with an error naming the continuation and the fixes: serve the model with vLLM,
  use `--backend hf`, or run the cognitive tasks with `mode=generate` through the server. vLLM
  reads nothing of a request that asks for prompt log-probabilities from its prefix cache (it
  computes every position; its `skip_reading_prefix_cache`), so these requests cost their whole
  prompt and do not count as prefix-cache queries.
- Empty contexts (the yes-no tasks' no-context measurement) are sent as the text of the model's
  prefix token (BOS, else EOS), which servers parse as that special token, as lm-eval's HF
  backend conditions on it.
- `is_greedy` is true only for the model's top token over the whole vocabulary: the top of the
  returned top-k (`top_logprobs` >= 1 is always asked for). With token ids, where a server may
  return only the requested ids, the special tokens' ids are requested too (the generated token,
  biased away from them, cannot be one), and the generated token (temperature 0) tells whether
  the top of the other tokens is among them: if it is not, no requested id is greedy.
- `generate_until` (sample and generate modes): greedy requests (temperature 0, or no
  `do_sample`) are sent once per distinct (prompt, settings). Sampled requests are independent
  draws, never copies of one answer: the N identical sampled requests of one prompt (lm-eval's
  `repeats`) are asked for with the OpenAI `n` (at most `MAX_N` per request, `choices[i].text`).
  A server that ignores `n` (answers fewer choices: llama.cpp) or rejects it (HTTP 400/422) gets
  one request per draw from then on. With a `seed` in the task's settings, draw i of a prompt
  uses seed + i (what vLLM does for the i-th of `n` choices), so draws differ and a run is
  reproducible however the draws are split into requests; without one, the server draws freely.
  lm-eval's cache (`--use_cache`) never answers requests with `do_sample` from the cache (its
  `CachingLM` sends them to the model each time), so a resumed run draws afresh rather than
  repeating one stored answer.
- Sampling is the model's own distribution at the task's temperature: unless the task sets them,
  requests say top_p 1, top_k 0 (no top-k; -1 where 0 is refused), min_p 0 and no repetition
  penalty (`repeat_penalty` 1 for llama.cpp, `repetition_penalty` 1 for vLLM), because servers
  default otherwise (llama.cpp: top-k 40, min-p 0.05, repeat penalty 1.1; vLLM: the model's
  `generation_config.json`). A server that rejects one of these fields (HTTP 400/422 naming it)
  is asked again without it (not an attempt), and is not sent it again.
- Prefix cache: before and after its requests the backend reads the server's Prometheus
  `/metrics` (vLLM: `vllm:prefix_cache_queries` and `vllm:prefix_cache_hits`, in prompt tokens;
  2 s in all and 8 MiB at most, never an error), logs "prefix cache: X% of N prompt tokens hit"
  and adds the difference to `self.prefix_cache` ({"queries", "hits"}; None where the server
  exposes no such counters, e.g. llama.cpp). The counters are the server's: other clients'
  requests count too.

Off the happy path:

- Nothing finished is lost: each prompt's answers go to lm-eval's request cache (`--use_cache`,
  committed to its SQLite file at once, one commit for them all: request_cache.py) as soon as its
  response is read, so a run that fails later resumes with only the missing prompts. After a
  request fails for good no new request starts; those in flight finish (and are cached), then the
  error is raised.
- One model: every answer of a run must name (its `model` field) the model the first one named. An
  answer from another model (a server restarted with other weights, several servers behind one URL)
  stops the run with an error naming both, before it is scored or cached. Across runs,
  `served_model_identity` (what `/v1/models` and llama.cpp's `/props` say of the weights, asked within
  5 s in all) goes into the identity of `biasmonkey run`'s request cache, so that `--resume` against
  other weights under the same URL and name finds no cache instead of mixing two models' answers.
- Bounded waits: each attempt gets `timeout` seconds in all (connecting, queueing at the server,
  reading: a server that trickles its answer byte by byte runs out of time too; `asyncio.wait_for`
  around the whole request, as httpx's own timeout bounds each read), and a request gets
  `max_retries + 1` attempts, with a randomised exponential backoff of at most
  min(0.5 * 2^i s, 10 s, timeout) between attempts i and i + 1. So a server that hangs fails the
  run after about timeout * (max_retries + 1): 8 minutes with the defaults, 120 s and 3
  retries, chosen to outlast a busy server's queue (a 1-token request takes well under a
  second on a GPU) without stalling an unattended run for half an hour. Raise `timeout` for slow
  generation (a CPU llama.cpp server writing `max_gen_toks` tokens for several concurrent
  requests, which it serves one at a time).
- Retried: connection errors, timeouts, HTTP 408, 409, 425, 429, 500, 502, 503 and 504 (not 501
  and 505+, which a retry cannot change), and HTTP 200 answers
  that are not JSON or lack the fields read (`choices`, `logprobs`, `text`; but not an answer
  without a multi-token request's echoed prompt log-probabilities: a server that leaves them out
  always does). When the attempts run out, and for any other failure, the error (`ServerError`)
  names the URL, the attempts and what went wrong (the server's message, or the first 200
  characters of a malformed answer).
- Validated where they enter: every log-probability read must be finite and at most 0, and a
  top-k's probabilities sum to at most 1, both within `LOGPROB_TOLERANCE` (1e-4,
  `biasmonkey.metrics.top_logprobs`). An answer that breaks this (NaN, +2.5, …) is retried like a
  malformed one and is never scored nor cached (answers reach lm-eval's cache only once read);
  when the attempts run out, the error names the URL and the prompt.
- API keys (hosted endpoints): a key is sent as `Authorization: Bearer <key>`. It is read from
  the environment variable `BIASMONKEY_API_KEY`, or from the variable named by
  `api_key_env=NAME` (e.g. `api_key_env=OPENAI_API_KEY`; never read unless named). `api_key=KEY`
  works too, but lm-eval writes `--model_args` into its logs and results files: keep the key in
  the environment to keep it out of them. HTTP 401/403 is an error naming the URL and where the
  key came from (or that none was sent); the key itself is never printed.

Model arguments: `base_url` (the server's `/v1` URL), `model` (the served name), `tokenizer`
(HF folder or hub id of the served model's tokenizer, default: `model`; requests are split into
tokens as lm-eval splits them), `num_concurrent` (4), `top_logprobs` (20), `timeout` (seconds per
attempt, 120), `max_retries` (3), `api_key_env` (`BIASMONKEY_API_KEY`), `api_key`,
`token_id_logprobs` (true), `max_gen_toks` (256), `max_length` (the served model's context in
tokens; none: the server judges) and `allow_truncation` (false). With `max_length`, a request that
does not fit (its prompt, plus one token or `max_gen_toks` generated) is an error before anything
is sent (`context.ContextTooLong`), unless `allow_truncation=true`: then it is sent as it is, and
the count of such requests is logged (`truncation_cuts`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import httpx
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from tqdm import tqdm

from biasmonkey.harness_ext.lm_eval.backends.context import Cuts, ModelArgumentError, as_flag, refuse_or_count
from biasmonkey.harness_ext.lm_eval.backends.request_cache import CacheFriendlyLM, cache_answers
from biasmonkey.metrics.top_logprobs import (
    VALID_LOGPROBS,
    ImputedLogprob,
    logprob_problem,
    spaced_token,
    spelling_logprobs,
    top_logprobs_problem,
)

DEFAULT_TIMEOUT = 120.0  # seconds per attempt
DEFAULT_MAX_RETRIES = 3
MAX_BACKOFF = 10.0  # seconds between two attempts, at most
API_KEY_ENV = "BIASMONKEY_API_KEY"
RETRIED_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
RETRIED_ERRORS = (httpx.TransportError, asyncio.TimeoutError)  # refused/reset connections, timeouts
REFUSED_STATUS = {401, 403}
TOKEN_ID_FIELDS = ("logprob_token_ids", "return_tokens_as_token_ids")
TOKEN_ID_KEY = "token_id:"
STOP_BIAS = -100.0
EXCERPT = 200  # characters of a malformed answer quoted in the error
PROMPT_EXCERPT = 40  # characters of each end of a prompt named in an error
MAX_N = 64  # sampled draws asked for in one request (`n`); more draws of a prompt make more requests
METRICS_TIMEOUT = 2.0  # seconds for reading the server's /metrics, in all
IDENTITY_TIMEOUT = 5.0  # seconds for asking the server what it serves (/v1/models, /props), in all
MAX_ANSWER_BYTES = 8 * 2**20  # a /metrics, /v1/models or /props answer longer than this is not read
# What a /v1/models entry says about the weights: the name, vLLM's `root` (the weights' path) and
# `parent` (a LoRA's base), the engine (`owned_by`), llama.cpp's `meta` (vocabulary, parameter count,
# size in bytes). Not `created` and `permission` (new at each request) nor `max_model_len` (a setting).
IDENTITY_FIELDS = ("id", "root", "parent", "owned_by", "meta")
METRIC_LINE = re.compile(r"\s*(?P<name>[A-Za-z_:][\w:]*)(?:\{.*\})?\s+(?P<value>\S+)")
PREFIX_CACHE_COUNTERS = {"queries": "vllm:prefix_cache_queries", "hits": "vllm:prefix_cache_hits"}
# Sampling from the model's own distribution, unless the task says otherwise: each field's values, in
# the order tried (a server that rejects one gets the next, and none once they are used up).
NEUTRAL_FIELDS: dict[str, tuple[Any, ...]] = {
    "top_p": (1.0,),
    "top_k": (0, -1),  # 0: no top-k (llama.cpp, newer vLLM); older vLLM wants -1
    "min_p": (0.0,),
    "repeat_penalty": (1.0,),  # llama.cpp
    "repetition_penalty": (1.0,),  # vLLM
}
PASSED_ON = ("top_p", "top_k", "min_p", "seed")  # generation settings of a task sent as they are
log = logging.getLogger(__name__)
T = TypeVar("T")
Job = Callable[[httpx.AsyncClient], Awaitable[Any]]  # one request, given the shared client


class ServerError(RuntimeError):
    """The server failed a request for a reason retrying will not fix, or failed every attempt."""


class Malformed(ValueError):
    """An HTTP 200 answer without what the request needs (retried like a 5xx)."""


class Invalid(Malformed):
    """An HTTP 200 answer whose log-probabilities no distribution has (NaN, above 0, more than all the
    mass; `biasmonkey.metrics.top_logprobs`): retried like a malformed answer, never scored or cached."""


class Unsupported(ValueError):
    """An HTTP 200 answer showing that the server cannot do what the request needs (not retried)."""


class Secret:
    """A string that never shows in a repr, str or log line (the API key)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<hidden>"

    __str__ = __repr__


def _hint(message: str) -> str:
    """What to change, for the failures we know."""
    if "logits_all" in message:
        return " (llama.cpp's server: start it with `--logits_all true` to return log-probabilities)"
    if "max_logprobs" in message or "logprobs" in message:
        return " (the server refuses these log-probabilities: lower top_logprobs=, or raise its limit, e.g. vLLM --max-logprobs)"
    return ""


def _as_bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


def _whole(name: str, value: Any, minimum: int) -> int:
    """A model argument that must be a whole number >= minimum."""
    try:
        number = int(str(value))
    except ValueError:
        raise ModelArgumentError(f"biasmonkey-server: {name}={value!r} must be a whole number") from None
    if number < minimum:
        raise ModelArgumentError(f"biasmonkey-server: {name}={number} must be at least {minimum}")
    return number


def _seconds(name: str, value: Any) -> float:
    """A model argument that must be a positive, finite number of seconds."""
    try:
        number = float(str(value))
    except ValueError:
        number = math.nan
    if not (0 < number < math.inf):
        raise ModelArgumentError(f"biasmonkey-server: {name}={value!r} must be a positive number of seconds")
    return number


def _is_sampled(gen_kwargs: dict[str, Any]) -> bool:
    """A sampled request (do_sample with a temperature above 0); otherwise greedy."""
    return _as_bool(gen_kwargs.get("do_sample", False)) and float(gen_kwargs.get("temperature", 1.0)) > 0


def _first_choice(body: Any) -> dict[str, Any]:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        raise Malformed("no `choices`")
    return choices[0]


def _excerpt(prompt: str | Sequence[int]) -> str:
    """A prompt as an error names it: its text's first and last characters, or its length in tokens."""
    if not isinstance(prompt, str):
        return f"a prompt of {len(prompt)} tokens"
    if len(prompt) <= 2 * PROMPT_EXCERPT + 1:
        return f"prompt {prompt!r}"
    return f"prompt {prompt[:PROMPT_EXCERPT]!r}…{prompt[-PROMPT_EXCERPT:]!r}"


def _check_top(top: dict[str, Any], about: str) -> None:
    """Raise Invalid unless a top-k dict is part of a distribution (finite log-probabilities at most 0,
    probabilities summing to at most 1, within `LOGPROB_TOLERANCE`)."""
    if (problem := top_logprobs_problem(list(top.items()))) is not None:
        raise Invalid(f"invalid log-probabilities for {about}: {problem}; {VALID_LOGPROBS}")


def _read_top(body: Any, about: str = "the request") -> tuple[dict[str, float], str | None]:
    """`choices[0].logprobs.top_logprobs[0]`: the first generated token's top-k, {token: log-probability},
    and the generated token (`logprobs.tokens[0]`; None if not given). Raises Invalid, naming `about`
    (the prompt), for values no distribution has."""
    choice = _first_choice(body)
    logprobs = choice.get("logprobs")
    tops = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    top = tops[0] if isinstance(tops, list) and tops else None
    if not (isinstance(top, dict) and top and all(isinstance(v, (int, float)) for v in top.values())):
        raise Malformed(
            f"no log-probabilities in `choices[0].logprobs.top_logprobs` (finish_reason="
            f"{choice.get('finish_reason')!r}); does the server return `logprobs`?"
        )
    _check_top(top, about)
    tokens = logprobs.get("tokens") if isinstance(logprobs, dict) else None
    generated = tokens[0] if isinstance(tokens, list) and tokens and isinstance(tokens[0], str) else None
    return top, generated


def _read_echo(body: Any, tokens: Sequence[int], about: str = "the request") -> list[tuple[float, bool] | None]:
    """The prompt's log-probabilities from an answer with `echo` and `logprobs`: per prompt token,
    (its log-probability, is it the top token at its position); None for the first token (nothing
    before it). Raises Unsupported when the answer has no log-probabilities for the whole prompt, or
    its token-id keys (`token_id:330`) show tokens other than those sent; Invalid, naming `about`,
    for values no distribution has."""
    choice = _first_choice(body)
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        raise Unsupported("the answer has no `logprobs`")
    values, tops, echoed = (logprobs.get(k) for k in ("token_logprobs", "top_logprobs", "tokens"))
    if not (isinstance(values, list) and isinstance(tops, list) and min(len(values), len(tops)) >= len(tokens)):
        given = len(values) if isinstance(values, list) else 0
        raise Unsupported(
            f"the answer has log-probabilities for {given} token(s), not for the {len(tokens)} prompt tokens "
            "(the prompt was not echoed)"
        )
    if len(values) > len(tokens) + 1:  # the prompt and at most the one generated token
        raise Unsupported(
            f"the answer echoes {len(values)} tokens for the {len(tokens)} prompt tokens sent and 1 generated "
            "(does the server add tokens, such as BOS, to a token-id prompt?)"
        )
    if isinstance(echoed, list) and all(
        isinstance(t, str) and t.startswith(TOKEN_ID_KEY) for t in echoed[: len(tokens)]
    ):
        got = [t.removeprefix(TOKEN_ID_KEY) for t in echoed[: len(tokens)]]
        if got != [str(t) for t in tokens]:
            raise Unsupported(f"the echoed tokens {got[:8]}… are not the prompt's token ids {list(tokens[:8])}…")
    scored: list[tuple[float, bool] | None] = [None]
    for i in range(1, len(tokens)):
        value, top = values[i], tops[i]
        numbers = isinstance(top, dict) and top and all(isinstance(v, (int, float)) for v in top.values())
        if not (isinstance(value, (int, float)) and numbers):
            raise Unsupported(f"the answer has no log-probability for prompt token {i}")
        if (problem := logprob_problem(value)) is not None:
            raise Invalid(f"invalid log-probabilities for {about}: {problem} (prompt token {i}); {VALID_LOGPROBS}")
        _check_top(top, f"{about}, prompt token {i}")
        scored.append((float(value), value >= max(top.values())))
    return scored


def _read_texts(body: Any) -> list[str]:
    """Every `choices[i].text`, in the order of their `index`."""
    _first_choice(body)
    choices = body["choices"]
    texts = [c.get("text") if isinstance(c, dict) else None for c in choices]
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise Malformed(f"no `text` in `choices[{i}]`")
    order = [c.get("index") for c in choices]
    if all(isinstance(i, int) for i in order) and len(set(order)) == len(order):
        return [t for _, t in sorted(zip(order, texts))]
    return texts


def _cut(text: str, until: list[str]) -> str:
    """The text up to the first stop string (servers that cap the number of stop strings)."""
    for stop in until:
        text = text.split(stop, 1)[0]
    return text


class TooLong(ValueError):
    """An answer longer than `MAX_ANSWER_BYTES` (not read further)."""


def _server_root(base_url: str) -> str:
    """The server's root: `base_url` without `/v1` (where vLLM's /metrics and llama.cpp's /props are)."""
    return base_url.rstrip("/").removesuffix("/v1")


def _auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


def get_text(url: str, timeout: float, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET `url`: (HTTP status, body). `timeout` bounds the whole exchange (connecting, waiting and
    reading: httpx's own timeout bounds each read, so a server that trickles its answer would hold a
    plain `httpx.get` forever); the body is read up to `MAX_ANSWER_BYTES`. Raises TimeoutError,
    TooLong, or httpx's errors. For callers outside an event loop (it runs its own)."""

    async def fetch() -> tuple[int, str]:
        async with (
            httpx.AsyncClient(timeout=timeout, headers=headers or {}) as client,
            client.stream("GET", url) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise TooLong(f"{url} answered more than {MAX_ANSWER_BYTES:,} bytes")
            return response.status_code, body.decode("utf-8", "replace")

    async def within() -> tuple[int, str]:
        try:
            return await asyncio.wait_for(fetch(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{url} gave no whole answer within {timeout:g} s") from None

    return asyncio.run(within())


def read_prefix_cache(
    base_url: str, timeout: float = METRICS_TIMEOUT, headers: dict[str, str] | None = None
) -> dict[str, float] | None:
    """A vLLM server's prefix-cache counters from its Prometheus `/metrics` (at the server's root:
    `base_url` without `/v1`): {"queries": prompt tokens looked up, "hits": those found}, summed over
    the counters' labels (engines, models). None if the server does not expose them, or does not
    answer in full within `timeout` seconds in all (logged); never raises."""
    try:
        status, text = get_text(f"{_server_root(base_url)}/metrics", timeout, headers)
        if status != 200:
            return None
        totals: dict[str, float] = {}
        for line in text.splitlines():
            sample = METRIC_LINE.match(line)  # name{labels} value [timestamp]; comments do not match
            if sample is None:
                continue
            name = sample["name"].removesuffix("_total")  # Prometheus clients add _total to counters
            for key, counter in PREFIX_CACHE_COUNTERS.items():
                if name == counter:
                    totals[key] = totals.get(key, 0.0) + float(sample["value"])
        if set(totals) != set(PREFIX_CACHE_COUNTERS):
            return None
        return totals
    except (TimeoutError, TooLong) as err:
        log.warning(f"prefix cache: not measured, {err}")
        return None
    except Exception:  # noqa: BLE001 - a number for the log, never a reason to fail the run
        return None


def _ask_json(url: str, timeout: float, headers: dict[str, str]) -> tuple[Any, str | None]:
    """(the JSON of an HTTP 200 answer, None), or (None, what went wrong); never raises."""
    if timeout <= 0:
        return None, f"{url}: no time left"
    try:
        status, text = get_text(url, timeout, headers)
        if status != 200:
            return None, f"{url}: HTTP {status}"
        return json.loads(text), None
    except (TimeoutError, TooLong) as err:  # (their messages name the URL)
        return None, str(err)
    except ValueError:
        return None, f"{url}: not JSON"
    except Exception as err:  # noqa: BLE001 - refused connections, …
        return None, f"{url}: {err or repr(err)}"


def served_model_identity(
    base_url: str, api_key_env: str | None = None, timeout: float = IDENTITY_TIMEOUT
) -> str | None:
    """What the server at `base_url` (its `/v1` URL) says it serves, as a string that is the same
    across restarts of the same model and differs for other weights, for the identity of a run's
    request cache: the `IDENTITY_FIELDS` of each `/v1/models` entry (vLLM: served name, weights
    path; llama.cpp's server: name, and the weights' vocabulary, parameter count and size) and
    llama.cpp's `/props` `model_path`. Asked with the key in `$api_key_env` (default
    $BIASMONKEY_API_KEY), within `timeout` seconds in all. None, with a warning, where the server
    says nothing of it (no such endpoints, no answer in time)."""
    headers = _auth(os.environ.get(api_key_env or API_KEY_ENV))
    deadline = time.monotonic() + timeout
    said: dict[str, Any] = {}
    listing, problem = _ask_json(f"{base_url.rstrip('/')}/models", timeout, headers)
    entries = listing.get("data") if isinstance(listing, dict) else None
    if isinstance(entries, list):
        cards = [{k: e[k] for k in IDENTITY_FIELDS if k in e} for e in entries if isinstance(e, dict)]
        said["models"] = sorted((c for c in cards if c), key=lambda c: json.dumps(c, sort_keys=True))
    problem = problem or f"{base_url.rstrip('/')}/models lists no model"
    props, _ = _ask_json(f"{_server_root(base_url)}/props", deadline - time.monotonic(), headers)
    if isinstance(props, dict) and isinstance(props.get("model_path"), str):
        said["model_path"] = props["model_path"]
    if not said.get("models") and "model_path" not in said:
        log.warning(
            f"biasmonkey-server: the server at {base_url} does not say which model it serves ({problem}); "
            "the request cache then knows it only by URL, name and tokenizer: resume only against the "
            "same model"
        )
        return None
    return json.dumps(said, sort_keys=True, separators=(",", ":"))


def prefix_cache_hit_rate(base_url: str, timeout: float = METRICS_TIMEOUT) -> float | None:
    """The share of prompt tokens a vLLM server found in its prefix cache since it started (see
    `read_prefix_cache`); None where it does not say (llama.cpp, SGLang without metrics, …)."""
    counters = read_prefix_cache(base_url, timeout)
    if counters is None or counters["queries"] <= 0:
        return None
    return counters["hits"] / counters["queries"]


@register_model("biasmonkey-server")
class ServedLM(CacheFriendlyLM, TemplateLM):
    """One completions request per distinct prompt (see the module docstring)."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        tokenizer: str | None = None,
        num_concurrent: int = 4,
        top_logprobs: int = 20,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        api_key_env: str | None = None,
        api_key: str | None = None,
        token_id_logprobs: bool = True,
        max_gen_toks: int = 256,
        max_length: int | None = None,
        allow_truncation: bool | str = False,
        **_harness_args: Any,  # batch_size, device, …: meaningless for a server
    ) -> None:
        super().__init__()
        if not base_url:
            raise ModelArgumentError("biasmonkey-server needs base_url=<the server's /v1 URL> in --model_args")
        tokenizer = tokenizer or model
        if not tokenizer:
            raise ModelArgumentError(
                "biasmonkey-server needs tokenizer=<HF folder or hub id of the served model's tokenizer> in --model_args"
            )
        self.base_url = str(base_url).rstrip("/")
        self.model = model
        self.num_concurrent = _whole("num_concurrent", num_concurrent, 1)
        self.top_logprobs = _whole("top_logprobs", top_logprobs, 1)
        self.max_gen_toks = _whole("max_gen_toks", max_gen_toks, 1)
        self.max_retries = _whole("max_retries", max_retries, 0)
        self.timeout = _seconds("timeout", timeout)
        self.token_id_logprobs = as_flag("token_id_logprobs", token_id_logprobs)
        self.max_length = None if max_length in (None, "") else _whole("max_length", max_length, 1)
        self.allow_truncation = as_flag("allow_truncation", allow_truncation)
        self.truncation_cuts = Cuts()
        self._api_key, self.api_key_env, self.api_key_source = self._find_key(api_key, api_key_env)
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        except (OSError, ValueError) as err:
            raise ModelArgumentError(
                f"biasmonkey-server: cannot load the tokenizer {tokenizer!r} ({err}); pass "
                "tokenizer=<HF folder or hub id of the served model's tokenizer>"
            ) from err
        self.tokenizer_source = tokenizer
        self.stop_bias = {str(i): STOP_BIAS for i in self.tokenizer.all_special_ids}
        self.sample_n = True  # the server answers `n` choices (until it shows it does not)
        self._neutral = {name: list(values) for name, values in NEUTRAL_FIELDS.items()}
        self._failures: list[Exception] = []
        self.answering_model: str | None = None  # the `model` of the server's first answer (`_same_model`)
        self.reset_counters()

    @staticmethod
    def _find_key(api_key: Any, api_key_env: Any) -> tuple[Secret | None, str | None, str]:
        """(the key, the variable it comes from, where it comes from in words)."""
        if api_key not in (None, "") and api_key_env not in (None, ""):
            raise ModelArgumentError("biasmonkey-server: give api_key_env=NAME or api_key=KEY, not both")
        if api_key not in (None, ""):
            return Secret(str(api_key)), None, "the api_key model arg"
        name = str(api_key_env or API_KEY_ENV)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):  # never echo it: it may be the key itself
            raise ModelArgumentError(
                "biasmonkey-server: api_key_env= takes the name of an environment variable, not a key"
            )
        key = os.environ.get(name) or None
        if key is None and api_key_env:
            raise ModelArgumentError(
                f"biasmonkey-server: api_key_env={name}, but the environment variable ${name} is not set"
            )
        return (Secret(key) if key else None), name, f"${name}"

    def reset_counters(self) -> None:
        self.requests_sent = 0  # HTTP requests, retries included
        self.prompts_scored = 0  # distinct prompts of one-token loglikelihood requests answered
        self.sequences_scored = 0  # distinct token sequences of multi-token loglikelihood requests answered
        self.imputed = 0  # spellings given the floor
        self.draws = 0  # sampled answers received
        self.prefix_cache: dict[str, float] | None = None  # the server's prefix-cache counters over our work

    # ------------------------------------------------------------------ tokenizer (lm-eval's interface)

    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        bos = self.tokenizer.bos_token_id
        return bos if bos is not None else self.eot_token_id

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs: Any) -> list[int]:
        return self.tokenizer.encode(string, add_special_tokens=bool(add_special_tokens))

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer_source.replace("/", "__")

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            chat_history,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt,
        )

    # ------------------------------------------------------------------ loglikelihood

    def _loglikelihood_tokens(
        self, requests: list[tuple[tuple[str, str], list[int], list[int]]], disable_tqdm: bool = False, **kwargs: Any
    ) -> list[tuple[float, bool]]:
        """One-token continuations: grouped by prompt text, one request per prompt. Longer ones: one
        request per distinct token sequence, scored from its echoed prompt log-probabilities."""
        self._check_context([len(c) + max(len(k), 1) for _, c, k in requests], "requests")
        by_prompt: dict[str, tuple[list[int], list[int]]] = {}  # prompt -> (token ids, request indices)
        by_sequence: dict[tuple[int, ...], list[int]] = {}  # context + continuation ids -> request indices
        answers: list[Any] = [None] * len(requests)
        for n, ((context, _), context_enc, continuation_enc) in enumerate(requests):
            if len(continuation_enc) == 1:
                ids, indices = by_prompt.setdefault(self._prompt_text(context), ([], []))
                if continuation_enc[0] not in ids:
                    ids.append(continuation_enc[0])
                indices.append(n)
            elif continuation_enc:
                by_sequence.setdefault((*context_enc, *continuation_enc), []).append(n)
            else:  # nothing to score: log 1, and greedy (as lm-eval's hf sums and checks no tokens)
                answers[n] = (0.0, True)
                self.cache_hook.add_partial("loglikelihood", requests[n][0], answers[n])

        def prompt_done(indices: list[int], scored: dict[int, tuple[float, bool]]) -> None:
            """Answer a prompt's requests and cache them (lm-eval's --use_cache) the moment it is read."""
            self.prompts_scored += 1
            for n in indices:
                answers[n] = scored[requests[n][2][0]]
            cache_answers(self.cache_hook, "loglikelihood", [(requests[n][0], answers[n]) for n in indices])

        def sequence_done(indices: list[int], scored: list[tuple[float, bool] | None]) -> None:
            """Answer a token sequence's requests (each its continuation's tokens) and cache them."""
            self.sequences_scored += 1
            for n in indices:
                tokens = [t for t in scored[len(requests[n][1]) :] if t is not None]
                answers[n] = (math.fsum(lp for lp, _ in tokens), all(top for _, top in tokens))
            cache_answers(self.cache_hook, "loglikelihood", [(requests[n][0], answers[n]) for n in indices])

        # the multi-token requests first: a server that cannot score them fails the run at once
        jobs: list[tuple[Job, Callable[[Any], None]]] = []
        for sequence, indices in by_sequence.items():
            request = requests[indices[0]]
            job = partial(self._score_sequence, tokens=sequence, about=request[0])
            jobs.append((job, partial(sequence_done, indices)))
        for prompt, (ids, indices) in by_prompt.items():
            jobs.append((partial(self._score_prompt, prompt=prompt, ids=ids), partial(prompt_done, indices)))
        before = self._prefix_counters()
        self._run_all([job for job, _ in jobs], lambda k, result: jobs[k][1](result), "Scoring prompts", disable_tqdm)
        self._note_prefix_cache(before)
        return answers

    def _check_context(self, needed: list[int], what: str) -> None:
        """With `max_length`: requests needing more tokens are an error, or, with `allow_truncation`,
        counted and logged (and sent as they are: the server decides)."""
        if self.max_length is None:
            return
        if refuse_or_count(
            "biasmonkey-server", needed, self.max_length, self.allow_truncation, self.truncation_cuts, what
        ):
            log.warning(
                "biasmonkey-server: %s (sent as they are; the server cuts or refuses them)",
                self.truncation_cuts.sentence(self.max_length),
            )

    def _prompt_text(self, context: str) -> str:
        """The text the server tokenizes: lm-eval's context, trailing spaces moved to the continuation
        as `TemplateLM._encode_pair` moves them; an empty context is the prefix token's text."""
        return context.rstrip() if context else self.tokenizer.decode([self.prefix_token_id])

    async def _score_prompt(
        self, client: httpx.AsyncClient, prompt: str, ids: list[int]
    ) -> dict[int, tuple[float, bool]]:
        payload: dict[str, Any] = {
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": self.top_logprobs,
            "logit_bias": {k: v for k, v in self.stop_bias.items() if int(k) not in ids},
            **self._neutral_fields({}),  # no repetition penalty: the generated token is the top one
        }
        if self.token_id_logprobs:
            # also the special tokens': the one generated token is never one of them (their bias),
            # but one of them may be the model's top token, and then no answer spelling is greedy
            specials = [int(k) for k in self.stop_bias if int(k) not in ids]
            payload.update(logprob_token_ids=ids + specials, return_tokens_as_token_ids=True)
        top, generated = await self._post(client, "/completions", payload, partial(_read_top, about=_excerpt(prompt)))
        return self._read_spellings(top, ids, generated)

    async def _score_sequence(
        self, client: httpx.AsyncClient, tokens: tuple[int, ...], about: tuple[str, str]
    ) -> list[tuple[float, bool] | None]:
        """Each token's (prompt log-probability, is the top token) in one token sequence (see the module
        docstring); `about` is one (context, continuation) it scores, named in errors."""
        payload: dict[str, Any] = {
            "prompt": list(tokens),
            "max_tokens": 1,
            "temperature": 0,
            "echo": True,
            "logprobs": 1,
        }
        if self.token_id_logprobs:
            payload["return_tokens_as_token_ids"] = True  # the echoed tokens can then be checked
        context, continuation = about
        unsupported = (
            f"biasmonkey-server scores a multi-token continuation ({continuation!r} after …{context[-40:]!r}, "
            f"{len(tokens)} tokens with its context; e.g. the cognitive-bias tasks' 'Option N:' labels in exact "
            "mode) from the prompt's log-probabilities: a token-id prompt with `echo` and `logprobs`, as vLLM "
            "gives them. For a server that cannot: serve the model with vLLM, use --backend hf, or run these "
            'tasks with --metadata \'{"mode": "generate"}\' through the server.'
        )
        about = f"{continuation!r} after {_excerpt(context)}"
        read = partial(_read_echo, tokens=tokens, about=about)
        return await self._post(client, "/completions", payload, read, unsupported)

    def _read_spellings(
        self, top: dict[str, float], ids: list[int], generated: str | None = None
    ) -> dict[int, tuple[float, bool]]:
        """Each token's (log-probability, is the model's top token) from one top-k dict, keyed by token
        id (`token_id:330`) or by text (" A"); tokens the dict lacks get the imputed floor.

        The top token is the dict's best entry. Keyed by id, the dict may hold only the requested
        ids: then `generated` (the token generated at temperature 0, the top of the others) decides;
        if it is not in the dict, the top token is not either and no id is greedy."""
        by_id = all(k.startswith(TOKEN_ID_KEY) for k in top)
        pairs = [(k.removeprefix(TOKEN_ID_KEY) if by_id else k, float(v)) for k, v in top.items()]
        wanted = [str(i) if by_id else spaced_token(self.tokenizer.decode([i])) for i in ids]
        present = {key if by_id else spaced_token(key) for key, _ in pairs}
        logprobs, n_imputed = spelling_logprobs(pairs, wanted)
        self.imputed += n_imputed
        best: str | None = max(pairs, key=lambda kv: kv[1])[0]
        best = best if by_id else spaced_token(best)
        if by_id and generated is not None and generated.removeprefix(TOKEN_ID_KEY) not in present:
            best = None  # the model's top token is none of those returned
        return {
            i: (lp if key in present else ImputedLogprob(lp), key == best) for i, key, lp in zip(ids, wanted, logprobs)
        }

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError(
            "biasmonkey-server scores answers from next-token log-probabilities; rolling (perplexity) "
            "tasks need prompt log-probabilities: use lm-eval's local-completions backend for them"
        )

    # ------------------------------------------------------------------ generation

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """Greedy completions once per distinct (prompt, settings); sampled ones as independent draws,
        one for each request (see the module docstring)."""
        distinct: dict[tuple[str, str], tuple[str, dict[str, Any], list[int]]] = {}  # -> (prompt, settings, requests)
        for n, (context, gen_kwargs) in enumerate(r.args for r in requests):
            key = (context, repr(sorted(gen_kwargs.items())))
            distinct.setdefault(key, (context, gen_kwargs, []))[2].append(n)
        texts: list[Any] = [None] * len(requests)
        if self.max_length is not None:
            needed = [
                len(self.tok_encode(c)) + int(k.get("max_gen_toks", self.max_gen_toks)) for c, k, _ in distinct.values()
            ]
            self._check_context(needed, "generation prompts")

        def answer(indices: list[int], greedy: bool) -> Callable[[int, str], None]:
            """`emit(j, text)`: answer the j-th of `indices` (all of them: one greedy prompt) the moment
            the text is read, and cache it (lm-eval's --use_cache)."""

            def emit(j: int, text: str) -> None:
                answered = indices if greedy else indices[j : j + 1]
                for n in answered:
                    texts[n] = text
                cache_answers(self.cache_hook, "generate_until", [(requests[n].args, text) for n in answered])

            return emit

        jobs: list[Job] = []
        for context, kwargs, indices in distinct.values():
            if not _is_sampled(kwargs):  # one completion for every copy
                emit = answer(indices, greedy=True)
                jobs.append(partial(self._draw, context=context, gen_kwargs=kwargs, first=0, count=1, emit=emit))
                continue
            for first in range(0, len(indices), MAX_N):  # a draw for each copy
                chunk = indices[first : first + MAX_N]
                emit = answer(chunk, greedy=False)
                jobs.append(
                    partial(self._draw, context=context, gen_kwargs=kwargs, first=first, count=len(chunk), emit=emit)
                )
        before = self._prefix_counters()
        self._run_all(jobs, lambda k, _: None, "Generating", disable_tqdm)
        self._note_prefix_cache(before)
        return texts

    def _generation_payload(self, context: str, gen_kwargs: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        until = gen_kwargs.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        sampled = _is_sampled(gen_kwargs)
        payload: dict[str, Any] = {
            "prompt": context,
            "max_tokens": int(gen_kwargs.get("max_gen_toks", self.max_gen_toks)),
            "temperature": float(gen_kwargs.get("temperature", 1.0)) if sampled else 0.0,
        }
        if until:
            payload["stop"] = until
        given = {name: gen_kwargs[name] for name in PASSED_ON if name in gen_kwargs}
        payload.update(self._neutral_fields(given), **given)
        return payload, until

    async def _draw(
        self,
        client: httpx.AsyncClient,
        context: str,
        gen_kwargs: dict[str, Any],
        first: int,
        count: int,
        emit: Callable[[int, str], None],
    ) -> None:
        """`count` completions of one prompt (draws first … first + count - 1 of its sampled
        requests; one greedy completion with count 1), each handed to `emit(j, text)` as it is read."""
        sampled = _is_sampled(gen_kwargs)
        seed = gen_kwargs.get("seed") if sampled else None
        j = 0
        while j < count:
            if j and self._failures:  # a request failed for good: start no new one
                return
            request, until = self._generation_payload(context, gen_kwargs)  # less what the server refused
            if seed is not None:
                request["seed"] = int(seed) + first + j  # distinct draws need distinct seeds
            if sampled and count - j > 1 and self.sample_n:
                request["n"] = count - j
            texts = await self._post(client, "/completions", request, _read_texts)
            if len(texts) < request.get("n", 1):
                self.sample_n = False  # the server ignores `n`: one request per draw from now on
            for text in texts[: count - j]:
                emit(j, _cut(text, until))
                j += 1
                self.draws += sampled

    # ------------------------------------------------------------------ request fields

    def _neutral_fields(self, given: dict[str, Any]) -> dict[str, Any]:
        """The sampling fields that keep the model's own distribution (NEUTRAL_FIELDS), less those the
        task gives and those the server refused."""
        return {name: values[0] for name, values in self._neutral.items() if values and name not in given}

    def _relax(self, payload: dict[str, Any], message: str) -> dict[str, Any] | None:
        """The payload without what a server rejected (HTTP 400/422): vLLM's token-id fields, or our
        neutral sampling fields the message names (their next value, or none), or else `n`. None when
        nothing we may leave out explains the rejection."""
        if any(f in payload and f in message for f in TOKEN_ID_FIELDS):
            self.token_id_logprobs = False
            return {k: v for k, v in payload.items() if k not in TOKEN_ID_FIELDS}
        relaxed = dict(payload)
        for name, values in self._neutral.items():
            if name in payload and name in message and payload[name] in NEUTRAL_FIELDS[name]:
                if values and payload[name] == values[0]:
                    values.pop(0)  # this value is refused: the next one, or none
                if values:
                    relaxed[name] = values[0]
                else:
                    del relaxed[name]
        if relaxed != payload:
            return relaxed
        if int(payload.get("n", 1)) > 1:  # e.g. llama.cpp's "Only one completion choice is allowed"
            self.sample_n = False
            del relaxed["n"]
            return relaxed
        return None

    # ------------------------------------------------------------------ prefix cache

    def _prefix_counters(self) -> dict[str, float] | None:
        headers = {"Authorization": f"Bearer {self._api_key.value}"} if self._api_key else None
        return read_prefix_cache(self.base_url, METRICS_TIMEOUT, headers)

    def _note_prefix_cache(self, before: dict[str, float] | None) -> None:
        """Log the server's prefix-cache hits since `before` and add them to `self.prefix_cache`."""
        after = self._prefix_counters() if before is not None else None
        if before is None or after is None:
            return
        queries, hits = after["queries"] - before["queries"], after["hits"] - before["hits"]
        if queries < 0 or hits < 0:  # the server restarted in between
            return
        total = self.prefix_cache or {"queries": 0.0, "hits": 0.0}
        self.prefix_cache = {"queries": total["queries"] + queries, "hits": total["hits"] + hits}
        share = f"{100 * hits / queries:.1f}%" if queries else "n/a"
        log.info(f"prefix cache: {share} of {queries:.0f} prompt tokens hit ({self.base_url})")

    # ------------------------------------------------------------------ HTTP

    def _run_all(self, jobs: Sequence[Job], done: Callable[[int, Any], None], label: str, disable_tqdm: bool) -> None:
        """Run coroutine factories concurrently (at most num_concurrent at a time); `done(k, result)`
        gets each result as soon as it is in."""
        asyncio.run(self._gather(jobs, done, label, disable_tqdm))

    async def _gather(
        self, jobs: Sequence[Job], done: Callable[[int, Any], None], label: str, disable_tqdm: bool
    ) -> None:
        limit = asyncio.Semaphore(self.num_concurrent)
        limits = httpx.Limits(max_connections=self.num_concurrent)
        headers = {"Authorization": f"Bearer {self._api_key.value}"} if self._api_key else {}
        failures: list[Exception] = []
        self._failures = failures  # a job making several requests stops too
        with tqdm(total=len(jobs), desc=f"{label} ({self.base_url})", disable=disable_tqdm) as bar:
            async with httpx.AsyncClient(timeout=self.timeout, limits=limits, headers=headers) as client:

                async def run(k: int, job: Job) -> None:
                    async with limit:
                        if failures:  # a request failed for good: start no new one
                            return
                        try:
                            result = await job(client)
                        except Exception as err:  # the others in flight finish (and are cached) first
                            failures.append(err)
                            return
                        done(k, result)
                        bar.update(1)

                await asyncio.gather(*(run(k, job) for k, job in enumerate(jobs)))
        if failures:
            raise failures[0]

    async def _post(
        self,
        client: httpx.AsyncClient,
        path: str,
        payload: dict[str, Any],
        read: Callable[[Any], T],
        unsupported: str | None = None,
    ) -> T:
        """POST and `read` the answer, retrying transient failures; a ServerError names the URL,
        the attempts and what went wrong. `unsupported`: what a server that refuses the request
        (HTTP 400/404/422), or answers without what it needs (`Unsupported`), cannot do and the fix:
        then the error says so, without retrying."""
        url = self.base_url + path
        if self.model:
            payload = {"model": self.model, **payload}
        attempts = self.max_retries + 1
        attempt = 0
        while True:
            attempt += 1
            self.requests_sent += 1
            try:
                response = await asyncio.wait_for(client.post(url, json=payload), self.timeout)
            except RETRIED_ERRORS as err:
                timed_out = isinstance(err, (asyncio.TimeoutError, httpx.TimeoutException))
                problem = f"no answer: {f'timed out after {self.timeout:g} s' if timed_out else repr(err)}"
            else:
                status, message = response.status_code, response.text
                if status == 200:
                    try:
                        body = response.json()
                        self._same_model(body, url)
                        return read(body)
                    except Unsupported as err:
                        raise self._error(f"{url}: HTTP 200, but {err}. {unsupported or ''}".rstrip()) from None
                    except Invalid as err:  # never scored, so never cached
                        problem = f"invalid answer (HTTP 200): {err}"
                    except ValueError as err:  # not JSON (JSONDecodeError), or Malformed
                        what = err if isinstance(err, Malformed) else "not JSON"
                        problem = f"malformed answer (HTTP 200, {what}): {message[:EXCERPT]!r}"
                elif status in (400, 422) and (relaxed := self._relax(payload, message)) is not None:
                    # a server that rejects optional fields (vLLM's token ids, our sampling fields, `n`):
                    # ask again without them (not an attempt)
                    payload = relaxed
                    attempt -= 1
                    continue
                elif status in REFUSED_STATUS:
                    raise self._error(f"{url}: HTTP {status}: {self._refusal()} ({message[:EXCERPT]})")
                elif unsupported and (status in (400, 404, 422) or (status == 500 and "validation error" in message)):
                    # refused as asked (llama.cpp's server answers a prompt it cannot parse with HTTP 500)
                    cut = "…" if len(message) > EXCERPT else ""
                    raise self._error(f"{url}: HTTP {status}: {message[:EXCERPT]}{cut}\n{unsupported}")
                elif status not in RETRIED_STATUS or "logits_all" in message:
                    raise self._error(f"{url}: HTTP {status}: {message[:1000]}{_hint(message)}")
                else:
                    problem = f"HTTP {status}: {message[:1000]}{_hint(message)}"
            if attempt >= attempts:
                raise self._error(
                    f"{url}: {problem} (gave up after {attempt} attempts: timeout={self.timeout:g} s "
                    f"each, max_retries={self.max_retries})"
                )
            backoff = min(0.5 * 2 ** (attempt - 1), MAX_BACKOFF, self.timeout)
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))

    def _same_model(self, body: Any, url: str) -> None:
        """Every answer of a run must name the model its first answer named (its `model` field, where
        given): one from another model (a server restarted with other weights, several servers behind
        one URL) stops the run, before that answer is scored or cached."""
        named = body.get("model") if isinstance(body, dict) else None
        if not isinstance(named, str) or not named:
            return
        if self.answering_model is None:
            self.answering_model = named
        elif named != self.answering_model:
            raise self._error(
                f"{url}: the served model changed during the run: this answer is from model {named!r}, the "
                f"earlier ones from {self.answering_model!r}. Scores of two models would be mixed, so the run "
                "stops (this answer is not cached). Serve one model at this URL and run again"
            )

    def _refusal(self) -> str:
        """Why the server refused us, in words: no key, or which key."""
        if self._api_key is None:
            return (
                f"the server wants an API key and none was sent: set ${self.api_key_env}, or name the "
                "environment variable that holds it with api_key_env=NAME"
            )
        return f"the server refused the API key from {self.api_key_source}"

    def _error(self, message: str) -> ServerError:
        """A ServerError whose message cannot show the key (a server may echo what it was sent)."""
        if self._api_key is not None:
            message = message.replace(self._api_key.value, "<api key>")
        return ServerError(message)
