"""Inspect solver, scorer and tasks of the survey response biases: `inspect eval biasmonkey/<task>`.

One Sample per (q, q') pair, id = the question key (`<key>#s<seed>` for each draw of a
perturbation_seeds run). The paired solver asks q and q' with the same generation settings
(exact mode: one token with its top log-probabilities; sample mode: N answers at temperature 1);
the scorer builds the family's per-pair record and stores it as `Score.value` (see
`biasmonkey.tasks.response_bias.codecs`); the metrics are the family's metric table.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect.common import (
    answer_logprobs_config,
    family_metrics,
    first_token_top_logprobs,
    most_likely,
    register_tasks,
    shares_text,
)
from biasmonkey.metrics.response_bias import delta_rule
from biasmonkey.metrics.top_logprobs import spelling_logprobs
from biasmonkey.tasks.response_bias.codecs import SIDES, score_value
from biasmonkey.tasks.response_bias.family import FAMILY, SUITE_TASKS
from biasmonkey.tasks.response_bias.options import DEFAULT_TOP_LOGPROBS, RunOptions
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.prompts import answer_continuations, render_prompt
from biasmonkey.tasks.response_bias.scoring import (
    PairRecord,
    option_logprobs,
    sample_counts,
    score_exact,
    score_weights,
)
from biasmonkey.tasks.response_bias.templates import get_template

# The Inspect tasks' `version`: raised whenever what the scorer stores or how the metric table
# computes from it changes, so logs of different scoring are told apart (docs/inspect.md).
# 2: each spelling (" A", "A") read and imputed on its own, `n_imputed` counting spellings; with
# perturbation_seeds, Δ's t-test over questions (each averaged over its draws).
SCORING_VERSION = 2


def pair_samples(opts: RunOptions, bias: str, setting: str, reword: bool = False) -> list[Sample]:
    """One Sample per pair: input = q's prompt; the metadata holds the pair and q''s prompt."""
    return [
        Sample(
            id=pair["key"]
            if opts.perturbation_seeds is None or pair["perturbation_seed"] is None
            else f"{pair['key']}#s{pair['perturbation_seed']}",
            input=render_prompt(pair["q"], opts.template),
            metadata={**pair, "qp_prompt": render_prompt(pair["qp"], opts.template)},
        )
        for pair in opts.task_pairs(bias, setting, reword)
    ]


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
                config = answer_logprobs_config(model, top_logprobs)
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


def top_k_option_logprobs(top: Sequence[tuple[str, float]], letters: Sequence[str]) -> tuple[list[float], int]:
    """Each option's log-probability from a top-k list, as lm-eval scores it: log(P(" A") + P("A")),
    each spelling read on its own, so a spelling outside the top-k gets the documented floor and
    is counted (`biasmonkey.metrics.top_logprobs`); and how many spellings were imputed."""
    spellings, n_imputed = spelling_logprobs(top, answer_continuations(list(letters)))
    return option_logprobs(spellings), n_imputed


def _positions(targets: Sequence[int]) -> str:
    return "+".join("abcde"[t] for t in targets)


def delta_rule_text(bias: str, setting: str) -> str:
    """Δ's rule in words: "+100·(q'[a] − q[a])" (letters: the original question's option
    positions, onto which q''s options are mapped)."""
    rule = delta_rule(bias, setting)
    sign = "+" if rule.sign > 0 else "−"
    return f"{sign}100·(q'[{_positions(rule.treatment_targets)}] − q[{_positions(rule.control_targets)}])"


def explained(
    doc: Mapping[str, Any], record: PairRecord, counts: tuple[Sequence[int], Sequence[int]] | None = None
) -> tuple[str, str]:
    """The score's answer (the option letter of q and of q' the model prefers: the most likely
    one in exact mode, the sampled answers' mode in sample mode) and its explanation (each
    side's distribution, Δ and its rule). `counts`: sample mode's valid answers per option."""
    answers, sides = [], []
    for i, (side, name) in enumerate(zip(SIDES, ("q", "q'"))):
        letters, dist = doc[f"{side}_letters"], getattr(record, f"p_{side}")
        if dist is None:
            answers.append(f"{name}: none")
            sides.append(f"{name}: no valid answer")
            continue
        answers.append(f"{name}: {most_likely(letters, dist)}")
        shares = shares_text(letters, dist)
        if counts is not None:
            shares += f" (of {sum(counts[i])} valid answers)"
        sides.append(f"{name}: {shares}")
    rule = delta_rule_text(doc["bias"], doc["setting"])
    how = "shares of the valid sampled answers" if counts is not None else "option probabilities renormalised"
    delta = (
        f"no Δ = {rule} (a side has no valid answer)"
        if record.delta is None
        else f"Δ = {record.delta:+.1f} points = {rule}"
    )
    explanation = "; ".join(sides) + f" ({how}); {delta}"
    if counts is not None:
        explanation += f"; {record.n_invalid:g} of {record.n_answers:g} answers invalid"
    if list(doc["qp_positions"]) != list(range(len(doc["qp_letters"]))):
        mapped = ", ".join(f"{x}→{'abcde'[i]}" for x, i in zip(doc["qp_letters"], doc["qp_positions"]))
        explanation += f"; q' options at q positions {mapped}"
    return ", ".join(answers), explanation


@scorer(metrics=[], name=FAMILY.scorer)  # metrics are attached by the task (the family's table)
def pair_scorer(virtual_samples: int = 0, virtual_seed: int = 0) -> Scorer:
    """The per-pair record from the paired solver's answers (exact mode: plus virtual_samples
    virtual answers per side drawn with virtual_seed, 0 = none)."""

    async def score(state: TaskState, target: Target) -> Score:
        doc = state.metadata
        if state.store.get("q_top_logprobs") is not None:
            (q_lp, q_imp), (qp_lp, qp_imp) = (
                top_k_option_logprobs(state.store.get(f"{side}_top_logprobs"), doc[f"{side}_letters"]) for side in SIDES
            )
            record = score_exact(doc, q_lp, qp_lp, n_imputed=q_imp + qp_imp)
            weights = (record.p_q, record.p_qp)
            counts = None
        else:
            q_counts, qp_counts, n_answers, n_invalid = sample_counts(
                doc, *(state.store.get(f"{side}_answers") for side in SIDES)
            )
            record = score_weights(doc, q_counts, qp_counts, n_answers=n_answers, n_invalid=n_invalid)
            weights = counts = (q_counts, qp_counts)
        answer, explanation = explained(doc, record, counts)
        return Score(
            value=score_value(record, *weights, virtual_samples=virtual_samples, virtual_seed=virtual_seed),
            answer=answer,
            explanation=explanation,
            # the sample's messages hold q's prompt only: both prompts, for `inspect view`
            metadata={**record.as_dict(), "prompts": {"q": state.input_text, "qp": doc["qp_prompt"]}},
        )

    return score


def response_bias_task(options: RunOptions, bias: str, setting: str, reword: bool = False) -> Task:
    """The Inspect task for one bias (setting "bias") or one of its perturbations (reword: the
    alternative acquiescence wording)."""
    fixed = {"bias": bias, "setting": setting, "reword": reword}
    return Task(
        dataset=MemoryDataset(pair_samples(options, bias, setting, reword), name=task_name(bias, setting, reword)),
        solver=paired_answers(
            options.mode, options.n_samples, options.top_logprobs, get_template(options.template).max_new_tokens
        ),
        scorer=pair_scorer(options.virtual_samples, options.virtual_seed),
        metrics=family_metrics(FAMILY, options, fixed),
        version=SCORING_VERSION,
        epochs=Epochs(1, "mean"),
        metadata={"bias": bias, "setting": setting, "options": options.__dict__},
    )


def _describe(bias: str, setting: str, reword: bool) -> str:
    if reword:
        return f"Survey response bias {bias!r} with the alternative wording of q' (Tjuatja et al., TACL 2024)."
    return f"Survey response bias {bias!r}, setting {setting!r} (Tjuatja et al., TACL 2024)."


_REGISTERED = register_tasks(FAMILY, response_bias_task, _describe)
# biasmonkey/acquiescence, biasmonkey/acquiescence_key_typo, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = {name: fn for name, fn in _REGISTERED.items() if name in SUITE_TASKS}
# Variants outside the main suite: biasmonkey/acquiescence_reword (the alternative acquiescence wording).
VARIANT_TASKS: dict[str, Callable[..., Task]] = {
    name: fn for name, fn in _REGISTERED.items() if name not in SUITE_TASKS
}
