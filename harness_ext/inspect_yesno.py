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

`Score.value` holds the record's numbers: the log-probabilities `lp_space_yes`, `lp_yes`,
`lp_space_no`, `lp_no`, the no-context ones `null_lp_…`, the answers `yes`, `no`, `null_yes`,
`null_no` (log-sum-exp of each pair), `gold_yes` (1/0), `n_imputed` and `n_imputed_null`. The
metrics rebuild the records and call the core `summarize` over the whole set: the lm-eval
tasks' metrics under the same names, plus `imputed_continuations` (imputed prompt log-probs
over all items, plus those of the one no-context measurement).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from inspect_ai import Epochs, Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, GenerateConfig, Model, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import concurrency

from biasmonkey.harness_ext.inspect_common import check_positive_int, make_metrics, reduced_sample_scores, register_task
from biasmonkey.harness_ext.inspect_logprobs import first_token_top_logprobs, spelling_logprobs
from biasmonkey.metrics.yesno import K_FOLDS, SEED, YesNoSummary
from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, PROMPTS, render_prompt
from biasmonkey.tasks.yesno.scoring import ItemRecord, score_item, summarize

logger = logging.getLogger(__name__)

DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return
SCORER = "yesno_scorer"
LOGPROBS_ONLY = "or run the lm-eval tasks (biasmonkey_yesno_*): the yes-no tasks read answers from log-probabilities only"


def _slug(continuation: str) -> str:
    return ("space_" if continuation.startswith(" ") else "") + continuation.strip().lower()


PROMPT_KEYS = tuple(f"lp_{_slug(c)}" for c in CONTINUATIONS)  # lp_space_yes, lp_yes, lp_space_no, lp_no
NULL_KEYS = tuple(f"null_{key}" for key in PROMPT_KEYS)


# ---------------------------------------------------------------------------- dataset


def item_samples(dataset: str, domain: str | None, prompt: str, k: int, seed: int) -> list[Sample]:
    """One Sample per item; the metadata is the core's item document plus the fold settings."""
    return [
        Sample(
            id=item.id,
            input=render_prompt(item.query, item.dataset, prompt),
            target=item.gold,
            metadata={"id": item.id, "dataset": item.dataset, "domain": item.domain, "gold": item.gold, "k": k, "seed": seed},
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


def _logprobs_config(top_logprobs: int) -> GenerateConfig:
    return GenerateConfig(max_tokens=1, logprobs=True, top_logprobs=top_logprobs)


def hf_null_prompt(tokenizer: Any, render: Callable[[str], str]) -> str:
    """The prompt text that makes a transformers model see only its prefix token (BOS, else EOS).

    `render` turns a prompt into the text the provider tokenises (its chat template). The
    token's own text is tried, then "" (tokenizers that add BOS themselves); when neither
    renders to that single token (a real chat template), the token's text is used and a
    warning says that the no-context prompt differs from lm-eval's."""
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is None:
        raise ValueError("the tokenizer has neither a BOS nor an EOS token; set the no-context prompt with -T null_prompt=...")
    text = tokenizer.convert_ids_to_tokens(prefix)
    for candidate in (text, ""):
        if tokenizer(render(candidate)).input_ids == [prefix]:
            return candidate
    logger.warning(
        "the no-context prompt %r reaches the model inside its chat template, not as the prefix token alone as in "
        "lm-eval: the Generic correction differs from lm-eval's (use --model-config configs/inspect_hf_raw_prompt.yaml "
        "for the raw prompt, or set -T null_prompt=...)", text,
    )
    return text


def warn_multi_token_continuations(tokenizer: Any, model: str) -> None:
    """Inspect reads first tokens only: a continuation of several tokens is always imputed."""
    longer = [c for c in CONTINUATIONS if len(tokenizer(c, add_special_tokens=False).input_ids) != 1]
    if longer:
        logger.warning(
            "model %s: the continuation(s) %s are not single tokens; Inspect reads first-token log-probabilities, "
            "so they are imputed (counted in imputed_continuations) where lm-eval scores every token", model, longer,
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
    if not _is_hf(model):
        return top_logprobs
    api = model.api
    return min(len(api.tokenizer), api.model.config.vocab_size)  # type: ignore[attr-defined]


async def measure_no_context(model: Model, null_prompt: str | None, top_logprobs: int) -> NoContext:
    """Ask the model for the continuations' log-probabilities after the no-context prompt."""
    if _is_hf(model):
        warn_multi_token_continuations(model.api.tokenizer, str(model))  # type: ignore[attr-defined]
    prompt = default_null_prompt(model) if null_prompt is None else null_prompt
    try:
        output = await model.generate(prompt, config=_logprobs_config(no_context_top_logprobs(model, top_logprobs)))
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
        state.output = await model.generate(state.input_text, config=_logprobs_config(top_logprobs))
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


def score_value(record: ItemRecord, n_imputed: int, n_imputed_null: int) -> dict[str, float]:
    """The record's numbers as a flat dict (Inspect reduces epochs key by key)."""
    assert record.null_logprobs is not None and record.null_yes is not None and record.null_no is not None
    return {
        **dict(zip(PROMPT_KEYS, record.logprobs)),
        **dict(zip(NULL_KEYS, record.null_logprobs)),
        "yes": record.yes,
        "no": record.no,
        "null_yes": record.null_yes,
        "null_no": record.null_no,
        "gold_yes": float(record.gold_yes),
        "n_imputed": float(n_imputed),
        "n_imputed_null": float(n_imputed_null),
    }


def _answer(record: ItemRecord) -> str:
    return "Yes" if record.yes > record.no else "No" if record.no > record.yes else "tie"


@scorer(metrics=[], name=SCORER)  # metrics are attached by the task (see METRICS)
def yesno_scorer() -> Scorer:
    """The core per-item record from the solver's log-probabilities."""

    async def score(state: TaskState, target: Target) -> Score:
        store = state.store
        record = score_item(state.metadata, store.get("logprobs"), store.get("null_logprobs"))
        return Score(
            value=score_value(record, store.get("n_imputed"), store.get("n_imputed_null")),
            answer=_answer(record),
            metadata={**record.as_dict(), "null_prompt": store.get("null_prompt")},
        )

    return score


# ---------------------------------------------------------------------------- metrics


def record_of(sample_score: SampleScore) -> ItemRecord:
    """The per-item record behind a (possibly epoch-reduced) score."""
    doc = sample_score.sample_metadata or {}
    value = sample_score.score.value
    if not isinstance(value, dict) or "gold" not in doc or not set(PROMPT_KEYS + NULL_KEYS) <= set(value):
        raise ValueError(f"sample {sample_score.sample_id}: not a biasmonkey yes-no score")
    return score_item(doc, [value[k] for k in PROMPT_KEYS], [value[k] for k in NULL_KEYS])


def _summary(scores: list[SampleScore]) -> YesNoSummary:
    """summarize() over all items, with the task's fold settings (from the samples' metadata)."""
    settings = {((s.sample_metadata or {}).get("k", K_FOLDS), (s.sample_metadata or {}).get("seed", SEED)) for s in scores}
    if len(settings) > 1:
        raise ValueError(f"the samples disagree on the Specific correction's folds (k, seed): {sorted(settings)}")
    k, seed = next(iter(settings), (K_FOLDS, SEED))
    return summarize([record_of(s) for s in scores], k=k, seed=seed)


def _imputed(scores: list[SampleScore]) -> float:
    values: list[dict[str, float]] = [s.score.value for s in scores]  # type: ignore[misc]
    return sum(v["n_imputed"] for v in values) + max((v["n_imputed_null"] for v in values), default=0.0)


def _field(name: str) -> Callable[[list[SampleScore]], float]:
    return lambda scores: float(getattr(_summary(scores), name))


# The lm-eval tasks' metrics (every YesNoSummary field but n_ties), plus the imputation count.
REPORTED = [f.name for f in fields(YesNoSummary) if f.name != "n_ties"]
METRIC_FUNCTIONS: dict[str, Callable[[list[SampleScore]], float]] = {
    **{name: _field(name) for name in REPORTED},
    "imputed_continuations": _imputed,
}
METRICS: dict[str, Callable[[], Metric]] = make_metrics(METRIC_FUNCTIONS)


# ---------------------------------------------------------------------------- tasks


def yesno_task(
    dataset: str,
    domain: str | None = None,
    prompt: str = "zeroshot",
    top_logprobs: int = DEFAULT_TOP_LOGPROBS,
    null_prompt: str | None = None,
    k: int = K_FOLDS,
    seed: int = SEED,
) -> Task:
    """The Inspect task of one yes-no dataset (or EWoK domain) and prompt variant.

    null_prompt: the no-context prompt of the Generic correction (None: see the module docs);
    k, seed: the Specific correction's stratified folds."""
    check_positive_int("top_logprobs", top_logprobs)
    check_positive_int("k", k)
    if k < 2:
        raise ValueError(f"option k={k} must be at least 2: each fold is calibrated on the other folds")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"option seed={seed!r} must be a non-negative integer")
    if null_prompt is not None and not isinstance(null_prompt, str):
        raise ValueError(
            f"option null_prompt={null_prompt!r} must be a text; quote it as a YAML string, e.g. -T 'null_prompt=\"Q:\"'"
        )
    if prompt not in PROMPTS:
        raise ValueError(f"option prompt={prompt!r} is invalid; use one of {', '.join(PROMPTS)}")
    name = task_name(dataset, domain, prompt)
    return Task(
        dataset=MemoryDataset(item_samples(dataset, domain, prompt, k, seed), name=name),
        solver=yesno_logprobs(top_logprobs=top_logprobs, null_prompt=null_prompt),
        scorer=yesno_scorer(),
        metrics=[factory() for factory in METRICS.values()],
        epochs=Epochs(1, "mean"),
        metadata={"dataset": dataset, "domain": domain, "prompt": prompt, "null_prompt": null_prompt, "k": k, "seed": seed},
    )


def task_name(dataset: str, domain: str | None, prompt: str) -> str:
    """yesno_comps, yesno_ewok_agent_properties_fewshot, … (the lm-eval names without "biasmonkey_")."""
    return "_".join(["yesno", dataset, *([domain] if domain else []), *(["fewshot"] if prompt == "fewshot" else [])])


def _register(dataset: str, domain: str | None, prompt: str) -> Callable[..., Task]:
    where = {"comps": "COMPS-YNQ", "ewok": "EWoK-YNQ"}[dataset] + (f", domain {domain}" if domain else "")
    doc = f"Yes-no bias on {where}, {prompt} prompt (Bhatt & Ivanova, CogSci 2025)."
    return register_task(task_name(dataset, domain, prompt), yesno_task, {"dataset": dataset, "domain": domain, "prompt": prompt}, doc)


TASKS: dict[str, Callable[..., Task]] = {}
for _prompt in PROMPTS:
    for _dataset, _domain in [("comps", None), ("ewok", None), *(("ewok", d) for d in data.EWOK_DOMAINS)]:
        _fn = _register(_dataset, _domain, _prompt)
        TASKS[_fn.__name__] = _fn
globals().update(TASKS)


# ---------------------------------------------------------------------------- logs


def records_from_eval_log(path: str | Path) -> list[ItemRecord]:
    """The per-item records of a yes-no Inspect log (`.eval` or `.json`), from the epoch-reduced
    scores as the metrics saw them."""
    return [record_of(s) for s in reduced_sample_scores(path, SCORER)]

