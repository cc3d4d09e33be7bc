"""What every task family declares once, and both harness adapters read.

A family (`tasks/response_bias`, `tasks/yesno`, `tasks/cognitive`) is one `Family` value: its
record type, its run options, its task table, the metrics it reports (`Metric`: a per-record
value and how the values are aggregated) and its codecs between records and what each harness
logs. The lm-eval adapter turns the metric table into a `metric_list` and `process_results`
values; the Inspect adapter turns it into `@metric`s over decoded records. Nothing here imports
a harness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from biasmonkey.metrics.statistics import DeltaSummary, summarize_deltas

R = TypeVar("R")

# The task-name rule: a family's task name `acquiescence` is `biasmonkey_acquiescence` in lm-eval
# and `biasmonkey/acquiescence` in Inspect.
LM_EVAL_PREFIX = "biasmonkey_"
INSPECT_PREFIX = "biasmonkey/"
HARNESSES = ("lm_eval", "inspect")


def lm_eval_task_name(name: str) -> str:
    return LM_EVAL_PREFIX + name


def inspect_task_name(name: str) -> str:
    return INSPECT_PREFIX + name


def lm_eval_group_name(name: str = "") -> str:
    """`biasmonkey-yesno` for `yesno`, `biasmonkey` for ``: lm-eval groups and tags are hyphenated,
    so that the glob `biasmonkey_*` never matches a group together with its own tasks."""
    return "-".join([LM_EVAL_PREFIX.removesuffix("_"), *([name] if name else [])])


def base_task_name(harness_name: str) -> str | None:
    """`acquiescence` for `biasmonkey_acquiescence` or `biasmonkey/acquiescence`; None for other tasks."""
    for prefix in (INSPECT_PREFIX, LM_EVAL_PREFIX):
        if harness_name.startswith(prefix):
            return harness_name.removeprefix(prefix)
    return None


# ---------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Metric(Generic[R]):
    """One reported number: `aggregate` over the `value` of every record that has one.

    `value(record)` is a number, None (the record has no value: it is left out), or the record
    itself for set-level metrics that need whole records (the lm-eval adapter logs it as a dict).
    `aggregate=None` means the mean, lm-eval's `mean` aggregation, which also gives a stderr;
    `stderr` asks the Inspect adapter to report `<name>_stderr` too. `higher_is_better` is lm-eval's
    arrow; None where neither direction is better (a signed value whose ideal depends on the task).
    Every task of an lm-eval group must declare the same direction for a metric (lm-eval warns
    otherwise), so a metric's direction may not depend on the task.
    """

    name: str
    higher_is_better: bool | None
    value: Callable[[R], Any]
    aggregate: Callable[[list[Any]], float] | None = None
    stderr: bool = False
    harnesses: tuple[str, ...] = HARNESSES

    def compute(self, records: Sequence[R]) -> float:
        """The metric over a list of records, as the harnesses compute it."""
        values = [v for v in map(self.value, records) if v is not None]
        if self.aggregate is not None:
            return float(self.aggregate(values))
        return float(np.mean(values)) if values else math.nan


def mean_stderr(values: Sequence[float]) -> float:
    """sd (ddof 1) / √n, lm-eval's stderr of a mean; NaN below two values."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def _plain_mean(values: Sequence[float]) -> float:
    """sum / n, as lm-eval's `mean` computes it; NaN for no values."""
    return sum(values) / len(values) if values else math.nan


def subset_mean_metrics(
    name: str,
    higher_is_better: bool | None,
    value: Callable[[R], float | None],
    stderr_harnesses: tuple[str, ...] = HARNESSES,
) -> list[Metric[R]]:
    """The mean of a value that only some records have (None for the others; e.g. a recall over
    the questions of one gold letter) and its stderr, `<name>_stderr`.

    Both aggregate the values of every record, skipping the Nones, so every lm-eval document logs
    both metrics (lm-eval warns when a task's metrics were scored on different numbers of
    documents, as its `mean` of only the documents that have a value would be). lm-eval writes
    "N/A" as the stderr of a custom aggregation; the `<name>_stderr` entry, aggregated after it,
    replaces it with the number (the same as lm-eval's stderr of a mean). `stderr_harnesses`: the
    harnesses that report the stderr."""
    return [
        Metric(name, higher_is_better, value, _plain_mean),
        Metric(f"{name}_stderr", False, value, mean_stderr, harnesses=stderr_harnesses),
    ]


def _finite_summary(values: Sequence[float]) -> DeltaSummary:
    return summarize_deltas([v for v in values if math.isfinite(v)])


T_TEST_PARTS: dict[str, Callable[[DeltaSummary], float]] = {
    "t": lambda s: s.t,
    "p": lambda s: s.p,
    "ci_low": lambda s: s.ci_low,
    "ci_high": lambda s: s.ci_high,
}


def t_test_metrics(
    name: str,
    count_name: str,
    value: Callable[[R], float | None],
    higher_is_better: bool | None,
    applies: Callable[[R], bool] | None = None,
) -> list[Metric[R]]:
    """The mean of a per-record value (with its stderr) and its one-sample t-test against 0:
    `<name>`, `<name>_t`, `<name>_p`, `<name>_ci_low`, `<name>_ci_high` and `count_name`, the
    number of records with a value. A record without one is left out of the mean and enters the
    other metrics as NaN, which their aggregations skip, so the shortfall shows in the count.
    Records for which `applies` is false take no part at all (e.g. another perturbation draw)."""

    def mean_value(record: R) -> float | None:
        return None if applies is not None and not applies(record) else value(record)

    def or_nan(record: R) -> float | None:
        if applies is not None and not applies(record):
            return None
        v = value(record)
        return math.nan if v is None else v

    def part(get: Callable[[DeltaSummary], float]) -> Callable[[list[float]], float]:
        return lambda values: get(_finite_summary(values))

    lower = None if higher_is_better is None else not higher_is_better
    better = {"t": higher_is_better, "p": lower, "ci_low": higher_is_better, "ci_high": higher_is_better}
    return [
        Metric(name, higher_is_better, mean_value, stderr=True),
        *(Metric(f"{name}_{suffix}", better[suffix], or_nan, part(get)) for suffix, get in T_TEST_PARTS.items()),
        Metric(count_name, True, or_nan, lambda values: _finite_summary(values).n),
    ]


def records_metric(
    name: str, higher_is_better: bool | None, compute: Callable[[list[R]], float], **kwargs: Any
) -> Metric[R]:
    """A set-level metric computed from whole records."""
    return Metric(name, higher_is_better, lambda record: record, compute, **kwargs)


# ---------------------------------------------------------------------------- families


@dataclass(frozen=True)
class LoggedScore:
    """One Inspect score as plain data: its value, its own metadata and its sample's metadata."""

    sample_id: str | int
    value: Any
    metadata: Mapping[str, Any] | None
    sample_metadata: Mapping[str, Any]


@dataclass(frozen=True)
class LmEvalGroup:
    """An lm-eval group file of a family (written by `tasks/task_files.py`)."""

    file: str  # its name in the family's folder
    name: str  # the group, unprefixed (`lm_eval_group_name`)
    tasks: Sequence[str]  # its member tasks, unprefixed
    comment: str  # the comment atop the file
    weighted_means: Sequence[str] = ()  # metrics the group reports as means of its tasks'
    weight_by_size: bool = True  # those means weighted by the tasks' sizes (False: the plain mean over tasks)


@dataclass(frozen=True)
class InspectCalls:
    """What Inspect sends per document: `per_side` calls for each of its `sides` prompts; with
    `known_tokens` false, later calls hold earlier answers, so their prompt tokens are unknown."""

    sides: int = 1
    per_side: int = 1
    known_tokens: bool = True


@dataclass(frozen=True)
class SummaryTable:
    """A family's table in `biasmonkey summarize`: one row per task, its columns in order, and the
    lines shown under it (a headline score, how to read the columns)."""

    rows: Sequence[Mapping[str, Any]]
    columns: Sequence[str]
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class ItemMeasure:
    """One measure on which `biasmonkey compare` pairs two runs item by item (a family's
    `compare.item_measures` gives them from one run's records of a task).

    `values`: item id -> the item's value in this run, None where it has none (e.g. no Δ: left out
    and counted); a number, or a row of numbers that `statistic` reads. `test`: "t" (paired t-test,
    95% CI, d_z; `wilcoxon` adds the signed-rank test), "mcnemar" (0/1 values, McNemar's test, a
    paired bootstrap CI of the mean) or "bootstrap" (paired bootstrap CI and p of `statistic`:
    values of shape (resamples, items, …) -> one number per resample; None: the mean).
    `headline`: the family's bias measure (the forest plot shows it). `strata`: item id -> its
    stratum (e.g. its subject, for a row pooling several tasks): the bootstrap then redraws the
    items within each stratum."""

    name: str
    values: Mapping[Any, Any]
    test: str
    statistic: Callable[[Any], Any] | None = None
    wilcoxon: bool = False
    headline: bool = False
    strata: Mapping[Any, Any] | None = None


@dataclass(frozen=True)
class PublishedBiases:
    """Published models' biases for the model-pairs form of `biasmonkey compare --published FAMILY`
    without runs (a family's `compare.published_biases(selection)` gives them), where the published
    data are per-model summaries rather than per-item answers.

    `models`: model -> {row: {unit: bias}} (the shape of a family's `compare.unit_biases`); `pairs`:
    the default model pairs (A, B), as the authors paired them; `rows`: every row in the order shown,
    with the columns it adds to its output row (e.g. {"prompt": …, "dataset": …}); `unit`: what a
    unit is; `notes`: where the numbers come from."""

    models: Mapping[str, Mapping[str, Mapping[str, float]]]
    pairs: Sequence[tuple[str, str]]
    rows: Mapping[str, Mapping[str, Any]]
    unit: str
    notes: Sequence[str] = ()


@dataclass(frozen=True)
class Family(Generic[R]):
    """Everything the harness adapters, the summaries and the report need to know of a family."""

    name: str  # "response_bias", "yesno", "cognitive"
    title: str  # for tables and docs
    item: str  # what one document is, in messages: "pair", "yes-no", "cognitive-bias"
    tasks: Mapping[str, Mapping[str, Any]]  # task name (no prefix) -> its fixed arguments
    options_type: type  # an `options.Options` dataclass
    record_type: type  # with `as_dict()` and the classmethod `from_dict(d)`
    docs: Callable[..., list[dict[str, Any]]]  # docs(options, **fixed arguments): the harness documents
    metrics: Callable[..., list[Metric[R]]]  # metrics(options, harness, **fixed arguments)
    summarize: Callable[[Sequence[R]], Any]
    from_lm_eval: Callable[[dict[str, Any], list[Any]], R]  # a logged doc and its filtered responses
    from_inspect: Callable[[LoggedScore], R]  # a (possibly epoch-reduced) score
    scorer: str  # the Inspect scorer's name
    inspect_per_epoch: bool = False  # read Inspect logs per epoch (else the epoch-reduced scores)
    variants: tuple[str, ...] = ()  # tasks outside the family's suite, left out of summaries and reports
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The facts the launcher, the plan and the report read (`harness_ext` names no family).
    suite: str = ""  # the lm-eval group or tag of the family's suite (`biasmonkey run --suite <name>`)
    unit: str = "documents"  # what the documents are, plural: "pairs", "questions", "tests"
    signed_metric: str = ""  # the family's headline signed metric ("delta")
    hub_metric: str = ""  # its magnitude, published on the Hub ("abs_delta")
    adjusted_p: str | None = None  # the p metric the leaderboard adds Holm/BH of (from the report table `name`)
    tested: Mapping[str, str] = field(default_factory=dict)  # report table -> its raw p column (Holm/BH)
    # Inspect's calls per document under the options (None: the options run in lm-eval only).
    inspect_calls: Callable[[Any], InspectCalls | None] = lambda options: InspectCalls()
    inspect_shared_calls: int = 0  # one-token calls per model shared by all the family's tasks
    # A task's Hub value and its direction, by the task's fixed arguments (an entry's `notes`).
    hub_note: Callable[[Mapping[str, Any]], str] = lambda fixed: ""
    # The lm-eval task files (`tasks/task_files.py` writes them; the shared `_<name>.yaml` is by hand).
    lm_eval_tags: Mapping[str, Sequence[str]] = field(default_factory=dict)  # tag (unprefixed) -> its tasks
    lm_eval_groups: Sequence[LmEvalGroup] = ()
    lm_eval_comments: Mapping[str, str] = field(default_factory=dict)  # task -> the comment atop its file
    hand_written_files: Sequence[str] = ()  # other lm-eval files of the family, kept by hand (examples)
    # A family whose task table lists none (any task of a kind can be wrapped): how its tasks are named and run.
    open_tasks: str = ""
    # Its table in `biasmonkey summarize`, from the records of each task (in the suite's order), the
    # tasks' run options (`run_options`), names (`tasks`) and harnesses (`harnesses`: "lm_eval" or
    # "inspect") and the options `summarize` was given (a hook takes the keywords it needs: `**_`);
    # None: one row per task of the metrics it reports.
    summary_table: Callable[..., SummaryTable] | None = None
    # Its pinned upstream files (`tasks.fetch.PinnedFile`s), for `biasmonkey data fetch` / `status`.
    data_files: Callable[[], Sequence[Any]] = lambda: ()

    def lm_eval_tasks(self) -> list[str]:
        return [lm_eval_task_name(name) for name in self.tasks]


def reported(family: Family[R], options: Any, harness: str, fixed: Mapping[str, Any]) -> list[Metric[R]]:
    """The metrics a task of `family` reports in `harness` under `options`."""
    return [m for m in family.metrics(options, harness, **fixed) if harness in m.harnesses]
