"""`biasmonkey generate`: new cognitive-bias tests from templates and scenarios, with any Inspect
model as the generator (`openai/gpt-4o`, `hf/<folder>`, `mockllm/model`, …).

The core (`biasmonkey.tasks.cognitive.generation.generate`) knows nothing of Inspect; this
module turns an Inspect model into its `ask(Request) -> str`. Each call asks for a JSON object
with structured output (`GenerateConfig.response_schema`: an object whose keys are the gap
instructions, all required, string values). Providers that support it (OpenAI, Anthropic,
Google, Mistral, Groq, Grok, …) then return valid JSON; the others (e.g. `hf/`, `mockllm`)
ignore the schema and the core reads the first JSON object of the plain text. Either way the
reply is validated and retried by the core.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping
from typing import Any

from biasmonkey.harness_ext.app.run_checks import non_negative_int, positive_int
from biasmonkey.tasks.cognitive.generation.generate import DEFAULT_MAX_RETRIES, PUBLISHED_SCENARIOS, Ask, Request

DEFAULT_TEMPERATURE = 0.7  # the paper's generator temperature
DEFAULT_MAX_TOKENS = 1024
SCHEMA_NAME = "gap_insertions"


def default_templates_dir() -> str:
    """The installed templates folder, `biasmonkey/tasks/cognitive/templates/`."""
    from importlib.resources import files

    return str(files("biasmonkey.tasks.cognitive") / "templates")


def response_schema(keys: tuple[str, ...]) -> Any:
    """The structured-output schema of one request: every gap instruction a required text."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    return ResponseSchema(
        name=SCHEMA_NAME,
        description="The text to insert into each gap of the test, keyed by the gap's instruction.",
        json_schema=JSONSchema(
            type="object",
            properties={key: JSONSchema(type="string") for key in keys},
            required=list(keys),
            additionalProperties=False,
        ),
        strict=True,  # the schema meets strict mode's rules (all keys required, no others)
    )


def inspect_asker(
    model: Any,
    temperature: float | None = DEFAULT_TEMPERATURE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    structured: bool = True,
    model_args: Mapping[str, Any] | None = None,
) -> Ask:
    """An `ask` for the generation core from an Inspect model or model name. Each request's seed
    is passed as `GenerateConfig.seed` (providers without per-call seeds ignore it)."""
    from inspect_ai.model import GenerateConfig, get_model

    try:
        generator = get_model(model, **dict(model_args or {})) if isinstance(model, str) else model
    except TypeError as err:  # an -M argument the provider's model does not take
        raise ValueError(f"--model {model}: {err}; check the -M arguments") from None

    async def ask(request: Request) -> str:
        config = GenerateConfig(
            temperature=temperature,
            max_tokens=max_tokens,
            seed=request.seed,
            response_schema=response_schema(request.keys) if structured else None,
        )
        try:
            output = await generator.generate(request.prompt, config=config)
        except Exception as err:  # the model's own failure, not a rejected reply: the run stops, naming it
            raise RuntimeError(f"the generator model {generator} failed: {type(err).__name__}: {err}") from err
        if output.error:
            raise RuntimeError(f"the generator model {generator} failed: {output.error}")
        return output.completion

    return ask


def _model_arg(text: str) -> tuple[str, Any]:
    """`-M key=value` as Inspect's CLI reads it: the value as YAML (numbers, booleans) or text."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), yaml.safe_load(value)


def cmd_generate(args: argparse.Namespace) -> int:
    from biasmonkey.tasks.cognitive.generation.generate import (
        generate_tests,
        output_paths,
        read_scenarios,
        report_markdown,
    )
    from biasmonkey.tasks.cognitive.generation.template import load_templates

    biases = [b.strip() for b in args.biases.split(",") if b.strip()] if args.biases else None
    sources = args.templates or [default_templates_dir()]
    templates = load_templates(sources, biases)
    if args.template_variant is not None:
        offered = sorted({v for t in templates.values() for v in t.variants})
        if args.template_variant not in offered:
            raise ValueError(
                f"--template-variant: unknown variant {args.template_variant!r}; "
                f"the templates given offer: {', '.join(offered) or 'none'}"
            )
        templates = load_templates(sources, biases, variant=args.template_variant)
    scenarios = read_scenarios(args.scenarios)[: args.limit_scenarios]
    ask = inspect_asker(
        args.model, args.temperature, args.max_tokens, not args.no_structured_output, dict(args.model_arg)
    )
    report = asyncio.run(
        generate_tests(
            templates,
            scenarios,
            ask,
            args.out,
            per_scenario=args.per_scenario,
            seed=args.seed,
            max_retries=args.max_retries,
            concurrency=args.concurrency,
        )
    )
    paths = output_paths(args.out)
    print(report_markdown(report))
    print(f"Tests: {args.out}\nReports: {paths['report_md']}, {paths['diversity_md']} (and .json)")
    produced = sum(r.written + r.resumed for r in report.values())
    return 0 if produced or not any(r.failed for r in report.values()) else 1  # 1: every test failed


def add_commands(subparsers: Any) -> None:
    """Register `generate` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "generate", help="write new cognitive-bias tests with a model, from templates and scenarios"
    )
    p.add_argument(
        "--templates",
        nargs="+",
        metavar="DIR_OR_FILE",
        help="template files or folders of *.yml (default: the installed templates of the 30 biases)",
    )
    p.add_argument(
        "--scenarios",
        required=True,
        help=f"text file, one scenario per line; '{PUBLISHED_SCENARIOS}' = the paper's 200 scenarios",
    )
    p.add_argument("--model", required=True, help="Inspect model, e.g. openai/gpt-4o, hf/<folder>, mockllm/model")
    p.add_argument(
        "-M",
        dest="model_arg",
        action="append",
        default=[],
        type=_model_arg,
        metavar="KEY=VALUE",
        help="model argument for get_model, e.g. -M device=cpu (repeatable)",
    )
    p.add_argument(
        "--per-scenario", type=positive_int, default=1, help="tests per bias and scenario, distinct seeds (default 1)"
    )
    p.add_argument(
        "--template-variant",
        metavar="NAME",
        help="apply this template variant where a template offers it, e.g. paper_text (anthropomorphism,"
        " conservatism, stereotyping; see the templates' README); default: the default templates",
    )
    p.add_argument("--biases", help="comma-separated biases (slugs or names; default: every template given)")
    p.add_argument("--out", required=True, help="output CSV; rerunning with the same file resumes it")
    p.add_argument("--seed", type=int, default=0, help="base seed of the tests' seeds (default 0)")
    p.add_argument(
        "--max-retries",
        type=non_negative_int,
        default=DEFAULT_MAX_RETRIES,
        help=f"rejected replies allowed per test before it fails (default {DEFAULT_MAX_RETRIES})",
    )
    p.add_argument("--limit-scenarios", type=positive_int, help="use only the first N scenarios")
    p.add_argument(
        "--temperature",
        type=float,
        default=DEFAULT_TEMPERATURE,
        help=f"generator temperature (default {DEFAULT_TEMPERATURE}, as in the paper)",
    )
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="most tokens per reply")
    p.add_argument("--concurrency", type=positive_int, default=4, help="tests generated at the same time (default 4)")
    p.add_argument(
        "--no-structured-output",
        action="store_true",
        help="do not send a response schema (for providers that reject one)",
    )
    p.set_defaults(func=cmd_generate)
