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
  N items) and Specific bias leaves it out (its denominator is the items with an answer).
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
# random_state of the authors' StratifiedKFold (COMPS, Arith, bAbI; `balanced_folds_maker.py`).
SEED = 42
EWOK_BLOCK = 4  # the authors' EWoK folds are made of consecutive blocks of 4 rows
AUTHORS_DATASETS = ("comps", "arith", "babi", "ewok")

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


def stratified_kfold(labels: Sequence[object] | np.ndarray, k: int = K_FOLDS, seed: int = SEED) -> np.ndarray:
    """Test fold per item of scikit-learn's `StratifiedKFold(k, shuffle=True, random_state=seed)`.

    Reproduced with numpy, number for number (`tests/test_yesno_metrics.py` compares it with
    scikit-learn where that is installed): classes are numbered by first appearance; fold f
    takes, of each class, as many items as the class has among positions f, f + k, f + 2k, … of
    the labels sorted by class number; each class's fold labels, in fold order, are shuffled in
    place by one `RandomState(seed)`, class by class, and given to its items in file order.
    Unlike scikit-learn, it does not refuse classes smaller than k (some folds are then empty).
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
    bias_specific: float  # over the items with a corrected answer; NaN if there are none
    accuracy_specific: float  # correct corrected answers / n
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
    folds: ArrayLike | None = None,
    groups: Sequence[object] | None = None,
) -> YesNoSummary:
    """Base, Generic and Specific bias and accuracy of one task, with Δ% and the P(yes) view.

    `null` = (yes₀, no₀), the no-context answer log-probabilities (None: no Generic numbers).
    `folds`, `groups`: the Specific correction's fold per item (negative: in no fold) and the
    groups calibrated separately (see `specific_correction`); default: one group in the authors'
    COMPS folds, `stratified_kfold(gold_yes)`, which depend on the item order (pass file order).
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
    cy, cn = specific_correction(y, n, stratified_kfold(gold) if folds is None else folds, groups)
    answered = ~np.isnan(cy)
    if answered.any():  # items without a corrected answer: out of the bias, wrong in the accuracy
        v = votes(cy[answered], cn[answered])
        spec_bias, spec_acc = bias(v), float(correctness(v, gold[answered]).sum() / y.size)
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
    # paired d_z = −mean_difference / sd_difference: POSITIVE = instruct less biased (the paper's
    # sign; the authors' script gives the opposite); NaN below 2 units or SD 0
    cohens_d: float
    t: float  # paired t-test of |b_instruct| vs |b_base| (scipy.stats.ttest_rel): negative = less biased
    p_value: float  # two-sided; NaN below 2 units or when all differences are equal
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
        if np.ptp(diff) > 0:  # equal differences: the test and d_z are undefined, not infinite
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
