"""Per-question records of the answer-position tasks: the contract between the harness adapters
and the metrics.

An adapter scores the eight letter continuations (" A", "A", " B", "B", " C", "C", " D", "D")
after the question's prompt and turns them into a `McqRecord`; each letter's log-probability is
the log-sum-exp of its two spellings. Task-level numbers come from `summarize(records)`, which
calls `biasmonkey.metrics.answer_position` on the records in file order (the Specific folds are
drawn over the file's rows).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from biasmonkey.metrics.answer_position import K_FOLDS, SEED, McqSummary, mcq_answers, summarize_mcq
from biasmonkey.metrics.yesno import answer_logprob
from biasmonkey.tasks.answer_position.prompts import CONTINUATIONS, LETTER_CONTINUATIONS, LETTERS


@dataclass(frozen=True)
class McqRecord:
    id: str  # mmlu-<subject>-<row>
    domain: str  # the MMLU subject
    gold: str  # "A" … "D"
    logprobs: tuple[float, ...]  # the CONTINUATIONS after the prompt, in order
    letters: tuple[float, ...]  # per letter A … D: log-sum-exp of its two spellings
    # From top log-probabilities (Inspect, lm-eval's biasmonkey-server): continuations missing from
    # the top-k, given the documented floor; 0 where every continuation was scored.
    n_imputed: float = 0

    def answers(self) -> tuple[float, ...]:
        """Share of the answer per letter: 1 for the most likely letter, 1/j each for a tie of j."""
        return tuple(float(a) for a in mcq_answers(np.array([self.letters]))[0])

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> McqRecord:
        """Inverse of as_dict (e.g. after a JSON round trip)."""
        return score_item(
            {"id": d["id"], "domain": d["domain"], "gold": d["gold"]}, d["logprobs"], d.get("n_imputed", 0)
        )


def score_item(doc: Mapping[str, Any], logprobs: Sequence[float], n_imputed: float = 0) -> McqRecord:
    """Record of one question from the log-probabilities of CONTINUATIONS after its prompt.

    `doc` needs id, domain and gold. One spelling of a letter may be -inf (absent from a top-k
    list), not both."""
    if doc["gold"] not in LETTERS:
        raise ValueError(f"item {doc['id']}: gold answer {doc['gold']!r} is not one of {', '.join(LETTERS)}")
    values = tuple(float(x) for x in logprobs)
    if len(values) != len(CONTINUATIONS):
        raise ValueError(
            f"item {doc['id']}: {len(values)} log-probabilities, expected {len(CONTINUATIONS)} ({CONTINUATIONS})"
        )
    width = len(LETTER_CONTINUATIONS[LETTERS[0]])
    letters = tuple(answer_logprob(values[j * width : (j + 1) * width]) for j in range(len(LETTERS)))
    if not all(math.isfinite(x) for x in letters):
        raise ValueError(f"item {doc['id']}: log-probabilities {values} leave a letter without probability")
    return McqRecord(
        id=doc["id"], domain=doc["domain"], gold=doc["gold"], logprobs=values, letters=letters, n_imputed=n_imputed
    )


def file_row(record: McqRecord) -> int:
    """The question's row in the authors' subject file (ids end with the row)."""
    row = re.search(r"(\d+)$", record.id)
    if row is None:
        raise ValueError(f"item id {record.id!r} does not end with its row number")
    return int(row.group(1))


def summarize(records: Sequence[McqRecord], k: int = K_FOLDS, seed: int = SEED) -> McqSummary:
    """Task-level numbers of one subject from its records (any order; put in file order here)."""
    dup = sorted(i for i, count in Counter(r.id for r in records).items() if count > 1)
    if dup:
        raise ValueError(f"duplicate item ids in the records: {dup[:5]}")
    subjects = sorted({r.domain for r in records})
    if len(subjects) > 1:
        raise ValueError(f"records of several subjects {subjects[:5]}: the answer-position numbers are per subject")
    ordered = sorted(records, key=file_row)
    return summarize_mcq(
        np.array([r.letters for r in ordered]).reshape(-1, len(LETTERS)), [r.gold for r in ordered], k, seed
    )
