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
- Specific correction: k folds, made as the authors' code makes them (`authors_folds`); each item
  in a fold is predicted once, from its log-probabilities minus their means over the items of the
  other folds: yes − mean(yes) against no − mean(no), i.e. the margin yes − no against its mean.
  An item in no fold (EWoK's last items that fill no block of 4) gets no corrected answer: like
  the authors' `extract_stats.py`, Specific accuracy counts it as wrong (its denominator is all
  N items) and Specific bias leaves it out (its denominator is the items with an answer); the
  summary counts these items (`n_no_specific`). The correction is undefined (NaN, the reason in
  `specific_undefined`) where a calibration group's items in folds have one gold answer only: the
  mean margin it subtracts is then the answer itself, and "removing the bias" would turn every
  answer into a tie. A gold class with fewer than k items (some folds hold none of it) is noted
  (`small_classes`).
- Δ% (the paper's Table 2) is a relative change in percent, not a difference in points:
  100 · (corrected − base) / base; −100 % bias = bias removed, below −100 % = over-corrected.
  NaN when the base value is 0.
- Instruction tuning (Table 1; `instruction_tuning_effect`): one unit per (model pair, task) or
  per (model pair, EWoK domain); per unit the change in bias magnitude |b_instruct| − |b_base|
  (the paper's "Mean Diff.": negative = the instruct model is less biased); Cohen's d is the
  paired d_z = mean(|b_base| − |b_instruct|) / SD of the differences (ddof=1), **positive for a
  reduction**, as the paper's Table 1 prints it; p from a paired t-test of |b_instruct| against
  |b_base|. Units, differences and d_z are the authors' (their
  `plotting-tables-scripts/instructvbase_stats.py`, results in `outputs/Mar-18-2025/
  bias_analysis_summary.csv`), except the sign of d: their script divides the negative mean
  difference (−1.053 for zero-shot COMPS), their paper prints reductions as positive d.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from biasmonkey.metrics.statistics import no_spread

K_FOLDS = 5
# random_state of the authors' StratifiedKFold (COMPS, Arith, bAbI; `balanced_folds_maker.py`).
SEED = 42
EWOK_BLOCK = 4  # the authors' EWoK folds are made of consecutive blocks of 4 rows
AUTHORS_DATASETS = ("comps", "arith", "babi", "ewok")

ArrayLike = Sequence[float] | np.ndarray
LN2 = math.log(2.0)


def _arrays(*values: ArrayLike) -> list[np.ndarray]:
    arrays = [np.asarray(v, dtype=float) for v in values]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise ValueError(f"expected 1-d arrays of one length, got shapes {[a.shape for a in arrays]}")
    return arrays


def _logaddexp(x: float, y: float) -> float:
    """numpy's `logaddexp` of two floats, step for step (its result to the bit), without an array."""
    if x == y:  # also two infinities of one sign
        return x + LN2
    d = x - y
    return x + math.log1p(math.exp(-d)) if d > 0 else y + math.log1p(math.exp(d))


def answer_logprob(logprobs: ArrayLike) -> float:
    """Log-sum-exp of the log-probabilities of one answer's continuations (e.g. " Yes", "Yes"),
    as `np.logaddexp.reduce` folds them (called for every item and answer, a few values each: in
    plain floats, a fifth of the time)."""
    values = [float(v) for v in logprobs]
    if not values or any(math.isnan(v) or v == math.inf for v in values):
        raise ValueError(f"invalid log-probabilities {values}")
    total = values[0]
    for value in values[1:]:
        total = _logaddexp(total, value)
    return total


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


def stratified_kfold(labels: Sequence[object] | np.ndarray, k: int = K_FOLDS, seed: int = SEED) -> np.ndarray:
    """Test fold per item of scikit-learn's `StratifiedKFold(k, shuffle=True, random_state=seed)`.

    Reproduced with numpy, number for number (`tests/yesno/test_yesno_metrics.py` compares it with
    scikit-learn where that is installed): classes are numbered by first appearance; fold f
    takes, of each class, as many items as the class has among positions f, f + k, f + 2k, … of
    the labels sorted by class number; each class's fold labels, in fold order, are shuffled in
    place by one `RandomState(seed)`, class by class, and given to its items in file order.
    Unlike scikit-learn, which refuses k above the items of every class (and above N) and warns
    when the least populated class has fewer than k items, it makes folds for any labels (some
    folds then lack a class, or are empty); `summarize_yesno` reports such classes
    (`small_classes`) and leaves the correction undefined for one class only.
    """
    if k < 2:
        raise ValueError(f"need at least 2 folds, got k={k}")
    values = np.asarray(labels)
    _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    code = np.argsort(np.argsort(first))[inverse.reshape(-1)]  # class number by first appearance
    n_classes = first.size
    ranked = np.sort(code)
    per_fold = np.array([np.bincount(ranked[f::k], minlength=n_classes) for f in range(k)])
    rng = np.random.RandomState(seed)
    folds = np.empty(values.size, dtype=int)
    for c in range(n_classes):
        labels_c = np.repeat(np.arange(k), per_fold[:, c])
        rng.shuffle(labels_c)
        folds[code == c] = labels_c
    return folds


def block_folds(n: int, k: int = K_FOLDS, block: int = EWOK_BLOCK) -> np.ndarray:
    """The authors' EWoK folds: consecutive blocks of `block` items, dealt into k consecutive
    folds as `np.array_split` splits the blocks (the first blocks % k folds get one more block).
    Items after the last whole block are in no fold (−1)."""
    if k < 2:
        raise ValueError(f"need at least 2 folds, got k={k}")
    blocks = n // block
    sizes = [blocks // k + (f < blocks % k) for f in range(k)]
    folds = np.full(n, -1, dtype=int)
    folds[: blocks * block] = np.repeat(np.repeat(np.arange(k), sizes), block)
    return folds


def authors_folds(gold_yes: ArrayLike, dataset: str, k: int = K_FOLDS, seed: int = SEED) -> np.ndarray:
    """Fold index per item, in file order, as the authors' `logprobs_yesno.py` makes it.

    dataset "comps", "arith", "babi": `StratifiedKFold(k, shuffle=True, random_state=seed)` on the
    gold answers (`stratified_kfold`); "ewok" (the items of one domain file): consecutive blocks
    of 4 items in k consecutive folds (`block_folds`; `seed` is not used). A negative index marks
    an item in no fold.
    """
    gold = np.asarray(gold_yes, dtype=bool)
    if dataset == "ewok":
        return block_folds(gold.size, k)
    if dataset in AUTHORS_DATASETS:
        return stratified_kfold(gold, k, seed)
    raise ValueError(f"unknown yes-no dataset {dataset!r}; expected one of {', '.join(AUTHORS_DATASETS)}")


def specific_correction(
    yes: ArrayLike, no: ArrayLike, folds: ArrayLike, groups: Sequence[object] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Corrected (yes − mean yes, no − mean no), the means over the calibration items: those of
    the same group (e.g. EWoK domain) in the other folds, taken fold by fold in file order as the
    authors concatenate them. NaN for an item in no fold (negative index) or without calibration items."""
    y, n = _arrays(yes, no)
    folds = np.asarray(folds, dtype=int)
    labels = [0] * y.size if groups is None else list(groups)
    number = {g: i for i, g in enumerate(dict.fromkeys(labels))}
    group = np.array([number[g] for g in labels], dtype=int)
    if folds.shape != y.shape or group.shape != y.shape:
        raise ValueError(f"{folds.size} fold and {group.size} group labels for {y.size} items")
    cy, cn = np.full(y.size, math.nan), np.full(y.size, math.nan)
    for g in np.unique(group):
        fold_ids = np.unique(folds[(group == g) & (folds >= 0)])
        for f in fold_ids:
            others = [np.flatnonzero((group == g) & (folds == h)) for h in fold_ids if h != f]
            if others:
                calib, inside = np.concatenate(others), (group == g) & (folds == f)
                cy[inside] = y[inside] - y[calib].mean()
                cn[inside] = n[inside] - n[calib].mean()
    return cy, cn


def specific_checks(
    gold_yes: ArrayLike, folds: ArrayLike, groups: Sequence[object] | None = None, k: int = K_FOLDS
) -> tuple[list[str], list[str]]:
    """(why the Specific correction is undefined, warnings), from the gold answers of each
    calibration group's items in folds. One gold answer only: undefined, since the mean margin the
    correction subtracts is then the answer itself. An answer with fewer than k items: a warning,
    since some folds hold none of it (scikit-learn's StratifiedKFold warns of such a class)."""
    gold = np.asarray(gold_yes, dtype=bool)
    in_fold = np.asarray(folds, dtype=int) >= 0
    labels = np.array([""] * gold.size if groups is None else [str(g) for g in groups], dtype=object)
    undefined: list[str] = []
    warnings: list[str] = []
    for label in dict.fromkeys(labels):
        mine = (labels == label) & in_fold
        where = f"{label}: " if label else ""
        counts = {"Yes": int(np.count_nonzero(gold & mine)), "No": int(np.count_nonzero(~gold & mine))}
        present = [answer for answer, count in counts.items() if count]
        if len(present) == 1:
            undefined.append(
                f"{where}every item in folds ({counts[present[0]]}) has the gold answer {present[0]}, so the "
                "Specific correction would subtract the answer itself: undefined"
            )
        elif present:
            warnings += [
                f"{where}{count} gold-{answer} item{'s' * (count != 1)}, fewer than the k = {k} folds: "
                f"some folds hold no {answer} item"
                for answer, count in counts.items()
                if count < k
            ]
    return undefined, warnings


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
    n_ties: int  # base answers with yes == no, each scored as a coin flip
    n_no_specific: int  # items without a Specific answer (in no fold; all n where Specific is undefined)
    bias: float
    accuracy: float
    bias_generic: float  # NaN without no-context log-probabilities
    accuracy_generic: float
    bias_specific: float  # over the items with a corrected answer; NaN if there are none
    accuracy_specific: float  # correct corrected answers / n (an item without one counts as wrong)
    delta_pct_bias_generic: float
    delta_pct_accuracy_generic: float
    delta_pct_bias_specific: float
    delta_pct_accuracy_specific: float
    p_yes_gold_yes: float  # mean P(yes) over the items whose answer is Yes
    p_yes_gold_no: float
    specific_undefined: str = ""  # why the Specific numbers are NaN ("" where they are defined)
    small_classes: tuple[str, ...] = ()  # gold classes with fewer than k items in folds, per calibration group

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize_yesno(
    yes: ArrayLike,
    no: ArrayLike,
    gold_yes: ArrayLike,
    null: tuple[float, float] | None = None,
    folds: ArrayLike | None = None,
    groups: Sequence[object] | None = None,
    k: int = K_FOLDS,
) -> YesNoSummary:
    """Base, Generic and Specific bias and accuracy of one task, with Δ% and the P(yes) view.

    `null` = (yes₀, no₀), the no-context answer log-probabilities (None: no Generic numbers).
    `folds`, `groups`: the Specific correction's fold per item (negative: in no fold) and the
    groups calibrated separately (see `specific_correction`); default: one group in the authors'
    COMPS folds, `stratified_kfold(gold_yes, k)`, which depend on the item order (pass file order).
    `k`: the number of folds (`specific_checks` warns of gold classes smaller than k).
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
    folds = stratified_kfold(gold, k) if folds is None else folds
    undefined, small_classes = specific_checks(gold, folds, groups, k)
    answered = np.zeros(y.size, dtype=bool)
    if not undefined:
        cy, cn = specific_correction(y, n, folds, groups)
        answered = ~np.isnan(cy)
        if answered.any():  # items without a corrected answer: out of the bias, wrong in the accuracy
            v = votes(cy[answered], cn[answered])
            spec_bias, spec_acc = bias(v), float(correctness(v, gold[answered]).sum() / y.size)
        else:
            undefined.append("no item has items of its group in other folds to be calibrated on: Specific undefined")
    py = p_yes(y, n)
    return YesNoSummary(
        n=int(y.size),
        n_ties=int(np.count_nonzero(y == n)),
        n_no_specific=int(np.count_nonzero(~answered)),
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
        specific_undefined="; ".join(undefined),
        small_classes=tuple(small_classes),
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
    sd_difference: float  # SD (ddof=1) of the per-unit differences (0 within `statistics.no_spread`); NaN below 2 units
    # paired d_z = −mean_difference / sd_difference: POSITIVE = instruct less biased (the paper's
    # sign; the authors' script gives the opposite); NaN below 2 units or SD 0 (`statistics.no_spread`)
    cohens_d: float
    t: float  # paired t-test of |b_instruct| vs |b_base| (scipy.stats.ttest_rel): negative = less biased
    p_value: float  # two-sided; NaN below 2 units or when all differences are equal (up to rounding)
    df: int
    percent_reduction: float  # 100 · (mean_abs_base − mean_abs_instruct) / mean_abs_base

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def instruction_tuning_effect(base_bias: ArrayLike, instruct_bias: ArrayLike) -> InstructionTuningEffect:
    """Change in bias magnitude from base to instruction-tuned models, with paired Cohen's d_z.

    `base_bias[i]` and `instruct_bias[i]` are the signed biases of one unit: a model pair on one
    task (or one EWoK domain). Magnitudes are compared, since biases of either sign are biases.

    Signs as in the paper's Table 1 (Bhatt & Ivanova, 2025): `mean_difference` (and `t`) is
    |b_instruct| − |b_base|, negative when the instruction-tuned models are less biased, and
    `cohens_d` = mean(|b_base| − |b_instruct|) / SD of the differences, positive when they are
    less biased ("d ≥ 0.8: a large bias reduction"). The authors' `instructvbase_stats.py`
    divides the mean difference itself, so its d has the opposite sign (−1.053 for zero-shot
    COMPS where this gives +1.053). Works as well for any other non-negative bias score (e.g.
    MMLU RStd).
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
        if no_spread(sd, float(diff.mean())):  # (|0.1 − 0.3| and |0.5 − 0.7| differ in their last bit)
            sd = 0.0  # equal differences (up to rounding): the test and d_z are undefined, not huge
        else:
            d = float((b - i).mean() / sd)  # the paper's sign: a reduction is positive
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
