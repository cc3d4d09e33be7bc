"""`Tally`: which requests a forward's (node, token) scores complete, and their answers."""

from __future__ import annotations

from biasmonkey.harness_ext.lm_eval.backends.score_tally import Tally

# requests (context number, continuation tokens) -> the (trie node, token) scores each needs
WANTED = {
    (0, (5,)): [(3, 5)],  # one token: its score is its answer
    (0, (6,)): [(3, 6)],
    (1, (5,)): [(3, 5)],  # another context ending at the same node (requests share that score)
    (2, (7, 8, 9)): [(4, 7), (9, 8), (10, 9)],  # three tokens, read across forwards
}


def read(tally: Tally, scores: dict[tuple[int, int], tuple[float, bool]]) -> list:
    tally.results.update(scores)  # as a forward's `_Scores.read` stores them
    return tally.complete(scores)


def test_one_token_requests_complete_with_their_score() -> None:
    tally = Tally(lambda: WANTED)
    assert tally.unanswered == 5  # every distinct score, before any is read
    done = read(tally, {(3, 5): (-0.5, True), (3, 6): (-2.0, False)})
    assert sorted(done) == [((0, (5,)), (-0.5, True)), ((0, (6,)), (-2.0, False)), ((1, (5,)), (-0.5, True))]
    assert tally.unanswered == 3


def test_a_longer_continuation_completes_once_its_last_score_is_read() -> None:
    tally = Tally(lambda: WANTED)
    assert read(tally, {(4, 7): (-0.25, True)}) == []
    assert read(tally, {(9, 8): (-1.0, True), (3, 5): (-0.5, True)}) == [
        ((0, (5,)), (-0.5, True)),
        ((1, (5,)), (-0.5, True)),
    ]
    # -0.25 - 1.0 - 2.5 = -3.75; one token (9) not the greedy one
    assert read(tally, {(10, 9): (-2.5, False)}) == [((2, (7, 8, 9)), (-3.75, False))]
    assert read(tally, {(3, 6): (-0.125, True)}) == [((0, (6,)), (-0.125, True))]
    assert tally.unanswered == 0


def test_a_longer_continuation_all_greedy() -> None:
    tally = Tally(lambda: {(0, (1, 2)): [(0, 1), (1, 2)]})
    assert read(tally, {(1, 2): (-0.5, True), (0, 1): (-0.75, True)}) == [((0, (1, 2)), (-1.25, True))]
