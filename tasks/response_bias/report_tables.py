"""The response-bias family's report tables (pandas DataFrames), each computed from per-item
records with `biasmonkey.metrics`: Δ per model × bias × setting, the paper's models from their
released samples, the human-likeness score (TACL Table 3), ATP topics, uncertainty and
perturbation draws. `biasmonkey.tasks.response_bias.report` assembles them into the report."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.metrics import (
    BIASES,
    SETTINGS,
    SIGNIFICANCE,
    draw_variation,
    human_likeness,
    summarize_deltas,
)
from biasmonkey.metrics.power import minimum_detectable_effect
from biasmonkey.metrics.statistics import human_likeness_score, untestable
from biasmonkey.tasks.response_bias.summary import (
    DELTA_COLUMNS,
    TEST_NOTE,
    bias_summaries,
    delta_columns,
    rows_in_suite_order,
)
from biasmonkey.tasks.response_bias.topics import NO_TOPIC, TOPICS
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE as DEFAULT_UNCERTAINTY
from biasmonkey.tasks.response_bias.uncertainty import correlated_side, uncertainty_correlation, undefined_correlation

log = logging.getLogger(__name__)

FAMILY = "response_bias"
NOT_CODED = "not coded"
# The `protocol` column: how a model's answers were obtained. The paper's models (baselines,
# `biasmonkey.tasks.response_bias.published_samples`) were sampled 50 times per prompt.
EXACT, SAMPLED, PAPER_PROTOCOL = "exact", "sampled", "paper: 50 samples"
Published = Mapping[str, Mapping[tuple[str, str], Mapping[str, float]]]  # {model: {(bias, setting): {key: Δ}}}


def _frame(rows: list[dict], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))


def protocol_of(m: Any) -> str:
    """ "sampled" when any response-bias record holds sampled answers, else "exact" (log-probabilities)."""
    sampled = any(r.n_answers for records in m.tasks(FAMILY).values() for r in records)
    return SAMPLED if sampled else EXACT


def response_bias_table(models: Sequence[Any], uncertainty_side: str = DEFAULT_UNCERTAINTY) -> pd.DataFrame:
    """Δ per model × bias × setting: n, mean, stderr, 95% CI, t, p, significance, mean uncertainty and
    the r of |Δ| with the uncertainty of the side `uncertainty_side` picks (as `uncertainty_table`)."""
    rows = []
    for m in models:
        protocol = protocol_of(m)
        for row in rows_in_suite_order(m.tasks(FAMILY).values(), uncertainty_side):
            row.pop("r_absdelta_uncertainty_q", None)  # in the uncertainty table, with its p
            rows.append({"model": m.name, "protocol": protocol, **row})
    return _frame(
        rows,
        ["model", "protocol", "bias", "setting", *DELTA_COLUMNS],
    )


def paper_label(model: str) -> str:
    """How a published model of Tjuatja et al. is named in the report."""
    return f"{model} (paper, sampled)"


def published_table(published: Published) -> pd.DataFrame:
    """Δ per published model × bias × setting from its released samples ({model: {(bias, setting):
    {key: Δ}}}, `published_samples.published_deltas`): the rows `biasmonkey score-samples` prints,
    with the stderr, CI and t of the same t-test; no uncertainty (the samples give none)."""
    rows = []
    for model, cells in published.items():
        for bias in BIASES:
            for setting in SETTINGS:
                if (deltas := cells.get((bias, setting))) is None:
                    continue
                s = summarize_deltas(deltas.values())
                rows.append(
                    {
                        "model": paper_label(model),
                        "protocol": PAPER_PROTOCOL,
                        "bias": bias,
                        "setting": setting,
                        **delta_columns(s),
                        "note": published_note(bias, setting),
                    }
                )
    return _frame(rows, list(response_bias_table([]).columns))


# The paper's opinion-float perturbation rows are its odd/even ones (`released_samples.source_bias`).
MIRRORED_NOTE = "† = the odd_even row: upstream scores these rows on the odd/even samples"


def published_note(bias: str, setting: str) -> str | None:
    """The footnote mark of a published row that is not what its name says (else None)."""
    return MIRRORED_NOTE if bias == "opinion_float" and setting != "bias" else None


def run_keys(m: Any) -> dict[tuple[str, str], set[str]]:
    """The question keys of a model's pairs with a Δ, per (bias, setting) run."""
    keys: dict[tuple[str, str], set[str]] = {}
    for records in m.tasks(FAMILY).values():
        for r in records:
            if r.delta is not None:
                keys.setdefault((r.bias, r.setting), set()).add(r.key)
    return keys


MATCHED_COLUMNS = ["compared_with", "model", "protocol", "bias", "setting", "matched", "n_pairs_all"]


def matched_table(models: Sequence[Any], published: Published) -> pd.DataFrame:
    """The paper's models on each user model's cells and pairs: per (user model `compared_with`,
    published model, bias, setting the user ran), Δ and its t-test over the question keys both
    hold (`matched` True). Where they share no key (keys that are not the upstream question
    keys), all of the published model's pairs are used (`matched` False). `n_pairs_all`: the
    published model's pairs in the cell."""
    rows = []
    for m in models:
        for (bias, setting), keys in sorted(run_keys(m).items(), key=lambda item: _cell_order(*item[0])):
            for name, cells in published.items():
                if (deltas := cells.get((bias, setting))) is None:
                    continue
                shared = [deltas[k] for k in sorted(keys) if k in deltas]
                s = summarize_deltas(shared or deltas.values())
                rows.append(
                    {
                        "compared_with": m.name,
                        "model": paper_label(name),
                        "protocol": PAPER_PROTOCOL,
                        "bias": bias,
                        "setting": setting,
                        "matched": bool(shared),
                        "n_pairs_all": len(deltas),
                        **delta_columns(s),
                        "note": published_note(bias, setting),
                    }
                )
    return _frame(rows, [*MATCHED_COLUMNS, *DELTA_COLUMNS, "note"])


def _cell_order(bias: str, setting: str) -> tuple[int, int]:
    return BIASES.index(bias), SETTINGS.index(setting)


def matched_human_likeness(matched: pd.DataFrame) -> pd.DataFrame:
    """TACL Table 3 of the paper's models on each user model's biases and pairs (`matched_table`)."""
    parts = [
        human_likeness_table(group.drop(columns="compared_with")).assign(compared_with=model)
        for model, group in matched.groupby("compared_with", sort=False)
    ]
    parts = [p for p in parts if len(p)]
    if not parts:
        return _frame([], ["compared_with", "model", "protocol", *HUMAN_LIKENESS_COLUMNS])
    out = pd.concat(parts, ignore_index=True)
    return out[["compared_with", *(c for c in out.columns if c != "compared_with")]]


HUMAN_LIKENESS_COLUMNS = [*BIASES, "score", "n_biases", "n_untestable", "untestable"]


def human_likeness_table(response_bias: pd.DataFrame) -> pd.DataFrame:
    """TACL Table 3: per model +1 / −1 per bias with a significant positive / negative Δb (raw p < 0.05),
    0 not significant; NA where the bias was not run or its test is undefined (untestable: named in
    `untestable`, counted in `n_untestable`). `score`: the sum over the testable biases (NaN: none);
    `n_biases`: the biases run, testable or not."""
    rows = []
    for model, group in response_bias.groupby("model", sort=False):
        scores = human_likeness(bias_summaries(group.to_dict("records")))
        if scores:
            protocol = {"protocol": group["protocol"].iloc[0]} if "protocol" in group.columns else {}
            left_out = untestable(scores)
            rows.append(
                {
                    "model": model,
                    **protocol,
                    **{b: np.nan if scores.get(b) is None else scores[b] for b in BIASES},
                    "score": human_likeness_score(scores),
                    "n_biases": len(scores),
                    "n_untestable": len(left_out),
                    "untestable": ", ".join(left_out) or None,
                }
            )
    protocol = ["protocol"] if "protocol" in response_bias.columns else []
    return _frame(rows, ["model", *protocol, *HUMAN_LIKENESS_COLUMNS]).astype(
        {b: "Int64" for b in (*BIASES, "score")}
    )  # NA: bias not run, or untestable (score: no testable bias)


def grid(response_bias: pd.DataFrame, model: str, column: str = "delta") -> pd.DataFrame:
    """One model's bias × setting matrix of `column` (rows BIASES, columns SETTINGS; NaN where absent)."""
    rows = response_bias[response_bias["model"] == model]
    matrix = rows.pivot(index="bias", columns="setting", values=column) if len(rows) else pd.DataFrame()
    return matrix.reindex(index=list(BIASES), columns=list(SETTINGS))


def topic_table(models: Sequence[Any], topics: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """Δb (bias setting) per model × bias × ATP topic; a question with several topics counts in each.

    Keys missing from the coded file form the `not coded` rows with their count only (no test)."""
    rows = []
    for m in models:
        for task_records in m.tasks(FAMILY).values():
            scored = [r for r in task_records if r.delta is not None and r.setting == "bias"]
            if not scored:
                continue
            for topic in (*TOPICS, NO_TOPIC):
                deltas = [r.delta for r in scored if topic in topics.get(r.key, ())]
                if deltas:
                    s = summarize_deltas(deltas)
                    rows.append(
                        {
                            "model": m.name,
                            "bias": scored[0].bias,
                            "topic": topic,
                            "n_pairs": s.n,
                            "delta": s.mean,
                            "delta_stderr": s.stderr,
                            "t": s.t,
                            "p": s.p,
                            TEST_NOTE: s.undefined_reason,
                        }
                    )
            if n_missing := sum(r.key not in topics for r in scored):
                rows.append({"model": m.name, "bias": scored[0].bias, "topic": NOT_CODED, "n_pairs": n_missing})
    order = {name: i for i, name in enumerate((*BIASES, *TOPICS, NO_TOPIC, NOT_CODED))}
    rows.sort(key=lambda r: (r["model"], order[r["bias"]], order[r["topic"]]))
    return _frame(rows, ["model", "bias", "topic", "n_pairs", "delta", "delta_stderr", "t", "p"])


def uncertainty_table(models: Sequence[Any], uncertainty_side: str = DEFAULT_UNCERTAINTY) -> pd.DataFrame:
    """Per model × bias × setting: mean normalised entropy of q and q', and Pearson r of |Δ| with the
    entropy of one side (`r_side`, "q" or "qp") with its p, over the questions (each once: with
    perturbation draws, averaged over its draws first; `n_pairs`), and TEST_NOTE, why r is undefined
    (NaN). `uncertainty_side` picks the side: "paper" (default) the authors' per-bias choice
    (`biasmonkey.tasks.response_bias.uncertainty`), "q" or "qp" that side on every row."""
    rows = []
    for m in models:
        for task_records in m.tasks(FAMILY).values():
            bias, setting = task_records[0].bias, task_records[0].setting
            side = correlated_side(bias, setting, uncertainty_side)
            qs = [r.uncertainty_q for r in task_records if r.uncertainty_q is not None]
            qps = [r.uncertainty_qp for r in task_records if r.uncertainty_qp is not None]
            c = uncertainty_correlation(task_records, side)
            rows.append(
                {
                    "model": m.name,
                    "bias": bias,
                    "setting": setting,
                    "uncertainty_q": float(np.mean(qs)) if qs else np.nan,
                    "uncertainty_qp": float(np.mean(qps)) if qps else np.nan,
                    "r_side": side,
                    "n_pairs": c.n,
                    "r": c.r,
                    "r_p": c.p,
                    TEST_NOTE: undefined_correlation(task_records, side),
                }
            )
    order = {(b, s): i for i, (b, s) in enumerate((b, s) for b in BIASES for s in SETTINGS)}
    rows.sort(key=lambda r: (r["model"], order[(r["bias"], r["setting"])]))
    return _frame(
        rows,
        ["model", "bias", "setting", "uncertainty_q", "uncertainty_qp", "r_side", "n_pairs", "r", "r_p", TEST_NOTE],
    )


def draws_table(models: Sequence[Any]) -> pd.DataFrame:
    """Tasks run with several perturbation draws (option perturbation_seeds): per model × bias ×
    perturbation × draw, the draw's Δ and t-test, with the spread across draws (range, SD) and
    the report line of `biasmonkey.metrics.draw_variation` on each row."""
    rows = []
    for m in models:
        for task_records in m.tasks(FAMILY).values():
            for v in draw_variation(task_records):
                for seed, d in v.draws.items():
                    rows.append(
                        {
                            "model": m.name,
                            "bias": v.bias,
                            "setting": v.setting,
                            "draw": seed,
                            "n_pairs": d.n,
                            "delta": d.mean,
                            "delta_stderr": d.stderr,
                            "p": d.p,
                            TEST_NOTE: d.undefined_reason,
                            "delta_range": v.delta_range,
                            "delta_sd": v.delta_sd,
                            "n_significant": v.n_significant,
                            "n_untestable": v.n_untestable,
                            "line": v.report_line(),
                        }
                    )
    return _frame(
        rows,
        [
            "model",
            "bias",
            "setting",
            "draw",
            "n_pairs",
            "delta",
            "delta_stderr",
            "p",
            TEST_NOTE,
            "delta_range",
            "delta_sd",
            "n_significant",
            "n_untestable",
            "line",
        ],
    )


MIN_PAIRS_FOR_SD = 5  # below this, a run's own per-pair sd is too rough: the paper models' is used
POWER_COLUMNS = [
    "model",
    "bias",
    "setting",
    "n_pairs",
    "sd",
    "sd_source",
    "mde",
    "paper_abs_delta",
    "paper_n_pairs",
    "underpowered",
]


def _sd(rows: pd.DataFrame) -> pd.Series:
    """Per-pair sd of Δ from the t-test columns: stderr · √n."""
    return rows["delta_stderr"].astype(float) * np.sqrt(rows["n_pairs"].astype(float))


def power_table(mine: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Per user model × bias × setting: the minimum detectable Δ (`metrics.power`: two-sided t-test,
    α 0.05, power 0.8) at the run's n_pairs with the run's per-pair sd (`sd_source` "run"; with
    fewer than MIN_PAIRS_FOR_SD pairs or no spread, the median sd of the paper's models: "paper"),
    beside the paper's effect size in the cell (`paper_abs_delta`: the median over the paper's
    models of |Δ| over all their pairs) and their pairs (`paper_n_pairs`). `underpowered`: the MDE
    exceeds that effect while the run has fewer pairs than the paper's models (False where the paper
    has no cell); None where the MDE is undefined (NaN: no spread and no paper sd to use instead)."""
    reference = paper.assign(sd=_sd(paper), abs_delta=paper["delta"].astype(float).abs())
    by_cell = reference.groupby(["bias", "setting"]).agg(
        paper_sd=("sd", "median"), paper_abs_delta=("abs_delta", "median"), paper_n_pairs=("n_pairs", "max")
    )
    rows = []
    for _, r in mine.assign(sd=_sd(mine)).iterrows():
        cell = by_cell.loc[(r["bias"], r["setting"])] if (r["bias"], r["setting"]) in by_cell.index else None
        n, sd, source = int(r["n_pairs"]), float(r["sd"]), "run"
        if (n < MIN_PAIRS_FOR_SD or not sd > 0) and cell is not None and np.isfinite(cell["paper_sd"]):
            sd, source = float(cell["paper_sd"]), "paper"
        mde = minimum_detectable_effect(n, sd)
        effect = np.nan if cell is None else float(cell["paper_abs_delta"])
        paper_n = np.nan if cell is None else float(cell["paper_n_pairs"])
        rows.append(
            {
                "model": r["model"],
                "bias": r["bias"],
                "setting": r["setting"],
                "n_pairs": n,
                "sd": sd,
                "sd_source": source,
                "mde": mde,
                "paper_abs_delta": effect,
                "paper_n_pairs": paper_n,
                "underpowered": None if np.isnan(mde) else bool(mde > effect and n < paper_n),
            }
        )
    return _frame(rows, POWER_COLUMNS)


def effect_label(bias: str, setting: str, delta: float) -> str:
    """E.g. "allow forbid Δb -88.6" or "response order letter swap Δp -7.0"."""
    what = "Δb" if setting == "bias" else f"{setting.replace('_', ' ')} Δp"
    return f"{bias.replace('_', ' ')} {what} {delta:+.1f}"


def largest_effects(rows: pd.DataFrame, k: int = 3) -> list[str]:
    """The k largest |Δ| among response-bias rows significant after Holm (p_holm < 0.05)."""
    significant = rows[rows["p_holm"].astype(float) < SIGNIFICANCE]
    top = significant.loc[significant["delta"].abs().sort_values(ascending=False, kind="stable").index[:k]]
    return [effect_label(r["bias"], r["setting"], r["delta"]) for _, r in top.iterrows()]


def load_baselines(baselines: bool | str | Sequence[str] | Published) -> tuple[dict, str | None]:
    """The released samples' Δs of the chosen published models ({model: {(bias, setting): {key: Δ}}}),
    and the reason when the default set (True) cannot be loaded; an explicit list must load. Δs
    already loaded (a mapping) are taken as they are."""
    from biasmonkey.tasks.fetch import DataError
    from biasmonkey.tasks.response_bias.published_samples import PUBLISHED_MODELS, check_models, published_deltas

    if baselines is False or baselines is None:
        return {}, None
    if isinstance(baselines, Mapping):
        return dict(baselines), None
    if isinstance(baselines, str):
        baselines = [b.strip() for b in baselines.split(",") if b.strip()]
    chosen = PUBLISHED_MODELS if baselines is True else check_models(baselines)
    try:
        return {name: published_deltas(name) for name in chosen}, None
    except DataError as err:
        if baselines is not True:
            raise
        log.warning("the paper's models are left out of the report: %s", err)
        return {}, str(err)
