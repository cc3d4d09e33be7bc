"""The set-level summary of a response-bias task, from its per-pair records."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biasmonkey.metrics import (
    BIASES,
    SETTINGS,
    SIGNIFICANCE,
    DeltaSummary,
    draw_variation,
    human_likeness,
    summarize_deltas,
)
from biasmonkey.metrics.statistics import human_likeness_score, untestable
from biasmonkey.tasks.contract import SummaryTable
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE, correlated_side, uncertainty_correlation

# A Δ row's t-test columns, in table order (`delta_columns`).
DELTA_COLUMNS = ("n_pairs", "delta", "delta_stderr", "ci_low", "ci_high", "t", "p", "significant")
TEST_NOTE = "test_note"  # why a row's t-test is undefined (None where it is defined)


def delta_columns(s: DeltaSummary) -> dict[str, Any]:
    """The t-test of a set of Δ as table columns (DELTA_COLUMNS), then TEST_NOTE. `significant` is
    NaN (shown n/a), not False, where the test is undefined."""
    significant = math.nan if s.significant is None else s.significant
    values = (s.n, s.mean, s.stderr, s.ci_low, s.ci_high, s.t, s.p, significant)
    return {**dict(zip(DELTA_COLUMNS, values)), TEST_NOTE: s.undefined_reason}


T_TEST_UNDEFINED = "t-test undefined (t, p, CI and significance left out)"


def undefined_tests_note(
    rows: Iterable[Mapping[str, Any]], label: str = "", test: str = T_TEST_UNDEFINED
) -> str | None:
    """One line naming the rows whose test is undefined (TEST_NOTE set), with why (None: every test is
    defined). `label`: a column whose value leads each row's name (e.g. "model"); `test`: what is undefined."""
    named = [
        f"{f'{r[label]} ' if label else ''}{r['bias']}/{r['setting']} ({r[TEST_NOTE]})"
        for r in rows
        if isinstance(r.get(TEST_NOTE), str)
    ]
    if not named:
        return None
    return f"n/a: {test} for {len(named)} row(s): {'; '.join(named)}."


def questions_without_delta(records: Sequence[PairRecord]) -> int:
    """The questions left untested: with perturbation draws, those without a Δ in any draw (a question
    with a Δ in some draw is tested, its Δ averaged over those draws); else the pairs without a Δ."""
    if any(r.perturbation_seed is not None for r in records):
        return len({r.key for r in records} - {r.key for r in records if r.delta is not None})
    return sum(r.delta is None for r in records)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def summarize(records: Sequence[PairRecord], uncertainty_side: str = DEFAULT_CHOICE) -> dict[str, Any]:
    """One task's statistics from its per-pair records: Δ with its t-test and CI, the mean
    uncertainty of q and q', Pearson r of |Δ| with q's uncertainty (`r_absdelta_uncertainty_q`)
    and with the uncertainty of the side that `uncertainty_side` picks (`r_absdelta_uncertainty`; the
    side, "q" or "qp", in `uncertainty_side`): "paper" (default) is the authors' per-bias choice
    (module `uncertainty`), "q" or "qp" forces one. In sampling mode also the invalid-answer rate
    and the pairs left without a Δ (`pairs_without_delta`; with draws, the questions without a Δ in
    any draw, and `draw_pairs_without_delta` the question × draw pairs without one); where option
    log-probabilities were read from a top-k list and some were imputed (the floor of
    `biasmonkey.metrics.top_logprobs`), `imputed_options` (the imputed spellings) and `pairs_with_imputed`.

    A task run with several perturbation draws (option perturbation_seeds) holds each question
    once per draw; its row tests each question once (its Δ averaged over the draws), since
    pooling the pairs of all draws would overstate the evidence. `n_draws` says so. The
    uncertainty correlations count each question once too (`uncertainty.question_points`).
    """
    scored = [r for r in records if r.delta is not None]
    variation = draw_variation(records)
    s = variation[0].pooled if variation else summarize_deltas([r.delta for r in scored])
    bias, setting = records[0].bias, records[0].setting
    side = correlated_side(bias, setting, uncertainty_side)
    row: dict[str, Any] = {
        "bias": bias,
        "setting": setting,
        **delta_columns(s),
        "uncertainty_q": _mean([x.uncertainty_q for x in records if x.uncertainty_q is not None]),
        "uncertainty_qp": _mean([x.uncertainty_qp for x in records if x.uncertainty_qp is not None]),
        "r_absdelta_uncertainty_q": uncertainty_correlation(records, "q").r,
        "uncertainty_side": side,
        "r_absdelta_uncertainty": uncertainty_correlation(records, side).r,
    }
    if variation:
        row["n_draws"] = len(variation[0].draws)
    answers = sum(x.n_answers for x in records)
    if answers:  # sampling mode: report invalid answers and the pairs left without a Δ
        row["invalid_rate"] = sum(x.n_invalid for x in records) / answers
        row["pairs_without_delta"] = questions_without_delta(records)
        if variation:
            row["draw_pairs_without_delta"] = len(records) - len(scored)
    if imputed := sum(x.n_imputed for x in records):  # Δ and uncertainty rest partly on floors
        row["imputed_options"] = imputed
        row["pairs_with_imputed"] = sum(x.n_imputed > 0 for x in records)
    return row


def rows_in_suite_order(
    records_per_task: Iterable[Sequence[PairRecord]], uncertainty_side: str = DEFAULT_CHOICE
) -> list[dict[str, Any]]:
    """One summary row per task's records, in suite order (biases, then their perturbations);
    `uncertainty_side` picks the side of the uncertainty correlation (see `summarize`)."""
    rows = [summarize(records, uncertainty_side) for records in records_per_task if records]
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    return sorted(rows, key=lambda r: order[(r["bias"], r["setting"])])


def bias_summaries(rows: Iterable[Mapping[str, Any]]) -> dict[str, DeltaSummary]:
    """The Δ summaries of the bias rows (setting "bias"), by bias."""
    return {
        r["bias"]: DeltaSummary(
            r["n_pairs"],
            r["delta"],
            r["delta_stderr"],
            r["t"],
            r["p"],
            max(r["n_pairs"] - 1, 0),
            r["ci_low"],
            r["ci_high"],
        )
        for r in rows
        if r["setting"] == "bias"
    }


# ---------------------------------------------------------------------------- `biasmonkey summarize`

COLUMNS = (
    "bias",
    "setting",
    *DELTA_COLUMNS,
    "uncertainty_q",
    "uncertainty_qp",
    "uncertainty_side",
    "r_absdelta_uncertainty",
)
SAMPLING_COLUMNS = ("invalid_rate", "pairs_without_delta", "draw_pairs_without_delta")
IMPUTED_COLUMNS = ("imputed_options",)  # only where some option spelling was imputed (`imputed_note`)
# The t-test columns in `biasmonkey summarize` are named as the tasks' metrics (delta_t, not t).
METRIC_NAMES = {"t": "delta_t", "p": "delta_p", "ci_low": "delta_ci_low", "ci_high": "delta_ci_high"}
UNCERTAINTY_NOTE = {
    "paper": "the authors' choice, TACL Table 4: q for acquiescence and odd/even, q' for response order, "
    "opinion float and allow/forbid; q on perturbation rows",
    "q": "q on every row, as asked",
    "qp": "q' on every row, as asked",
}


def human_likeness_line(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """The TACL Table 3 score from the bias rows: +1 / −1 per significant bias Δ, 0 not significant;
    a bias whose test is undefined is not scored but named as untestable, with why."""
    summaries = bias_summaries(rows)
    if not summaries:
        return None
    scores = human_likeness(summaries)
    left_out = untestable(scores)
    if not left_out:
        parts = ", ".join(f"{bias} {score:+d}" if score else f"{bias} 0" for bias, score in scores.items())
        return f"Human-likeness score: {int(human_likeness_score(scores)):+d} of {len(scores)} ({parts})."
    why = "; ".join(f"{bias} ({summaries[bias].undefined_reason})" for bias in left_out)
    untested = f"{len(left_out)} untestable, not scored: {why}"
    tested = {bias: score for bias, score in scores.items() if score is not None}
    if not tested:
        return f"Human-likeness score: n/a (no testable bias; {untested})."
    parts = ", ".join(f"{bias} {score:+d}" if score else f"{bias} 0" for bias, score in tested.items())
    return (
        f"Human-likeness score: {int(human_likeness_score(scores)):+d} of {len(tested)} testable ({parts}); {untested}."
    )


def imputed_note(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """One line naming the rows whose option log-probabilities were partly imputed (None: none were)."""
    named = [
        f"{r['bias']}/{r['setting']} ({r['imputed_options']:g} spellings in {r['pairs_with_imputed']} pairs)"
        for r in rows
        if r.get("imputed_options")
    ]
    if not named:
        return None
    return (
        'imputed_options: option spellings (" A", "A") missing from the top-k log-probabilities, each given the '
        "imputed floor min(smallest returned probability, unreturned mass / missing spellings), so Δ and "
        f"uncertainty rest partly on floors, not on the model's numbers, in {len(named)} row(s): {'; '.join(named)}. "
        "Rerun with a larger top_logprobs (Inspect -T top_logprobs, biasmonkey-server's top_logprobs) to read them all."
    )


def summary_table(
    records_per_task: Iterable[Sequence[PairRecord]], uncertainty_side: str = DEFAULT_CHOICE, **_: Any
) -> SummaryTable:
    """The family's table in `biasmonkey summarize`: one row per task in suite order, the
    human-likeness score, and how to read the columns."""
    rows = rows_in_suite_order(records_per_task, uncertainty_side)
    score = human_likeness_line(rows)
    undefined = undefined_tests_note(rows)
    imputed = imputed_note(rows)
    rows = [{METRIC_NAMES.get(k, k): v for k, v in row.items()} for row in rows]
    optional = (*SAMPLING_COLUMNS, *IMPUTED_COLUMNS)
    columns = [METRIC_NAMES.get(c, c) for c in COLUMNS] + [c for c in optional if any(c in r for r in rows)]
    note = (
        "Δ in percentage points: mean over pairs with its stderr and 95% CI (delta_ci_low, delta_ci_high); "
        "delta_t and delta_p from a two-sided "
        f"one-sample t-test against 0; significant = p < {SIGNIFICANCE} (n/a where the test is undefined: fewer than "
        "2 pairs with a Δ, or no spread; summary.csv's test_note says which). On bias rows Δ > 0 is the "
        "human-like direction; humans show no change on the perturbation (typo) rows. Uncertainty: "
        "mean normalised entropy of the answers to q and q'; r_absdelta_uncertainty: Pearson correlation of |Δ| "
        f"with the uncertainty of the side in uncertainty_side ({UNCERTAINTY_NOTE[uncertainty_side]}; "
        "summary.csv also has r_absdelta_uncertainty_q, with q's uncertainty, on every row), over the pairs, each "
        "question once (with perturbation draws: |Δ| of its Δ averaged over the draws, its entropy averaged too)."
        + (
            " pairs_without_delta: with perturbation draws, the questions without a Δ in any draw (untested); "
            "draw_pairs_without_delta: the question × draw pairs without one (left out of their draw's t-test)."
            if "draw_pairs_without_delta" in columns
            else ""
        )
    )
    return SummaryTable(rows, columns, [line for line in (score, undefined, imputed, note) if line])
