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
  commit, waited for: the batch is on disk before the caller goes on. The keys come from
  `request_keys`: a key is the SHA-256 of the request's arguments as JSON, and the requests of a
  batch share their contexts (eight per context in the few-shot yes-no suite), so each distinct
  context is hashed once and each request only adds its continuation (26,400 keys: 0.08 → 0.03 s).
- `CacheFriendlyLM`, a base of the backends, turns off sqlitedict's stack records and gives the
  cache `RowsInMemory`.
- `RowsInMemory`: every lookup of CachingLM (`key in cache`, then `cache[key]` for a hit) is one
  query through sqlitedict's worker thread, about 130 µs: 3.5 s before the few-shot call, 1.7 s
  more to read 13,200 hits on resume. `CacheFriendlyLM` gives the cache this class, which reads
  the table once (0.07 s for 13,200 rows) and answers lookups from memory; every write through it
  updates that copy, and the second writing of a row already stored with the same bytes is skipped:
  after the call CachingLM's writing of every answer again sends nothing, and its final commit
  finds nothing to store.
  Rows are never changed but by this process's writes (a key's answer is the same whoever writes
  it), so the copy cannot give an answer the table would not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from lm_eval.api.model import CacheHook, hash_args
from sqlitedict import SqliteDict

# rows per statement: two variables each, within SQLite's oldest limit of 999 per statement
ROWS_PER_STATEMENT = 400


def cache_answers(hook: Any, attr: str, entries: Sequence[tuple[Any, Any]]) -> None:
    """(request arguments, answer) pairs of lm-eval request type `attr` into the cache behind
    `hook` (an lm-eval `CacheHook`), as its `add_partial` would store them. Without a cache
    (`dbdict` None, or another kind of hook) each pair goes through `add_partial`, unless that is
    lm-eval's own, which then does nothing."""
    store = getattr(hook, "dbdict", None)
    if store is None:
        if getattr(hook.add_partial, "__func__", None) is CacheHook.add_partial:  # (not one set on the hook)
            return
        for arguments, answer in entries:
            hook.add_partial(attr, arguments, answer)
        return
    keys = request_keys(attr, [arguments for arguments, _ in entries])
    encoded: dict[int, Any] = {}  # answer object -> its bytes (the requests of a group share it)
    rows = {}
    for key, (_, answer) in zip(keys, entries):
        if id(answer) not in encoded:
            encoded[id(answer)] = store.encode(answer)
        rows[store.encode_key(key)] = encoded[id(answer)]
    if isinstance(store, RowsInMemory):
        store.remember(rows)
    items = list(rows.items())
    for start in range(0, len(items), ROWS_PER_STATEMENT):
        chunk = items[start : start + ROWS_PER_STATEMENT]
        values = ", ".join(["(?, ?)"] * len(chunk))
        store.conn.execute(
            f'REPLACE INTO "{store.tablename}" (key, value) VALUES {values}', [x for row in chunk for x in row]
        )
    if items:
        store.commit()


def request_keys(attr: str, arguments: Iterable[Sequence[Any]]) -> list[str]:
    """lm-eval's `hash_args(attr, a)` for each `a` of `arguments`: the SHA-256 of
    json.dumps([attr, *a]). For a pair of strings (context, continuation) the hash of its start,
    up to the continuation, is computed once per distinct context and copied; the bytes of the
    rest once per distinct continuation."""
    started: dict[str, Any] = {}  # context -> the hash of '["attr", "context", '
    ends: dict[str, bytes] = {}  # continuation -> '"continuation"]'
    head = f"[{json.dumps(attr)}, "
    keys = []
    for args in arguments:
        if len(args) != 2 or type(args[0]) is not str or type(args[1]) is not str:
            keys.append(hash_args(attr, args))
            continue
        context, continuation = args
        start = started.get(context)
        if start is None:
            start = started[context] = hashlib.sha256(f"{head}{json.dumps(context)}, ".encode())
        end = ends.get(continuation)
        if end is None:
            end = ends[continuation] = f"{json.dumps(continuation)}]".encode()
        key = start.copy()
        key.update(end)
        keys.append(key.hexdigest())
    return keys


class RowsInMemory(SqliteDict):
    """A SqliteDict whose lookups read a copy of its table, made on the first one (see the module
    docstring). Writes go to the table as before and into the copy; a bulk write or a deletion
    drops the copy, to be read again."""

    _rows: dict[Any, bytes] | None = None

    def _stored(self) -> dict[Any, bytes]:
        if self._rows is None:
            self._rows = dict(self.conn.select(f'SELECT key, value FROM "{self.tablename}"'))
        return self._rows

    def remember(self, rows: dict[Any, bytes]) -> None:
        """Rows (encoded key: encoded value) written to the table other than through this dict."""
        if self._rows is not None:
            self._rows.update(rows)

    def __contains__(self, key: Any) -> bool:
        return self.encode_key(key) in self._stored()

    def __getitem__(self, key: Any) -> Any:
        encoded = self._stored().get(self.encode_key(key))
        if encoded is None:
            raise KeyError(key)
        return self.decode(encoded)

    def __setitem__(self, key: Any, value: Any) -> None:
        rows, stored_key, encoded = self._stored(), self.encode_key(key), self.encode(value)
        if rows.get(stored_key) != encoded:
            super().__setitem__(key, value)
            rows[stored_key] = encoded

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._rows = None

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._rows = None

    def clear(self) -> None:
        super().clear()
        self._rows = None


class CacheFriendlyLM:
    """A base, before the lm-eval LM class, for a model under lm-eval's CachingLM (see the module
    docstring)."""

    cache_hook: Any

    def set_cache_hook(self, cache_hook: Any) -> None:
        super().set_cache_hook(cache_hook)  # type: ignore[misc]
        store = getattr(cache_hook, "dbdict", None)
        if type(store) is SqliteDict:  # CachingLM's own: the same object, its lookups from memory
            store.__class__ = RowsInMemory
        connection = getattr(store, "conn", None)
        if hasattr(connection, "_outer_stack"):  # the caller's stack, kept with every statement
            connection._outer_stack = False
