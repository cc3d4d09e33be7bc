"""`biasmonkey-hf` reads a forward's scores only once the next forward is queued (so that the host's
work overlaps the device's): a forward that fails still leaves every earlier answer in the cache."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM


def fail_at_forward(lm: PrefixReuseHFLM, n: int) -> None:
    """`lm`'s n-th forward from now on fails, as a device running out of memory would."""
    run_rows, calls = lm._run_rows, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise RuntimeError("CUDA out of memory (simulated)")
        return run_rows(*args, **kwargs)

    lm._run_rows = failing


def test_answers_before_a_failed_forward_reach_the_cache(tiny_model: Path) -> None:
    lm = PrefixReuseHFLM(pretrained=str(tiny_model), device="cpu", batch_size=1, dtype="float32", row_tokens=4)
    requests = [((f"c{i}", "x"), [20 + i, 30 + i, 40 + i], [5]) for i in range(6)]  # one row, one forward each
    expected = dict(zip([r[0] for r in requests], lm._loglikelihood_tokens(requests, disable_tqdm=True)))

    stored: list[tuple] = []
    lm.cache_hook.add_partial = lambda attr, req, res: stored.append((req, res))
    fail_at_forward(lm, 4)
    with pytest.raises(RuntimeError, match="simulated"):
        lm._loglikelihood_tokens(requests, disable_tqdm=True)
    # the three forwards before the failure answered three requests, the third one read on the way out
    assert len(stored) == 3
    for request, answer in stored:
        assert answer == pytest.approx(expected[request])


@pytest.mark.parametrize("settings", [{"row_tokens": 4, "pack_rows": True}, {"prefix_sharing": False}])
def test_collector_paused_while_scoring_and_no_cycles_left(tiny_model: Path, settings: dict) -> None:
    """Python's cyclic collector is off while requests are scored (a full collection scans every
    object of the process) and as before afterwards; a call makes no reference cycles, so the pause
    holds on to nothing (in particular no tensor) that refcounting would not free."""
    lm = PrefixReuseHFLM(pretrained=str(tiny_model), device="cpu", batch_size=2, dtype="float32", **settings)
    requests = [((f"c{i}", "x"), [20 + i % 3, 30 + i, 40 + i], [5]) for i in range(12)]
    forward, collecting = lm._forward, []

    def recording(**kwargs):
        collecting.append(gc.isenabled())
        return forward(**kwargs)

    lm._forward = recording
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable stays in gc.garbage
    try:
        lm._loglikelihood_tokens(requests, disable_tqdm=True)
        assert gc.isenabled()
        gc.collect()
        left = [type(x).__name__ for x in gc.garbage]
        gc.disable()  # a caller's own pause is kept
        lm._loglikelihood_tokens(requests, disable_tqdm=True)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_debug(0)
        gc.garbage.clear()
    assert len(collecting) > 2 and not any(collecting)
    assert left == []


def instances() -> list[Instance]:
    """16 log-likelihood requests over 5 contexts."""
    return [Instance("loglikelihood", {}, (f"c{i % 5} a b{i}", " yes" if i % 2 else " no"), i) for i in range(16)]


def small(tiny_model: Path) -> PrefixReuseHFLM:
    """Rows of 4 tokens, 2 per forward: several forwards for `instances()`."""
    return PrefixReuseHFLM(pretrained=str(tiny_model), device="cpu", batch_size=2, dtype="float32", row_tokens=4)


def test_a_failed_call_leaves_its_answers_in_lm_evals_cache_and_the_resume_computes_the_rest(
    tiny_model: Path, tmp_path: Path
) -> None:
    """With lm-eval's request cache (`--use_cache`: its CachingLM over a SqliteDict) each forward's
    answers are written and committed together, under lm-eval's own keys: a call that fails midway
    leaves them for the resumed run, which computes only the others."""
    expected = small(tiny_model).loglikelihood(instances())
    lm, commits = small(tiny_model), []
    fail_at_forward(lm, 4)
    cached = CachingLM(lm, str(tmp_path / "cache.db"))
    commit = cached.dbdict.commit
    cached.dbdict.commit = lambda *args: (commits.append(1), commit(*args))[1]
    with pytest.raises(RuntimeError, match="simulated"):
        cached.loglikelihood(instances())
    stored = len(cached.dbdict)
    cached.dbdict.close()
    assert 0 < len(commits) < stored < len(expected)  # one commit per forward, several answers each

    resumed_lm = small(tiny_model)
    resumed = CachingLM(resumed_lm, str(tmp_path / "cache.db"))
    answers = resumed.loglikelihood(instances())
    resumed.dbdict.close()
    assert [g for _, g in answers] == [g for _, g in expected]
    assert [x for x, _ in answers] == pytest.approx([x for x, _ in expected])
    assert resumed_lm.distinct_contexts + stored == len(expected)  # the cached ones were not computed again


def test_under_lm_evals_caching_each_forward_commits_once_and_the_second_writing_not_at_all(
    tiny_model: Path, tmp_path: Path
) -> None:
    """lm-eval's CachingLM (autocommit) writes every answer again after the model's call: each
    forward's answers are committed as they come, and that second writing stores nothing again."""
    lm = small(tiny_model)
    cached = CachingLM(lm, str(tmp_path / "cache.db"))
    commits = []
    commit = cached.dbdict.commit
    cached.dbdict.commit = lambda *args: (commits.append(args), commit(*args))[1]
    cached.loglikelihood(instances())
    assert lm.forward_passes > 2
    assert len(commits) <= lm.forward_passes + 1 < 16  # a commit per forward, one after: none per answer
    assert len(cached.dbdict) == 16 and cached.dbdict.autocommit  # lm-eval's setting, left as it is
    assert cached.dbdict.conn._outer_stack is False  # sqlitedict keeps no stack per statement
    cached.dbdict.close()
