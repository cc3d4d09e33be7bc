"""The yes-no family's contract: its tasks, the metrics each task reports, its codecs.

Bias: 0 is unbiased and its sign tells the direction, so "higher is better" is False for bias
and Δ% bias (−100 % = bias removed); True for accuracy. Per-item numbers (bias, accuracy,
Generic, P(yes)) are means over the items; the Specific correction and the Δ% columns need the
whole task, so they are computed from all records with `summarize`, and so are the counts that
qualify them: `n_ties` (exact ties, scored as coin flips) and `n_no_specific` (items without a
Specific answer). The family's `biasmonkey summarize` table (`summary_table`) is the metrics
table with notes under it: ties, items without a Specific answer, why Specific is undefined and
gold classes smaller than k (`scoring.caveats`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from functools import lru_cache
from typing import Any

from biasmonkey.metrics.yesno import YesNoSummary, correctness, generic_correction, p_yes, votes
from biasmonkey.tasks.contract import (
    Family,
    LmEvalGroup,
    Metric,
    SummaryTable,
    base_task_name,
    lm_eval_group_name,
    records_metric,
    reported,
    subset_mean_metrics,
)
from biasmonkey.tasks.yesno import codecs, data
from biasmonkey.tasks.yesno.options import YesNoOptions
from biasmonkey.tasks.yesno.prompts import PROMPTS
from biasmonkey.tasks.yesno.scoring import ItemRecord, caveats, summarize

NAMES = {"comps": "COMPS-YNQ", "ewok": "EWoK-YNQ", "arith": "Arith-YNQ", "babi": "bAbI-YNQ"}


def task_name(dataset: str, domain: str | None = None, prompt: str = "zeroshot") -> str:
    """yesno_comps, yesno_ewok_agent_properties_fewshot, … (zero-shot tasks carry no suffix)."""
    return "_".join(["yesno", dataset, *([domain] if domain else []), *([prompt] if prompt != "zeroshot" else [])])


# Every set of the authors' release (the paper's COMPS-YNQ and EWoK-YNQ, and Arith-YNQ, bAbI-YNQ) and
# each EWoK domain, under each of their prompt types.
TASKS: dict[str, dict[str, Any]] = {
    task_name(dataset, domain, prompt): {"dataset": dataset, "domain": domain, "prompt": prompt}
    for prompt in PROMPTS
    for dataset, domain in [
        ("comps", None),
        ("ewok", None),
        *(("ewok", d) for d in data.EWOK_DOMAINS),
        ("arith", None),
        ("babi", None),
    ]
}


def _vote(record: ItemRecord) -> float:
    return float(votes([record.yes], [record.no])[0])


def _generic_vote(record: ItemRecord) -> float | None:
    if record.null_yes is None or record.null_no is None:
        return None
    return float(votes(*generic_correction([record.yes], [record.no], record.null_yes, record.null_no))[0])


def _correct(vote: float | None, record: ItemRecord) -> float | None:
    return None if vote is None else float(correctness([vote], [record.gold_yes])[0])


def _p_yes_if(gold_yes: bool):
    return lambda r: float(p_yes([r.yes], [r.no])[0]) if r.gold_yes == gold_yes else None


def _imputed(records: list[ItemRecord]) -> float:
    """Imputed prompt log-probabilities over all items, plus those of the one no-context measurement."""
    return sum(r.n_imputed for r in records) + max((r.n_imputed_null for r in records), default=0)


@lru_cache(maxsize=4)
def _summary(records: tuple[ItemRecord, ...], k: int, seed: int) -> YesNoSummary:
    """`summarize`, once for the task-level metrics of one set of records."""
    return summarize(records, k=k, seed=seed)


def metrics(options: YesNoOptions, harness: str, **task: Any) -> list[Metric[ItemRecord]]:
    """Bias and accuracy before and after the Generic and Specific corrections, their Δ%, mean
    P(yes) by gold answer, the number of items, ties and items without a Specific answer, and the
    imputed continuations (top-k reading: Inspect, biasmonkey-server)."""

    def field(name: str):
        return lambda records: float(getattr(_summary(tuple(records), options.k, options.seed), name))

    task_level = (
        "bias_specific",
        "accuracy_specific",
        "delta_pct_bias_generic",
        "delta_pct_accuracy_generic",
        "delta_pct_bias_specific",
        "delta_pct_accuracy_specific",
    )
    better = {f.name: "accuracy" in f.name for f in fields(YesNoSummary)} | {"p_yes_gold_yes": True, "n": True}
    return [
        Metric("bias", False, _vote),
        Metric("accuracy", True, lambda r: _correct(_vote(r), r)),
        Metric("bias_generic", False, _generic_vote),
        Metric("accuracy_generic", True, lambda r: _correct(_generic_vote(r), r)),
        *(records_metric(name, better[name], field(name)) for name in task_level),
        # over the items of that gold answer; the stderr in lm-eval only (where its `mean` gave one)
        *subset_mean_metrics("p_yes_gold_yes", True, _p_yes_if(True), ("lm_eval",)),
        *subset_mean_metrics("p_yes_gold_no", False, _p_yes_if(False), ("lm_eval",)),
        records_metric("n", True, len),
        records_metric("n_ties", False, field("n_ties")),
        records_metric("n_no_specific", False, field("n_no_specific")),
        records_metric("imputed_continuations", False, _imputed),
    ]


def summary_table(
    records_per_task: Iterable[Sequence[ItemRecord]],
    tasks: Sequence[str],
    run_options: Sequence[Any] | None = None,
    harnesses: Sequence[str] | None = None,
    **_: Any,
) -> SummaryTable:
    """The family's table in `biasmonkey summarize`: one row per task of the metrics it reports
    (in `harnesses`, each task's "lm_eval" or "inspect"; lm-eval's where not given: its columns add
    the P(yes) stderrs), then a note for each thing that qualifies a task's numbers
    (`scoring.caveats`). `tasks`: each task's name; `run_options`: its `YesNoOptions`
    (default: the defaults)."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, records in enumerate(records_per_task):
        records = tuple(records)
        task = base_task_name(tasks[i]) or tasks[i]
        options = run_options[i] if run_options is not None else YesNoOptions()
        harness = harnesses[i] if harnesses is not None else "lm_eval"
        rows.append(
            {"task": task, **{m.name: m.compute(records) for m in reported(FAMILY, options, harness, TASKS[task])}}
        )
        notes += [f"{task}: {detail}." for _, detail in caveats(_summary(records, options.k, options.seed))]
    return SummaryTable(rows, list(dict.fromkeys(key for row in rows for key in row)), notes)


def docs(
    options: YesNoOptions, dataset: str, domain: str | None = None, prompt: str = "zeroshot"
) -> list[dict[str, Any]]:
    return [item.as_dict() for item in data.load_items(dataset, domain)]


FAMILY: Family[ItemRecord] = Family(
    name="yesno",
    title="Yes-no bias (Bhatt & Ivanova, CogSci 2025)",
    item="yes-no",
    tasks=TASKS,
    options_type=YesNoOptions,
    record_type=ItemRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    summary_table=summary_table,
    scorer="yesno_scorer",
    suite=lm_eval_group_name("yesno"),
    unit="questions",
    signed_metric="bias",
    hub_metric="abs_bias",
    inspect_shared_calls=1,  # the no-context prompt, one token by default
    hub_note=lambda fixed: (
        "lower = less biased: |bias| = |#yes − #no|/N of the uncorrected answers, in [0, 1] (0 = as many yes as no)"
    ),
    lm_eval_tags={
        "yesno": [task_name(d, None, p) for d in ("comps", "ewok") for p in ("zeroshot", "fewshot")],
        "yesno-release": [name for name, task in TASKS.items() if task["domain"] is None],
    },
    lm_eval_groups=[
        LmEvalGroup(
            f"_ewok_domains{'' if prompt == 'zeroshot' else '_' + prompt}.yaml",
            "yesno-ewok-domains" + ("" if prompt == "zeroshot" else "-" + prompt),
            [task_name("ewok", domain, prompt) for domain in data.EWOK_DOMAINS],
            f"EWoK-YNQ per domain ({prompt} prompt). Named with hyphens so that the glob 'biasmonkey_*'\n"
            "(or 'biasmonkey_yesno_*') never matches this group together with its members.\n"
            "Group values are item-weighted means of the domain values: bias, accuracy and Generic\n"
            "equal the pooled EWoK numbers; Specific is then calibrated within each domain.",
            ("bias", "accuracy", "bias_generic", "accuracy_generic", "bias_specific", "accuracy_specific"),
        )
        for prompt in PROMPTS
    ],
    # the release's MMLU zip is the answer-position family's
    data_files=lambda: [data.pinned_zip(dataset) for dataset in data.ZIPS if dataset not in data.MCQ_DATASETS],
)
