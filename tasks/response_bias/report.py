"""The response-bias family's part of the report (`biasmonkey report`): its tables (with the
paper's nine models as reference rows), warnings, summary entries and verdict sentence, headline
panel, section, inputs note and leaderboard entry. `harness_ext/app/report` calls these hooks
(`harness_ext/app/report/families.py` lists them) for every family that has results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasmonkey.harness_ext.app.report import figures
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.render import Figure, Section, Table
from biasmonkey.metrics import BIASES, SETTINGS, SIGNIFICANCE
from biasmonkey.metrics.power import POWER
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.response_bias import report_figures
from biasmonkey.tasks.response_bias.report_figures import DELTA_SCALE, significant
from biasmonkey.tasks.response_bias.report_tables import (
    FAMILY,
    MIN_PAIRS_FOR_SD,
    MIRRORED_NOTE,
    NOT_CODED,
    PAPER_PROTOCOL,
    draws_table,
    human_likeness_table,
    largest_effects,
    load_baselines,
    matched_human_likeness,
    matched_table,
    paper_label,
    power_table,
    protocol_of,
    published_table,
    response_bias_table,
    topic_table,
    uncertainty_table,
)
from biasmonkey.tasks.response_bias.summary import (
    T_TEST_UNDEFINED,
    TEST_NOTE,
    questions_without_delta,
    undefined_tests_note,
)
from biasmonkey.tasks.response_bias.topics import load_topics
from biasmonkey.tasks.response_bias.uncertainty import DEFAULT_CHOICE as DEFAULT_UNCERTAINTY
from biasmonkey.tasks.response_bias.uncertainty import check_choice as check_uncertainty_side

AUTHORS = "Tjuatja et al., TACL 2024"
PAPER_MODELS = "The paper's models"
# How the summary names each table's tests.
TEST_NAMES = {"response_bias": "Δ", "uncertainty": "uncertainty correlation", "topics": "topic"}
HUMAN_LIKENESS = lm_eval_task_name("human_likeness")  # the leaderboard entry of TACL Table 3's score


# ---------------------------------------------------------------------------- tables


def tables(
    models: Sequence[Any],
    baselines: bool | str | Sequence[str] = True,
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
    topics: bool = True,
    topics_file: Path | None = None,
) -> dict[str, pd.DataFrame]:
    """`response_bias` (Δ per model × bias × setting; the paper's models appended as reference rows
    over all their pairs, protocol "paper: 50 samples"), `human_likeness` (TACL Table 3),
    `paper_matched` and `human_likeness_matched` (the paper's models on each of your models' biases
    and pairs, matched by question key: what the verdict, the headline and the comparison tables
    set beside your models), `power` (the minimum detectable Δ of each of your tests), `topics`,
    `uncertainty`, `perturbation_draws` (where run) and `baselines` (the paper's models loaded, or why not).

    `baselines`: True = all nine of `published_samples.PUBLISHED_MODELS` (left out, with a warning,
    when their samples cannot be had), a list (or comma-separated names) = those (an error if they
    cannot be loaded), False = none; or their Δs already loaded. `topics`: Δb per ATP topic from
    `topics_file` (default: the pinned `all-questions-coded.csv`). `uncertainty_side`: "paper" (the authors' per-bias choice),
    "q" or "qp" (`biasmonkey.tasks.response_bias.uncertainty`)."""
    check_uncertainty_side(uncertainty_side)
    mine = response_bias_table(models, uncertainty_side)
    published, error = load_baselines(baselines)
    paper = published_table(published) if published else mine.iloc[:0]
    rb = pd.concat([part for part in (mine, paper) if len(part)], ignore_index=True) if len(paper) else mine
    matched = matched_table(models, published)
    out = {
        "response_bias": rb,
        "human_likeness": human_likeness_table(rb),
        "paper_matched": matched,
        "human_likeness_matched": matched_human_likeness(matched),
        "power": power_table(mine, paper),
        "uncertainty": uncertainty_table(models, uncertainty_side),
        "baselines": baselines_table(list(published), error),
    }
    if topics:
        out["topics"] = topic_table(models, load_topics(topics_file))
    if len(draws := draws_table(models)):
        out["perturbation_draws"] = draws
    return out


def baselines_table(loaded: Sequence[str], error: str | None) -> pd.DataFrame:
    """The paper's models in the report: one row per model loaded, or one row saying why none was."""
    from biasmonkey.tasks.response_bias.data import UPSTREAM_COMMIT, UPSTREAM_REPO

    source = f"{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}"
    rows = [{"model": paper_label(name), "source": f"{source} results/{name}/csv/", "error": None} for name in loaded]
    if error:
        rows.append({"model": PAPER_MODELS, "source": source, "error": error})
    return pd.DataFrame(rows, columns=["model", "source", "error"])


def reference_rows(name: str, table: pd.DataFrame) -> pd.Series | None:
    """The rows outside the report's multiple-comparison family: the paper's models' (reference
    values) and the topic table's `not coded` rows (a count of pairs, no test)."""
    if name == "response_bias" and "protocol" in table.columns:
        return table["protocol"] == PAPER_PROTOCOL
    if name == "topics" and "topic" in table.columns:
        return table["topic"] == NOT_CODED
    return None


# ---------------------------------------------------------------------------- warnings and summary


def warnings(models: Sequence[Any], tables: Mapping[str, pd.DataFrame]) -> list[dict[str, Any]]:
    """Invalid sampled answers, pairs left without Δ, imputed option log-probabilities, and the
    paper's models when they could not be loaded."""
    rows = []
    for m in models:
        for task, records in m.tasks(FAMILY).items():
            answers, invalid = sum(r.n_answers for r in records), sum(r.n_invalid for r in records)
            if invalid:
                detail = f"{invalid / answers:.1%} of {answers:g} sampled answers"
                rows.append({"model": m.name, "task": task, "warning": "invalid answers", "detail": detail})
            if no_delta := sum(r.delta is None for r in records):
                detail = _without_delta(records, no_delta)
                rows.append({"model": m.name, "task": task, "warning": "pairs without Δ", "detail": detail})
            if imputed := sum(r.n_imputed for r in records):
                pairs = sum(r.n_imputed > 0 for r in records)
                detail = f"{imputed:g} option log-probabilities imputed (not in the top-k) in {pairs} of {len(records)} pairs"
                rows.append({"model": m.name, "task": task, "warning": "imputed log-probabilities", "detail": detail})
    failed = tables["baselines"].dropna(subset=["error"])
    rows += [
        {"model": r["model"], "task": "", "warning": "not shown", "detail": r["error"]} for _, r in failed.iterrows()
    ]
    return rows


def _without_delta(records: Sequence[Any], no_delta: int) -> str:
    """The warning on pairs without a Δ; with perturbation draws, the question × draw pairs apart from
    the questions left untested (those without a Δ in any draw)."""
    if all(r.perturbation_seed is None for r in records):
        return f"{no_delta} of {len(records)} pairs (not tested)"
    questions, untested = len({r.key for r in records}), questions_without_delta(records)
    tested = (
        f"{untested} of {questions} questions without a Δ in any draw (not tested)"
        if untested
        else f"all {questions} questions have a Δ in some draw and are tested"
    )
    return f"{no_delta} of {len(records)} question × draw pairs (left out of their draw's t-test); {tested}"


SUMMARY_COLUMNS = (
    "protocol",
    "human_likeness",
    "n_biases",
    "n_untestable",
    "human_likeness_per_bias",
    "perturbations",
    "perturbations_untestable",
    "perturbations_significant_holm",
    "perturbations_significant_raw",
    "largest_effects",
)


def _signed(value: float) -> str:
    if pd.isna(value):
        return "n/a"
    return f"{value:+.2f}".rstrip("0").rstrip(".") if value % 1 else f"{int(value):+d}"


def _count(n: float, noun: str) -> str:
    n = int(n)
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def _untestable_biases(rb: pd.DataFrame, model: str) -> list[str]:
    """`model`'s biases whose Δb t-test is undefined (p NaN)."""
    rows = rb[(rb["model"] == model) & (rb["setting"] == "bias") & rb["p"].isna()]
    return list(rows["bias"])


def summary(model: Any, tables: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """A model's entries in the report's summary: protocol, human-likeness score (over the testable
    biases; NaN: none), the biases run and the untestable ones (t-test undefined), the score per bias
    ("n/a": untestable), perturbations whose Δp is significant after Holm over the report's family
    (and at raw p) and those untestable, and the largest Holm-significant effects."""
    rb, hl = tables["response_bias"], tables["human_likeness"]
    mine = rb[rb["model"] == model.name]
    score = hl[hl["model"] == model.name]
    perturbations = mine[(mine["setting"] != "bias") & mine["p"].notna()]
    left_out = _untestable_biases(rb, model.name)
    per_bias = ", ".join(
        f"{b.replace('_', ' ')} {'n/a' if b in left_out else _signed(score[b].iloc[0])}"
        for b in BIASES
        if len(score) and (b in left_out or pd.notna(score[b].iloc[0]))
    )
    return {
        "protocol": protocol_of(model),
        "human_likeness": float(score["score"].iloc[0]) if len(score) and pd.notna(score["score"].iloc[0]) else np.nan,
        "n_biases": score["n_biases"].iloc[0] if len(score) else 0,
        "n_untestable": len(left_out),
        "human_likeness_per_bias": per_bias,
        "perturbations": len(perturbations),
        "perturbations_untestable": int(((mine["setting"] != "bias") & mine["p"].isna()).sum()),
        "perturbations_significant_holm": int((perturbations["p_holm"] < SIGNIFICANCE).sum()),
        "perturbations_significant_raw": int((perturbations["p"] < SIGNIFICANCE).sum()),
        "largest_effects": "; ".join(largest_effects(mine)),
    }


def _paper_scores(
    tables: Mapping[str, pd.DataFrame], model: str | None = None, left_out: Sequence[str] = ()
) -> pd.Series:
    """The paper's models' human-likeness scores: on `model`'s biases and pairs (`human_likeness_matched`)
    but its untestable ones (`left_out`), or with no model over all their pairs (as published); NaN
    where none of those biases is testable for them."""
    if model is not None:
        hl = tables.get("human_likeness_matched")
        if hl is None or not len(hl):
            return pd.Series(dtype=float)
        hl = hl.loc[hl["compared_with"] == model].set_index("model")
        biases = [b for b in BIASES if b in hl.columns and b not in left_out]
        return hl[biases].astype(float).sum(axis=1, min_count=1)
    hl = tables["human_likeness"]
    if "protocol" not in hl.columns:
        return pd.Series(dtype=float)
    return hl.loc[hl["protocol"] == PAPER_PROTOCOL].set_index("model")["score"].astype(float)


def _paper_untestable(
    tables: Mapping[str, pd.DataFrame], model: str, left_out: Sequence[str] = ()
) -> dict[str, list[str]]:
    """The paper's models whose score beside `model` leaves out a bias untestable for them on the
    shared pairs (its t-test undefined; `left_out`, untestable for `model` too, aside), with those
    biases: their scores are over fewer biases than the run's."""
    hl = tables.get("human_likeness_matched")
    if hl is None or not len(hl) or "untestable" not in hl.columns:
        return {}
    hl = hl.loc[(hl["compared_with"] == model) & hl["score"].notna()]
    found = {}
    for name, untestable in zip(hl["model"], hl["untestable"]):
        named = untestable.split(", ") if isinstance(untestable, str) else []  # None or NaN: none
        biases = [b for b in named if b and b not in left_out]
        if biases:
            found[name] = biases
    return found


def _matched_rows(tables: Mapping[str, pd.DataFrame], model: str) -> pd.DataFrame:
    """The paper's models' rows on `model`'s cells and pairs (`paper_matched`)."""
    matched = tables.get("paper_matched")
    if matched is None or not len(matched):
        return pd.DataFrame(columns=["compared_with", "model", "bias", "setting", "matched", "n_pairs"])
    return matched[matched["compared_with"] == model]


def _n_text(fewest: float, most: float) -> str:
    """A count over the paper's models: "126", or "3–6" where they differ ("–": none)."""
    if pd.isna(fewest):
        return "–"
    return f"{int(fewest)}" if fewest == most else f"{int(fewest)}–{int(most)}"


def _pair_basis(tables: Mapping[str, pd.DataFrame], model: str) -> pd.DataFrame:
    """Per cell of `model` beside which the paper's models are scored (`paper_matched`): `mine` (this
    run's pairs), `fewest` and `most` (the paper's models' pairs), `matched` (by question key; False:
    all their pairs) and `same` (every paper model on exactly this run's pairs)."""
    rows = _matched_rows(tables, model).astype({"matched": bool})
    rb = tables["response_bias"]
    mine = rb[rb["model"] == model].set_index(["bias", "setting"])["n_pairs"]
    basis = (
        rows.groupby(["bias", "setting"], sort=False)
        .agg(fewest=("n_pairs", "min"), most=("n_pairs", "max"), matched=("matched", "all"))
        .reset_index()
    )
    basis["mine"] = [int(mine.get(cell, 0)) for cell in zip(basis["bias"], basis["setting"])]
    basis["same"] = basis["matched"] & (basis["fewest"] == basis["mine"]) & (basis["most"] == basis["mine"])
    return basis


NO_SHARED_KEY = "this run's question keys are not in their samples"


def _pairs_phrase(cell: Mapping[str, Any]) -> str:
    """The pairs of one `_pair_basis` cell: "the same 6 pairs", "the 3 of 6 pairs they hold" or "all their
    126 pairs, sharing no question key"."""
    theirs = _n_text(cell["fewest"], cell["most"])
    if not cell["matched"]:
        return f"all their {theirs} pairs, sharing no question key"
    if cell["same"]:
        return f"the same {_count(cell['mine'], 'pair')}"
    return f"the {theirs} of {cell['mine']} pairs they hold"


def _per_bias(basis: pd.DataFrame) -> str:
    """E.g. "acquiescence on the same 6 pairs; odd even on all their 126 pairs, sharing no question key"."""
    return "; ".join(f"{r['bias'].replace('_', ' ')} on {_pairs_phrase(r)}" for _, r in basis.iterrows())


def _like_with_like(tables: Mapping[str, pd.DataFrame], model: str, left_out: Sequence[str] = ()) -> str:
    """On what the paper's scores beside `model` are computed: its scored biases (less `left_out`, its
    untestable ones) and, by question key, their pairs; per bias where that differs between biases."""
    basis = _pair_basis(tables, model)
    basis = basis[(basis["setting"] == "bias") & ~basis["bias"].isin(left_out)]
    if not len(basis):
        return ""
    same = f"the same {'bias' if len(basis) == 1 else f'{len(basis)} biases'}"
    if basis["same"].all():
        return f" on {same} and the same {_count(int(basis['mine'].sum()), 'pair')} (matched by question key)"
    if basis["matched"].all() and (basis["fewest"] == basis["most"]).all():
        shared, ran = int(basis["most"].sum()), int(basis["mine"].sum())
        return f" on {same} and the {shared} of this run's {ran} pairs they hold (matched by question key)"
    if not basis["matched"].any():
        return f" on {same} but over all their pairs ({NO_SHARED_KEY})"
    return f" on {same} (by question key: {_per_bias(basis)})"


def power_sentence(tables: Mapping[str, pd.DataFrame], model: str, k: int = 3) -> str:
    """Which of `model`'s tests have too few pairs to detect the paper's effect sizes, with the rule."""
    power = tables.get("power")
    if power is None or not len(power):
        return ""
    mine = power[power["model"] == model]
    no_mde = mine[mine["mde"].astype(float).isna()]
    undefined = (
        f"No minimum detectable Δ for {_count(len(no_mde), 'test')} ("
        + ", ".join(f"{r['bias'].replace('_', ' ')} {r['setting'].replace('_', ' ')}" for _, r in no_mde.iterrows())
        + "): fewer than 2 pairs with a Δ or no spread of Δ, and no paper sd to use instead."
        if len(no_mde)
        else ""
    )
    weak = mine[mine["underpowered"].eq(True)]  # None (MDE undefined) is neither
    if not len(weak):
        return undefined
    cells = []
    for _, r in weak.head(k).iterrows():
        what = "Δb" if r["setting"] == "bias" else f"{r['setting'].replace('_', ' ')} Δp"
        n = int(r["n_pairs"])
        if np.isfinite(r["mde"]):
            sd = ", with the paper's sd" if r["sd_source"] == "paper" else ""
            mde = f"detectable |Δ| ≥ {r['mde']:.1f}{sd}"
        else:
            mde = f"no t-test with {_count(n, 'pair')}"
        cells.append(
            f"{r['bias'].replace('_', ' ')} {what} (n {n}: {mde}; "
            f"the paper's models' median |Δ| {r['paper_abs_delta']:.1f} over {int(r['paper_n_pairs'])} pairs)"
        )
    more = f" and {len(weak) - k} more (table `power`)" if len(weak) > k else ""
    n_tests = len(mine)
    return (
        f"Too few pairs to detect the paper's effect sizes in {len(weak)} of {_count(n_tests, 'test')}: "
        + "; ".join(cells)
        + more
        + f". Rule: minimum detectable Δ = (t_{{{1 - SIGNIFICANCE / 2:g},n−1}} + t_{{{POWER:g},n−1}}) · sd/√n, two-sided "
        f"t-test at α {SIGNIFICANCE:g} with power {POWER:g}, sd = this run's per-pair sd, or the median sd of the "
        f"paper's models where this run has fewer than {MIN_PAIRS_FOR_SD} pairs or no spread of Δ; a Δ that is not "
        "significant here may still be there." + (f" {undefined}" if undefined else "")
    )


def summary_sentence(row: Mapping[str, Any], tables: Mapping[str, pd.DataFrame]) -> str | None:
    """The verdict on a model's survey response biases, beside the paper's models where shown."""
    if not isinstance(row.get("protocol"), str):
        return None
    parts = [f"Survey response biases ({row['protocol']}):"]
    score = row["human_likeness"]
    n_biases, n_untestable = int(row["n_biases"] or 0), int(row.get("n_untestable") or 0)
    untested = f"; {n_untestable} untestable: t-test undefined, not scored" if n_untestable else ""
    if pd.notna(score):
        over = _count(n_biases - n_untestable, "testable bias" if n_untestable else "bias")
        parts.append(f"human-likeness score {_signed(score)} over {over} ({row['human_likeness_per_bias']}{untested})")
        left_out = _untestable_biases(tables["response_bias"], row["model"])
        paper = _paper_scores(tables, row["model"], left_out)
        scored = paper.dropna()  # a paper model with no testable bias has no score to compare
        if len(scored):
            below, above = int((scored < score).sum()), int((scored > score).sum())
            none = f", {len(paper) - len(scored)} without a score" if len(scored) < len(paper) else ""
            if fewer := _paper_untestable(tables, row["model"], left_out):
                listed = "; ".join(
                    f"{name}: {', '.join(b.replace('_', ' ') for b in bs)}" for name, bs in fewer.items()
                )
                none += f", {len(fewer)} over fewer biases, one of theirs untestable on these pairs ({listed})"
            parts[-1] += (
                f"; the paper's {_count(len(scored), 'model')} score {_signed(scored.min())} to "
                f"{_signed(scored.max())} ({below} below it, {above} above{none}){_like_with_like(tables, row['model'], left_out)}."
            )
        else:
            parts[-1] += "."
    elif n_biases:
        parts.append(
            f"no human-likeness score: no bias is testable ({row['human_likeness_per_bias']}: t-test undefined, "
            "fewer than 2 pairs with a Δ or no spread)."
        )
    else:
        parts.append("no bias setting run, so no human-likeness score.")
    untestable_perturbations = int(row.get("perturbations_untestable") or 0)
    if row["perturbations"]:
        parts.append(
            f"{int(row['perturbations_significant_holm'])} of {_count(row['perturbations'], 'perturbation')} move "
            f"answers significantly after Holm ({int(row['perturbations_significant_raw'])} at raw p < {SIGNIFICANCE}); "
            "humans' answers do not move under them."
            + (f" {untestable_perturbations} more untestable (t-test undefined)." if untestable_perturbations else "")
        )
    elif untestable_perturbations:
        parts.append(f"{_count(untestable_perturbations, 'perturbation')} run, all untestable (t-test undefined).")
    effects = row["largest_effects"]
    parts.append(f"Largest effects: {effects}." if effects else "No Δ is significant after Holm.")
    if power := power_sentence(tables, row["model"]):
        parts.append(power)
    return " ".join(parts)


def _score_shown(score: float, n_biases: float, n_untestable: float) -> str:
    """E.g. "+1 / 2", "+1 / 2 (1 untestable)" (score over the 2 testable biases), "n/a (1 untestable)"."""
    n_biases, n_untestable = (0 if pd.isna(v) else int(v) for v in (n_biases, n_untestable))
    if not n_biases:
        return "–"
    untested = f" ({n_untestable} untestable)" if n_untestable else ""
    return f"n/a{untested}" if pd.isna(score) else f"{_signed(score)} / {n_biases - n_untestable}{untested}"


def _perturbations_shown(significant: float, tested: float, untested: float) -> str:
    """E.g. "1 / 1" (significant after Holm / testable perturbations), "1 / 1 (2 untestable)", "n/a (2 untestable)"."""
    significant, tested, untested = (0 if pd.isna(v) else int(v) for v in (significant, tested, untested))
    if not tested + untested:
        return "–"
    note = f" ({untested} untestable)" if untested else ""
    return f"{significant} / {tested}{note}" if tested else f"n/a{note}"


def summary_display(summary: pd.DataFrame) -> dict[str, list[str]]:
    """The summary table's response-bias columns, as shown (counts as "k / n")."""
    if "protocol" not in summary:
        return {}
    return {
        "protocol": list(summary["protocol"].fillna("–")),
        "human-likeness": [
            _score_shown(s, n, u)
            for s, n, u in zip(summary["human_likeness"], summary["n_biases"], summary["n_untestable"])
        ],
        "perturbations significant (Holm)": [
            _perturbations_shown(k, n, u)
            for k, n, u in zip(
                summary["perturbations_significant_holm"], summary["perturbations"], summary["perturbations_untestable"]
            )
        ],
        "largest effects (Holm p < 0.05)": list(summary["largest_effects"].fillna("–")),
    }


def summary_notes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """The paper's models in one line: human-likeness score and perturbations with raw p < 0.05, out
    of their distinct perturbation rows (the footnoted copies, `note`, are not counted twice)."""
    rb = tables["response_bias"]
    paper = rb[rb["protocol"] == PAPER_PROTOCOL]
    if not len(paper):
        return []
    copies = paper["note"].notna() if "note" in paper.columns else pd.Series(False, index=paper.index)
    scores = _paper_scores(tables)
    items = []
    for label, rows in paper[~copies].groupby("model", sort=False):
        perturbations = rows[rows["setting"] != "bias"]
        n_sig = int((perturbations["p"] < SIGNIFICANCE).sum())
        items.append(f"{label.removesuffix(paper_label(''))} {_signed(scores[label])} ({n_sig}/{len(perturbations)})")
    left_out = (
        " (their opinion_float perturbation rows are copies of their odd_even ones, †, so not counted again)"
        if copies.any()
        else ""
    )
    return [
        f"- {PAPER_MODELS} ({AUTHORS}; released samples, 50 answers per prompt; reference values outside the test "
        f"family; over all their pairs, as published): human-likeness score and perturbations with raw p < {SIGNIFICANCE}"
        f"{left_out}: " + ", ".join(items) + "."
    ]


def beside_paper(tables: Mapping[str, pd.DataFrame], model: str) -> pd.DataFrame:
    """`model`'s Δ rows, then the paper's models' rows on its cells and pairs (`paper_matched`)."""
    rb = tables["response_bias"]
    matched = _matched_rows(tables, model).drop(columns=["compared_with", "matched", "n_pairs_all"], errors="ignore")
    return pd.concat([part for part in (rb[rb["model"] == model], matched) if len(part)], ignore_index=True)


def _own_models(rb: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rb.loc[rb["protocol"] != PAPER_PROTOCOL, "model"]))


def _headline_pairs(tables: Mapping[str, pd.DataFrame], model: str, named: bool) -> str:
    """On which pairs the headline's paper rows are: `model`'s (`named`: say whose), per bias where
    they do not hold all of them."""
    basis = _pair_basis(tables, model)
    basis = basis[basis["setting"] == "bias"]
    if basis["same"].all():
        return f"on {model}'s pairs" if named else "on the same pairs"
    return f"by {model}'s question keys: {_per_bias(basis)}" if named else f"by question key: {_per_bias(basis)}"


def headline(tables: Mapping[str, pd.DataFrame]) -> Panel | None:
    """Δb per bias (the bias setting): the user's models, then the paper's on the first user
    model's biases and pairs (`paper_matched`)."""
    rb = tables["response_bias"]
    own = _own_models(rb)
    if not own:
        return None
    paper = _matched_rows(tables, own[0]).drop(columns=["compared_with"], errors="ignore")
    rows = pd.concat([part for part in (rb[rb["model"].isin(own)], paper) if len(part)], ignore_index=True)
    bias_rows = rows[rows["setting"] == "bias"]
    if not len(bias_rows):  # (assigning a Series to an empty frame would add its rows)
        return None
    bias_rows = bias_rows.assign(significant=significant(bias_rows))
    models = list(dict.fromkeys(bias_rows["model"]))
    values = bias_rows.pivot(index="model", columns="bias", values="delta").reindex(index=models)
    values = values[[b for b in BIASES if b in values.columns]]
    marks = bias_rows.pivot(index="model", columns="bias", values="significant").reindex_like(values)
    title = f"Survey response biases ({AUTHORS}): Δb per bias, points (> 0 = the human direction)"
    if len(paper):
        title += f"; the paper's models {_headline_pairs(tables, own[0], len(own) > 1)}"
    if (undefined := bias_rows[bias_rows["p"].isna()]).shape[0]:
        cells = ", ".join(f"{m} {b.replace('_', ' ')}" for m, b in zip(undefined["model"], undefined["bias"]))
        title += f"; no t-test (unmarked, neither significant nor not): {cells}"
    return Panel(
        title=title,
        values=values,
        significant=marks.fillna(False).astype(bool),
        vmax=DELTA_SCALE,
        unit="Δb (points)",
        references=int(paper.loc[paper["setting"] == "bias", "model"].nunique()) if len(paper) else 0,
    )


# ---------------------------------------------------------------------------- section

RB_COLUMNS = [
    "model",
    "protocol",
    "bias",
    "setting",
    "n_pairs",
    "n_draws",
    "delta",
    "delta_stderr",
    "t",
    "p",
    "p_holm",
    "p_bh",
    "uncertainty_q",
    "uncertainty_qp",
    "invalid_rate",
    "pairs_without_delta",
    "draw_pairs_without_delta",
]
PAPER_NOTE = (
    f"{PAPER_MODELS} ({AUTHORS}) are scored from their released samples — 50 sampled answers per question and "
    f"prompt, the paper's protocol (`protocol` = `{PAPER_PROTOCOL}`), exactly as `biasmonkey score-samples` prints them — "
    "not from log-probabilities; they are reference values, not tests of your models, so they are outside the "
    "multiple-comparison family (no `p_holm`/`p_bh`)."
)
UNCERTAINTY_SIDE_TEXT = {
    "paper": "the authors' choice, TACL Table 4: q for acquiescence and odd/even, q' for response order, opinion "
    "float and allow/forbid; q on the perturbation rows, for which the paper reports no r. Other choices: "
    "`--uncertainty-side q|qp`",
    "q": "q on every row (`--uncertainty-side q`; the paper's choice is q' for response order, opinion float and "
    "allow/forbid)",
    "qp": "q' on every row (`--uncertainty-side qp`; the paper's choice is q for acquiescence and odd/even)",
}


def _show(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return frame[[c for c in columns if c in frame.columns]]


def _significant(frame: pd.DataFrame, column: str = "p") -> pd.Series:
    return frame[column].astype(float) < SIGNIFICANCE


UNTESTABLE_MARK = "°"
MARKS_LEGEND = (
    f"Marks: * = p < {SIGNIFICANCE} after Holm over the report's tests, as in the figures; the paper's models, "
    f"reference values outside that family, are marked at raw p < {SIGNIFICANCE} (as in the paper); "
    f"{UNTESTABLE_MARK} = t-test undefined (fewer than 2 pairs with a Δ, or no spread): neither significant nor not; "
    "n/a = no pair with a Δ."
)
N_PAPER = "n (paper)"
PAIRS_NOTE = (
    f"n = this run's pairs with a Δ in the row; {N_PAPER} = the paper's models' pairs there (a range where they "
    "differ): those of this run's question keys they hold, or all their pairs where they hold none"
)


def comparison_table(rb: pd.DataFrame) -> pd.DataFrame:
    """Δ per bias × setting (rows) and model (columns, the user's then the paper's): "*" where
    significant (`report_figures.significant`: Holm for the report's tests, raw p for the paper's
    models), "†" on the paper's rows that are their odd/even ones, "n/a" where a model has no Δ;
    `n` = the user's model's pairs, N_PAPER = the paper's models' ("3–6" where they differ)."""
    rb = rb.assign(significant=significant(rb))
    models = list(dict.fromkeys(rb["model"]))
    rows = []
    for bias, setting in ((b, s) for b in BIASES for s in SETTINGS):
        by_model = rb[(rb["bias"] == bias) & (rb["setting"] == setting)].set_index("model")
        if not len(by_model):
            continue
        paper = by_model["protocol"] == PAPER_PROTOCOL
        theirs = by_model.loc[paper, "n_pairs"]
        row = {
            "bias": bias,
            "setting": setting,
            "n": int(by_model.loc[~paper, "n_pairs"].iloc[0]) if (~paper).any() else "–",
            N_PAPER: _n_text(theirs.min(), theirs.max()),
        }
        for m in models:
            if m in by_model.index:
                r = by_model.loc[m]
                note = "†" if isinstance(r.get("note"), str) else ""
                mark = UNTESTABLE_MARK if pd.isna(r["p"]) else "*" if r["significant"] else ""
                row[m] = ("n/a" if pd.isna(r["delta"]) else f"{r['delta']:+.1f}") + mark + note
            else:
                row[m] = "–"
        rows.append(row)
    return pd.DataFrame(rows, columns=["bias", "setting", "n", N_PAPER, *models])


BOLD_LEGEND = (
    f"**Bold** rows: raw p < {SIGNIFICANCE} (before the multiple-comparison correction; `p_holm` < {SIGNIFICANCE} is "
    "what the figures mark with *)."
)


R_UNDEFINED = "Pearson r undefined (r and r_p left out)"


def _with_undefined(legend: str, rows: pd.DataFrame, test: str = T_TEST_UNDEFINED) -> str:
    """`legend`, then the rows whose `test` is undefined, with why (`summary.undefined_tests_note`)."""
    note = undefined_tests_note(rows.to_dict("records"), "model", test) if TEST_NOTE in rows.columns else None
    return f"{legend} {note}" if note else legend


def _mirrored_note(rows: pd.DataFrame) -> str:
    """The footnote on the paper's opinion-float perturbation rows, where the table holds them."""
    published = rows[rows["protocol"] == PAPER_PROTOCOL] if "note" in rows.columns else rows.iloc[:0]
    if not published["note"].notna().any():
        return ""
    return (
        f"{MIRRORED_NOTE} and odd/even Δ rule (the published analysis has no opinion-float perturbation samples), "
        "so the paper's opinion_float perturbation values equal their odd_even ones."
    )


def _pairs_note(basis: pd.DataFrame, model: str) -> str:
    """The rows of `model`'s comparison table (`_pair_basis`) where the paper's models are not on its pairs."""

    def cells(rows: pd.DataFrame) -> str:
        return ", ".join(f"{b} {s}" for b, s in zip(rows["bias"], rows["setting"]))

    notes = []
    if len(partial := basis[basis["matched"] & ~basis["same"]]):
        notes.append(
            f"The paper's models hold only some of {model}'s question keys for {cells(partial)}: those rows are over "
            f"the pairs they hold ({N_PAPER})."
        )
    if len(unmatched := basis[~basis["matched"]]):
        notes.append(
            f"None of {model}'s question keys is in the paper's samples for {cells(unmatched)}: those rows use all "
            f"their pairs ({N_PAPER})."
        )
    return " ".join(notes)


def section(
    tables: Mapping[str, pd.DataFrame],
    fig_dir: Path,
    models: Sequence[Any] = (),
    uncertainty_side: str = DEFAULT_UNCERTAINTY,
) -> Section:
    rb = tables["response_bias"]
    paper = rb["protocol"] == PAPER_PROTOCOL
    mine = rb[~paper]
    s = Section(f"Survey response biases ({AUTHORS})")
    s.blocks.append(
        "Δ in percentage points per pair (q = original, q' = modified question), averaged over pairs; t and p from a two-sided "
        f"one-sample t-test against 0; **bold** rows have p < {SIGNIFICANCE}. `p_holm` and `p_bh` are the Holm and "
        "Benjamini–Hochberg adjusted p-values over all tests in this report. On bias rows Δ > 0 is the human-like direction; "
        "humans show no change on the perturbation rows (key typo, middle random, letter swap). `protocol`: `exact` = "
        "answer probabilities from log-probabilities, `sampled` = shares of sampled answers."
    )
    s.blocks.append(
        Table(
            "Δ per model, bias and setting",
            _show(mine, RB_COLUMNS),
            _significant(mine),
            legend=_with_undefined(BOLD_LEGEND, mine),
        )
    )
    if paper.any():
        s.blocks.append(
            PAPER_NOTE + " Beside each of your models they are scored on its cells and pairs (matched by question "
            "key; `tables/paper_matched.csv`); `tables/response_bias.csv` keeps them over all their pairs, as published."
        )
        for m in _own_models(rb):
            beside = beside_paper(tables, m)
            if beside["protocol"].eq(PAPER_PROTOCOL).any():
                basis = _pair_basis(tables, m)
                s.blocks.append(
                    Table(
                        f"{m}: Δ (points) beside the paper's models"
                        + (" on the same pairs" if basis["same"].all() else ""),
                        comparison_table(beside),
                        legend=" ".join(
                            part
                            for part in (MARKS_LEGEND, f"{PAIRS_NOTE}.", _pairs_note(basis, m), _mirrored_note(beside))
                            if part
                        ),
                    )
                )
    hl = tables["human_likeness"]
    if len(hl):
        s.blocks.append(
            "Human-likeness score (TACL Table 3): +1 per bias with a significant positive Δb, −1 significant negative, "
            "0 not significant (raw p < 0.05), summed over the testable biases. A bias whose t-test is undefined "
            "(fewer than 2 pairs with a Δ, or no spread) is untestable: not scored (–), named in `untestable` and "
            "counted in `n_untestable`; `score` is n/a where no bias is testable."
        )
        own = hl["protocol"] != PAPER_PROTOCOL if "protocol" in hl.columns else hl["model"].notna()
        s.blocks.append(Table("Human-likeness score per model", hl[own]))
        matched_hl = tables.get("human_likeness_matched")
        if matched_hl is not None and len(matched_hl):
            s.blocks.append(
                Table(
                    "The paper's models' human-likeness score on the biases and pairs of your model (`compared_with`)",
                    matched_hl,
                )
            )
    grid_caption = f"colour = Δ (points; the darkest at ±{DELTA_SCALE:g}), {report_figures.SIGNIFICANCE_TEXT}"
    for m in models:
        if m.tasks(FAMILY):
            path = report_figures.bias_grid(rb, m.name, fig_dir / f"bias_grid_{m.slug}.png")
            s.blocks.append(Figure(f"{m.name}: Δ per bias and setting; {grid_caption}", path))
    if paper.any():
        names = list(dict.fromkeys(rb.loc[paper, "model"]))
        path = report_figures.bias_grids(
            rb, names, fig_dir / "bias_grid_paper_models.png", "The paper's models (released samples, 50 per prompt)"
        )
        s.blocks.append(
            Figure(
                "The paper's models, scored from their released samples (the paper's sampling protocol) over all their "
                f"pairs, as published: Δ per bias and setting; {grid_caption}. Their opinion_float perturbation cells "
                "are their odd_even ones (the upstream analysis scores them on the odd/even samples).",
                path,
            )
        )
    s.blocks.append(_dendrogram(rb, paper.any(), fig_dir))
    unc = tables["uncertainty"]
    s.blocks.append(
        "Uncertainty: mean normalised entropy H(p)/log(n) of the answers to the original (q) and modified (q') question, "
        "and Pearson r between |Δ| and the entropy of one of them over the pairs, with its p; `r_side` says which "
        f"({UNCERTAINTY_SIDE_TEXT[uncertainty_side]})."
    )
    s.blocks.append(
        Table(
            "Uncertainty per model, bias and setting",
            unc,
            _significant(unc, "r_p"),
            legend=_with_undefined(
                f"**Bold** rows: raw r_p < {SIGNIFICANCE} (before the multiple-comparison correction; see `r_p_holm`). "
                "`n_pairs`: the questions with a Δ and an entropy, each once (with perturbation draws, its |Δ| and "
                f"entropy averaged over the draws first, as the Δ test does); `{TEST_NOTE}`: why r is undefined (n/a).",
                unc,
                R_UNDEFINED,
            ),
        )
    )
    s.blocks.append(
        Figure(
            "|Δb| against the normalised entropy of the side the uncertainty table correlates (its `r_side`, "
            'q or q\'; legend: that side, Pearson r and p, or "r n/a" with why)',
            report_figures.uncertainty_scatter(
                [m for m in models if m.tasks(FAMILY)], unc, fig_dir / "uncertainty_scatter.png"
            ),
        )
    )
    if (draws := tables.get("perturbation_draws")) is not None:
        s.blocks.append(
            "Perturbation draws (option `perturbation_seeds`): Δp of each seeded draw and its spread. The Δ table above tests "
            "each question once (its Δ averaged over the draws); the per-draw p-values are not in the multiple-comparison family."
        )
        s.blocks.extend(f"- {model}: {line}" for (model, line), _ in draws.groupby(["model", "line"], sort=False))
        s.blocks.append(
            Table(
                "Δp per model, bias, perturbation and draw",
                draws.drop(columns=["line"]),
                _significant(draws),
                legend=f"**Bold** rows: raw p < {SIGNIFICANCE} of the draw (per-draw tests have no Holm p); "
                f"`{TEST_NOTE}`: why a draw's t-test is undefined (n/a; counted in `n_untestable`).",
            )
        )
    if (topics := tables.get("topics")) is not None and len(topics):
        missing = topics[topics["topic"] == NOT_CODED]
        s.blocks.append(
            "Δb by ATP topic (topic flags of `all-questions-coded.csv`, matched by question key; a question with several "
            "topics counts in each). Keys the coded file does not list are left out of the topic rows and counted in the "
            f"`{NOT_CODED}` rows: {int(missing['n_pairs'].sum())} pair(s) in all."
        )
        tested = topics[topics["topic"] != NOT_CODED]
        s.blocks.append(
            Table(
                "Δb per model, bias and topic",
                topics,
                _significant(topics),
                legend=BOLD_LEGEND + f" `{TEST_NOTE}`: why a row's t-test is undefined (t and p n/a).",
            )
        )
        if tested["delta"].notna().any():
            no_bar = tested[report_figures.no_stderr(tested)]
            s.blocks.append(
                Figure(
                    "Δb per bias and ATP topic (error bars: stderr)"
                    + (
                        f'; "{report_figures.NO_STDERR}" over a bar: stderr undefined (1 pair), so no error bar, in '
                        + ", ".join(f"{r['model']} {r['bias']} {r['topic']}" for _, r in no_bar.iterrows())
                        if len(no_bar)
                        else ""
                    ),
                    report_figures.topic_bars(tested, fig_dir / "topics.png"),
                )
            )
    return s


def _dendrogram(rb: pd.DataFrame, with_paper: bool, fig_dir: Path) -> str | Figure:
    matrix = figures.feature_matrix(rb, "delta", ["bias", "setting"])
    tree = figures.model_dendrogram(
        matrix, fig_dir / "response_bias_dendrogram.png", "Euclidean distance between Δ vectors (points)"
    )
    if tree is None:
        return (
            f"Model clustering needs at least {figures.MIN_MODELS_FOR_TREE} models with a common bias × setting cell; "
            f"this report has {rb['model'].nunique()}, so no response-bias dendrogram is drawn."
        )
    mixed = " Protocols differ (exact or sampled answers), which moves Δ too." if with_paper else ""
    return Figure(
        f"Models clustered by their Δ over the {matrix.shape[1]} bias × setting cells all of them have "
        f"(complete linkage, Euclidean distance, as Malberg et al. cluster models).{mixed}",
        tree,
    )


# ---------------------------------------------------------------------------- inputs and leaderboard


def inputs_notes(tables: Mapping[str, pd.DataFrame]) -> list[str]:
    loaded = tables["baselines"].dropna(subset=["source"])
    loaded = loaded[loaded["error"].isna()]
    if not len(loaded):
        return []
    names = ", ".join(m.removesuffix(paper_label("")) for m in loaded["model"])
    source = loaded["source"].iloc[0].split(" ")[0]
    return [
        f"{PAPER_MODELS}: the released samples of {names} (`{source}`, `results/<model>/csv/`), checked against their sha256."
    ]


def leaderboard_entries(model: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, Any]]:
    """`biasmonkey_human_likeness`: the TACL Table 3 score over the testable biases ("N/A": none) and
    the count of untestable ones (`untestable`), with `n-samples` effective = the testable biases
    (not an lm-eval task: no `configs` entry)."""
    hl = tables["human_likeness"]
    rows = hl[hl["model"] == model].to_dict("records")
    if not rows:
        return {}
    n, left_out = (int(rows[0].get(k, 0) or 0) for k in ("n_biases", "n_untestable"))
    entry = {
        "name": HUMAN_LIKENESS,
        "alias": HUMAN_LIKENESS,
        "sample_len": n,
        "score,none": math.nan if pd.isna(score := rows[0]["score"]) else int(score),  # "N/A": none testable
        "score_stderr,none": "N/A",
        "untestable,none": left_out,  # biases run whose t-test is undefined: not scored
        "untestable_stderr,none": "N/A",
    }
    return {
        HUMAN_LIKENESS: {
            "results": entry,
            "higher_is_better": {"score": True, "untestable": False},
            "n_samples": {"original": len(BIASES), "effective": n - left_out},
        }
    }
