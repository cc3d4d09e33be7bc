"""The model-pairs form of a comparison (Bhatt & Ivanova's Table 1), for any family, and the check
that two runs cover the same items.

Each run gives, per row (a task), its units' biases ({row: {unit: bias}}, from its family's
`compare.unit_biases`); per row, one unit per (model pair, unit), the change of |bias| from A to B,
paired d_z and t-test (`metrics.paired.magnitude_change`). `biasmonkey yesno-compare` and
`biasmonkey compare --pairs` both compute their rows here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biasmonkey.metrics.paired import magnitude_change

UnitBiases = Mapping[str, Mapping[str, float]]  # {row: {unit: bias}} of one run


def few(ids: Iterable[str], n: int = 3) -> str:
    """A few ids, sorted: "a, b, c, …"."""
    ids = sorted(ids)
    return ", ".join(ids[:n]) + (", …" if len(ids) > n else "")


def coverage_problems(task: str, sides: Sequence[tuple[Any, set[str]]]) -> list[str]:
    """Where two runs ((label, item ids) each) differ on a task: how many of the other's items each
    lacks, and which (a few ids)."""
    problems = []
    for (label, own), (other, theirs) in (sides[::-1], sides):
        if missing := theirs - own:
            problems.append(
                f"{task}: {label} lacks {len(missing)} of the {len(theirs)} items of {other} ({few(missing)})"
            )
    return problems


def check_distinct_pairs(pairs: Sequence[tuple[str, str]], option: str) -> None:
    """Each pair of two different runs, and no two pairs of the same two runs (in either order): the
    pairs are the units of the paired statistics, so a pair given twice would count as two
    independent units (d and p inflated), and a run paired with itself adds a unit of no change."""
    seen: dict[frozenset[str], tuple[str, str]] = {}
    for a, b in pairs:
        if a == b:
            raise ValueError(f"{option} {a}:{b}: a run paired with itself; pair two different runs")
        key = frozenset((a, b))
        if key in seen:
            order = "" if seen[key] == (a, b) else f" (once as {b}:{a})"
            raise ValueError(
                f"{option}: the pair {a}:{b} is given twice{order}; give each pair once, "
                "as each counts as one independent unit"
            )
        seen[key] = (a, b)


def common_rows(biases: Iterable[UnitBiases]) -> list[str]:
    """The rows every run has."""
    return sorted(set.intersection(*(set(b) for b in biases)))


def pair_note(n: int, undefined: int, p: float) -> str:
    """Why a row's d and p are n/a (fewer than 2 units, or every unit the same change), and how many
    units were left out without a bias ("" where there is nothing to say)."""
    notes = []
    if n < 2:
        notes.append(f"d and p n/a: {n} unit{'s' * (n != 1)} with a bias in both runs (a t-test needs 2)")
    elif math.isnan(p):
        notes.append("d and p n/a: no spread (every unit's change is the same)")
    if undefined:
        notes.append(f"{undefined} unit{'s' * (undefined != 1)} left out: a run's bias is n/a on its items")
    return "; ".join(notes)


def pair_effects(pairs: Sequence[tuple[UnitBiases, UnitBiases]], unit: str) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per row found in every run, and the rows left out because some run lacks them. A row's
    units: every (pair, unit) where both runs' biases are finite; the others are counted (`undefined_units`).
    A row's `note` says why its d and p are n/a (fewer than 2 units) and what was left out ("" if nothing)."""
    flat = [b for pair in pairs for b in pair]
    common = common_rows(flat)
    rows = []
    for task in common:
        base = [a[task][u] for a, _ in pairs for u in sorted(a[task])]
        other = [b[task][u] for _, b in pairs for u in sorted(b[task])]
        defined = [(x, y) for x, y in zip(base, other) if math.isfinite(x) and math.isfinite(y)]
        dropped = len(base) - len(defined)
        row: dict[str, Any] = {"task": task, "unit": unit, "n_pairs": len(pairs)}
        effect = magnitude_change(*zip(*defined)).as_dict() if defined else {"n": 0}
        note = pair_note(effect["n"], dropped, effect.get("p_value", math.nan))
        rows.append({**row, **effect, "undefined_units": dropped, "note": note})
    return rows, sorted(set().union(*flat) - set(common))
