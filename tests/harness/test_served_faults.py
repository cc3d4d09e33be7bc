"""`--model biasmonkey-server` off the happy path, against tests/fault_server.py (tiny model's tokenizer).

- Never lost: each answered prompt is in lm-eval's request cache (its SQLite file, read back by
  another process) as soon as it is answered, even when the run then fails; a rerun sends only
  the prompts still missing. The same holds for `--model biasmonkey-hf`, batch by batch.
- Bounded waits: a hanging server fails within about timeout * (max_retries + 1).
- Malformed answers and 5xx are retried, then a ServerError names the URL and what was wrong.
- API keys: sent as a bearer token from $BIASMONKEY_API_KEY or the variable api_key_env names;
  a missing or refused key is a clear error; the key shows in no message, output file or log.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fault_server import FOREVER, FaultServer
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM, hash_args

from biasmonkey.harness_ext.lm_eval.backends.served import API_KEY_ENV, ServedLM, ServerError

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-7f3a9c1e5b"  # what must never be printed
LETTERS = (" A", " B", " C")


@pytest.fixture(autouse=True)
def no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys in the developer's environment must not change what these tests send."""
    for name in (API_KEY_ENV, "OPENAI_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """No waiting between attempts."""
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_BACKOFF", 0.0)


def served(url: str, tokenizer: Path, **kwargs: Any) -> ServedLM:
    return ServedLM(base_url=url, model="m", tokenizer=str(tokenizer), **{"num_concurrent": 2, **kwargs})


def scoring_requests(n_prompts: int) -> list[Instance]:
    """Each prompt with three one-token answers, and the first prompt's requests repeated."""
    contexts = [f"Question {i}: how often do you read a newspaper? Answer:" for i in range(n_prompts)]
    requests = [Instance("loglikelihood", {}, (c, a), 0) for c in contexts for a in LETTERS]
    return requests + requests[:3]


def db_entries(path: Path) -> dict[str, Any]:
    """lm-eval's request cache as another Python process reads it from disk."""
    code = (
        "import json, sys; from sqlitedict import SqliteDict\n"
        "d = SqliteDict(sys.argv[1], flag='r')\n"
        "print(json.dumps({k: v for k, v in d.items()}))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def keys_of(requests: list[Instance], prompts: set[str], attr: str = "loglikelihood") -> set[str]:
    return {hash_args(attr, r.args) for r in requests if r.args[0].rstrip() in prompts}


# ---------------------------------------------------------------------------- the fault server itself


def test_fault_server_answers_like_vllm_and_closes_while_hanging() -> None:
    import httpx

    with FaultServer(model="served", require_key=KEY, delay=0.2) as server:
        auth = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(f"{server.url}/models").status_code == 401
        assert httpx.get(f"{server.url}/models", headers=auth).json()["data"][0]["id"] == "served"
        score = {"prompt": "Q?", "max_tokens": 1, "logprobs": 5, "logprob_token_ids": [7, 8, 9]}
        start = time.monotonic()
        tops = [httpx.post(f"{server.url}/completions", json=score, headers=auth).json() for _ in range(2)]
        assert time.monotonic() - start >= 0.4  # delay
        top = tops[0]["choices"][0]["logprobs"]["top_logprobs"][0]
        assert tops[0] == tops[1] and set(top) == {"token_id:7", "token_id:8", "token_id:9"}
        assert sum(math.exp(v) for v in top.values()) <= 1  # a valid distribution
        generated = httpx.post(f"{server.url}/completions", json={"prompt": "Q?", "max_tokens": 5}, headers=auth)
        assert generated.json()["choices"][0]["text"] == " A"
        assert server.answered == 3 and server.answered_prompts == ["Q?"] * 3
        assert [r.status for r in server.requests] == [401, 200, 200, 200, 200]

    hanging = FaultServer(hang=True)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{hanging.url}/completions", json={"prompt": "Q?"}, timeout=0.3)
    start = time.monotonic()
    hanging.close()
    assert time.monotonic() - start < 2 and hanging.posts[0].status is None


# ---------------------------------------------------------------------------- never lost


@pytest.mark.parametrize("failure", ["500", "drop"])
def test_answered_prompts_are_cached_at_once_and_a_rerun_sends_only_the_rest(
    tiny_model: Path, tmp_path: Path, failure: str
) -> None:
    requests = scoring_requests(8)
    db = tmp_path / "cache.db"
    with FaultServer(fail_after=3, failure=failure) as broken:  # type: ignore[arg-type]
        with pytest.raises(ServerError, match=rf"{broken.url}/completions: "):
            CachingLM(served(broken.url, tiny_model, max_retries=0), str(db)).loglikelihood(requests)
        first = set(broken.answered_prompts)
    assert len(first) == 3
    cached = db_entries(db)
    assert set(cached) == keys_of(requests, first)  # every request of the 3 answered prompts, nothing else

    with FaultServer() as healthy:
        resumed = CachingLM(served(healthy.url, tiny_model), str(db)).loglikelihood(requests)
        rest = list(healthy.answered_prompts)
        healthy.clear()
        fresh = served(healthy.url, tiny_model).loglikelihood(requests, disable_tqdm=True)
    assert len(rest) == 5 and not first & set(rest)  # only the missing prompts were sent
    assert resumed == fresh  # the cached answers are the server's answers
    assert [list(cached[hash_args("loglikelihood", r.args)]) for r in requests if r.args[0] in first] == [
        list(a) for r, a in zip(requests, fresh) if r.args[0] in first
    ]


HARD_EXIT = """
import os, sys
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM
from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM
url, tokenizer, db = sys.argv[1:]
lm = ServedLM(base_url=url, model="m", tokenizer=tokenizer, num_concurrent=1, max_retries=0)
try:
    CachingLM(lm, db).loglikelihood([Instance("loglikelihood", {}, (f"Q{i}? Answer:", " A"), 0) for i in range(6)])
except Exception as err:
    print(type(err).__name__, file=sys.stderr)
    os._exit(3)  # no exit handlers, no flush, no close
"""


def test_cached_answers_survive_a_process_that_dies_at_once(tiny_model: Path, tmp_path: Path) -> None:
    """Each answer is committed to the SQLite file when it is stored, not at exit."""
    db = tmp_path / "cache.db"
    with FaultServer(fail_after=4) as server:
        cmd = [sys.executable, "-c", HARD_EXIT, server.url, str(tiny_model), str(db)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3 and proc.stderr.rstrip().endswith("ServerError"), proc.stderr[-2000:]
    assert len(db_entries(db)) == 4


def test_generations_are_cached_at_once(tiny_model: Path, tmp_path: Path) -> None:
    settings = {"until": ["\n"], "max_gen_toks": 8, "do_sample": False}
    requests = [Instance("generate_until", {}, (f"Question {i}: yes or no? Answer:", settings), 0) for i in range(6)]
    db = tmp_path / "cache.db"
    with FaultServer(fail_after=2, text=" Yes") as server:
        with pytest.raises(ServerError, match="HTTP 500"):
            CachingLM(served(server.url, tiny_model, max_retries=0), str(db)).generate_until(requests)
        answered = set(server.answered_prompts)
        assert len(answered) == 2
        assert db_entries(db) == {k: " Yes" for k in keys_of(requests, answered, "generate_until")}
        server.fail_after = None
        server.clear()
        assert CachingLM(served(server.url, tiny_model), str(db)).generate_until(requests) == [" Yes"] * 6
        assert len(server.posts) == 4 and not answered & set(server.answered_prompts)


@pytest.mark.parametrize("sharing", [True, False], ids=["prefix-tree", "one-pass-per-context"])
def test_biasmonkey_hf_caches_each_batch_before_a_later_one_fails(
    tiny_model: Path, tmp_path: Path, sharing: bool
) -> None:
    """Forward pass 2 of 3 fails: pass 1's answers are on disk, pass 2's and 3's are not."""
    from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM

    # Six contexts, longest first, sharing no first token, of similar lengths: with rows as long
    # as the longest (each holds one context) and batch_size=2, each pass runs two of them.
    names = ("Anna", "Ben", "Carl", "Dora", "Emil", "Fay")
    question = " ".join(["Do you agree?"] * 6)
    contexts = [f"{name} asks: {question}" + " please" * (6 - n) + " Answer:" for n, name in enumerate(names)]
    lm = PrefixReuseHFLM(
        pretrained=str(tiny_model), device="cpu", batch_size=2, dtype="float32", prefix_sharing=sharing
    )
    tokens = [lm.tok_encode(c) for c in contexts]
    assert len({t[0] for t in tokens}) == 6 and sorted(map(len, tokens), reverse=True) == list(map(len, tokens))
    lm.row_tokens = len(tokens[0])
    assert 3 * len(tokens[-1]) > 2 * lm.row_tokens  # two rows at most per pass
    requests = [Instance("loglikelihood", {}, (c, a), 0) for c in contexts for a in LETTERS]

    passes = []

    def fail_second(module: Any, args: tuple, kwargs: dict) -> None:
        passes.append(kwargs["input_ids"].shape[0])
        if len(passes) == 2:
            raise RuntimeError("out of memory (injected)")

    lm.model.register_forward_pre_hook(fail_second, with_kwargs=True)
    db = tmp_path / "cache.db"
    with pytest.raises(RuntimeError, match="injected"):
        CachingLM(lm, str(db)).loglikelihood(requests)
    assert passes == [2, 2]
    assert set(db_entries(db)) == keys_of(requests, set(contexts[:2]))


# ---------------------------------------------------------------------------- bounded waits


def test_a_hanging_server_fails_within_the_bound(tiny_model: Path) -> None:
    with FaultServer(hang=True) as server:
        lm = served(server.url, tiny_model, timeout=1, max_retries=1)
        start = time.monotonic()
        with pytest.raises(ServerError) as caught:
            lm.loglikelihood(scoring_requests(4), disable_tqdm=True)
        elapsed = time.monotonic() - start
        assert len(server.posts) == 4  # two prompts in flight, two attempts each; none started after
    # 2 attempts of 1 s, plus at most 0.5 s of backoff (and some slack for a loaded machine)
    assert 2 <= elapsed < 5
    message = str(caught.value)
    assert message.startswith(f"{server.url}/completions: no answer: timed out after 1 s")
    assert "after 2 attempts" in message and "timeout=1 s" in message and "max_retries=1" in message


def test_defaults_and_bad_values(tiny_model: Path) -> None:
    lm = served("http://x/v1", tiny_model)
    assert (lm.timeout, lm.max_retries) == (120.0, 3)
    for args, error in [
        ({"timeout": 0}, r"timeout=0 must be a positive number of seconds"),
        ({"timeout": "soon"}, r"timeout='soon' must be a positive number of seconds"),
        ({"timeout": float("inf")}, r"timeout=inf must be"),
        ({"max_retries": -1}, r"max_retries=-1 must be at least 0"),
        ({"max_retries": 1.5}, r"max_retries=1.5 must be a whole number"),
    ]:
        with pytest.raises(ValueError, match=error):
            served("http://x/v1", tiny_model, **args)


# ---------------------------------------------------------------------------- malformed answers and 5xx


@pytest.mark.usefixtures("no_backoff")
def test_malformed_answers_and_5xx_are_retried_then_recover(tiny_model: Path) -> None:
    requests = scoring_requests(3)
    with FaultServer() as server:
        expected = served(server.url, tiny_model).loglikelihood(requests, disable_tqdm=True)
    for faults in ({"malformed": 2}, {"errors_then_ok": 3}, {"malformed": 1, "malformed_body": '{"choices": []}'}):
        with FaultServer(**faults) as server:  # type: ignore[arg-type]
            lm = served(server.url, tiny_model, num_concurrent=1)
            assert lm.loglikelihood(requests, disable_tqdm=True) == expected, faults
            assert len(server.posts) == 3 + sum(v for v in faults.values() if isinstance(v, int))
    with FaultServer(malformed=1) as server:  # generation reads `text`
        lm = served(server.url, tiny_model)
        assert lm.generate_until([Instance("generate_until", {}, ("Q:", {"until": ["\n"]}), 0)]) == [" A"]


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("<html>502 Bad Gateway</html>" + "x" * 500, r"not JSON\): '<html>502 Bad Gateway</html>x+'"),
        ('{"choices": [{"text": " A"}]}', r"no log-probabilities in `choices\[0\].logprobs.top_logprobs`"),
        ('{"object": "error"}', r"no `choices`"),
    ],
)
def test_malformed_answers_forever_are_a_clear_error(tiny_model: Path, body: str, what: str) -> None:
    with FaultServer(malformed=FOREVER, malformed_body=body) as server:
        lm = served(server.url, tiny_model, max_retries=2)
        with pytest.raises(ServerError, match=rf"^{server.url}/completions: malformed answer \(HTTP 200, ") as caught:
            lm.loglikelihood(scoring_requests(1), disable_tqdm=True)
        assert len(server.posts) == 3
    message = str(caught.value)
    assert "after 3 attempts" in message and caught.match(what)
    assert len(message) < 600  # the body is quoted, not dumped
    # raised on its own: no JSONDecodeError or KeyError traceback chained to it
    assert caught.value.__cause__ is None and caught.value.__context__ is None


@pytest.mark.usefixtures("no_backoff")
def test_a_generation_answer_without_text_is_a_clear_error(tiny_model: Path) -> None:
    with FaultServer(malformed=FOREVER, malformed_body='{"choices": [{"index": 0}]}') as server:
        lm = served(server.url, tiny_model, max_retries=0)
        with pytest.raises(ServerError, match=r"malformed answer \(HTTP 200, no `text` in `choices\[0\]`\)"):
            lm.generate_until([Instance("generate_until", {}, ("Q:", {"until": ["\n"]}), 0)])


# ---------------------------------------------------------------------------- API keys


def test_the_key_comes_from_the_environment(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = scoring_requests(2)
    with FaultServer(require_key=KEY) as server:
        monkeypatch.setenv(API_KEY_ENV, KEY)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")
        lm = served(server.url, tiny_model)
        assert len(lm.loglikelihood(requests, disable_tqdm=True)) == len(requests)
        monkeypatch.delenv(API_KEY_ENV)
        monkeypatch.setenv("MY_KEY", KEY)
        lm = served(server.url, tiny_model, api_key_env="MY_KEY")
        assert len(lm.loglikelihood(requests, disable_tqdm=True)) == len(requests)
        lm = served(server.url, tiny_model, api_key=KEY)
        assert len(lm.loglikelihood(requests, disable_tqdm=True)) == len(requests)
        assert {r.headers["authorization"] for r in server.posts} == {f"Bearer {KEY}"}
        assert server.answered == 6
    assert KEY not in repr(vars(lm)) and KEY not in str(vars(lm))


def test_a_missing_or_refused_key_is_a_clear_error(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    request = scoring_requests(1)[:1]
    with FaultServer(require_key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)  # never sent unless named
        with pytest.raises(
            ServerError, match=rf"^{server.url}/completions: HTTP 401: .*none was sent: set \$BIASMONKEY_API_KEY"
        ):
            served(server.url, tiny_model).loglikelihood(request, disable_tqdm=True)
        assert "authorization" not in server.posts[0].headers

        wrong = KEY[::-1]
        monkeypatch.setenv("MY_KEY", wrong)
        for lm, source in [
            (served(server.url, tiny_model, api_key_env="MY_KEY"), r"\$MY_KEY"),
            (served(server.url, tiny_model, api_key=wrong), "the api_key model arg"),
        ]:
            with pytest.raises(
                ServerError, match=rf"^{server.url}/completions: HTTP 401: .*refused the API key from {source}"
            ) as caught:
                lm.loglikelihood(request, disable_tqdm=True)
            assert wrong not in str(caught.value)
        assert len(server.posts) == 3  # a refusal is not retried

    with pytest.raises(
        ValueError, match=r"api_key_env=NOT_SET_ANYWHERE, but the environment variable \$NOT_SET_ANYWHERE is not set"
    ):
        served(server.url, tiny_model, api_key_env="NOT_SET_ANYWHERE")
    with pytest.raises(ValueError, match="takes the name of an environment variable, not a key") as caught:
        served(server.url, tiny_model, api_key_env=KEY)  # a key passed by mistake is not echoed
    assert KEY not in str(caught.value)
    with pytest.raises(ValueError, match="not both"):
        served(server.url, tiny_model, api_key_env="MY_KEY", api_key=KEY)


def test_a_server_echoing_the_key_cannot_print_it(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    server = FaultServer(script=[(400, {"error": f"bad request from Bearer {KEY}"})])
    with server, pytest.raises(ServerError, match=r"HTTP 400: .*Bearer <api key>") as caught:
        served(server.url, tiny_model).loglikelihood(scoring_requests(1)[:1], disable_tqdm=True)
    assert KEY not in str(caught.value)


def test_lm_eval_run_fails_resumes_and_never_writes_the_key(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    """The launcher, end to end: the server fails after 3 prompts (the run fails, 3 prompts are
    cached), then heals (the rerun sends only the rest). The key, from $BIASMONKEY_API_KEY, is in
    no output file, log or message."""
    out, cache = tmp_path / "out", tmp_path / "cache" / "run"

    def lm_eval(url: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "biasmonkey.harness_ext.lm_eval", "--model", "biasmonkey-server"]
        cmd += ["--model_args", f"base_url={url},model=m,tokenizer={tiny_model},num_concurrent=2,max_retries=0"]
        cmd += ["--include_path", str(REPO / "tasks"), "--tasks", "biasmonkey_odd_even", "--limit", "3"]
        cmd += ["--use_cache", str(cache), "--output_path", str(out), "--log_samples", "--verbosity", "DEBUG"]
        env = {**os.environ, API_KEY_ENV: KEY}
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    with FaultServer(require_key=KEY, fail_after=3) as server:
        failed = lm_eval(server.url)
        assert failed.returncode != 0 and f"lm-eval stopped: {server.url}/completions: HTTP 500" in failed.stderr
        first = set(server.answered_prompts)
        server.fail_after = None
        server.clear()
        done = lm_eval(server.url)
        assert done.returncode == 0, done.stderr[-3000:]
        rest = set(server.answered_prompts)
    assert len(first) == 3 and not first & rest and len(server.posts) == len(rest)

    (samples_file,) = out.rglob("samples_biasmonkey_odd_even_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    arguments = [(a["arg_0"], a["arg_1"]) for s in samples for a in s["arguments"].values()]
    assert {context.rstrip() for context, _ in arguments} == first | rest
    cached = db_entries(Path(f"{cache}_rank0.db"))
    assert {hash_args("loglikelihood", a) for a in arguments} == set(cached)

    texts = [failed.stdout, failed.stderr, done.stdout, done.stderr]
    texts += [p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()]
    assert all(KEY not in text for text in texts)
    assert len(texts) > 4 and "Bearer" not in "".join(texts)
