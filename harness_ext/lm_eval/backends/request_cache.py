"""lm-eval's request cache (`--use_cache`, which `biasmonkey run` always passes) at a cost to match
a fast model.

lm-eval's `CachingLM` keeps answers in a SqliteDict with autocommit: every row is committed, and
the caller waits for the disk. Its `CacheHook.add_partial` stores one answer that way, and after a
model's call CachingLM writes every answer again, one commit each, then commits. sqlitedict also
records the caller's stack with every statement. For the few-shot yes-no suite's 26,400 requests
(CPU, `biasmonkey-hf` with a tiny model) that was 6.5 s of answers stored during a 0.6 s call, and
6.0 s of writing them again after it.

- `cache_answers` writes a batch (a forward's answers) as `add_partial` would, under the same keys
  (`hash_args`), so that CachingLM finds them on resume, in a few multi-row statements and one
  commit, waited for: the batch is on disk before the caller goes on.
- `CacheFriendlyLM`, a base of the backends, leaves autocommit on while the model answers (each
  answer that the stock code stores is committed as it comes) and turns it off when the call
  returns: CachingLM's second writing of answers already stored then costs no commit of its own,
  and its final commit stores them. It also turns off sqlitedict's stack records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from lm_eval.api.model import hash_args

# rows per statement: two variables each, within SQLite's oldest limit of 999 per statement
ROWS_PER_STATEMENT = 400


def cache_answers(hook: Any, attr: str, entries: Sequence[tuple[Any, Any]]) -> None:
    """(request arguments, answer) pairs of lm-eval request type `attr` into the cache behind
    `hook` (an lm-eval `CacheHook`), as its `add_partial` would store them. Without a cache
    (`dbdict` None, or another kind of hook) each pair goes through `add_partial`."""
    store = getattr(hook, "dbdict", None)
    if store is None:
        for arguments, answer in entries:
            hook.add_partial(attr, arguments, answer)
        return
    rows = {store.encode_key(hash_args(attr, arguments)): store.encode(answer) for arguments, answer in entries}
    items = list(rows.items())
    for start in range(0, len(items), ROWS_PER_STATEMENT):
        chunk = items[start : start + ROWS_PER_STATEMENT]
        values = ", ".join(["(?, ?)"] * len(chunk))
        store.conn.execute(
            f'REPLACE INTO "{store.tablename}" (key, value) VALUES {values}', [x for row in chunk for x in row]
        )
    if items:
        store.commit()


@contextlib.contextmanager
def _answering(hook: Any) -> Iterator[None]:
    """Autocommit on while a model answers; off once it has answered (see the module docstring)."""
    store = getattr(hook, "dbdict", None)
    if store is not None:
        store.autocommit = True
    yield
    if store is not None:
        store.autocommit = False


class CacheFriendlyLM:
    """A base, before the lm-eval LM class, for a model under lm-eval's CachingLM (see the module
    docstring)."""

    cache_hook: Any

    def set_cache_hook(self, cache_hook: Any) -> None:
        super().set_cache_hook(cache_hook)  # type: ignore[misc]
        connection = getattr(getattr(cache_hook, "dbdict", None), "conn", None)
        if hasattr(connection, "_outer_stack"):  # the caller's stack, kept with every statement
            connection._outer_stack = False

    def loglikelihood(self, requests: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        with _answering(self.cache_hook):
            return super().loglikelihood(requests, *args, **kwargs)  # type: ignore[misc]

    def loglikelihood_rolling(self, requests: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        with _answering(self.cache_hook):
            return super().loglikelihood_rolling(requests, *args, **kwargs)  # type: ignore[misc]

    def generate_until(self, requests: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        with _answering(self.cache_hook):
            return super().generate_until(requests, *args, **kwargs)  # type: ignore[misc]
