"""`--model biasmonkey-server`: exact mode against any OpenAI-compatible completions server.

Works with vLLM (`vllm serve`), SGLang and llama.cpp's server (`python -m llama_cpp.server`).
lm-eval's own API backends (`local-completions`, `vllm`, `sglang`) score each (context,
continuation) request as one full sequence with `echo` and prompt log-probabilities, which costs
one sequence per answer spelling and switches the server's prefix cache off. This backend sends
**one request per distinct prompt** instead: one generated token (`max_tokens=1`, temperature 0,
no `echo`, so no prompt log-probabilities) with its top-k alternatives, and reads every answer
spelling's log-probability from that one response.

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
- Multi-token continuations cannot be read from one next-token distribution: such a request is an
  error before anything is sent (the cognitive tasks' "Option N:" labels in exact mode; run them
  with `mode=generate` through the server, or with `--backend hf`).
- Empty contexts (the yes-no tasks' no-context measurement) are sent as the text of the model's
  prefix token (BOS, else EOS), which servers parse as that special token, as lm-eval's HF
  backend conditions on it.
- `generate_until` (sample and generate modes): one request per distinct (prompt, settings).

Off the happy path:

- Nothing finished is lost: each prompt's answers go to lm-eval's request cache (`--use_cache`,
  committed to its SQLite file at once) as soon as its response is read, so a run that fails
  later resumes with only the missing prompts. After a request fails for good no new request
  starts; those in flight finish (and are cached), then the error is raised.
- Bounded waits: each attempt gets `timeout` seconds in all (connecting, queueing at the server,
  reading), and a request gets `max_retries + 1` attempts, with a randomised exponential backoff
  of at most min(0.5 * 2^i s, 10 s, timeout) between attempts i and i + 1. So a server that hangs
  fails the run after about timeout * (max_retries + 1): 8 minutes with the defaults, 120 s and 3
  retries, chosen to outlast a busy server's queue (a 1-token request takes well under a
  second on a GPU) without stalling an unattended run for half an hour. Raise `timeout` for slow
  generation (a CPU llama.cpp server writing `max_gen_toks` tokens for several concurrent
  requests, which it serves one at a time).
- Retried: connection errors, timeouts, HTTP 408, 409, 425, 429 and 5xx, and HTTP 200 answers
  that are not JSON or lack the fields read (`choices`, `logprobs`, `text`). When the attempts
  run out, and for any other failure, the error (`ServerError`) names the URL, the attempts and
  what went wrong (the server's message, or the first 200 characters of a malformed answer).
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
`token_id_logprobs` (true), `max_gen_toks` (256).
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import httpx
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from tqdm import tqdm

from biasmonkey.metrics.top_logprobs import ImputedLogprob, spaced_token, spelling_logprobs

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
T = TypeVar("T")
Job = Callable[[httpx.AsyncClient], Awaitable[Any]]  # one request, given the shared client


class ServerError(RuntimeError):
    """The server failed a request for a reason retrying will not fix, or failed every attempt."""


class Malformed(ValueError):
    """An HTTP 200 answer without what the request needs (retried like a 5xx)."""


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
        raise ValueError(f"biasmonkey-server: {name}={value!r} must be a whole number") from None
    if number < minimum:
        raise ValueError(f"biasmonkey-server: {name}={number} must be at least {minimum}")
    return number


def _seconds(name: str, value: Any) -> float:
    """A model argument that must be a positive, finite number of seconds."""
    try:
        number = float(str(value))
    except ValueError:
        number = math.nan
    if not (0 < number < math.inf):
        raise ValueError(f"biasmonkey-server: {name}={value!r} must be a positive number of seconds")
    return number


def _first_choice(body: Any) -> dict[str, Any]:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        raise Malformed("no `choices`")
    return choices[0]


def _read_top(body: Any) -> dict[str, float]:
    """`choices[0].logprobs.top_logprobs[0]`: the first generated token's top-k, {token: log-probability}."""
    choice = _first_choice(body)
    logprobs = choice.get("logprobs")
    tops = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    top = tops[0] if isinstance(tops, list) and tops else None
    if not (isinstance(top, dict) and top and all(isinstance(v, (int, float)) for v in top.values())):
        raise Malformed(
            f"no log-probabilities in `choices[0].logprobs.top_logprobs` (finish_reason="
            f"{choice.get('finish_reason')!r}); does the server return `logprobs`?"
        )
    return top


def _read_text(body: Any) -> str:
    """`choices[0].text`: the generated text."""
    text = _first_choice(body).get("text")
    if not isinstance(text, str):
        raise Malformed("no `text` in `choices[0]`")
    return text


@register_model("biasmonkey-server")
class ServedLM(TemplateLM):
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
        **_harness_args: Any,  # batch_size, device, …: meaningless for a server
    ) -> None:
        super().__init__()
        if not base_url:
            raise ValueError("biasmonkey-server needs base_url=<the server's /v1 URL> in --model_args")
        tokenizer = tokenizer or model
        if not tokenizer:
            raise ValueError(
                "biasmonkey-server needs tokenizer=<HF folder or hub id of the served model's tokenizer> in --model_args"
            )
        self.base_url = str(base_url).rstrip("/")
        self.model = model
        self.num_concurrent = _whole("num_concurrent", num_concurrent, 1)
        self.top_logprobs = _whole("top_logprobs", top_logprobs, 1)
        self.max_gen_toks = _whole("max_gen_toks", max_gen_toks, 1)
        self.max_retries = _whole("max_retries", max_retries, 0)
        self.timeout = _seconds("timeout", timeout)
        self.token_id_logprobs = _as_bool(token_id_logprobs)
        self._api_key, self.api_key_env, self.api_key_source = self._find_key(api_key, api_key_env)
        from transformers import AutoTokenizer

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        except (OSError, ValueError) as err:
            raise ValueError(
                f"biasmonkey-server: cannot load the tokenizer {tokenizer!r} ({err}); pass "
                "tokenizer=<HF folder or hub id of the served model's tokenizer>"
            ) from err
        self.tokenizer_source = tokenizer
        self.stop_bias = {str(i): STOP_BIAS for i in self.tokenizer.all_special_ids}
        self.reset_counters()

    @staticmethod
    def _find_key(api_key: Any, api_key_env: Any) -> tuple[Secret | None, str | None, str]:
        """(the key, the variable it comes from, where it comes from in words)."""
        if api_key not in (None, "") and api_key_env not in (None, ""):
            raise ValueError("biasmonkey-server: give api_key_env=NAME or api_key=KEY, not both")
        if api_key not in (None, ""):
            return Secret(str(api_key)), None, "the api_key model arg"
        name = str(api_key_env or API_KEY_ENV)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):  # never echo it: it may be the key itself
            raise ValueError("biasmonkey-server: api_key_env= takes the name of an environment variable, not a key")
        key = os.environ.get(name) or None
        if key is None and api_key_env:
            raise ValueError(f"biasmonkey-server: api_key_env={name}, but the environment variable ${name} is not set")
        return (Secret(key) if key else None), name, f"${name}"

    def reset_counters(self) -> None:
        self.requests_sent = 0  # HTTP requests, retries included
        self.prompts_scored = 0  # distinct prompts of loglikelihood requests answered
        self.imputed = 0  # spellings given the floor

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
        """Group the requests by prompt text, send one request per prompt, read each continuation."""
        by_prompt: dict[str, tuple[list[int], list[int]]] = {}  # prompt -> (token ids, request indices)
        for n, ((context, continuation), _, continuation_enc) in enumerate(requests):
            if len(continuation_enc) != 1:
                raise ValueError(
                    f"biasmonkey-server reads one-token continuations from the next-token log-probabilities; "
                    f"{continuation!r} after …{context[-40:]!r} is {len(continuation_enc)} tokens for "
                    f"{self.tokenizer_source}. Multi-token answers (the cognitive-bias tasks' 'Option N:' labels "
                    f"in exact mode) need a model pass over each continuation: use --backend hf, or run them "
                    f'with --metadata \'{{"mode": "generate"}}\' through the server.'
                )
            ids, indices = by_prompt.setdefault(self._prompt_text(context), ([], []))
            if continuation_enc[0] not in ids:
                ids.append(continuation_enc[0])
            indices.append(n)

        answers: list[Any] = [None] * len(requests)
        groups = list(by_prompt.values())

        def done(k: int, scored: dict[int, tuple[float, bool]]) -> None:
            """Answer prompt k's requests and cache them (lm-eval's --use_cache) the moment it is read."""
            self.prompts_scored += 1
            for n in groups[k][1]:
                key, _, continuation_enc = requests[n]
                answers[n] = scored[continuation_enc[0]]
                self.cache_hook.add_partial("loglikelihood", key, answers[n])

        jobs = [
            lambda client, p=prompt, i=ids: self._score_prompt(client, p, i) for prompt, (ids, _) in by_prompt.items()
        ]
        self._run_all(jobs, done, "Scoring prompts", disable_tqdm)
        return answers

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
        }
        if self.token_id_logprobs:
            payload.update(logprob_token_ids=ids, return_tokens_as_token_ids=True)
        return self._read_spellings(await self._post(client, "/completions", payload, _read_top), ids)

    def _read_spellings(self, top: dict[str, float], ids: list[int]) -> dict[int, tuple[float, bool]]:
        """Each token's (log-probability, is the top token) from one top-k dict, keyed by token id
        (`token_id:330`) or by text (" A"); tokens the dict lacks get the imputed floor."""
        by_id = all(k.startswith(TOKEN_ID_KEY) for k in top)
        pairs = [(k.removeprefix(TOKEN_ID_KEY) if by_id else k, float(v)) for k, v in top.items()]
        wanted = [str(i) if by_id else spaced_token(self.tokenizer.decode([i])) for i in ids]
        present = {key if by_id else spaced_token(key) for key, _ in pairs}
        logprobs, n_imputed = spelling_logprobs(pairs, wanted)
        self.imputed += n_imputed
        best = max(pairs, key=lambda kv: kv[1])[0]
        best = best if by_id else spaced_token(best)
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
        """Greedy (or sampled, as the task asks) completions, one request per distinct (prompt, settings)."""
        distinct: dict[tuple[str, str], tuple[str, dict[str, Any], list[int]]] = {}  # -> (prompt, settings, requests)
        for n, (context, gen_kwargs) in enumerate(r.args for r in requests):
            key = (context, repr(sorted(gen_kwargs.items())))
            distinct.setdefault(key, (context, gen_kwargs, []))[2].append(n)
        texts: list[Any] = [None] * len(requests)
        groups = list(distinct.values())

        def done(k: int, text: str) -> None:
            """Answer prompt k's requests and cache them (lm-eval's --use_cache) the moment it is read."""
            for n in groups[k][2]:
                texts[n] = text
                self.cache_hook.add_partial("generate_until", requests[n].args, text)

        jobs = [lambda client, c=context, k=kwargs: self._generate(client, c, k) for context, kwargs, _ in groups]
        self._run_all(jobs, done, "Generating", disable_tqdm)
        return texts

    async def _generate(self, client: httpx.AsyncClient, context: str, gen_kwargs: dict[str, Any]) -> str:
        until = gen_kwargs.get("until") or []
        until = [until] if isinstance(until, str) else list(until)
        sampled = _as_bool(gen_kwargs.get("do_sample", False))
        payload: dict[str, Any] = {
            "prompt": context,
            "max_tokens": int(gen_kwargs.get("max_gen_toks", self.max_gen_toks)),
            "temperature": float(gen_kwargs.get("temperature", 1.0)) if sampled else 0.0,
        }
        if until:
            payload["stop"] = until
        for name in ("top_p", "seed"):
            if name in gen_kwargs:
                payload[name] = gen_kwargs[name]
        text = await self._post(client, "/completions", payload, _read_text)
        for stop in until:  # servers that cap the number of stop strings
            text = text.split(stop, 1)[0]
        return text

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

    async def _post(self, client: httpx.AsyncClient, path: str, payload: dict[str, Any], read: Callable[[Any], T]) -> T:
        """POST and `read` the answer, retrying transient failures; a ServerError names the URL,
        the attempts and what went wrong."""
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
                        return read(response.json())
                    except ValueError as err:  # not JSON (JSONDecodeError), or Malformed
                        what = err if isinstance(err, Malformed) else "not JSON"
                        problem = f"malformed answer (HTTP 200, {what}): {message[:EXCERPT]!r}"
                elif status in (400, 422) and any(f in message and f in payload for f in TOKEN_ID_FIELDS):
                    # a server that rejects vLLM's token-id fields: ask for the top-k alone (not an attempt)
                    self.token_id_logprobs = False
                    payload = {k: v for k, v in payload.items() if k not in TOKEN_ID_FIELDS}
                    attempt -= 1
                    continue
                elif status in REFUSED_STATUS:
                    raise self._error(f"{url}: HTTP {status}: {self._refusal()} ({message[:EXCERPT]})")
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
