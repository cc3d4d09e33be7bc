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
- Instruction tuning (Table 1; `instruction_tuning_effect`): one unit per (model pair, task) or
  per (model pair, EWoK domain); per unit the change in bias magnitude |b_instruct| − |b_base|
  (negative = the instruct model is less biased); Cohen's d is the paired d_z = mean of those
  differences / their SD (ddof=1), negative for a reduction; p from a paired t-test of
  |b_instruct| against |b_base|. This is the authors' definition (their
  `plotting-tables-scripts/instructvbase_stats.py`, results in `outputs/Mar-18-2025/
  bias_analysis_summary.csv`). (An earlier version of biasmonkey divided by the pooled SD of the
  two groups instead, which gives +1.643 where the authors report −1.053 for zero-shot COMPS.)

Multiple-choice answer position (the authors' MMLU study, `logprobs_mcq.py`): `logprobs` is an
(items × 4) array of the letters' answer log-probabilities (each the log-sum-exp of "A" and " A",
…), `gold` the correct letters. Recall of a letter = share of the items whose gold answer is
that letter that the model answers with it; position bias = RStd, the population SD (ddof=0) of
the four recalls. The Specific correction subtracts, per letter, the mean log-probability of that
letter over a calibration set of items balanced across gold letters (`balanced_mcq_folds`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

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


# ---------------------------------------------------------------------------- instruction tuning


@dataclass(frozen=True)
class InstructionTuningEffect:
    """Base vs instruction-tuned models over paired units (the paper's Table 1).

    A unit is one (model pair, task), or one (model pair, EWoK domain) as in the authors' own
    analysis; every number is over the units' absolute biases.
    """

    n: int  # units (pairs × tasks or pairs × domains)
    mean_abs_base: float
    mean_abs_instruct: float
    mean_difference: float  # mean of |b_instruct| − |b_base|; negative = instruct less biased
    sd_difference: float  # SD (ddof=1) of the per-unit differences; NaN below 2 units
    cohens_d: float  # paired d_z = mean_difference / sd_difference; NaN below 2 units or SD 0
    t: float  # paired t-test of |b_instruct| vs |b_base| (scipy.stats.ttest_rel)
    p_value: float  # two-sided; NaN below 2 units or when all differences are equal
    df: int
    percent_reduction: float  # 100 · (mean_abs_base − mean_abs_instruct) / mean_abs_base

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def instruction_tuning_effect(base_bias: ArrayLike, instruct_bias: ArrayLike) -> InstructionTuningEffect:
    """Change in bias magnitude from base to instruction-tuned models, with paired Cohen's d_z.

    `base_bias[i]` and `instruct_bias[i]` are the signed biases of one unit: a model pair on one
    task (or one EWoK domain). Magnitudes are compared, since biases of either sign are biases.
    The sign convention follows the authors' code: negative mean difference and negative d mean
    the instruction-tuned models are less biased (the CogSci paper's Table 1 prints reductions
    as positive d). Works as well for any other non-negative bias score (e.g. MMLU RStd).
    """
    b, i = (np.abs(a) for a in _arrays(base_bias, instruct_bias))
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(i))):
        raise ValueError("bias values must be finite; drop (and report) units without a bias first")
    n = int(b.size)
    diff = i - b
    nan = math.nan
    sd = d = t = p = nan
    if n >= 2:
        sd = float(diff.std(ddof=1))
        if np.ptp(diff) > 0:  # equal differences: the test and d_z are undefined, not infinite
            d = float(diff.mean() / sd)
            res = stats.ttest_rel(i, b)
            t, p = float(res.statistic), float(res.pvalue)
    base_mean = _mean_or_nan(b)
    return InstructionTuningEffect(
        n=n,
        mean_abs_base=base_mean,
        mean_abs_instruct=_mean_or_nan(i),
        mean_difference=_mean_or_nan(diff),
        sd_difference=sd,
        cohens_d=d,
        t=t,
        p_value=p,
        df=max(n - 1, 0),
        percent_reduction=100.0 * (base_mean - _mean_or_nan(i)) / base_mean if n and base_mean > 0 else nan,
    )


# ---------------------------------------------------------------------------- MMLU answer position

MCQ_LETTERS = ("A", "B", "C", "D")
MCQ_SEED = 42  # the authors' seed for drawing the balanced calibration items


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


def letter_recalls(answers: ArrayLike, gold: Sequence[str], letters: Sequence[str] = MCQ_LETTERS) -> np.ndarray:
    """Per letter: mean answer share of that letter over the items whose gold answer it is
    (NaN for a letter no item has; the authors count it as 0)."""
    a = np.asarray(answers, dtype=float)
    g = _letter_indices(gold, letters)
    if a.shape != (g.size, len(letters)):
        raise ValueError(f"answers of shape {a.shape} for {g.size} items and {len(letters)} letters")
    return np.array([a[g == j, j].mean() if np.any(g == j) else math.nan for j in range(len(letters))])


def recall_std(recalls: ArrayLike) -> float:
    """RStd: population SD (ddof=0, as numpy's default in the authors' code) of the letter recalls."""
    r = np.asarray(recalls, dtype=float)
    return float(r.std()) if r.size else math.nan


@dataclass(frozen=True)
class McqFolds:
    """Balanced folds of the MMLU Specific correction (`balanced_mcq_folds`)."""

    fold: np.ndarray  # per item: 0..k−2 balanced folds, k−1 the "extra" fold
    order: np.ndarray  # item indices in the authors' output order: drawn items per letter, then the rest ascending
    per_letter: int  # items of each letter in the balanced part (a multiple of k − 1)
    k: int


def balanced_mcq_folds(
    gold: Sequence[str], k: int = K_FOLDS, seed: int = MCQ_SEED, letters: Sequence[str] = MCQ_LETTERS
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
    recalls_specific: tuple[float, ...]
    rstd_specific: float
    delta_pct_rstd_specific: float
    delta_pct_accuracy_specific: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def summarize_mcq(
    logprobs: ArrayLike,
    gold: Sequence[str],
    k: int = K_FOLDS,
    seed: int = MCQ_SEED,
    letters: Sequence[str] = MCQ_LETTERS,
) -> McqSummary:
    """Base and Specific accuracy, letter recalls and RStd of one domain (items in file order:
    the fold draw depends on it)."""
    x = _logprob_matrix(logprobs, len(letters))
    g = _letter_indices(gold, letters)
    if g.size != x.shape[0]:
        raise ValueError(f"{g.size} gold letters for {x.shape[0]} items")

    def scored(lp: np.ndarray) -> tuple[float, np.ndarray]:
        a = mcq_answers(lp)
        return float(a[np.arange(g.size), g].mean()), letter_recalls(a, gold, letters)

    acc, rec = scored(x)
    spec = mcq_specific_correction(x, balanced_mcq_folds(gold, k, seed, letters))
    acc_s, rec_s = scored(spec)
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
    )
