"""Pair building (tasks/response_bias/pairs.py) and the prompt template.

Tests on the real prompt files need BIASMONKEY_DATA_DIR and skip without it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from biasmonkey.tasks.response_bias.data import DataError
from biasmonkey.tasks.response_bias.pairs import ALLOW_FORBID_EXCLUDED, build_pairs
from biasmonkey.tasks.response_bias.prompts import render_prompt

BIASES = ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
PERTURBATIONS = ("key_typo", "middle_random", "letter_swap")
SETTINGS = ("bias", *PERTURBATIONS)
PAIRS = {"acquiescence": 176, "allow_forbid": 40, "response_order": 271, "opinion_float": 126, "odd_even": 126}
QP_COLUMN = {
    "acquiescence": "pos alpha",
    "allow_forbid": "forbid alpha",
    "response_order": "reversed alpha",
    "opinion_float": "float alpha",
    "odd_even": "float alpha",
}  # odd_even perturbations: opinion_float files

_OPTION = re.compile(r"^([A-Z])\. ?(.*)$")


def options(text: str) -> list[str]:
    """Option texts of a question: the trailing run of 'X. ...' lines (independent of data.py)."""
    found: list[str] = []
    for line in reversed(text.rstrip().split("\n")):
        m = _OPTION.match(line.strip())
        if not m:
            break
        found.insert(0, m.group(2).strip())
        if m.group(1) == "A":
            break
    return found


def published(data_dir: Path, file: str, column: str) -> dict[str, str]:
    with (data_dir / "biasmonkey" / "prompts" / file).open(newline="", encoding="utf-8") as f:
        return {row["key"]: row[column] for row in csv.DictReader(f)}


def by_key(pairs: list[dict]) -> dict[str, dict]:
    return {p["key"]: p for p in pairs}


# ------------------------------------------------------------------------------ counts


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("bias", BIASES)
def test_pair_counts(data_dir: Path, bias: str, setting: str) -> None:
    pairs = build_pairs(bias, setting)
    assert len(pairs) == PAIRS[bias]
    assert len({p["key"] for p in pairs}) == len(pairs)
    for p in pairs:
        assert (p["bias"], p["setting"]) == (bias, setting)
        assert p["q_letters"] == list("ABCDEF"[: len(options(p["q"]))])
        assert p["qp_letters"] == list("ABCDEF"[: len(options(p["qp"]))])
        assert len(p["qp_positions"]) == len(p["qp_letters"])


@pytest.mark.parametrize("setting", SETTINGS)
def test_allow_forbid_exclusion(data_dir: Path, setting: str) -> None:
    default = {p["key"] for p in build_pairs("allow_forbid", setting)}
    everything = {p["key"] for p in build_pairs("allow_forbid", setting, allow_forbid_all=True)}
    assert (len(default), len(everything)) == (40, 48)
    assert everything - default == set(ALLOW_FORBID_EXCLUDED)
    assert len(ALLOW_FORBID_EXCLUDED) == 8


# ------------------------------------------------------------------------------ positions


def test_response_order_bias_pairs_are_reversed(data_dir: Path) -> None:
    pairs = build_pairs("response_order", "bias")
    assert {len(p["q_letters"]) for p in pairs} == {3, 4, 5}
    for p in pairs:
        q, qp = options(p["q"]), options(p["qp"])
        n = len(q)
        assert p["qp_positions"] == list(range(n - 1, -1, -1))  # e.g. [2, 1, 0] for 3 options
        # q' option i is q's option at position qp_positions[i]
        assert [q[pos] for pos in p["qp_positions"]] == qp


def test_odd_even_bias_pairs_skip_the_middle(data_dir: Path) -> None:
    for p in build_pairs("odd_even", "bias"):
        q, qp = options(p["q"]), options(p["qp"])
        assert (len(q), len(qp)) == (5, 4)
        assert p["qp_positions"] == [0, 1, 3, 4]  # q' A,B,C,D = q a,b,d,e
        assert qp == [q[0], q[1], q[3], q[4]]


@pytest.mark.parametrize("bias", ["acquiescence", "allow_forbid", "opinion_float"])
def test_other_bias_pairs_use_identity_positions(data_dir: Path, bias: str) -> None:
    for p in build_pairs(bias, "bias"):
        assert p["qp_positions"] == list(range(len(p["qp_letters"])))


# ------------------------------------------------------------------------------ perturbations


@pytest.mark.parametrize("setting", PERTURBATIONS)
@pytest.mark.parametrize("bias", BIASES)
def test_perturbation_pairs_use_the_published_perturbed_text(data_dir: Path, bias: str, setting: str) -> None:
    source = "opinion_float" if bias == "odd_even" else bias
    file = f"{source}-{setting}.csv"
    perturbed = published(data_dir, file, QP_COLUMN[bias])
    originals = by_key(build_pairs(bias, "bias"))
    pairs = build_pairs(bias, setting)
    for p in pairs:
        assert p["source"] == f"prompts/{file}"
        assert p["q"] == originals[p["key"]]["q"]  # the control is the unperturbed original
        assert p["qp"] == perturbed[p["key"]]
        assert options(p["qp"]) == options(p["q"])
        assert p["qp_letters"] == p["q_letters"]
        assert p["qp_positions"] == list(range(len(p["q_letters"])))


@pytest.mark.parametrize("setting", PERTURBATIONS)
def test_odd_even_perturbations_are_the_opinion_float_ones(data_dir: Path, setting: str) -> None:
    odd_even = [(p["key"], p["q"], p["qp"], p["source"]) for p in build_pairs("odd_even", setting)]
    opinion = [(p["key"], p["q"], p["qp"], p["source"]) for p in build_pairs("opinion_float", setting)]
    assert odd_even == opinion
    # and the odd_even control questions are the 5-option originals of its bias file
    assert {p["key"]: p["q"] for p in build_pairs("odd_even", "bias")} == {k: q for k, q, _, _ in odd_even}


@pytest.mark.parametrize("setting", PERTURBATIONS)
@pytest.mark.parametrize("bias", BIASES)
def test_seeded_perturbations(data_dir: Path, bias: str, setting: str) -> None:
    pub = by_key(build_pairs(bias, setting))
    seven = build_pairs(bias, setting, perturbation_seed=7)
    assert len(seven) == len(pub)
    for p in seven:
        assert p["source"] == "seeded:7:paper"
        assert p["q"] == pub[p["key"]]["q"]
        assert options(p["qp"]) == options(p["q"])  # only the stem is perturbed
        assert p["qp"].endswith("\n".join(p["q"].split("\n")[-len(p["q_letters"]) :]))
        assert p["qp_letters"] == p["q_letters"]
        assert p["qp_positions"] == list(range(len(p["q_letters"])))
    # Our draw is not the published one. A short stem can coincide by chance (letter_swap on
    # acquiescence: 2 of 176 with seed 7), so require ≥ 95% of pairs to differ.
    differ = sum(p["qp"] != pub[p["key"]]["qp"] for p in seven)
    assert differ >= 0.95 * len(seven)
    assert build_pairs(bias, setting, perturbation_seed=7) == seven  # same seed → identical
    eight = build_pairs(bias, setting, perturbation_seed=8)
    assert [p["qp"] for p in eight] != [p["qp"] for p in seven]  # another seed → another draw


def test_seed_is_ignored_for_the_bias_setting(data_dir: Path) -> None:
    assert build_pairs("response_order", "bias", perturbation_seed=7) == build_pairs("response_order", "bias")


# ------------------------------------------------------------------------------ options & errors


def test_reword_acquiescence(data_dir: Path) -> None:
    plain = build_pairs("acquiescence", "bias")
    reword = build_pairs("acquiescence", "bias", reword=True)
    assert len(reword) == 176
    assert {p["source"] for p in reword} == {"prompts/acquiescence_reword.csv"}
    assert [p["key"] for p in reword] == [p["key"] for p in plain]
    expected = published(data_dir, "acquiescence_reword.csv", "pos alpha")
    assert all(p["qp"] == expected[p["key"]] for p in reword)
    assert any(a["qp"] != b["qp"] for a, b in zip(plain, reword))


@pytest.mark.parametrize(
    ("bias", "setting", "kwargs", "match"),
    [
        ("allow_forbid", "bias", {"reword": True}, "reword applies to the acquiescence bias task only"),
        ("acquiescence", "key_typo", {"reword": True}, "reword applies to the acquiescence bias task only"),
        ("sycophancy", "bias", {}, "unknown bias 'sycophancy'"),
        ("acquiescence", "typo", {}, "unknown setting 'typo'"),
    ],
)
def test_build_pairs_argument_errors(bias: str, setting: str, kwargs: dict, match: str) -> None:
    # Checked before any file is read, so these need no data.
    with pytest.raises(ValueError, match=match):
        build_pairs(bias, setting, **kwargs)


def test_response_order_row_whose_reversal_does_not_match(fake_prompt_file) -> None:
    fake_prompt_file(
        "prompts/response_order.csv",
        "key,num options,orig alpha,reversed alpha\n"
        'GOOD_W1,3,"Q?\nA. x\nB. y\nC. z","Q?\nA. z\nB. y\nC. x"\n'
        'BAD_W2,3,"Q?\nA. x\nB. y\nC. z","Q?\nA. z\nB. x\nC. y"\n',  # not the reverse of x, y, z
    )
    with pytest.raises(DataError, match=r"response_order key BAD_W2: q' options \['z', 'x', 'y'\]"):
        build_pairs("response_order", "bias")


def test_perturbed_row_that_changes_the_options(fake_prompt_file) -> None:
    fake_prompt_file(
        "prompts/allow_forbid-key_typo.csv",
        ",key,num options,orig alpha,forbid alpha\n"
        '0,KEY_W1,2,"Should it be allowed?\nA. Yes\nB. No","Shoulx it be allowed?\nA. Yes\nB. Nope"\n',
    )
    with pytest.raises(DataError, match="allow_forbid/key_typo key KEY_W1: perturbed question changed the options"):
        build_pairs("allow_forbid", "key_typo")


# ------------------------------------------------------------------------------ prompt


def test_render_prompt_is_the_paper_template() -> None:
    q = "Do you favor or oppose X?\nA. Favor\nB. Oppose"
    assert render_prompt(q) == (
        "Please answer the following question with one of the alphabetical options provided.\n"
        "Question: Do you favor or oppose X?\nA. Favor\nB. Oppose\n"
        "Answer:"
    )
    assert render_prompt(q + "\n  \n") == render_prompt(q)  # trailing whitespace is dropped
    with pytest.raises(ValueError, match="unknown prompt template 'fancy'"):
        render_prompt(q, template="fancy")


def test_render_prompt_on_a_real_pair(data_dir: Path) -> None:
    pair = build_pairs("response_order", "bias")[0]
    prompt = render_prompt(pair["qp"])
    assert prompt.startswith(
        "Please answer the following question with one of the alphabetical options provided.\nQuestion: "
    )
    assert prompt.endswith("\nAnswer:")
    assert prompt == (
        "Please answer the following question with one of the alphabetical options provided.\n"
        f"Question: {pair['qp'].rstrip()}\nAnswer:"
    )
