"""The authors' MMLU results: their model summaries are the unweighted means over the 57 subjects
of their per-subject results (which checks our reading of their aggregation), and the report
tables built from them and from a run's per-task metrics."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from biasmonkey.tasks.answer_position import baselines, report
from biasmonkey.tasks.answer_position.data import MMLU_DOMAINS
from biasmonkey.tasks.answer_position.family import task_name
from biasmonkey.tasks.answer_position.prompts import PROMPTS

pytestmark = pytest.mark.requires("shared_data")


@pytest.mark.parametrize("prompt", PROMPTS)
def test_model_summaries_are_unweighted_means_over_subjects(data_dir: Path, prompt: str) -> None:
    summaries = baselines.model_summaries(prompt)
    per_subject = baselines.subject_results(prompt)
    assert len(summaries) == 16 and (summaries["subjects"] == 57).all()
    assert per_subject.groupby("model").size().eq(57).all() and per_subject["model"].nunique() == 16
    table = report.baseline_table(prompt).set_index("model")
    for row in summaries.itertuples():
        mine = table.loc[row.model]
        assert mine["family"] == row.family and mine["subjects"] == 57
        for column in baselines.METRICS:  # the authors print 4 decimals
            assert mine[column] == pytest.approx(getattr(row, column), abs=5.01e-5), (prompt, row.model, column)
        # Δ% is the relative change of the means (not the mean of per-subject changes), 2 decimals
        for column in ("delta_pct_accuracy_specific", "delta_pct_rstd_specific"):
            assert mine[column] == pytest.approx(getattr(row, column), abs=5.01e-3), (prompt, row.model, column)
    # a size-weighted mean would not do: it differs from their summary for some model
    sizes = {s: n for s, n in zip(MMLU_DOMAINS, _subject_sizes())}
    weighted = per_subject.assign(w=per_subject["subject"].map(sizes)).groupby("model", sort=False)
    rstd = weighted.apply(lambda g: (g["rstd"] * g["w"]).sum() / g["w"].sum(), include_groups=False)
    assert max(abs(rstd[m] - table.loc[m, "rstd"]) for m in rstd.index) > 1e-3


def test_a_subject_without_a_value_is_never_left_out_of_a_mean(data_dir: Path, monkeypatch) -> None:
    """A model's mean is over every subject its `subjects` counts: NaN when one has no value (read
    files refuse such a value; this guards the aggregation itself), never the mean of the others."""
    per_subject = baselines.subject_results("zeroshot")
    gap = per_subject.index[(per_subject["model"] == "Qwen1.5-7B") & (per_subject["subject"] == "anatomy")]
    monkeypatch.setattr(
        baselines,
        "subject_results",
        lambda prompt, root=None: per_subject.assign(
            accuracy=per_subject["accuracy"].mask(per_subject.index.isin(gap))
        ),
    )
    table = report.baseline_table("zeroshot").set_index("model")
    assert table.loc["Qwen1.5-7B", "subjects"] == 57 and math.isnan(table.loc["Qwen1.5-7B", "accuracy"])
    assert math.isnan(table.loc["Qwen1.5-7B", "delta_pct_accuracy_specific"])
    assert table.loc["Qwen1.5-7B", "rstd"] == pytest.approx(per_subject.groupby("model")["rstd"].mean()["Qwen1.5-7B"])
    assert table.drop(index="Qwen1.5-7B")["accuracy"].notna().all()


def _subject_sizes() -> list[int]:
    from biasmonkey.tasks.answer_position.data import load_mmlu

    items = load_mmlu()
    return [sum(1 for i in items if i.domain == s) for s in MMLU_DOMAINS]


def test_model_table_means_over_subjects_beside_the_authors(data_dir: Path) -> None:
    rows = {}
    for j, subject in enumerate(MMLU_DOMAINS):  # lm-eval's results.json keys ("accuracy,none")
        rows[f"biasmonkey_{task_name(subject)}"] = {
            "alias": subject,
            "accuracy,none": 0.5,
            "accuracy_stderr,none": 0.01,
            "rstd,none": 0.2 if j % 2 else 0.1,
            "accuracy_specific,none": 0.6,
            "rstd_specific,none": 0.05,
        }
    rows["biasmonkey/" + task_name("anatomy", "fewshot")] = {  # an Inspect name, plain metric names
        "accuracy": 0.4,
        "rstd": 0.3,
        "accuracy_specific": 0.5,
        "rstd_specific": "N/A",
    }
    rows["biasmonkey_yesno_comps"] = {"bias,none": 0.1}  # another family: ignored
    table = report.model_table(rows, model="tiny")
    assert list(table.columns) == list(report.COLUMNS)
    zero = table[(table["prompt"] == "zeroshot") & (table["source"] == "this run")].iloc[0]
    assert zero["model"] == "tiny" and zero["subjects"] == 57
    assert zero["rstd"] == pytest.approx((28 * 0.2 + 29 * 0.1) / 57)  # 28 odd indices of 57
    assert zero["delta_pct_accuracy_specific"] == pytest.approx(20.0)
    assert zero["delta_pct_rstd_specific"] == pytest.approx(100 * (0.05 - zero["rstd"]) / zero["rstd"])
    few = table[(table["prompt"] == "fewshot") & (table["source"] == "this run")].iloc[0]
    assert few["subjects"] == 1 and few["accuracy"] == 0.4 and math.isnan(few["rstd_specific"])
    assert set(table["prompt"]) == {"zeroshot", "fewshot"}  # no instronly run: no instronly rows
    assert (table["source"] == report.AUTHORS).sum() == 32  # 16 models beside each prompt run
    assert report.missing_subjects(rows)["fewshot"] == [s for s in MMLU_DOMAINS if s != "anatomy"]
    bare = report.model_table(rows, with_baselines=False)
    assert len(bare) == 2 and isinstance(bare, pd.DataFrame)
    assert "## Answer-position bias on MMLU" in report.SECTION


def test_missing_reference_is_a_clear_error(tmp_path: Path) -> None:
    assert not baselines.available(tmp_path)
    with pytest.raises(baselines.DataError, match="no such folder"):
        baselines.model_summaries("zeroshot", tmp_path)
    with pytest.raises(ValueError, match="unknown prompt"):
        baselines.subject_results("threeshot", tmp_path)


def test_report_hooks_recompute_a_model_from_its_records(monkeypatch) -> None:
    """The report's answer-position table, summary entries and section, from records: a model that
    always answers A, on two subjects with one question per gold letter: accuracy 1/4; recalls
    (1, 0, 0, 0), RStd = √(((3/4)² + 3·(1/4)²)/4) = √0.1875 = 0.43301; Specific is undefined
    (fewer than k − 1 = 4 questions per letter) and stays NaN."""
    from biasmonkey.harness_ext.app.report.inputs import ModelResults
    from biasmonkey.tasks.answer_position.scoring import score_item

    monkeypatch.setattr(baselines, "available", lambda root=None: False)  # the model alone
    model = ModelResults(name="m1", model="org/m1")
    for subject in ("anatomy", "virology"):
        model.records["answer_position"][f"biasmonkey_{task_name(subject, 'zeroshot')}"] = [
            score_item({"id": f"mmlu-{subject}-{row}", "domain": subject, "gold": gold}, [-0.1, -0.2] + [-5.0] * 6)
            for row, gold in enumerate("ABCD", start=1)
        ]
    tables = report.tables([model])
    (row,) = tables["answer_position"].to_dict("records")
    assert (row["model"], row["prompt"], row["subjects"]) == ("m1", "zeroshot", 2)
    assert row["accuracy"] == pytest.approx(0.25) and row["rstd"] == pytest.approx(math.sqrt(0.1875))
    assert math.isnan(row["rstd_specific"])
    summary = report.summary(model, tables)
    assert summary["answer_position_rstd"] == pytest.approx(0.43301, abs=1e-5)
    sentence = report.summary_sentence({"model": "m1", **summary}, tables)
    assert sentence.startswith("Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): 0.433,")
    too_few = "too few questions per gold letter (A 1, B 1, C 1, D 1) for k − 1 = 4 balanced folds"
    assert f"0.433, n/a after the Specific correction (anatomy: {too_few}" in sentence  # not "nan"
    assert sentence.endswith("(this run: 8 questions in 2 subjects).")
    # without the notes (a table built by hand): the general reason
    assert f"n/a after the Specific correction ({report.SPECIFIC_NA})" in report.summary_sentence(
        {"model": "m1", **summary}
    )
    shown = report.summary_display(pd.DataFrame([summary]))
    assert shown == {"MMLU RStd base → specific": ["0.433 → n/a"]}
    section = report.section(tables, Path("unused"))
    assert section.title == "Answer-position bias on MMLU" and len(section.blocks) == 2


def test_the_verdict_and_headline_place_a_model_among_the_authors_models() -> None:
    """With the authors' results at hand: the sentence gives their 16 zero-shot models' RStd range and
    how many lie below the model's; the headline panel holds the model then those 16 (reference rows)."""
    table = pd.concat(
        [
            pd.DataFrame(
                [
                    {
                        "prompt": "zeroshot",
                        "source": "this run",
                        "model": "m1",
                        "subjects": 57,
                        "rstd": 0.1,
                        "rstd_specific": 0.05,
                    }
                ]  # fmt: skip
            ),
            pd.DataFrame(
                [
                    {
                        "prompt": "zeroshot",
                        "source": report.AUTHORS,
                        "model": f"a{i}",
                        "rstd": r,
                        "rstd_specific": r / 2,
                    }
                    for i, r in enumerate([0.02, 0.08, 0.2])
                ]
            ),
            pd.DataFrame(
                [{"prompt": "fewshot", "source": report.AUTHORS, "model": "b", "rstd": 0.0, "rstd_specific": 0.0}]
            ),
        ],
        ignore_index=True,
    )
    tables = {"answer_position": table}
    row = {"model": "m1", "answer_position_rstd": 0.1, "answer_position_rstd_specific": 0.05}
    sentence = report.summary_sentence(row, tables)
    assert sentence.endswith(
        "0.100, 0.050 after the Specific correction; the authors' 3 models: 0.020 to 0.200 (2 below it)."
    )
    panel = report.headline(tables)
    assert list(panel.values.index) == ["m1", "a0 (authors)", "a1 (authors)", "a2 (authors)"]  # zero-shot only
    assert panel.values.loc["a2 (authors)"].tolist() == [0.2, 0.1] and panel.references == 3
    assert panel.significant is None  # no test: no marks
