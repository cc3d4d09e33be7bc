"""One line, not a traceback, where the stock command lines stop on biasmonkey's word about a run's
input.

`lm_eval --tasks biasmonkey_…` and `inspect eval biasmonkey/…` leave an error in a task's options
or data uncaught: Python prints some forty lines of the harness's frames above biasmonkey's message
(`option mode='bogus' is invalid; use one of exact, sample`). Importing biasmonkey's lm-eval task
class or its Inspect entry point installs `install`'s hook: an uncaught error that biasmonkey
raised itself (a `ValueError` from one of its modules, or one of its own error types) prints as
`biasmonkey: error: <message>` on one line; any other error keeps Python's traceback, and
`BIASMONKEY_TRACEBACK=1` keeps it for these too. `biasmonkey`'s own commands print their errors
as one line already (`harness_ext/app/cli.py`).
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

SHOW_TRACEBACK = "BIASMONKEY_TRACEBACK"
PACKAGE = "biasmonkey."


def raised_by_biasmonkey(kind: type[BaseException], tb: TracebackType | None) -> bool:
    """Whether an error is biasmonkey's word about the input: one of its error types, or a
    ValueError raised in one of its modules (the innermost frame)."""
    if kind.__module__.startswith(PACKAGE):
        return True
    if not issubclass(kind, ValueError) or tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).startswith(PACKAGE)


def install() -> None:
    """Print biasmonkey's uncaught input errors as one line (once per process; chained to the hook
    already installed, which handles every other error)."""
    previous = sys.excepthook
    if getattr(previous, "biasmonkey", False):
        return

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if os.environ.get(SHOW_TRACEBACK) or not raised_by_biasmonkey(kind, tb):
            previous(kind, error, tb)
            return
        sys.stderr.write(f"biasmonkey: error: {error} ({SHOW_TRACEBACK}=1 shows the traceback)\n")

    hook.biasmonkey = True  # type: ignore[attr-defined]
    sys.excepthook = hook
