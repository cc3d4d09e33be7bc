"""Inspect adapter for the answer-position tasks: `inspect eval biasmonkey/answer_position_anatomy`.

One Sample per question (id = the question id, input = its prompt). The solver asks for one
token with its top log-probabilities; the log-probabilities of the eight continuations " A", "A",
… " D", "D" are read from that list spelling by spelling (`spelling_logprobs`: a spelling
missing from the list gets the documented floor and is counted in `imputed_continuations`), so
`score_item` receives the same eight numbers lm-eval scores, provided each continuation is one
token of the model's tokenizer. With hf/ models, use the raw-prompt chat template
(configs/inspect_hf_raw_prompt.yaml) for the prompt lm-eval scores after.

`Score.value` holds the family's record (`biasmonkey.tasks.answer_position.codecs`); the metrics
are the family's metric table, the lm-eval tasks' metrics under the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect.common import (
    answer_logprobs_config,
    family_metrics,
    first_token_top_logprobs,
    register_tasks,
    renormalised,
    shares_text,
)
from biasmonkey.metrics.top_logprobs import spelling_logprobs
from biasmonkey.tasks.answer_position import data
from biasmonkey.tasks.answer_position.codecs import score_value
from biasmonkey.tasks.answer_position.family import FAMILY, task_name
from biasmonkey.tasks.answer_position.options import DEFAULT_TOP_LOGPROBS, AnswerPositionOptions
from biasmonkey.tasks.answer_position.prompts import CONTINUATIONS, LETTERS, render_prompt
from biasmonkey.tasks.answer_position.scoring import McqRecord, score_item

# The Inspect tasks' `version`: raised whenever what the scorer stores or how the metric table
# computes from it changes, so logs of different scoring are told apart (docs/inspect.md).
SCORING_VERSION = 1

LOGPROBS_ONLY = (
    "or run the lm-eval tasks (biasmonkey_answer_position_*): the answer-position tasks read answers "
    "from log-probabilities only"
)


def item_samples(subject: str, prompt: str, k: int, seed: int) -> list[Sample]:
    """One Sample per question; the metadata is the question's id, subject and gold letter."""
    return [
        Sample(
            id=item.id,
            input=render_prompt(item.query, prompt),
            target=item.gold,
            metadata={"id": item.id, "domain": item.domain, "gold": item.gold, "k": k, "seed": seed},
        )
        for item in data.load_mmlu(subject)
    ]


@solver
def answer_position_logprobs(top_logprobs: int = DEFAULT_TOP_LOGPROBS) -> Solver:
    """The continuations' log-probabilities after the question's prompt (one request, one token)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        config = answer_logprobs_config(model, top_logprobs)
        state.output = await model.generate(state.input_text, config=config)
        top = first_token_top_logprobs(state.output, str(model), LOGPROBS_ONLY)
        logprobs, n_imputed = spelling_logprobs(top, CONTINUATIONS)
        state.store.set("logprobs", logprobs)
        state.store.set("n_imputed", n_imputed)
        return state

    return solve


def _answer(record: McqRecord) -> str:
    shares = record.answers()
    top = [x for x, share in zip(LETTERS, shares) if share == max(shares)]
    return top[0] if len(top) == 1 else "tie " + "/".join(top)


def explained(record: McqRecord) -> tuple[str, str, dict[str, Any]]:
    """The score's answer (the chosen letter), its explanation and the metadata added to the
    record's: the letters' probabilities renormalised over A–D."""
    answer = _answer(record)
    probabilities = renormalised(record.letters)
    verdict = "tie" if answer.startswith("tie") else "right" if answer == record.gold else "wrong"
    explanation = (
        f"{shares_text(LETTERS, probabilities)} → {answer} (log-sum-exp of ' X'/'X' per letter, renormalised over "
        f"{LETTERS[0]}–{LETTERS[-1]}); gold {record.gold}: {verdict}"
    )
    return answer, explanation, {"probabilities": dict(zip(LETTERS, probabilities))}


@scorer(metrics=[], name=FAMILY.scorer)  # metrics are attached by the task (the family's table)
def answer_position_scorer() -> Scorer:
    """The family's per-question record from the solver's log-probabilities."""

    async def score(state: TaskState, target: Target) -> Score:
        record = score_item(state.metadata, state.store.get("logprobs"), state.store.get("n_imputed"))
        answer, explanation, extra = explained(record)
        return Score(
            value=score_value(record), answer=answer, explanation=explanation, metadata={**record.as_dict(), **extra}
        )

    return score


def answer_position_task(options: AnswerPositionOptions, subject: str, prompt: str = "zeroshot") -> Task:
    """The Inspect task of one MMLU subject and prompt type (k, seed: the Specific correction's folds)."""
    fixed = {"subject": subject, "prompt": prompt}
    return Task(
        dataset=MemoryDataset(item_samples(subject, prompt, options.k, options.seed), name=task_name(**fixed)),
        solver=answer_position_logprobs(top_logprobs=options.top_logprobs),
        scorer=answer_position_scorer(),
        metrics=family_metrics(FAMILY, options, fixed),
        version=SCORING_VERSION,
        epochs=Epochs(1, "mean"),
        metadata={**fixed, "k": options.k, "seed": options.seed},
    )


def _describe(subject: str, prompt: str) -> str:
    return f"Answer-position bias on MMLU {subject.replace('_', ' ')}, {prompt} prompt (Bhatt & Ivanova, 2025)."


# biasmonkey/answer_position_abstract_algebra, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = register_tasks(FAMILY, answer_position_task, _describe)
