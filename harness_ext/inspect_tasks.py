"""Inspect adapter for the survey response-bias tasks: `inspect eval biasmonkey/<task>`.

One Sample per (q, q') pair, id = the question key. The paired solver asks q and q' with the
same generation settings (exact mode: one token with its top log-probabilities; sample mode:
N one-token answers at temperature 1); the scorer builds the core per-pair record; the metrics
recompute every set-level number from the records with `biasmonkey.metrics`, exactly as the
lm-eval adapter does.

`Score.value` holds the record's numbers: `delta`, `uncertainty_q`, `uncertainty_qp`,
`n_answers`, `n_invalid`, `n_imputed` and the answer weights per offered option, `q_0`, `q_1`, …
and `qp_0`, … (probabilities in exact mode, counts of valid answers in sample mode); in exact
mode also `valid_mass_q`/`valid_mass_qp` (the top-k probability of the option labels, imputed
floors included) and, with `-T virtual_samples=N`, `virtual_delta`, `invalid_mass` and
`virtual_expected_draws` (see `biasmonkey.metrics.virtual_sampling`). With
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
from biasmonkey.metrics import BIASES, PERTURBATIONS, SETTINGS, DeltaSummary, summarize_deltas
from biasmonkey.metrics.virtual_sampling import pair_virtual_values
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES
from biasmonkey.tasks.response_bias.prompts import render_prompt
from biasmonkey.tasks.response_bias.templates import get_template
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord, sample_counts, score_exact, score_weights

SIDES = ("q", "qp")
DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return
SCORER = "pair_scorer"


# ---------------------------------------------------------------------------- dataset


def pair_samples(opts: RunOptions, bias: str, setting: str, reword: bool = False) -> list[Sample]:
    """One Sample per pair: input = q's prompt; the metadata holds the pair and q''s prompt.
    The id is the question key (`<key>#s<seed>` for each draw of a perturbation_seeds run)."""
    return [
        Sample(
            id=pair["key"] if opts.perturbation_seeds is None or pair["perturbation_seed"] is None
            else f"{pair['key']}#s{pair['perturbation_seed']}",
            input=render_prompt(pair["q"], opts.template),
            metadata={**pair, "qp_prompt": render_prompt(pair["qp"], opts.template)},
        )
        for pair in opts.task_pairs(bias, setting, reword)
    ]


# ---------------------------------------------------------------------------- solver


@solver
def paired_answers(
    mode: str = "exact", n_samples: int = 50, top_logprobs: int = DEFAULT_TOP_LOGPROBS, max_new_tokens: int = 1
) -> Solver:
    """Ask q and then q' with identical settings; keep what the scorer needs in the store.
    (max_new_tokens: tokens per sampled answer, the prompt template's; exact mode scores one.)"""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        prompts = {"q": state.input_text, "qp": state.metadata["qp_prompt"]}
        for side, prompt in prompts.items():
            if mode == "exact":
                config = GenerateConfig(max_tokens=1, logprobs=True, top_logprobs=top_logprobs)
                output = await model.generate(prompt, config=config)
                state.store.set(f"{side}_top_logprobs", first_token_top_logprobs(output, str(model)))
            else:
                # The paper's protocol: one answer token (a generation template: up to its
                # max_new_tokens) at temperature 1, N times.
                config = GenerateConfig(max_tokens=max_new_tokens, temperature=1.0)
                outputs = await asyncio.gather(*(model.generate(prompt, config=config) for _ in range(n_samples)))
                state.store.set(f"{side}_answers", [o.completion for o in outputs])
                output = outputs[-1]
            if side == "q":
                state.output = output
        return state

    return solve


# ---------------------------------------------------------------------------- scorer


def score_value(
    record: PairRecord, q_weights: Sequence[float], qp_weights: Sequence[float], n_imputed: int,
    virtual_samples: int = 0, virtual_seed: int = 0,
) -> dict[str, float]:
    """The record's numbers as a flat dict (Inspect reduces epochs key by key); in exact mode
    also the valid masses and, with virtual sampling on, the pair's virtual-sampling values."""
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
    if record.valid_mass_q is not None and record.valid_mass_qp is not None:
        value.update(valid_mass_q=record.valid_mass_q, valid_mass_qp=record.valid_mass_qp)
    if virtual_samples:
        value.update(pair_virtual_values(record, virtual_samples, virtual_seed))
    return value


def record_of(sample_score: SampleScore) -> PairRecord:
    """The per-pair record behind a (possibly epoch-reduced) score."""
    doc = sample_score.sample_metadata or {}
    value = sample_score.score.value
    if not isinstance(value, dict) or "key" not in doc:
        raise ValueError(f"sample {sample_score.sample_id}: not a biasmonkey pair score")
    q, qp = ([value[f"{side}_{i}"] for i in range(len(doc[f"{side}_letters"]))] for side in SIDES)
    return score_weights(
        doc, q, qp, n_answers=value["n_answers"], n_invalid=value["n_invalid"],
        valid_mass_q=value.get("valid_mass_q"), valid_mass_qp=value.get("valid_mass_qp"),  # absent in older logs
    )


@scorer(metrics=[], name=SCORER)  # metrics are attached by the task (see METRICS)
def pair_scorer(virtual_samples: int = 0, virtual_seed: int = 0) -> Scorer:
    """The per-pair record from the paired solver's answers (exact mode: plus virtual_samples
    virtual answers per side drawn with virtual_seed, 0 = none)."""

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
            value=score_value(record, *weights, n_imputed=n_imputed, virtual_samples=virtual_samples, virtual_seed=virtual_seed),
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


def t_test_functions(
    name: str, count_name: str, summary: Callable[[list[SampleScore]], DeltaSummary]
) -> dict[str, Callable[[list[SampleScore]], float]]:
    """`<name>` (the mean), `_stderr`, `_ci_low`, `_ci_high`, `_t`, `_p` and the count, from a summary."""
    return {
        name: lambda s: summary(s).mean,
        f"{name}_stderr": lambda s: summary(s).stderr,
        f"{name}_ci_low": lambda s: summary(s).ci_low,
        f"{name}_ci_high": lambda s: summary(s).ci_high,
        f"{name}_t": lambda s: summary(s).t,
        f"{name}_p": lambda s: summary(s).p,
        count_name: lambda s: float(summary(s).n),
    }


# Metric name -> how it is computed from the scores (the same names as the lm-eval tasks).
METRIC_FUNCTIONS: dict[str, Callable[[list[SampleScore]], float]] = {
    **t_test_functions("delta", "n_pairs", _summary),
    "uncertainty_q": _mean_of("uncertainty_q"),
    "uncertainty_qp": _mean_of("uncertainty_qp"),
    "invalid_rate": _invalid_rate,
    "imputed_options": _imputed,
}


METRICS: dict[str, Callable[[], Metric]] = make_metrics(METRIC_FUNCTIONS)


def _values(scores: list[SampleScore], name: str) -> list[float]:
    return [float(s.score.value[name]) for s in scores]  # type: ignore[index]


def _virtual_summary(scores: list[SampleScore]) -> DeltaSummary:
    return summarize_deltas(_values(scores, "virtual_delta"))


def _mean_value(name: str) -> Callable[[list[SampleScore]], float]:
    def compute(scores: list[SampleScore]) -> float:
        values = _values(scores, name)
        return sum(values) / len(values) if values else float("nan")

    return compute


# With virtual_samples > 0 (exact mode): the same names as the lm-eval tasks report.
VIRTUAL_METRICS: dict[str, Callable[[], Metric]] = make_metrics({
    **t_test_functions("virtual_delta", "virtual_n_pairs", _virtual_summary),
    "invalid_mass": _mean_value("invalid_mass"),
    "virtual_expected_draws": _mean_value("virtual_expected_draws"),
})


# Per perturbation draw (perturbation_seeds): the Δ metrics over that draw's pairs, named as in lm-eval.
DRAW_METRICS = ("delta", "delta_stderr", "delta_ci_low", "delta_ci_high", "delta_t", "delta_p", "n_pairs")


def _of_draw(compute: Callable[[list[SampleScore]], float], seed: int) -> Callable[[list[SampleScore]], float]:
    def of_draw(scores: list[SampleScore]) -> float:
        return compute([s for s in scores if (s.sample_metadata or {}).get("perturbation_seed") == seed])

    return of_draw


def draw_metrics(seeds: Sequence[int] | None) -> list[Metric]:
    """`delta_s<seed>`, `delta_s<seed>_p`, …, `n_pairs_s<seed>` for every draw (none without seeds)."""
    functions = {
        (f"n_pairs_s{seed}" if name == "n_pairs" else name.replace("delta", f"delta_s{seed}", 1)): _of_draw(
            METRIC_FUNCTIONS[name], seed
        )
        for seed in seeds or ()
        for name in DRAW_METRICS
    }
    return [factory() for factory in make_metrics(functions).values()]


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
    virtual_samples: int = 0,
    virtual_seed: int = 0,
    perturbation_seeds: list[int] | str | None = None,
    reword: bool = False,
) -> Task:
    """The Inspect task for one bias (setting "bias") or one of its perturbations (reword: the
    alternative acquiescence wording)."""
    opts = RunOptions(
        mode=mode,
        n_samples=n_samples,
        perturbation_seed=perturbation_seed,
        perturbation_seeds=perturbation_seeds,  # type: ignore[arg-type]  (parsed by RunOptions)
        perturbation_rules=perturbation_rules,
        allow_forbid_all=allow_forbid_all,
        template=template,
        virtual_samples=virtual_samples,
        virtual_seed=virtual_seed,
    )
    check_positive_int("top_logprobs", top_logprobs)
    virtual_metrics = VIRTUAL_METRICS.values() if opts.virtual_samples else ()
    return Task(
        dataset=MemoryDataset(pair_samples(opts, bias, setting, reword), name=task_name(bias, setting, reword)),
        solver=paired_answers(mode, n_samples, top_logprobs, get_template(template).max_new_tokens),
        scorer=pair_scorer(opts.virtual_samples, opts.virtual_seed),
        metrics=[factory() for factory in (*METRICS.values(), *virtual_metrics)]
        + draw_metrics(opts.perturbation_seeds if setting in PERTURBATIONS else None),
        epochs=Epochs(1, "mean"),
        metadata={"bias": bias, "setting": setting, "options": opts.__dict__},
    )


def _register(bias: str, setting: str) -> Callable[..., Task]:
    """Register `biasmonkey/<name>`: response_bias_task for this bias and setting."""
    doc = f"Survey response bias {bias!r}, setting {setting!r} (Tjuatja et al., TACL 2024)."
    fixed = {"bias": bias, "setting": setting, "reword": False}
    return register_task(task_name(bias, setting), response_bias_task, fixed, doc)


# biasmonkey/acquiescence, biasmonkey/acquiescence_key_typo, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = {task_name(b, s): _register(b, s) for b in BIASES for s in SETTINGS}
# Variants outside the main suite: biasmonkey/acquiescence_reword (the alternative acquiescence wording).
VARIANT_TASKS: dict[str, Callable[..., Task]] = {
    "acquiescence_reword": register_task(
        "acquiescence_reword",
        response_bias_task,
        {"bias": "acquiescence", "setting": "bias", "reword": True},
        "Survey response bias 'acquiescence' with the alternative wording of q' (Tjuatja et al., TACL 2024).",
    )
}
globals().update(TASKS, **VARIANT_TASKS)


# ---------------------------------------------------------------------------- logs


def records_from_eval_log(path: str | Path) -> list[PairRecord]:
    """The per-pair records of a response-bias Inspect log (`.eval` or `.json`).

    With several epochs the log holds every epoch's score; the records are rebuilt from the
    epoch-reduced scores, as the metrics saw them."""
    return [record_of(s) for s in reduced_sample_scores(path, SCORER)]
