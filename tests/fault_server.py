"""A fault-injecting OpenAI-compatible completions server for tests (standard library only).

    from fault_server import FaultServer

    with FaultServer(fail_after=3) as server:  # HTTP 500 forever after 3 good answers
        # server.url is the `/v1` URL, e.g. for
        # biasmonkey run --backend server --base-url URL --server-model m --tokenizer TINY_MODEL_FOLDER
        run_something(base_url=server.url)
        assert server.answered == 3 and len(server.posts) > 3
        server.fail_after = None  # healed: the next run gets normal answers
        server.clear()  # and is counted afresh

Any model name is accepted (`model` is only what GET /v1/models lists). It listens on 127.0.0.1 (a random port) in a background thread and answers like vLLM does for
`--model biasmonkey-server`:

- `POST /v1/completions` with `max_tokens: 1` and `logprob_token_ids: [ids]`: `choices[0].logprobs
  .top_logprobs[0]` keyed `"token_id:<id>"`, one entry per id; without `logprob_token_ids` (as
  llama.cpp): keyed by text, `TEXT_TOKENS`. The log-probabilities are deterministic, derived
  from (prompt, token) by `logprob`, and a valid distribution (they sum to at most 1).
- any other `POST /v1/completions` (generation): `text` (default " A"), deterministic; with
  `n: k` it answers k choices (indices 0 … k-1), unless `honor_n=False` (as llama.cpp: one).
- `GET /v1/models`: the served model `model`, with the fields of `model_card` if given (a dict, or a
  function called for each GET that returns one; e.g. vLLM's `root`, `created`, `permission`).
- `GET /props` (the server's root, as llama.cpp's server): `props` if given (a dict), else HTTP 404.
- `GET /metrics` (the server's root, as vLLM's Prometheus metrics): the text `metrics` if given
  (a str, or a function called for each GET that returns one), else HTTP 404.

Faults (constructor arguments, also plain attributes that a test may change between runs):

- `require_key="KEY"`: HTTP 401 unless `Authorization: Bearer KEY` (any path; not counted as a POST
  answer, but recorded).
- `delay=s`: every POST waits s seconds first.
- `hang=True`: POSTs are never answered (the handler waits until the server closes).
- `errors_then_ok=n`: the first n POSTs get HTTP 503, then normal answers.
- `malformed=n`: the first n POSTs (after any 503s) get HTTP 200 with `malformed_body` (default:
  not JSON); `malformed=FOREVER` for all of them.
- `script=[(status, body), …]`: the first POSTs get these answers, in order (a dict body is sent as
  JSON, a str as is), before any other fault.
- `fail_after=k`: after k good answers every POST fails, as `failure` says: "500" (HTTP 500),
  "drop" (the connection is closed without an answer) or "hang" (never answered).
- `swap_after=k`: after k good answers the server serves `swapped_model` (default "model-B"): the
  `model` of its answers and of `GET /v1/models` (as a server restarted with other weights).
- `trickle=s`: every request (any path) gets HTTP 200 headers at once, then a 2-byte chunk every s
  seconds, never the end (until the client hangs up or the server closes).
- `bad_logprob=x`: scoring answers (`max_tokens: 1` with `logprobs`) with every log-probability
  set to x: `POSITIVE_LOGPROB` (+2.5, a probability above 1) or `NAN_LOGPROB` (sent as the JSON
  `NaN` that Python and some servers write); after `bad_after` good answers (default 0), for
  `bad_answers` answers (default `FOREVER`). Not counted as good answers.

Records: `requests` (every request: `Recorded(method, path, body, headers, status)`; status None
when nothing was sent back), `posts` (the POSTs to /v1/completions), `answered` (good answers),
`answered_prompts` (their prompts, in order), `bad_prompts` (the prompts given `bad_logprob`). `clear()` forgets them (and restarts the fault
counts).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FOREVER = 1 << 62
TEXT_TOKENS = (" A", " B", " C", " D", " E", " F")
HANG_SECONDS = 600.0  # a hanging handler gives up after this, or when the server closes
POSITIVE_LOGPROB = 2.5  # a probability of e^2.5 = 12.2
NAN_LOGPROB = math.nan


def logprob(prompt: str, token: str, n_tokens: int) -> float:
    """A deterministic log-probability for `token` after `prompt`, one of `n_tokens` listed: each
    gets a weight in (0, 1] from a hash, normalised so the listed tokens share at most 90 %."""
    weight = (int(hashlib.sha256(f"{prompt}\0{token}".encode()).hexdigest()[:8], 16) % 1000 + 1) / 1000
    return math.log(0.9 * weight / n_tokens)


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    body: Any  # the parsed JSON body, the raw text if not JSON, None without a body
    headers: dict[str, str]
    status: int | None = None  # what it answered; None: no answer (dropped or hung)


class FaultServer:
    """An OpenAI-compatible completions server with injected faults (see the module docstring)."""

    def __init__(
        self,
        *,
        fail_after: int | None = None,
        failure: Literal["500", "drop", "hang"] = "500",
        hang: bool = False,
        malformed: int = 0,
        malformed_body: str = "<html>502 Bad Gateway</html>",
        errors_then_ok: int = 0,
        delay: float = 0.0,
        require_key: str | None = None,
        script: list[tuple[int, dict[str, Any] | str]] | None = None,
        model: str = "m",
        text: str = " A",
        honor_n: bool = True,
        metrics: str | Callable[[], str] | None = None,
        model_card: dict[str, Any] | Callable[[], dict[str, Any]] | None = None,
        props: dict[str, Any] | None = None,
        swap_after: int | None = None,
        swapped_model: str = "model-B",
        trickle: float | None = None,
        bad_logprob: float | None = None,
        bad_after: int = 0,
        bad_answers: int = FOREVER,
    ) -> None:
        self.fail_after, self.failure, self.hang = fail_after, failure, hang
        self.malformed, self.malformed_body, self.errors_then_ok = malformed, malformed_body, errors_then_ok
        self.delay, self.require_key, self.script = delay, require_key, list(script or [])
        self.model, self.text = model, text
        self.honor_n, self.metrics = honor_n, metrics
        self.model_card, self.props, self.trickle = model_card, props, trickle
        self.swap_after, self.swapped_model = swap_after, swapped_model
        self.bad_logprob, self.bad_after, self.bad_answers = bad_logprob, bad_after, bad_answers
        self.bad_prompts: list[str] = []  # prompts answered with `bad_logprob`
        self.requests: list[Recorded] = []
        self.answered = 0  # good answers (not 503s, malformed or scripted ones)
        self.answered_prompts: list[str] = []  # their prompts, in order
        self._errors = self._malformed = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._http = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving; hanging handlers return at once."""
        self._closing.set()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=10)

    def clear(self) -> None:
        """Forget the recorded requests and restart the counts (`answered`, 503s, malformed answers)."""
        with self._lock:
            self.requests.clear()
            self.answered_prompts.clear()
            self.bad_prompts.clear()
            self.answered = self._errors = self._malformed = 0

    @property
    def posts(self) -> list[Recorded]:
        """The requests to /v1/completions."""
        return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/") == "/v1/completions"]

    # ------------------------------------------------------------------ answers

    def _plan(self, record: Recorded) -> tuple[int | None, Any]:
        """(status, body) for one request; status None: no answer ("drop" or "hang")."""
        with self._lock:
            if self.require_key is not None and record.headers.get("authorization") != f"Bearer {self.require_key}":
                return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            if record.method == "GET":
                if record.path.rstrip("/") == "/v1/models":
                    card = self.model_card() if callable(self.model_card) else self.model_card
                    return 200, {"object": "list", "data": [{"id": self._serving(), "object": "model", **(card or {})}]}
                if record.path.rstrip("/") == "/props" and self.props is not None:
                    return 200, self.props
                if record.path.rstrip("/") == "/metrics" and self.metrics is not None:
                    return 200, self.metrics() if callable(self.metrics) else self.metrics
                return 404, {"error": f"no route {record.path}"}
            if record.path.rstrip("/") != "/v1/completions":
                return 404, {"error": f"no route {record.path}"}
            if not isinstance(record.body, dict):
                return 400, {"error": "the body is not a JSON object"}
            if self.hang:
                return None, "hang"
            if self.script:
                return self.script.pop(0)
            if self._errors < self.errors_then_ok:
                self._errors += 1
                return 503, {"error": "the server is busy (injected)"}
            if self._malformed < self.malformed:
                self._malformed += 1
                return 200, self.malformed_body
            if self._gives_bad_logprobs(record.body):
                self.bad_prompts.append(str(record.body.get("prompt", "")))
                return 200, self._completion(record.body, bad=self.bad_logprob)
            if self.fail_after is not None and self.answered >= self.fail_after:
                if self.failure == "500":
                    return 500, {"error": "internal server error (injected)"}
                return None, self.failure
            answer = self._completion(record.body)
            self.answered += 1
            self.answered_prompts.append(str(record.body.get("prompt", "")))
            return 200, answer

    def _serving(self) -> str:
        """The model served now: `model`, or `swapped_model` after `swap_after` good answers (lock held)."""
        swapped = self.swap_after is not None and self.answered >= self.swap_after
        return self.swapped_model if swapped else self.model

    def _gives_bad_logprobs(self, body: dict[str, Any]) -> bool:
        """A scoring request that gets `bad_logprob` (called with the lock held)."""
        scoring = body.get("max_tokens") == 1 and bool(body.get("logprobs"))
        due = self.answered >= self.bad_after and len(self.bad_prompts) < self.bad_answers
        return self.bad_logprob is not None and scoring and due

    def _completion(self, body: dict[str, Any], bad: float | None = None) -> dict[str, Any]:
        """A normal answer; with `bad`, every log-probability of a scoring answer is that value (lock held)."""
        prompt = str(body.get("prompt", ""))
        choice: dict[str, Any] = {"index": 0, "text": self.text, "finish_reason": "length", "logprobs": None}
        if body.get("max_tokens") == 1 and body.get("logprobs"):
            ids = body.get("logprob_token_ids")
            keys = [f"token_id:{i}" for i in ids] if ids else list(TEXT_TOKENS)
            top = {key: logprob(prompt, key, len(keys)) if bad is None else bad for key in keys}
            best = max(top, key=top.__getitem__) if bad is None else keys[0]
            choice.update(text=best, logprobs={"tokens": [best], "token_logprobs": [top[best]], "top_logprobs": [top]})
        n = body.get("n") if self.honor_n and isinstance(body.get("n"), int) and body.get("n") > 1 else 1
        choices = [{**choice, "index": i} for i in range(n)]
        return {"id": "cmpl-fault", "object": "text_completion", "model": self._serving(), "choices": choices}


class _QuietServer(ThreadingHTTPServer):
    """Handler threads do not block exit; a client that hung up (cancelled, timed out) is no error."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve(None)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            self._serve(body)

        def _serve(self, body: Any) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            record = Recorded(self.command, self.path, body, headers)
            with server._lock:
                server.requests.append(record)
            if server.trickle is not None:
                record.status = 200
                self._trickle(server.trickle)
                return
            if self.command == "POST" and server.delay:
                server._closing.wait(server.delay)
            status, answer = server._plan(record)
            if status is None:  # no answer: drop the connection, or wait until the server closes
                if answer == "hang":
                    server._closing.wait(HANG_SECONDS)
                self.close_connection = True
                return
            record.status = status
            data = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html" if isinstance(answer, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _trickle(self, seconds: float) -> None:
            """HTTP 200 headers at once, then a 2-byte chunk every `seconds`, never the end."""
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.close_connection = True
            try:
                while True:
                    self.wfile.write(b"2\r\n#\n\r\n")
                    self.wfile.flush()
                    if server._closing.wait(seconds):
                        return
            except OSError:  # the client hung up
                return

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    return Handler
