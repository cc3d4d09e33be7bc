"""What the Inspect adapters share: registering a family's tasks with `-T` parameters from its
options type, its metric table as one registered `@metric`, and reading the top log-probabilities."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import GenerateConfig, Model, ModelOutput
from inspect_ai.scorer import Metric, SampleScore, metric

from biasmonkey.metrics.top_logprobs import check_top_logprobs
from biasmonkey.tasks.contract import Family, LoggedScore, mean_stderr, reported
from biasmonkey.tasks.contract import Metric as FamilyMetric

logger = logging.getLogger(__name__)


def register_tasks(
    family: Family, build: Callable[..., Task], describe: Callable[..., str]
) -> dict[str, Callable[..., Task]]:
    """Register `biasmonkey/<name>` for every task of `family` as `build(options, **fixed)`, the
    options made from the -T parameters.

    Each registered function's signature is the family's Inspect options (with their Inspect
    defaults), so Inspect lists them as the task's -T parameters; `describe(**fixed)` is its doc.
    Also registers the family's metric table (`register_metric_table`), so that importing the
    entry point makes every name a log refers to resolvable."""
    signature = inspect.Signature(family.options_type.inspect_parameters())

    def task_function(name: str, fixed: Mapping[str, Any]) -> Callable[..., Task]:
        def make(**params: Any) -> Task:
            bound = signature.bind(**params)
            bound.apply_defaults()
            return build(family.options_type(**bound.arguments), **fixed)

        make.__signature__ = signature  # type: ignore[attr-defined]
        make.__name__ = make.__qualname__ = name
        make.__doc__ = describe(**fixed)
        return task(name=name)(make)

    metric_table(family)
    return {name: task_function(name, fixed) for name, fixed in family.tasks.items()}


def _records(family: Family, scores: list[SampleScore]) -> list[Any]:
    """The family's records of the (epoch-reduced) scores."""
    return [
        family.from_inspect(LoggedScore(s.sample_id or "", s.score.value, None, s.sample_metadata or {}))
        for s in scores
    ]


def table_values(family: Family, metrics: Sequence[FamilyMetric], records: Sequence[Any]) -> dict[str, float]:
    """Every entry of the metric table over `records`, plus `<name>_stderr` where the table asks for it."""
    values: dict[str, float] = {}
    for m in metrics:
        values[m.name] = m.compute(records)
        if m.stderr:
            values[f"{m.name}_stderr"] = mean_stderr([v for v in map(m.value, records) if v is not None])
    return values


def metric_table_name(family: Family) -> str:
    """The registered name of a family's metric table: `biasmonkey/<family>_metrics`."""
    return f"{family.name}_metrics"


def register_metric_table(family: Family) -> Callable[..., Metric]:
    """Register the family's metric table as one Inspect `@metric`, `biasmonkey/<family>_metrics`,
    whose value is a dict (Inspect reports each entry under its own name: `delta`, `delta_t`, …).

    Its arguments are the task's fixed arguments and the options that differ from their defaults,
    so Inspect records them in the log and `inspect score` rebuilds the same table from the
    registry (the entry point registers it at import)."""

    def table(fixed: dict[str, Any], options: dict[str, Any]) -> Metric:
        metrics = reported(family, family.options_type(**options), "inspect", fixed)

        def value(scores: list[SampleScore]) -> dict[str, float]:  # the annotation marks a set-level metric
            return table_values(family, metrics, _records(family, scores))

        return value

    table.__name__ = table.__qualname__ = metric_table_name(family)
    return metric(name=metric_table_name(family))(table)


def family_metrics(family: Family, options: Any, fixed: Mapping[str, Any]) -> list[Metric]:
    """The task's metrics: the family's registered metric table for these options and arguments."""
    return [metric_table(family)(fixed=dict(fixed), options=_logged_options(options))]


def _logged_options(options: Any) -> dict[str, Any]:
    """The options that differ from their defaults, as the log stores them (tuples as lists),
    without those that only say where inputs lie (a path of the machine that ran it)."""
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in options.non_defaults().items()
        if name not in options.locations
    }


_METRIC_TABLES: dict[str, Callable[..., Metric]] = {}  # family name -> its registered table


def metric_table(family: Family) -> Callable[..., Metric]:
    """The family's registered metric table (registered on first use)."""
    if family.name not in _METRIC_TABLES:
        _METRIC_TABLES[family.name] = register_metric_table(family)
    return _METRIC_TABLES[family.name]


class LogprobsUnavailable(RuntimeError):
    """The model's provider returned no log-probabilities, so exact mode cannot score answers."""


SAMPLING_ALTERNATIVE = "or run the sampling protocol with -T mode=sample"


def hf_vocabulary(model: Model) -> int | None:
    """How many alternatives an `hf/` model's top log-probabilities can hold: its vocabulary (None:
    another provider, which says itself how many it gives)."""
    if not str(model).startswith("hf/"):
        return None
    api = model.api
    return min(len(api.tokenizer), api.model.config.vocab_size)  # type: ignore[attr-defined]


_CAPPED: set[tuple[str, int]] = set()  # (model, top_logprobs) already said


def answer_logprobs_config(model: Model, top_logprobs: int) -> GenerateConfig:
    """One token with its `top_logprobs` alternatives. An `hf/` model has at most its vocabulary:
    a larger -T top_logprobs reads the whole distribution (what it asks for), said once per model,
    where the provider's top-k would stop the eval on every sample."""
    vocabulary = hf_vocabulary(model)
    if vocabulary is not None and top_logprobs > vocabulary:
        if (str(model), top_logprobs) not in _CAPPED:
            _CAPPED.add((str(model), top_logprobs))
            logger.warning(
                "model %s: top_logprobs=%d is more than its vocabulary of %d tokens; reading all %d (the whole "
                "distribution)",
                model,
                top_logprobs,
                vocabulary,
                vocabulary,
            )
        top_logprobs = vocabulary
    return GenerateConfig(max_tokens=1, logprobs=True, top_logprobs=top_logprobs)


def first_token_top_logprobs(
    output: ModelOutput, model: str, alternative: str = SAMPLING_ALTERNATIVE
) -> list[tuple[str, float]]:
    """(token, log-probability) of the first generated token's top-k alternatives.

    `alternative` ends the error message when there are none (what else the user can do)."""
    choice = output.choices[0] if output.choices else None
    content = choice.logprobs.content if choice is not None and choice.logprobs is not None else []
    top = content[0].top_logprobs if content else None
    if not top:
        raise LogprobsUnavailable(
            f"model {model} returned no top_logprobs, which exact mode needs to score the answer options; "
            f"use a provider that returns log-probabilities, {alternative}"
        )
    pairs = [(t.token, t.logprob) for t in top]
    check_top_logprobs(pairs, f"model {model}")  # finite, ≤ 0, mass ≤ 1: else an error naming the model
    return pairs


# ---------------------------------------------------------------------------- self-explaining scores


def renormalised(logprobs: Sequence[float]) -> list[float]:
    """Probabilities of the answers from their log-probabilities, renormalised to sum to 1."""
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    total = sum(weights)
    return [w / total for w in weights]


def shares_text(labels: Sequence[str], shares: Sequence[float], digits: int = 2) -> str:
    """ "A 0.61, B 0.39": each label with its probability or share."""
    return ", ".join(f"{label} {share:.{digits}f}" for label, share in zip(labels, shares))


def most_likely(labels: Sequence[str], shares: Sequence[float]) -> str:
    """The label with the largest share; a tie joins the tied labels with "/"."""
    best = max(shares)
    return "/".join(label for label, share in zip(labels, shares) if share == best)
