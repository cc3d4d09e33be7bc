"""Answer-position bias of a model on any multiple-choice task asked in cyclic permutations, and
three corrections (PriDe, contextual calibration, Specific).

Data: item i has n_i options (2 ≤ n_i ≤ 26), its gold option's ORIGINAL index g_i, and was asked
under cyclic shifts S_i ⊆ {0..n_i−1} that contain 0 (the original order). Under shift s,
position p (letter p: A, B, …) shows original option (p + s) mod n_i (`cyclic_order`), so the
gold option shows at position (g_i − s) mod n_i. Per shift (a "row") the model gives one
log-probability per letter. The answer of a row is the argmax letter; a tie of j letters gives
each 1/j (`metrics.answer_position.mcq_answers`). Let c_r be row r's answer share at its gold
position.

Metrics (`position_metrics`; per condition in `summarize_positions`):
- accuracy = mean over items of c on the shift-0 row.
- accuracy_permuted = mean over items of (mean over the item's rows of c) (item-weighted).
- recalls[p] = Σ c_r / #rows over all rows whose gold shows at position p (pooled over items
  and shifts; NaN where no row has its gold at p); per position = per letter (letter p is
  position p). recalls_original: the same over the shift-0 rows only (with only shift 0 and
  n = 4 this is `answer_position.letter_recalls`).
- rstd, rstd_original = population SD (ddof 0, np.std, as `answer_position.recall_std` and
  PriDe's code) of the recalls of the positions the items have (p < some item's n): the per-ID
  recalls of the authors' definition. NaN where one of those positions has no recall (no row, or
  no shift-0 row for rstd_original, with its gold there: e.g. every gold option 0 and only shift
  0 asked), as answer_position's RStd is NaN when a letter is never gold; NaN with fewer than 2
  recalls (one recall has SD 0 whatever the bias). A position beyond every item's n (recalls over
  n_positions > the largest n, e.g. a correction scoring only the 3-option items of a task with
  4-option ones) is not the items' and is left out.
- recalls and both RStds are over the items of ONE option count (`recall_option_count`: the most
  common, on a tie the larger; `summarize_positions` takes raw's for every condition): a model
  without preference recalls each of n positions 1/n, so recalls pooled over 3- and 4-option items
  differ with no bias at all, and the authors define them on one count (MMLU: 4). The other items
  stay in accuracy, accuracy_permuted and changed, and the notes count them (`option_counts_note`).
- changed = share of the items with ≥ 2 shifts whose answer, mapped from positions back to
  original options, is not the same in all their rows (answer-share vectors compared exactly;
  ties compare as their shares); NaN when no item has ≥ 2 shifts.
- CIs: 95% percentile bootstrap over items (all of an item's rows go together): item indices
  `numpy.random.default_rng(seed).integers(0, N, size=(B, N))` (drawn 250 resamples at a time:
  the same stream), as `metrics.paired`; corrections are held fixed (estimated once on all data).
  A resample whose value is NaN (e.g. a drawn position with no drawn row with its gold there) is
  left out of that quantile and counted (`PositionMetrics.notes`). Fewer than 2 items: no CIs (every
  resample is the one item: a zero-width interval that says nothing); a NaN value: NaN CI.
- notes: why a number or CI of a computed condition is n/a, and the resamples a CI left out.

Corrections (each returns a `Corrected`: per-item corrected rows and the scored items):
- PriDe (Zheng et al., ICLR 2024, "Large Language Models Are Not Robust Multiple Choice
  Selectors"; facts from the authors' chujiezheng/LLM-MCQ-Bias `code/debias_utils.py::simple`
  and `code/debias_pride.py`): prior estimation P̃(d) = softmax_d(mean over the cyclic shifts
  of log P_observed(d)) on a few calibration items, averaged per option count; debiasing
  P_debiased(d) ∝ P_observed(d) / P̃(d), i.e. log P_observed − log P̃.
- Contextual calibration (Zhao et al., ICML 2021, "Calibrate Before Use"): W = diag(p̂_cf)⁻¹, b = 0.
- Specific (Bhatt & Ivanova, 2025) as `metrics.answer_position` computes it, per option count.

Δ% (`relative_change`) of a correction compares numbers over different item sets where the
correction leaves items out (PriDe always leaves its calibration items out).
"""

from __future__ import annotations

import math
import string
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from biasmonkey.metrics.answer_position import balanced_mcq_folds, mcq_answers, mcq_specific_correction
from biasmonkey.metrics.yesno import ArrayLike, relative_change

LETTERS = string.ascii_uppercase
MIN_OPTIONS, MAX_OPTIONS = 2, 26
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
PRIDE_SHARE = 0.05  # the authors' RATIO_PREFIX_SAMPLES
PRIDE_EPS = 1e-10  # added inside every log of PriDe, as the authors' code does
K_FOLDS = 5
SPECIFIC_SEED = 42
CONDITIONS = ("raw", "pride", "contextual", "specific")
SCALARS = ("accuracy", "accuracy_permuted", "rstd", "rstd_original", "changed")
_CHUNK = 250  # resamples evaluated at once (bounds the memory of the resample weights)
_KEYS = ("accuracy", "accuracy_permuted", "changed", "recalls", "recalls_original", "rstd", "rstd_original")


class NotComputable(ValueError):
    """A correction the data do not allow (e.g. a PriDe calibration item without all shifts)."""


def cyclic_order(n: int, shift: int) -> np.ndarray:
    """Original option index shown at each position p = 0..n−1 under a cyclic shift: (p + shift) mod n."""
    if n < 1:
        raise ValueError(f"need n ≥ 1 options, got {n}")
    return (np.arange(n) + shift) % n


@dataclass(frozen=True, eq=False)
class PositionItem:
    """One item: n options, gold = ORIGINAL index of the gold option, the shifts asked (0 among
    them), and logprobs[j] = the letter log-probabilities (length n) under shifts[j]."""

    id: str
    n: int
    gold: int
    shifts: tuple[int, ...]
    logprobs: np.ndarray  # (len(shifts), n), unnormalised letter log-probabilities; stored read-only

    def __post_init__(self) -> None:
        where = f"item {self.id!r}"
        if not MIN_OPTIONS <= self.n <= MAX_OPTIONS:
            raise ValueError(f"{where}: n = {self.n} options; need {MIN_OPTIONS} ≤ n ≤ {MAX_OPTIONS}")
        if not 0 <= self.gold < self.n:
            raise ValueError(f"{where}: gold index {self.gold} out of range 0..{self.n - 1}")
        shifts = tuple(int(s) for s in self.shifts)
        if 0 not in shifts:
            raise ValueError(f"{where}: shift 0 (the original order) missing from shifts {shifts}")
        if len(set(shifts)) != len(shifts):
            raise ValueError(f"{where}: duplicate shift in {shifts}")
        if any(not 0 <= s < self.n for s in shifts):
            raise ValueError(f"{where}: shifts {shifts} out of range 0..{self.n - 1}")
        x = np.array(self.logprobs, dtype=float)
        if x.shape != (len(shifts), self.n):
            raise ValueError(f"{where}: logprobs of shape {x.shape}, expected ({len(shifts)}, {self.n}) (shifts × n)")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{where}: non-finite log-probabilities")
        x.setflags(write=False)
        object.__setattr__(self, "shifts", shifts)
        object.__setattr__(self, "logprobs", x)


# ---------------------------------------------------------------------------- metrics


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """log softmax over the last axis (letters): x − logsumexp(x)."""
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _softmax(x: np.ndarray) -> np.ndarray:
    return np.exp(_log_softmax(x))


def recall_option_count(items: Sequence[PositionItem]) -> int:
    """The option count whose items the recalls and RStd are over: the most items' (on a tie the
    larger); 0 without items. A model without preference recalls each of n positions 1/n, so
    recalls pooled over option counts differ with no bias at all; the authors' RStd is over items
    of one option count (MMLU: 4)."""
    counts = Counter(it.n for it in items)
    return max(counts, key=lambda n: (counts[n], n), default=0)


def _items_with(count: int, n: int) -> str:
    return f"{count} item{'s' * (count != 1)} with {n} options"


def option_counts_note(items: Sequence[PositionItem], recall_n: int) -> str | None:
    """Which items the recalls and RStd leave out (those without `recall_n` options), by option
    count; None where every item has `recall_n` options."""
    counts = Counter(it.n for it in items)
    others = ", ".join(_items_with(c, n) for n, c in sorted(counts.items()) if n != recall_n)
    if not others:
        return None
    why = "recalls of different option counts are not comparable: without preference each of n positions gets 1/n"
    if recall_n not in counts:
        return f"recalls and RStd n/a: no item with {recall_n} options, the task's most common option count ({others}; {why})"
    return (
        f"recalls and RStd over the {_items_with(counts[recall_n], recall_n)} only (the most common option count, "
        f"on a tie the larger); left out of them: {others} ({why})"
    )


def item_features(
    items: Sequence[PositionItem], logprobs: Sequence[np.ndarray], m: int, recall_n: int | None = None
) -> np.ndarray:
    """Per item (≥ 1 item; rows of the result), the sums every metric is a ratio of, so that a resample's
    metrics come from weighted sums: [c at shift 0, mean c, has ≥ 2 shifts, changed (and ≥ 2),
    Σc per gold position (m), rows per gold position (m), the same two over shift 0 (2m),
    has position p (p < n; m)]. The per-position sums are 0 for an item without `recall_n` options
    (default `recall_option_count(items)`): the recalls and RStd are over one option count."""
    n_items = len(items)
    counts = np.array([len(it.shifts) for it in items], dtype=int)
    x = np.full((int(counts.sum()), m), -np.inf)  # letters beyond an item's n never win
    start = 0
    for it, lp in zip(items, logprobs):
        x[start : start + lp.shape[0], : it.n] = lp
        start += lp.shape[0]
    item = np.repeat(np.arange(n_items), counts)
    n = np.repeat([it.n for it in items], counts)
    shift = np.concatenate([it.shifts for it in items])
    gold_pos = (np.repeat([it.gold for it in items], counts) - shift) % n
    shares = mcq_answers(x)
    rows = np.arange(x.shape[0])
    c = shares[rows, gold_pos]
    is0 = (shift == 0).astype(float)
    # answer shares per ORIGINAL option: position p shows option (p + s) mod n (padding stays
    # put); p + s − n where p + s ≥ n (p, s < n), faster than % on this many rows
    p = np.arange(m, dtype=np.int32)[None, :]
    n_col, s_col = n.astype(np.int32)[:, None], shift.astype(np.int32)[:, None]
    orig = p + s_col * (p < n_col)
    orig -= n_col * (orig >= n_col)
    by_orig = np.zeros_like(shares)
    by_orig[rows[:, None], orig] = shares
    first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)  # each item's first row
    differs = np.any(by_orig != by_orig[first[item]], axis=1)
    multi = counts >= 2
    changed = (np.bincount(item, weights=differs, minlength=n_items) > 0) & multi
    flat = item * m + gold_pos

    def per_position(weights: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=n_items * m).reshape(n_items, m)

    recall_n = recall_option_count(items) if recall_n is None else recall_n
    kept = np.array([it.n == recall_n for it in items], dtype=float)[:, None]
    return np.column_stack(
        [
            np.bincount(item, weights=c * is0, minlength=n_items),
            np.bincount(item, weights=c, minlength=n_items) / np.maximum(counts, 1),
            multi,
            changed,
            kept * per_position(c),
            kept * per_position(np.ones_like(c)),
            kept * per_position(c * is0),
            kept * per_position(is0),
            kept * (np.arange(m)[None, :] < np.array([it.n for it in items])[:, None]),
        ]
    ).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), math.nan)


def _rstd(recalls: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Population SD of the recalls over the last axis; NaN where a present position (present > 0:
    some item has it) has no recall, or where fewer than 2 recalls are finite."""
    finite = np.isfinite(recalls)
    defined = np.all(finite | (present <= 0), axis=-1) & (finite.sum(axis=-1) >= 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN (no positions): NaN
        sd = np.nanstd(recalls, axis=-1)
    return np.where(defined, sd, math.nan)


def metrics_from_sums(sums: np.ndarray, n_items: int, m: int) -> dict[str, np.ndarray]:
    """Metrics from summed item features, vectorised over the leading axes (resamples)."""
    num, den, num0, den0, present = (sums[..., 4 + j * m : 4 + (j + 1) * m] for j in range(5))
    recalls, recalls0 = _ratio(num, den), _ratio(num0, den0)
    n = n_items if n_items else math.nan
    return {
        "accuracy": sums[..., 0] / n,
        "accuracy_permuted": sums[..., 1] / n,
        "changed": _ratio(sums[..., 3], sums[..., 2]),
        "recalls": recalls,
        "recalls_original": recalls0,
        "rstd": _rstd(recalls, present),
        "rstd_original": _rstd(recalls0, present),
    }


def _resampled_sums(features: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Σ of the features over each resample's items, shape (resamples, features): item indices
    default_rng(seed).integers(0, N, size=(resamples, N)), turned into multiplicities."""
    n_items = features.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, features.shape[1]))
    for lo in range(0, resamples, _CHUNK):
        b = min(_CHUNK, resamples - lo)
        idx = rng.integers(0, n_items, size=(b, n_items))
        weights = np.bincount((idx + n_items * np.arange(b)[:, None]).ravel(), minlength=b * n_items)
        out[lo : lo + b] = weights.reshape(b, n_items).astype(float) @ features
    return out


def _checked_logprobs(items: Sequence[PositionItem], logprobs: Sequence[ArrayLike] | None) -> list[np.ndarray]:
    if logprobs is None:
        return [it.logprobs for it in items]
    if len(logprobs) != len(items):
        raise ValueError(f"{len(logprobs)} log-prob arrays for {len(items)} items")
    out = [np.asarray(lp, dtype=float) for lp in logprobs]
    for it, lp in zip(items, out):
        if lp.shape != it.logprobs.shape:
            raise ValueError(f"item {it.id!r}: replacement log-probs of shape {lp.shape}, expected {it.logprobs.shape}")
    if out and not np.all(np.isfinite(np.concatenate([lp.ravel() for lp in out]))):
        bad = next(it.id for it, lp in zip(items, out) if not np.all(np.isfinite(lp)))
        raise ValueError(f"item {bad!r}: non-finite replacement log-probs")
    return out


def _positions(items: Sequence[PositionItem], n_positions: int | None) -> int:
    m = max((it.n for it in items), default=0)
    if n_positions is None:
        return m
    if n_positions < m:
        raise ValueError(f"n_positions = {n_positions} is below the largest option count {m}")
    return n_positions


def position_bootstrap(
    items: Sequence[PositionItem],
    logprobs: Sequence[ArrayLike] | None = None,
    n_positions: int | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    recall_n: int | None = None,
) -> dict[str, np.ndarray]:
    """The metrics of each bootstrap resample of the items: scalars of shape (resamples,),
    recalls of shape (resamples, n_positions), all NaN with fewer than 2 items. `logprobs`
    replaces the items' rows (a correction); recalls over the items with `recall_n` options."""
    m = _positions(items, n_positions)
    features = item_features(items, _checked_logprobs(items, logprobs), m, recall_n) if items else None
    return _bootstrap(features, m, resamples, seed)


def _bootstrap(features: np.ndarray | None, m: int, resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Each resample's metrics; all NaN with fewer than 2 items (every resample would be the one item)."""
    if resamples < 1:
        raise ValueError(f"need resamples ≥ 1, got {resamples}")
    if features is None or features.shape[0] < 2:
        return {k: np.full((resamples, m) if k.startswith("recalls") else resamples, math.nan) for k in _KEYS}
    return metrics_from_sums(_resampled_sums(features, resamples, seed), features.shape[0], m)


def _percentile_ci(values: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Percentile interval over axis 0, NaN resamples left out: shape (2, …)."""
    tail = (1 - level) / 2
    if values.size == 0:  # no positions (no items)
        return np.full((2, *values.shape[1:]), math.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all resamples NaN: NaN
        return np.nanquantile(values, [tail, 1 - tail], axis=0)


@dataclass(frozen=True)
class PositionMetrics:
    """Position-bias metrics of one condition (raw or a correction) with 95% bootstrap CIs."""

    n_items: int  # scored items
    n_rows: int  # their (item, shift) rows
    accuracy: float
    accuracy_permuted: float
    recalls: tuple[float, ...]  # per position = per letter (A, B, …)
    recalls_original: tuple[float, ...]
    rstd: float
    rstd_original: float
    changed: float
    ci: dict[str, tuple[float, float]]  # per scalar metric (SCALARS): (low, high)
    recalls_ci: tuple[tuple[float, float], ...]
    recalls_original_ci: tuple[tuple[float, float], ...]
    resamples: int
    seed: int
    left_out: dict[str, int] = field(default_factory=dict)  # items the condition could not score, by reason
    reason: str | None = None  # why the condition has no numbers (None: computed)
    # why a number or CI of a computed condition is n/a, or what a CI left out: by scalar ("rstd"),
    # by scalar's CI ("rstd_ci": resamples left out), "ci" (every CI: fewer than 2 items)
    notes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly: floats, ints, lists, dicts, None; NaN stays NaN."""
        return {
            "n_items": self.n_items,
            "n_rows": self.n_rows,
            **{k: getattr(self, k) for k in SCALARS},
            "recalls": list(self.recalls),
            "recalls_original": list(self.recalls_original),
            "ci": {k: list(v) for k, v in self.ci.items()},
            "recalls_ci": [list(v) for v in self.recalls_ci],
            "recalls_original_ci": [list(v) for v in self.recalls_original_ci],
            "resamples": self.resamples,
            "seed": self.seed,
            "left_out": dict(self.left_out),
            "reason": self.reason,
            "notes": dict(self.notes),
        }


def _floats(v: np.ndarray) -> tuple[float, ...]:
    return tuple(float(x) for x in v)


# Why a resample has no value of a measure (its CI leaves it out).
_NO_RESAMPLE_VALUE = {
    "rstd": "a drawn position without a drawn row with its correct option there",
    "rstd_original": "a drawn position without a drawn item with its correct option there in the original order",
    "changed": "no drawn item asked in 2 or more orders",
}


def _positions_named(mask: np.ndarray) -> str:
    letters = [LETTERS[p] for p in np.flatnonzero(mask)]
    return f"position{'s' * (len(letters) > 1)} {', '.join(letters)}"


def _notes(
    point: Mapping[str, np.ndarray], boot: Mapping[str, np.ndarray], present: np.ndarray, n_items: int
) -> dict[str, str]:
    """Why a number of the items' metrics is n/a (RStd, changed), why their CIs are (fewer than 2
    items), and how many resamples a CI left out. `present`: the positions the items have."""
    notes = {}
    for key, recalls, where, order in (
        ("rstd", "recalls", "no row has", ""),
        ("rstd_original", "recalls_original", "no item has", " in the original order"),
    ):
        if math.isnan(point[key]):
            missing = present & ~np.isfinite(point[recalls])
            notes[key] = (
                f"{key} n/a: {where} its correct option at {_positions_named(missing)}{order} "
                "(RStd needs a recall for every position the items have)"
                if missing.any()
                else f"{key} n/a: fewer than 2 positions have a recall"
            )
    if math.isnan(point["changed"]):
        notes["changed"] = "changed n/a: no item asked in 2 or more orders"
    if n_items < 2:
        notes["ci"] = f"no CIs: {n_items} item (a bootstrap over items needs at least 2)"
        return notes
    for key, why in _NO_RESAMPLE_VALUE.items():
        valid, total = int(np.isfinite(boot[key]).sum()), boot[key].size
        if key not in notes and valid < total:
            notes[f"{key}_ci"] = f"{key} CI over {valid:,} of {total:,} resamples (the others: {why})"
    return notes


def position_metrics(
    items: Sequence[PositionItem],
    logprobs: Sequence[ArrayLike] | None = None,
    n_positions: int | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    left_out: Mapping[str, int] | None = None,
    recall_n: int | None = None,
) -> PositionMetrics:
    """Metrics of the items (rows replaced by `logprobs` where given) and their bootstrap CIs;
    recalls over positions 0..n_positions−1 (default: the largest n) and over the items with
    `recall_n` options (default: `recall_option_count`), the others counted in the notes."""
    items = list(items)
    lps = _checked_logprobs(items, logprobs)
    m = _positions(items, n_positions)
    recall_n = recall_option_count(items) if recall_n is None else recall_n
    features = item_features(items, lps, m, recall_n) if items else None
    boot = _bootstrap(features, m, resamples, seed)
    if features is None:
        point = {k: v[0] for k, v in boot.items()}  # all NaN
    else:
        point = metrics_from_sums(features.sum(axis=0), len(items), m)
    ci = {k: _percentile_ci(boot[k]) for k in _KEYS}
    for k in SCALARS:  # no interval around an undefined value (a resample may still have one)
        if math.isnan(point[k]):
            ci[k] = np.full(2, math.nan)
    return PositionMetrics(
        n_items=len(items),
        n_rows=sum(len(it.shifts) for it in items),
        **{k: float(point[k]) for k in SCALARS},
        recalls=_floats(point["recalls"]),
        recalls_original=_floats(point["recalls_original"]),
        ci={k: (float(ci[k][0]), float(ci[k][1])) for k in SCALARS},
        recalls_ci=tuple(zip(_floats(ci["recalls"][0]), _floats(ci["recalls"][1]))),
        recalls_original_ci=tuple(zip(_floats(ci["recalls_original"][0]), _floats(ci["recalls_original"][1]))),
        resamples=resamples,
        seed=seed,
        left_out=dict(left_out or {}),
        notes={} if features is None else _all_notes(items, recall_n, point, boot, features[:, 4 + 4 * m :]),
    )


def _all_notes(
    items: Sequence[PositionItem],
    recall_n: int,
    point: Mapping[str, np.ndarray],
    boot: Mapping[str, np.ndarray],
    present: np.ndarray,
) -> dict[str, str]:
    """`_notes`, after the note on the items the recalls leave out (other option counts); where no
    item has `recall_n` options, that note says why the RStds are n/a."""
    notes = _notes(point, boot, present.sum(axis=0) > 0, len(items))
    counts = option_counts_note(items, recall_n)
    if counts is None:
        return notes
    if not present.any():
        notes = {k: v for k, v in notes.items() if not k.startswith("rstd")}
    return {"recalls": counts, **notes}


def _absent(reason: str, m: int, resamples: int, seed: int) -> PositionMetrics:
    nan, nans, nan_ci = math.nan, (math.nan,) * m, ((math.nan, math.nan),) * m
    return PositionMetrics(
        n_items=0,
        n_rows=0,
        **dict.fromkeys(SCALARS, nan),
        recalls=nans,
        recalls_original=nans,
        ci={k: (nan, nan) for k in SCALARS},
        recalls_ci=nan_ci,
        recalls_original_ci=nan_ci,
        resamples=resamples,
        seed=seed,
        reason=reason,
    )


# ---------------------------------------------------------------------------- corrections


@dataclass(frozen=True, eq=False)
class Corrected:
    """Corrected rows of every item (same shapes as the items' logprobs; NaN for an item not
    scored) and which items the correction scores."""

    method: str
    logprobs: tuple[np.ndarray, ...]
    scored: np.ndarray  # bool per item
    left_out: dict[str, int]  # items not scored, by reason
    priors: dict[int, np.ndarray] = field(default_factory=dict)  # PriDe: option count → prior over positions
    calibration_ids: tuple[str, ...] = ()  # PriDe: the calibration items, in drawn order
    why: str = ""  # what the items left out lack (Specific: gold items per letter and option count)

    def scored_items(self, items: Sequence[PositionItem]) -> tuple[list[PositionItem], list[np.ndarray]]:
        """The scored items and their corrected rows (for `position_metrics`)."""
        keep = np.flatnonzero(self.scored)
        return [items[i] for i in keep], [self.logprobs[i] for i in keep]


def _by_option_count(items: Sequence[PositionItem], idx: Sequence[int] | None = None) -> dict[int, list[int]]:
    """Item indices (of `idx`, default all) per option count n, in item order."""
    groups: dict[int, list[int]] = {}
    for i in range(len(items)) if idx is None else idx:
        groups.setdefault(items[i].n, []).append(i)
    return groups


def _rowwise(
    items: Sequence[PositionItem], idx: Sequence[int], fn: Callable[[np.ndarray], np.ndarray], rows: list[np.ndarray]
) -> None:
    """rows[i] = fn(item i's rows) for the items idx (all of one n), in one call on their stacked rows."""
    if not idx:
        return
    out = fn(np.concatenate([items[i].logprobs for i in idx]))
    splits = np.cumsum([len(items[i].shifts) for i in idx])[:-1]
    for i, part in zip(idx, np.split(out, splits)):
        rows[i] = part


def _unscored_rows(items: Sequence[PositionItem]) -> list[np.ndarray]:
    return [np.full(it.logprobs.shape, math.nan) for it in items]


def pride_prior(logprobs: ArrayLike) -> np.ndarray:
    """PriDe's prior over positions from one item asked in all n cyclic shifts (rows × n letters):
    softmax over positions of mean over rows of log(observed + 1e-10), observed = each row's
    softmax (the authors renormalise the rows by sum + 1e-10 and their softmax divides by
    sum + 1e-10: relative differences ≤ 1e-10)."""
    observed = _softmax(np.asarray(logprobs, dtype=float))
    return _softmax(np.log(observed + PRIDE_EPS).mean(axis=0))


def pride_correction(items: Sequence[PositionItem], share: float = PRIDE_SHARE, seed: int = SEED) -> Corrected:
    """PriDe (Zheng et al., ICLR 2024): estimate the prior on calibration items, debias the rest.

    count = max(1, floor(share · N)) calibration items, drawn among the items asked in all their n
    cyclic shifts (all N items but one cut short by a --limit, say): default_rng(seed).choice(those
    items' indices, count, replace=False), which is default_rng(seed).choice(N, count,
    replace=False) when every item has all its shifts; `NotComputable` when none has. Prior of
    option count n = mean (probability space) of its calibration items' `pride_prior`. Every row
    of every other item: log(observed + 1e-10) − log(prior_n + 1e-10), observed its softmax.
    Scored: the non-calibration items whose n has a prior (else counted in "unpriored"). As the
    paper's text, calibration items are not scored; the authors' `debias_pride.py` also counts
    them, predicted by their permutation-averaged probabilities, and debiases only the original
    order (shift 0) of the other items; here every shift row is debiased.
    """
    if not 0 < share < 1:
        raise ValueError(f"PriDe share must be in (0, 1), got {share}")
    n_items = len(items)
    if n_items == 0:
        raise NotComputable("PriDe needs at least one item")
    complete = np.array([i for i, it in enumerate(items) if len(it.shifts) == it.n], dtype=int)
    if complete.size == 0:
        raise NotComputable("PriDe needs items asked in all their cyclic orders (permutations=0); none is")
    count = min(max(1, int(share * n_items)), complete.size)
    drawn = np.random.default_rng(seed).choice(complete, count, replace=False)
    by_n: dict[int, list[np.ndarray]] = {}
    for i in drawn:
        by_n.setdefault(items[i].n, []).append(pride_prior(items[i].logprobs))
    priors = {n: np.mean(v, axis=0) for n, v in sorted(by_n.items())}
    calibration = set(drawn.tolist())
    rows, scored, unpriored = _unscored_rows(items), np.zeros(n_items, dtype=bool), 0
    rest = [i for i in range(n_items) if i not in calibration]
    for n, idx in _by_option_count(items, rest).items():
        if n not in priors:
            unpriored += len(idx)
            continue
        log_prior = np.log(priors[n] + PRIDE_EPS)
        _rowwise(items, idx, lambda x, lp=log_prior: np.log(_softmax(x) + PRIDE_EPS) - lp, rows)
        scored[idx] = True
    return Corrected(
        method="pride",
        logprobs=tuple(rows),
        scored=scored,
        left_out={"calibration": len(calibration), "unpriored": unpriored},
        priors=priors,
        calibration_ids=tuple(items[i].id for i in drawn),
    )


def contextual_correction(items: Sequence[PositionItem], content_free: Mapping[int, ArrayLike]) -> Corrected:
    """Contextual calibration (Zhao et al., ICML 2021): W = diag(p̂_cf)⁻¹, b = 0.

    `content_free[n]`: the letter log-probs (length n) of the prompt with "N/A" as the question
    and every option; p̂_cf = its softmax. Every row of an item with that n becomes
    log softmax(row) − log p̂_cf (its argmax is that of W·p̂). Items whose n has no vector are
    left out and counted ("no_content_free").
    """
    log_cf = {}
    for n, v in content_free.items():
        x = np.asarray(v, dtype=float)
        if x.shape != (n,) or not np.all(np.isfinite(x)):
            raise ValueError(f"content-free vector for n = {n} must be {n} finite log-probs, got shape {x.shape}")
        log_cf[n] = _log_softmax(x)
    rows, scored, missing = _unscored_rows(items), np.zeros(len(items), dtype=bool), 0
    for n, idx in _by_option_count(items).items():
        if n not in log_cf:
            missing += len(idx)
            continue
        _rowwise(items, idx, lambda x, cf=log_cf[n]: _log_softmax(x) - cf, rows)
        scored[idx] = True
    return Corrected("contextual", tuple(rows), scored, {"no_content_free": missing})


def specific_correction(items: Sequence[PositionItem], k: int = K_FOLDS, seed: int = SPECIFIC_SEED) -> Corrected:
    """Specific (Bhatt & Ivanova), per option count n in item order: `balanced_mcq_folds` of the
    gold letters (letters = the first n; the fold draw re-seeded per n) and
    `mcq_specific_correction` of the shift-0 rows; the item's offset (corrected − original
    shift-0 row: minus its calibration set's letter means) is added to every shift row. A group
    with some letter under k − 1 gold items has no balanced folds: its items are left out and
    counted ("unbalanced")."""
    if k < 3:
        raise ValueError(f"need k ≥ 3 (k − 1 balanced folds, each calibrated on the others), got k={k}")
    rows, scored, unbalanced = _unscored_rows(items), np.zeros(len(items), dtype=bool), 0
    short = []  # per unbalanced option count: its gold items per letter
    for n, idx in _by_option_count(items).items():
        gold = [items[i].gold for i in idx]
        counts = np.bincount(gold, minlength=n)
        if counts.min() < k - 1:
            unbalanced += len(idx)
            short.append(f"{n} options: " + ", ".join(f"{LETTERS[p]} {c}" for p, c in enumerate(counts)))
            continue
        x0 = np.array([items[i].logprobs[items[i].shifts.index(0)] for i in idx])
        folds = balanced_mcq_folds([LETTERS[g] for g in gold], k, seed, LETTERS[:n])
        offset = mcq_specific_correction(x0, folds) - x0
        for j, i in enumerate(idx):
            rows[i] = items[i].logprobs + offset[j]
        scored[idx] = True
    why = (
        f"too few items per correct letter ({'; '.join(short)}) for k − 1 = {k - 1} balanced folds, which need "
        f"at least {k - 1} of each"
        if short
        else ""
    )
    return Corrected("specific", tuple(rows), scored, {"unbalanced": unbalanced}, why=why)


# ---------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class PositionSummary:
    """Raw and corrected position-bias metrics of one task; a condition that cannot be computed
    has NaN numbers and its `reason`."""

    conditions: dict[str, PositionMetrics]  # "raw", "pride", "contextual", "specific"
    pride_priors: dict[int, tuple[float, ...]]
    pride_calibration_ids: tuple[str, ...]

    @property
    def delta_pct(self) -> dict[str, dict[str, float]]:
        """Per correction: Δ% = 100 · (corrected − raw) / raw of accuracy, rstd and rstd_original."""
        raw = self.conditions["raw"]
        keys = ("accuracy", "accuracy_permuted", "rstd", "rstd_original")
        return {
            name: {k: relative_change(getattr(raw, k), getattr(c, k)) for k in keys}
            for name, c in self.conditions.items()
            if name != "raw"
        }

    def as_dict(self) -> dict[str, object]:
        return {
            "conditions": {name: c.as_dict() for name, c in self.conditions.items()},
            "pride_priors": {str(n): list(p) for n, p in self.pride_priors.items()},
            "pride_calibration_ids": list(self.pride_calibration_ids),
            "delta_pct": self.delta_pct,
        }


def summarize_positions(
    items: Sequence[PositionItem],
    content_free: Mapping[int, ArrayLike] | None = None,
    pride_share: float = PRIDE_SHARE,
    pride_seed: int = SEED,
    k: int = K_FOLDS,
    specific_seed: int = SPECIFIC_SEED,
    resamples: int = RESAMPLES,
    bootstrap_seed: int = SEED,
) -> PositionSummary:
    """Raw, PriDe, contextual and Specific metrics of the items (in file order: PriDe's draw and
    the Specific folds depend on it); each correction's metrics over its scored items only, with
    recalls over positions 0..(largest n)−1 and CIs from `bootstrap_seed`."""
    items = list(items)
    repeated = sorted(i for i, c in Counter(it.id for it in items).items() if c > 1)
    if repeated:
        raise ValueError(f"duplicate item ids, e.g. {repeated[:3]}")
    if not 0 < pride_share < 1 or k < 3:
        raise ValueError(f"need 0 < pride_share < 1 and k ≥ 3, got {pride_share} and {k}")
    m, recall_n = _positions(items, None), recall_option_count(items)
    conditions = {"raw": position_metrics(items, None, m, resamples, bootstrap_seed, recall_n=recall_n)}
    if not items:
        conditions["raw"] = replace(conditions["raw"], reason="no items")
    makers: dict[str, Callable[[], Corrected]] = {
        "pride": lambda: pride_correction(items, pride_share, pride_seed),
        "contextual": lambda: contextual_correction(items, content_free or {}),
        "specific": lambda: specific_correction(items, k, specific_seed),
    }
    priors: dict[int, tuple[float, ...]] = {}
    calibration: tuple[str, ...] = ()
    for name, make in makers.items():
        if name == "contextual" and content_free is None:
            conditions[name] = _absent("no content-free vectors given", m, resamples, bootstrap_seed)
            continue
        try:
            corrected = make()
        except NotComputable as e:
            conditions[name] = _absent(str(e), m, resamples, bootstrap_seed)
            continue
        if name == "pride":
            priors = {n: _floats(p) for n, p in corrected.priors.items()}
            calibration = corrected.calibration_ids
        sub, lps = corrected.scored_items(items)
        metrics = position_metrics(sub, lps, m, resamples, bootstrap_seed, corrected.left_out, recall_n)
        if not sub:
            counts = "; ".join(f"{why}: {n}" for why, n in corrected.left_out.items() if n)
            why = f": {corrected.why}" if corrected.why else ""
            metrics = replace(metrics, reason=f"no item scored{why} (left out: {counts})")
        elif corrected.why:
            metrics = replace(metrics, notes={"left_out": corrected.why, **metrics.notes})
        conditions[name] = metrics
    return PositionSummary(conditions, priors, calibration)
