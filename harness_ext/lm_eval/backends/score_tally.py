"""Which requests a forward's scores complete, in `biasmonkey-hf`'s prefix-tree path (hf_prefix.py).

A request (context, continuation) needs one score per continuation token: the log-probability of
that token at a trie node. A forward returns scores by (node, token); a request is answered once
all of its scores are read, with their sum and whether every token was the greedy one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

Pair = tuple[int, tuple[int, ...]]  # (context's number in the call, continuation tokens)
Score = tuple[int, int]  # (trie node, token)
Answer = tuple[float, bool]  # (sum of log-probabilities, every token greedy)


class Tally:
    """The requests of one prefix tree, the scores each needs (`wanted()`) and those read so far.

    What each request needs, and the index from a score to the requests waiting for it, are
    worked out at the first `complete`: once the tree's first forwards are queued, so that on a
    GPU the host does it while the device works instead of before the device has anything to do."""

    def __init__(self, wanted: Callable[[], dict[Pair, list[Score]]]) -> None:
        self._wanted = wanted
        self.wanted: dict[Pair, list[Score]] = {}
        self.results: dict[Score, Answer] = {}
        self._waiting: dict[Score, list[Pair]] | None = None
        self._missing: dict[Pair, int] = {}

    def _index(self) -> dict[Score, list[Pair]]:
        if self._waiting is None:
            self.wanted = self._wanted()
            self._waiting = defaultdict(list)
            for request, scores in self.wanted.items():
                for score in scores:
                    self._waiting[score].append(request)
            self._missing = {request: len(scores) for request, scores in self.wanted.items() if len(scores) > 1}
        return self._waiting

    def complete(self, scored: Iterable[Score]) -> list[tuple[Pair, Answer]]:
        """The requests that the scores `scored` (already in `results`) complete, with their answers."""
        waiting, results, missing, wanted = self._index(), self.results, self._missing, self.wanted
        complete = []
        for score in scored:
            for request in waiting.pop(score):
                if request not in missing:  # one token: its score is its answer
                    complete.append((request, results[score]))
                    continue
                missing[request] -= 1
                if not missing[request]:
                    needed = wanted[request]
                    complete.append((request, (sum(results[s][0] for s in needed), all(results[s][1] for s in needed))))
        return complete

    @property
    def unanswered(self) -> int:
        """Scores still awaited (every score, before the first `complete`)."""
        return len(self._index())
