"""What the Inspect adapters share: registering a family's tasks with `-T` parameters from its
options type, `@metric`s made from its metric table, and reading the top log-probabilities."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Metric, SampleScore, metric

from biasmonkey.tasks.contract import Family, LoggedScore, mean_stderr
from biasmonkey.tasks.contract import Metric as FamilyMetric


def register_tasks(
    family: Family, build: Callable[..., Task], describe: Callable[..., str]
) -> dict[str, Callable[..., Task]]:
    """Register `biasmonkey/<name>` for every task of `family` as `build(options, **fixed)`, the
    options made from the -T parameters.

    Each registered function's signature is the family's Inspect options (with their Inspect
    defaults), so Inspect lists them as the task's -T parameters; `describe(**fixed)` is its doc."""
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

    return {name: task_function(name, fixed) for name, fixed in family.tasks.items()}


def _decoder(family: Family) -> Callable[[list[SampleScore]], list[Any]]:
    """Records of the (epoch-reduced) scores, decoded once per list: Inspect hands the same list
    to every metric of a scorer, so the last list and its records are kept."""
    last: list[tuple[list[SampleScore], list[Any]]] = []

    def decode(scores: list[SampleScore]) -> list[Any]:
        if not last or last[0][0] is not scores:
            records = [
                family.from_inspect(LoggedScore(s.sample_id or "", s.score.value, None, s.sample_metadata or {}))
                for s in scores
            ]
            last[:] = [(scores, records)]
        return last[0][1]

    return decode


def _registered_metric(name: str, compute: Callable[[list[SampleScore]], float]) -> Metric:
    def factory() -> Metric:
        def value(scores: list[SampleScore]) -> float:  # Inspect needs this annotation for set-level metrics
            return compute(scores)

        return value

    return metric(name=name)(factory)()


def family_metrics(family: Family, metrics: Sequence[FamilyMetric]) -> list[Metric]:
    """One Inspect metric per entry of the family's metric table (plus `<name>_stderr` where the
    table asks for it), computed from the records decoded from the scores."""
    decode = _decoder(family)
    out = []
    for m in metrics:
        out.append(_registered_metric(m.name, lambda scores, m=m: m.compute(decode(scores))))
        if m.stderr:
            values = lambda scores, m=m: [v for v in map(m.value, decode(scores)) if v is not None]  # noqa: E731
            out.append(
                _registered_metric(f"{m.name}_stderr", lambda scores, values=values: mean_stderr(values(scores)))
            )
    return out


class LogprobsUnavailable(RuntimeError):
    """The model's provider returned no log-probabilities, so exact mode cannot score answers."""


SAMPLING_ALTERNATIVE = "or run the sampling protocol with -T mode=sample"


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
    return [(t.token, t.logprob) for t in top]


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
