"""Which planned rows `biasmonkey-hf` runs in its next forward (`PrefixReuseHFLM._fill_lanes`): a
forward's padding is bounded, and rows wait for a later forward only where that saves padding
worth a forward's fixed cost, or a later forward comes anyway."""

from __future__ import annotations

import pytest

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PADDING_SLACK, PrefixReuseHFLM
from biasmonkey.harness_ext.lm_eval.backends.prompt_trie import ROOT, Row

ROW_TOKENS = 16


def row(size: int, first: int, keeps: bool = False) -> Row:
    """A row of `size` root-anchored nodes numbered from `first` (a chain), keeping its first node."""
    nodes = list(range(first, first + size))
    return Row(ROOT, nodes, [size] * size, [[0]] if keeps else [])


def fill(rows: list[Row], spare: int = ROW_TOKENS, pack: bool = False, batch_rows: int = 32) -> list[list[int]]:
    """The rows (by index) of each lane of the next forward, widest first as the executor orders
    them; `spare`: the padding a forward that no other would follow may add (the executor's
    `row_tokens` where it packs rows, else 0)."""
    candidates = sorted(range(len(rows)), key=lambda r: -len(rows[r].nodes))
    lanes, chosen = PrefixReuseHFLM._fill_lanes(
        candidates, rows, lambda anchor: [], batch_rows, 1000, ROW_TOKENS, pack, spare=spare
    )
    index = {id(r): i for i, r in enumerate(rows)}
    assert chosen == {index[id(r)] for lane in lanes for r in lane.rows}
    return [[index[id(r)] for r in lane.rows] for lane in lanes]


def test_the_last_rows_pad_by_a_row_rather_than_take_a_forward_of_their_own() -> None:
    """Rows of 16, 16 and 4 positions: 12 padding positions (33 % of 36). Nothing follows them, so
    one forward runs all three; with other rows waiting, or on CPU, the narrow one waits for a later
    forward."""
    rows = [row(16, 0), row(16, 16), row(4, 32)]
    padding = 3 * ROW_TOKENS - 36
    assert padding > PADDING_SLACK * 36 and padding <= PADDING_SLACK * 36 + ROW_TOKENS
    assert fill(rows) == [[0], [1], [2]]
    assert fill(rows, spare=0) == [[0], [1]]


def test_rows_wait_when_the_forward_keeps_spines() -> None:
    """A row that keeps a spine opens rows for a later forward: the narrow row can go with those."""
    rows = [row(16, 0, keeps=True), row(16, 16), row(4, 32)]
    assert fill(rows) == [[0], [1]]


@pytest.mark.parametrize("spare", [0, ROW_TOKENS])
def test_padding_beyond_a_row_sends_lanes_to_a_later_forward(spare: int) -> None:
    """Rows of 16, then six of 2: 6 × 14 padding positions, more than a row's worth beyond the
    slack. Once one lane must wait, a later forward comes anyway: lanes then wait down to the slack."""
    rows = [row(16, 0), *(row(2, 16 + 2 * k) for k in range(6))]
    assert fill(rows, spare=spare) == [[0]]


def test_rows_wait_when_some_are_left_out_anyway() -> None:
    """Two lanes a forward: the third row (10) must wait, so the 10 beside the 16 (6 padding
    positions, 23 %) waits with it."""
    assert fill([row(16, 0), row(10, 16), row(10, 26)], pack=True, batch_rows=2) == [[0]]
    assert fill([row(16, 0), row(10, 16)], pack=True, batch_rows=2) == [[0], [1]]


def test_packed_rows_fill_lanes_before_any_waits() -> None:
    rows = [row(16, 0), row(10, 16), row(4, 26), row(2, 30)]
    assert fill(rows, pack=True) == [[0], [1, 2, 3]]
