"""The 30 cognitive-bias test templates (tasks/cognitive/templates/*.yml): files, keys, gaps,
value generators, metric parameters, rendering into the published layout, and the sign of m for
hand-worked biased answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

import biasmonkey.tasks.cognitive as cognitive_package
from biasmonkey.metrics.cognitive import bias_score
from biasmonkey.tasks.cognitive.data import BIASES, bias_slug, parse_question, parse_rows
from biasmonkey.tasks.cognitive.generation.checks import CHECKS
from biasmonkey.tasks.cognitive.generation.template import Template, load_template, load_templates
from biasmonkey.tasks.cognitive.generation.values import OPTION_PRESETS, VALUE_GENERATORS

TEMPLATES_DIR = Path(cognitive_package.__file__).resolve().parent / "templates"
FILES = sorted(TEMPLATES_DIR.glob("*.yml"))
SLUGS = sorted(BIASES)
SEEDS = range(25)
GAP = re.compile(r"\[\[(.+?)\]\]")
VALUE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
# The opening every template shares, filled by the generator model.
ROLE_GAP = "your job title in the scenario, with its article"


def raw(slug: str) -> dict:
    return yaml.safe_load((TEMPLATES_DIR / f"{slug}.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    return load_templates([TEMPLATES_DIR])


def side_texts(side: dict) -> list[str]:
    options = side["options"]
    options = OPTION_PRESETS[options] if isinstance(options, str) else options
    return [side["situation"], side["prompt"], *map(str, options)]


def option_count(side: dict) -> int:
    options = side["options"]
    return len(OPTION_PRESETS[options] if isinstance(options, str) else options)


# ---------------------------------------------------------------------------- the files


def test_one_file_per_bias_named_by_its_slug():
    assert [f.stem for f in FILES] == SLUGS  # exactly the 30 biases, nothing else
    for slug in SLUGS:
        data = raw(slug)
        assert {"bias", "design", "control", "treatment", "metric"} <= set(data), slug
        assert data["bias"] in BIASES.values(), slug
        assert bias_slug(data["bias"]) == slug
        assert len(data["design"].split()) >= 30, f"{slug}: the design paragraph is missing or too short"
        assert set(data["metric"]) == {"k", "x_1", "x_2"}, slug


@pytest.mark.parametrize("slug", SLUGS)
def test_names_are_declared_and_known(slug: str):
    data = raw(slug)
    declared = {"n_options"}
    for name, spec in (data.get("values") or {}).items():
        if "generator" in spec:
            generator = VALUE_GENERATORS[spec["generator"]]  # KeyError = unknown generator
            fields = getattr(generator, "fields", None)
            declared |= {f"{name}_{field}" for field in fields} if fields else {name}
        else:
            declared.add(name)
    for side in ("control", "treatment"):
        options = data[side]["options"]
        assert isinstance(options, list) or options in OPTION_PRESETS, f"{slug}: unknown preset {options!r}"
        for text in side_texts(data[side]):
            assert set(VALUE.findall(text)) <= declared, f"{slug}/{side}: undeclared value in {text!r}"
    assert option_count(data["control"]) == option_count(data["treatment"]), slug
    gaps = {gap for side in ("control", "treatment") for text in side_texts(data[side]) for gap in GAP.findall(text)}
    for instruction, checks in (data.get("checks") or {}).items():
        assert instruction in gaps, f"{slug}: check for a gap that does not exist: {instruction!r}"
        for check in checks:
            assert check.partition(":")[0] in CHECKS, f"{slug}: unknown check {check!r}"
    # the role gap is shared, so control and treatment describe the same person
    assert all(ROLE_GAP in GAP.findall(data[side]["situation"]) for side in ("control", "treatment")), slug


def test_the_loader_accepts_all_30(templates: dict[str, Template]):
    assert sorted(templates) == SLUGS
    assert {t.bias for t in templates.values()} == set(BIASES.values())


# ---------------------------------------------------------------------------- values and metric


@pytest.mark.parametrize("slug", SLUGS)
def test_values_are_seeded_and_metric_params_valid(templates: dict[str, Template], slug: str):
    template = templates[slug]
    n = template.n_options
    drawn = []
    for seed in SEEDS:
        values = template.sample_values(seed)
        assert values == template.sample_values(seed)  # same seed, same values
        params = template.metric_params(values)
        assert params["k"] in (-1, 1)
        for x in ("x_1", "x_2"):
            assert isinstance(params[x], int) and 0 <= params[x] <= n - 1, (slug, seed, params)
        drawn.append(values)
    if raw(slug).get("values"):  # a design that randomises must vary across seeds
        assert len({json.dumps(v, sort_keys=True) for v in drawn}) > 1, slug


@pytest.mark.parametrize("slug", SLUGS)
def test_rendered_sides_parse_into_the_published_layout(templates: dict[str, Template], slug: str):
    template = templates[slug]
    values = template.sample_values(7)
    gaps = dict.fromkeys(template.gaps("control") + template.gaps("treatment"))
    insertions = {gap: f"inserted text {i}" for i, gap in enumerate(gaps)}
    texts = {side: template.render(side, values, insertions) for side in ("control", "treatment")}
    for side, text in texts.items():
        assert "[[" not in text and "{{" not in text, f"{slug}/{side}: a gap was left unfilled"
        assert text.startswith("Situation:\n") and "\n\nPrompt:\n" in text and "\n\nAnswer Options:\nOption 1: " in text
        question = parse_question(text, f"{slug}/{side}")
        assert len(question.options) == template.n_options
        assert all(option.strip() for option in question.options)
    assert texts["control"] != texts["treatment"], f"{slug}: control and treatment render identically"
    # the published schema: a row per test that the cognitive tasks' loader validates
    params = template.metric_params(values)
    row = {"bias": template.bias, "scenario": "dummy scenario", **texts, "metric_params": json.dumps(params)}
    (test,) = parse_rows(pd.DataFrame([row]), "rendered")
    assert (test.bias, test.k, test.x_1, test.x_2) == (slug, params["k"], params["x_1"], params["x_2"])


def seed_where(template: Template, **wanted) -> dict:
    """The values of the first seed whose draw has the wanted values (for hand-worked examples)."""
    for seed in range(5000):
        values = template.sample_values(seed)
        if all(values[key] == value for key, value in wanted.items()):
            return values
    raise AssertionError(f"no seed in 0..4999 draws {wanted}")


def m(template: Template, values: dict, a_1: int, a_2: int) -> float:
    params = template.metric_params(values)
    n = template.n_options
    return bias_score(a_1, a_2, params["k"], params["x_1"], params["x_2"], n_1=n, n_2=n)


def test_anchoring_sign(templates: dict[str, Template]):
    template = templates["anchoring"]
    values = seed_where(template, anchor=87)
    assert template.metric_params(values) == {"k": 1, "x_1": 9, "x_2": 9}  # 87% -> nearest option 90% (index 9)
    # control 50% (a_1 = 5), treatment pulled to 80% (a_2 = 8):
    # m = 1 * (|5 - 9| - |8 - 9|) / max(4, 1) = (4 - 1) / 4 = 0.75
    assert m(template, values, 5, 8) == pytest.approx(0.75)
    # moving away from the anchor is the opposite sign: m(5, 2) = (4 - 7) / 7 = -3/7
    assert m(template, values, 5, 2) == pytest.approx(-3 / 7)
    # 85% is a half: rounded to the even option 8, as the authors' round(anchor / 10)
    assert template.metric_params(seed_where(template, anchor=85))["x_1"] == 8


def test_framing_sign(templates: dict[str, Template]):
    template = templates["framing_effect"]
    values = template.sample_values(0)
    assert values["good_share"] + values["bad_share"] == 100  # the same fact, framed two ways
    assert f"{values['good_share']}% of" in template.render("control", values)
    assert f"{values['bad_share']}% of" in template.render("treatment", values)
    # positive frame "Good" (a_1 = 5), negative frame "Somewhat poor" (a_2 = 2), x = 6 ("Very good"), k = -1:
    # m = -1 * (|5 - 6| - |2 - 6|) / max(1, 4) = 3 / 4 = 0.75
    assert m(template, values, 5, 2) == pytest.approx(0.75)
    assert m(template, values, 2, 5) == pytest.approx(-0.75)


def test_status_quo_sign(templates: dict[str, Template]):
    template = templates["status_quo_bias"]
    values = template.sample_values(0)
    # x_1 = x_2 = 0, k = -1 (the authors'). Status quo A in control (a_1 = 0), status quo B in treatment (a_2 = 6):
    # m = -1 * (|0 - 0| - |6 - 0|) / max(0, 6) = 6 / 6 = 1
    assert m(template, values, 0, 6) == pytest.approx(1.0)
    # the same content both times (A, A): -(0 - 0) / 1e-8 = 0 -- no bias
    assert m(template, values, 0, 0) == 0.0
    # always the alternative to the status quo: -(6 - 0) / 6 = -1
    assert m(template, values, 6, 0) == pytest.approx(-1.0)
    # indifferent both times: -(3 - 3) / 3 = 0
    assert m(template, values, 3, 3) == 0.0
    # status quo kept outright in the control, indifferent in the treatment: -(0 - 3) / 3 = 1
    assert m(template, values, 0, 3) == pytest.approx(1.0)


def test_planning_fallacy_sign(templates: dict[str, Template]):
    template = templates["planning_fallacy"]
    values = seed_where(template, planned=30, overrun=50)
    # plan 30% -> option 3; evidence 30% * 1.5 = 45% -> option 5 (half rounded up)
    assert template.metric_params(values) == {"k": 1, "x_1": 5, "x_2": 3}
    # keeping the plan in both (3, 3): (|3 - 5| - |3 - 3|) / 2 = 1
    assert m(template, values, 3, 3) == pytest.approx(1.0)
    # following the evidence in the treatment (3, 5): (2 - 2) / 2 = 0
    assert m(template, values, 3, 5) == 0.0
    # half-way (3, 4): (2 - 1) / 2 = 0.5
    assert m(template, values, 3, 4) == pytest.approx(0.5)


@pytest.mark.parametrize(("majority", "k", "end"), [("A", -1, 0), ("B", 1, 6)])
def test_bandwagon_follows_the_majority_label(templates: dict[str, Template], majority: str, k: int, end: int):
    template = templates["bandwagon_effect"]
    values = seed_where(template, majority=majority)
    assert template.metric_params(values) == {"k": k, "x_1": 0, "x_2": 6}
    # `end` is the end of the scale that says "strongly prefer <majority>".
    # The majority label both times although the opinions swapped labels:
    # A: -1 * (|0 - 0| - |0 - 6|) / 6 = 1; B: 1 * (|6 - 0| - |6 - 6|) / 6 = 1
    assert m(template, values, end, end) == pytest.approx(1.0)
    # following the content (the label switches): (0 - 0) or (6 - 6) over 1e-8 = 0
    assert m(template, values, end, 6 - end) == 0.0


@pytest.mark.parametrize(
    ("slug", "flag", "value", "k", "x"),
    [
        ("halo_effect", "positive_halo", True, 1, 6),
        ("halo_effect", "positive_halo", False, -1, 6),
        ("optimism_bias", "event_positive", True, -1, 0),
        ("optimism_bias", "event_positive", False, 1, 0),
        ("social_desirability_bias", "statement_desirable_if_true", True, 1, 6),
        ("social_desirability_bias", "statement_desirable_if_true", False, -1, 6),
    ],
)
def test_k_follows_the_drawn_direction(
    templates: dict[str, Template], slug: str, flag: str, value: bool, k: int, x: int
):
    template = templates[slug]
    values = seed_where(template, **{flag: value})
    assert template.metric_params(values) == {"k": k, "x_1": x, "x_2": x}
    # a shift from the middle (a_1 = 3) one step towards the predicted side, "up" when the
    # predicted side is the top of the scale (k = -1 from the bottom x = 0, k = 1 from the top x = 6):
    # from the bottom: up -1 * (3 - 4) / 4 = 0.25, down 1 * (3 - 2) / 3 = 1/3;
    # from the top: up 1 * (3 - 2) / 3 = 1/3, down -1 * (3 - 4) / 4 = 0.25
    up = (k == -1) == (x == 0)
    expected = (0.25 if x == 0 else 1 / 3) if up else (1 / 3 if x == 0 else 0.25)
    assert m(template, values, 3, 4 if up else 2) == pytest.approx(expected)


def test_stereotyping_likelihood_of_one_stereotypical_trait(templates: dict[str, Template]):
    template = templates["stereotyping"]  # the authors' code: one trait, a 7-point likelihood scale
    values = seed_where(template, group_group="Germans")
    control = template.render("control", values, {g: "x" for g in template.gaps("control")})
    assert '"Keeping meticulous filing systems at home"' in control and "Germans" not in control
    assert "The group consists of Germans." in template.render("treatment", values)
    # "Neither likely nor unlikely" (3) -> "Likely" (5), k = 1, x = 6 ("Very likely"):
    # m = (|3 - 6| - |5 - 6|) / max(3, 1) = 2 / 3
    assert m(template, values, 3, 5) == pytest.approx(2 / 3)


def test_stereotyping_paper_text_variant_orders_atypical_before_stereotypical():
    template = load_template(TEMPLATES_DIR / "stereotyping.yml", "paper_text")
    assert template.variant == "paper_text" and template.n_options == 4
    values = seed_where(template, group_group="Germans")
    control = parse_question(template.render("control", values, {g: "x" for g in template.gaps("control")}), "c")
    assert control.options == (
        "Routinely arriving late to appointments",
        "Being relaxed about deadlines",
        "Being punctual",
        "Keeping meticulous filing systems at home",
    )
    treatment = template.render("treatment", values, {g: "x" for g in template.gaps("treatment")})
    assert "The group consists of Germans." in treatment and "Germans" not in template.render("control", values)
    # atypical "Being relaxed about deadlines" (a_1 = 1) -> stereotype "Being punctual" (a_2 = 2), k = -1, x = 0:
    # m = -1 * (1 - 2) / 2 = 0.5
    assert m(template, values, 1, 2) == pytest.approx(0.5)


def test_a_bad_template_is_refused_with_file_and_key(tmp_path: Path):
    broken = raw("anchoring")
    broken["treatment"]["options"] = "likert7_agree"  # 7 options against control's 11
    path = tmp_path / "anchoring.yml"
    path.write_text(yaml.safe_dump(broken))
    with pytest.raises(Exception, match=r"anchoring\.yml: treatment\.options"):
        load_template(path)


def test_the_readme_example_for_a_new_domain_loads(tmp_path: Path):
    readme = (TEMPLATES_DIR / "README.md").read_text(encoding="utf-8")
    example = readme.split("A status quo\ntest for clinicians:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "status_quo_bias.yml"
    path.write_text(example, encoding="utf-8")
    template = load_template(path)
    values = template.sample_values(0)
    assert template.metric_params(values) == {"k": -1, "x_1": 0, "x_2": 0}
    # current plan both times: A in control (0), B in treatment (6): -1 * (|0 - 0| - |6 - 0|) / 6 = 1
    assert m(template, values, 0, 6) == pytest.approx(1.0)


# ---------------------------------------------------------------------------- variants


def test_a_variant_replaces_top_level_keys_and_is_validated(tmp_path: Path):
    data = raw("anchoring")
    data["variants"] = {"paper_text": {"metric": {"k": -1, "x_1": 0, "x_2": 0}}}
    path = tmp_path / "anchoring.yml"
    path.write_text(yaml.safe_dump(data))
    values = load_template(path).sample_values(0)
    assert load_template(path).variant is None and load_template(path).metric_params(values)["k"] == 1
    variant = load_template(path, "paper_text")
    assert variant.variant == "paper_text" and variant.variants == ("paper_text",)
    assert variant.metric_params(values) == {"k": -1, "x_1": 0, "x_2": 0}
    assert variant.control == load_template(path).control  # keys the variant does not give stay
    assert load_template(path, "other").variant is None  # a variant the file lacks: the default reading
    data["variants"] = {"paper_text": {"bias": "Framing Effect"}}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(Exception, match=r"anchoring\.yml: variants\.paper_text: unknown key"):
        load_template(path)
    data["variants"] = {"paper_text": {"metric": {"k": "undeclared_name", "x_1": 0, "x_2": 0}}}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(Exception, match=r"anchoring\.yml \[variant paper_text\]: metric\.k"):
        load_template(path)  # checked even when the default is asked for


def test_load_templates_applies_a_variant_where_offered():
    loaded = load_templates([TEMPLATES_DIR], variant="paper_text")
    assert {slug for slug, t in loaded.items() if t.variant == "paper_text"} == {
        "anthropomorphism",
        "conservatism",
        "stereotyping",
    }
    assert loaded["anchoring"].variant is None and len(loaded) == 30
    with pytest.raises(Exception, match="no template given offers the variant 'nope'"):
        load_templates([TEMPLATES_DIR], variant="nope")
    with pytest.raises(Exception, match="offers the variant 'paper_text'"):
        load_templates([TEMPLATES_DIR], ["anchoring"], variant="paper_text")
