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

Requests run concurrently (`num_concurrent`, default 4); connection errors, timeouts, 408, 409,
425, 429 and 5xx are retried with exponential backoff (`max_retries`). Any other failure is an
error naming the server and its message.

Model arguments: `base_url` (the server's `/v1` URL), `model` (the served name), `tokenizer`
(HF folder or hub id of the served model's tokenizer, default: `model`; requests are split into
tokens as lm-eval splits them), `num_concurrent`, `top_logprobs` (default 20), `max_retries` (5), `timeout`
(seconds, 300), `token_id_logprobs` (true), `max_gen_toks` (256).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import httpx
from lm_eval.api.model import TemplateLM
from lm_eval.api.registry import register_model
from tqdm import tqdm

from biasmonkey.metrics.top_logprobs import ImputedLogprob, spaced_token, spelling_logprobs

RETRIED_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
RETRIED_ERRORS = (httpx.TransportError,)  # connection refused/reset, timeouts, protocol errors
TOKEN_ID_FIELDS = ("logprob_token_ids", "return_tokens_as_token_ids")
TOKEN_ID_KEY = "token_id:"
STOP_BIAS = -100.0
Job = Callable[[httpx.AsyncClient], Awaitable[Any]]  # one request, given the shared client


class ServerError(RuntimeError):
    """The server failed a request for a reason retrying will not fix."""


def _hint(message: str) -> str:
    """What to change, for the failures we know."""
    if "logits_all" in message:
        return " (llama.cpp's server: start it with `--logits_all true` to return log-probabilities)"
    if "max_logprobs" in message or "logprobs" in message:
        return " (the server refuses these log-probabilities: lower top_logprobs=, or raise its limit, e.g. vLLM --max-logprobs)"
    return ""


def _as_bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


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
        max_retries: int = 5,
        timeout: float = 300.0,
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
        from transformers import AutoTokenizer

        self.base_url = base_url.rstrip("/")
        self.model = model
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        except (OSError, ValueError) as err:
            raise ValueError(
                f"biasmonkey-server: cannot load the tokenizer {tokenizer!r} ({err}); pass "
                "tokenizer=<HF folder or hub id of the served model's tokenizer>"
            ) from err
        self.tokenizer_source = tokenizer
        self.num_concurrent = int(num_concurrent)
        self.top_logprobs = int(top_logprobs)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.token_id_logprobs = _as_bool(token_id_logprobs)
        self.max_gen_toks = int(max_gen_toks)
        for name in ("num_concurrent", "top_logprobs", "max_gen_toks"):
            if getattr(self, name) < 1:
                raise ValueError(f"biasmonkey-server: {name}={getattr(self, name)} must be at least 1")
        self.stop_bias = {str(i): STOP_BIAS for i in self.tokenizer.all_special_ids}
        self.reset_counters()

    def reset_counters(self) -> None:
        self.requests_sent = 0  # HTTP requests, retries included
        self.prompts_scored = 0  # distinct prompts of loglikelihood requests
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
        by_prompt: dict[str, list[int]] = {}
        keys = []
        for (context, continuation), _, continuation_enc in requests:
            if len(continuation_enc) != 1:
                raise ValueError(
                    f"biasmonkey-server reads one-token continuations from the next-token log-probabilities; "
                    f"{continuation!r} after …{context[-40:]!r} is {len(continuation_enc)} tokens for "
                    f"{self.tokenizer_source}. Multi-token answers (the cognitive-bias tasks' 'Option N:' labels "
                    f"in exact mode) need a model pass over each continuation: use --backend hf, or run them "
                    f'with --metadata \'{{"mode": "generate"}}\' through the server.'
                )
            prompt = self._prompt_text(context)
            ids = by_prompt.setdefault(prompt, [])
            if continuation_enc[0] not in ids:
                ids.append(continuation_enc[0])
            keys.append((prompt, continuation_enc[0]))

        answers = self._run_all(
            [lambda client, p=prompt, i=ids: self._score_prompt(client, p, i) for prompt, ids in by_prompt.items()],
            "Scoring prompts",
            disable_tqdm,
        )
        scored = dict(zip(by_prompt, answers))
        self.prompts_scored += len(by_prompt)
        results = []
        for ((context, continuation), _, _), (prompt, token) in zip(requests, keys):
            answer = scored[prompt][token]
            self.cache_hook.add_partial("loglikelihood", (context, continuation), answer)
            results.append(answer)
        return results

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
        choice = (await self._post(client, "/completions", payload))["choices"][0]
        top = ((choice.get("logprobs") or {}).get("top_logprobs") or [None])[0]
        if not top:
            raise ServerError(
                f"{self.base_url}: no log-probabilities in the response to prompt …{prompt[-60:]!r} "
                f"(finish_reason={choice.get('finish_reason')!r}); does the server return `logprobs`?"
            )
        return self._read_top(top, ids)

    def _read_top(self, top: dict[str, float], ids: list[int]) -> dict[int, tuple[float, bool]]:
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
        distinct: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        for context, gen_kwargs in (r.args for r in requests):
            distinct.setdefault((context, repr(sorted(gen_kwargs.items()))), (context, gen_kwargs))
        texts = self._run_all(
            [lambda client, c=context, k=kwargs: self._generate(client, c, k) for context, kwargs in distinct.values()],
            "Generating",
            disable_tqdm,
        )
        done = dict(zip(distinct, texts))
        results = []
        for request in requests:
            context, gen_kwargs = request.args
            text = done[(context, repr(sorted(gen_kwargs.items())))]
            self.cache_hook.add_partial("generate_until", request.args, text)
            results.append(text)
        return results

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
        text = (await self._post(client, "/completions", payload))["choices"][0]["text"]
        for stop in until:  # servers that cap the number of stop strings
            text = text.split(stop, 1)[0]
        return text

    # ------------------------------------------------------------------ HTTP

    def _run_all(self, jobs: Sequence[Job], label: str, disable_tqdm: bool) -> list[Any]:
        """Run coroutine factories concurrently (at most num_concurrent at a time), in order."""
        return asyncio.run(self._gather(jobs, label, disable_tqdm))

    async def _gather(self, jobs: Sequence[Job], label: str, disable_tqdm: bool) -> list[Any]:
        limit = asyncio.Semaphore(self.num_concurrent)
        limits = httpx.Limits(max_connections=self.num_concurrent)
        with tqdm(total=len(jobs), desc=f"{label} ({self.base_url})", disable=disable_tqdm) as bar:
            async with httpx.AsyncClient(timeout=self.timeout, limits=limits) as client:

                async def run(job: Job) -> Any:
                    async with limit:
                        result = await job(client)
                    bar.update(1)
                    return result

                return await asyncio.gather(*(run(job) for job in jobs))

    async def _post(self, client: httpx.AsyncClient, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST with retries on transient failures; other failures name the server and its message."""
        url = self.base_url + path
        if self.model:
            payload = {"model": self.model, **payload}
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                self.requests_sent += 1
                response = await client.post(url, json=payload)
            except RETRIED_ERRORS as err:
                if last:
                    raise ServerError(f"{url}: no answer after {attempt + 1} attempts ({err!r})") from err
            else:
                if response.status_code == 200:
                    return response.json()
                message = response.text[:1000]
                if response.status_code in (400, 422) and any(f in message for f in TOKEN_ID_FIELDS):
                    # a server that rejects vLLM's token-id fields: ask for the top-k alone
                    self.token_id_logprobs = False
                    payload = {k: v for k, v in payload.items() if k not in TOKEN_ID_FIELDS}
                    continue
                if response.status_code not in RETRIED_STATUS or "logits_all" in message or last:
                    raise ServerError(f"{url}: HTTP {response.status_code}: {message}{_hint(message)}")
            await asyncio.sleep(min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")
