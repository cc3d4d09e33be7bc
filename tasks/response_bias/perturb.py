"""Seeded generators of the three non-bias perturbations ("typos") of Tjuatja et al. (2023/24).

Two rule sets (`RULES`), which differ only in which words may be touched:

* ``paper`` (default): the rules as the paper states them (Appendix A.3). letter_swap and
  middle_random touch words of >= 4 letters that contain no digit and no punctuation, keeping the
  first and last letters; key_typo replaces one letter of a word without digits with probability 0.2.
* ``published``: the rules the released perturbed prompts actually follow (below): >= 5 characters,
  letter_swap also inside tokens with punctuation, key_typo at any position of the token. Use it
  to draw variants statistically like the published ones.

Appendix A.3 of the paper swaps the descriptions of "middle random" and "letter swap"; the
``published`` rules below follow the published perturbed prompts (``prompts/*-{kind}.csv``: ``orig alpha`` vs. the
perturbed column, 176 acquiescence + 48 allow/forbid + 126 opinion-float + 271 response-order
questions, ~13k words per kind). What those files show:

* A "word" is a whitespace-delimited token *including* attached punctuation ("years?", "U.S.?",
  "more/less", "Don't"); punctuation is never stripped first.
* letter_swap: exactly one swap of two adjacent characters strictly inside the token; the first and
  last characters stay (so "years?" -> "yaers?", "more/less" -> "mor/eless", "U.S.?" -> "US..?").
  Only tokens of length >= 5 are touched: 0 of 1,634 four-letter words changed, although the paper
  says ">= 4". The swap position is uniform (e.g. 5-letter words: 876 at index 1 vs 830 at index 2);
  a swap of two equal letters leaves the token unchanged ("well," stayed unchanged 9 of 18 times).
* middle_random: the interior (all but first and last character) is shuffled, only for purely
  alphabetic tokens (``str.isalpha``) of length >= 5: no token with an apostrophe, hyphen, slash,
  digit or trailing punctuation ever changed (0 of 1,148 of length >= 5). A plain shuffle that may
  give back the original: 345 of 4,982 eligible words unchanged vs. 329 expected, so no retries.
* key_typo: every token, of any length (single letters included: 49 of 288 changed), is hit with
  probability 0.2; one position chosen uniformly over the *whole* token (first/last letters and
  punctuation included: "years," -> "yearsv") is replaced by a uniform random lower-case letter
  (all 2,605 replacements lower-case, also for capitals; a-z counts 81-118). Whether the letter may
  equal the original is not decidable from the data (2,605 changes vs. 2,563 expected if it may,
  2,661 if not); we use the simpler "may", so ~0.2 * 25/26 of lower-case words visibly change.
* Digits: pure numbers are never touched (0 of 40 in key_typo, where ~8 were expected). The files do
  perturb a few mixed tokens ("2050," -> "2005," / "2d50,", "18." -> "18s", "K-12" -> "Kl12"; 16
  tokens in all, none in acquiescence). That contradicts the paper ("we avoid any words that contain
  numeric values (e.g., years)") and changes meaning, so here every token containing a digit is
  left alone, for all three kinds. This is our one deliberate deviation from the published files.
* Only the stem is perturbed: the option lines are byte-identical in all published files. The files
  collapse runs of whitespace (e.g. a double space in allow_forbid); we keep separators exactly.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from dataclasses import dataclass

PERTURBATIONS = ("key_typo", "middle_random", "letter_swap")

KEY_TYPO_PROB = 0.2  # per-token probability of a key typo (paper: 20%)


@dataclass(frozen=True)
class Rules:
    """Which words the perturbations may touch."""

    min_scramble_len: int  # letter_swap / middle_random touch only tokens at least this long
    swap_alpha_only: bool  # letter_swap skips tokens with punctuation
    typo_letters_only: bool  # key_typo replaces a letter, never a punctuation mark


RULES: dict[str, Rules] = {
    "paper": Rules(min_scramble_len=4, swap_alpha_only=True, typo_letters_only=True),
    "published": Rules(min_scramble_len=5, swap_alpha_only=False, typo_letters_only=False),
}
DEFAULT_RULES = "paper"

_SEPARATORS = re.compile(r"(\s+)")  # capturing group: the separators are kept by re.split
_OPTION_LINE = re.compile(r"[A-Z]\.\s")  # "A. ...", "B. ...": answer options, never perturbed


def _has_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


def _key_typo(token: str, rng: random.Random, rules: Rules) -> str:
    if _has_digit(token) or rng.random() >= KEY_TYPO_PROB:
        return token
    if rules.typo_letters_only:
        letters = [i for i, ch in enumerate(token) if ch.isalpha()]
        if not letters:
            return token
        i = letters[rng.randrange(len(letters))]
    else:
        i = rng.randrange(len(token))
    return token[:i] + rng.choice(string.ascii_lowercase) + token[i + 1 :]


def _letter_swap(token: str, rng: random.Random, rules: Rules) -> str:
    if len(token) < rules.min_scramble_len or _has_digit(token):
        return token
    if rules.swap_alpha_only and not token.isalpha():
        return token
    i = rng.randrange(1, len(token) - 2)  # swap i and i + 1, both strictly inside the token
    return token[:i] + token[i + 1] + token[i] + token[i + 2 :]


def _middle_random(token: str, rng: random.Random, rules: Rules) -> str:
    if len(token) < rules.min_scramble_len or not token.isalpha():
        return token
    middle = list(token[1:-1])
    rng.shuffle(middle)  # may give back the original, as in the published files
    return token[0] + "".join(middle) + token[-1]


_PERTURBERS = {"key_typo": _key_typo, "middle_random": _middle_random, "letter_swap": _letter_swap}


def _check(kind: str, rules: str) -> Rules:
    if kind not in _PERTURBERS:
        valid = ", ".join(PERTURBATIONS)
        raise ValueError(f"unknown perturbation kind {kind!r}; valid kinds: {valid}")
    if rules not in RULES:
        raise ValueError(f"unknown perturbation rules {rules!r}; valid: {', '.join(RULES)}")
    return RULES[rules]


def perturb_text(text: str, kind: str, rng: random.Random, rules: str = DEFAULT_RULES) -> str:
    """Perturb every eligible word of ``text``; whitespace and line breaks are kept exactly."""
    word_rules = _check(kind, rules)
    perturb = _PERTURBERS[kind]
    parts = _SEPARATORS.split(text)  # words at even indices, separators at odd ones
    return "".join(part if i % 2 or not part else perturb(part, rng, word_rules) for i, part in enumerate(parts))


def _split_stem(prompt: str) -> tuple[str, str]:
    """Split ``prompt`` into (stem, options): the trailing option lines, with their "\\n"s."""
    lines = prompt.split("\n")
    start = len(lines)
    while start > 1 and (_OPTION_LINE.match(lines[start - 1]) or not lines[start - 1].strip()):
        start -= 1
    return "\n".join(lines[:start]), "".join("\n" + line for line in lines[start:])


def _rng(seed: int, key: str, kind: str) -> random.Random:
    # sha256, not hash(): stable across processes, machines and Python versions.
    digest = hashlib.sha256(f"{seed}:{key}:{kind}".encode()).digest()
    return random.Random(int.from_bytes(digest, "big"))


def perturb_question(prompt: str, kind: str, seed: int, key: str, rules: str = DEFAULT_RULES) -> str:
    """Perturb the stem of ``prompt`` (stem + "\\n" + option lines); the option lines are unchanged.

    The same (seed, key, kind, rules) always gives the same output; other keys or kinds draw
    independently.
    """
    _check(kind, rules)
    stem, options = _split_stem(prompt)
    return perturb_text(stem, kind, _rng(seed, key, kind), rules) + options
