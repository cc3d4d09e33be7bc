"""`biasmonkey-hf`'s warm-up: a first forward in the background, started when the model is made.

A process's first call on a GPU pays for what happens only once: CUDA loads each kernel at its
first launch, and cuBLAS picks and loads its kernels at the first use of each matrix shape. On an
H100 (1.7B shape, few-shot yes-no) the first call took 1.41 s against 0.64 s for later ones, about
0.3 s of it first launches and 0.28 s first matrix products. lm-eval makes the model, then builds
its tasks and tokenises the requests (seconds of host work) before it calls the model, so a warm-up
run in a thread meanwhile takes those costs off the first call: PyTorch releases Python's lock while
an operator runs. The warm-up's requests make the forwards a call makes: a row over a kept prefix
spine, then a forward of up to `WARM_UP_ROWS` rows of nearly `row_tokens` positions over that cached
prefix (on the 8B shape about 0.1 s of the device's time).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from biasmonkey.harness_ext.lm_eval.backends.score_tally import Pair

log = logging.getLogger(__name__)

Tokens = tuple[int, ...]
WARM_UP_ROWS = 8  # rows in the warm-up's second forward, at most: matrix products of 8 x row_tokens rows


def warm_up_requests(
    row_tokens: int, rows: int, vocabulary: int, multi_token: bool, limit: int
) -> tuple[list[Tokens], dict[Pair, list[int]]]:
    """Contexts and their (context number, continuation) groups, as `_answer_requests` makes them:
    `rows` contexts (at most `vocabulary`) sharing a prefix of `row_tokens` - 8 tokens, each going on
    for as many of its own, with a one-token continuation and (`multi_token`) a two-token one, all
    within `limit` tokens. Planned into rows of `row_tokens`: the prefix's row, which keeps its keys
    and values, then a forward of one row per context over that cached prefix."""
    span = row_tokens - 8 if row_tokens > 16 else max(1, row_tokens // 2)
    span = max(1, min(span, (limit - 2) // 2))
    prefix = [i % vocabulary for i in range(span)]
    contexts = [tuple(prefix + [(b + j) % vocabulary for j in range(span)]) for b in range(min(rows, vocabulary))]
    groups: dict[Pair, list[int]] = {}
    for number in range(len(contexts)):
        groups[number, (0,)] = [len(groups)]
        if multi_token:
            groups[number, (1 % vocabulary, 2 % vocabulary)] = [len(groups)]
    return contexts, groups


class Background:
    """`work` in a thread of its own, started at once; `settle` waits for it (once). A failure is
    logged, not raised: the call that follows meets the same cause and reports it itself."""

    def __init__(self, work: Callable[[], None], name: str) -> None:
        self._error: BaseException | None = None
        self._name = name
        # not a daemon: the interpreter waits for it at exit instead of stopping it on the device
        self._thread: threading.Thread | None = threading.Thread(target=self._run, args=(work,), name=name)
        self._thread.start()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as error:  # (reported by `settle`, in the caller's thread)
            self._error = error

    def settle(self) -> None:
        if self._thread is None:
            return
        self._thread.join()
        self._thread = None
        if self._error is not None:
            log.warning(
                "%s failed (%s: %s); the first call goes on without it",
                self._name,
                type(self._error).__name__,
                self._error,
            )
            self._error = None
