"""Answer-position bias in multiple-choice questions (Bhatt & Ivanova, 2025: the MMLU study).

Inputs are over the items of one task (an MMLU subject): `logprobs`, an (items × 4) array of the
letters' answer log-probabilities (each the log-sum-exp of "A" and " A", …, as the authors'
`logprobs_mcq.py` scores them), and `gold`, the correct letters. The model answers the letter
with the largest log-probability.

- Ties (exact float equality of the top letters) are shared: each of j tied letters gets 1/j of
  the item (the expectation of a fair draw); the authors' `np.argmax`/`idxmax` take the first.
- Recall of a letter = share of the items whose gold answer is that letter that the model
  answers with it; accuracy = share of items answered correctly (the recall-weighted sum).
- Position bias = RStd, the population SD (ddof=0, numpy's default in the authors' code) of the
  four recalls: 0 when every position is recalled equally often; not signed. NaN when a letter is
  never the gold answer (its recall does not exist; the authors count it as 0) and with fewer
  than 2 recalls (one recall has SD 0 whatever the bias).
- Specific correction (`balanced_mcq_folds`, `mcq_specific_correction`): k = 5 folds, k − 1 of
  them balanced across gold letters, drawn with `np.random.seed(42)`; each letter's
  log-probability minus its mean over the item's calibration set (the other balanced folds; for
  the "extra" fold of the items not drawn, all balanced folds). Every item is answered once.
- Δ% = 100 · (corrected − base) / base (`metrics.yesno.relative_change`).
- `McqSummary.notes`: why RStd or the Specific numbers are NaN (a letter never gold; too few
  questions per letter for balanced folds).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from biasmonkey.metrics.yesno import ArrayLike, relative_change

LETTERS = ("A", "B", "C", "D")
K_FOLDS = 5  # the authors' n_folds: 4 balanced folds and the "extra" fold
SEED = 42  # the authors' seed for drawing the balanced calibration items


def _letter_indices(gold: Sequence[str], letters: Sequence[str]) -> np.ndarray:
    index = {x: j for j, x in enumerate(letters)}
    bad = sorted({g for g in gold if g not in index})
    if bad:
        raise ValueError(f"gold answers {bad[:5]} are not among the letters {list(letters)}")
    return np.array([index[g] for g in gold], dtype=int)


def _logprob_matrix(logprobs: ArrayLike, n_letters: int | None = None) -> np.ndarray:
    x = np.asarray(logprobs, dtype=float)
    if x.ndim != 2 or (n_letters is not None and x.shape[1] != n_letters):
        raise ValueError(
            f"expected an (items × {n_letters or 'letters'}) array of letter log-probabilities, got shape {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("letter log-probabilities must be finite")
    return x


def mcq_answers(logprobs: ArrayLike) -> np.ndarray:
    """Answer share per item and letter: 1 for the most likely letter; a tie of j letters gives
    each 1/j (the expectation of a fair draw; the authors' argmax takes the first letter)."""
    x = np.asarray(logprobs, dtype=float)
    top = x == x.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


def letter_recalls(answers: ArrayLike, gold: Sequence[str], letters: Sequence[str] = LETTERS) -> np.ndarray:
    """Per letter: mean answer share of that letter over the items whose gold answer it is
    (NaN for a letter no item has; the authors count it as 0)."""
    a = np.asarray(answers, dtype=float)
    g = _letter_indices(gold, letters)
    if a.shape != (g.size, len(letters)):
        raise ValueError(f"answers of shape {a.shape} for {g.size} items and {len(letters)} letters")
    return np.array([a[g == j, j].mean() if np.any(g == j) else math.nan for j in range(len(letters))])


def recall_std(recalls: ArrayLike) -> float:
    """RStd: population SD (ddof=0, as numpy's default in the authors' code) of the letter recalls;
    NaN with fewer than 2 recalls (one recall has SD 0 whatever the bias) or a NaN recall."""
    r = np.asarray(recalls, dtype=float)
    return float(r.std()) if r.size >= 2 else math.nan


@dataclass(frozen=True)
class McqFolds:
    """Balanced folds of the MMLU Specific correction (`balanced_mcq_folds`)."""

    fold: np.ndarray  # per item: 0..k−2 balanced folds, k−1 the "extra" fold
    order: np.ndarray  # item indices in the authors' output order: drawn items per letter, then the rest ascending
    per_letter: int  # items of each letter in the balanced part (a multiple of k − 1)
    k: int


def balanced_mcq_folds(
    gold: Sequence[str], k: int = K_FOLDS, seed: int = SEED, letters: Sequence[str] = LETTERS
) -> McqFolds:
    """The authors' calibration folds for one MMLU domain, reproduced deterministically.

    m = (fewest items of any gold letter // (k−1)) · (k−1) items are drawn per letter, letters in
    order, with numpy's legacy generator seeded once (`RandomState(seed).choice(items of the
    letter in row order, m, replace=False)`, the stream of the authors' `np.random.seed(42)` then
    `np.random.choice`). Balanced fold f (f < k−1) gets the f-th block of m/(k−1) drawn items of
    every letter; every item not drawn goes to the extra fold k−1.
    """
    if k < 3:
        raise ValueError(f"need k ≥ 3 (k − 1 balanced folds, each calibrated on the others), got k={k}")
    g = _letter_indices(gold, letters)
    counts = np.bincount(g, minlength=len(letters))
    per_letter = int(counts.min() // (k - 1) * (k - 1))
    if per_letter == 0:
        raise ValueError(
            f"every letter needs at least {k - 1} items for {k - 1} balanced folds; counts {counts.tolist()}"
        )
    rng = np.random.RandomState(seed)
    fold = np.full(g.size, k - 1, dtype=int)
    drawn = []
    block = per_letter // (k - 1)
    for j in range(len(letters)):
        chosen = rng.choice(np.flatnonzero(g == j), per_letter, replace=False)
        fold[chosen] = np.arange(per_letter) // block
        drawn.append(chosen)
    order = np.concatenate([*drawn, np.flatnonzero(fold == k - 1)])
    return McqFolds(fold=fold, order=order, per_letter=per_letter, k=k)


def mcq_specific_correction(logprobs: ArrayLike, folds: McqFolds) -> np.ndarray:
    """Letter log-probabilities minus each letter's mean over the item's calibration set.

    A balanced fold is calibrated on the other balanced folds (never on the extra fold); the
    extra fold on all balanced folds. Each calibration set holds every letter equally often as
    the gold answer, so the subtracted means carry the model's letter preference, not the key's.
    """
    x = _logprob_matrix(logprobs)
    f, k = folds.fold, folds.k
    if f.shape != (x.shape[0],):
        raise ValueError(f"{f.size} fold labels for {x.shape[0]} items")
    out = np.empty_like(x)
    for j in range(k):
        inside = f == j
        calib = (f != j) & (f != k - 1) if j < k - 1 else f != k - 1
        out[inside] = x[inside] - x[calib].mean(axis=0)
    return out


@dataclass(frozen=True)
class McqSummary:
    """Accuracy and answer-position bias of one MMLU domain, before and after Specific."""

    n: int
    n_ties: int  # items whose top letter is tied
    accuracy: float
    recalls: tuple[float, ...]  # per letter (A, B, C, D)
    rstd: float
    accuracy_specific: float
    recalls_specific: tuple[float, ...]  # NaN without balanced folds
    rstd_specific: float
    delta_pct_rstd_specific: float
    delta_pct_accuracy_specific: float
    notes: dict[str, str] = field(default_factory=dict)  # "rstd", "specific": why those numbers are NaN

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def summarize_mcq(
    logprobs: ArrayLike,
    gold: Sequence[str],
    k: int = K_FOLDS,
    seed: int = SEED,
    letters: Sequence[str] = LETTERS,
) -> McqSummary:
    """Base and Specific accuracy, letter recalls and RStd of one domain (items in file order:
    the fold draw depends on it). A letter that no item has as its gold answer has a NaN recall,
    and the RStd is then NaN; the Specific numbers are NaN when some letter has fewer than k − 1
    items (no balanced folds: a run on the first few items of a subject, say)."""
    x = _logprob_matrix(logprobs, len(letters))
    g = _letter_indices(gold, letters)
    if g.size != x.shape[0]:
        raise ValueError(f"{g.size} gold letters for {x.shape[0]} items")

    def scored(lp: np.ndarray) -> tuple[float, np.ndarray]:
        a = mcq_answers(lp)
        return float(a[np.arange(g.size), g].mean()), letter_recalls(a, gold, letters)

    counts = np.bincount(g, minlength=len(letters))
    notes = _summary_notes(counts, k, letters)
    if g.size == 0:
        nan4 = (math.nan,) * len(letters)
        return McqSummary(0, 0, math.nan, nan4, math.nan, math.nan, nan4, math.nan, math.nan, math.nan, notes)
    acc, rec = scored(x)
    acc_s, rec_s = math.nan, np.full(len(letters), math.nan)
    if "specific" not in notes:
        acc_s, rec_s = scored(mcq_specific_correction(x, balanced_mcq_folds(gold, k, seed, letters)))
    rstd, rstd_s = recall_std(rec), recall_std(rec_s)
    return McqSummary(
        n=int(g.size),
        n_ties=int(np.count_nonzero((x == x.max(axis=1, keepdims=True)).sum(axis=1) > 1)),
        accuracy=acc,
        recalls=tuple(float(v) for v in rec),
        rstd=rstd,
        accuracy_specific=acc_s,
        recalls_specific=tuple(float(v) for v in rec_s),
        rstd_specific=rstd_s,
        delta_pct_rstd_specific=relative_change(rstd, rstd_s),
        delta_pct_accuracy_specific=relative_change(acc, acc_s),
        notes=notes,
    )


def _summary_notes(counts: np.ndarray, k: int, letters: Sequence[str]) -> dict[str, str]:
    """Why RStd (a letter never gold, or fewer than 2 letters) and the Specific numbers (no
    balanced folds) are NaN, from the gold count per letter; {} where both are computed."""
    notes = {}
    never = [x for x, c in zip(letters, counts) if c == 0]
    if never:
        notes["rstd"] = (
            f"rstd n/a: no question has the gold letter {', '.join(never)} (RStd needs every letter's recall)"
        )
    elif len(letters) < 2:
        notes["rstd"] = "rstd n/a: one letter (RStd needs at least 2 recalls)"
    if k < 3:
        notes["specific"] = (
            f"Specific n/a: k = {k} folds (k − 1 balanced folds, each calibrated on the others, need k ≥ 3)"
        )
    elif counts.min() < k - 1:
        shown = ", ".join(f"{x} {c}" for x, c in zip(letters, counts))
        notes["specific"] = (
            f"Specific n/a: too few questions per gold letter ({shown}) for k − 1 = {k - 1} balanced folds, "
            f"which need at least {k - 1} of each"
        )
    return notes
