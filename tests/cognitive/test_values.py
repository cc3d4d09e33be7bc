"""Custom value generators and option presets of the cognitive-bias templates (values.py):
determinism for a seed, ranges, coverage of every kind, and clear errors for bad parameters."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from biasmonkey.tasks.cognitive.generation import values as v

DRAWS = 400


def draws(name: str, n: int = DRAWS, seed: str = "s", **params) -> list:
    rng = random.Random(seed)
    return [v.VALUE_GENERATORS[name](rng, **params) for _ in range(n)]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("integer", {"low": 0, "high": 100}),
        ("choice", {"values": ["x", "y", "z"]}),
        ("coin", {}),
        ("percentage", {"low": 10, "high": 50, "step": 5}),
        ("country", {}),
        ("external_source", {}),
        ("stereotype", {}),
        ("social_statement", {}),
        ("life_event", {}),
        ("skill_factor", {}),
    ],
)
def test_every_generator_is_deterministic_and_varies(name: str, params: dict):
    first = draws(name, 50, "seed-1", **params)
    assert first == draws(name, 50, "seed-1", **params)  # same seed, same sequence
    assert first != draws(name, 50, "seed-2", **params)  # another seed, another sequence
    assert len({repr(x) for x in first}) > 1


def test_integer_and_percentage_ranges():
    ints = draws("integer", low=3, high=5)
    assert set(ints) == {3, 4, 5}  # both ends included, all hit in 400 draws
    grid = draws("percentage", low=10, high=50, step=10)
    assert set(grid) == {10, 20, 30, 40, 50}
    assert set(draws("percentage", low=7, high=7)) == {7}
    with pytest.raises(ValueError, match="low"):
        v.integer(random.Random(0), 5, 3)
    with pytest.raises(ValueError, match="step"):
        v.percentage(random.Random(0), 0, 100, 0)


def test_choice_and_coin():
    assert set(draws("choice", values=["a", "b"])) == {"a", "b"}
    flips = Counter(draws("coin"))
    assert set(flips) == {True, False} and 150 < flips[True] < 250  # fair: 200 expected of 400
    with pytest.raises(ValueError, match="empty"):
        v.choice(random.Random(0), [])


def test_countries_three_per_continent_two_for_north_america_and_oceania():
    assert {c: len(names) for c, names in v.COUNTRIES.items()} == {
        "Africa": 3,
        "Asia": 3,
        "Europe": 3,
        "North America": 2,
        "South America": 3,
        "Oceania": 2,
    }
    all_countries = {name for names in v.COUNTRIES.values() for name in names}
    assert set(draws("country", 2000)) == all_countries
    assert set(draws("country", continent="Oceania")) == {"Australia", "Papua New Guinea"}
    with pytest.raises(ValueError, match="Atlantis"):
        v.country(random.Random(0), "Atlantis")


def test_external_source_covers_the_three_kinds_of_externality():
    sources = draws("external_source")
    assert "a consultant employed by another company" in sources  # organizational
    assert "a specialist from an entirely different professional field" in sources  # contextual
    abroad = [s for s in sources if s.startswith("a colleague at a branch of your organization in ")]
    assert abroad and all(s.rsplit(" in ", 1)[1] in {n for ns in v.COUNTRIES.values() for n in ns} for s in abroad)


def test_stereotype_returns_one_group_with_its_four_traits():
    assert v.stereotype.fields == ("group", "stereo_common", "stereo_rare", "atypical_common", "atypical_rare")
    picks = draws("stereotype")
    by_group = {row[0]: row for row in v.STEREOTYPES}
    for pick in picks:
        assert tuple(pick) == v.stereotype.fields
        assert tuple(pick.values()) == by_group[pick["group"]]  # the traits belong to the drawn group
    assert {p["group"] for p in picks} == set(by_group)
    assert all(len(set(row)) == 5 for row in v.STEREOTYPES)  # four distinct traits per group


@pytest.mark.parametrize(
    ("name", "flag", "table"),
    [
        ("social_statement", "desirable_if_true", v.SOCIAL_STATEMENTS),
        ("life_event", "positive", v.LIFE_EVENTS),
    ],
)
def test_statements_and_events_carry_their_direction(name: str, flag: str, table: tuple):
    generator = v.VALUE_GENERATORS[name]
    assert generator.fields == ("text", flag)
    assert Counter(direction for _, direction in table) == {True: len(table) // 2, False: len(table) // 2}
    lookup = dict(table)
    picks = draws(name)
    assert all(lookup[p["text"]] is p[flag] for p in picks)
    assert {p[flag] for p in picks} == {True, False}


def test_skill_factor_draws_each_factor():
    assert set(draws("skill_factor")) == set(v.SKILL_FACTORS.values())
    assert sorted(v.SKILL_FACTORS) == ["choice", "competition", "familiarity", "involvement"]


def test_option_presets():
    assert v.OPTION_PRESETS["percentage11"] == [
        "0%",
        "10%",
        "20%",
        "30%",
        "40%",
        "50%",
        "60%",
        "70%",
        "80%",
        "90%",
        "100%",
    ]
    for name, options in v.OPTION_PRESETS.items():
        if name.startswith("likert7"):
            assert len(options) == len(set(options)) == 7, name
    assert (
        v.OPTION_PRESETS["likert7_ab"][0] == "Strongly prefer A"
        and v.OPTION_PRESETS["likert7_ab"][-1] == "Strongly prefer B"
    )
