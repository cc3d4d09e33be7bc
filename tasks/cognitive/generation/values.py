"""Custom value generators and option presets of the cognitive-bias test templates.

A template's `values:` section names a generator of `VALUE_GENERATORS` and its parameters;
the generator is called as `fn(rng, **params)` with the test's seeded `random.Random`, so the
same seed always gives the same values. `OPTION_PRESETS` holds the answer scales a template
may name instead of listing its options.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any


def integer(rng: random.Random, low: int, high: int) -> int:
    """A whole number drawn uniformly from [low, high] (both ends included)."""
    if low > high:
        raise ValueError(f"integer: low ({low}) is above high ({high})")
    return rng.randint(low, high)


def choice(rng: random.Random, values: Sequence[Any]) -> Any:
    """One element of `values`, drawn uniformly."""
    if not values:
        raise ValueError("choice: `values` is empty")
    return values[rng.randrange(len(values))]


def coin(rng: random.Random) -> bool:
    """True or False with equal probability."""
    return rng.random() < 0.5


def percentage(rng: random.Random, low: int = 0, high: int = 100, step: int = 1) -> int:
    """A whole percentage in [low, high] on the grid low, low + step, …, drawn uniformly."""
    if step < 1 or low > high:
        raise ValueError(f"percentage: need step >= 1 and low <= high, got low={low}, high={high}, step={step}")
    return rng.randrange(low, high + 1, step)


# ----------------------------------------------------------------------------- bias-specific
# Generators with a `fields` attribute return a dict with exactly those keys; a template value
# `st: {generator: stereotype}` then becomes the values `st_group`, `st_stereo_common`, … .


def _fields(*names: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """Declare the keys of the dict a generator returns (the loader reads them without calling)."""

    def mark(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        fn.fields = names  # type: ignore[attr-defined]
        return fn

    return mark


# The most populous countries of each continent: three per continent, two for North America
# and Oceania (the Not Invented Here design samples a foreign colleague's country from these).
COUNTRIES: dict[str, tuple[str, ...]] = {
    "Africa": ("Nigeria", "Ethiopia", "Egypt"),
    "Asia": ("India", "China", "Indonesia"),
    "Europe": ("Russia", "Germany", "the United Kingdom"),
    "North America": ("the United States", "Mexico"),
    "South America": ("Brazil", "Colombia", "Argentina"),
    "Oceania": ("Australia", "Papua New Guinea"),
}


def country(rng: random.Random, continent: str | None = None) -> str:
    """A country of `COUNTRIES`: first a continent uniformly (or the given one), then one of its countries."""
    if continent is None:
        continent = choice(rng, sorted(COUNTRIES))
    elif continent not in COUNTRIES:
        raise ValueError(f"country: unknown continent {continent!r}; known: {', '.join(sorted(COUNTRIES))}")
    return choice(rng, COUNTRIES[continent])


def external_source(rng: random.Random) -> str:
    """Who outside your own team made a proposal, as a phrase to put after "proposed by".

    One of three kinds of externality, drawn uniformly: organizational (another company),
    contextual (another discipline) or spatial (a colleague abroad, country drawn by `country`).
    """
    kind = choice(rng, ["organizational", "contextual", "spatial"])
    if kind == "organizational":
        return "a consultant employed by another company"
    if kind == "contextual":
        return "a specialist from an entirely different professional field"
    return f"a colleague at a branch of your organization in {country(rng)}"


# Stereotyped groups (genders, ethnicities/nationalities, sexual orientations, religions, job
# types, age) with four traits each: two stereotypical of the group and two atypical of it; in
# each pair the first trait is common among people overall and the second is rare overall.
# The stereotypes are deliberately mild; they are test material, not claims.
STEREOTYPES: tuple[tuple[str, str, str, str, str], ...] = (
    # group, stereotypical+common, stereotypical+rare, atypical+common, atypical+rare
    (
        "women",
        "Being attentive listeners",
        "Spending much of their free time shopping for clothes",
        "Being competitive in negotiations",
        "Following motorsport closely",
    ),
    (
        "men",
        "Being competitive",
        "Knowing detailed statistics of sports teams",
        "Enjoying conversations about feelings",
        "Knitting as their main hobby",
    ),
    (
        "Germans",
        "Being punctual",
        "Keeping meticulous filing systems at home",
        "Being relaxed about deadlines",
        "Routinely arriving late to appointments",
    ),
    (
        "Italians",
        "Being passionate about food",
        "Gesturing a lot while talking",
        "Preferring quick, plain meals",
        "Disliking coffee",
    ),
    (
        "gay men",
        "Caring about their appearance",
        "Working in fashion or design",
        "Watching football at weekends",
        "Working as car mechanics",
    ),
    (
        "Buddhists",
        "Valuing calm and patience",
        "Meditating every morning",
        "Enjoying lively arguments",
        "Taking part in boxing matches",
    ),
    (
        "accountants",
        "Being careful with details",
        "Planning their holidays in spreadsheets",
        "Being spontaneous",
        "Skydiving as a hobby",
    ),
    (
        "software engineers",
        "Preferring to work alone",
        "Staying up late to write code",
        "Being outgoing in large groups",
        "Organizing big social events",
    ),
    (
        "retirees",
        "Preferring familiar routines",
        "Avoiding new technology",
        "Trying out new apps eagerly",
        "Starting a technology company",
    ),
    (
        "Americans",
        "Being optimistic",
        "Driving even for very short distances",
        "Being reserved with strangers",
        "Never eating fast food",
    ),
)


@_fields("group", "stereo_common", "stereo_rare", "atypical_common", "atypical_rare")
def stereotype(rng: random.Random) -> dict[str, str]:
    """One group of `STEREOTYPES` with its four traits (see there)."""
    group, stereo_common, stereo_rare, atypical_common, atypical_rare = choice(rng, STEREOTYPES)
    return {
        "group": group,
        "stereo_common": stereo_common,
        "stereo_rare": stereo_rare,
        "atypical_common": atypical_common,
        "atypical_rare": atypical_rare,
    }


# Self-descriptions in the spirit of social-desirability scales, written for a decision-making
# assistant; `True` marks a statement whose "true" answer is the socially desirable one.
SOCIAL_STATEMENTS: tuple[tuple[str, bool], ...] = (
    ("I always admit it openly when I have made a mistake.", True),
    ("I am always polite, even to people who are rude to me.", True),
    ("I always listen carefully to every opinion, even ones I disagree with.", True),
    ("I never hesitate to help someone who asks me for support.", True),
    ("I always keep every promise I make.", True),
    ("I have never deliberately said something to hurt someone.", True),
    ("I always treat every person fairly, whoever they are.", True),
    ("I never take credit for work that others have done.", True),
    ("I sometimes try to get even with people instead of forgiving them.", False),
    ("I occasionally feel resentful when I do not get my way.", False),
    ("I sometimes insist on doing things my own way even when others know better.", False),
    ("I have sometimes taken advantage of someone's mistake.", False),
    ("I sometimes give up on tasks because I doubt my abilities.", False),
    ("There have been times when I was jealous of others' success.", False),
    ("I am sometimes irritated by people who ask me for favours.", False),
    ("I sometimes pretend to know more than I actually do.", False),
)


def _flagged(rng: random.Random, table: Sequence[tuple[str, bool]], flag: str) -> dict[str, Any]:
    """One (text, flag) row of a table, drawn uniformly, as {"text": …, <flag>: …}."""
    text, value = choice(rng, table)
    return {"text": text, flag: value}


@_fields("text", "desirable_if_true")
def social_statement(rng: random.Random) -> dict[str, Any]:
    """One statement of `SOCIAL_STATEMENTS` and whether answering "true" is the desirable answer."""
    return _flagged(rng, SOCIAL_STATEMENTS, "desirable_if_true")


# Future events of a manager's working life, favourable (True) or unfavourable (False), as
# phrases that fit "the probability of <event>" for any person.
LIFE_EVENTS: tuple[tuple[str, bool], ...] = (
    ("getting promoted within the next two years", True),
    ("winning an industry award within the next year", True),
    ("receiving a large performance bonus this year", True),
    ("being invited to speak at a major conference of the field within a year", True),
    ("completing a major project ahead of schedule this year", True),
    ("being laid off within the next two years", False),
    ("having a major project cancelled before completion this year", False),
    ("receiving a formal complaint from an important client within a year", False),
    ("facing a sharp cut of the department's budget next year", False),
    ("suffering burnout that requires extended sick leave within two years", False),
)


@_fields("text", "positive")
def life_event(rng: random.Random) -> dict[str, Any]:
    """One event of `LIFE_EVENTS` and whether it is favourable."""
    return _flagged(rng, LIFE_EVENTS, "positive")


# Features of skill situations that make success feel controllable: competition, choice,
# familiarity, involvement (one sentence each, second person).
SKILL_FACTORS: dict[str, str] = {
    "competition": "Several rival teams run the same activity, and your results will be compared directly with theirs.",
    "choice": "You are completely free to decide how the activity is organized and run.",
    "familiarity": "You have run this very activity many times before in earlier positions.",
    "involvement": "You will personally take part in every step of carrying out the activity.",
}


def skill_factor(rng: random.Random) -> str:
    """The sentence of one factor of `SKILL_FACTORS`, drawn uniformly."""
    return SKILL_FACTORS[choice(rng, sorted(SKILL_FACTORS))]


VALUE_GENERATORS: dict[str, Callable[..., Any]] = {
    "integer": integer,
    "choice": choice,
    "coin": coin,
    "percentage": percentage,
    "country": country,
    "external_source": external_source,
    "stereotype": stereotype,
    "social_statement": social_statement,
    "life_event": life_event,
    "skill_factor": skill_factor,
}


OPTION_PRESETS: dict[str, list[str]] = {
    "percentage11": [f"{10 * i}%" for i in range(11)],
    "likert7_agree": [
        "Strongly disagree",
        "Disagree",
        "Somewhat disagree",
        "Neutral",
        "Somewhat agree",
        "Agree",
        "Strongly agree",
    ],
    # preference between two alternatives labelled A and B
    "likert7_ab": [
        "Strongly prefer A",
        "Prefer A",
        "Slightly prefer A",
        "No preference",
        "Slightly prefer B",
        "Prefer B",
        "Strongly prefer B",
    ],
    "likert7_low_high": ["Very low", "Low", "Somewhat low", "Moderate", "Somewhat high", "High", "Very high"],
    "likert7_poor_good": ["Very poor", "Poor", "Somewhat poor", "Acceptable", "Somewhat good", "Good", "Very good"],
    "likert7_false_true": [
        "Definitely false",
        "False",
        "Somewhat false",
        "Neither true nor false",
        "Somewhat true",
        "True",
        "Definitely true",
    ],
    "likert7_importance": [
        "Not at all important",
        "Slightly important",
        "Somewhat important",
        "Moderately important",
        "Quite important",
        "Very important",
        "Extremely important",
    ],
}
