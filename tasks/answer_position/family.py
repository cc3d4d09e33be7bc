"""The answer-position family's contract: its tasks, the metrics each task reports, its codecs.

One task per MMLU subject and prompt type; one document = one question. Accuracy and the letter
recalls are means over the questions (a recall over the questions whose gold answer is that
letter), so lm-eval gives them a stderr; RStd, the Specific correction and the Δ% columns need
the whole subject and come from `summarize`; `biasmonkey summarize` shows them with the reasons
of the n/a ones (`summary.summary_table`). RStd is not signed (0 = every position recalled
alike), so the family's headline `signed_metric` is `rstd` itself and its Hub magnitude
`abs_rstd` equals it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from biasmonkey.metrics.answer_position import McqSummary
from biasmonkey.tasks.answer_position import codecs, data
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.prompts import LETTERS, PROMPTS
from biasmonkey.tasks.answer_position.scoring import McqRecord, summarize
from biasmonkey.tasks.answer_position.summary import summary_table
from biasmonkey.tasks.contract import (
    Family,
    LmEvalGroup,
    Metric,
    lm_eval_group_name,
    records_metric,
    subset_mean_metrics,
)

NAME = "answer_position"
TITLE = "Answer-position bias on MMLU (Bhatt & Ivanova, 2025)"


def task_name(subject: str, prompt: str = "zeroshot") -> str:
    """answer_position_abstract_algebra, answer_position_anatomy_fewshot, … (zero-shot: no suffix)."""
    return "_".join([NAME, subject, *([prompt] if prompt != "zeroshot" else [])])


def group_name(prompt: str) -> str:
    """The lm-eval group of one prompt type's 57 subjects, unprefixed: answer-position-zeroshot, …"""
    return f"answer-position-{prompt}"


TASKS: dict[str, dict[str, Any]] = {
    task_name(subject, prompt): {"subject": subject, "prompt": prompt}
    for prompt in PROMPTS
    for subject in data.MMLU_DOMAINS
}

# What a prompt type's group reports: the UNWEIGHTED mean over its 57 subjects, as the authors
# average (their model summaries: the mean of the per-subject values): `weight_by_size: false`.
GROUP_MEANS = ("accuracy", "rstd", "accuracy_specific", "rstd_specific")


def _share(record: McqRecord, letter: str) -> float:
    return record.answers()[LETTERS.index(letter)]


def _recall(letter: str):
    return lambda r: _share(r, letter) if r.gold == letter else None


@lru_cache(maxsize=4)
def _summary(records: tuple[McqRecord, ...], k: int, seed: int) -> McqSummary:
    return summarize(records, k=k, seed=seed)


def metrics(options: AnswerPositionOptions, harness: str, **task: Any) -> list[Metric[McqRecord]]:
    """Accuracy, the letter recalls and RStd, before and after the Specific correction, their Δ%,
    the number of questions, ties and imputed continuations (top-k reading: Inspect, biasmonkey-server)."""

    def field(get):
        return lambda records: float(get(_summary(tuple(records), options.k, options.seed)))

    def specific_recall(j: int):
        return field(lambda s: s.recalls_specific[j])

    return [
        Metric("accuracy", True, lambda r: _share(r, r.gold)),
        *(m for x in LETTERS for m in subset_mean_metrics(f"recall_{x}", True, _recall(x))),  # over gold = x
        records_metric("rstd", False, field(lambda s: s.rstd)),
        records_metric("accuracy_specific", True, field(lambda s: s.accuracy_specific)),
        *(records_metric(f"recall_{x}_specific", True, specific_recall(j)) for j, x in enumerate(LETTERS)),
        records_metric("rstd_specific", False, field(lambda s: s.rstd_specific)),
        records_metric("delta_pct_rstd_specific", False, field(lambda s: s.delta_pct_rstd_specific)),
        records_metric("delta_pct_accuracy_specific", True, field(lambda s: s.delta_pct_accuracy_specific)),
        records_metric("n", True, len),
        records_metric("n_ties", False, field(lambda s: s.n_ties)),
        records_metric("imputed_continuations", False, lambda records: float(sum(r.n_imputed for r in records))),
    ]


def docs(options: AnswerPositionOptions, subject: str, prompt: str = "zeroshot") -> list[dict[str, Any]]:
    return [item.as_dict() for item in data.load_mmlu(subject)]


FAMILY: Family[McqRecord] = Family(
    name=NAME,
    title=TITLE,
    item="multiple-choice",
    tasks=TASKS,
    options_type=AnswerPositionOptions,
    record_type=McqRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    scorer="answer_position_scorer",
    suite=lm_eval_group_name("answer-position"),
    unit="questions",
    signed_metric="rstd",
    hub_metric="abs_rstd",
    hub_note=lambda fixed: (
        "lower = less answer-position bias: RStd, the population SD of the recalls of A, B, C and D "
        "(uncorrected answers), in [0, 0.433] (0 = every position recalled alike)"
    ),
    lm_eval_tags={"answer-position": list(TASKS)},
    lm_eval_groups=[
        LmEvalGroup(
            f"_{prompt}.yaml",
            group_name(prompt),
            [task_name(subject, prompt) for subject in data.MMLU_DOMAINS],
            f"MMLU answer position, the 57 subjects ({prompt} prompt). Named with hyphens so that the glob\n"
            "'biasmonkey_*' never matches this group together with its members. Group values are the\n"
            "unweighted means over the subjects, as the authors summarize a model.",
            GROUP_MEANS,
            weight_by_size=False,
        )
        for prompt in PROMPTS
    ],
    data_files=data.pinned_files,
    summary_table=summary_table,
)
