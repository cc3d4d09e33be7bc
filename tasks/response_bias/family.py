"""The response-bias family's contract: its tasks, the metrics each task reports, its codecs.

Metric names are the same in both harnesses. Positive Δ on a bias task is the human-like
direction; humans show no change on the perturbation tasks (Δ = 0).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from biasmonkey.metrics.response_bias import BIASES, SETTINGS
from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas
from biasmonkey.metrics.virtual_sampling import expected_draws, mean_invalid_mass, virtual_delta
from biasmonkey.tasks.contract import (
    T_TEST_PARTS,
    Family,
    InspectCalls,
    LmEvalGroup,
    Metric,
    lm_eval_group_name,
    records_metric,
    t_test_metrics,
)
from biasmonkey.tasks.fetch import PinnedFile
from biasmonkey.tasks.response_bias import codecs, data
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.summary import summarize, summary_table

# biasmonkey_acquiescence, …_acquiescence_key_typo, … (20 tasks), and the reworded acquiescence
# task outside the main suite.
TASKS: dict[str, dict[str, Any]] = {
    **{task_name(b, s): {"bias": b, "setting": s, "reword": False} for b in BIASES for s in SETTINGS},
    task_name("acquiescence", "bias", reword=True): {"bias": "acquiescence", "setting": "bias", "reword": True},
}
SUITE_TASKS = tuple(task_name(b, s) for b in BIASES for s in SETTINGS)  # the group `biasmonkey`
# lm-eval's higher_is_better of Δ and its t-test: neither direction is better on every task (the
# human-like Δ is > 0 on a bias task, 0 on a perturbation), and one group holds both kinds of task.
SIGNED = None


def _invalid_rate(counts: list[tuple[float, float]]) -> float:
    """Invalid answers over all sampled answers (0 when nothing was sampled, as in exact mode)."""
    answers = sum(n for _, n in counts)
    return sum(i for i, _ in counts) / answers if answers else 0.0


def per_question_summary(records: Sequence[PairRecord], value: Callable[[PairRecord], float | None]) -> DeltaSummary:
    """The t-test over questions of a per-pair value, each question's value averaged over its
    perturbation draws (the pairs that have one), as `summarize` tests Δ."""
    per_question: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if (v := value(r)) is not None:
            per_question[r.key].append(v)
    return summarize_deltas(float(np.mean(v)) for v in per_question.values())


def per_question_t_test_metrics(
    name: str, count_name: str, value: Callable[[PairRecord], float | None]
) -> list[Metric[PairRecord]]:
    """`t_test_metrics`' names (`<name>`, `<name>_stderr`, `_t`, `_p`, `_ci_low`, `_ci_high`,
    `count_name`) for a task holding several perturbation draws of each question: tested over
    questions (`per_question_summary`), since the draws of one question are not independent
    pairs and pooling them would overstate the evidence; `count_name` counts questions.
    `<name>_stderr` comes after `<name>`: lm-eval writes "N/A" as the stderr of an aggregation
    of its own, and the entry aggregated after it replaces that with the number."""

    def part(get: Callable[[DeltaSummary], float]) -> Callable[[list[PairRecord]], float]:
        return lambda records: get(per_question_summary(records, value))

    parts = {"": lambda s: s.mean, "_stderr": lambda s: s.stderr} | {f"_{k}": g for k, g in T_TEST_PARTS.items()}
    return [
        *(records_metric(f"{name}{suffix}", SIGNED, part(get)) for suffix, get in parts.items()),
        records_metric(count_name, True, part(lambda s: s.n)),
    ]


def metrics(
    options: RunOptions, harness: str, bias: str, setting: str, reword: bool = False
) -> list[Metric[PairRecord]]:
    """What a task reports: Δ with its t-test, the answers' uncertainty, invalid answers (sample
    mode; Inspect always), imputed option spellings (top-k reading: Inspect, lm-eval's
    biasmonkey-server), the virtual-sampling statistics when virtual_samples > 0, and every
    perturbation draw's Δ when perturbation_seeds is set. With several draws, Δ's and virtual
    Δ's t-tests are over questions, each averaged over its draws (`per_question_t_test_metrics`)."""
    draws = options.draw_seeds(setting)

    def t_test(name: str, count_name: str, value: Callable[[PairRecord], float | None]) -> list[Metric[PairRecord]]:
        if draws:
            return per_question_t_test_metrics(name, count_name, value)
        return t_test_metrics(name, count_name, value, SIGNED)

    table: list[Metric[PairRecord]] = [
        *t_test("delta", "n_pairs", lambda r: r.delta),
        Metric("uncertainty_q", False, lambda r: r.uncertainty_q),
        Metric("uncertainty_qp", False, lambda r: r.uncertainty_qp),
    ]
    if options.mode == "sample" or harness == "inspect":
        table.append(Metric("invalid_rate", False, lambda r: (r.n_invalid, r.n_answers), _invalid_rate))
    table.append(Metric("imputed_options", False, lambda r: r.n_imputed, sum))
    if n := options.virtual_samples:
        seed = options.virtual_seed
        table += [
            *t_test("virtual_delta", "virtual_n_pairs", lambda r: virtual_delta(r, n, seed)),
            Metric("invalid_mass", False, mean_invalid_mass),
            Metric("virtual_expected_draws", False, lambda r: expected_draws(r, n)),
        ]
    for draw in draws:
        table += t_test_metrics(
            f"delta_s{draw}",
            f"n_pairs_s{draw}",
            lambda r: r.delta,
            SIGNED,
            applies=lambda r, d=draw: r.perturbation_seed == d,
        )
    return table


def docs(options: RunOptions, bias: str, setting: str, reword: bool = False) -> list[dict[str, Any]]:
    return options.task_pairs(bias, setting, reword)


def inspect_calls(options: RunOptions) -> InspectCalls:
    """Both sides of a pair, each answered once (exact) or `n_samples` times (sample)."""
    return InspectCalls(2, options.n_samples if options.mode == "sample" else 1)


def hub_note(fixed: Mapping[str, Any]) -> str:
    """The Hub value of a task and its direction."""
    if fixed["setting"] == "bias":
        return (
            "lower = less biased: |Δb|, absolute mean change in answer share in percentage points "
            "(0 = answers unchanged by the rewording; humans shift, Δb > 0, so lower is not more human-like)"
        )
    return (
        "lower = less biased: |Δp|, absolute mean change in answer share in percentage points "
        "(0 = unchanged by the typos, as humans are)"
    )


def data_files() -> list[PinnedFile]:
    """The prompt files and the authors' released samples (the report's paper baselines)."""
    from biasmonkey.tasks.response_bias.published_samples import SHA256, pinned_sample

    return [data.pinned_file(name) for name in data.FILES] + [pinned_sample(name) for name in SHA256]


FAMILY: Family[PairRecord] = Family(
    name="response_bias",
    title="Survey response biases (Tjuatja et al., TACL 2024)",
    item="pair",
    tasks=TASKS,
    options_type=RunOptions,
    record_type=PairRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize,
    summary_table=summary_table,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    scorer="pair_scorer",
    variants=tuple(name for name in TASKS if name not in SUITE_TASKS),
    suite=lm_eval_group_name(),
    unit="pairs",
    signed_metric="delta",
    hub_metric="abs_delta",
    adjusted_p="delta_p",
    tested={"response_bias": "p", "topics": "p", "uncertainty": "r_p"},
    inspect_calls=inspect_calls,
    hub_note=hub_note,
    lm_eval_tags={
        "response_bias": SUITE_TASKS,
        "response_bias-biases": [t for t in SUITE_TASKS if TASKS[t]["setting"] == "bias"],
        "response_bias-perturbations": [t for t in SUITE_TASKS if TASKS[t]["setting"] != "bias"],
        "response_bias-variants": [t for t in TASKS if t not in SUITE_TASKS],
    },
    lm_eval_groups=[
        LmEvalGroup(
            "_biasmonkey_group.yaml",
            "",
            SUITE_TASKS,
            "All survey response-bias tasks. No aggregate_metric_list: a group can only average,\n"
            "and averaging Δ, t or p across biases means nothing; cross-task statistics live in the report.",
        )
    ],
    lm_eval_comments={
        task_name("acquiescence", "bias", reword=True): (
            "The acquiescence bias with the alternative wording of q' (acquiescence_reword.csv). A variant:\n"
            "tagged, but not in the `biasmonkey` group that the main run and its summary use."
        )
    },
    data_files=data_files,
)
