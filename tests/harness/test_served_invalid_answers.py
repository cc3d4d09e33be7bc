"""Answers are validated where they enter: log-probabilities no distribution has are an error, never a
score and never cached.

- The validator (`biasmonkey.metrics.top_logprobs`): finite, at most 0, a top-k's probabilities
  summing to at most 1, all within `LOGPROB_TOLERANCE`; the readers Inspect uses raise it too.
- `--model biasmonkey-server` (tests/fault_server.py's "positive log-prob" and "NaN log-prob"
  faults): retried like a malformed answer, then a ServerError naming the URL and the prompt;
  nothing invalid reaches lm-eval's request cache, and a rerun against a healthy server completes.
- `--model biasmonkey-hf`: a model giving NaN is an error before anything is cached.
- `biasmonkey run --backend server`: exit status != 0 and no traceback; `--resume` drops cached
  NaN entries (counted) and gives the numbers of a clean run.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fault_server import NAN_LOGPROB, POSITIVE_LOGPROB, FaultServer
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM, hash_args

from biasmonkey.harness_ext.app.run_checks import check_cache, invalid_cached_answer
from biasmonkey.harness_ext.lm_eval.backends.served import Invalid, ServedLM, ServerError, _read_echo, _read_top
from biasmonkey.metrics.top_logprobs import (
    LOGPROB_TOLERANCE,
    InvalidLogprobs,
    check_top_logprobs,
    label_logprobs,
    logged_logprob,
    logprob_problem,
    spelling_logprobs,
    top_logprobs_problem,
)

LETTERS = (" A", " B", " C")


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("biasmonkey.harness_ext.lm_eval.backends.served.MAX_BACKOFF", 0.0)


# ---------------------------------------------------------------------------- the validator


@pytest.mark.parametrize("value", [0, 0.0, -1e-9, -3.5, -9999.0, LOGPROB_TOLERANCE / 2, LOGPROB_TOLERANCE])
def test_log_probabilities_at_most_0_within_the_tolerance_are_valid(value: float) -> None:
    assert logprob_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (2.5, r"log-probability \+2\.5 is above 0 \(a probability of 12\.1825\)"),
        (2 * LOGPROB_TOLERANCE, r"log-probability \+0\.0002 is above 0 \(a probability of 1\.0002\)"),
        (math.nan, "log-probability nan is not finite"),
        (math.inf, "log-probability inf is not finite"),
        (-math.inf, "log-probability -inf is not finite"),
        ("-1.0", "log-probability '-1.0' is not a number"),
        (None, "log-probability None is not a number"),
        (True, "log-probability True is not a number"),
    ],
)
def test_other_values_are_no_log_probabilities(value: Any, problem: str) -> None:
    message = logprob_problem(value)
    assert message is not None and re.fullmatch(problem, message), message


@pytest.mark.parametrize(
    ("logged", "problem"),
    [
        ("5.0", r"\+5 is above 0"),
        (0.01, r"\+0\.01 is above 0"),
        ("inf", "inf is not finite"),
        ("0.5 imputed", "above 0"),
    ],
)
def test_a_logged_log_likelihood_above_0_is_refused(logged: Any, problem: str) -> None:
    """What lm-eval logs (strings) or hands a task: above 0 no model gives (a samples file edited or
    a broken engine), and as a score it would outweigh every real answer."""
    with pytest.raises(ValueError, match=problem):
        logged_logprob(logged)


@pytest.mark.parametrize(
    ("logged", "read"),
    [("-2.25", (-2.25, False)), ("-7.25 imputed", (-7.25, True)), (0.0, (0.0, False)), ("nan", (math.nan, False))],
)
def test_a_logged_log_likelihood_at_most_0_reads(logged: Any, read: tuple[float, bool]) -> None:
    value, imputed = logged_logprob(logged)
    assert (value == read[0] or math.isnan(read[0]) and math.isnan(value)) and imputed == read[1]


def test_a_top_k_list_holds_at_most_all_the_mass() -> None:
    assert top_logprobs_problem([]) is None
    assert top_logprobs_problem([(" A", math.log(0.5)), (" B", math.log(0.5))]) is None
    assert top_logprobs_problem([(" A", math.log(0.5)), (" B", math.log(0.5 + LOGPROB_TOLERANCE / 2))]) is None
    assert top_logprobs_problem([(" A", math.log(0.6)), (" B", math.log(0.6))]) == (
        "the 2 tokens' probabilities sum to 1.2, more than 1"
    )
    assert top_logprobs_problem([(" A", -1.0), (" B", math.nan)]) == "log-probability nan is not finite (token ' B')"


def test_the_readers_inspect_uses_refuse_invalid_lists_naming_their_source() -> None:
    good = [(" A", math.log(0.6)), (" B", math.log(0.3))]
    assert label_logprobs(good, ["A", "B"])[1] == 2 and spelling_logprobs(good, [" A", " B"])[1] == 0
    check_top_logprobs(good, "model x")
    for bad, problem in [
        ([(" A", POSITIVE_LOGPROB), (" B", -1.0)], r"log-probability \+2\.5 is above 0 .*token ' A'"),
        ([(" A", NAN_LOGPROB)], r"log-probability nan is not finite \(token ' A'\)"),
        ([(" A", math.log(0.7)), ("A", math.log(0.7))], r"the 2 tokens' probabilities sum to 1\.4, more than 1"),
    ]:
        for read in (label_logprobs, spelling_logprobs):
            with pytest.raises(InvalidLogprobs, match=rf"^model openai/gpt-x: invalid log-probabilities: {problem}"):
                read(bad, ["A", "B"], source="model openai/gpt-x")
        with pytest.raises(InvalidLogprobs, match="must be finite and at most 0.*within 0.0001"):
            check_top_logprobs(bad)


# ---------------------------------------------------------------------------- the server backend's readers


def top_body(top: dict[str, Any]) -> dict[str, Any]:
    """A one-token answer with this top-k."""
    best = next(iter(top))
    return {"choices": [{"text": best, "logprobs": {"tokens": [best], "top_logprobs": [top]}}]}


def test_read_top_refuses_invalid_values_naming_the_prompt() -> None:
    top = {" A": math.log(0.5), " B": math.log(0.25)}
    assert _read_top(top_body(top), about="prompt 'Q?'") == (top, " A")
    for bad, problem in [
        ({" A": POSITIVE_LOGPROB}, r"log-probability \+2\.5 is above 0"),
        ({" A": -1.0, " B": NAN_LOGPROB}, "log-probability nan is not finite"),
        ({" A": math.log(0.8), " B": math.log(0.8)}, r"the 2 tokens' probabilities sum to 1\.6"),
    ]:
        with pytest.raises(Invalid, match=rf"^invalid log-probabilities for prompt 'Q\?': {problem}"):
            _read_top(top_body(bad), about="prompt 'Q?'")


def test_read_echo_refuses_invalid_prompt_log_probabilities() -> None:
    def body(values: list[Any], tops: list[Any]) -> dict[str, Any]:
        return {"choices": [{"text": "", "logprobs": {"token_logprobs": values, "top_logprobs": tops}}]}

    good_top = {"<2>": -0.5, "<0>": math.log(0.1)}
    assert _read_echo(body([None, -0.5, -1.0], [None, good_top, good_top]), [1, 2]) == [None, (-0.5, True)]
    with pytest.raises(
        Invalid, match=r"for ' Option 1:' after x: log-probability nan is not finite \(prompt token 1\)"
    ):
        _read_echo(body([None, NAN_LOGPROB], [None, good_top]), [1, 2], about="' Option 1:' after x")
    with pytest.raises(
        Invalid, match=r"prompt token 1: log-probability \+2\.5 is above 0 \(a probability .*\(token '<0>'\)"
    ):
        _read_echo(body([None, -0.5], [None, {"<2>": -0.5, "<0>": POSITIVE_LOGPROB}]), [1, 2])


# ---------------------------------------------------------------------------- the server backend, end to end


def served(url: str, tokenizer: Path, **kwargs: Any) -> ServedLM:
    return ServedLM(base_url=url, model="m", tokenizer=str(tokenizer), **{"num_concurrent": 1, **kwargs})


def scoring_requests(n_prompts: int) -> list[Instance]:
    contexts = [f"Question {i}: how often do you read a newspaper? Answer:" for i in range(n_prompts)]
    return [Instance("loglikelihood", {}, (c, a), 0) for c in contexts for a in LETTERS]


def db_entries(path: Path) -> dict[str, Any]:
    """lm-eval's request cache, every value unpickled."""
    with sqlite3.connect(path) as conn:
        return {k: pickle.loads(v) for k, v in conn.execute("SELECT key, value FROM unnamed")}


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize("bad", [POSITIVE_LOGPROB, NAN_LOGPROB], ids=["positive", "nan"])
def test_an_invalid_answer_is_retried_like_a_malformed_one(tiny_model: Path, bad: float) -> None:
    requests = scoring_requests(3)
    with FaultServer() as server:
        expected = served(server.url, tiny_model).loglikelihood(requests, disable_tqdm=True)
    with FaultServer(bad_logprob=bad, bad_answers=2) as server:
        assert served(server.url, tiny_model).loglikelihood(requests, disable_tqdm=True) == expected
        assert len(server.posts) == 3 + 2 and len(server.bad_prompts) == 2


@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize(
    ("bad", "problem"),
    [(POSITIVE_LOGPROB, r"log-probability \+2\.5 is above 0"), (NAN_LOGPROB, "log-probability nan is not finite")],
    ids=["positive", "nan"],
)
def test_invalid_answers_forever_are_a_clear_error_and_never_cached(
    tiny_model: Path, tmp_path: Path, bad: float, problem: str
) -> None:
    requests = scoring_requests(5)
    db = tmp_path / "cache.db"
    with FaultServer(bad_logprob=bad, bad_after=2) as server:
        with pytest.raises(ServerError) as caught:
            CachingLM(served(server.url, tiny_model, max_retries=2), str(db)).loglikelihood(requests)
        good, bad_prompts = list(server.answered_prompts), set(server.bad_prompts)
        assert len(good) == 2 and len(bad_prompts) == 1 and len(server.posts) == 2 + 3
    message = str(caught.value)
    (prompt,) = bad_prompts
    assert message.startswith(f"{server.url}/completions: invalid answer (HTTP 200): invalid log-probabilities for ")
    assert f"prompt {prompt!r}" in message and caught.match(problem) and "after 3 attempts" in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # one clear message
    cached = db_entries(db)
    assert set(cached) == {hash_args("loglikelihood", r.args) for r in requests if r.args[0].rstrip() in good}
    assert all(math.isfinite(lp) and lp <= 0 for lp, _ in cached.values())

    with FaultServer() as healthy:  # the rerun sends only the rest, and gets a clean run's answers
        resumed = CachingLM(served(healthy.url, tiny_model), str(db)).loglikelihood(requests)
        assert not set(good) & set(healthy.answered_prompts) and len(healthy.answered_prompts) == 3
        healthy.clear()
        assert resumed == served(healthy.url, tiny_model).loglikelihood(requests, disable_tqdm=True)


def broken_logits(module: Any, args: Any, out: Any) -> None:
    """A forward hook turning every logit into NaN (a broken model)."""
    out.logits.fill_(math.nan)


def test_biasmonkey_hf_refuses_a_model_giving_nan_before_caching(tiny_model: Path, tmp_path: Path) -> None:
    from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM

    for sharing in (True, False):
        lm = PrefixReuseHFLM(pretrained=str(tiny_model), device="cpu", batch_size=4, prefix_sharing=sharing)
        lm.model.register_forward_hook(broken_logits)
        db = tmp_path / f"hf-{sharing}.db"
        with pytest.raises(
            InvalidLogprobs,
            match=r"^biasmonkey-hf: the model .* gave the log-likelihood nan for ' [ABC]' after …'Question",
        ):
            CachingLM(lm, str(db)).loglikelihood(scoring_requests(2))
        assert db_entries(db) == {}


# ---------------------------------------------------------------------------- the request cache on --resume


def test_check_cache_drops_invalid_log_likelihoods_and_counts_them(tmp_path: Path) -> None:
    from sqlitedict import SqliteDict

    db = tmp_path / "cache_rank0.db"
    values = {
        "nan": (math.nan, False),
        "positive": (POSITIVE_LOGPROB, True),
        "inf": (-math.inf, False),
        "rolling-nan": math.nan,
        "good": (-1.25, True),
        "zero": (0.0, True),
        "rounding": (LOGPROB_TOLERANCE / 2, True),
        "text": " Yes",
        "rolling": -42.0,
    }
    with SqliteDict(str(db), autocommit=True) as cache:
        cache.update(values)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO unnamed (key, value) VALUES ('unreadable', ?)", (b"not a pickle",))
    assert [k for k, v in values.items() if invalid_cached_answer(v)] == ["nan", "positive", "inf", "rolling-nan"]
    assert check_cache(db) == 5
    assert set(db_entries(db)) == {"good", "zero", "rounding", "text", "rolling"}
    assert check_cache(db) == 0


# ---------------------------------------------------------------------------- biasmonkey run --backend server


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", *argv], capture_output=True, text=True, timeout=600
    )


def served_run(server: FaultServer, tokenizer: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        *["--backend", "server", "--base-url", server.url, "--server-model", "tiny"],
        *["--tokenizer", str(tokenizer), "--tasks", "biasmonkey_acquiescence", "--limit", "3"],
        *["--output", str(out), "--num-concurrent", "1", "--max-retries", "1", *extra],
    ]


def results(out: Path) -> str:
    """The run's metrics, as lm-eval wrote them (NaN compared as text)."""
    (path,) = (out / "tiny").glob("results_*.json")  # lm-eval's, by --server-model
    return json.dumps(json.loads(path.read_text())["results"], sort_keys=True)


@dataclass
class CleanRun:
    out: Path  # its output folder
    prompts: int  # the prompts it sent
    server: FaultServer  # still serving (the request cache's name holds its URL)


@pytest.fixture(scope="module")
def clean_run(tiny_model: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CleanRun]:
    """A run against a healthy server."""
    out = tmp_path_factory.mktemp("clean") / "out"
    with FaultServer() as server:
        proc = cli(*served_run(server, tiny_model, out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield CleanRun(out, server.answered, server)


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_a_server_answering_positive_log_probs_fails_the_run_clearly(
    tiny_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    with FaultServer(bad_logprob=POSITIVE_LOGPROB) as server:
        proc = cli(*served_run(server, tiny_model, tmp_path / "out"))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert f"{server.url}/completions: invalid answer" in proc.stderr
    assert "log-probability +2.5 is above 0" in proc.stderr and "prompt '" in proc.stderr
    assert not list((tmp_path / "out").rglob("results_*.json"))


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_nan_is_never_cached_and_resume_gives_a_clean_runs_numbers(
    tiny_model: Path, data_dir: Path, tmp_path: Path, clean_run: CleanRun
) -> None:
    out = tmp_path / "out"
    with FaultServer(bad_logprob=NAN_LOGPROB, bad_after=2) as server:
        failed = cli(*served_run(server, tiny_model, out))
        assert failed.returncode != 0 and "Traceback" not in failed.stderr, failed.stderr[-3000:]
        assert "log-probability nan is not finite" in failed.stderr and "with --resume to continue" in failed.stderr
        (db,) = (out / "cache").glob("*_rank0.db")
        cached = db_entries(db)
        assert cached and all(math.isfinite(lp) for lp, _ in cached.values())
        first = list(server.answered_prompts)
        server.bad_logprob = None  # healed
        server.clear()
        resumed = cli(*served_run(server, tiny_model, out, "--resume"))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert not set(first) & set(server.answered_prompts)  # nothing asked twice
        assert len(first) + server.answered == clean_run.prompts  # and nothing missing
    assert "dropped" not in resumed.stderr  # nothing invalid was cached
    assert results(out) == results(clean_run.out)


@pytest.mark.slow  # real `biasmonkey run`s / harness runs: after the fast tests
def test_resume_drops_a_cached_nan_and_gives_a_clean_runs_numbers(
    tiny_model: Path, data_dir: Path, tmp_path: Path, clean_run: CleanRun
) -> None:
    """A cache written before answers were validated: the NaN entries of one prompt are dropped
    (counted) and that prompt is asked again. (All of its entries: the fault server's values depend
    on how many spellings a request asks for.)"""
    out = tmp_path / "out"
    shutil.copytree(clean_run.out / "cache", out / "cache")
    (db,) = (out / "cache").glob("*_rank0.db")
    (samples,) = (clean_run.out / "tiny").glob("samples_biasmonkey_acquiescence_*.jsonl")
    first = json.loads(samples.read_text().splitlines()[0])
    arguments = [(a["arg_0"], a["arg_1"]) for a in first["arguments"].values()]
    prompt = arguments[0][0]
    keys = {hash_args("loglikelihood", a) for a in arguments if a[0] == prompt}
    with sqlite3.connect(db) as conn:
        nan = pickle.dumps((math.nan, False))
        conn.executemany("UPDATE unnamed SET value = ? WHERE key = ?", [(nan, k) for k in keys])
    server = clean_run.server
    server.clear()
    proc = cli(*served_run(server, tiny_model, out, "--resume"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{len(keys)} cached answer(s) of" in proc.stderr and "invalid log-probabilities" in proc.stderr
    assert "dropped" in proc.stderr
    assert server.answered_prompts == [prompt.rstrip()]  # the dropped answers' prompt, and nothing else
    assert results(out) == results(clean_run.out)
