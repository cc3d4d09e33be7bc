"""Inspect adapter for the cognitive-bias tests (Malberg et al., 2025):
`inspect eval biasmonkey/cognitive_<bias>`.

One Sample per test (id = the test id, metadata = the harness document). The solver decides
the control and then the treatment test greedily (temperature 0) with one of two protocols:

- `two_step` (default, the paper's): a free answer to the test, then a second, independent
  call that reads the offered options and that answer and names the option ("Option N");
- `one_step`: what lm-eval's generate mode does, for parity: one prompt asking for the option
  line, generation ended at the first blank line (`prompts.ONE_STEP_STOP`).

The scorer builds the core per-test record (`scoring.score_answers`: answers read with the
paper's regex and mapped back to the original option order). `Score.value` holds flat numbers:
`score` (m, NaN for a failed test), `failed`, `control_failed`, `treatment_failed` (0/1),
`answer_control`, `answer_treatment` (zero-based original indices, NaN when unreadable) and
`random_baseline`. With `--epochs N` Inspect's mean reducer averages them key by key, skipping
NaN: a test's score is the mean m over its epochs with two valid answers, `failed` the share
of its epochs that failed. The metrics are those of the lm-eval tasks, computed with
`biasmonkey.metrics`.

Exact mode (label log-likelihoods) is lm-eval only: see `EXACT_MODE_UNAVAILABLE`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, Model, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect_common import check_positive_int, make_metrics, read_finished_log, register_task
from biasmonkey.metrics.cognitive import BiasSummary, summarize_bias
from biasmonkey.tasks.cognitive.data import BIASES
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    ONE_STEP_MAX_TOKENS,
    ONE_STEP_STOP,
    SIDES,
    answer_prompt,
    decision_prompt,
    extraction_prompt,
    offered,
    one_step_answer,
    side_text,
)
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, score_answers

PROTOCOLS = ("two_step", "one_step")
# Default generation length per protocol: one_step as in lm-eval; two_step leaves room for a
# free answer with some reasoning (the extraction step only needs "Option N").
DEFAULT_MAX_TOKENS = {"one_step": ONE_STEP_MAX_TOKENS, "two_step": 512}
SCORER = "cognitive_scorer"

EXACT_MODE_UNAVAILABLE = (
    "mode=exact is not available in Inspect: it scores the log-likelihood of each full answer label "
    "('Option 1:' ... 'Option 11:', several tokens each) as a continuation of the prompt, and Inspect's "
    "model providers return log-probabilities only for the tokens a model generates (with their top "
    "alternatives), never for a given multi-token continuation. Use -T mode=generate (the default), or run "
    "exact mode in lm-eval: lm_eval --tasks biasmonkey_cognitive_<bias> --metadata mode=exact"
)


# ---------------------------------------------------------------------------- dataset


def bias_samples(opts: CognitiveOptions, bias: str, protocol: str) -> list[Sample]:
    """One Sample per test; the input is the first prompt the solver sends (the control's)."""
    first_prompt = answer_prompt if protocol == "one_step" else decision_prompt
    return [
        Sample(id=doc["id"], input=first_prompt(side_text(doc, "control")), metadata=doc)
        for doc in opts.task_docs(bias)
    ]


# ---------------------------------------------------------------------------- solver


def require_greedy(model: Model) -> None:
    """Local transformers providers (hf/, nnterp/) sample unless told not to, and reject
    temperature 0 while sampling: say how to make them decide greedily."""
    if getattr(model.api, "do_sample", None) is True:
        raise ValueError(
            f"model {model} samples by default, but the cognitive-bias tasks decide greedily "
            "(temperature 0, as in the paper): add -M do_sample=false"
        )


@solver
def decisions(protocol: str = "two_step", max_tokens: int = DEFAULT_MAX_TOKENS["two_step"]) -> Solver:
    """Control then treatment, each a fresh conversation at temperature 0. Stores each side's
    answer text (`<side>_answer`) and, in two_step, the free answer (`<side>_decision`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        require_greedy(model)
        doc = state.metadata
        for side in SIDES:
            test = side_text(doc, side)
            if protocol == "one_step":
                config = GenerateConfig(temperature=0.0, max_tokens=max_tokens, stop_seqs=[ONE_STEP_STOP])
                output = await model.generate(answer_prompt(test), config=config)
                answer = one_step_answer(output.completion)
            else:
                config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)
                decision = await model.generate(decision_prompt(test), config=config)
                state.store.set(f"{side}_decision", decision.completion)
                options = offered(doc[f"{side}_options"], doc["reversed"])
                output = await model.generate(extraction_prompt(options, decision.completion), config=config)
                answer = output.completion
            state.store.set(f"{side}_answer", answer)
            if side == "control":
                state.output = output
        return state

    return solve


# ---------------------------------------------------------------------------- scorer


def _number(value: float | int | None) -> float:
    return float("nan") if value is None else float(value)


def score_value(record: CognitiveRecord) -> dict[str, float]:
    """The record's numbers as a flat dict (Inspect reduces epochs key by key)."""
    return {
        "score": _number(record.score),
        "failed": float(record.failed),
        "control_failed": float(record.answer_control is None),
        "treatment_failed": float(record.answer_treatment is None),
        "answer_control": _number(record.answer_control),
        "answer_treatment": _number(record.answer_treatment),
        "random_baseline": record.random_baseline,
    }


def _option(index: int | None) -> str:
    return "none" if index is None else f"Option {index + 1}"


@scorer(metrics=[], name=SCORER)  # metrics are attached by the task (see METRICS)
def cognitive_scorer() -> Scorer:
    """The per-test record from the two answer texts."""

    async def score(state: TaskState, target: Target) -> Score:
        record = score_answers(state.metadata, *(state.store.get(f"{side}_answer") for side in SIDES))
        decisions = {f"decision_{side}": state.store.get(f"{side}_decision") for side in SIDES}
        return Score(
            value=score_value(record),
            answer=f"control {_option(record.answer_control)}, treatment {_option(record.answer_treatment)} "
            "(original numbering)",
            explanation=record.failure,
            metadata={**record.as_dict(), **decisions},
        )

    return score


# ---------------------------------------------------------------------------- metrics


def _values(scores: list[SampleScore]) -> list[dict[str, float]]:
    values = [s.score.value for s in scores]
    for s, value in zip(scores, values):
        if not isinstance(value, dict) or "score" not in value:
            raise ValueError(f"sample {s.sample_id}: not a biasmonkey cognitive-bias score")
    return values  # type: ignore[return-value]


def _summary(scores: list[SampleScore]) -> BiasSummary:
    values = _values(scores)
    return summarize_bias(
        [None if math.isnan(v["score"]) else v["score"] for v in values], [v["random_baseline"] for v in values]
    )


def _failure_rate(scores: list[SampleScore]) -> float:
    """Share of the answer attempts (tests × epochs) without a valid answer pair."""
    values = _values(scores)
    return sum(v["failed"] for v in values) / len(values) if values else float("nan")


# Metric name -> how it is computed from the scores (the same names as the lm-eval tasks).
METRIC_FUNCTIONS: dict[str, Callable[[list[SampleScore]], float]] = {
    "score": lambda s: _summary(s).score.mean,
    "score_stderr": lambda s: _summary(s).score.stderr,
    "score_ci_low": lambda s: _summary(s).score.ci_low,
    "score_ci_high": lambda s: _summary(s).score.ci_high,
    "score_t": lambda s: _summary(s).score.t,
    "score_p": lambda s: _summary(s).score.p,
    "n_tests": lambda s: float(_summary(s).score.n),
    "failure_rate": _failure_rate,
    "random_baseline": lambda s: _summary(s).random_baseline,
}
METRICS: dict[str, Callable[[], Metric]] = make_metrics(METRIC_FUNCTIONS)


# ---------------------------------------------------------------------------- tasks


def cognitive_task(
    bias: str,
    mode: str = "generate",
    protocol: str = "two_step",
    reverse_options: bool = True,
    seed: int = 42,
    data_path: str | None = None,
    revision: str | None = None,
    max_tokens: int | None = None,
) -> Task:
    """The Inspect task of one cognitive bias (max_tokens None: 512 for two_step, 48 for one_step)."""
    if mode == "exact":
        raise ValueError(EXACT_MODE_UNAVAILABLE)
    if mode != "generate":
        raise ValueError(f"option mode={mode!r} is invalid; Inspect runs mode=generate (exact mode is lm-eval only)")
    if protocol not in PROTOCOLS:
        raise ValueError(f"option protocol={protocol!r} is invalid; use one of {', '.join(PROTOCOLS)}")
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS[protocol]
    check_positive_int("max_tokens", max_tokens)
    opts = CognitiveOptions(mode=mode, reverse_options=reverse_options, seed=seed, data_path=data_path, revision=revision)
    return Task(
        dataset=MemoryDataset(bias_samples(opts, bias, protocol), name=f"cognitive_{bias}"),
        solver=decisions(protocol=protocol, max_tokens=max_tokens),
        scorer=cognitive_scorer(),
        metrics=[factory() for factory in METRICS.values()],
        epochs=Epochs(1, "mean"),
        metadata={"bias": bias, "protocol": protocol, "max_tokens": max_tokens, "options": opts.__dict__},
    )


# biasmonkey/cognitive_anchoring, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = {
    f"cognitive_{slug}": register_task(
        f"cognitive_{slug}", cognitive_task, {"bias": slug},
        f"Cognitive bias {published!r} (Malberg et al., 2025): control vs treatment decisions.",
    )
    for slug, published in BIASES.items()
}
globals().update(TASKS)


# ---------------------------------------------------------------------------- logs

_RECORD_FIELDS = [f.name for f in fields(CognitiveRecord)]


def records_from_eval_log(path: str | Path) -> list[CognitiveRecord]:
    """The per-test records of a cognitive-bias Inspect log (`.eval` or `.json`), as the scorer
    built them (answer texts, failure reasons included).

    With `--epochs N` the log holds N records per test (one per epoch, same id); the task's
    metrics average each test's epochs first, so `summarize_records` of this list reproduces
    them only for a single epoch."""
    log = read_finished_log(path)
    records = []
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER)
        if score is None or not score.metadata:
            raise ValueError(f"{path}: sample {sample.id} has no {SCORER} score: not a biasmonkey cognitive-bias log")
        records.append(CognitiveRecord(**{name: score.metadata[name] for name in _RECORD_FIELDS}))
    return records
