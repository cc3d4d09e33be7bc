"""The wrapped multiple-choice family's `biasmonkey compare` hooks on a hand-worked case: per-item
values (accuracy, accuracy over orders, changed answers) and RStd through the bootstrap statistic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasmonkey.tasks.mc_position.compare import item_ids, item_measures, unit_biases
from biasmonkey.tasks.mc_position.scoring import score_document


def record(item: str, gold: int, shift: int, a: float, b: float, kind: str = "item"):
    doc = {"id": item, "kind": kind, "n": 2, "gold": gold, "shift": shift}
    return score_document(doc, [a, b])


# Two options; under shift 1 position A shows option 1 and B option 0.
#   i0 gold 0: shift 0 answers A (option 0, right), shift 1 answers A (option 1, wrong): changed
#   i1 gold 1: shift 0 answers B (option 1, right), shift 1 answers A (option 1, right): unchanged
#   i2 gold 0: shift 0 answers B (option 1, wrong), shift 1 answers A (option 1, wrong): unchanged
RECORDS = [
    record("content_free_2", -1, 0, math.log(0.8), math.log(0.2), kind="content_free"),
    record("t-0", 0, 0, 0.0, -1.0),
    record("t-0", 0, 1, 0.0, -1.0),
    record("t-1", 1, 0, -1.0, 0.0),
    record("t-1", 1, 1, 0.0, -1.0),
    record("t-2", 0, 0, -1.0, 0.0),
    record("t-2", 0, 1, 0.0, -1.0),
]


def test_item_values_and_rstd_by_hand() -> None:
    assert item_ids(RECORDS) == ["t-0", "t-1", "t-2"]
    measures = {m.name: m for m in item_measures("biasmonkey_position_t", RECORDS)}
    assert measures["accuracy"].values == {"t-0": 1.0, "t-1": 1.0, "t-2": 0.0}
    assert measures["accuracy"].test == "mcnemar"
    assert measures["accuracy_permuted"].values == {"t-0": 0.5, "t-1": 1.0, "t-2": 0.0}
    assert measures["changed"].values == {"t-0": 1.0, "t-1": 0.0, "t-2": 0.0}
    # recall of A over the rows with the gold option at A (i0 s0, i1 s1, i2 s0): 2/3; of B (i0 s1,
    # i1 s0, i2 s1): 1/3; RStd = the population SD of (2/3, 1/3) = 1/6
    rstd = measures["rstd"]
    assert rstd.headline and rstd.test == "bootstrap"
    values = np.stack([rstd.values[i] for i in ("t-0", "t-1", "t-2")])[None]  # one "resample": every item
    assert rstd.statistic(values) == pytest.approx([1 / 6])
    assert unit_biases({"biasmonkey_position_t": RECORDS}) == {
        "biasmonkey_position_t": {"biasmonkey_position_t": pytest.approx(1 / 6)}
    }


def test_corrections_the_records_allow() -> None:
    names = {m.name for m in item_measures("biasmonkey_position_t", RECORDS)}
    # the content-free prompt gives contextual calibration; PriDe draws 1 calibration item of 3 and
    # scores the other 2; Specific needs k − 1 = 4 items per gold letter: none here
    assert {"rstd_contextual", "accuracy_contextual", "rstd_pride", "accuracy_pride"} <= names
    assert not any(name.endswith("_specific") for name in names)
    pride = {m.name: m for m in item_measures("biasmonkey_position_t", RECORDS)}["accuracy_pride"]
    assert len(pride.values) == 2
    without = [r for r in RECORDS if r.kind == "item"]
    assert not any(m.name.endswith("_contextual") for m in item_measures("biasmonkey_position_t", without))
