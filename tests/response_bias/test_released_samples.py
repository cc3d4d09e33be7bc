"""Rescoring the authors' released samples (biasmonkey.tasks.response_bias.released_samples).

Reference tests need the upstream data: set BIASMONKEY_DATA_DIR (relative paths resolve
against the current directory, e.g. CI's ``../shared/datasets``) or fill the data cache (the
reference deltas need the shared folder); see the prerequisites in conftest.py.
The error and hand-computed tests build small sample folders in tmp_path and always run.
"""

from __future__ import annotations

import csv
import math
import os
from functools import cache
from pathlib import Path

import pytest

from biasmonkey.tasks.response_bias.released_samples import (
    GROUPS,
    expected_files,
    score_sample_dir,
)

DATA_ENV = "BIASMONKEY_DATA_DIR"
MODELS = ("llama2-7b", "gpt-3.5-turbo", "llama2-70b-chat")


def _samples_root() -> Path | None:
    value = os.environ.get(DATA_ENV)
    return Path(value).resolve() / "biasmonkey" / "samples" if value else None


def _reference_params() -> list:
    root = _samples_root()
    if root is None:  # reference_deltas.csv is in the shared folder only, not in the pinned cache
        return [pytest.param(None, marks=pytest.mark.requires("shared_data"), id="no-data")]
    path = root / "reference_deltas.csv"
    if not path.is_file():  # fail in the test (not at collection) so the other tests still run
        return [pytest.param({"missing": str(path)}, id="reference-missing")]
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return [pytest.param(r, id=f"{r['model']}-{r['bias']}-{r['setting']}") for r in rows]


@cache
def _scores(model: str) -> dict[tuple[str, str], dict]:
    root = _samples_root()
    assert root is not None
    return {(r["bias"], r["setting"]): r for r in score_sample_dir(root / model)}


@pytest.fixture
def scores(data_dir: Path):
    root = _samples_root()  # the samples are pinned files: the shared folder's, or the cache's
    if root is None or not root.is_dir():
        pytest.fail(f"{DATA_ENV} is set but {root} does not exist")
    return _scores


# --- the authors' released samples ------------------------------------------------------


@pytest.mark.parametrize("ref", _reference_params())
def test_reproduces_reference_row(ref, scores):
    if "missing" in ref:
        pytest.fail(f"reference file not found: {ref['missing']}")
    got = scores(ref["model"])[(ref["bias"], ref["setting"])]
    assert got["n"] == int(ref["n"])
    assert got["delta"] == pytest.approx(float(ref["delta"]), abs=5e-4)
    assert got["p_value"] == pytest.approx(float(ref["p_value"]), rel=1e-3, abs=1e-6)


def test_published_tacl_values(scores):
    llama = scores("llama2-7b")
    assert llama[("acquiescence", "bias")]["delta"] == pytest.approx(1.921, abs=1e-3)
    assert llama[("acquiescence", "bias")]["p_value"] == pytest.approx(0.021, abs=5e-4)
    assert llama[("allow_forbid", "bias")]["delta"] == pytest.approx(-60.350, abs=5e-4)
    assert llama[("allow_forbid", "bias")]["n"] == 40
    assert llama[("response_order", "bias")]["delta"] == pytest.approx(24.915, abs=5e-4)
    assert scores("gpt-3.5-turbo")[("odd_even", "bias")]["delta"] == pytest.approx(25.048, abs=5e-4)


def test_row_order_and_opinion_float_perturbations(scores):
    rows = list(scores("llama2-7b").values())
    order = [(b, s) for b in GROUPS for s in ("bias", "key_typo", "middle_random", "letter_swap")]
    assert [(r["bias"], r["setting"]) for r in rows] == order
    assert all(set(r) == {"bias", "setting", "n", "delta", "p_value"} for r in rows)
    table = scores("llama2-7b")
    for setting in ("key_typo", "middle_random", "letter_swap"):  # upstream quirk, reproduced
        expected = {**table[("odd_even", setting)], "bias": "opinion_float"}
        assert table[("opinion_float", setting)] == expected


@pytest.mark.requires("shared_data")  # the reword sample files are not pinned
def test_reword_row_is_opt_in(scores):
    root = _samples_root()
    assert ("acquiescence", "reword") not in scores("gpt-3.5-turbo")
    rows = score_sample_dir(root / "gpt-3.5-turbo", include_reword=True)
    assert [(r["bias"], r["setting"]) for r in rows][4] == ("acquiescence", "reword")
    assert rows[4]["n"] == 176 and math.isfinite(rows[4]["delta"])


# --- small hand-made folders --------------------------------------------------------------

HEADER = ["key", "response", "group", "num_options"]


def _write(
    path: Path,
    groups: tuple[str, str],
    keys: dict[str, tuple[list[str], list[str]]],
    n_options: int = 5,
) -> None:
    """Write a sample file: keys -> (q answers, q' answers), 50 answers each."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for key, answers in keys.items():
            for group, responses in zip(groups, answers):
                w.writerows([key, r, group, n_options] for r in responses)


def _answers(**counts: int) -> list[str]:
    """_answers(a=20, b=30) -> 20 'a' then 30 'b'; `empty` gives empty responses."""
    return [("" if letter == "empty" else letter) for letter, n in counts.items() for _ in range(n)]


def _source_groups(name: str) -> tuple[str, str]:
    return GROUPS[name.removesuffix(".csv").split("-")[0]]


@pytest.fixture
def sample_dir(tmp_path: Path) -> Path:
    """A complete folder: every expected file with two filler questions."""
    filler = {
        "Q1_W1": (_answers(a=25, b=25), _answers(a=30, b=20)),
        "Q2_W1": (_answers(a=10, b=40), _answers(a=10, c=40)),
    }
    for name in expected_files():
        _write(tmp_path / name, _source_groups(name), filler)
    return tmp_path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_hand_computed_acquiescence(sample_dir: Path):
    _write(
        sample_dir / "acquiescence.csv",
        GROUPS["acquiescence"],
        {
            # K1: q has 20 'a', q' has 30 'a'  -> Δ1 = (30 − 20) / 50 × 100 = 20
            "K1_W1": (_answers(a=20, b=30), _answers(a=30, b=20)),
            # K2: q 25 'a'; q' 26 'a', 22 'b', 2 empty -> Δ2 = (26 − 25) / 50 × 100 = 2
            # (the 2 empty rows stay in the denominator of 50)
            "K2_W1": (_answers(a=25, b=25), _answers(a=26, b=22, empty=2)),
        },
        n_options=2,
    )
    row = score_sample_dir(sample_dir)[0]
    # mean = (20 + 2) / 2 = 11; sd (ddof=1) = sqrt((9² + 9²) / 1) = sqrt(162); se = sd/√2 = 9
    # t = 11 / 9 on 1 df (a Cauchy): two-sided p = 1 − (2/π)·atan(11/9) ≈ 0.43655
    assert (row["bias"], row["setting"], row["n"]) == ("acquiescence", "bias", 2)
    assert row["delta"] == pytest.approx(11.0, abs=1e-12)
    assert row["p_value"] == pytest.approx(1 - 2 / math.pi * math.atan(11 / 9), rel=1e-9)


def test_allow_forbid_excludes_published_keys(sample_dir: Path):
    keys = {
        # Δ = (q[b] − q'[a]) / 50 × 100 = (40 − 20) × 2 = 40 points
        "KEEP_W1": (_answers(a=10, b=40), _answers(a=20, b=30)),
        "INEQ10_W54": (_answers(a=50), _answers(a=50)),  # excluded by the published protocol
    }
    _write(sample_dir / "allow_forbid.csv", GROUPS["allow_forbid"], keys, n_options=2)
    rows = score_sample_dir(sample_dir)
    row = next(r for r in rows if (r["bias"], r["setting"]) == ("allow_forbid", "bias"))
    assert row["n"] == 1 and row["delta"] == pytest.approx(40.0)


def test_missing_directory(tmp_path: Path):
    with pytest.raises(ValueError, match="sample directory not found"):
        score_sample_dir(tmp_path / "nope")


def test_missing_bias_file(sample_dir: Path):
    (sample_dir / "response_order.csv").unlink()
    with pytest.raises(ValueError, match=r"missing sample file\(s\) response_order\.csv"):
        score_sample_dir(sample_dir)


def test_missing_column(sample_dir: Path):
    path = sample_dir / "acquiescence.csv"
    path.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in _lines(path)))
    with pytest.raises(ValueError, match=r"acquiescence\.csv: missing column\(s\) num_options"):
        score_sample_dir(sample_dir)


def test_bad_response(sample_dir: Path):
    path = sample_dir / "odd_even.csv"
    lines = _lines(path)
    lines[7] = "Q1_W1,zz,middle alpha,5\n"  # file line 8
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=r"odd_even\.csv, line 8 \(key 'Q1_W1'\): response 'zz'"):
        score_sample_dir(sample_dir)


def test_wrong_row_count(sample_dir: Path):
    path = sample_dir / "allow_forbid-key_typo.csv"
    lines = _lines(path)
    path.write_text("".join(lines[:-1]))  # the last key's q' group loses a row
    message = r"allow_forbid-key_typo\.csv, key 'Q2_W1': 49 rows in group 'forbid alpha'"
    with pytest.raises(ValueError, match=message):
        score_sample_dir(sample_dir)


def test_unknown_group(sample_dir: Path):
    path = sample_dir / "response_order-letter_swap.csv"
    lines = _lines(path)
    lines[3] = lines[3].replace("orig alpha", "pos alpha")  # file line 4
    path.write_text("".join(lines))
    message = r"response_order-letter_swap\.csv, line 4 \(key 'Q1_W1'\): group 'pos alpha'"
    with pytest.raises(ValueError, match=message):
        score_sample_dir(sample_dir)


def test_non_utf8_file_is_named(sample_dir: Path):
    path = sample_dir / "odd_even.csv"
    path.write_bytes(path.read_bytes().replace(b"Q2_W1", b"Q2_W\xff", 1))
    with pytest.raises(ValueError, match=r"odd_even\.csv: not UTF-8 text \(byte 0xff on line \d+\); save it as UTF-8"):
        score_sample_dir(sample_dir)


def test_bom_is_accepted(sample_dir: Path):
    # Excel's "CSV UTF-8" starts the file with a byte-order mark
    before = score_sample_dir(sample_dir)
    for name in expected_files():
        path = sample_dir / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert score_sample_dir(sample_dir) == before
