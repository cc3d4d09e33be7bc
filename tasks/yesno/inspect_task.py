"""Inspect adapter for the yes-no tasks (Bhatt & Ivanova, CogSci 2025): `inspect eval biasmonkey/yesno_comps`.

One Sample per item (id = the item id, input = the item's prompt). The solver asks for one
token with its top log-probabilities; the log-probabilities of the four continuations " Yes",
"Yes", " No", "No" are read from that top-k list spelling by spelling (`spelling_logprobs`: a
spelling missing from the list gets the documented floor and is counted), so the core
`score_item` receives the same four numbers lm-eval scores, provided each continuation is one
token of the model's tokenizer (lm-eval sums the tokens of a longer one; Inspect sees only the
first: the spelling is then imputed and a warning names it, for hf/ models).

Generic correction: the same four log-probabilities with no context, measured once per model
and process (memoised, not asked per item; an hf/ model returns its whole vocabulary for this
one request, other providers `top_logprobs` alternatives). lm-eval scores them after the
model's prefix token alone (BOS, else EOS). `-T null_prompt` sets the no-context prompt; left
unset it is
- for `hf/` models, the text of that prefix token (or "" when the tokenizer adds BOS by
  itself): with the raw-prompt chat template (configs/inspect_hf_raw_prompt.yaml) the model
  then sees exactly the one token lm-eval scores after; under a real chat template it sees the
  template around it (a warning says so);
- for other providers, "" (an empty user message: the model sees only its chat framing).
A provider that cannot take the prompt fails with an error naming `null_prompt`.

`Score.value` holds the family's record (`biasmonkey.tasks.yesno.codecs`); the metrics are the
family's metric table: the lm-eval tasks' metrics under the same names, plus
`imputed_continuations` (imputed prompt log-probs over all items, plus those of the one
no-context measurement).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, Model, get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import concurrency

from biasmonkey.harness_ext.inspect.common import (
    answer_logprobs_config,
    family_metrics,
    first_token_top_logprobs,
    hf_vocabulary,
    register_tasks,
    renormalised,
)
from biasmonkey.metrics.top_logprobs import spelling_logprobs
from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.codecs import score_value
from biasmonkey.tasks.yesno.family import FAMILY, NAMES, task_name
from biasmonkey.tasks.yesno.options import DEFAULT_TOP_LOGPROBS, YesNoOptions
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, NO_CONTINUATIONS, YES_CONTINUATIONS, render_prompt
from biasmonkey.tasks.yesno.scoring import ItemRecord, score_item

# The Inspect tasks' `version`: raised whenever what the scorer stores or how the metric table
# computes from it changes, so logs of different scoring are told apart (docs/inspect.md).
SCORING_VERSION = 1

logger = logging.getLogger(__name__)

LOGPROBS_ONLY = (
    "or run the lm-eval tasks (biasmonkey_yesno_*): the yes-no tasks read answers from log-probabilities only"
)


def item_samples(dataset: str, domain: str | None, prompt: str, k: int, seed: int) -> list[Sample]:
    """One Sample per item; the metadata is the item document plus the fold settings."""
    return [
        Sample(
            id=item.id,
            input=render_prompt(item.query, item.dataset, prompt),
            target=item.gold,
            metadata={
                "id": item.id,
                "dataset": item.dataset,
                "domain": item.domain,
                "gold": item.gold,
                "k": k,
                "seed": seed,
            },
        )
        for item in data.load_items(dataset, domain)
    ]


# ---------------------------------------------------------------------------- no-context log-probabilities


@dataclass(frozen=True)
class NoContext:
    """The continuations' log-probabilities after the no-context prompt (one measurement per model)."""

    prompt: str
    logprobs: list[float]
    n_imputed: int


# Per model object, per (null_prompt option, top_logprobs): asked once per process.
_NO_CONTEXT: WeakKeyDictionary[Model, dict[tuple[str | None, int], NoContext]] = WeakKeyDictionary()


def hf_null_prompt(tokenizer: Any, render: Callable[[str], str]) -> str:
    """The prompt text that makes a transformers model see only its prefix token (BOS, else EOS).

    `render` turns a prompt into the text the provider tokenises (its chat template). The
    token's own text is tried, then "" (tokenizers that add BOS themselves); when neither
    renders to that single token (a real chat template), the token's text is used and a
    warning says that the no-context prompt differs from lm-eval's."""
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ValueError(
            "the tokenizer has neither a BOS nor an EOS token; set the no-context prompt with -T null_prompt=..."
        )
    text = tokenizer.convert_ids_to_tokens(prefix)
    for candidate in (text, ""):
        if tokenizer(render(candidate)).input_ids == [prefix]:
            return candidate
    logger.warning(
        "the no-context prompt %r reaches the model inside its chat template, not as the prefix token alone as in "
        "lm-eval: the Generic correction differs from lm-eval's (use --model-config configs/inspect_hf_raw_prompt.yaml "
        "for the raw prompt, or set -T null_prompt=...)",
        text,
    )
    return text


def warn_multi_token_continuations(tokenizer: Any, model: str) -> None:
    """Inspect reads first tokens only: a continuation of several tokens is always imputed."""
    longer = [c for c in CONTINUATIONS if len(tokenizer(c, add_special_tokens=False).input_ids) != 1]
    if longer:
        logger.warning(
            "model %s: the continuation(s) %s are not single tokens; Inspect reads first-token log-probabilities, "
            "so they are imputed (counted in imputed_continuations) where lm-eval scores every token",
            model,
            longer,
        )


def _is_hf(model: Model) -> bool:
    return str(model).startswith("hf/")


def default_null_prompt(model: Model) -> str:
    """The no-context prompt when -T null_prompt is unset (see the module docstring)."""
    api = model.api
    if not _is_hf(model):
        return ""
    return hf_null_prompt(api.tokenizer, lambda text: api.hf_chat([ChatMessageUser(content=text)], []))  # type: ignore[attr-defined]


def no_context_top_logprobs(model: Model, top_logprobs: int) -> int:
    """How many alternatives the no-context request asks for: an hf/ model returns its whole
    vocabulary (one request per model, and no continuation imputed), other providers the
    task's top_logprobs."""
    vocabulary = hf_vocabulary(model)
    return top_logprobs if vocabulary is None else vocabulary


async def measure_no_context(model: Model, null_prompt: str | None, top_logprobs: int) -> NoContext:
    """Ask the model for the continuations' log-probabilities after the no-context prompt."""
    if _is_hf(model):
        warn_multi_token_continuations(model.api.tokenizer, str(model))  # type: ignore[attr-defined]
    prompt = default_null_prompt(model) if null_prompt is None else null_prompt
    try:
        output = await model.generate(
            prompt, config=answer_logprobs_config(model, no_context_top_logprobs(model, top_logprobs))
        )
    except Exception as err:
        raise RuntimeError(
            f"model {model} failed on the no-context prompt null_prompt={prompt!r} of the Generic correction "
            f"({type(err).__name__}: {err}); set -T null_prompt=... to a prompt this provider accepts"
        ) from err
    top = first_token_top_logprobs(output, str(model), LOGPROBS_ONLY)
    logprobs, n_imputed = spelling_logprobs(top, CONTINUATIONS)
    return NoContext(prompt, logprobs, n_imputed)


async def no_context(model: Model, null_prompt: str | None, top_logprobs: int) -> NoContext:
    """The memoised no-context measurement of `model` (concurrent samples wait for the first)."""
    memo = _NO_CONTEXT.setdefault(model, {})
    key = (null_prompt, top_logprobs)
    if key not in memo:
        async with concurrency(f"biasmonkey-yesno-no-context-{id(model)}", 1, visible=False):
            if key not in memo:
                memo[key] = await measure_no_context(model, null_prompt, top_logprobs)
    return memo[key]


# ---------------------------------------------------------------------------- solver


@solver
def yesno_logprobs(top_logprobs: int = DEFAULT_TOP_LOGPROBS, null_prompt: str | None = None) -> Solver:
    """The continuations' log-probabilities after the item's prompt and with no context."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        state.output = await model.generate(state.input_text, config=answer_logprobs_config(model, top_logprobs))
        top = first_token_top_logprobs(state.output, str(model), LOGPROBS_ONLY)
        logprobs, n_imputed = spelling_logprobs(top, CONTINUATIONS)
        null = await no_context(model, null_prompt, top_logprobs)
        state.store.set("logprobs", logprobs)
        state.store.set("n_imputed", n_imputed)
        state.store.set("null_logprobs", null.logprobs)
        state.store.set("n_imputed_null", null.n_imputed)
        state.store.set("null_prompt", null.prompt)
        return state

    return solve


# ---------------------------------------------------------------------------- scorer


def _answer(record: ItemRecord) -> str:
    return "Yes" if record.yes > record.no else "No" if record.no > record.yes else "tie"


def _spellings(continuations: tuple[str, ...]) -> str:
    return "/".join(f"'{c}'" for c in continuations)


# How the uncorrected decision is read (the explanation's rule).
DECISION_RULE = (
    f"log-sum-exp of {_spellings(YES_CONTINUATIONS)} vs {_spellings(NO_CONTINUATIONS)}, renormalised over the two"
)


def explained(record: ItemRecord) -> tuple[str, str, dict[str, Any]]:
    """The score's answer (the uncorrected decision), its explanation and the metadata added to
    the record's: P(yes), P(no) renormalised over the two answers and the decision."""
    decision = _answer(record)
    p_yes, p_no = renormalised([record.yes, record.no])
    mass = math.exp(record.yes) + math.exp(record.no)
    verdict = "tie" if decision == "tie" else "right" if decision == record.gold else "wrong"
    explanation = (
        f"P(yes)={p_yes:.3f}, P(no)={p_no:.3f} → {decision} ({DECISION_RULE}; their first-token mass {mass:.2f}); "
        f"gold {record.gold}: {verdict}. Generic/Specific corrections: see the task metrics"
    )
    return decision, explanation, {"p_yes": p_yes, "p_no": p_no, "decision": decision}


@scorer(metrics=[], name=FAMILY.scorer)  # metrics are attached by the task (the family's table)
def yesno_scorer() -> Scorer:
    """The family's per-item record from the solver's log-probabilities."""

    async def score(state: TaskState, target: Target) -> Score:
        store = state.store
        record = score_item(
            state.metadata,
            store.get("logprobs"),
            store.get("null_logprobs"),
            store.get("n_imputed"),
            store.get("n_imputed_null"),
        )
        answer, explanation, extra = explained(record)
        return Score(
            value=score_value(record),
            answer=answer,
            explanation=explanation,
            metadata={**record.as_dict(), "null_prompt": store.get("null_prompt"), **extra},
        )

    return score


# ---------------------------------------------------------------------------- tasks


def yesno_task(options: YesNoOptions, dataset: str, domain: str | None = None, prompt: str = "zeroshot") -> Task:
    """The Inspect task of one yes-no question set (or EWoK domain) and prompt.

    null_prompt: the no-context prompt of the Generic correction (None: see the module docs);
    k, seed: the Specific correction's stratified folds."""
    fixed = {"dataset": dataset, "domain": domain, "prompt": prompt}
    return Task(
        dataset=MemoryDataset(item_samples(dataset, domain, prompt, options.k, options.seed), name=task_name(**fixed)),
        solver=yesno_logprobs(top_logprobs=options.top_logprobs, null_prompt=options.null_prompt),
        scorer=yesno_scorer(),
        metrics=family_metrics(FAMILY, options, fixed),
        version=SCORING_VERSION,
        epochs=Epochs(1, "mean"),
        metadata={**fixed, "null_prompt": options.null_prompt, "k": options.k, "seed": options.seed},
    )


def _describe(dataset: str, domain: str | None, prompt: str) -> str:
    where = NAMES[dataset] + (f", domain {domain}" if domain else "")
    return f"Yes-no bias on {where}, {prompt} prompt (Bhatt & Ivanova, CogSci 2025)."


# biasmonkey/yesno_comps, biasmonkey/yesno_ewok_agent_properties_fewshot, … (the lm-eval names without "biasmonkey_")
TASKS: dict[str, Callable[..., Task]] = register_tasks(FAMILY, yesno_task, _describe)
