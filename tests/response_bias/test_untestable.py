"""An undefined Δ t-test (fewer than 2 pairs with a Δ, or all Δ equal) is shown as n/a with its
reason, and is left out of the human-likeness score as untestable, never counted as "not
significant" or as a 0: `biasmonkey summarize`, the report's tables, summary, verdict, headline
and leaderboard entry, and `biasmonkey compare`'s run score."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from records import pair

from biasmonkey.harness_ext.app.report import verdict
from biasmonkey.harness_ext.app.report.headline import Panel
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.harness_ext.app.summary import table_lines
from biasmonkey.tasks.response_bias import report as rb_report
from biasmonkey.tasks.response_bias.compare import run_scores
from biasmonkey.tasks.response_bias.report_tables import power_table
from biasmonkey.tasks.response_bias.summary import human_likeness_line, summary_table

CONST = 23.10585786300049  # the audited run: 8 pairs, every Δ this value
NO_SPREAD = "no spread: all 8 Δ equal to 12 digits"


def constant(setting: str = "bias", bias: str = "acquiescence") -> list:
    return [pair(f"K{i}", setting, CONST, bias=bias) for i in range(8)]


def significant_allow_forbid() -> list:
    # Δ 10 … 14: mean 12, SD √2.5, stderr √0.5, t 16.97 on 4 df → p 7.1e-5: +1
    return [pair(f"K{i}", "bias", d, bias="allow_forbid") for i, d in enumerate([10, 11, 12, 13, 14])]


# ---------------------------------------------------------------------------- biasmonkey summarize


def test_summarize_shows_an_undefined_test_as_na_with_why() -> None:
    table = summary_table([constant()])
    (row,) = table.rows
    assert row["delta"] == CONST and row["delta_stderr"] == 0.0
    # was: CI 23.106 … 23.106 (zero width) and significant False
    assert all(math.isnan(row[c]) for c in ("delta_ci_low", "delta_ci_high", "delta_t", "delta_p", "significant"))
    assert row["test_note"] == NO_SPREAD
    lines = table_lines(table)
    assert "| acquiescence | bias | 8 | 23.106 | 0.000 | n/a | n/a | n/a | n/a | n/a |" in lines[2]
    # was: "Human-likeness score: +0 of 1 (acquiescence 0)."
    assert f"Human-likeness score: n/a (no testable bias; 1 untestable, not scored: acquiescence ({NO_SPREAD}))." in (
        lines
    )
    assert (
        f"n/a: t-test undefined (t, p, CI and significance left out) for 1 row(s): acquiescence/bias ({NO_SPREAD})."
        in (lines)
    )


def test_summarize_with_every_answer_invalid() -> None:
    # sampling mode, every answer invalid: no pair has a Δ (n 0); was "significant no"
    (row,) = summary_table([[pair(f"K{i}", "bias", None, n_answers=100, n_invalid=100) for i in range(6)]]).rows
    assert row["n_pairs"] == 0 and math.isnan(row["significant"]) and row["test_note"] == "no pair with a Δ"
    assert row["pairs_without_delta"] == 6


def test_human_likeness_line_scores_the_testable_biases_only() -> None:
    rows = summary_table([constant(), significant_allow_forbid()]).rows
    rows = [
        {**r, "t": r["delta_t"], "p": r["delta_p"], "ci_low": r["delta_ci_low"], "ci_high": r["delta_ci_high"]}
        for r in rows
    ]
    assert human_likeness_line(rows) == (
        "Human-likeness score: +1 of 1 testable (allow_forbid +1); "
        f"1 untestable, not scored: acquiescence ({NO_SPREAD})."
    )


# ---------------------------------------------------------------------------- the report


def model(name: str, tasks: dict[str, list]) -> ModelResults:
    m = ModelResults(name=name, model=f"/models/{name}")
    m.records["response_bias"].update(tasks)
    return m


@pytest.fixture(scope="module")
def report() -> tuple[dict[str, pd.DataFrame], list[ModelResults]]:
    mixed = model(
        "mixed",
        {
            "biasmonkey_acquiescence": constant(),  # untestable: no spread
            "biasmonkey_allow_forbid": significant_allow_forbid(),  # +1
            "biasmonkey_acquiescence_key_typo": [pair("K0", "key_typo", 3.0)],  # untestable: 1 pair
        },
    )
    const = model("const", {"biasmonkey_acquiescence": constant()})  # no testable bias at all
    models = [mixed, const]
    return build_tables(models, baselines=False, topics=False), models


def test_report_tables_mark_untestable_rows(report) -> None:
    tables, _ = report
    rb = tables["response_bias"].set_index(["model", "bias", "setting"])
    row = rb.loc[("mixed", "acquiescence", "bias")]
    assert math.isnan(row["ci_low"]) and math.isnan(row["p"]) and pd.isna(row["significant"])
    assert row["test_note"] == NO_SPREAD
    assert rb.loc[("mixed", "acquiescence", "key_typo"), "test_note"] == "1 pair: no t-test"
    assert pd.isna(rb.loc[("mixed", "allow_forbid", "bias"), "test_note"])
    hl = tables["human_likeness"].set_index("model")
    # mixed: acquiescence untestable (NA, not 0), allow_forbid +1 → score +1 over 1 testable of 2 biases
    assert pd.isna(hl.loc["mixed", "acquiescence"]) and hl.loc["mixed", "allow_forbid"] == 1
    assert (hl.loc["mixed", "score"], hl.loc["mixed", "n_biases"], hl.loc["mixed", "n_untestable"]) == (1, 2, 1)
    assert hl.loc["mixed", "untestable"] == "acquiescence"
    # const: no testable bias → no score (was 0)
    assert pd.isna(hl.loc["const", "score"]) and hl.loc["const", "n_untestable"] == 1


def test_report_summary_verdict_and_leaderboard(report) -> None:
    tables, models = report
    summary = tables["summary"].set_index("model")
    mixed, const = summary.loc["mixed"], summary.loc["const"]
    assert (mixed["human_likeness"], mixed["n_biases"], mixed["n_untestable"]) == (1.0, 2, 1)
    assert mixed["human_likeness_per_bias"] == "acquiescence n/a, allow forbid +1"
    assert (mixed["perturbations"], mixed["perturbations_untestable"]) == (0, 1)
    assert math.isnan(const["human_likeness"]) and const["n_untestable"] == 1
    shown = rb_report.summary_display(tables["summary"].set_index("model", drop=False).loc[["mixed", "const"]])
    assert shown["human-likeness"] == ["+1 / 1 (1 untestable)", "n/a (1 untestable)"]  # was "+0 / 1" for const
    text = "\n".join(verdict(tables, models))
    assert (
        "human-likeness score +1 over 1 testable bias (acquiescence n/a, allow forbid +1; "
        "1 untestable: t-test undefined, not scored)"
    ) in text
    assert "1 perturbation run, all untestable (t-test undefined)." in text
    assert (
        "no human-likeness score: no bias is testable (acquiescence n/a: t-test undefined, "
        "fewer than 2 pairs with a Δ or no spread)."
    ) in text
    entry = rb_report.leaderboard_entries("mixed", tables)["biasmonkey_human_likeness"]
    assert (entry["results"]["score,none"], entry["results"]["untestable,none"]) == (1, 1)
    assert entry["n_samples"] == {"original": 5, "effective": 1}
    entry = rb_report.leaderboard_entries("const", tables)["biasmonkey_human_likeness"]
    assert math.isnan(entry["results"]["score,none"]) and entry["results"]["untestable,none"] == 1  # was 0


def test_report_marks_and_notes(report) -> None:
    tables, _ = report
    rb = tables["response_bias"]
    shown = rb_report.comparison_table(rb[rb["model"] == "mixed"]).set_index("setting")
    assert shown.loc["bias", "mixed"].tolist() == ["+23.1°", "+12.0*"]  # ° untestable; * Holm p < 0.05
    legend = rb_report._with_undefined("Legend.", rb)
    assert legend == (
        "Legend. n/a: t-test undefined (t, p, CI and significance left out) for 3 row(s): "
        f"mixed acquiescence/bias ({NO_SPREAD}); mixed acquiescence/key_typo (1 pair: no t-test); "
        f"const acquiescence/bias ({NO_SPREAD})."
    )
    panel = rb_report.headline(tables)
    assert panel.title.endswith(
        "; no t-test (unmarked, neither significant nor not): mixed acquiescence, const acquiescence"
    )
    assert panel.significant.loc["mixed"].tolist() == [False, True]


def test_headline_panel_never_marks_an_undefined_test() -> None:
    # bool(NaN) is True: a NaN in `significant` would be drawn as a mark
    values = pd.DataFrame([[1.0, 2.0, 3.0]], index=["m"], columns=["a", "b", "c"])
    marks = pd.DataFrame([[np.nan, None, True]], index=["m"], columns=["a", "b", "c"])
    panel = Panel("t", values, 1.0, "u", significant=marks)
    assert panel.significant.loc["m"].tolist() == [False, False, True]


# ---------------------------------------------------------------------------- power


def test_power_without_spread_has_no_mde() -> None:
    mine = pd.DataFrame(
        [{"model": "m", "bias": "acquiescence", "setting": "bias", "n_pairs": 8, "delta": CONST, "delta_stderr": 0.0}]
    )
    (row,) = power_table(mine, mine.iloc[:0]).to_dict("records")
    # sd 0 and no paper sd: was MDE 0.0 and underpowered False
    assert row["sd"] == 0.0 and math.isnan(row["mde"]) and row["underpowered"] is None
    sentence = rb_report.power_sentence({"power": power_table(mine, mine.iloc[:0])}, "m")
    assert sentence == (
        "No minimum detectable Δ for 1 test (acquiescence bias): fewer than 2 pairs with a Δ or no spread of Δ, "
        "and no paper sd to use instead."
    )


# ---------------------------------------------------------------------------- biasmonkey compare


def test_compare_run_score() -> None:
    mixed = {"biasmonkey_acquiescence": constant(), "biasmonkey_allow_forbid": significant_allow_forbid()}
    assert run_scores(mixed) == {"human_likeness": 1.0, "human_likeness_untestable": 1.0}
    only = run_scores({"biasmonkey_acquiescence": constant()})
    assert math.isnan(only["human_likeness"]) and only["human_likeness_untestable"] == 1.0  # was 0.0
