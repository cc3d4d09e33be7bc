"""Generation of new cognitive-bias tests: template loading and validation, expressions, checks,
the generation core with a scripted generator (Python callable and Inspect mockllm), resuming,
the written CSV running through the cognitive tasks, the diversity report, and the CLI."""

from __future__ import annotations

import asyncio
import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai.model import get_model
from test_inspect import metrics, output, run, scripted

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.tasks.cognitive.commands import inspect_asker
from biasmonkey.tasks.cognitive.data import load_tests
from biasmonkey.tasks.cognitive.generation.checks import parse_check
from biasmonkey.tasks.cognitive.generation.diversity import diversity, rouge_l, self_bleu
from biasmonkey.tasks.cognitive.generation.expressions import ExpressionError, compile_expression, evaluate
from biasmonkey.tasks.cognitive.generation.generate import (
    Rejected,
    Request,
    generate_tests,
    json_object,
    output_paths,
    read_journal,
    read_scenarios,
    seed_of_test,
)
from biasmonkey.tasks.cognitive.generation.template import TemplateError, load_template, load_templates
from biasmonkey.tasks.fetch import DataError

FIXTURE = Path(__file__).parent.parent / "fixtures" / "generation" / "anchoring.yml"
TASK = "describe a task of allocating one resource to one purpose. Do not include any numbers."
GOOD = {"a/an": "an", "type": "IT", "organization": "a bank", TASK: "split the cloud budget for backups"}
SCENARIOS = ["An IT manager at a bank planning backups.", "A buyer at a grocer planning stock."]
PERCENT_OPTIONS = "".join(f"Option {i + 1}: {10 * i}%\n" for i in range(11))


def run_generation(ask, out: Path, **kwargs) -> dict:
    templates = load_templates([FIXTURE])
    kwargs = {"per_scenario": 1, "progress": False, **kwargs}
    report = asyncio.run(generate_tests(templates, kwargs.pop("scenarios", SCENARIOS), ask, out, **kwargs))
    return {slug: r.as_dict() for slug, r in report.items()}


def reply(request: Request, **changes: str) -> str:
    """A valid JSON reply for the keys asked, with some insertions replaced."""
    answers = {**GOOD, "name a colleague": "Your deputy", **changes}
    return json.dumps({key: answers[key] for key in request.keys})


# ---------------------------------------------------------------------------- templates


def test_template_gaps_values_and_rendering() -> None:
    t = load_template(FIXTURE)
    assert t.bias == "Anchoring" and t.slug == "anchoring" and t.n_options == 11
    assert t.gaps("control") == ["a/an", "type", "organization", TASK]
    assert t.gaps("treatment") == ["a/an", "type", "organization", TASK, "name a colleague"]
    values = t.sample_values(7)
    # The values' RNG is random.Random("<seed>:<slug>"), drawn in declaration order.
    rng = random.Random("7:anchoring")
    anchor = rng.randint(0, 100)
    urgent = rng.random() < 0.5
    manner = ["in a meeting", "by email"][rng.randrange(2)]
    assert values == {
        "n_options": 11,
        "anchor": anchor,
        "urgent": urgent,
        "manner": manner,
        "anchor_option": round(anchor / 10),
    }
    assert t.sample_values(7) == values
    assert t.metric_params({**values, "anchor_option": 9}) == {"k": 1, "x_1": 9, "x_2": 9}
    text = t.render("treatment", {**values, "anchor": 87, "manner": "by email"}, {**GOOD, "name a colleague": "Kim"})
    assert text == (
        "Situation:\nSuppose you are an IT manager at a bank.\nYou split the cloud budget for backups.\n"
        "Kim asks you by email.\n\nPrompt:\nDo you intend to allocate more than 87% to this purpose? "
        "Which share do you allocate to this purpose?\n\nAnswer Options:\n" + PERCENT_OPTIONS
    )
    # gaps without an insertion stay in place (that is what the generator is shown)
    assert "[[name a colleague]] asks you" in t.render("treatment", values, GOOD)


BAD_TEMPLATES = [
    # (text replaced, replacement, expected key in the error, expected words)
    ("design:", "colour: red\ndesign:", "colour", "unknown key"),
    ("metric:\n  k: 1", "metric:\n  k: 1\n  y: 2", "metric", "exactly the keys"),
    ("  options: percentage11\ntreatment", "  options: percent11\ntreatment", "control.options", "unknown preset"),
    ("asks you {{manner}}", "asks you {{mood}}", "treatment", "{{mood}} is not declared"),
    ("{generator: coin}", "{generator: dice}", "values.urgent", "unknown generator 'dice'"),
    ("round(anchor / 10)", "anchor.real", "values.anchor_option", "not allowed"),
    ("round(anchor / 10)", "round(anchr / 10)", "values.anchor_option", "unknown name 'anchr'"),
    ("[no_numbers]", "[no_digits]", "checks", "unknown check 'no_digits'"),
    ("[no_numbers]", "[max_words]", "checks", "needs a whole-number argument"),
    (
        "  options: percentage11\nvalues",
        "  options: likert7_agree\nvalues",
        "treatment.options",
        "has 7 options, control has 11",
    ),
    ("low: 0, high: 100", "low: 0", "values.anchor", "high"),
    ("x_2: anchor_option", "x_2: manner_option", "metric.x_2", "unknown name"),
    ("bias: Anchoring", "bias: Anchoring Effect", "bias", "unknown bias"),
    (
        "[[name a colleague]]",
        "[[name a colleague of {{manner}}]]",
        "[[name a colleague of {{manner}}]]",
        "cannot contain",
    ),
]


@pytest.mark.parametrize(("old", "new", "key", "words"), BAD_TEMPLATES)
def test_template_errors_name_file_and_key(tmp_path: Path, old: str, new: str, key: str, words: str) -> None:
    text = FIXTURE.read_text()
    assert old in text
    path = tmp_path / "bad.yml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(TemplateError) as err:
        load_template(path)
    assert str(err.value).startswith(f"{path}: {key}")
    assert words in str(err.value)


def test_checks_must_name_a_gap_and_biases_must_have_templates(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(FIXTURE.read_text().replace(f'"{TASK}": [no_numbers]', '"describe it": [no_numbers]'))
    with pytest.raises(TemplateError, match=r"checks\['describe it'\]: is not the instruction of any"):
        load_template(path)
    with pytest.raises(TemplateError, match="no template for the bias 'framing_effect'"):
        load_templates([FIXTURE], ["framing_effect"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(TemplateError, match=r"empty: no \*\.yml template files"):
        load_templates([tmp_path / "empty"])


# ---------------------------------------------------------------------------- expressions, checks, JSON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("round(anchor / 10)", 8),  # 85 / 10 = 8.5 rounds half to even: 8
        ("round(95 / 10)", 10),
        ("n_options - 1 - anchor // 10", 11 - 1 - 8),
        ("1 if anchor > 50 and not flag else -1", 1),
        ("max(0, min(n_options - 1, anchor % 7))", 1),  # 85 % 7 = 1
        ("'A' if flag else 'B'", "B"),
        ("label == 'x' or 2 ** 3", 8),
        ("-abs(3 - anchor)", -82),
        ("int(7 / 2) + 0 < 4 <= 4", True),
    ],
)
def test_expressions(text: str, expected: object) -> None:
    values = {"anchor": 85, "flag": False, "label": "y", "n_options": 11}
    assert evaluate(compile_expression(text, values), values) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("__import__('os')", "only calls of"),
        ("anchor.real", "not allowed"),
        ("[x for x in (1, 2)]", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("values['anchor']", "not allowed"),
        ("sorted(anchor)", "only calls of"),
        ("round(anchor, ndigits=1)", "positional"),
        ("anchor +", "not a valid expression"),
        ("nope", "unknown name 'nope'"),
    ],
)
def test_expressions_refused(text: str, words: str) -> None:
    with pytest.raises(ExpressionError, match=words.replace("(", r"\(")):
        compile_expression(text, {"anchor"})


def test_expression_runtime_error() -> None:
    with pytest.raises(ExpressionError, match="ZeroDivisionError"):
        evaluate(compile_expression("1 / anchor", {"anchor"}), {"anchor": 0})


@pytest.mark.parametrize(
    ("spec", "text", "passes"),
    [
        ("no_numbers", "split the budget for backups", True),
        ("no_numbers", "someone often splits it", True),  # no number word inside other words
        ("no_numbers", "split 5 budgets", False),
        ("no_numbers", "split it into Three parts", False),
        ("no_numbers", "spend a tenth... ten percent", False),
        ("second_person", "Your team asks", True),
        ("second_person", "The team asks", False),
        ("no_first_person", "the US market grows", True),
        ("no_first_person", "we expand", False),
        ("no_first_person", "I think", False),
        ("no_order", "a choice a manager makes", True),
        ("no_order", "the former plan", False),
        ("no_order", "option B is cheaper", False),
        ("no_order", "plan 2 is cheaper", False),
        ("no_order", "A and B", False),
        ("max_words:3", "one two three", True),
        ("max_words:3", "one two three four", False),
    ],
)
def test_checks(spec: str, text: str, passes: bool) -> None:
    assert (parse_check(spec)(text) is None) == passes


def test_json_is_read_from_plain_or_fenced_text() -> None:
    assert json_object('Sure!\n```json\n{"a": "b"}\n```') == {"a": "b"}
    assert json_object('[1] then {"x": {"y": 1}} and {"z": 2}') == {"x": {"y": 1}}
    with pytest.raises(Rejected) as err:
        json_object('{"a": "b"')
    assert err.value.reason == "invalid_json"


def test_scenarios_published_and_own(data_dir: Path, tmp_path: Path) -> None:
    published = read_scenarios("published")  # $BIASMONKEY_DATA_DIR/cognitive/scenarios.txt, sha256-checked
    assert len(published) == 200 and published[0].startswith("An operations manager at a company from the energy")
    own = tmp_path / "mine.txt"
    own.write_text("first\n\n  second  \n")
    assert read_scenarios(own) == ["first", "second"]
    own.write_text("\n \n")
    with pytest.raises(DataError, match=f"{own}: no scenarios"):
        read_scenarios(own)


# ---------------------------------------------------------------------------- generation, scripted


def test_generation_writes_rows_in_the_published_schema(tmp_path: Path) -> None:
    requests: list[Request] = []

    def ask(request: Request) -> str:
        requests.append(request)
        return reply(request)

    out = tmp_path / "gen.csv"
    report = run_generation(ask, out, per_scenario=2, seed=3)
    assert report == {
        "anchoring": {
            "planned": 4,
            "resumed": 0,
            "written": 4,
            "failed": 0,
            "model_calls": 8,
            "rejections": {},
            "failed_by_reason": {},
        }
    }
    # two calls per test: the control's 4 gaps, then only the treatment's own gap
    assert [r.keys for r in requests[:2]] == [tuple(GOOD), ("name a colleague",)]
    assert "Suppose you are an IT manager at a bank." in requests[1].prompt  # shared gaps already filled
    assert SCENARIOS[0] in requests[0].prompt and f"- [[{TASK}]]" in requests[0].prompt
    seeds = [seed_of_test(3, i, n) for i in range(2) for n in range(2)]
    assert len(set(seeds)) == 4 and requests[0].seed == seeds[0]

    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(table.columns) == ["bias", "scenario", "control", "treatment", "metric_params"]
    assert list(table["scenario"]) == [SCENARIOS[0]] * 2 + [SCENARIOS[1]] * 2
    values = load_template(FIXTURE).sample_values(seeds[0])
    assert table["control"][0] == (
        "Situation:\nSuppose you are an IT manager at a bank.\nYou split the cloud budget for backups.\n\n"
        "Prompt:\nWhich share do you allocate to this purpose?\n\nAnswer Options:\n" + PERCENT_OPTIONS
    )
    assert f"more than {values['anchor']}% to this purpose" in table["treatment"][0]
    assert f"Your deputy asks you {values['manner']}." in table["treatment"][0]
    x = round(values["anchor"] / 10)
    assert json.loads(table["metric_params"][0]) == {"k": 1, "x_1": x, "x_2": x}

    tests = load_tests(data_path=out)
    assert [t.bias for t in tests] == ["anchoring"] * 4
    assert tests[0].x_1 == x and len(tests[0].treatment.options) == 11
    journal = [json.loads(line) for line in output_paths(out)["progress"].read_text().splitlines()]
    assert [(j["scenario_index"], j["number"], j["seed"], j["status"]) for j in journal] == [
        (0, 0, seeds[0], "written"),
        (0, 1, seeds[1], "written"),
        (1, 0, seeds[2], "written"),
        (1, 1, seeds[3], "written"),
    ]
    assert json.loads(output_paths(out)["report_json"].read_text())["anchoring"]["written"] == 4
    assert json.loads(output_paths(out)["diversity_json"].read_text())["groups"]["all"]["tests"] == 4


def test_invalid_json_and_violated_instruction_are_retried(tmp_path: Path) -> None:
    replies = iter(
        [
            "Here you go: a/an = an",  # test 1, control: no JSON
            lambda r: reply(r),  # test 1, control: fine
            lambda r: reply(r, **{"name a colleague": ""}),  # test 1, treatment: empty insertion
            lambda r: reply(r),  # test 1, treatment: fine
            lambda r: reply(r, **{TASK: "split 3 budgets"}),  # test 2, control: digits in a no_numbers gap
            lambda r: json.dumps({"a/an": "an"}),  # test 2, control: gaps missing
            lambda r: reply(r),  # test 2, control: fine
            lambda r: reply(r),  # test 2, treatment: fine
        ]
    )
    prompts: list[str] = []

    def ask(request: Request) -> str:
        prompts.append(request.prompt)
        answer = next(replies)
        return answer if isinstance(answer, str) else answer(request)

    report = run_generation(ask, tmp_path / "gen.csv")
    assert report["anchoring"] == {
        "planned": 2,
        "resumed": 0,
        "written": 2,
        "failed": 0,
        "model_calls": 8,
        "rejections": {"check:no_numbers": 1, "empty_gap": 1, "invalid_json": 1, "missing_gap": 1},
        "failed_by_reason": {},
    }
    assert "previous reply was rejected (no JSON object" in prompts[1]
    assert "contains a number '3'" in prompts[5]
    assert "rejected" not in prompts[2] and "rejected" not in prompts[7]  # a note only after a rejection
    assert len(load_tests(data_path=tmp_path / "gen.csv")) == 2
    journal = [json.loads(line) for line in output_paths(tmp_path / "gen.csv")["progress"].read_text().splitlines()]
    assert [r["reason"] for r in journal[1]["rejections"]] == ["check:no_numbers", "missing_gap"]
    assert journal[1]["rejections"][0]["step"] == "control"


def test_retry_exhaustion_is_counted_and_reported(tmp_path: Path) -> None:
    def ask(request: Request) -> str:  # scenario 1: never JSON; scenario 2: always a number
        if SCENARIOS[0] in request.prompt:
            return "I cannot help with that."
        return reply(request, **{TASK: "split twenty budgets"})

    out = tmp_path / "gen.csv"
    report = run_generation(ask, out, max_retries=2)
    # each failed test: 1 call + 2 retries = 3 rejected replies
    assert report["anchoring"] == {
        "planned": 2,
        "resumed": 0,
        "written": 0,
        "failed": 2,
        "model_calls": 6,
        "rejections": {"check:no_numbers": 3, "invalid_json": 3},
        "failed_by_reason": {"check:no_numbers": 1, "invalid_json": 1},
    }
    assert out.read_text() == "bias,scenario,control,treatment,metric_params\n"
    md = output_paths(out)["report_md"].read_text()
    assert "| anchoring | 2 | 0 | 0 | 2 | 6 | check:no_numbers: 3, invalid_json: 3 |" in md
    assert not output_paths(out)["diversity_json"].exists()


def test_resume_skips_written_tests_and_retries_failed_ones(tmp_path: Path) -> None:
    out = tmp_path / "gen.csv"
    fail_second = lambda r: "no" if SCENARIOS[1] in r.prompt else reply(r)  # noqa: E731
    first = run_generation(fail_second, out, max_retries=0)
    assert (first["anchoring"]["written"], first["anchoring"]["failed"]) == (1, 1)
    with out.open("a") as f:  # a row whose journal line a crash never wrote: dropped on resume
        f.write("Anchoring,orphan,x,y,z\n")

    asked: list[str] = []

    def ask(request: Request) -> str:
        asked.append(request.prompt)
        return reply(request)

    second = run_generation(ask, out, per_scenario=2)
    # 4 planned; the written one is resumed; the failed one and the 2 new ones are generated
    assert second["anchoring"] == {
        "planned": 4,
        "resumed": 1,
        "written": 3,
        "failed": 0,
        "model_calls": 6,
        "rejections": {},
        "failed_by_reason": {},
    }
    assert sum(SCENARIOS[0] in p for p in asked) == 2 and sum(SCENARIOS[1] in p for p in asked) == 4
    tests = load_tests(data_path=out)
    assert len(tests) == 4 and len({t.id for t in tests}) == 4
    assert [t.scenario for t in tests].count(SCENARIOS[0]) == 2


def test_an_existing_csv_without_a_journal_is_not_overwritten(tmp_path: Path) -> None:
    """The CSV is rebuilt from the journal: a file that has none (e.g. a dataset given as --out by
    mistake) was emptied to its header."""
    out = tmp_path / "mine.csv"
    out.write_text("bias,scenario,control,treatment,metric_params\nAnchoring,s,c,t,p\n")
    with pytest.raises(DataError, match=r"mine\.csv exists but no journal mine\.csv\.progress\.jsonl beside it"):
        run_generation(lambda r: pytest.fail("nothing is generated"), out)
    assert out.read_text().endswith("Anchoring,s,c,t,p\n")


def test_tests_of_a_changed_scenario_are_not_resumed(tmp_path: Path) -> None:
    """Tests resume by (bias, scenario number, seed): another scenario under the same number must
    not pass for this one's."""
    out = tmp_path / "gen.csv"
    run_generation(reply, out)
    changed = ["A nurse manager at a hospital planning shifts.", SCENARIOS[1]]
    with pytest.raises(DataError, match=r"progress\.jsonl: scenario 1 was 'An IT manager.*now 'A nurse manager"):
        run_generation(lambda r: pytest.fail("nothing is generated"), out, scenarios=changed)
    more = run_generation(reply, out, scenarios=[*SCENARIOS, "A chef at a diner planning menus."])
    assert (more["anchoring"]["resumed"], more["anchoring"]["written"]) == (2, 1)  # scenarios added: resumed


def test_a_scenarios_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "scenarios.txt"
    bad.write_bytes(b"A manager \x89 decides.\n")
    with pytest.raises(DataError, match=rf"scenarios file {bad}: not UTF-8 text"):
        read_scenarios(bad)


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--limit-scenarios", "0", "0 must be at least 1"),
        ("--limit-scenarios", "-1", "-1 must be at least 1"),
        ("--concurrency", "0", "0 must be at least 1"),
        ("--per-scenario", "0", "0 must be at least 1"),
        ("--max-retries", "-1", "-1 must be 0 or more"),
    ],
)
def test_generate_counts_are_checked_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture, option: str, value: str, problem: str
) -> None:
    """--limit-scenarios -1 had dropped the last scenario (a slice), 0 written nothing."""
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "--scenarios", "x.txt", "--model", "x", "--out", str(tmp_path / "o.csv"), option, value])
    assert exit_.value.code == 2 and f"argument {option}: {problem}" in capsys.readouterr().err


def test_a_failing_generator_model_is_one_error_naming_it() -> None:
    class Broken:
        def __str__(self) -> str:
            return "broken/model"

        async def generate(self, prompt, config):
            raise IndexError("index out of range in self")

    ask = inspect_asker(Broken())
    with pytest.raises(RuntimeError, match=r"the generator model broken/model failed: IndexError: index out of range"):
        asyncio.run(ask(Request("a prompt", 1, ("gap",))))


def test_journal_blank_lines_are_skipped(tmp_path: Path) -> None:
    """A JSONL journal may hold blank lines (e.g. a trailing one): they are no records; a cut-off
    last record after them is still ignored, a bad record before the last one is still an error."""
    out = tmp_path / "gen.csv"
    run_generation(reply, out)
    progress = output_paths(out)["progress"]
    first, second = progress.read_text().splitlines()
    progress.write_text(f"{first}\n\n   \n{second}\n\n")
    assert [o.status for o in read_journal(progress)] == ["written", "written"]
    progress.write_text(f"{first}\n\n{second}\n\n{second[:20]}\n\n")  # a crash cut the last record
    assert len(read_journal(progress)) == 2
    resumed = run_generation(lambda r: pytest.fail("nothing is left to generate"), out)
    assert (resumed["anchoring"]["resumed"], resumed["anchoring"]["written"]) == (2, 0)
    assert len(load_tests(data_path=out)) == 2
    progress.write_text(f"{first}\n\nnot json\n{second}\n")
    with pytest.raises(DataError, match=r"progress.jsonl, line 3: not a progress record"):
        read_journal(progress)


# ---------------------------------------------------------------------------- through Inspect


def test_inspect_mockllm_generator_and_the_cognitive_task_on_its_output(tmp_path: Path) -> None:
    configs = []

    def answer(messages, tools, tool_choice, config):
        configs.append(config)
        keys = tuple(config.response_schema.json_schema.required)
        return output("```json\n" + reply(Request("", 0, keys)) + "\n```")

    ask = inspect_asker(get_model("mockllm/model", custom_outputs=answer))
    out = tmp_path / "gen.csv"
    report = run_generation(ask, out, seed=5)
    assert report["anchoring"]["written"] == 2 and report["anchoring"]["model_calls"] == 4
    first = configs[0]
    assert first.temperature == 0.7 and first.seed == seed_of_test(5, 0, 0)
    schema = first.response_schema.json_schema
    assert schema.type == "object" and schema.required == list(GOOD) and schema.additionalProperties is False
    assert all(schema.properties[key].type == "string" for key in GOOD)
    assert first.response_schema.strict is True

    # the generated file runs through the Inspect cognitive task unchanged
    model = scripted({}, default=output("Option 3: 20%"))
    log = run(
        "biasmonkey/cognitive_anchoring", model, tmp_path, task_args={"data_path": str(out), "protocol": "one_step"}
    )
    assert log.status == "success", log.error
    m = metrics(log)
    # both sides answer offered option 3, the same original option: m = k(|a-x| - |a-x|)/... = 0
    assert m["n_tests"] == 2 and m["failure_rate"] == 0 and m["score"] == 0


def test_lm_eval_include_path_ignores_templates(tmp_path: Path) -> None:
    """lm-eval's include-path scan reads only *.yaml: template files (*.yml) are never task configs."""
    from lm_eval.tasks._index import TaskIndex
    from test_lm_eval_e2e import REPO

    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "anchoring.yml").write_text(FIXTURE.read_text())
    assert TaskIndex.build([tmp_path]) == {}
    index = TaskIndex.build([REPO / "tasks" / "cognitive"])  # with whatever templates the repo has
    assert {str(entry.yaml_path).rsplit(".", 1)[-1] for entry in index.values()} == {"yaml"}
    assert "biasmonkey_cognitive_anchoring" in index and "biasmonkey-cognitive" in index


def test_cli_generate_with_a_real_model_counts_failures(tiny_model: Path, tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.txt"
    scenarios.write_text("\n".join(SCENARIOS) + "\n\n")
    out = tmp_path / "gen.csv"
    code = main(
        [
            "generate",
            "--templates",
            str(FIXTURE),
            "--scenarios",
            str(scenarios),
            "--limit-scenarios",
            "1",
            "--model",
            f"hf/{tiny_model}",
            "-M",
            "device=cpu",
            "--max-tokens",
            "8",
            "--max-retries",
            "1",
            "--out",
            str(out),
        ]
    )
    report = json.loads(output_paths(out)["report_json"].read_text())["anchoring"]
    # the random tiny model writes no usable JSON: one test, 1 + 1 rejected replies, nothing written
    assert code == 1
    assert (report["planned"], report["written"], report["failed"], report["model_calls"]) == (1, 0, 1, 2)
    assert sum(report["rejections"].values()) == 2


def test_cli_generate_template_variant(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    """--template-variant reaches load_templates and changes the generated tests; no model is called."""
    import biasmonkey.tasks.cognitive.commands as cg
    import biasmonkey.tasks.cognitive.generation.template as template_module

    variants: list[str | None] = []

    def spy(paths, biases=None, variant=None):
        variants.append(variant)
        return load_templates(paths, biases, variant)

    monkeypatch.setattr(template_module, "load_templates", spy)
    monkeypatch.setattr(cg, "inspect_asker", lambda *a, **k: lambda r: json.dumps({key: "a team" for key in r.keys}))
    scenarios = tmp_path / "scenarios.txt"
    scenarios.write_text(SCENARIOS[0] + "\n")

    def generate(*extra: str) -> tuple[int, pd.DataFrame | None]:
        out = tmp_path / f"gen{len(variants)}.csv"
        args = ["generate", "--biases", "stereotyping", "--scenarios", str(scenarios), "--model", "x", "--out"]
        code = main([*args, str(out), *extra])
        return code, pd.read_csv(out, dtype=str) if out.exists() else None

    code, default = generate()
    assert code == 0 and variants == [None]
    code, paper = generate("--template-variant", "paper_text")
    assert code == 0 and variants[1:] == [None, "paper_text"]
    assert "Very likely" in default["treatment"][0] and "Very likely" not in paper["treatment"][0]
    assert "Which of the following is most likely true of most people in the group?" in paper["treatment"][0]
    assert json.loads(paper["metric_params"][0]) == {"k": -1, "x_1": 0, "x_2": 0}

    capsys.readouterr()
    assert generate("--template-variant", "nope") == (2, None)
    err = capsys.readouterr().err
    assert "--template-variant" in err and "'nope'" in err and "paper_text" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- diversity


def test_diversity_hand_computed() -> None:
    a, b, c = "a b c d", "a b c e", "x y z w"
    # a vs [b]: 1-gram 3/4, 2-gram 2/3 (ab, bc), 3-gram 1/2 (abc), 4-gram 0 -> 0.1/1 (method1);
    # same length, so no brevity penalty: BLEU = (3/4 · 2/3 · 1/2 · 1/10)^(1/4) = 0.025^(1/4)
    ab = 0.025**0.25
    assert self_bleu([a, b]) == pytest.approx(ab, abs=1e-9)
    # c shares no word with a or b: nltk gives 0 when no unigram matches (smoothing is not applied);
    # a and b still score ab against [b, c] and [a, c] (c adds no matching n-gram): (2·ab + 0)/3
    assert self_bleu([a, b, c]) == pytest.approx(2 * ab / 3, abs=1e-9)
    # ROUGE-L F: LCS(a, b) = 3 of 4 tokens -> P = R = F = 0.75; c shares no token: 0
    assert rouge_l([a, b]) == pytest.approx(0.75)
    assert rouge_l([a, b, c]) == pytest.approx(0.75 / 3)
    assert self_bleu([a]) is None and rouge_l([a]) is None
    # rows: a test's text is its control then its treatment
    rows = [
        {"bias": "Anchoring", "control": "a b", "treatment": "c d"},
        {"bias": "Anchoring", "control": "a b", "treatment": "c e"},
        {"bias": "Framing Effect", "control": "x y", "treatment": "z w"},
    ]
    groups = diversity(rows, seed=1)["groups"]
    assert groups["Anchoring"]["self_bleu"] == pytest.approx(ab, abs=1e-9)
    assert groups["all"]["rouge_l"] == pytest.approx(0.25)
    assert groups["Framing Effect"] == {"tests": 1, "self_bleu": None, "rouge_l": None}
    # caps: one pair drawn from three, seeded
    assert rouge_l([a, b, c], max_pairs=1, seed=0) in (0.75, 0.0)
    assert not math.isnan(self_bleu([a, b, c], max_texts=2, seed=0))
