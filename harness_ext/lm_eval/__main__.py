"""`python -m biasmonkey.harness_ext.lm_eval ARGS…`: the stock `lm_eval` command line with biasmonkey's
model backends registered (`--model biasmonkey-hf`, `--model biasmonkey-server`).

lm-eval 0.4.13 has no model plugin discovery (the `lm_eval.models` entry point biasmonkey declares is
merged upstream but not released), and lm-eval creates the model before it loads any task, so a
task file cannot register a backend: this launcher imports the backends first, then hands over to
lm-eval's own CLI, unchanged.

When `biasmonkey run` starts it (environment variable `BIASMONKEY_RUN` set), lm-eval's advice to
apply the chat template to an instruct model is left out: the raw prompt is the paper's protocol and
a deliberate default there. Every other message, warnings and errors included, is lm-eval's own.

Stopping keeps what finished: lm-eval's request cache (a SqliteDict written by a daemon thread,
`autocommit` without waiting) is flushed at exit, and SIGINT / SIGTERM end the run with one line and
exit status 130 / 143 instead of a traceback, so that `biasmonkey run --resume` sends only the rest.
"""

import atexit
import logging
import os
import signal
import sys
import weakref
from typing import Any

import sqlitedict
from lm_eval.__main__ import cli_evaluate

from biasmonkey.harness_ext.lm_eval import backends  # noqa: F401  (registers the model backends)

QUIET_ENV = "BIASMONKEY_RUN"


class DropChatTemplateAdvice(logging.Filter):
    """Drops lm-eval's "appears to be an instruct or chat variant but chat template is not applied" warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = " ".join(record.getMessage().split())  # lm-eval wraps it over several lines
        return "chat variant but chat template is not applied" not in message


_OPEN_CACHES: list[weakref.ref] = []  # SqliteDict is a mapping, so unhashable: no WeakSet


class FlushedSqliteDict(sqlitedict.SqliteDict):
    """lm-eval's cache store, flushed to disk when the process exits (normally, on an error or a signal)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _OPEN_CACHES.append(weakref.ref(self))


@atexit.register
def _flush_caches() -> None:
    for cache in filter(None, (ref() for ref in _OPEN_CACHES)):
        try:
            cache.commit(blocking=True)
        except Exception as err:  # a cache that failed cannot be saved now; say so, do not hide the exit
            print(f"biasmonkey: could not flush the request cache {cache.filename}: {err}", file=sys.stderr)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds normally: atexit flushes the cache


def main() -> None:
    if os.environ.get(QUIET_ENV):
        logging.getLogger("lm_eval.evaluator").addFilter(DropChatTemplateAdvice())
    sqlitedict.SqliteDict = FlushedSqliteDict  # lm-eval's CachingLM imports it when it starts
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        cli_evaluate()
    except KeyboardInterrupt:
        print("lm-eval stopped (SIGINT); finished requests are in its cache", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":
    main()
