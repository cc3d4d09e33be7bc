"""Per-document records of the wrapped multiple-choice tasks: the contract between the harness
adapters and the metrics.

One document = one item asked in one cyclic order (`kind` "item"), or the content-free prompt of
one option count (`kind` "content_free", contextual calibration's "N/A" input). An adapter scores
each letter's spellings after the prompt and turns them into a `PositionRecord`; a letter's
log-probability is the log-sum-exp of its spellings. Task-level numbers come from
`summarize(records, options)`, which groups the records by item and calls
`biasmonkey.metrics.position_bias`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from biasmonkey.metrics.position_bias import PositionItem, PositionSummary, summarize_positions
from biasmonkey.metrics.yesno import answer_logprob
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import check_option_count, cyclic_order

KINDS = ("item", "content_free")


@dataclass(frozen=True)
class PositionRecord:
    id: str  # the item's id (content-free: "content_free_<n>")
    kind: str  # "item" or "content_free"
    n: int  # options
    gold: int  # the gold option's original index (−1 for the content-free prompt)
    shift: int  # the cyclic order asked: position p shows original option (p + shift) mod n
    logprobs: tuple[float, ...]  # each letter's spellings after the prompt, letter by letter
    letters: tuple[float, ...]  # per letter: log-sum-exp of its spellings
    # From top log-probabilities (Inspect): spellings missing from the top-k, given the documented
    # floor; 0 where every spelling was scored.
    n_imputed: float = 0

    def order(self) -> list[int]:
        """The original option shown at each position."""
        return cyclic_order(self.n, self.shift).tolist()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PositionRecord:
        """Inverse of as_dict (e.g. after a JSON round trip)."""
        return score_document(d, d["logprobs"], d.get("n_imputed", 0))


def score_document(doc: Mapping[str, Any], logprobs: Sequence[float], n_imputed: float = 0) -> PositionRecord:
    """Record of one document from the log-probabilities of its letters' spellings, letter by
    letter (`doc` needs id, kind, n, gold and shift)."""
    where = f"item {doc['id']}"
    n, gold, shift, kind = int(doc["n"]), int(doc["gold"]), int(doc["shift"]), doc["kind"]
    check_option_count(n, where)
    if kind not in KINDS:
        raise ValueError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "item" and not 0 <= gold < n:
        raise ValueError(f"{where}: gold option {gold} is not one of the {n} options")
    if not 0 <= shift < n:
        raise ValueError(f"{where}: shift {shift} is not one of the {n} cyclic orders")
    values = tuple(float(x) for x in logprobs)
    if not values or len(values) % n:
        raise ValueError(f"{where}: {len(values)} log-probabilities for {n} letters (expected a multiple of {n})")
    width = len(values) // n
    letters = tuple(answer_logprob(values[j * width : (j + 1) * width]) for j in range(n))
    if not all(math.isfinite(x) for x in letters):
        raise ValueError(f"{where}: log-probabilities {values} leave a letter without probability")
    return PositionRecord(str(doc["id"]), kind, n, gold if kind == "item" else -1, shift, values, letters, n_imputed)


def document_order(item_id: str) -> tuple[str, int]:
    """Items in their task's document order: ids end with the document's index ("mmlu_anatomy-12")."""
    head, _, tail = item_id.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (item_id, -1)


def position_items(records: Sequence[PositionRecord]) -> tuple[list[PositionItem], dict[int, np.ndarray]]:
    """The items (in first-seen order, their rows by shift) and the content-free letter
    log-probabilities per option count, from a task's records."""
    rows: dict[str, dict[int, PositionRecord]] = defaultdict(dict)
    content_free: dict[int, np.ndarray] = {}
    for r in records:
        if r.kind == "content_free":
            if r.n in content_free:
                raise ValueError(f"two content-free records for {r.n} options ({r.id})")
            content_free[r.n] = np.array(r.letters)
        elif r.shift in rows[r.id]:
            raise ValueError(f"item {r.id}: two records of the cyclic order {r.shift}")
        else:
            first = next(iter(rows[r.id].values()), None)
            if first is not None and (first.n, first.gold) != (r.n, r.gold):
                raise ValueError(f"item {r.id}: its records disagree on the options or the gold answer")
            rows[r.id][r.shift] = r
    items = []
    for item_id, by_shift in sorted(rows.items(), key=lambda kv: document_order(kv[0])):
        if 0 not in by_shift:  # counted by items_without_original
            continue
        shifts = tuple(sorted(by_shift))
        first = by_shift[shifts[0]]
        logprobs = np.array([by_shift[s].letters for s in shifts])
        items.append(PositionItem(id=item_id, n=first.n, gold=first.gold, shifts=shifts, logprobs=logprobs))
    return items, content_free


def items_without_original(records: Sequence[PositionRecord]) -> list[str]:
    """The items `position_items` leaves out: some of their orders answered, the original one not
    (an Inspect `--sample-id` selection, a run cut short); each report counts them."""
    shifts: dict[str, set[int]] = defaultdict(set)
    for r in records:
        if r.kind == "item":
            shifts[r.id].add(r.shift)
    return sorted((i for i, s in shifts.items() if 0 not in s), key=document_order)


def unasked_original(missing: Sequence[str]) -> str:
    """The note on the items `items_without_original` found."""
    n, shown = len(missing), ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
    return (
        f"{n} item{'s' * (n != 1)} left out of every number, as the original order has no answer ({shown}): "
        "run every order of an item (not a --sample-id selection of them) to score it"
    )


def summarize(records: Sequence[PositionRecord], options: PositionOptions | None = None) -> PositionSummary:
    """Task-level numbers from a task's records (any order)."""
    options = options or PositionOptions()
    items, content_free = position_items(records)
    return summarize_positions(
        items,
        content_free=content_free or None,
        pride_share=options.pride_share,
        pride_seed=options.pride_seed,
        k=options.k,
        specific_seed=options.seed,
        resamples=options.resamples,
    )
