"""Fidelity of the 30 cognitive templates' metric parameters to the authors' tests (Malberg et al.,
2025; github.com/simonmalberg/cognitive-biases-in-llms, `tests/<Bias>/test.py` and `core/base.py`).

Every answer pair is scored twice: with our template's k, x_1, x_2 (loaded with the template
loader and evaluated for concrete values) and with the authors' parameterisation of that bias,
re-implemented below from their code's logic: their ratio-scale metric with k, x_1, x_2 (defaults
k = -1, x = 0) and the option to flip the treatment answer, in their own option layout. Answers are
given in our option order; `rev` maps an answer to the authors' order where their scale runs the
other way. The differences that remain on purpose are in the templates README.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import biasmonkey.tasks.cognitive as cognitive_package
from biasmonkey.metrics.cognitive import bias_score
from biasmonkey.tasks.cognitive.data import BIASES
from biasmonkey.tasks.cognitive.generation.expressions import evaluate
from biasmonkey.tasks.cognitive.generation.template import Template, load_template, value_names

TEMPLATES_DIR = Path(cognitive_package.__file__).resolve().parent / "templates"

Values = Mapping[str, Any]
Authors = Callable[[int, int, int, Values], float]  # (a_1, a_2 in our order, n, our values) -> m


# ---------------------------------------------------------------------------- the authors' metric


def ratio(a_1: int, a_2: int, n: int, k: int = -1, x_1: float = 0, x_2: float = 0, flip: bool = False) -> float:
    """The authors' ratio-scale metric for one test, in their option order: `flip` mirrors the
    treatment answer (their flip_treatment), then k·(|a_1−x_1| − |a_2−x_2|) / (max + 1e-8)."""
    if flip:
        a_2 = n - 1 - a_2
    d_1, d_2 = abs(a_1 - x_1), abs(a_2 - x_2)
    return k * (d_1 - d_2) / (max(d_1, d_2) + 1e-8)


def rev(a: int, n: int) -> int:
    """An answer in the reverse option order."""
    return n - 1 - a


# The authors' parameterisation per bias, applied to our answers. Where the authors draw a value
# that our template also draws, it is read from our values (translated to their terms).
AUTHORS: dict[str, Authors] = {
    # x = round(anchor / 10): Python's round, halves to even
    "anchoring": lambda a1, a2, n, v: ratio(a1, a2, n, k=1, x_1=round(v["anchor"] / 10), x_2=round(v["anchor"] / 10)),
    # control: human author, treatment: AI; options "very high" … "very low"; k = 1
    "anthropomorphism": lambda a1, a2, n, v: ratio(rev(a2, n), rev(a1, n), n, k=1),
    "availability_heuristic": lambda a1, a2, n, v: ratio(a1, a2, n),
    # k = -1 if the majority opinion is A, else 1; treatment flipped
    "bandwagon_effect": lambda a1, a2, n, v: ratio(a1, a2, n, k=-1 if v["majority"] == "A" else 1, flip=True),
    "confirmation_bias": lambda a1, a2, n, v: ratio(a1, a2, n, k=1),
    # the code that produced the published dataset: treatment flipped (removed after the release)
    "conservatism": lambda a1, a2, n, v: ratio(a1, a2, n, flip=True),
    # options list "sell the winner" first in both versions; our treatment's winner is B
    "disposition_effect": lambda a1, a2, n, v: ratio(a1, rev(a2, n), n, flip=True),
    "endowment_effect": lambda a1, a2, n, v: ratio(a1, a2, n, k=1),
    "escalation_of_commitment": lambda a1, a2, n, v: ratio(a1, a2, n, k=1),
    # options from the best rating down
    "framing_effect": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n),
    # k = 1 if reason A is dispositional, else -1; our situational reason comes first
    "fundamental_attribution_error": lambda a1, a2, n, v: ratio(a1, a2, n, k=-1),
    # k = 1 for a positive halo, else -1; options "very good" … "very bad"
    "halo_effect": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=1 if v["positive_halo"] else -1),
    # their true change p on -50…+50% is our level - 50; x = round(int(p) / 10) + 5
    "hindsight_bias": lambda a1, a2, n, v: ratio(
        a1, a2, n, k=1, x_1=round(int(v["true_value"] - 50) / 10) + 5, x_2=round(int(v["true_value"] - 50) / 10) + 5
    ),
    # k = -1 if scheme A is the immediate reward, else 1; ours always lists the earlier payout as A
    "hyperbolic_discounting": lambda a1, a2, n, v: ratio(a1, a2, n, k=-1),
    "illusion_of_control": lambda a1, a2, n, v: ratio(a1, a2, n),
    "in_group_bias": lambda a1, a2, n, v: ratio(a1, a2, n),
    # options "certainly want to proceed" / "certainly need information" first; treatment flipped
    "information_bias": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, flip=True),
    # sure option listed as choice A in both versions (k = -1); treatment flipped; our treatment's sure option is B
    "loss_aversion": lambda a1, a2, n, v: ratio(a1, rev(a2, n), n, k=-1, flip=True),
    # options "very likely" … "very unlikely"
    "mental_accounting": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=1),
    # options with the negative aspects first in both versions; treatment flipped
    "negativity_bias": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, flip=True),
    # options "very good" … "very bad"; k = -1
    "not_invented_here": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=-1),
    # k = -1 for a positive event, else 1
    "optimism_bias": lambda a1, a2, n, v: ratio(a1, a2, n, k=-1 if v["event_positive"] else 1),
    "reactance": lambda a1, a2, n, v: ratio(a1, a2, n),
    "risk_compensation": lambda a1, a2, n, v: ratio(a1, a2, n, k=-1),
    # options "to a very large extent" (own factors) first
    "self_serving_bias": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=1),
    # k = 1 if "true" is the desirable answer, else -1; options "true" first
    "social_desirability_bias": lambda a1, a2, n, v: ratio(
        rev(a1, n), rev(a2, n), n, k=1 if v["statement_desirable_if_true"] else -1
    ),
    # options "current … alternative" in both versions; our treatment's status quo is B
    "status_quo_bias": lambda a1, a2, n, v: ratio(a1, rev(a2, n), n, flip=True),
    # options "very likely" … "very unlikely"; k = 1
    "stereotyping": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=1),
    # options "very important" … "very unimportant"; k = 1
    "survivorship_bias": lambda a1, a2, n, v: ratio(rev(a1, n), rev(a2, n), n, k=1),
}

# Planning fallacy keeps its own design on purpose (templates README): x_1 = -u, x_2 = -3 there.
DIFFERENT = {"planning_fallacy"}

# Drawn values that change the parameters, each tried in turn (unlisted biases: the seed-0 draw).
CASES: dict[str, list[dict[str, Any]]] = {
    "anchoring": [{"anchor": 85}, {"anchor": 87}, {"anchor": 15}, {"anchor": 10}, {"anchor": 89}],
    "bandwagon_effect": [{"majority": "A"}, {"majority": "B"}],
    "halo_effect": [{"positive_halo": True}, {"positive_halo": False}],
    "hindsight_bias": [{"true_value": t} for t in range(5, 100, 5)],
    "optimism_bias": [{"event_positive": True}, {"event_positive": False}],
    "social_desirability_bias": [{"statement_desirable_if_true": True}, {"statement_desirable_if_true": False}],
}


def load(slug: str, variant: str | None = None) -> Template:
    return load_template(TEMPLATES_DIR / f"{slug}.yml", variant)


def values_with(template: Template, **given: Any) -> dict[str, Any]:
    """The seed-0 values with some drawn values replaced and the derived ones recomputed."""
    values = template.sample_values(0)
    for spec in template.values:
        if spec.expr is not None:
            values[spec.name] = evaluate(spec.expr, values)
        else:
            values.update({name: given[name] for name in value_names(spec) if name in given})
    assert set(given) <= set(values), f"{template.slug}: unknown values {set(given) - set(values)}"
    return values


def ours(template: Template, values: Values, a_1: int, a_2: int) -> float:
    params = template.metric_params(values)
    n = template.n_options
    return bias_score(a_1, a_2, params["k"], params["x_1"], params["x_2"], n_1=n, n_2=n)


# ---------------------------------------------------------------------------- every answer pair


def test_every_bias_is_compared():
    assert set(AUTHORS) | DIFFERENT == set(BIASES)


@pytest.mark.parametrize("slug", sorted(AUTHORS))
def test_all_answer_pairs_score_as_the_authors_tests(slug: str):
    template = load(slug)
    n = template.n_options
    for given in CASES.get(slug, [{}]):
        values = values_with(template, **given)
        for a_1, a_2 in itertools.product(range(n), repeat=2):
            assert ours(template, values, a_1, a_2) == pytest.approx(AUTHORS[slug](a_1, a_2, n, values), abs=1e-9), (
                slug,
                given,
                a_1,
                a_2,
            )


# ---------------------------------------------------------------------------- hand-made pairs


# (slug, drawn values, control answer, treatment answer, m worked out by hand); answers in our order.
HAND = [
    # anchor 85 -> option 8 (round(8.5) = 8): (|5-8| - |7-8|) / 3 = 2/3; (|0-8| - 0) / 8 = 1
    ("anchoring", {"anchor": 85}, 5, 7, 2 / 3),
    ("anchoring", {"anchor": 85}, 0, 8, 1.0),
    # machine "High" (5), colleague "Somewhat high" (4): -(|5-6| - |4-6|) / 2 = 0.5 (machine more credible)
    ("anthropomorphism", {}, 5, 4, 0.5),
    ("anthropomorphism", {}, 6, 0, 1.0),
    ("availability_heuristic", {}, 3, 5, 0.4),  # -(3 - 5) / 5
    ("availability_heuristic", {}, 0, 10, 1.0),
    # majority A: -(|a1| - |a2 - 6|) / max; (0, 3): -(0 - 3) / 3 = 1; (2, 2): -(2 - 4) / 4 = 0.5
    ("bandwagon_effect", {"majority": "A"}, 0, 3, 1.0),
    ("bandwagon_effect", {"majority": "A"}, 2, 2, 0.5),
    ("bandwagon_effect", {"majority": "A"}, 0, 0, 1.0),
    # majority B: (|a1| - |a2 - 6|) / max; (6, 3): (6 - 3) / 6 = 0.5
    ("bandwagon_effect", {"majority": "B"}, 6, 3, 0.5),
    ("bandwagon_effect", {"majority": "B"}, 6, 6, 1.0),
    ("confirmation_bias", {}, 6, 3, 0.5),  # (6 - 3) / 6
    ("confirmation_bias", {}, 10, 0, 1.0),
    # published dataset: -(|a1| - |a2 - 6|) / max: A, then B (conservative) 0; A both times 1
    ("conservatism", {}, 0, 6, 0.0),
    ("conservatism", {}, 0, 0, 1.0),
    ("conservatism", {}, 1, 4, 0.5),  # -(1 - 2) / 2
    # -(a1 - a2) / max: winner sold outright, then indifferent: 1; (2, 4): 0.5
    ("disposition_effect", {}, 0, 3, 1.0),
    ("disposition_effect", {}, 2, 4, 0.5),
    ("disposition_effect", {}, 0, 6, 1.0),
    ("disposition_effect", {}, 6, 0, -1.0),
    ("endowment_effect", {}, 7, 5, 2 / 7),  # (7 - 5) / 7
    ("endowment_effect", {}, 10, 0, 1.0),
    ("escalation_of_commitment", {}, 6, 4, 1 / 3),  # (6 - 4) / 6
    ("escalation_of_commitment", {}, 10, 0, 1.0),
    # from "very good" (6): -(|5-6| - |2-6|) / 4 = 0.75
    ("framing_effect", {}, 5, 2, 0.75),
    ("framing_effect", {}, 6, 0, 1.0),
    ("fundamental_attribution_error", {}, 2, 4, 0.5),  # -(2 - 4) / 4
    ("fundamental_attribution_error", {}, 0, 6, 1.0),
    # from "very high" (6): positive halo (3, 4): (3 - 2) / 3; negative halo (3, 2): -(3 - 4) / 4
    ("halo_effect", {"positive_halo": True}, 3, 4, 1 / 3),
    ("halo_effect", {"positive_halo": False}, 3, 2, 0.25),
    ("halo_effect", {"positive_halo": True}, 0, 6, 1.0),
    # true value 25% -> their -25% -> round(-2.5) + 5 = 3: (|6-3| - |4-3|) / 3 = 2/3
    ("hindsight_bias", {"true_value": 25}, 6, 4, 2 / 3),
    ("hindsight_bias", {"true_value": 25}, 8, 3, 1.0),
    ("hyperbolic_discounting", {}, 1, 3, 2 / 3),  # -(1 - 3) / 3
    ("hyperbolic_discounting", {}, 0, 6, 1.0),
    ("illusion_of_control", {}, 5, 7, 2 / 7),  # -(5 - 7) / 7
    ("illusion_of_control", {}, 0, 10, 1.0),
    ("in_group_bias", {}, 2, 4, 0.5),  # -(2 - 4) / 4
    ("in_group_bias", {}, 0, 6, 1.0),
    # -(|a1 - 6| - |a2|) / max: (4, 5): -(2 - 5) / 5 = 0.6
    ("information_bias", {}, 4, 5, 0.6),
    ("information_bias", {}, 6, 6, 1.0),
    ("loss_aversion", {}, 1, 4, 0.75),  # -(1 - 4) / 4
    ("loss_aversion", {}, 0, 6, 1.0),
    # from "definitely yes" (6): (|2-6| - |5-6|) / 4 = 0.75
    ("mental_accounting", {}, 2, 5, 0.75),
    ("mental_accounting", {}, 0, 6, 1.0),
    ("negativity_bias", {}, 4, 5, 0.6),  # -(|4-6| - |5|) / 5
    ("negativity_bias", {}, 6, 6, 1.0),
    ("negativity_bias", {}, 3, 3, 0.0),
    # from "very high" (6): -(|5-6| - |3-6|) / 3 = 2/3
    ("not_invented_here", {}, 5, 3, 2 / 3),
    ("not_invented_here", {}, 6, 0, 1.0),
    ("optimism_bias", {"event_positive": True}, 3, 5, 0.4),  # -(3 - 5) / 5
    ("optimism_bias", {"event_positive": False}, 5, 3, 0.4),  # (5 - 3) / 5
    ("optimism_bias", {"event_positive": True}, 0, 10, 1.0),
    ("reactance", {}, 2, 4, 0.5),  # -(2 - 4) / 4
    ("reactance", {}, 0, 10, 1.0),
    ("risk_compensation", {}, 4, 6, 1 / 3),  # -(4 - 6) / 6
    ("risk_compensation", {}, 0, 10, 1.0),
    ("self_serving_bias", {}, 2, 4, 0.5),  # (|2-6| - |4-6|) / 4
    ("self_serving_bias", {}, 0, 6, 1.0),
    ("social_desirability_bias", {"statement_desirable_if_true": True}, 3, 5, 2 / 3),  # (3 - 1) / 3
    ("social_desirability_bias", {"statement_desirable_if_true": False}, 3, 1, 0.4),  # -(3 - 5) / 5
    # "true" desirable: "Definitely false" in private, "Definitely true" in public: (6 - 0) / 6 = 1
    ("social_desirability_bias", {"statement_desirable_if_true": True}, 0, 6, 1.0),
    # -(a1 - a2) / max: status quo kept outright, then indifferent: 1
    ("status_quo_bias", {}, 0, 3, 1.0),
    ("status_quo_bias", {}, 0, 6, 1.0),
    ("status_quo_bias", {}, 3, 3, 0.0),
    ("status_quo_bias", {}, 6, 0, -1.0),
    ("stereotyping", {}, 2, 4, 0.5),  # (|2-6| - |4-6|) / 4
    ("stereotyping", {}, 0, 6, 1.0),
    ("survivorship_bias", {}, 3, 5, 2 / 3),  # (|3-6| - |5-6|) / 3
    ("survivorship_bias", {}, 0, 6, 1.0),
]


def test_hand_made_pairs_cover_every_compared_bias_with_an_intermediate_and_an_extreme_pair():
    for slug in AUTHORS:
        expected = [m for s, _, _, _, m in HAND if s == slug]
        assert any(abs(m) == 1 for m in expected) and any(abs(m) < 1 for m in expected), slug


@pytest.mark.parametrize(("slug", "given", "a_1", "a_2", "expected"), HAND)
def test_hand_made_pairs(slug: str, given: dict[str, Any], a_1: int, a_2: int, expected: float):
    template = load(slug)
    values = values_with(template, **given)
    assert ours(template, values, a_1, a_2) == pytest.approx(expected)
    assert AUTHORS[slug](a_1, a_2, template.n_options, values) == pytest.approx(expected)


# ---------------------------------------------------------------------------- the other readings


def test_conservatism_paper_text_is_the_authors_corrected_metric():
    template = load("conservatism", "paper_text")
    values = values_with(template)
    for a_1, a_2 in itertools.product(range(7), repeat=2):
        # corrected code (after the release): no flip, k = -1, x = 0
        assert ours(template, values, a_1, a_2) == pytest.approx(ratio(a_1, a_2, 7), abs=1e-9)
    assert ours(template, values, 0, 6) == pytest.approx(1.0)  # A first, then B: conservative
    assert ours(template, values, 1, 4) == pytest.approx(0.75)  # -(1 - 4) / 4


def test_anthropomorphism_paper_text_has_the_opposite_sign():
    default, paper = load("anthropomorphism"), load("anthropomorphism", "paper_text")
    values = values_with(default)
    for a_1, a_2 in itertools.product(range(7), repeat=2):
        assert ours(paper, values, a_1, a_2) == pytest.approx(-ours(default, values, a_1, a_2), abs=1e-9)
    # machine "Somewhat high" (4), colleague "Very high" (6): the human is trusted more -> 1
    assert ours(paper, values, 4, 6) == pytest.approx(1.0)


def test_stereotyping_paper_text_keeps_the_four_traits():
    template = load("stereotyping", "paper_text")
    assert template.n_options == 4
    values = values_with(template)
    # atypical "common" trait (1) -> stereotypical "common" trait (2): -(1 - 2) / 2 = 0.5
    assert ours(template, values, 1, 2) == pytest.approx(0.5)


def test_planning_fallacy_differs_from_the_authors_on_purpose():
    template = load("planning_fallacy")
    values = values_with(template, planned=30, overrun=50)  # plan 30% (option 3), evidence 45% (option 5)

    def authors(a_1: int, a_2: int, u: int) -> float:  # x_1 = -u, x_2 = -3, k = 1
        return ratio(a_1, a_2, 11, k=1, x_1=-u, x_2=-3)

    # keeping the plan in both versions is the fallacy for us: (|3-5| - |3-3|) / 2 = 1;
    # the authors' test (overrun 30%, u = 3) scores the unchanged estimate (6 - 6) / 6 = 0
    assert ours(template, values, 3, 3) == pytest.approx(1.0)
    assert authors(3, 3, 3) == pytest.approx(0.0)
    # moving to the evidence: ours (2 - 2) / 2 = 0; the authors' (6 - 8) / 8 = -0.25
    assert ours(template, values, 3, 5) == pytest.approx(0.0)
    assert authors(3, 5, 3) == pytest.approx(-0.25)
