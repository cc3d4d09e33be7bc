"""The cognitive-bias family's contract: its tasks, the metrics each task reports, its codecs.

A positive score is the biased direction, so lower is better for the scores.
"""

from __future__ import annotations

from typing import Any

from biasmonkey.tasks.cognitive import codecs
from biasmonkey.tasks.cognitive.data import BIASES
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.scoring import CognitiveRecord, summarize_records
from biasmonkey.tasks.cognitive.two_step import DECIDE
from biasmonkey.tasks.contract import Family, InspectCalls, LmEvalGroup, Metric, lm_eval_group_name, t_test_metrics
from biasmonkey.tasks.fetch import PinnedFile


def task_name(bias: str) -> str:
    """cognitive_anchoring, … (bias: the slug of one of the 30 published biases)."""
    return f"cognitive_{bias}"


TASKS: dict[str, dict[str, Any]] = {task_name(slug): {"bias": slug} for slug in BIASES}


def metrics(options: CognitiveOptions, harness: str, bias: str) -> list[Metric[CognitiveRecord]]:
    """The mean bias score with its t-test over the tests that did not fail, the failure rate,
    the random-choice baseline and, in exact mode, the expected score under the model's answer
    distributions. Step one of lm-eval's two-step runs has no answers yet: only the number of
    tests with free answers."""
    if harness == "lm_eval" and options.lm_eval_step == DECIDE:
        return [Metric("n_decisions", True, lambda r: 1.0, lambda values: float(len(values)))]
    table = [
        *t_test_metrics("score", "n_tests", lambda r: r.score, False),
        Metric("failure_rate", False, lambda r: r.failure_weight),
        Metric("random_baseline", False, lambda r: r.random_baseline),
    ]
    if options.mode == "exact":
        table.append(Metric("expected_score", False, lambda r: r.expected_score))
    return table


def docs(options: CognitiveOptions, bias: str) -> list[dict[str, Any]]:
    """The lm-eval documents (Inspect's samples are `options.task_docs`)."""
    return options.lm_eval_docs(bias)


def inspect_calls(options: CognitiveOptions) -> InspectCalls | None:
    """Control and treatment, one call each, or two (two-step: the second prompt holds the first
    answer); exact mode runs in lm-eval only."""
    if options.mode == "exact":
        return None
    return InspectCalls(2, 2 if options.protocol == "two_step" else 1, known_tokens=False)


def data_files() -> list[PinnedFile]:
    """The paper's scenario file (the tests themselves come from the Hub through `datasets`)."""
    from biasmonkey.tasks.cognitive.generation.generate import pinned_scenarios  # the generator is heavy

    return [pinned_scenarios()]


FAMILY: Family[CognitiveRecord] = Family(
    name="cognitive",
    title="Cognitive biases (Malberg et al., 2025)",
    item="cognitive-bias",
    tasks=TASKS,
    options_type=CognitiveOptions,
    record_type=CognitiveRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize_records,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    scorer="cognitive_scorer",
    inspect_per_epoch=True,
    suite=lm_eval_group_name("cognitive"),
    unit="tests",
    signed_metric="score",
    hub_metric="abs_score",
    adjusted_p="score_p",
    tested={"cognitive": "p"},
    inspect_calls=inspect_calls,
    hub_note=lambda fixed: (
        "lower = less biased: |mean bias score| over the tests that did not fail, in [0, 1] (0 = unbiased)"
    ),
    lm_eval_groups=[
        LmEvalGroup(
            "_biasmonkey_cognitive_group.yaml",
            "cognitive",
            list(TASKS),
            "The 30 cognitive-bias tasks (Malberg et al., 2025). No aggregate_metric_list: a group can only\n"
            "average, and an average of scores, t or p across biases means nothing. Named with a hyphen so\n"
            "that the glob 'biasmonkey_*' never matches a group together with its own tasks.",
        )
    ],
    data_files=data_files,
)
