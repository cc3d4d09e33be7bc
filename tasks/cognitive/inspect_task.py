"""Inspect adapter for the cognitive-bias tests (Malberg et al., 2025):
`inspect eval biasmonkey/cognitive_<bias>`.

One Sample per test (id = the test id, metadata = the harness document). The solver decides
the control and then the treatment test greedily (temperature 0) with one of two protocols:

- `two_step` (default, the paper's): a free answer to the test, then a second, independent
  call that reads the offered options and that answer and names the option ("Option N"), each
  call one user message; the prompts are the authors' exact ones (`-T prompts=paper`, the
  default) or our wording (`-T prompts=biasmonkey`), see `prompts.TWO_STEP_PROMPTS`. No token
  limit is sent unless `max_tokens` is given (the provider's default, as in the authors' code);
- `one_step`: our one prompt asking for the option line, generation ended at the first blank
  line (`prompts.ONE_STEP_STOP`), as lm-eval's `protocol=one_step`.

The scorer builds the family's per-test record (`scoring.score_answers`: answers read with the
paper's regex and mapped back to the original option order, as lm-eval's step two reads them)
and stores it as `Score.value` and `Score.metadata` (`biasmonkey.tasks.cognitive.codecs`); the
metrics are the family's metric table, the lm-eval tasks' metrics.

Exact mode (label log-likelihoods) is lm-eval only: see `EXACT_MODE_UNAVAILABLE`.
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, Model, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from biasmonkey.harness_ext.inspect.common import family_metrics, register_tasks
from biasmonkey.tasks.cognitive.codecs import score_value
from biasmonkey.tasks.cognitive.data import BIASES
from biasmonkey.tasks.cognitive.family import FAMILY, task_name
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    DEFAULT_PROMPTS,
    ONE_STEP_STOP,
    SIDES,
    answer_prompt,
    one_step_answer,
    side_options,
    side_text,
    two_step_prompts,
)
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, score_answers

# The Inspect tasks' `version`: raised whenever what the scorer stores or how the metric table
# computes from it changes, so logs of different scoring are told apart (docs/inspect.md).
SCORING_VERSION = 1

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
    first_prompt = answer_prompt if protocol == "one_step" else two_step_prompts(opts.prompts).decision_prompt
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
def decisions(protocol: str = "two_step", max_tokens: int | None = None, prompts: str = DEFAULT_PROMPTS) -> Solver:
    """Control then treatment, each a fresh conversation at temperature 0. Stores each side's
    answer text (`<side>_answer`) and, in two_step, the free answer (`<side>_decision`).

    two_step: both calls of a side use the same model and settings, as in the authors' code;
    `prompts` names the prompt set (`paper`: the authors' exact prompts); `max_tokens` None sends
    no limit (the provider's default)."""
    two_step = two_step_prompts(prompts)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        require_greedy(model)
        doc = state.metadata
        for side in SIDES:
            test = side_text(doc, side)
            first_prompt = answer_prompt(test) if protocol == "one_step" else two_step.decision_prompt(test)
            state.store.set(f"{side}_prompt", first_prompt)
            if protocol == "one_step":
                config = GenerateConfig(temperature=0.0, max_tokens=max_tokens, stop_seqs=[ONE_STEP_STOP])
                output = await model.generate(first_prompt, config=config)
                answer = one_step_answer(output.completion)
            else:
                config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)
                decision = await model.generate(first_prompt, config=config)
                state.store.set(f"{side}_decision", decision.completion)
                extraction = two_step.extraction_prompt(side_options(doc, side), decision.completion)
                output = await model.generate(extraction, config=config)
                answer = output.completion
            state.store.set(f"{side}_answer", answer)
            if side == "control":
                state.output = output
        return state

    return solve


# ---------------------------------------------------------------------------- scorer


def _option(index: int | None) -> str:
    return "none" if index is None else f"Option {index + 1}"


def explained(record: CognitiveRecord) -> str:
    """The score's explanation: the two chosen options, m with its rule and the random baseline
    (a failed test: why it has no score)."""
    if record.failure or record.answer_control is None or record.answer_treatment is None or record.score is None:
        return record.failure or "no score"
    d_1, d_2 = abs(record.answer_control - record.x_1), abs(record.answer_treatment - record.x_2)
    order = "offered in reverse order, " if record.reversed else ""
    return (
        f"control {_option(record.answer_control)}, treatment {_option(record.answer_treatment)} "
        f"({order}original numbering) → m = {record.score:+.3f} = k·(d₁ − d₂)/max(d₁, d₂) with k = {record.k:g}, "
        f"d₁ = |{record.answer_control} − {record.x_1:g}| = {d_1:g}, d₂ = |{record.answer_treatment} − {record.x_2:g}| "
        f"= {d_2:g} (zero-based options); random baseline {record.random_baseline:+.3f}"
    )


@scorer(metrics=[], name=FAMILY.scorer)  # metrics are attached by the task (the family's table)
def cognitive_scorer() -> Scorer:
    """The per-test record from the two answer texts."""

    async def score(state: TaskState, target: Target) -> Score:
        answers = [state.store.get(f"{side}_answer") for side in SIDES]
        free = [state.store.get(f"{side}_decision") for side in SIDES]
        record = score_answers(state.metadata, *answers, (free[0], free[1]) if free[0] is not None else None)
        return Score(
            value=score_value(record),
            answer=f"control {_option(record.answer_control)}, treatment {_option(record.answer_treatment)} "
            "(original numbering)",
            explanation=explained(record),
            # the sample's messages hold the control's first prompt only: both sides' first prompts
            metadata={**record.as_dict(), "prompts": {side: state.store.get(f"{side}_prompt") for side in SIDES}},
        )

    return score


# ---------------------------------------------------------------------------- tasks


def cognitive_task(options: CognitiveOptions, bias: str) -> Task:
    """The Inspect task of one cognitive bias (max_tokens None: the provider's default for two_step, 48 for one_step)."""
    if options.mode == "exact":
        raise ValueError(EXACT_MODE_UNAVAILABLE)
    return Task(
        dataset=MemoryDataset(bias_samples(options, bias, options.protocol), name=task_name(bias)),
        solver=decisions(
            protocol=options.protocol, max_tokens=options.generation_tokens("inspect"), prompts=options.prompts
        ),
        scorer=cognitive_scorer(),
        metrics=family_metrics(FAMILY, options, {"bias": bias}),
        version=SCORING_VERSION,
        epochs=Epochs(1, "mean"),
        metadata={
            "bias": bias,
            "protocol": options.protocol,
            "prompts": options.prompts if options.protocol == "two_step" else "biasmonkey",
            "max_tokens": options.generation_tokens("inspect"),
            "options": options.__dict__,
        },
    )


def _describe(bias: str) -> str:
    return f"Cognitive bias {BIASES[bias]!r} (Malberg et al., 2025): control vs treatment decisions."


# biasmonkey/cognitive_anchoring, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = register_tasks(FAMILY, cognitive_task, _describe)
