"""Generate cognitive-bias tests: templates × scenarios × a generator model.

For every bias, scenario and test number the pipeline draws a seed, samples the template's custom
values, and asks the generator model (any callable `ask(Request) -> str`, sync or async; the
Inspect adapter is `biasmonkey.tasks.cognitive.commands`) for the control's `[[gaps]]` as a
JSON object, then for the treatment's remaining gaps (gaps shared with the control are copied,
as in the paper). Each reply is validated — JSON object, every gap filled with text, the
template's checks, no gap left, the option list intact and the row readable by the cognitive
tasks (`data.parse_rows`) — and a rejected reply is asked again, up to `max_retries` times per
test, with the reason added to the prompt. Every rejection is counted by bias and reason.

Output: `<out>` (CSV, the published schema bias, scenario, control, treatment, metric_params)
and `<out>.progress.jsonl`, the journal: one line per finished test (written or failed, its
seed, attempts and rejections, and the written row). A rerun with the same arguments rebuilds
the CSV from the journal and only generates the tests not written yet (failed ones are tried
again). Reports: `<out>.report.json`/`.md` (per bias) and the diversity report (`diversity.py`).
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import inspect
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.tasks.atomic_write import atomic_open, write_text
from biasmonkey.tasks.cognitive.data import COLUMNS, parse_rows
from biasmonkey.tasks.cognitive.generation.template import GAP, VALUE, Template
from biasmonkey.tasks.fetch import DataError, PinnedFile
from biasmonkey.tasks.text_files import read_utf8

DEFAULT_MAX_RETRIES = 3

GEN_PROMPT = """\
Your job is to complete a test case for a decision-making study so that it fits a scenario.

## Scenario
{scenario}

## Test case
{template}

## What to do
The test case has blanks written as [[...]]. The words inside each pair of double brackets tell
you what to write there. Write a text for every blank listed below so that it fits the scenario,
obeys the words in the brackets exactly, and reads naturally when put in place of the blank.
Write only the text that replaces the blank, without the brackets.

Blanks:
{blanks}

Reply with one JSON object and nothing else. Use each blank's words, copied exactly, as a key,
and the text to insert as its value:
{example}
"""

RETRY_NOTE = "\n\nYour previous reply was rejected ({reason}). Reply again and follow the instructions exactly."

# The 200 managerial scenarios of Malberg et al. (CC BY-SA 4.0), one per line.
SCENARIOS_UPSTREAM = "simonmalberg/cognitive-biases-in-llms@a3d24658e428"
SCENARIOS_URL = (
    "https://raw.githubusercontent.com/simonmalberg/cognitive-biases-in-llms/"
    "a3d24658e428d30f47377f73e5240711e4883de6/data/scenarios.txt"
)
SCENARIOS_SHA256 = "a975d2ab66839159c015e2080fa0631115e7b02c7e414ed111190680d116720c"
PUBLISHED_SCENARIOS = "published"  # the --scenarios value that selects them


def pinned_scenarios() -> PinnedFile:
    """The paper's scenario file as a pinned file."""
    return PinnedFile(
        "cognitive/scenarios.txt",
        "cognitive/a3d24658e428/scenarios.txt",
        SCENARIOS_URL,
        SCENARIOS_SHA256,
        SCENARIOS_UPSTREAM,
    )


@dataclass(frozen=True)
class Request:
    """One call of the generator model: the prompt, a seed, and the keys the JSON reply must have."""

    prompt: str
    seed: int
    keys: tuple[str, ...]


Ask = Callable[[Request], "str | Awaitable[str]"]


class Rejected(Exception):
    """A reply that cannot be used; `reason` is the counted category, `detail` says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# ---------------------------------------------------------------------------- inputs


def read_scenarios(source: str | Path) -> list[str]:
    """Scenarios, one per non-empty line of a text file; `published` gives the paper's 200
    (from $BIASMONKEY_DATA_DIR/cognitive/scenarios.txt, or a pinned, checksummed download)."""
    path = pinned_scenarios().fetch() if str(source) == PUBLISHED_SCENARIOS else Path(source)
    try:
        lines = read_utf8(path).splitlines()
    except OSError as err:
        raise DataError(f"scenarios file {path}: cannot be read ({err})") from None
    except ValueError as err:  # (not UTF-8: the message names the file)
        raise DataError(f"scenarios file {err}") from None
    scenarios = [line.strip() for line in lines if line.strip()]
    if not scenarios:
        raise DataError(f"scenarios file {path}: no scenarios (expected one per line)")
    return scenarios


def seed_of_test(base_seed: int, scenario_index: int, number: int) -> int:
    """The seed of test `number` for a scenario: stable, and unchanged when N is raised later.
    The template adds the bias when it seeds its values, so biases get different values."""
    digest = hashlib.sha256(f"{base_seed}:{scenario_index}:{number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # 31 bits: every provider accepts it


# ---------------------------------------------------------------------------- one reply


def gen_prompt(scenario: str, template_text: str, keys: Sequence[str]) -> str:
    """Our GEN prompt: the scenario, the test text with its open gaps, the keys to fill."""
    blanks = "\n".join(f"- [[{key}]]" for key in keys)
    example = json.dumps({key: "..." for key in keys}, indent=2, ensure_ascii=False)
    return GEN_PROMPT.format(scenario=scenario, template=template_text.strip(), blanks=blanks, example=example)


def json_object(reply: str) -> dict[str, Any]:
    """The first JSON object in a reply (the whole text, a ```json fence, or an object inside
    other text); Rejected("invalid_json") when there is none."""
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", reply)]:
        try:
            value, _ = decoder.raw_decode(reply, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise Rejected("invalid_json", f"no JSON object in the reply {reply[:120]!r}")


def _key(text: str) -> str:
    """How reply keys are matched to instructions: brackets, case and spacing do not matter."""
    return " ".join(text.strip().removeprefix("[[").removesuffix("]]").split()).casefold()


def insertions_from(reply: str, keys: Sequence[str], template: Template) -> dict[str, str]:
    """The validated insertions for `keys` from a reply, or Rejected with the first problem."""
    found = {_key(str(k)): v for k, v in json_object(reply).items()}
    insertions: dict[str, str] = {}
    for key in keys:
        if _key(key) not in found:
            raise Rejected("missing_gap", f"no insertion for [[{key}]]")
        value = found[_key(key)]
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Rejected("empty_gap", f"the insertion for [[{key}]] is not a text: {value!r}")
        text = " ".join(str(value).split())  # one line: a newline could break the option list
        if not text:
            raise Rejected("empty_gap", f"the insertion for [[{key}]] is empty")
        if GAP.search(text) or VALUE.search(text) or "[[" in text or "{{" in text:
            raise Rejected("unfilled_gap", f"the insertion for [[{key}]] contains a gap: {text!r}")
        for check in template.checks.get(key, ()):
            problem = check(text)
            if problem:
                raise Rejected(f"check:{check.name}", f"[[{key}]] {problem}: {text!r}")
        insertions[key] = text
    return insertions


def build_row(
    template: Template, scenario: str, values: Mapping[str, Any], insertions: Mapping[str, str], where: str
) -> dict[str, str]:
    """The CSV row of a filled test, checked by the cognitive tasks' own parser."""
    row = {"bias": template.bias, "scenario": scenario}
    for side in ("control", "treatment"):
        text = template.render(side, values, insertions)
        if GAP.search(text) or VALUE.search(text):
            raise Rejected("unfilled_gap", f"the {side} still has a gap: {text[:120]!r}")
        row[side] = text
    row["metric_params"] = json.dumps(template.metric_params(values))
    try:
        (parsed,) = parse_rows(pd.DataFrame([row], columns=list(COLUMNS)), where)
    except DataError as err:
        raise Rejected("broken_options", str(err)) from None
    for side in ("control", "treatment"):
        if len(getattr(parsed, side).options) != template.n_options:
            raise Rejected(
                "broken_options",
                f"the {side} has {len(getattr(parsed, side).options)} options, the template {template.n_options}",
            )
    return row


# ---------------------------------------------------------------------------- one test


@dataclass
class Outcome:
    """What happened to one test; one line of the progress journal."""

    bias: str
    scenario_index: int
    number: int
    seed: int
    status: str = "failed"  # or "written"
    attempts: int = 0
    rejections: list[dict[str, str]] = field(default_factory=list)
    row: dict[str, str] | None = None

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.bias, self.scenario_index, self.seed)


async def _call(ask: Ask, request: Request) -> str:
    reply = ask(request)
    if inspect.isawaitable(reply):
        reply = await reply
    return str(reply)


async def generate_test(
    template: Template,
    scenario: str,
    scenario_index: int,
    number: int,
    seed: int,
    ask: Ask,
    max_retries: int = DEFAULT_MAX_RETRIES,
    where: str = "generated",
) -> Outcome:
    """Fill one test: the control's gaps, then the treatment's own gaps (one model call each).
    A rejected reply is asked again with its reason; more than `max_retries` rejections over the
    whole test fail it. `attempts` counts the model calls."""
    outcome = Outcome(template.slug, scenario_index, number, seed)
    values = template.sample_values(seed)
    insertions: dict[str, str] = {}
    note = ""
    while True:
        step = "treatment" if set(template.gaps("control")) <= set(insertions) else "control"
        keys = [gap for gap in template.gaps(step) if gap not in insertions]
        try:
            if keys:
                outcome.attempts += 1
                prompt = gen_prompt(scenario, template.render(step, values, insertions), keys) + note
                reply = await _call(ask, Request(prompt, (seed + outcome.attempts - 1) % 2**31, tuple(keys)))
                insertions.update(insertions_from(reply, keys, template))
                note = ""
                if step == "control":
                    continue
            outcome.row = build_row(template, scenario, values, insertions, where)
            outcome.status = "written"
            return outcome
        except Rejected as rejected:
            outcome.rejections.append({"step": step, "reason": rejected.reason, "detail": rejected.detail})
            if len(outcome.rejections) > max_retries:
                return outcome
            note = RETRY_NOTE.format(reason=rejected.detail[:300])
            if rejected.reason == "broken_options":
                insertions.clear()  # which insertion broke the options is unknown: start over


# ---------------------------------------------------------------------------- a whole run


@dataclass
class BiasReport:
    """Counts of one bias in one run (tests already written by an earlier run are `resumed`)."""

    planned: int = 0
    resumed: int = 0
    written: int = 0
    failed: int = 0
    model_calls: int = 0
    rejections: Counter[str] = field(default_factory=Counter)  # every rejected reply, by reason
    failed_by_reason: Counter[str] = field(default_factory=Counter)  # failed tests, by last reason

    def add(self, outcome: Outcome) -> None:
        self.model_calls += outcome.attempts
        self.rejections.update(r["reason"] for r in outcome.rejections)
        if outcome.status == "written":
            self.written += 1
        else:
            self.failed += 1
            self.failed_by_reason[outcome.rejections[-1]["reason"]] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            **{k: getattr(self, k) for k in ("planned", "resumed", "written", "failed", "model_calls")},
            "rejections": dict(sorted(self.rejections.items())),
            "failed_by_reason": dict(sorted(self.failed_by_reason.items())),
        }


def output_paths(out: str | Path) -> dict[str, Path]:
    """The files of a run next to the CSV: the journal and the reports."""
    out = Path(out)
    return {
        name: out.with_name(out.name + suffix)
        for name, suffix in (
            ("progress", ".progress.jsonl"),
            ("report_json", ".report.json"),
            ("report_md", ".report.md"),
            ("diversity_json", ".diversity.json"),
            ("diversity_md", ".diversity.md"),
        )
    }


def read_journal(path: Path) -> list[Outcome]:
    """The outcomes a previous run recorded; blank lines are skipped, and a cut-off last record,
    from a crash, is ignored."""
    if not path.is_file():
        return []
    outcomes = []
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if line.strip()]
    for i, (number, line) in enumerate(lines):
        try:
            outcomes.append(Outcome(**json.loads(line)))
        except (ValueError, TypeError) as err:
            if i == len(lines) - 1:
                break
            raise DataError(f"{path}, line {number}: not a progress record of `biasmonkey generate` ({err})") from None
    return outcomes


def _check_scenarios(done: Sequence[Outcome], scenarios: Sequence[str], journal: Path) -> None:
    """A journal's tests are resumed by (bias, scenario number, seed): each must be of the scenario
    that number now names, or a changed scenarios file would pass another scenario's tests off as
    this one's."""
    for outcome in done:
        index, had = outcome.scenario_index, (outcome.row or {}).get("scenario")
        if index < len(scenarios) and had is not None and had != scenarios[index]:
            raise DataError(
                f"{journal}: scenario {index + 1} was {had[:60]!r}…, now {scenarios[index][:60]!r}…: the scenarios "
                "changed since those tests were generated; use another --out, or the scenarios file they were made from"
            )


def _write_csv(path: Path, rows: Sequence[Mapping[str, str]]) -> None:
    with atomic_open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def report_markdown(report: Mapping[str, BiasReport]) -> str:
    lines = [
        "| bias | planned | resumed | written | failed | model calls | rejected replies (reason: n) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for slug, r in report.items():
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(r.rejections.items())) or "none"
        lines.append(f"| {slug} | {r.planned} | {r.resumed} | {r.written} | {r.failed} | {r.model_calls} | {reasons} |")
    return "\n".join(lines) + "\n"


async def _run_all(jobs: Sequence[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    """Run the jobs with at most `concurrency` at a time; the first error stops the others."""
    queue = list(reversed(jobs))

    async def worker() -> None:
        while queue:
            await queue.pop()()

    workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(jobs))))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()


async def generate_tests(
    templates: Mapping[str, Template],
    scenarios: Sequence[str],
    ask: Ask,
    out: str | Path,
    per_scenario: int = 1,
    seed: int = 0,
    max_retries: int = DEFAULT_MAX_RETRIES,
    concurrency: int = 1,
    progress: bool = True,
) -> dict[str, BiasReport]:
    """Generate `per_scenario` tests per bias × scenario into the CSV `out` (resuming a previous
    run of the same file), write the per-bias report and the diversity report next to it, and
    return the per-bias report."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from biasmonkey.tasks.cognitive.generation.diversity import write_diversity_report

    if per_scenario < 1 or max_retries < 0:
        raise ValueError(f"per_scenario must be >= 1 and max_retries >= 0, got {per_scenario}, {max_retries}")
    out = Path(out)
    paths = output_paths(out)
    if out.exists() and not paths["progress"].exists():  # (the CSV is rebuilt from the journal below)
        raise DataError(
            f"{out} exists but no journal {paths['progress'].name} beside it: it is no run of `biasmonkey "
            "generate` to resume, and would be overwritten; choose another --out, or move the file"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    done = [o for o in read_journal(paths["progress"]) if o.status == "written"]
    _check_scenarios(done, scenarios, paths["progress"])
    written_keys = {o.key for o in done}
    rows = [o.row for o in done if o.row]
    _write_csv(out, rows)  # the journal is the truth: rows of a crashed run's last test are dropped

    report = {slug: BiasReport() for slug in templates}
    todo: list[tuple[Template, int, int, int]] = []
    for slug, template in templates.items():
        for index in range(len(scenarios)):
            for number in range(per_scenario):
                test = seed_of_test(seed, index, number)
                report[slug].planned += 1
                if (slug, index, test) in written_keys:
                    report[slug].resumed += 1
                else:
                    todo.append((template, index, number, test))

    with (
        out.open("a", encoding="utf-8", newline="") as csv_file,
        paths["progress"].open("a", encoding="utf-8") as journal,
        Progress(
            TextColumn("generating"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeRemainingColumn(),
            disable=not progress,
        ) as bar,
    ):
        writer = csv.DictWriter(csv_file, fieldnames=list(COLUMNS), lineterminator="\n")
        task = bar.add_task("", total=len(todo))

        def job(template: Template, index: int, number: int, test: int) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                outcome = await generate_test(
                    template,
                    scenarios[index],
                    index,
                    number,
                    test,
                    ask,
                    max_retries,
                    where=f"{out} ({template.slug}, scenario {index + 1}, seed {test})",
                )
                if outcome.row:
                    writer.writerow(outcome.row)
                    csv_file.flush()
                    rows.append(outcome.row)
                journal.write(json.dumps(outcome.__dict__, ensure_ascii=False) + "\n")
                journal.flush()
                report[template.slug].add(outcome)
                failed = sum(r.failed for r in report.values())
                bar.update(task, advance=1, description=f"{template.slug}  failed: {failed}")

            return run

        await _run_all([job(*item) for item in todo], concurrency)

    write_text(paths["report_json"], json.dumps({s: r.as_dict() for s, r in report.items()}, indent=2) + "\n")
    write_text(paths["report_md"], report_markdown(report))
    if rows:
        write_diversity_report(rows, paths["diversity_json"], paths["diversity_md"], seed=seed)
    return report
