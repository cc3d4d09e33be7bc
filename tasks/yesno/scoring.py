"""Per-item records of the yes-no suite: the contract between harness adapters and metrics.

An adapter scores the four answer continuations (" Yes", "Yes", " No", "No") after the item's
prompt and, for the Generic correction, after the model's prefix token alone (BOS, or EOS
when there is none), and turns them into an ItemRecord. Every task-level number comes from
`summarize(records)`, which calls `biasmonkey.metrics.yesno`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from biasmonkey.metrics.yesno import K_FOLDS, SEED, YesNoSummary, answer_logprob, authors_folds, summarize_yesno
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, NO_CONTINUATIONS, YES_CONTINUATIONS

# No-context log-probabilities are one number per model; copies logged with each item must agree.
NULL_TOLERANCE = 1e-6
# The kinds of `caveats`.
TIES = "tied answers"
NO_SPECIFIC = "items without a Specific answer"
SPECIFIC_UNDEFINED = "Specific undefined"
SMALL_CLASS = "gold class smaller than k"


@dataclass(frozen=True)
class ItemRecord:
    id: str
    dataset: str
    domain: str | None
    gold: str  # "Yes" or "No"
    logprobs: tuple[float, ...]  # the CONTINUATIONS after the prompt, in order
    null_logprobs: tuple[float, ...] | None  # the same after the prefix token alone (Generic)
    yes: float  # log-sum-exp over YES_CONTINUATIONS
    no: float
    null_yes: float | None
    null_no: float | None
    # From top log-probabilities (Inspect, lm-eval's biasmonkey-server): continuations missing from the top-k, given the
    # documented floor, after the prompt and in the no-context measurement; 0 where every continuation was scored.
    n_imputed: float = 0
    n_imputed_null: float = 0

    @property
    def gold_yes(self) -> bool:
        return self.gold == "Yes"

    def as_dict(self) -> dict[str, Any]:
        # the fields as they are (str, float, tuples of floats): `asdict`'s recursive copy is a tenth as fast
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ItemRecord:
        """Inverse of as_dict (e.g. after a JSON round trip)."""
        doc = {"id": d["id"], "dataset": d["dataset"], "domain": d.get("domain"), "gold": d["gold"]}
        return score_item(doc, d["logprobs"], d.get("null_logprobs"), d.get("n_imputed", 0), d.get("n_imputed_null", 0))


def _answer_pair(lps: Sequence[float], item_id: str, what: str) -> tuple[tuple[float, ...], float, float]:
    values = tuple(float(x) for x in lps)
    if len(values) != len(CONTINUATIONS):
        raise ValueError(
            f"item {item_id}: {len(values)} {what} log-probabilities, expected {len(CONTINUATIONS)} ({CONTINUATIONS})"
        )
    n_yes = len(YES_CONTINUATIONS)
    yes, no = answer_logprob(values[:n_yes]), answer_logprob(values[n_yes : n_yes + len(NO_CONTINUATIONS)])
    if not (math.isfinite(yes) and math.isfinite(no)):
        raise ValueError(f"item {item_id}: {what} log-probabilities {values} leave an answer without probability")
    return values, yes, no


def score_item(
    doc: Mapping[str, Any],
    logprobs: Sequence[float],
    null_logprobs: Sequence[float] | None = None,
    n_imputed: float = 0,
    n_imputed_null: float = 0,
) -> ItemRecord:
    """Record of one item from the log-probabilities of CONTINUATIONS after its prompt.

    `doc` needs id, dataset, gold (and domain for EWoK); `null_logprobs` are the same
    continuations scored after the model's prefix token alone (None: Generic not available).
    A single continuation may be -inf (e.g. absent from a top-k list), not both of an answer.
    """
    if doc["gold"] not in ("Yes", "No"):
        raise ValueError(f"item {doc['id']}: gold answer {doc['gold']!r} is not Yes or No")
    values, yes, no = _answer_pair(logprobs, doc["id"], "prompt")
    null_values = null_yes = null_no = None
    if null_logprobs is not None:
        null_values, null_yes, null_no = _answer_pair(null_logprobs, doc["id"], "no-context")
    return ItemRecord(
        id=doc["id"],
        dataset=doc["dataset"],
        domain=doc.get("domain"),
        gold=doc["gold"],
        logprobs=values,
        null_logprobs=null_values,
        yes=yes,
        no=no,
        null_yes=null_yes,
        null_no=null_no,
        n_imputed=n_imputed,
        n_imputed_null=n_imputed_null,
    )


def null_answer_logprobs(records: Sequence[ItemRecord]) -> tuple[float, float] | None:
    """The model's no-context (yes₀, no₀), checked to agree across records; None if any lacks them."""
    pairs = [(r.null_yes, r.null_no) for r in records]
    if not pairs or any(y is None for y, _ in pairs):
        return None
    y0, n0 = pairs[0]
    for r, (y, n) in zip(records, pairs):
        if abs(y - y0) > NULL_TOLERANCE or abs(n - n0) > NULL_TOLERANCE:
            raise ValueError(
                f"item {r.id}: no-context log-probabilities ({y}, {n}) differ from ({y0}, {n0}) of item "
                f"{records[0].id}; were the records produced by different models?"
            )
    return y0, n0


def file_position(record: ItemRecord) -> tuple[str, str, int]:
    """(dataset, EWoK domain, row): the item's place in the authors' files (ids end with the row)."""
    row = re.search(r"(\d+)$", record.id)
    if row is None:
        raise ValueError(f"item id {record.id!r} does not end with its row number")
    return record.dataset, record.domain or "", int(row.group(1))


def specific_folds(records: Sequence[ItemRecord], k: int = K_FOLDS, seed: int = SEED) -> list[int]:
    """The authors' fold of each record (`metrics.yesno.authors_folds`), made per question set and,
    for EWoK, per domain, each over its items in file order; negative: in no fold."""
    folds = [0] * len(records)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in sorted(enumerate(records), key=lambda ir: file_position(ir[1])):
        groups.setdefault((r.dataset, r.domain or ""), []).append(i)
    for (dataset, _), members in groups.items():
        for i, f in zip(members, authors_folds([records[i].gold_yes for i in members], dataset, k, seed)):
            folds[i] = int(f)
    return folds


def summarize(records: Sequence[ItemRecord], k: int = K_FOLDS, seed: int = SEED) -> YesNoSummary:
    """Task-level numbers from per-item records (any order). The Specific correction calibrates
    each question set and each EWoK domain on its own, in the authors' folds (`specific_folds`)."""
    dup = sorted(i for i, count in Counter(r.id for r in records).items() if count > 1)
    if dup:
        raise ValueError(f"duplicate item ids in the records: {dup[:5]}")
    ordered = sorted(records, key=file_position)
    return summarize_yesno(
        [r.yes for r in ordered],
        [r.no for r in ordered],
        [r.gold_yes for r in ordered],
        null=null_answer_logprobs(ordered),
        folds=specific_folds(ordered, k, seed),
        groups=["/".join(filter(None, (r.dataset, r.domain))) for r in ordered],  # comps, ewok/agent_properties
        k=k,
    )


def caveats(summary: YesNoSummary) -> list[tuple[str, str]]:
    """(kind, detail) for each thing that qualifies a task's numbers: tied answers, items without a
    Specific answer, why Specific is undefined, gold classes smaller than k (the `summarize` table's
    notes, the report's warnings, `yesno-compare` and `compare --pairs` notes)."""
    s = summary
    notes = []
    if s.n_ties:
        notes.append(
            (
                TIES,
                f"{s.n_ties} of {s.n} answers are exact ties (yes == no, e.g. both read as the top-k floor), each "
                "scored as a coin flip (0 in the bias, ½ correct): bias and accuracy say nothing of these items",
            )
        )
    if s.n_no_specific and not math.isnan(s.bias_specific):
        notes.append(
            (
                NO_SPECIFIC,
                f"{s.n_no_specific} of {s.n} items have no Specific answer (in no fold, as EWoK's last items that "
                "fill no block of 4, or no other fold of their group to calibrate on): accuracy_specific counts them "
                "as wrong (the authors' convention), bias_specific leaves them out",
            )
        )
    if s.specific_undefined:
        notes.append((SPECIFIC_UNDEFINED, s.specific_undefined))
    notes += [(SMALL_CLASS, note) for note in s.small_classes]
    return notes
