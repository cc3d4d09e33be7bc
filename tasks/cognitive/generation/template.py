"""Template files of cognitive-bias tests (`tasks/cognitive/templates/<bias_slug>.yml`): loading,
validation and rendering.

A template holds a control and a treatment side (situation, prompt, options) with two kinds of
gaps: `[[instruction]]`, filled by the generator model (the instruction text is the gap's
identity, so a gap repeated anywhere in the test is filled once), and `{{name}}`, filled from
the seeded custom values of the `values:` section. `checks:` names the verifiable instructions
of gaps, `metric:` gives k, x_1, x_2 as numbers or expressions of the values (and `n_options`).
`variants:` names alternative readings of the test (e.g. `paper_text`), each replacing some of
these top-level keys; `load_template(path, variant=...)` applies one. The format is documented in
`tasks/cognitive/templates/README.md`. Every error names the file and the key at fault.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from biasmonkey.tasks.cognitive.data import BIASES, bias_slug
from biasmonkey.tasks.cognitive.generation.checks import Check, parse_check
from biasmonkey.tasks.cognitive.generation.expressions import ExpressionError, compile_expression, evaluate
from biasmonkey.tasks.cognitive.generation.values import OPTION_PRESETS, VALUE_GENERATORS
from biasmonkey.tasks.cognitive.prompts import SIDES, option_lines
from biasmonkey.tasks.fetch import DataError

GAP = re.compile(r"\[\[(.+?)\]\]")  # [[instruction]]
VALUE = re.compile(r"\{\{\s*(\w+)\s*\}\}")  # {{name}}
TEMPLATE_SUFFIX = ".yml"  # not .yaml: lm-eval's --include_path scan reads every *.yaml as a task

TOP_KEYS = {"bias", "design", "control", "treatment", "values", "checks", "metric", "variants"}
VARIANT_KEYS = TOP_KEYS - {"bias", "variants"}  # what a variant may replace
REQUIRED_KEYS = ("bias", "control", "treatment", "metric")
SIDE_KEYS = ("situation", "prompt", "options")
METRIC_KEYS = ("k", "x_1", "x_2")
N_OPTIONS = "n_options"  # a name every expression may use


class TemplateError(DataError):
    """A template file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Side:
    """The control or treatment template: texts that may contain gaps."""

    situation: str
    prompt: str
    options: tuple[str, ...]

    def texts(self) -> tuple[str, ...]:
        return (self.situation, self.prompt, *self.options)


@dataclass(frozen=True)
class ValueSpec:
    """One entry of `values:`: a generator call, or an expression of earlier values."""

    name: str
    generator: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    expr: ast.Expression | None = None


@dataclass(frozen=True)
class Template:
    path: Path
    bias: str  # the published bias name, e.g. "Anchoring"
    slug: str  # the task suffix, e.g. "anchoring"
    design: str
    control: Side
    treatment: Side
    values: tuple[ValueSpec, ...]
    checks: Mapping[str, tuple[Check, ...]]  # gap instruction -> checks of its insertion
    metric: Mapping[str, float | ast.Expression]  # k, x_1, x_2
    variant: str | None = None  # the variant applied, None for the file's default reading
    variants: tuple[str, ...] = ()  # the variants the file offers

    @property
    def n_options(self) -> int:
        return len(self.control.options)

    def side(self, name: str) -> Side:
        return {"control": self.control, "treatment": self.treatment}[name]

    def gaps(self, side: str) -> list[str]:
        """The `[[instruction]]` gaps of a side, each once, in order of appearance."""
        found: dict[str, None] = {}
        for text in self.side(side).texts():
            found.update(dict.fromkeys(GAP.findall(text)))
        return list(found)

    def sample_values(self, seed: int) -> dict[str, Any]:
        """The custom values of one test: the same seed always gives the same values."""
        rng = random.Random(f"{seed}:{self.slug}")
        values: dict[str, Any] = {N_OPTIONS: self.n_options}
        for spec in self.values:
            key = f"values.{spec.name}"
            try:
                if spec.expr is not None:
                    values[spec.name] = evaluate(spec.expr, values)
                else:
                    values.update(_generated(spec, VALUE_GENERATORS[spec.generator](rng, **dict(spec.params))))  # type: ignore[index]
            except (ExpressionError, TypeError, ValueError) as err:
                raise TemplateError(f"{self.path}: {key}: {err}") from None
        return values

    def metric_params(self, values: Mapping[str, Any]) -> dict[str, int | float]:
        """k, x_1, x_2 for the given values; x as int when whole (as the published rows)."""
        params: dict[str, int | float] = {}
        for key, spec in self.metric.items():
            try:
                value = evaluate(spec, values) if isinstance(spec, ast.Expression) else spec
            except ExpressionError as err:
                raise TemplateError(f"{self.path}: metric.{key}: {err}") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TemplateError(f"{self.path}: metric.{key}: {value!r} is not a number")
            params[key] = int(value) if float(value).is_integer() else float(value)
        return params

    def render(self, side: str, values: Mapping[str, Any], insertions: Mapping[str, str] | None = None) -> str:
        """The side as a test text: `{{name}}` filled from values, `[[instruction]]` from
        insertions (gaps without an insertion stay as they are, for the generator's prompt)."""
        insertions = insertions or {}

        def fill(text: str) -> str:
            text = VALUE.sub(lambda m: format_value(values[m.group(1)]), text)
            return GAP.sub(lambda m: insertions.get(m.group(1), m.group(0)), text)

        s = self.side(side)
        return (
            f"Situation:\n{fill(s.situation).strip()}\n\nPrompt:\n{fill(s.prompt).strip()}\n\n"
            f"Answer Options:\n{option_lines([fill(o).strip() for o in s.options])}\n"
        )


def format_value(value: Any) -> str:
    """A value as inserted into a text: str(), with whole floats printed without decimals."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------------------- loading


def _fail(path: Path, key: str, problem: str) -> TemplateError:
    return TemplateError(f"{path}: {key}: {problem}")


def _side(path: Path, name: str, raw: Any) -> Side:
    if not isinstance(raw, Mapping):
        raise _fail(path, name, f"must be a mapping with {', '.join(SIDE_KEYS)}")
    unknown = sorted(set(raw) - set(SIDE_KEYS))
    if unknown:
        raise _fail(path, name, f"unknown key(s) {unknown}; allowed: {', '.join(SIDE_KEYS)}")
    for key in SIDE_KEYS:
        if key not in raw:
            raise _fail(path, f"{name}.{key}", "missing")
    for key in ("situation", "prompt"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise _fail(path, f"{name}.{key}", "must be a non-empty text")
    options = raw["options"]
    if isinstance(options, str):
        if options not in OPTION_PRESETS:
            raise _fail(path, f"{name}.options", f"unknown preset {options!r}; known: {', '.join(OPTION_PRESETS)}")
        options = OPTION_PRESETS[options]
    elif not (
        isinstance(options, list) and len(options) >= 2 and all(isinstance(o, (str, int, float)) for o in options)
    ):
        raise _fail(path, f"{name}.options", "must be a preset name or a list of at least two option texts")
    return Side(raw["situation"], raw["prompt"], tuple(str(o) for o in options))


def _values(path: Path, raw: Any) -> tuple[ValueSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise _fail(path, "values", "must be a mapping of value names to {generator: …} or {expr: …}")
    specs: list[ValueSpec] = []
    known = {N_OPTIONS}
    for name, entry in raw.items():
        key = f"values.{name}"
        if not (isinstance(name, str) and name.isidentifier()) or name == N_OPTIONS:
            raise _fail(path, key, "a value name must be an identifier other than n_options")
        if not isinstance(entry, Mapping) or ("generator" in entry) == ("expr" in entry):
            raise _fail(path, key, "must be a mapping with either `generator` (and its parameters) or `expr`")
        if "expr" in entry:
            if len(entry) != 1:
                raise _fail(path, key, f"an `expr` value takes no other keys, got {sorted(entry)}")
            try:
                specs.append(ValueSpec(name, expr=compile_expression(str(entry["expr"]), known)))
            except ExpressionError as err:
                raise _fail(path, key, str(err)) from None
        else:
            generator = entry["generator"]
            if generator not in VALUE_GENERATORS:
                raise _fail(path, key, f"unknown generator {generator!r}; known: {', '.join(VALUE_GENERATORS)}")
            params = tuple((k, v) for k, v in entry.items() if k != "generator")
            specs.append(ValueSpec(name, generator=generator, params=params))
        known.update(value_names(specs[-1]))
    return tuple(specs)


def value_names(spec: ValueSpec) -> tuple[str, ...]:
    """The values one entry defines: its name, or `<name>_<field>` for a generator with `fields`."""
    fields = getattr(VALUE_GENERATORS.get(spec.generator or ""), "fields", None)
    return tuple(f"{spec.name}_{f}" for f in fields) if fields else (spec.name,)


def _generated(spec: ValueSpec, result: Any) -> dict[str, Any]:
    """A generator's draw as named values; a generator with `fields` returns a dict of them."""
    names = value_names(spec)
    if names == (spec.name,):
        return {spec.name: result}
    fields = VALUE_GENERATORS[spec.generator].fields  # type: ignore[index]
    if not isinstance(result, Mapping) or set(result) != set(fields):
        raise ValueError(
            f"generator {spec.generator!r} must return a dict with the keys {list(fields)}, got {result!r}"
        )
    return {f"{spec.name}_{f}": result[f] for f in fields}


def _metric(path: Path, raw: Any, names: set[str]) -> dict[str, float | ast.Expression]:
    if not isinstance(raw, Mapping) or set(raw) != set(METRIC_KEYS):
        found = sorted(raw) if isinstance(raw, Mapping) else raw
        raise _fail(path, "metric", f"must have exactly the keys k, x_1, x_2, got {found!r}")
    metric: dict[str, float | ast.Expression] = {}
    for key in METRIC_KEYS:
        value = raw[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            metric[key] = value
        else:
            try:
                metric[key] = compile_expression(str(value), names)
            except ExpressionError as err:
                raise _fail(path, f"metric.{key}", str(err)) from None
    return metric


def _checks(path: Path, raw: Any, gaps: set[str]) -> dict[str, tuple[Check, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(path, "checks", "must be a mapping of gap instructions to lists of checks")
    checks: dict[str, tuple[Check, ...]] = {}
    for instruction, specs in raw.items():
        key = f"checks[{instruction!r}]"
        if instruction not in gaps:
            raise _fail(path, key, "is not the instruction of any [[gap]] in the template")
        specs = [specs] if isinstance(specs, str) else specs
        if not isinstance(specs, list) or not specs:
            raise _fail(path, key, "must be a check name or a non-empty list of them")
        try:
            checks[instruction] = tuple(parse_check(spec) for spec in specs)
        except ValueError as err:
            raise _fail(path, key, str(err)) from None
    return checks


def _variants(path: Path, raw: Any) -> dict[str, Mapping[str, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(path, "variants", "must be a mapping of variant names to mappings of top-level keys")
    for name, entry in raw.items():
        if not (isinstance(name, str) and name.isidentifier()):
            raise _fail(path, f"variants.{name}", "a variant name must be an identifier")
        if not isinstance(entry, Mapping) or not entry:
            raise _fail(
                path, f"variants.{name}", f"must be a non-empty mapping of any of {', '.join(sorted(VARIANT_KEYS))}"
            )
        unknown = sorted(set(entry) - VARIANT_KEYS)
        if unknown:
            raise _fail(
                path,
                f"variants.{name}",
                f"unknown key(s) {unknown}; a variant may replace {', '.join(sorted(VARIANT_KEYS))}",
            )
    return dict(raw)


def load_template(path: str | Path, variant: str | None = None) -> Template:
    """Parse and validate one template file. With `variant`, the keys that variant gives replace
    the file's own (a file without that variant keeps its default reading). Every variant of the
    file is validated either way."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise TemplateError(f"{path}: cannot be read as YAML ({err})") from None
    if not isinstance(raw, Mapping):
        raise TemplateError(f"{path}: must be a YAML mapping with the keys {', '.join(REQUIRED_KEYS)}")
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise _fail(path, ", ".join(unknown), f"unknown key(s); allowed: {', '.join(sorted(TOP_KEYS))}")
    variants = _variants(path, raw.get("variants"))
    names = tuple(variants)
    built = {name: _build(path, {**raw, **entry}, name, names) for name, entry in variants.items()}
    default = _build(path, raw, None, names)
    return built.get(variant, default)


def _build(path: Path, raw: Mapping[str, Any], variant: str | None, variants: tuple[str, ...]) -> Template:
    """A template from the file's top-level keys (a variant's keys already merged in)."""
    where = path if variant is None else Path(f"{path} [variant {variant}]")
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise _fail(where, key, "missing")
    slug = bias_slug(str(raw["bias"]))
    if slug is None:
        raise _fail(where, "bias", f"unknown bias {raw['bias']!r}; expected one of {', '.join(BIASES.values())}")
    control, treatment = (_side(where, side, raw[side]) for side in SIDES)
    if len(control.options) != len(treatment.options):
        raise _fail(
            where, "treatment.options", f"has {len(treatment.options)} options, control has {len(control.options)}"
        )
    values = _values(where, raw.get("values"))
    names = {N_OPTIONS, *(name for spec in values for name in value_names(spec))}
    for side_name, side in (("control", control), ("treatment", treatment)):
        for text in side.texts():
            for name in VALUE.findall(text):
                if name not in names:
                    raise _fail(where, side_name, f"{{{{{name}}}}} is not declared under `values`")
    gaps = {gap for side in (control, treatment) for text in side.texts() for gap in GAP.findall(text)}
    for gap in gaps:
        if VALUE.search(gap):
            raise _fail(where, f"[[{gap}]]", "a gap instruction cannot contain a {{value}} (it is the gap's identity)")
    template = Template(
        path=path,
        bias=BIASES[slug],
        slug=slug,
        design=str(raw.get("design") or "").strip(),
        control=control,
        treatment=treatment,
        values=values,
        checks=_checks(where, raw.get("checks"), gaps),
        metric=_metric(where, raw["metric"], names),
        variant=variant,
        variants=variants,
    )
    # Sample once: wrong generator parameters or failing expressions show up now, not mid-run.
    template.metric_params(template.sample_values(0))
    return template


def template_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly, and every `*.yml` of the folders named, sorted."""
    files: list[Path] = []
    for entry in map(Path, paths):
        if entry.is_dir():
            found = sorted(entry.glob(f"*{TEMPLATE_SUFFIX}"))
            if not found:
                raise TemplateError(f"{entry}: no *{TEMPLATE_SUFFIX} template files in this folder")
            files += found
        elif entry.is_file():
            files.append(entry)
        else:
            raise TemplateError(f"{entry}: no such template file or folder")
    return files


def load_templates(
    paths: Iterable[str | Path], biases: Iterable[str] | None = None, variant: str | None = None
) -> dict[str, Template]:
    """Templates by bias slug, from files and folders; `biases` (names or slugs) selects some.
    `variant` (e.g. "paper_text") applies that variant to every template that offers it; it is an
    error if none of the selected templates does."""
    templates: dict[str, Template] = {}
    for file in template_files(paths):
        template = load_template(file, variant)
        if template.slug in templates:
            raise _fail(file, "bias", f"{template.bias!r} is also the bias of {templates[template.slug].path}")
        templates[template.slug] = template
    selected = templates
    if biases is not None:
        selected = {}
        for name in biases:
            slug = bias_slug(name)
            if slug is None or slug not in templates:
                raise TemplateError(
                    f"no template for the bias {name!r}; the templates given cover: {', '.join(templates) or 'none'}"
                )
            selected[slug] = templates[slug]
    if variant is not None and not any(t.variant == variant for t in selected.values()):
        offered = sorted({v for t in selected.values() for v in t.variants})
        raise TemplateError(
            f"no template given offers the variant {variant!r}; offered: {', '.join(offered) or 'none'}"
        )
    return selected
