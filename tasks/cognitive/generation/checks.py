"""Verifiable instructions: checks applied to the text the generator model inserts into a gap.

A template's `checks:` section maps a gap instruction to check specs: a name, or `name:argument`
(e.g. `max_words:30`). Each check returns None when the text passes, else a short reason.

- `no_numbers`: no digit and no number word (one … twenty, thirty … ninety, hundred, thousand,
  million, billion, dozen, percent).
- `second_person`: addresses the reader (you, your, yours, yourself, yourselves).
- `no_first_person`: no I, me, my, mine, myself, we, us, our, ours, ourselves ("US" in capitals
  is taken for the country).
- `no_order`: nothing that ranks or positions alternatives: first, second, third, former,
  latter, "option A"/"option 1" (also opinion, alternative, choice, proposal, plan), a lone
  capital "B".
- `max_words:N`: at most N whitespace-separated words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "dozen",
    "percent",
]
_NUMBER = re.compile(r"\d|\b(?:" + "|".join(_NUMBER_WORDS) + r")s?\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b", re.IGNORECASE)
# Case-sensitive on purpose: "US" (the country) and a lone lowercase "i" are not first person.
_FIRST_PERSON = re.compile(r"\bI\b|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Uu]s|[Oo]ur|[Oo]urs|[Oo]urselves)\b")
_ORDER = re.compile(
    r"\b(?:first|second|third|former|latter)\b"
    r"|\b(?:option|opinion|alternative|choice|proposal|plan)\s+(?-i:[A-D])\b|\b(?:option|opinion|alternative|choice|proposal|plan)\s+\d\b",
    re.IGNORECASE,
)
_LONE_B = re.compile(r"\bB\b")  # a capital B on its own is a label; the article "A" is not flagged


def _found(match: re.Match[str] | None, what: str) -> str | None:
    return None if match is None else f"contains {what} {match.group(0)!r}"


def no_numbers(text: str) -> str | None:
    return _found(_NUMBER.search(text), "a number")


def second_person(text: str) -> str | None:
    return None if _SECOND_PERSON.search(text) else "does not address the reader as 'you'"


def no_first_person(text: str) -> str | None:
    return _found(_FIRST_PERSON.search(text), "the first-person word")


def no_order(text: str) -> str | None:
    return _found(_ORDER.search(text) or _LONE_B.search(text), "the ordering word")


def max_words(text: str, limit: str) -> str | None:
    count = len(text.split())
    return None if count <= int(limit) else f"has {count} words, more than {limit}"


# name -> (function, whether it takes an argument)
CHECKS: dict[str, tuple[Callable[..., str | None], bool]] = {
    "no_numbers": (no_numbers, False),
    "second_person": (second_person, False),
    "no_first_person": (no_first_person, False),
    "no_order": (no_order, False),
    "max_words": (max_words, True),
}


@dataclass(frozen=True)
class Check:
    """One parsed check spec, e.g. Check("max_words", "30")."""

    name: str
    argument: str | None = None

    def __call__(self, text: str) -> str | None:
        function, takes_argument = CHECKS[self.name]
        return function(text, self.argument) if takes_argument else function(text)

    def __str__(self) -> str:
        return self.name if self.argument is None else f"{self.name}:{self.argument}"


def parse_check(spec: str) -> Check:
    """A check from its spec; ValueError naming the problem for an unknown name or a bad argument."""
    name, _, argument = str(spec).partition(":")
    name = name.strip()
    if name not in CHECKS:
        raise ValueError(f"unknown check {spec!r}; known: {', '.join(CHECKS)}")
    takes_argument = CHECKS[name][1]
    if takes_argument and not argument.strip().isdigit():
        raise ValueError(f"check {spec!r} needs a whole-number argument, e.g. {name}:30")
    if not takes_argument and argument:
        raise ValueError(f"check {name!r} takes no argument, got {spec!r}")
    return Check(name, argument.strip() if takes_argument else None)
