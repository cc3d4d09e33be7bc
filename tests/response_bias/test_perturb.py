"""Tests of the seeded typo generators in tasks/response_bias/perturb.py.

Most tests pin the ``published`` rules, whose statistics are checked against the released
perturbed prompts; the ``paper`` rules (the default) have their own tests at the end.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import random
import re
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import data_root

from biasmonkey.tasks.response_bias import perturb
from biasmonkey.tasks.response_bias.perturb import PERTURBATIONS


def perturb_question(prompt: str, kind: str, seed: int, key: str) -> str:
    return perturb.perturb_question(prompt, kind, seed, key, rules="published")


def perturb_text(text: str, kind: str, rng: random.Random) -> str:
    return perturb.perturb_text(text, kind, rng, rules="published")


PROMPT = (
    "Overall, do you think science has made life easier or more difficult for most people in 2050?"
    "\nA. Easier\nB. More difficult"
)
# Computed once with seed 0 and key "SCI1_W34", then checked by hand:
# key_typo: 4 of the 16 digit-free words got one letter replaced by a lower-case letter, first
#   letters included (science->sciejce, or->ov, more->sore, difficult->mifficult); "2050?" skipped.
# middle_random: interiors of the purely alphabetic words of >= 5 letters are shuffled ("think" drew
#   its own order back); "Overall," (comma), 4-letter words and "2050?" stay.
# letter_swap: one adjacent swap inside each digit-free token of >= 5 characters, punctuation
#   counted: "Overall," -> "Overlal," keeps its comma last; 4-letter words and "2050?" stay.
EXPECTED_SEED0 = {
    "key_typo": "Overall, do you think sciejce has made life easier ov sore mifficult for most people in 2050?",
    "middle_random": "Overall, do you think secince has made life eisaer or more dfiifuclt for most plpeoe in 2050?",
    "letter_swap": "Overlal, do you thnik scinece has made life easeir or more diffiuclt for most peolpe in 2050?",
}

LONG_TEXT = (
    "Thinking ahead thirty years from now, which do you think is more likely to happen? Adults "
    "will be better prepared financially for retirement than older adults are today, and "
    "scientists expect stronger economic growth across different American communities."
)


def _words(text: str) -> list[str]:
    return text.split()


def _separators(text: str) -> list[str]:
    return re.split(r"(\s+)", text)[1::2]


# The rules restated independently of the implementation: which tokens a kind may touch.
def _eligible(kind: str, word: str) -> bool:
    if any(ch.isdigit() for ch in word):
        return False
    if kind == "key_typo":
        return True
    if kind == "letter_swap":
        return len(word) >= 5
    return len(word) >= 5 and word.isalpha()  # middle_random


def _allowed_change(kind: str, old: str, new: str) -> bool:
    """Could `new` be an output of `kind` applied to `old`?"""
    if old == new:
        return True
    if not _eligible(kind, old) or len(old) != len(new):
        return False
    diff = [i for i in range(len(old)) if old[i] != new[i]]
    if kind == "key_typo":
        return len(diff) == 1 and new[diff[0]] in string.ascii_lowercase
    if old[0] != new[0] or old[-1] != new[-1]:
        return False
    if kind == "letter_swap":
        i = diff[0]
        return diff == [i, i + 1] and (new[i], new[i + 1]) == (old[i + 1], old[i])
    return sorted(old) == sorted(new)  # middle_random


# --- API, determinism -------------------------------------------------------------------------


def test_unknown_kind_raises() -> None:
    for call in (
        lambda: perturb_text("some text", "typo", random.Random(0)),
        lambda: perturb_question(PROMPT, "typo", 0, "K"),
    ):
        with pytest.raises(ValueError) as err:
            call()
        assert "'typo'" in str(err.value)
        assert all(kind in str(err.value) for kind in PERTURBATIONS)


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_hard_coded_seed0_output(kind: str) -> None:
    expected = EXPECTED_SEED0[kind] + "\nA. Easier\nB. More difficult"
    assert perturb_question(PROMPT, kind, 0, "SCI1_W34") == expected


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_same_seed_same_output(kind: str) -> None:
    prompt = LONG_TEXT + "\nA. Yes\nB. No"
    assert perturb_question(prompt, kind, 7, "Q1") == perturb_question(prompt, kind, 7, "Q1")
    assert perturb_text(LONG_TEXT, kind, random.Random(3)) == perturb_text(LONG_TEXT, kind, random.Random(3))


def test_output_independent_of_python_hash_seed() -> None:
    code = (
        "from biasmonkey.tasks.response_bias.perturb import perturb_question as p\n"
        f"print(repr([p({PROMPT!r}, k, 0, 'SCI1_W34', rules='published') for k in {PERTURBATIONS!r}]))"
    )
    expected = repr([perturb_question(PROMPT, kind, 0, "SCI1_W34") for kind in PERTURBATIONS])
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == expected


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_different_seeds_and_keys_differ(kind: str) -> None:
    prompt = LONG_TEXT + "\nA. Yes\nB. No"
    by_seed = {perturb_question(prompt, kind, seed, "Q1") for seed in range(5)}
    assert len(by_seed) == 5
    assert perturb_question(prompt, kind, 0, "Q1") != perturb_question(prompt, kind, 0, "Q2")


def test_rng_is_sha256_of_seed_key_kind() -> None:
    # The documented seeding contract: one Random per (seed, key, kind), so kinds and keys draw
    # from independent streams and nothing depends on Python's hash().
    stem = PROMPT.split("\n")[0]
    for kind in PERTURBATIONS:
        digest = hashlib.sha256(f"0:SCI1_W34:{kind}".encode()).digest()
        rng = random.Random(int.from_bytes(digest, "big"))
        assert perturb_question(PROMPT, kind, 0, "SCI1_W34").split("\n")[0] == perturb_text(stem, kind, rng)


# --- structure: options, whitespace -------------------------------------------------------------


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_options_untouched(kind: str) -> None:
    options = (
        "\nA. Definitely happening everywhere\nB. Probably happening somewhere"
        "\nC. Something different entirely\nD. Refused"
    )
    for seed in range(20):
        out = perturb_question(LONG_TEXT + options, kind, seed, "Q")
        assert out.endswith(options)
        assert out != LONG_TEXT + options  # the stem itself did change


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_whitespace_and_line_breaks_kept(kind: str) -> None:
    stem = "  Thinking  about\tthe\n\nfollowing situations,\r\n please consider:  carefully "
    prompt = stem + "\nA. Yes\nB. No"
    for seed in range(20):
        out = perturb_question(prompt, kind, seed, "W")
        new_stem = out[: -len("\nA. Yes\nB. No")]
        assert _separators(new_stem) == _separators(stem)
        assert new_stem.startswith("  ") and new_stem.endswith(" ")
        assert out.endswith("\nA. Yes\nB. No")


def test_prompt_without_options_is_all_stem() -> None:
    text = "Generally speaking, would you support stricter regulations"
    assert perturb_question(text, "letter_swap", 0, "K") != text


# --- eligibility and per-word rules -------------------------------------------------------------


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_words_with_digits_untouched(kind: str) -> None:
    text = "2050 2050, 12345 K-12 covid19 70s 9/11"
    for seed in range(200):
        assert perturb_text(text, kind, random.Random(seed)) == text


@pytest.mark.parametrize("kind", ["letter_swap", "middle_random"])
def test_short_words_untouched_by_swap_and_shuffle(kind: str) -> None:
    text = "a an the who will your does last"  # 1-4 letters only (published: >= 5 needed)
    for seed in range(200):
        assert perturb_text(text, kind, random.Random(seed)) == text


def test_middle_random_skips_tokens_with_punctuation() -> None:
    text = "years? don't long-term stronger/weaker people's U.S.?"
    for seed in range(200):
        assert perturb_text(text, "middle_random", random.Random(seed)) == text


def test_letter_swap_includes_attached_punctuation() -> None:
    # As in the published files: "years?" -> "yaers?", "more/less" -> "mor/eless".
    outs = {perturb_text("more/less", "letter_swap", random.Random(s)) for s in range(200)}
    assert "mor/eless" in outs and "more/less" not in outs
    # "?" stays last, so "s" may move inside: published "years," -> "yaers,", "yeras,", "yeasr,".
    outs = {perturb_text("years?", "letter_swap", random.Random(s)) for s in range(200)}
    assert outs == {"yaers?", "yeras?", "yeasr?"}


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_word_level_rules(kind: str) -> None:
    text = LONG_TEXT + " A a I Don't long-term U.S.? stronger/weaker"
    changed = 0
    for seed in range(200):
        out = perturb_text(text, kind, random.Random(seed))
        assert len(_words(out)) == len(_words(text))
        for old, new in zip(_words(text), _words(out)):
            assert len(new) == len(old)
            assert _allowed_change(kind, old, new), (old, new)
            if kind != "key_typo":  # first/last kept, same multiset of letters
                assert (new[0], new[-1], sorted(new)) == (old[0], old[-1], sorted(old))
            changed += old != new
    assert changed > 0


def test_key_typo_hits_single_letters_and_capitals() -> None:
    outs = Counter(perturb_text("I", "key_typo", random.Random(s)) for s in range(2000))
    assert set(outs) <= set(string.ascii_lowercase) | {"I"}
    assert 0.15 < 1 - outs["I"] / 2000 < 0.25  # 0.2: the replacement is lower-case, never "I"


def test_middle_random_uniform_interior_does_not_loop() -> None:
    for word in ("baaaab", "aaaaa", "Xyyyyyyz"):
        for seed in range(20):
            assert perturb_text(word, "middle_random", random.Random(seed)) == word


# --- published data -----------------------------------------------------------------------------


def _prompts_dir() -> Path:
    return data_root() / "biasmonkey" / "prompts"


def _read_rows(name: str) -> list[dict[str, str]]:
    with open(_prompts_dir() / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _stem(prompt: str) -> str:
    return prompt.split("\n")[0]  # every published stem is one line


def _changed_fraction(pairs: list[tuple[str, str]], kind: str) -> tuple[int, int]:
    """(eligible words, changed eligible words) over (original stem, perturbed stem) pairs."""
    eligible = changed = 0
    for old, new in pairs:
        for a, b in zip(_words(old), _words(new), strict=True):
            if _eligible(kind, a):
                eligible += 1
                changed += a != b
    return eligible, changed


def test_key_typo_rate_on_acquiescence() -> None:
    rows = _read_rows("acquiescence.csv")
    assert len(rows) == 176
    pairs = [(_stem(r["orig alpha"]), _stem(perturb_question(r["orig alpha"], "key_typo", 0, r["key"]))) for r in rows]
    eligible, changed = _changed_fraction(pairs, "key_typo")
    assert eligible > 3000
    # Expected 0.2 * (1 - ~1/26): the random replacement letter may equal the original one.
    assert abs(changed / eligible - 0.2) <= 0.03


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_published_files_follow_our_rules(kind: str) -> None:
    rows = _read_rows(f"acquiescence-{kind}.csv")
    assert len(rows) == 176
    for r in rows:
        orig, pert = r["orig alpha"], r["pos alpha"]
        assert orig.split("\n")[1:] == pert.split("\n")[1:]  # option lines never perturbed
        for old, new in zip(_words(_stem(orig)), _words(_stem(pert)), strict=True):
            assert _allowed_change(kind, old, new), (r["key"], old, new)


N_SEEDS = 10


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_changed_fraction_matches_published(kind: str) -> None:
    rows = _read_rows(f"acquiescence-{kind}.csv")
    published = [(_stem(r["orig alpha"]), _stem(r["pos alpha"])) for r in rows]
    n, pub_changed = _changed_fraction(published, kind)
    ours_changed = 0
    for seed in range(N_SEEDS):
        ours = [(_stem(r["orig alpha"]), _stem(perturb_question(r["orig alpha"], kind, seed, r["key"]))) for r in rows]
        ours_changed += _changed_fraction(ours, kind)[1]
    p_pub, p_ours = pub_changed / n, ours_changed / (n * N_SEEDS)
    # Tolerance: each eligible word changes independently, so a changed fraction over n words has
    # standard deviation <= sqrt(p(1-p)/n); our mean over N_SEEDS runs adds 1/N_SEEDS of that
    # variance. 4 SD of the difference (two-sided p ~ 6e-5) allows 0.029 for key_typo (published
    # 0.190, n=3175), 0.030 for middle_random (0.924, n=1301) and 0.019 for letter_swap (0.968,
    # n=1549): sampling noise passes, while e.g. "the shuffle must differ" (-> ~1.0) or a key-typo
    # probability of 0.25 fails. Which words are eligible is checked word by word above.
    p = (p_pub + p_ours) / 2
    tolerance = 4 * math.sqrt(p * (1 - p) / n * (1 + 1 / N_SEEDS))
    assert abs(p_ours - p_pub) <= tolerance, (kind, n, p_pub, p_ours, tolerance)


# --- the paper's rules (the default) ----------------------------------------------------------

# Seed 0, key "SCI1_W34", checked by hand: letter_swap now swaps inside 4-letter words
# (made->mdae, life->lfie, more->mroe, most->msot) and skips "Overall," (punctuation) and "2050?";
# middle_random shuffles 4-letter interiors too (life->lfie, most->msot; "made", "more" and "think"
# drew their own order back); key_typo hit the same four letters as under the published rules.
EXPECTED_PAPER_SEED0 = {
    "key_typo": EXPECTED_SEED0["key_typo"],
    "middle_random": "Overall, do you think secince has made lfie esaeir or more difulfict for msot ppleoe in 2050?",
    "letter_swap": "Overall, do you thnik sciecne has mdae lfie esaier or mroe difficlut for msot poeple in 2050?",
}


@pytest.mark.parametrize("kind", PERTURBATIONS)
def test_paper_rules_are_the_default(kind: str) -> None:
    out = perturb.perturb_question(PROMPT, kind, 0, "SCI1_W34")
    assert out == perturb.perturb_question(PROMPT, kind, 0, "SCI1_W34", rules="paper")
    assert out == EXPECTED_PAPER_SEED0[kind] + "\nA. Easier\nB. More difficult"


@pytest.mark.parametrize("kind", ["letter_swap", "middle_random"])
def test_paper_rules_touch_four_letter_words_but_not_punctuated_or_short_ones(kind: str) -> None:
    outs = {perturb.perturb_text("that", kind, random.Random(s)) for s in range(50)}
    assert outs == {"that", "taht"} if kind == "middle_random" else outs == {"taht"}
    for word in ("years?", "more/less", "Don't", "the", "2050"):
        assert {perturb.perturb_text(word, kind, random.Random(s)) for s in range(50)} == {word}


def test_paper_key_typo_replaces_letters_only() -> None:
    outs = [perturb.perturb_text("years?", "key_typo", random.Random(s)) for s in range(2000)]
    changed = [o for o in outs if o != "years?"]
    assert all(o.endswith("?") and len(o) == 6 for o in outs)  # the "?" is never replaced
    assert 0.15 < len(changed) / len(outs) < 0.22  # 0.2 · 25/26 ≈ 0.192 visibly changed
    assert {perturb.perturb_text(",", "key_typo", random.Random(s)) for s in range(100)} == {","}


def test_unknown_rules_raise() -> None:
    with pytest.raises(ValueError, match=r"unknown perturbation rules 'loose'; valid: paper, published"):
        perturb.perturb_question(PROMPT, "key_typo", 0, "K", rules="loose")
