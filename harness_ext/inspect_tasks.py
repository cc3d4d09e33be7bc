"""Inspect adapter for the survey response-bias tasks: `inspect eval biasmonkey/<task>`.

One Sample per (q, q') pair, id = the question key. The paired solver asks q and q' with the
same generation settings (exact mode: one token with its top log-probabilities; sample mode:
N one-token answers at temperature 1); the scorer builds the core per-pair record; the metrics
recompute every set-level number from the records with `biasmonkey.metrics`, exactly as the
lm-eval adapter does.

`Score.value` holds the record's numbers: `delta`, `uncertainty_q`, `uncertainty_qp`,
`n_answers`, `n_invalid`, `n_imputed` and the answer weights per offered option, `q_0`, `q_1`, …
and `qp_0`, … (probabilities in exact mode, counts of valid answers in sample mode). With
`--epochs N` Inspect's mean reducer averages them key by key; the metrics rebuild each pair's
distributions from the averaged weights, so sampled answers are pooled over epochs (Δ of the
pooled counts, not the mean of per-epoch Δs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect_common import check_positive_int, make_metrics, reduced_sample_scores, register_task
from biasmonkey.harness_ext.inspect_logprobs import first_token_top_logprobs, label_logprobs
from biasmonkey.metrics import BIASES, SETTINGS, DeltaSummary, summarize_deltas
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES
from biasmonkey.tasks.response_bias.prompts import render_prompt
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord, sample_counts, score_exact, score_weights

SIDES = ("q", "qp")
DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return
SCORER = "pair_scorer"


# ---------------------------------------------------------------------------- dataset


def pair_samples(opts: RunOptions, bias: str, setting: str) -> list[Sample]:
    """One Sample per pair: input = q's prompt; the metadata holds the pair and q''s prompt."""
    return [
        Sample(
            id=pair["key"],
            input=render_prompt(pair["q"], opts.template),
            metadata={**pair, "qp_prompt": render_prompt(pair["qp"], opts.template)},
        )
        for pair in opts.task_pairs(bias, setting)
    ]


# ---------------------------------------------------------------------------- solver


@solver
def paired_answers(mode: str = "exact", n_samples: int = 50, top_logprobs: int = DEFAULT_TOP_LOGPROBS) -> Solver:
    """Ask q and then q' with identical settings; keep what the scorer needs in the store."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        prompts = {"q": state.input_text, "qp": state.metadata["qp_prompt"]}
        for side, prompt in prompts.items():
            if mode == "exact":
                config = GenerateConfig(max_tokens=1, logprobs=True, top_logprobs=top_logprobs)
                output = await model.generate(prompt, config=config)
                state.store.set(f"{side}_top_logprobs", first_token_top_logprobs(output, str(model)))
            else:
                # The paper's protocol: one answer token at temperature 1, N times.
                config = GenerateConfig(max_tokens=1, temperature=1.0)
                outputs = await asyncio.gather(*(model.generate(prompt, config=config) for _ in range(n_samples)))
                state.store.set(f"{side}_answers", [o.completion for o in outputs])
                output = outputs[-1]
            if side == "q":
                state.output = output
        return state

    return solve


# ---------------------------------------------------------------------------- scorer


def score_value(record: PairRecord, q_weights: Sequence[float], qp_weights: Sequence[float], n_imputed: int) -> dict[str, float]:
    """The record's numbers as a flat dict (Inspect reduces epochs key by key)."""
    value: dict[str, float] = {
        "delta": float("nan") if record.delta is None else record.delta,
        "uncertainty_q": float("nan") if record.uncertainty_q is None else record.uncertainty_q,
        "uncertainty_qp": float("nan") if record.uncertainty_qp is None else record.uncertainty_qp,
        "n_answers": record.n_answers,
        "n_invalid": record.n_invalid,
        "n_imputed": n_imputed,
    }
    for side, weights in zip(SIDES, (q_weights, qp_weights)):
        value.update({f"{side}_{i}": float(w) for i, w in enumerate(weights)})
    return value


def record_of(sample_score: SampleScore) -> PairRecord:
    """The per-pair record behind a (possibly epoch-reduced) score."""
    doc = sample_score.sample_metadata or {}
    value = sample_score.score.value
    if not isinstance(value, dict) or "key" not in doc:
        raise ValueError(f"sample {sample_score.sample_id}: not a biasmonkey pair score")
    q, qp = ([value[f"{side}_{i}"] for i in range(len(doc[f"{side}_letters"]))] for side in SIDES)
    return score_weights(doc, q, qp, n_answers=value["n_answers"], n_invalid=value["n_invalid"])


@scorer(metrics=[], name=SCORER)  # metrics are attached by the task (see METRICS)
def pair_scorer() -> Scorer:
    """The per-pair record from the paired solver's answers."""

    async def score(state: TaskState, target: Target) -> Score:
        doc = state.metadata
        if state.store.get("q_top_logprobs") is not None:
            (q_lp, q_imp), (qp_lp, qp_imp) = (
                label_logprobs(state.store.get(f"{side}_top_logprobs"), doc[f"{side}_letters"]) for side in SIDES
            )
            record = score_exact(doc, q_lp, qp_lp)
            weights, n_imputed = (record.p_q, record.p_qp), q_imp + qp_imp
        else:
            q_counts, qp_counts, n_answers, n_invalid = sample_counts(doc, *(state.store.get(f"{side}_answers") for side in SIDES))
            record = score_weights(doc, q_counts, qp_counts, n_answers=n_answers, n_invalid=n_invalid)
            weights, n_imputed = (q_counts, qp_counts), 0
        return Score(
            value=score_value(record, *weights, n_imputed=n_imputed),
            answer=None if record.delta is None else f"{record.delta:.3f}",
            metadata=record.as_dict(),
        )

    return score


# ---------------------------------------------------------------------------- metrics


def _summary(scores: list[SampleScore]) -> DeltaSummary:
    return summarize_deltas([r.delta for r in map(record_of, scores) if r.delta is not None])


def _mean_of(field: str) -> Callable[[list[SampleScore]], float]:
    def compute(scores: list[SampleScore]) -> float:
        values = [getattr(r, field) for r in map(record_of, scores) if getattr(r, field) is not None]
        return sum(values) / len(values) if values else float("nan")

    return compute


def _invalid_rate(scores: list[SampleScore]) -> float:
    records = [record_of(s) for s in scores]
    answers = sum(r.n_answers for r in records)
    return sum(r.n_invalid for r in records) / answers if answers else 0.0


def _imputed(scores: list[SampleScore]) -> float:
    return float(sum(s.score.value["n_imputed"] for s in scores))  # type: ignore[index]


# Metric name -> how it is computed from the scores (the same names as the lm-eval tasks).
METRIC_FUNCTIONS: dict[str, Callable[[list[SampleScore]], float]] = {
    "delta": lambda s: _summary(s).mean,
    "delta_stderr": lambda s: _summary(s).stderr,
    "delta_ci_low": lambda s: _summary(s).ci_low,
    "delta_ci_high": lambda s: _summary(s).ci_high,
    "delta_t": lambda s: _summary(s).t,
    "delta_p": lambda s: _summary(s).p,
    "n_pairs": lambda s: float(_summary(s).n),
    "uncertainty_q": _mean_of("uncertainty_q"),
    "uncertainty_qp": _mean_of("uncertainty_qp"),
    "invalid_rate": _invalid_rate,
    "imputed_options": _imputed,
}


METRICS: dict[str, Callable[[], Metric]] = make_metrics(METRIC_FUNCTIONS)


# ---------------------------------------------------------------------------- tasks


def response_bias_task(
    bias: str,
    setting: str,
    mode: str = "exact",
    n_samples: int = 50,
    perturbation_seed: int | None = None,
    perturbation_rules: str = DEFAULT_RULES,
    allow_forbid_all: bool = False,
    template: str = "default",
    top_logprobs: int = DEFAULT_TOP_LOGPROBS,
) -> Task:
    """The Inspect task for one bias (setting "bias") or one of its perturbations."""
    opts = RunOptions(
        mode=mode,
        n_samples=n_samples,
        perturbation_seed=perturbation_seed,
        perturbation_rules=perturbation_rules,
        allow_forbid_all=allow_forbid_all,
        template=template,
    )
    check_positive_int("top_logprobs", top_logprobs)
    return Task(
        dataset=MemoryDataset(pair_samples(opts, bias, setting), name=task_name(bias, setting)),
        solver=paired_answers(mode=mode, n_samples=n_samples, top_logprobs=top_logprobs),
        scorer=pair_scorer(),
        metrics=[factory() for factory in METRICS.values()],
        epochs=Epochs(1, "mean"),
        metadata={"bias": bias, "setting": setting, "options": opts.__dict__},
    )


def _register(bias: str, setting: str) -> Callable[..., Task]:
    """Register `biasmonkey/<name>`: response_bias_task for this bias and setting."""
    doc = f"Survey response bias {bias!r}, setting {setting!r} (Tjuatja et al., TACL 2024)."
    return register_task(task_name(bias, setting), response_bias_task, {"bias": bias, "setting": setting}, doc)


# biasmonkey/acquiescence, biasmonkey/acquiescence_key_typo, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = {task_name(b, s): _register(b, s) for b in BIASES for s in SETTINGS}
globals().update(TASKS)


# ---------------------------------------------------------------------------- logs


def records_from_eval_log(path: str | Path) -> list[PairRecord]:
    """The per-pair records of a response-bias Inspect log (`.eval` or `.json`).

    With several epochs the log holds every epoch's score; the records are rebuilt from the
    epoch-reduced scores, as the metrics saw them."""
    return [record_of(s) for s in reduced_sample_scores(path, SCORER)]
