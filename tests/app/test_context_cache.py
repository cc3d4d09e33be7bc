"""The prompt-length check's model context, kept per local model folder (`context_check.model_context`).

Reading a config imports torch and transformers (seconds per `biasmonkey run`); a folder's context is
read once and then taken from biasmonkey's cache, keyed by the folder's small files' names and
contents and transformers' version, and a run whose prompts are all too short to be cut loads no
tokenizer at all. A changed config is a new key: the cache never answers for other files.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app import context_check
from biasmonkey.harness_ext.app.context_check import LIMITS_CACHE, check_context, model_context
from biasmonkey.harness_ext.app.plan import build_requests
from biasmonkey.tasks.cache import CACHE_DIR_ENV


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache" / LIMITS_CACHE


def refuse_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> None:
        raise AssertionError("the tokenizer or config was loaded")

    monkeypatch.setattr(context_check, "load_for_context", refuse)
    monkeypatch.setattr(context_check, "_load_tokenizer", refuse)


def test_a_folders_context_is_read_once_then_kept(
    tiny_model: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    limit, where, tokenizer = model_context(str(model), server=False)
    assert (limit, where) == (1024, "config.json n_positions") and tokenizer is not None
    [entry] = cache.iterdir()
    assert json.loads(entry.read_text()) == {"limit": 1024, "source": "config.json n_positions"}

    refuse_loading(monkeypatch)
    assert model_context(str(model), server=False) == (1024, "config.json n_positions", None)
    monkeypatch.undo()
    monkeypatch.setenv(CACHE_DIR_ENV, str(cache.parent))

    # another config is another key, read afresh
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps(config | {"n_positions": 64}))
    assert model_context(str(model), server=False)[:2] == (64, "config.json n_positions")
    assert len(list(cache.iterdir())) == 2
    # a served model's tokenizer folder is its own key too
    assert model_context(str(model), server=True)[:2] == (64, "config.json n_positions")
    assert len(list(cache.iterdir())) == 3


def test_a_run_of_short_prompts_loads_no_tokenizer(
    tiny_model: Path, cache: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = build_requests("biasmonkey_acquiescence", {}, limit=2)
    args = argparse.Namespace(backend="hf", apply_chat_template=False, allow_truncation=False)
    first = check_context(args, tasks, str(tiny_model), {})
    assert (first.limit, first.source, first.cuts) == (1024, "config.json n_positions", {})

    refuse_loading(monkeypatch)
    again = check_context(args, tasks, str(tiny_model), {})
    assert (again.limit, again.cuts) == (1024, {})
    # a prompt that may not fit needs the tokenizer, cached context or not
    long = [replace(t, requests=[replace(r, context="x" * 2000) for r in t.requests]) for t in tasks]
    with pytest.raises(AssertionError, match="tokenizer or config was loaded"):
        check_context(args, long, str(tiny_model), {})


def test_a_damaged_cache_entry_is_read_afresh(tiny_model: Path, cache: Path) -> None:
    model_context(str(tiny_model), server=False)
    [entry] = cache.iterdir()
    for damaged in ("{not json", '{"limit": "1024", "source": "x"}', '{"limit": -5, "source": "x"}', '{"limit": 9}'):
        entry.write_text(damaged)
        assert model_context(str(tiny_model), server=False)[:2] == (1024, "config.json n_positions")
        assert json.loads(entry.read_text()) == {"limit": 1024, "source": "config.json n_positions"}
