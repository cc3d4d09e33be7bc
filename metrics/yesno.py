"""Yes-no bias and its log-probability corrections (Bhatt & Ivanova, CogSci 2025).

Inputs are arrays over the items of one task: `yes` and `no`, the answer log-probabilities
(each the log-sum-exp of its two continuations, e.g. " Yes" and "Yes"), and `gold_yes`, whether
the correct answer is Yes. The model answers Yes when yes > no.

Ties (yes == no, exact float equality) are scored as the expectation of a fair coin flip: the
item adds 0 to the bias numerator and 0.5 to the correct count, and is counted in `n_ties`.
Other conventions (e.g. "a tie is No") would bias the measurement they are meant to break.

- bias = (#yes − #no) / N ∈ [−1, 1]; accuracy = #correct / N.
- Generic correction: subtract the no-context (BOS only) answer log-probabilities:
  yes − yes₀ against no − no₀.
- Specific correction: k stratified folds (seeded); each item is predicted once, from
  c = mean over the items of the other folds of (yes − no)/2, as yes − c against no + c.
- Δ% (the paper's Table 2) is a relative change in percent, not a difference in points:
  100 · (corrected − base) / base; −100 % bias = bias removed, below −100 % = over-corrected.
  NaN when the base value is 0.
- Model pairs (Table 1): per pair the change in bias magnitude |b_instruct| − |b_base|
  (negative = the instruct model is less biased); Cohen's d = (mean |b_base| − mean |b_instruct|)
  / pooled SD of the two groups, positive for a reduction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas

K_FOLDS = 5
SEED = 0

ArrayLike = Sequence[float] | np.ndarray


def _arrays(*values: ArrayLike) -> list[np.ndarray]:
    arrays = [np.asarray(v, dtype=float) for v in values]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise ValueError(f"expected 1-d arrays of one length, got shapes {[a.shape for a in arrays]}")
    return arrays


def answer_logprob(logprobs: ArrayLike) -> float:
    """Log-sum-exp of the log-probabilities of one answer's continuations (e.g. " Yes", "Yes")."""
    x = np.asarray(logprobs, dtype=float)
    if x.size == 0 or np.any(np.isnan(x)) or np.any(x == np.inf):
        raise ValueError(f"invalid log-probabilities {list(x)}")
    return float(np.logaddexp.reduce(x))


def votes(yes: ArrayLike, no: ArrayLike) -> np.ndarray:
    """+1 for an answer Yes, −1 for No, 0 for a tie."""
    y, n = _arrays(yes, no)
    return np.sign(y - n)


def bias(v: ArrayLike) -> float:
    """(#yes − #no) / N from votes; NaN for no items."""
    v = np.asarray(v, dtype=float)
    return float(v.mean()) if v.size else math.nan


def correctness(v: ArrayLike, gold_yes: ArrayLike) -> np.ndarray:
    """1 for a correct answer, 0 for a wrong one, 0.5 for a tie."""
    v = np.asarray(v, dtype=float)
    gold = np.where(np.asarray(gold_yes, dtype=bool), 1.0, -1.0)
    return np.where(v == 0, 0.5, (v == gold).astype(float))


def accuracy(v: ArrayLike, gold_yes: ArrayLike) -> float:
    c = correctness(v, gold_yes)
    return float(c.mean()) if c.size else math.nan


def generic_correction(yes: ArrayLike, no: ArrayLike, null_yes: float, null_no: float) -> tuple[np.ndarray, np.ndarray]:
    """Answer log-probabilities minus the model's no-context ones."""
    y, n = _arrays(yes, no)
    return y - null_yes, n - null_no


def stratified_folds(gold_yes: ArrayLike, k: int = K_FOLDS, seed: int = SEED) -> np.ndarray:
    """Fold index (0..k−1) per item: each class shuffled with `seed`, then dealt out in turn.

    Folds differ in size by at most one, and so does each class's count per fold.
    """
    if k < 2:
        raise ValueError(f"need at least 2 folds, got k={k}")
    gold = np.asarray(gold_yes, dtype=bool)
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(gold == cls)) for cls in (True, False)])
    folds = np.empty(gold.size, dtype=int)
    folds[order] = np.arange(gold.size) % k
    return folds


def specific_offsets(yes: ArrayLike, no: ArrayLike, folds: ArrayLike) -> np.ndarray:
    """Per item c = mean of (yes − no)/2 over the items outside its fold (NaN if there are none)."""
    y, n = _arrays(yes, no)
    folds = np.asarray(folds)
    half_margin = (y - n) / 2
    c = np.full(y.size, math.nan)
    for f in np.unique(folds):
        inside = folds == f
        if (~inside).any():
            c[inside] = half_margin[~inside].mean()
    return c


def specific_correction(
    yes: ArrayLike, no: ArrayLike, gold_yes: ArrayLike, k: int = K_FOLDS, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray]:
    """Corrected (yes − c, no + c), each item calibrated on the other folds."""
    y, n = _arrays(yes, no)
    c = specific_offsets(y, n, stratified_folds(gold_yes, k, seed))
    return y - c, n + c


def relative_change(base: float, corrected: float) -> float:
    """Δ% = 100 · (corrected − base) / base; NaN when base is 0 or either value is NaN."""
    if base == 0 or math.isnan(base) or math.isnan(corrected):
        return math.nan
    return 100.0 * (corrected - base) / base


def p_yes(yes: ArrayLike, no: ArrayLike) -> np.ndarray:
    """P(yes) normalised over the two answers: exp(yes) / (exp(yes) + exp(no))."""
    y, n = _arrays(yes, no)
    return 1.0 / (1.0 + np.exp(n - y))


def _mean_or_nan(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


@dataclass(frozen=True)
class YesNoSummary:
    """Everything one task reports, computed from its items' answer log-probabilities."""

    n: int
    n_ties: int  # base answers with yes == no
    bias: float
    accuracy: float
    bias_generic: float  # NaN without no-context log-probabilities
    accuracy_generic: float
    bias_specific: float  # NaN with fewer than two items
    accuracy_specific: float
    delta_pct_bias_generic: float
    delta_pct_accuracy_generic: float
    delta_pct_bias_specific: float
    delta_pct_accuracy_specific: float
    p_yes_gold_yes: float  # mean P(yes) over the items whose answer is Yes
    p_yes_gold_no: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def summarize_yesno(
    yes: ArrayLike,
    no: ArrayLike,
    gold_yes: ArrayLike,
    null: tuple[float, float] | None = None,
    k: int = K_FOLDS,
    seed: int = SEED,
) -> YesNoSummary:
    """Base, Generic and Specific bias and accuracy of one task, with Δ% and the P(yes) view.

    `null` = (yes₀, no₀), the no-context answer log-probabilities (None: no Generic numbers).
    Item order matters only through the fold draw: pass items in a fixed order (e.g. by id).
    """
    y, n = _arrays(yes, no)
    gold = np.asarray(gold_yes, dtype=bool)
    if gold.shape != y.shape:
        raise ValueError(f"{gold.size} gold labels for {y.size} items")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(n))):
        raise ValueError("answer log-probabilities must be finite")

    def scored(yy: np.ndarray, nn: np.ndarray) -> tuple[float, float]:
        v = votes(yy, nn)
        return bias(v), accuracy(v, gold)

    base_bias, base_acc = scored(y, n)
    gen_bias = gen_acc = spec_bias = spec_acc = math.nan
    if null is not None:
        gen_bias, gen_acc = scored(*generic_correction(y, n, *null))
    if y.size >= 2:
        spec_bias, spec_acc = scored(*specific_correction(y, n, gold, k, seed))
    py = p_yes(y, n)
    return YesNoSummary(
        n=int(y.size),
        n_ties=int(np.count_nonzero(y == n)),
        bias=base_bias,
        accuracy=base_acc,
        bias_generic=gen_bias,
        accuracy_generic=gen_acc,
        bias_specific=spec_bias,
        accuracy_specific=spec_acc,
        delta_pct_bias_generic=relative_change(base_bias, gen_bias),
        delta_pct_accuracy_generic=relative_change(base_acc, gen_acc),
        delta_pct_bias_specific=relative_change(base_bias, spec_bias),
        delta_pct_accuracy_specific=relative_change(base_acc, spec_acc),
        p_yes_gold_yes=_mean_or_nan(py[gold]),
        p_yes_gold_no=_mean_or_nan(py[~gold]),
    )


@dataclass(frozen=True)
class PairComparison:
    """Base vs instruct models on one task (the paper's Table 1), over model pairs."""

    n_pairs: int
    mean_abs_bias_base: float
    mean_abs_bias_instruct: float
    mean_diff: float  # mean of |b_instruct| − |b_base|; negative = instruct less biased
    cohen_d: float  # (mean |b_base| − mean |b_instruct|) / pooled SD; NaN below 2 pairs
    paired: DeltaSummary  # one-sample t-test of the per-pair differences against 0

    def as_dict(self) -> dict[str, object]:
        return {**{k: v for k, v in asdict(self).items() if k != "paired"}, "paired": self.paired.as_dict()}


def compare_pairs(base_bias: ArrayLike, instruct_bias: ArrayLike) -> PairComparison:
    """Mean change in bias magnitude from base to instruct models, and Cohen's d."""
    b, i = (np.abs(a) for a in _arrays(base_bias, instruct_bias))
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(i))):
        raise ValueError("bias values must be finite")
    n = int(b.size)
    d = math.nan
    if n >= 2:
        pooled = math.sqrt((b.var(ddof=1) + i.var(ddof=1)) / 2)
        if pooled > 0:
            d = float((b.mean() - i.mean()) / pooled)
    return PairComparison(
        n_pairs=n,
        mean_abs_bias_base=_mean_or_nan(b),
        mean_abs_bias_instruct=_mean_or_nan(i),
        mean_diff=_mean_or_nan(i - b),
        cohen_d=d,
        paired=summarize_deltas(i - b),
    )
