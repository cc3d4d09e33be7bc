"""`cache_answers`: a batch of answers into lm-eval's request cache, as lm-eval's own hook stores them."""

from __future__ import annotations

from pathlib import Path

from lm_eval.api.model import CacheHook, CachingLM, hash_args

from biasmonkey.harness_ext.lm_eval.backends import request_cache
from biasmonkey.harness_ext.lm_eval.backends.request_cache import cache_answers


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


def test_without_a_cache_each_answer_goes_to_the_hooks_add_partial() -> None:
    recorder = Recorder()
    cache_answers(recorder, "generate_until", [(("a", {}), "x"), (("b", {}), "y")])
    assert recorder.added == [("generate_until", ("a", {}), "x"), ("generate_until", ("b", {}), "y")]
    cache_answers(CacheHook(None), "loglikelihood", [(("a", " b"), (0.0, True))])  # lm-eval's hook without a cache
