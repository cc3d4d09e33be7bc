"""lm-eval's request cache under the backends: `cache_answers` writes a batch of answers as lm-eval's own hook
stores them; `RowsInMemory` answers CachingLM's lookups from one reading of the table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM, CacheHook, CachingLM, hash_args
from sqlitedict import SqliteDict

from biasmonkey.harness_ext.lm_eval.backends import request_cache
from biasmonkey.harness_ext.lm_eval.backends.request_cache import (
    CacheFriendlyLM,
    RowsInMemory,
    cache_answers,
    request_keys,
)


class Recorder:
    """A hook that records what it is given (and an LM for CachingLM to wrap)."""

    def __init__(self) -> None:
        self.added: list[tuple] = []

    def set_cache_hook(self, hook: CacheHook) -> None:
        pass

    def add_partial(self, attr: str, req: tuple, res: object) -> None:
        self.added.append((attr, req, res))


def test_rows_and_keys_as_lm_evals_hook_writes_them_in_one_commit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(request_cache, "ROWS_PER_STATEMENT", 3)  # several statements for 7 rows
    entries = [((f"context {i}", " yes"), (-0.5 * i, i % 2 == 0)) for i in range(7)] + [
        (("context 0", " yes"), (0.0, True))
    ]
    ours = CachingLM(Recorder(), str(tmp_path / "ours.db"))
    commits = []
    commit = ours.dbdict.commit
    ours.dbdict.commit = lambda *args: (commits.append(args), commit(*args))[1]
    cache_answers(ours.get_cache_hook(), "loglikelihood", entries)
    cache_answers(ours.get_cache_hook(), "loglikelihood", [])  # nothing to write: no commit
    theirs = CachingLM(Recorder(), str(tmp_path / "theirs.db"))
    for arguments, answer in entries:
        theirs.get_cache_hook().add_partial("loglikelihood", arguments, answer)
    assert len(commits) == 1
    assert dict(ours.dbdict.items()) == dict(theirs.dbdict.items())
    assert len(ours.dbdict) == 7 and ours.dbdict[hash_args("loglikelihood", ("context 0", " yes"))] == (0.0, True)
    ours.dbdict.close()
    theirs.dbdict.close()


def test_request_keys_are_lm_evals_hash_args() -> None:
    contexts = ["Q: Is it so?\nA:", 'Il a dit « oui » — "vraiment" \\ ok', "问题：是吗？\t", "", "emoji 🙂\u2028 end"]
    continuations = [" Yes", " No", "", ' "quoted"', "\n"]
    arguments: list[tuple] = [(c, k) for c in contexts for k in continuations]  # contexts shared across requests
    arguments += [("a", " b", "c"), ("a", {"until": ["\n"], "max_gen_toks": 4}), (["not", "a string"], " x")]
    for attr in ("loglikelihood", "generate_until"):
        assert request_keys(attr, arguments) == [hash_args(attr, a) for a in arguments]
    assert request_keys("loglikelihood", []) == []


def test_without_a_cache_each_answer_goes_to_the_hooks_add_partial() -> None:
    recorder = Recorder()
    cache_answers(recorder, "generate_until", [(("a", {}), "x"), (("b", {}), "y")])
    assert recorder.added == [("generate_until", ("a", {}), "x"), ("generate_until", ("b", {}), "y")]
    cache_answers(CacheHook(None), "loglikelihood", [(("a", " b"), (0.0, True))])  # lm-eval's hook without a cache


class Answers(LM):
    """An LM that scores a request by its context's length, stores each answer as the backends do
    (`cache_answers`) and records what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple] = []

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        arguments = [request.args for request in requests]
        self.asked += arguments
        answers = [(-float(len(context)), len(continuation) == 4) for context, continuation in arguments]
        cache_answers(self.cache_hook, "loglikelihood", list(zip(arguments, answers)))
        return answers

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list[float]:
        raise NotImplementedError

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        raise NotImplementedError


class FriendlyAnswers(CacheFriendlyLM, Answers):
    pass


def requests(*contexts: str) -> list[Instance]:
    return [Instance("loglikelihood", {}, (context, " yes"), i) for i, context in enumerate(contexts)]


def counting_statements(store: SqliteDict) -> Counter:
    """Counts of the statements `store` sends to its worker thread (every one through its
    `execute`), by their first word (commits as "--commit--")."""
    counts: Counter = Counter()
    execute = store.conn.execute

    def counted(statement: str, *args: Any, **kwargs: Any) -> Any:
        counts[statement.split()[0]] += 1
        return execute(statement, *args, **kwargs)

    store.conn.execute = counted
    return counts


def test_lookups_read_the_table_once_and_answers_already_stored_are_not_written_again(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.db")
    first = CachingLM(FriendlyAnswers(), path)
    assert isinstance(first.dbdict, RowsInMemory)
    counts = counting_statements(first.dbdict)
    answers = first.loglikelihood(requests("a", "bb", "ccc", "bb"))
    assert answers == [(-1.0, True), (-2.0, True), (-3.0, True), (-2.0, True)]
    # one read of the table for four lookups, one statement for the answers (and its commit), none
    # for CachingLM's second writing (its final commit has nothing left to store)
    assert counts == {"SELECT": 1, "REPLACE": 1, "--commit--": 2}
    first.dbdict.close()

    # resumed: every answer from the table as read, nothing asked of the model, nothing written
    model = FriendlyAnswers()
    resumed = CachingLM(model, path)
    counts = counting_statements(resumed.dbdict)
    assert resumed.loglikelihood(requests("ccc", "a", "bb")) == [(-3.0, True), (-1.0, True), (-2.0, True)]
    assert model.asked == [] and counts == {"SELECT": 1, "--commit--": 1}
    resumed.dbdict.close()


def test_a_table_that_lm_evals_own_cache_began_is_resumed_with_the_rest_asked(tmp_path: Path) -> None:
    path = str(tmp_path / "cache.db")
    stock = CachingLM(Answers(), path)  # lm-eval's SqliteDict, each answer through add_partial
    assert type(stock.dbdict) is SqliteDict
    stock.loglikelihood(requests("a", "bb"))
    stock.dbdict.close()
    model = FriendlyAnswers()
    resumed = CachingLM(model, path)
    assert resumed.loglikelihood(requests("bb", "dddd", "a")) == [(-2.0, True), (-4.0, True), (-1.0, True)]
    assert model.asked == [("dddd", " yes")]
    assert dict(resumed.dbdict.items()) == {
        hash_args("loglikelihood", (context, " yes")): (-float(len(context)), True) for context in ("a", "bb", "dddd")
    }
    resumed.dbdict.close()


def test_the_copy_follows_every_write_and_is_read_again_after_a_bulk_one(tmp_path: Path) -> None:
    store = CachingLM(FriendlyAnswers(), str(tmp_path / "cache.db")).dbdict
    assert "k" not in store  # the copy is made
    store["k"] = (1.0, True)
    assert store["k"] == (1.0, True) and "k" in store
    store["k"] = (2.0, False)  # a different answer goes to the table
    assert store["k"] == (2.0, False) and SqliteDict(store.filename)["k"] == (2.0, False)
    store.update({"u": (3.0, True)})
    assert store["u"] == (3.0, True)
    del store["k"]
    assert "k" not in store and list(store.keys()) == ["u"]
    with pytest.raises(KeyError):
        store["k"]
    store.clear()
    assert "u" not in store and len(store) == 0
    store.close()


def test_without_a_cache_lm_eval_s_own_hook_is_not_called() -> None:
    """lm-eval's `CacheHook(None).add_partial` does nothing: the answers are not even read (26,400
    calls of it a few-shot call); one set on the hook, or a hook of another kind, is still called."""

    class Unread(list):
        def __iter__(self):
            raise AssertionError("the answers were read")

    cache_answers(CacheHook(None), "loglikelihood", Unread([(("a", "b"), (-1.0, True))]))
    calls: list[tuple] = []
    hook = CacheHook(None)
    hook.add_partial = lambda attr, req, res: calls.append((attr, req, res))

    class Recording(CacheHook):
        def add_partial(self, attr: str, req: Any, res: Any) -> None:
            calls.append((attr, req, res))

    for recorder in (hook, Recording(None)):
        cache_answers(recorder, "loglikelihood", [(("a", "b"), (-1.0, True))])
    assert calls == [("loglikelihood", ("a", "b"), (-1.0, True))] * 2
