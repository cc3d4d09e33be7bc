"""The yes-no family's contract: its tasks, the metrics each task reports, its codecs.

Bias: 0 is unbiased and its sign tells the direction, so "higher is better" is False for bias
and Δ% bias (−100 % = bias removed); True for accuracy. Per-item numbers (bias, accuracy,
Generic, P(yes)) are means over the items; the Specific correction and the Δ% columns need the
whole task, so they are computed from all records with `summarize`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from biasmonkey.metrics.yesno import YesNoSummary, correctness, generic_correction, p_yes, votes
from biasmonkey.tasks.contract import (
    Family,
    LmEvalGroup,
    Metric,
    lm_eval_group_name,
    records_metric,
    subset_mean_metrics,
)
from biasmonkey.tasks.yesno import codecs, data
from biasmonkey.tasks.yesno.options import YesNoOptions
from biasmonkey.tasks.yesno.prompts import PROMPTS
from biasmonkey.tasks.yesno.scoring import ItemRecord, summarize

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


def metrics(options: YesNoOptions, harness: str, **task: Any) -> list[Metric[ItemRecord]]:
    """Bias and accuracy before and after the Generic and Specific corrections, their Δ%, mean
    P(yes) by gold answer, the number of items and the imputed continuations (top-k reading: Inspect, biasmonkey-server)."""

    def field(name: str):
        return lambda records: float(getattr(summarize(records, k=options.k, seed=options.seed), name))

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
        records_metric("imputed_continuations", False, _imputed),
    ]


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
