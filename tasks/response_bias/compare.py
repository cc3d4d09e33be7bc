"""The response-bias family's part of `biasmonkey compare`: per-pair Δ of one run's records.

A pair's id is its key (with `@<seed>` for a seeded perturbation draw); its value is Δ (None: a side
without a valid answer, left out and counted). Two runs are compared by the paired t-test of their
Δ on the same pairs, with its 95% CI and d_z; human-likeness (TACL Table 3) is one number per run.

Published models (`biasmonkey compare RUN --published response_bias[:MODEL,…]`): the paper's nine
models' released samples, scored per question as the report's `paper_matched` tables score them
(`published_samples.published_deltas`), become records of the run's own tasks and pairs
(`published_records`), so that a run is compared with each of them on the pairs both have.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from biasmonkey.metrics.statistics import human_likeness, human_likeness_score, summarize_deltas, untestable
from biasmonkey.tasks.contract import ItemMeasure, base_task_name
from biasmonkey.tasks.response_bias.family import FAMILY
from biasmonkey.tasks.response_bias.scoring import PairRecord

# Run options that change the prompts (the template, the few-shot draw, the perturbed q').
PROMPT_SETTINGS = frozenset(
    {"template", "fewshot_seed", "perturbation_seed", "perturbation_seeds", "perturbation_rules"}
)


def item_id(record: PairRecord) -> str:
    return record.key if record.perturbation_seed is None else f"{record.key}@{record.perturbation_seed}"


def item_ids(records: Sequence[PairRecord]) -> list[str]:
    return [item_id(r) for r in records]


def item_measures(task: str, records: Sequence[PairRecord], options: Any = None) -> list[ItemMeasure]:
    """Δ per pair, compared by the paired t-test."""
    return [ItemMeasure("delta", {item_id(r): r.delta for r in records}, "t", headline=True)]


def _mean_delta(records: Sequence[PairRecord]) -> float:
    return summarize_deltas([r.delta for r in records if r.delta is not None]).mean


def unit_biases(records: Mapping[str, Sequence[PairRecord]], **options: Any) -> dict[str, dict[str, float]]:
    """{task: {task: mean Δ}}: one unit per task (the model-pairs form compares |mean Δ|)."""
    return {task: {task: _mean_delta(items)} for task, items in sorted(records.items())}


def run_scores(records: Mapping[str, Sequence[PairRecord]]) -> dict[str, float]:
    """Human-likeness (TACL Table 3) over the bias tasks the run has: +1 per bias with a significant
    positive Δ, −1 significant negative, 0 not significant, summed over the testable biases (NaN: none),
    and `human_likeness_untestable`, the biases whose t-test is undefined; none without a bias task."""
    summaries = {}
    for task, items in records.items():
        fixed = FAMILY.tasks.get(base_task_name(task) or "", {})
        if fixed.get("setting") == "bias" and not fixed.get("reword"):
            summaries[fixed["bias"]] = summarize_deltas([r.delta for r in items if r.delta is not None])
    if not summaries:
        return {}
    scores = human_likeness(summaries)
    return {"human_likeness": human_likeness_score(scores), "human_likeness_untestable": float(len(untestable(scores)))}


def published_models(names: Sequence[str] | None = None) -> tuple[str, ...]:
    """The paper's models to compare with: `names` (validated; an unknown name is an error with a
    suggestion), or all nine."""
    from biasmonkey.tasks.response_bias.published_samples import PUBLISHED_MODELS, check_models

    return check_models(names) if names else PUBLISHED_MODELS


def published_settings() -> tuple[tuple[str, str], ...]:
    """How a published model's numbers were made, shown as its settings."""
    from biasmonkey.tasks.response_bias.report_tables import PAPER_PROTOCOL

    return (("protocol", PAPER_PROTOCOL),)


def published_records(model: str, ids: Mapping[str, Collection[str]]) -> tuple[str, dict[str, list[PairRecord]]]:
    """One published model as a run of the given tasks ({lm-eval task name: the run's item ids}): its
    label and, per task whose (bias, setting) it has, a record per pair of the run it holds (matched by
    question key, with its Δ from the released samples). Reworded tasks and seeded perturbation draws
    (`key@seed`) have no published counterpart."""
    from biasmonkey.tasks.response_bias.published_samples import published_deltas
    from biasmonkey.tasks.response_bias.report_tables import paper_label

    deltas = published_deltas(model)
    records: dict[str, list[PairRecord]] = {}
    for task, wanted in ids.items():
        fixed = FAMILY.tasks.get(base_task_name(task) or "", {})
        cell = None if fixed.get("reword") else deltas.get((fixed.get("bias"), fixed.get("setting")))
        if cell is None:
            continue
        bias, setting = fixed["bias"], fixed["setting"]
        records[task] = [
            PairRecord(key, bias, setting, None, None, cell[key], None, None) for key in wanted if key in cell
        ]
    return paper_label(model), records
