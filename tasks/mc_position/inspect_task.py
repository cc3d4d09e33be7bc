"""Inspect adapter of the wrapped multiple-choice tasks: `inspect eval biasmonkey/position -T task=<inner>`.

`<inner>` is any Inspect task spec that `inspect eval` itself accepts for one task: a registered
name (`inspect_evals/gpqa_diamond`, any package's `@task`), `file.py@task_name`, or a `file.py`
that defines exactly one task. It is loaded with Inspect's own loader (`load_inner_task`), and
its dataset's samples are read, not its solver or scorer:

- each sample needs `choices` (2 to 26 of them, one letter each) and a target that is one letter
  (`"A"`, `"B"`, … within its choices: Inspect's own multiple-choice convention) or the text of
  exactly one of its choices (a list target of one element is that element); a target that is a
  letter and another choice's text (choices `["B", "C", "D"]`, target `"C"`) is refused as
  ambiguous, as on the lm-eval side (`prompts.target_choice`);
- its question is its `input`: a string as it is, or for chat messages the text of its user
  messages joined by a blank line (system and assistant messages are left out, as the lettered
  prompt is one user turn).

Samples, in this order: one content-free sample per option count present (id `content_free_<n>`,
input `lettered_prompt(content_free_question(the questions), ["N/A"] * n)`: "N/A" within the
text all questions share at their start and end, the framing lm-eval's template gives; contextual
calibration), then each item in each of its cyclic orders (`prompts.shifts_for`), id `<item id>@<shift>`, input
`prompts.lettered_prompt(question, the options as shown)`. An item's id is its sample's id, or
`<slug>-<index>` (index from 0, as lm-eval's `<task>-<index>`) when it has none; ids must be
unique. Each sample's metadata is `{"biasmonkey_position": {id, kind, n, gold, shift, options}}`,
the entry lm-eval's wrapped documents carry (`lm_eval_task.py`), so `codecs.from_inspect` reads
both harnesses alike.

The prompt is always the lettered form, scored on the letters after a space (" A", " B", …; with
`-T letter_spellings=both` also "A", "B", …): the lm-eval side's rendering of a lettered task by its
own template (its options field rotated) has no Inspect counterpart, as an Inspect task's prompt
comes from its solver, not from a template biasmonkey could fill. The solver asks for one token
with its top log-probabilities (`-T top_logprobs`) and reads each spelling from them
(`spelling_logprobs`: a spelling missing from the top-k gets the documented floor and is counted
in `imputed_continuations`); a provider without log-probabilities fails with `LogprobsUnavailable`.
With hf/ models, use the raw-prompt chat template (configs/inspect_hf_raw_prompt.yaml) for the
prompt lm-eval scores.

Names: the log's task is `biasmonkey/position`; biasmonkey reads it back as task `position_<slug>`
(the task's metadata `biasmonkey_task`, which `harness_ext/logs.py` prefers over the log's task
name), where the slug is the inner task's registered name with every run of characters other
than letters, digits, "_" and "-" replaced by "_": `file.py@mc` → `mc` (a file's task is
registered under its own name), `inspect_evals/gpqa_diamond` → `inspect_evals_gpqa_diamond`. An
lm-eval task of the same name (`biasmonkey_position_mc`) is thus the same biasmonkey task.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect.common import (
    answer_logprobs_config,
    family_metrics,
    first_token_top_logprobs,
    metric_table,
    most_likely,
    renormalised,
    shares_text,
)
from biasmonkey.metrics.top_logprobs import spelling_logprobs
from biasmonkey.tasks.mc_position.codecs import META, score_value
from biasmonkey.tasks.mc_position.family import FAMILY, task_name
from biasmonkey.tasks.mc_position.options import DEFAULT_TOP_LOGPROBS, PositionOptions
from biasmonkey.tasks.mc_position.prompts import (
    CONTENT_FREE,
    LETTERS,
    MAX_OPTIONS,
    MIN_OPTIONS,
    check_options,
    content_free_question,
    cyclic_order,
    lettered_prompt,
    shifts_for,
    shown_position,
    target_choice,
)
from biasmonkey.tasks.mc_position.scoring import PositionRecord, score_document

# The task's `version`: raised whenever what the scorer stores or how the metric table computes
# from it changes, so logs of different scoring are told apart (docs/inspect.md).
SCORING_VERSION = 1
NAME = "position"  # registered as biasmonkey/position
TASK_METADATA = "biasmonkey_task"  # the task's metadata key naming the biasmonkey task it is read back as

LOGPROBS_ONLY = (
    "or run the lm-eval wrapper (biasmonkey_position_<task>): answer-position bias is read from log-probabilities only"
)


class InnerTaskError(ValueError):
    """An inner task that cannot be loaded or wrapped: the message names it and the fix."""


# ---------------------------------------------------------------------------- the inner task


def load_inner_task(spec: str) -> Task:
    """The one Inspect task `spec` names, loaded as `inspect eval <spec>` loads it (Inspect's own
    loader: a registered name, `file.py@name` or a one-task `file.py`)."""
    from inspect_ai._eval.loader import load_tasks  # private API: Inspect's resolver of task specs

    where = f"-T task={spec}"
    if not spec.strip():
        raise InnerTaskError(
            "biasmonkey/position needs the task to wrap: -T task=<an Inspect task> (a registered name such as "
            "inspect_evals/gpqa_diamond, file.py@task_name or file.py)"
        )
    if spec.strip() in (f"biasmonkey/{NAME}", NAME):
        raise InnerTaskError(f"{where}: biasmonkey/{NAME} cannot wrap itself; name a multiple-choice task")
    try:
        tasks = load_tasks([spec], {})
    except Exception as err:
        raise InnerTaskError(
            f"{where}: Inspect cannot load it ({type(err).__name__}: {err}); give a registered task name "
            "(`inspect list tasks` lists a folder's), file.py@task_name or file.py"
        ) from err
    if len(tasks) != 1:
        found = f"{len(tasks)} tasks ({', '.join(t.name for t in tasks)})" if tasks else "no task"
        raise InnerTaskError(
            f"{where}: {found} found; name one Inspect task: a registered name (e.g. inspect_evals/gpqa_diamond, "
            "with its package installed), file.py@task_name or a file.py that defines one @task"
        )
    return tasks[0]


def slug(name: str) -> str:
    """The inner task's name as biasmonkey's task names carry it (module docstring)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "task"


def question_text(sample: Sample, where: str) -> str:
    """A sample's question: its input string, or the text of its user messages (module docstring)."""
    if isinstance(sample.input, str):
        return sample.input
    users = [m.text for m in sample.input if isinstance(m, ChatMessageUser)]
    if not users:
        raise InnerTaskError(f"{where}: its input has no user message to take the question from")
    return "\n\n".join(users)


def gold_index(sample: Sample, choices: Sequence[str], where: str) -> int:
    """The gold choice's index: a target letter within the choices or the text of one choice, not
    both naming different choices (`prompts.target_choice`)."""
    target = sample.target
    if isinstance(target, list):
        if len(target) != 1:
            raise InnerTaskError(
                f"{where}: {len(target)} targets {target!r}; answer-position bias needs exactly one correct choice"
            )
        target = target[0]
    try:
        gold = target_choice(str(target), choices, where)
    except ValueError as err:
        raise InnerTaskError(str(err)) from None
    if gold is None:
        raise InnerTaskError(
            f"{where}: target {target!r} is neither a letter {LETTERS[0]}–{LETTERS[len(choices) - 1]} nor the text "
            f"of exactly one of its {len(choices)} choices; give each sample one correct choice (its letter or its text)"
        )
    return gold


def item_samples(inner: Task, inner_name: str, options: PositionOptions) -> list[Sample]:
    """The content-free samples (one per option count), then each item in each of its cyclic orders."""
    base = slug(inner_name)
    counts: dict[int, None] = {}  # the option counts present, in order of first sight
    questions: list[str] = []
    asked: list[Sample] = []
    seen: set[str] = set()
    for index, sample in enumerate(inner.dataset):
        item_id = str(sample.id) if sample.id is not None else f"{base}-{index}"
        where = f"task {inner_name}, sample {item_id}"
        choices = [str(c) for c in sample.choices or []]
        if not MIN_OPTIONS <= len(choices) <= MAX_OPTIONS:
            raise InnerTaskError(
                f"{where}: {len(choices)} choice{'s' if len(choices) != 1 else ''}; answer-position bias needs "
                f"{MIN_OPTIONS} to {MAX_OPTIONS} choices per sample (Sample(choices=[...]), one letter each): wrap a "
                "multiple-choice task"
            )
        if item_id in seen:
            raise InnerTaskError(f"{where}: two samples with this id; give every sample a unique id (or none)")
        seen.add(item_id)
        try:
            check_options(choices, where)
        except ValueError as err:
            raise InnerTaskError(str(err)) from None
        n, gold, question = len(choices), gold_index(sample, choices, where), question_text(sample, where)
        counts[n] = None
        questions.append(question)
        for shift in shifts_for(n, options.permutations, options.permutation_seed, item_id):
            shown = [choices[i] for i in cyclic_order(n, shift)]
            asked.append(_sample(question, item_id, "item", n, gold, shift, shown))
    if not asked:
        raise InnerTaskError(f"task {inner_name}: its dataset has no samples")
    blank = content_free_question(questions)
    content_free = [_sample(blank, f"content_free_{n}", "content_free", n, -1, 0, [CONTENT_FREE] * n) for n in counts]
    return [*content_free, *asked]


def _sample(question: str, item_id: str, kind: str, n: int, gold: int, shift: int, shown: list[str]) -> Sample:
    meta = {"id": item_id, "kind": kind, "n": n, "gold": gold, "shift": shift, "options": shown}
    target = "" if kind == "content_free" else LETTERS[shown_position(gold, n, shift)]
    sample_id = item_id if kind == "content_free" else f"{item_id}@{shift}"
    return Sample(id=sample_id, input=lettered_prompt(question, shown), target=target, metadata={META: meta})


# ---------------------------------------------------------------------------- solver and scorer


def spellings(n: int, letter_spellings: str) -> list[str]:
    """Each letter's spellings, letter by letter: " A" (and "A" for "both"), as lm-eval's requests."""
    return [s for x in LETTERS[:n] for s in ([" " + x, x] if letter_spellings == "both" else [" " + x])]


@solver
def position_logprobs(top_logprobs: int = DEFAULT_TOP_LOGPROBS, letter_spellings: str = "task") -> Solver:
    """The letters' spellings' log-probabilities after the lettered prompt (one request, one token)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        config = answer_logprobs_config(model, top_logprobs)
        state.output = await model.generate(state.input_text, config=config)
        top = first_token_top_logprobs(state.output, str(model), LOGPROBS_ONLY)
        logprobs, n_imputed = spelling_logprobs(top, spellings(state.metadata[META]["n"], letter_spellings))
        state.store.set("logprobs", logprobs)
        state.store.set("n_imputed", n_imputed)
        return state

    return solve


def explained(record: PositionRecord) -> tuple[str, str, dict[str, Any]]:
    """The score's answer (the chosen letter), its explanation (the letters' probabilities, the
    chosen letter, the gold letter) and the probabilities for the score's metadata."""
    letters = LETTERS[: record.n]
    probabilities = renormalised(record.letters)
    top = most_likely(letters, probabilities)
    tied = "/" in top
    answer = "tie " + top if tied else top
    if record.kind == "content_free":
        gold = "none (content-free prompt)"
    else:
        letter = letters[shown_position(record.gold, record.n, record.shift)]
        verdict = "tie" if tied else "right" if answer == letter else "wrong"
        gold = f"{letter} (original option {LETTERS[record.gold]}, shift {record.shift}): {verdict}"
    explanation = (
        f"{shares_text(letters, probabilities)} → {answer} (log-sum-exp of each letter's spellings, renormalised "
        f"over {letters[0]}–{letters[-1]}); gold {gold}"
    )
    return answer, explanation, {"probabilities": dict(zip(letters, probabilities))}


@scorer(metrics=[], name=FAMILY.scorer)  # metrics are attached by the task (the family's table)
def position_scorer() -> Scorer:
    """The family's per-document record from the solver's log-probabilities."""

    async def score(state: TaskState, target: Target) -> Score:
        record = score_document(state.metadata[META], state.store.get("logprobs"), state.store.get("n_imputed"))
        answer, explanation, extra = explained(record)
        return Score(
            value=score_value(record), answer=answer, explanation=explanation, metadata={**record.as_dict(), **extra}
        )

    return score


# ---------------------------------------------------------------------------- the task


def position_task(options: PositionOptions, inner_spec: str) -> Task:
    """The wrapped task: `inner_spec`'s items asked lettered, in their cyclic orders."""
    inner = load_inner_task(inner_spec)
    inner_name = slug(inner.name)
    fixed = {"inner": inner_name}
    return Task(
        dataset=MemoryDataset(item_samples(inner, inner.name, options), name=task_name(inner_name)),
        solver=position_logprobs(top_logprobs=options.top_logprobs, letter_spellings=options.letter_spellings),
        scorer=position_scorer(),
        metrics=family_metrics(FAMILY, options, fixed),
        version=SCORING_VERSION,
        epochs=Epochs(1, "mean"),
        metadata={TASK_METADATA: task_name(inner_name), "inner_task": inner_spec},
    )


SIGNATURE = inspect.Signature(
    [
        inspect.Parameter("task", inspect.Parameter.KEYWORD_ONLY, default="", annotation=str),
        *PositionOptions.inspect_parameters(),
    ]
)


def _position(**params: Any) -> Task:
    bound = SIGNATURE.bind(**params)
    bound.apply_defaults()
    arguments: Mapping[str, Any] = dict(bound.arguments)
    inner = str(arguments["task"])
    return position_task(PositionOptions(**{k: v for k, v in arguments.items() if k != "task"}), inner)


_position.__signature__ = SIGNATURE  # type: ignore[attr-defined]
_position.__name__ = _position.__qualname__ = NAME
_position.__doc__ = (
    "Answer-position bias on any multiple-choice Inspect task (-T task=<task>): each item asked lettered in "
    "its original and cyclic orders, plus one content-free prompt per option count."
)
metric_table(FAMILY)  # biasmonkey/position_metrics, resolvable from the entry point (inspect score)
position = task(name=NAME)(_position)
TASKS = {NAME: position}
