"""Which model answers: `served_model_identity` (what the server says of the weights it serves, for
the identity of `biasmonkey run`'s request cache) and the check that every answer of a run names
the model the first one named.

Against tests/fault_server.py answering as vLLM (`/v1/models` with `root`, and fields new at each
request) and as llama.cpp's server (`meta`, `/props`), and against the real llama-cpp-python server
(slow). vLLM's own answer is tested in test_vllm.py, on its module's server.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM
from test_served_faults import db_entries, keys_of, scoring_requests

from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM, ServerError, served_model_identity

_counter = itertools.count()


def vllm_card(root: str, max_model_len: int = 2048) -> Any:
    """vLLM's /v1/models entry (less `id`): `created` and the permission's id change at each request."""

    def card() -> dict[str, Any]:
        n = next(_counter)
        permission = [{"id": f"modelperm-{n:032x}", "object": "model_permission", "created": 1_700_000_000 + n}]
        return {"created": 1_700_000_000 + n, "owned_by": "vllm", "root": root, "parent": None} | {
            "max_model_len": max_model_len,
            "permission": permission,
        }

    return card


def test_vllm_identity_is_its_name_and_weights_path_and_survives_a_restart() -> None:
    with FaultServer(model="smollm2", model_card=vllm_card("/models/SmolLM2-135M")) as server:
        first, again = served_model_identity(server.url), served_model_identity(server.url)
    # restarted (another port) with another context length: the same weights
    with FaultServer(model="smollm2", model_card=vllm_card("/models/SmolLM2-135M", 4096)) as server:
        restarted = served_model_identity(server.url)
    with FaultServer(model="smollm2", model_card=vllm_card("/models/SmolLM2-360M")) as server:
        other_weights = served_model_identity(server.url)
    assert (
        first
        == again
        == restarted
        == ('{"models":[{"id":"smollm2","owned_by":"vllm","parent":null,"root":"/models/SmolLM2-135M"}]}')
    )
    assert other_weights == (
        '{"models":[{"id":"smollm2","owned_by":"vllm","parent":null,"root":"/models/SmolLM2-360M"}]}'
    )


def test_llama_cpp_identity_is_the_weights_meta_and_model_path() -> None:
    meta = {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576, "n_params": 134515008}
    q4 = {"owned_by": "llamacpp", "created": 1_700_000_000, "meta": meta | {"size": 90_907_136}}
    with FaultServer(model="local", model_card=q4, props={"model_path": "/m/a.gguf", "total_slots": 1}) as server:
        identity = served_model_identity(server.url)
    # the same name and file name, another quantisation (other size)
    q8 = q4 | {"meta": meta | {"size": 144_811_008}}
    with FaultServer(model="local", model_card=q8, props={"model_path": "/m/a.gguf", "total_slots": 4}) as server:
        requantised = served_model_identity(server.url)
    expected_meta = '"n_ctx_train":8192,"n_embd":576,"n_params":134515008,"n_vocab":49152'
    assert identity == (
        '{"model_path":"/m/a.gguf","models":[{"id":"local","meta":{'
        + expected_meta
        + ',"size":90907136,"vocab_type":2},"owned_by":"llamacpp"}]}'
    )
    assert requantised == identity.replace('"size":90907136', '"size":144811008')


def test_a_server_that_says_nothing_gives_none_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with FaultServer() as server:
        url = server.url
    with caplog.at_level(logging.WARNING):
        assert served_model_identity(url, timeout=2) is None  # closed: refused at once
    assert f"biasmonkey-server: the server at {url} does not say which model it serves ({url}/models: " in caplog.text


def test_the_api_key_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BIASMONKEY_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY", "sk-1")
    with FaultServer(model="m", require_key="sk-1") as server:
        assert served_model_identity(server.url, "MY_KEY") == '{"models":[{"id":"m"}]}'
        assert served_model_identity(server.url) is None  # no key: HTTP 401
        # /v1/models and /props (none: 404) with the key, then both without it
        assert [(r.path, r.status) for r in server.requests] == [
            ("/v1/models", 200),
            ("/props", 404),
            ("/v1/models", 401),
            ("/props", 401),
        ]


def test_an_answer_from_another_model_stops_the_run_before_it_is_cached(tiny_model: Path, tmp_path: Path) -> None:
    """The server starts serving another model after 3 answers: the 4th answer is refused, not cached,
    and nothing starts after it; the 3 answers before it are in the request cache."""
    requests: list[Instance] = scoring_requests(8)
    db = tmp_path / "cache.db"
    with FaultServer(model="model-A.gguf", swap_after=3, swapped_model="model-B.gguf") as server:
        lm = ServedLM(base_url=server.url, model="local", tokenizer=str(tiny_model), num_concurrent=1)
        with pytest.raises(ServerError) as caught:
            CachingLM(lm, str(db)).loglikelihood(requests)
        assert len(server.posts) == 4 and lm.answering_model == "model-A.gguf"
        first = set(server.answered_prompts[:3])
    assert str(caught.value) == (
        f"{server.url}/completions: the served model changed during the run: this answer is from model "
        "'model-B.gguf', the earlier ones from 'model-A.gguf'. Scores of two models would be mixed, so the run "
        "stops (this answer is not cached). Serve one model at this URL and run again"
    )
    assert set(db_entries(db)) == keys_of(requests, first)


# ---------------------------------------------------------------------------- the real llama.cpp server


@pytest.mark.slow
def test_llama_cpp_python_identity_names_the_file_unless_an_alias_hides_it(tmp_path: Path) -> None:
    """llama-cpp-python's /v1/models says only `id` (the --model path, or --model_alias) and
    `owned_by` "me"; it has no /props. Stable across restarts; another file is another identity."""
    from test_served import llama_server

    from biasmonkey.harness_ext.app.default_model import gguf_path

    gguf = gguf_path()
    other = tmp_path / "other.gguf"
    other.symlink_to(gguf)
    identities = []
    for model, alias in [(gguf, None), (gguf, None), (other, None), (gguf, "smollm2")]:
        with llama_server(model=model, alias=alias) as url:
            identities.append(served_model_identity(url))
    assert identities == [
        f'{{"models":[{{"id":"{gguf}","owned_by":"me"}}]}}',
        f'{{"models":[{{"id":"{gguf}","owned_by":"me"}}]}}',
        f'{{"models":[{{"id":"{other}","owned_by":"me"}}]}}',
        '{"models":[{"id":"smollm2","owned_by":"me"}]}',
    ]
