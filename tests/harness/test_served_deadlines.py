"""`--model biasmonkey-server`'s waits are total deadlines, not per-read timeouts: against a server
that sends its HTTP 200 headers at once and then trickles a chunk every 0.2 s forever
(tests/fault_server.py, `trickle`), httpx's own timeout (per read) never fires. Each call must come
back within a few times its deadline, with what ran out named; before the fix the `/metrics` read
never came back (`within` fails the test instead of hanging it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer
from lm_eval.api.instance import Instance

from biasmonkey.harness_ext.lm_eval.backends import served as served_module
from biasmonkey.harness_ext.lm_eval.backends.served import (
    ServedLM,
    ServerError,
    read_prefix_cache,
    served_model_identity,
)

TRICKLE = 0.2  # seconds between the trickling server's chunks: far below every timeout here
VLLM_METRICS = "vllm:prefix_cache_queries_total 100.0\nvllm:prefix_cache_hits_total 25.0\n"


def within(seconds: float, call: Callable[[], Any]) -> tuple[Any, float]:
    """(what `call()` returned or raised, the seconds it took), run in a daemon thread; the test fails
    when it has not come back within `seconds`."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as err:  # noqa: BLE001 - handed to the test
            outcome.append(err)

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"no answer after {seconds:g} s: the wait is not bounded"
    return outcome[0], time.monotonic() - start


def test_a_trickled_metrics_answer_gives_up_at_its_deadline(caplog: pytest.LogCaptureFixture) -> None:
    with FaultServer(trickle=TRICKLE, metrics=VLLM_METRICS) as server:
        with caplog.at_level(logging.WARNING, logger=served_module.__name__):
            counters, seconds = within(3 * 1.0, lambda: read_prefix_cache(server.url, timeout=1.0))
        assert len(server.requests) == 1 and server.requests[0].path == "/metrics"
    assert counters is None and 1.0 <= seconds < 3 * 1.0
    assert f"prefix cache: not measured, {server.url.removesuffix('/v1')}/metrics gave no whole answer within 1 s" in (
        caplog.text
    )


def test_a_metrics_answer_too_long_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # the counters' text is 72 bytes (a line of 38, one of 34): read with a cap of 72 bytes, not of 71
    with FaultServer(metrics=VLLM_METRICS) as server:
        monkeypatch.setattr(served_module, "MAX_ANSWER_BYTES", 72)
        assert read_prefix_cache(server.url) == {"queries": 100.0, "hits": 25.0}
        monkeypatch.setattr(served_module, "MAX_ANSWER_BYTES", 71)
        assert read_prefix_cache(server.url) is None


def test_asking_a_trickling_server_what_it_serves_gives_up_at_its_deadline(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FaultServer(trickle=TRICKLE) as server:
        with caplog.at_level(logging.WARNING, logger=served_module.__name__):
            identity, seconds = within(3 * 1.0, lambda: served_model_identity(server.url, timeout=1.0))
        # /v1/models took the whole second: /props was not asked
        assert [r.path for r in server.requests] == ["/v1/models"]
    assert identity is None and 1.0 <= seconds < 3 * 1.0
    assert f"does not say which model it serves ({server.url}/models gave no whole answer within 1 s)" in caplog.text


def test_a_trickled_completion_fails_the_run_within_timeout_times_attempts(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit's run: `--timeout 1 --max-retries 0` against a trickling server, /metrics included."""
    monkeypatch.setattr(served_module, "METRICS_TIMEOUT", 0.5)
    monkeypatch.setattr(served_module, "MAX_BACKOFF", 0.0)
    requests = [Instance("loglikelihood", {}, ("Question: do you agree? Answer:", a), 0) for a in (" A", " B")]
    with FaultServer(trickle=TRICKLE) as server:
        lm = ServedLM(base_url=server.url, model="m", tokenizer=str(tiny_model), timeout=1, max_retries=0)
        # 0.5 s for /metrics before the requests (not read again after: no counters before), then one
        # attempt of 1 s for the one prompt: 1.5 s
        error, seconds = within(3 * 1.5, lambda: lm.loglikelihood(requests, disable_tqdm=True))
        assert [r.path for r in server.requests] == ["/metrics", "/v1/completions"]
    assert isinstance(error, ServerError) and 1.5 <= seconds < 3 * 1.5
    assert str(error).startswith(f"{server.url}/completions: no answer: timed out after 1 s (gave up after 1 attempts")
