"""The report's opening summary and its warnings, on hand-made records with hand-computed numbers."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from records import cognitive_test, pair, yesno_item

from biasmonkey.harness_ext.app.report import model_lines, summary_display, summary_section, verdict
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.render import Page, Table, to_html, to_markdown
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.response_bias import published_samples
from biasmonkey.tasks.response_bias.report_tables import effect_label
from biasmonkey.tasks.yesno import baselines as yesno_baselines


def models() -> list[ModelResults]:
    m1 = ModelResults(name="m1", model="/models/m1")
    m1.records["response_bias"].update(
        {
            # Δb 10 … 14: mean 12, sd √2.5, stderr 0.7071, t 16.971, df 4 → p 7.07e-5
            "biasmonkey_acquiescence": [pair(f"K{i}", "bias", d) for i, d in enumerate([10, 11, 12, 13, 14])],
            # mean 0, t 0 → p 1; sampled answers: 4 × 100, 10 invalid → 2.5 %
            "biasmonkey_acquiescence_key_typo": [
                pair(f"K{i}", "key_typo", d, n_answers=100, n_invalid=10 if i == 0 else 0)
                for i, d in enumerate([1, -1, 2, -2])
            ],
            # mean 6.5, SS 5, sd 1.2910, stderr 0.6455, t 10.070, df 3 → p 0.00209; two options imputed
            "biasmonkey_acquiescence_middle_random": [
                pair(f"K{i}", "middle_random", d, n_imputed=1 if i < 2 else 0) for i, d in enumerate([5, 6, 7, 8])
            ],
            # mean 2.75, SS 8.75, sd 1.7078, stderr 0.8539, t 3.2205, df 3 → p 0.0486; one pair without Δ
            "biasmonkey_acquiescence_letter_swap": [
                *(pair(f"K{i}", "letter_swap", d) for i, d in enumerate([1, 2, 3, 5])),
                pair("K9", "letter_swap", None),
            ],
        }
    )
    # scores .5 and 1 (one failed test): t 3, df 1 → p 0.20483
    m1.records["cognitive"]["biasmonkey_cognitive_anchoring"] = [
        cognitive_test(1, 0.5),
        cognitive_test(2, 1.0),
        cognitive_test(3, None),
    ]
    # base bias 0, Specific 0 (test_report_tables.test_yesno_table_by_hand); imputed 1 + 1 per item + 1 no-context = 3
    m1.records["yesno"]["biasmonkey_yesno_comps"] = [
        yesno_item(1, "Yes", -1, -2, 1, imputed_null=1),
        yesno_item(2, "No", -1, -3, 1, imputed_null=1),
        yesno_item(3, "No", -3, -1, 0, imputed_null=1),
        yesno_item(4, "Yes", -2, -1.4, 0, imputed_null=1),
    ]
    m2 = ModelResults(name="m2", model="/models/m2")  # yes-no only, nothing to warn about
    m2.records["yesno"]["biasmonkey_yesno_comps"] = [
        dataclasses.replace(r, n_imputed=0, n_imputed_null=0) for r in m1.records["yesno"]["biasmonkey_yesno_comps"]
    ]
    return [m1, m2]


def test_summary_counts_perturbations_after_holm() -> None:
    tables = build_tables(models(), baselines=False, topics=False)
    # The family: 4 Δ rows and the cognitive test (the uncertainty r's are undefined), m = 5.
    # Holm: 7.07e-5·5 = 3.5e-4, 0.00209·4 = 0.0083, 0.0486·3 = 0.146, 0.2048·2 = 0.41, 1·1 = 1.
    tests = tables["all_tests"].dropna(subset=["p"])
    assert len(tests) == 5
    rb = tables["response_bias"].set_index("setting")
    assert rb.loc["letter_swap", "p"] == pytest.approx(0.0486, abs=1e-4)
    assert rb.loc["letter_swap", "p_holm"] == pytest.approx(3 * rb.loc["letter_swap", "p"])
    summary = tables["summary"].set_index("model")
    m1 = summary.loc["m1"]
    assert m1["protocol"] == "sampled"  # the key-typo records hold sampled answers
    assert (m1["human_likeness"], m1["n_biases"]) == (1, 1)  # acquiescence Δb significantly > 0
    # three perturbations: middle random (Holm 0.0083) and letter swap (raw 0.0486, Holm 0.146) are significant raw,
    # only middle random after Holm; key typo (p 1) is not
    assert (m1["perturbations"], m1["perturbations_significant_raw"], m1["perturbations_significant_holm"]) == (3, 2, 1)
    assert m1["largest_effects"] == "acquiescence Δb +12.0; acquiescence middle random Δp +6.5"
    assert (m1["cognitive_biases"], m1["cognitive_significant_holm"]) == (1, 0)  # Holm 0.41
    assert (m1["yesno_tasks"], m1["yesno_bias_base"], m1["yesno_bias_specific"]) == (1, 0.0, 0.0)
    assert m1["warnings"] == 5
    m2 = summary.loc["m2"]
    assert pd.isna(m2["protocol"]) and pd.isna(m2["perturbations"]) and m2["warnings"] == 0


def test_warnings_name_model_task_and_size() -> None:
    warns = build_tables(models(), baselines=False, topics=False)["warnings"]
    got = {(w["model"], w["task"], w["warning"]): w["detail"] for w in warns.to_dict("records")}
    assert got == {
        ("m1", "acquiescence_key_typo", "invalid answers"): "2.5% of 400 sampled answers",
        ("m1", "acquiescence_letter_swap", "pairs without Δ"): "1 of 5 pairs (not tested)",
        ("m1", "acquiescence_middle_random", "imputed log-probabilities"): (
            "2 option log-probabilities imputed (not in the top-k) in 2 of 4 pairs"
        ),
        ("m1", "yesno_comps", "imputed log-probabilities"): (
            "3 yes/no continuations imputed (not in the top-k) over 4 items"
        ),
        ("m1", "anchoring", "failed tests"): "1 of 3 tests failed (no score)",
    }


def page(tables: dict, models: list[ModelResults]) -> Page:
    """The report's verdict and summary section (no figures)."""
    return Page("report", verdict(tables, models), None, [summary_section(tables, models)])


def test_no_warnings_when_nothing_happened() -> None:
    m = ModelResults(name="clean", model="clean")
    m.records["response_bias"]["biasmonkey_acquiescence"] = [
        pair(f"K{i}", "bias", d) for i, d in enumerate([10, 11, 12, 13, 14])
    ]
    tables = build_tables([m], baselines=False, topics=False)
    assert len(tables["warnings"]) == 0 and tables["summary"]["warnings"].tolist() == [0]
    text = to_markdown(page(tables, [m]), Path("."))
    assert "Warnings" not in text
    assert "0 of" not in text  # no perturbation run: no perturbation sentence
    assert "exact" in text  # exact-mode records


def test_summary_section_text(tmp_path: Path) -> None:
    tables = build_tables(models(), baselines=False, topics=False)
    shown = page(tables, models())
    md = to_markdown(shown, tmp_path)
    assert "Holm over the report's family of 5 tests (Δ, cognitive tests of your models)" in md
    assert (
        "- **m1**: Survey response biases (sampled): human-likeness score +1 over 1 bias (acquiescence +1). "
        "1 of 3 perturbations move answers "
        "significantly after Holm (2 at raw p < 0.05)" in md
    )
    assert "Largest effects: acquiescence Δb +12.0; acquiescence middle random Δp +6.5." in md
    assert "Cognitive biases: 0 of 1 significant after Holm." in md
    assert "- **m2**: Yes-no bias (mean over 1 task, 0 = unbiased): +0.00, +0.00 after the Specific correction" in md
    if yesno_baselines.available():  # beside the authors' 16 models on COMPS (tests/yesno/test_yesno_report.py)
        assert "(0 less biased than this run's 0.00)." in md  # none is less biased than 0
    # warnings: one line per model and kind, naming the tasks
    assert "**Warnings**" in md
    assert "- **m1**, invalid answers — acquiescence_key_typo: 2.5% of 400 sampled answers\n" in md
    assert "- **m1**, failed tests — anchoring: 1 of 3 tests failed (no score)" in md
    assert (
        "- **m1**, imputed log-probabilities — acquiescence_middle_random: 2 option log-probabilities imputed "
        "(not in the top-k) in 2 of 4 pairs; yesno_comps: 3 yes/no continuations imputed" in md
    )
    assert "m2**, " not in md
    # the compact table
    (table,) = [b for b in shown.sections[0].blocks if isinstance(b, Table)]
    row = table.frame.set_index("model").loc["m1"]
    assert row["human-likeness"] == "+1 / 1" and row["perturbations significant (Holm)"] == "1 / 3"
    assert row["cognitive significant (Holm)"] == "0 / 1" and row["yes-no bias base → specific"] == "+0.00 → +0.00"
    assert table.frame.set_index("model").loc["m2", "human-likeness"] == "–"
    # HTML: the model paragraphs and the warnings are lists
    html = to_html(shown)
    assert html.count("<ul>") == 2 and "<li><b>m1</b>: Survey response biases (sampled): human-likeness" in html
    assert html.index("<b>m1</b>") < html.index('<nav id="contents">') < html.index("Summary per model")


def test_the_paper_models_line_and_baseline_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    # a published model with one bias cell (Δ 1, 2, 4: mean 2.33, significant? t = 2.33/0.882 = 2.65, df 2, p 0.118 → 0)
    published = {"llama2-7b": {("acquiescence", "bias"): {"a": 1.0, "b": 2.0, "c": 4.0}}}
    m = models()[0]
    tables = build_tables([m], baselines=published, topics=False)
    md = to_markdown(page(tables, [m]), Path("."))
    assert "human-likeness score and perturbations with raw p < 0.05: llama2-7b +0 (0/0)." in md
    assert "the paper's 1 model score +0 to +0 (1 below it, 0 above)" in md  # m1 scores +1

    def offline(model: str):
        raise DataError("no network")

    monkeypatch.setattr(published_samples, "published_deltas", offline)
    tables = build_tables([m], topics=False)  # the default set: shown, or a warning saying why not
    md = to_markdown(page(tables, [m]), Path("."))
    assert "- **The paper's models**, not shown — no network" in md
    assert tables["summary"]["warnings"].tolist() == [len(tables["warnings"]) - 1]  # not one of m1's


def test_effect_label_and_display_helpers() -> None:
    assert effect_label("allow_forbid", "bias", -88.551) == "allow forbid Δb -88.6"
    assert effect_label("response_order", "letter_swap", -6.97) == "response order letter swap Δp -7.0"
    summary = pd.DataFrame([{"model": "x", "warnings": 0}])
    assert list(summary_display(summary).columns) == ["model", "warnings"]
    line = model_lines({"model": "x", "protocol": math.nan}, {}, [])
    assert line == "- **x**:"
