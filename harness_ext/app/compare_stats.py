"""One row of `biasmonkey compare` per measure: two runs' values of the same items, paired.

The measures come from the families (`tasks.contract.ItemMeasure`); this module only matches the
items and calls `metrics.paired`. A difference is always B − A (A: the first run of the pair, or
the baseline). A row whose value, CI or p is undefined (NaN) says why in its `note`, which also counts
the items left out without a value in a run; a bootstrap row counts its resamples (`resamples` drawn,
`resamples_valid` with the statistic in both runs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from biasmonkey.metrics.paired import (
    RESAMPLES,
    SEED,
    BootstrapCI,
    PairedT,
    mcnemar,
    mean_statistic,
    paired_bootstrap,
    paired_t,
    wilcoxon,
)
from biasmonkey.tasks.contract import ItemMeasure

TESTS = {"t": "paired t", "bootstrap": f"paired bootstrap ({RESAMPLES} resamples, seed {SEED})"}
MCNEMAR = {"exact": "McNemar exact (binomial)", "chi2": "McNemar χ² (continuity-corrected)"}


def _present(value: Any) -> bool:
    return value is not None and bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


def kept_ids(a: ItemMeasure, b: ItemMeasure, ids: Sequence[Any]) -> list[Any]:
    """The items (in `ids` order) that have a value in both runs."""
    return [i for i in ids if _present(a.values.get(i)) and _present(b.values.get(i))]


def paired_values(a: ItemMeasure, b: ItemMeasure, ids: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' values of the items (in `ids` order) that have one in both runs."""
    kept = kept_ids(a, b, ids)
    if not kept:
        return np.empty(0), np.empty(0)
    return np.array([a.values[i] for i in kept], dtype=float), np.array([b.values[i] for i in kept], dtype=float)


def _t_undefined(t: PairedT) -> str:
    """Why the paired t-test's CI and p are NaN ("" where they are defined)."""
    if t.n < 2:
        return f"CI and p n/a: {t.n} item{'s' * (t.n != 1)}, no t-test"
    return "CI and p n/a: no spread (every difference is the same)" if math.isnan(t.p) else ""


def _bootstrap_note(boot: BootstrapCI, what: str) -> str:
    """Why the bootstrap's `what` ("CI" or "CI and p") is NaN, and the items that add no variance."""
    notes = [f"{what} n/a: {boot.undefined}"] if boot.undefined else []
    if boot.fixed and not boot.undefined:
        notes.append(f"items alone in their stratum: {boot.fixed} (the same in every resample, no variance from them)")
    return "; ".join(notes)


def _left_out_note(a: ItemMeasure, b: ItemMeasure, ids: Sequence[Any], kept: int) -> str:
    """How many of `ids` are left out for want of a value, and in which run ("" where none is)."""
    if kept == len(ids):
        return ""
    lack = [f"{run} {sum(not _present(m.values.get(i)) for i in ids)}" for run, m in (("A", a), ("B", b))]
    return f"{len(ids) - kept} of {len(ids)} items left out, no {a.name} value in both runs (without one: {', '.join(lack)})"


def _value_undefined(name: str, value_a: float, value_b: float, n: int) -> str:
    """Why a run's value of a bootstrap statistic is NaN ("" where both are defined): the statistic
    itself is undefined on the items compared (e.g. RStd without a question of some gold letter)."""
    runs = " and ".join(run for run, v in (("A", value_a), ("B", value_b)) if math.isnan(v))
    if not runs:
        return ""
    return (
        f"{runs} n/a: {name} is undefined on the {n} item{'s' * (n != 1)} compared (the run's summary says why), "
        "so the difference, CI and p are n/a"
    )


def measure_row(a: ItemMeasure, b: ItemMeasure, ids: Sequence[Any]) -> dict[str, Any]:
    """The comparison of one measure on the items `ids` (both runs have them); its note says why a
    value, CI or p is n/a and how many items were left out without a value."""
    row = _measure_row(a, b, ids)
    notes = [row.get("note", ""), _left_out_note(a, b, ids, row["n"]) if row["n"] else ""]
    return row | {"note": "; ".join(n for n in notes if n)}


def _measure_row(a: ItemMeasure, b: ItemMeasure, ids: Sequence[Any]) -> dict[str, Any]:
    x, y = paired_values(a, b, ids)
    row: dict[str, Any] = {"measure": a.name, "n": int(x.shape[0]), "left_out": len(ids) - int(x.shape[0])}
    nan = math.nan
    if not row["n"]:
        row |= dict.fromkeys(("value_a", "value_b", "difference", "ci_low", "ci_high", "p", "d_z"), nan)
        return row | {"note": f"no item with a value in both runs: {_left_out_note(a, b, ids, 0) or 'no item'}"}
    if a.test == "t":
        t = paired_t(x, y)
        row |= {"value_a": t.mean_a, "value_b": t.mean_b, "difference": t.difference, "ci_low": t.ci_low}
        row |= {"ci_high": t.ci_high, "ci": "t", "p": t.p, "test": TESTS["t"], "d_z": t.d_z, "note": _t_undefined(t)}
        if a.wilcoxon:
            row["p_wilcoxon"] = wilcoxon(x, y).p
        return row
    statistic = a.statistic or mean_statistic
    strata = None if a.strata is None else [a.strata[i] for i in kept_ids(a, b, ids)]
    boot = paired_bootstrap(x, y, statistic, strata=strata)
    row |= {"value_a": boot.value_a, "value_b": boot.value_b, "difference": boot.difference}
    row |= {"ci_low": boot.ci_low, "ci_high": boot.ci_high, "ci": "bootstrap", "d_z": nan}
    row |= {"resamples": boot.resamples, "resamples_valid": boot.valid}
    # a run's value undefined: that is why CI and p are n/a, not the resamples that follow from it
    undefined = _value_undefined(a.name, boot.value_a, boot.value_b, row["n"])
    if a.test == "bootstrap":
        return row | {"p": boot.p, "test": TESTS["bootstrap"], "note": undefined or _bootstrap_note(boot, "CI and p")}
    if a.test != "mcnemar":
        raise ValueError(f"measure {a.name}: unknown test {a.test!r} (t, mcnemar or bootstrap)")
    binary = np.isin(x, (0, 1)) & np.isin(y, (0, 1))  # a tie's half-credit has no place in McNemar's table
    test = mcnemar(x[binary], y[binary])
    notes = [
        undefined or _bootstrap_note(boot, "CI"),
        "" if test.n01 + test.n10 else "p n/a: no item that one run got right and the other wrong",
    ]
    row |= {"p": test.p, "test": MCNEMAR[test.method], "mcnemar_left_out": int((~binary).sum())}
    return row | {"note": "; ".join(n for n in notes if n)}
