"""The wrapped multiple-choice family in `biasmonkey summarize` and `biasmonkey report` (the tiny
random model: plumbing, not realism).

One lm-eval run of `biasmonkey_position_mmlu_anatomy_authors` with `--limit 60` (the content-free
document, then 15 MMLU anatomy items in their four cyclic orders, the last one in three): the summary
rows are `scoring.summarize` of the logged records; the report's section has its tables and figures,
its table holds the summary's numbers; a correction without numbers (Specific: 15 items are too few
for balanced folds) shows its reason; the lm-eval results file exports raw and corrected accuracy
as separate metrics under the wrapped task's own name."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from position_fixtures import OneTaskModel
from test_lm_eval_e2e import run_lm_eval

from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.metrics.position_bias import CONDITIONS, SCALARS
from biasmonkey.tasks.families import FAMILIES, POSITION
from biasmonkey.tasks.mc_position.family import metric_name
from biasmonkey.tasks.mc_position.scoring import items_without_original as unasked_ids
from biasmonkey.tasks.mc_position.scoring import summarize
from biasmonkey.tasks.mc_position.summary import LABELS, summary_table
from biasmonkey.tasks.mc_position.wrappers import write_wrappers

pytestmark = pytest.mark.usefixtures("data_dir")

EXAMPLES = Path(__file__).resolve().parents[2] / "tasks" / "mc_position" / "examples"
TASK = "biasmonkey_position_mmlu_anatomy_authors"
NAME = "position_mmlu_anatomy_authors"
LIMIT = 60


def _wired(monkeypatch: pytest.MonkeyPatch) -> None:
    """The family's summary table, where family.py does not give it yet."""
    if POSITION.summary_table is None:
        monkeypatch.setitem(FAMILIES, POSITION.name, replace(POSITION, summary_table=summary_table))


@pytest.fixture(scope="module")
def run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """lm-eval once; then `biasmonkey summarize` and `biasmonkey report` of its output."""
    import biasmonkey.harness_ext.app.report as report
    from biasmonkey.harness_ext.app.summary import write_summary

    root = tmp_path_factory.mktemp("position-report")
    assert write_wrappers(["mmlu_anatomy_authors"], root / "wrapped", [str(EXAMPLES)]) == [TASK]
    _, files = run_lm_eval(tiny_model, root / "out", TASK, "--limit", str(LIMIT), include=str(root / "wrapped"))
    records = records_from_samples_file(files[TASK])
    names = {str(tiny_model): "tiny"}
    with pytest.MonkeyPatch.context() as mp:
        _wired(mp)
        md, summary_csv = write_summary(root / "out", root / "summary")
    report_md = report.write_report([root / "out"], root / "report", names)
    return {
        "root": root,
        "tiny_model": tiny_model,
        "records": records,
        "summary": summarize(records),
        "summary_md": md.read_text(),
        "summary_rows": list(csv.DictReader(summary_csv.open())),
        "report_dir": report_md.parent,
        "report_md": report_md.read_text(),
    }


def _close(a: object, b: object) -> bool:
    x, y = float(a), float(b)  # CSV cells: "nan" reads as NaN
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def _rows(rows: list[dict], **keys: str) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in keys.items())]


def test_the_run_has_the_content_free_document_and_fifteen_items(run: dict) -> None:
    kinds = [r.kind for r in run["records"]]
    assert len(kinds) == LIMIT and kinds[0] == "content_free" and kinds.count("content_free") == 1
    assert run["summary"].conditions["raw"].n_items == 15


def test_summarize_rows_are_the_records_summary(run: dict) -> None:
    rows = _rows(run["summary_rows"], family=POSITION.name)
    assert [(r["task"], r["condition"]) for r in rows] == [(NAME, c) for c in CONDITIONS]
    for row in rows:
        c = run["summary"].conditions[row["condition"]]
        assert int(row["n_items"]) == c.n_items and int(row["n_rows"]) == c.n_rows
        for m in SCALARS:
            assert _close(row[m], getattr(c, m)), (row["condition"], m)
            assert _close(row[f"{m}_ci_low"], c.ci[m][0]) and _close(row[f"{m}_ci_high"], c.ci[m][1])
        assert int(row["left_out"]) == sum(c.left_out.values())
        assert row["reason"] == (c.reason or "")
        if row["condition"] != "raw":
            deltas = run["summary"].delta_pct[row["condition"]]
            assert all(_close(row[f"delta_pct_{m}"], v) for m, v in deltas.items())
    # the harness's own numbers (its table, under the metrics' names) are the summary's too
    raw = run["summary"].conditions["raw"]
    assert "| position_mmlu_anatomy_authors | raw | 15 |" in run["summary_md"]
    assert _close(rows[0]["accuracy"], raw.accuracy) and _close(rows[0]["rstd"], raw.rstd)


def test_a_condition_without_numbers_shows_its_reason(run: dict) -> None:
    specific = run["summary"].conditions["specific"]
    assert specific.reason and "unbalanced" in specific.reason  # 15 items: some letter has < k − 1 = 4 gold items
    note = f"{NAME}, {LABELS['specific']}: no numbers: {specific.reason}."
    assert note in run["summary_md"]
    (row,) = [line for line in run["report_md"].splitlines() if line.startswith("| tiny | Specific |")]
    # the report writes the left-out counts in words, not as the reason's dict {'unbalanced': 15}
    # what is short (gold items per letter against the k − 1 = 4 needed), then the left-out counts in words
    assert "no numbers: no item scored: too few items per correct letter (4 options: A " in row
    assert "for k − 1 = 4 balanced folds, which need at least 4 of each (left out: 15 items unbalanced" in row
    assert "| – |" in row and "{" not in row
    pride = run["summary"].conditions["pride"]
    # the items left out, then why some of its numbers or CIs are n/a (e.g. the resamples a CI left out)
    notes = "".join(f"; {note}" for note in pride.notes.values())
    assert pride.left_out["calibration"] == 1
    assert f"{NAME}, PriDe: 1 item left out (calibration: 1){notes}." in run["summary_md"]


def test_the_report_section_has_its_tables_and_figures(run: dict) -> None:
    out, md = run["report_dir"], run["report_md"]
    assert "## Answer-position bias on wrapped multiple-choice tasks" in md
    assert f"*{NAME}: raw vs each correction*" in md
    for source in ("Zheng et al., ICLR 2024", "Zhao et al., ICML 2021", "Bhatt & Ivanova, 2025"):
        assert source in md
    for figure in ("position_rstd", "position_recalls_mmlu_anatomy_authors", "headline"):
        assert (out / "figures" / f"{figure}.png").stat().st_size > 0 and (out / "figures" / f"{figure}.svg").is_file()
        assert f"figures/{figure}.png" in md
    for table in ("position", "position_recalls"):
        assert (out / "tables" / f"{table}.csv").is_file() and (out / "tables" / f"{table}.json").is_file()
    assert "position RStd raw → PriDe / contextual / Specific" in md  # the summary's column
    assert "Answer-position bias on wrapped multiple-choice tasks (RStd" in md  # the verdict's sentence
    assert "Answer-position bias on wrapped multiple-choice tasks" in (out / "report.html").read_text()


def test_the_report_table_holds_the_summary_numbers(run: dict) -> None:
    table = list(csv.DictReader((run["report_dir"] / "tables" / "position.csv").open()))
    summary_rows = _rows(run["summary_rows"], family=POSITION.name)
    assert [(r["model"], r["task"], r["condition"]) for r in table] == [("tiny", NAME, c) for c in CONDITIONS]
    numbers = ["n_items", "n_rows", "left_out", *(k for k in summary_rows[0] if k.startswith(SCALARS + ("delta_",)))]
    for mine, theirs in zip(table, summary_rows):
        for key in numbers:
            assert _close(mine[key] or "nan", theirs[key] or "nan"), (mine["condition"], key)
        assert mine["reason"] == theirs["reason"]
    # the shown table: the raw row's accuracy with its CI, as the CSV holds it
    raw = run["summary"].conditions["raw"]
    low, high = raw.ci["accuracy"]
    assert f"| tiny | raw | 15 | {raw.accuracy:.3f} [{low:.3f}, {high:.3f}] |" in run["report_md"]
    # the figure's data: each position's recall and CI
    recalls = list(csv.DictReader((run["report_dir"] / "tables" / "position_recalls.csv").open()))
    for condition in CONDITIONS:
        c = run["summary"].conditions[condition]
        mine = _rows(recalls, condition=condition)
        assert [r["letter"] for r in mine] == list("ABCD")
        for r, value, (lo, hi) in zip(mine, c.recalls, c.recalls_ci):
            assert _close(r["recall"] or "nan", value) and _close(r["recall_ci_low"] or "nan", lo)
            assert _close(r["recall_ci_high"] or "nan", hi)


def test_the_results_file_exports_raw_and_corrected_accuracy_under_the_wrapped_task(run: dict) -> None:
    from biasmonkey.harness_ext.app.report import build_tables, discover
    from biasmonkey.harness_ext.app.report.leaderboard import results_json

    models = discover([run["root"] / "out"], {str(run["tiny_model"]): "tiny"})
    data = results_json(models[0], build_tables(models))
    assert list(data["results"]) == [TASK]  # never the inner task's entry
    entry = data["results"][TASK]
    for condition in CONDITIONS:
        c = run["summary"].conditions[condition]
        for measure in ("accuracy", "accuracy_permuted", "rstd", "changed"):
            value = entry[f"{metric_name(measure, condition)},none"]
            assert value == "N/A" if math.isnan(getattr(c, measure)) else _close(value, getattr(c, measure))
    assert data["higher_is_better"][TASK]["accuracy_pride"] is True
    assert _close(entry["abs_rstd,none"], run["summary"].conditions["raw"].rstd)


def test_the_report_writes_its_leaderboard_files(run: dict) -> None:
    folder = run["report_dir"] / "leaderboard" / "tiny"
    (results,) = folder.glob("results_*.json")
    entry = json.loads(results.read_text())["results"][TASK]
    assert {"accuracy,none", "accuracy_pride,none", "accuracy_contextual,none", "accuracy_specific,none"} <= set(entry)
    for path in (folder / ".eval_results").glob(f"{TASK}.yaml"):  # where the Hub entry is written at all
        assert "RStd" in path.read_text() and f"task_id: {TASK}" in path.read_text()


def test_two_entries_of_one_task_stand_side_by_side_and_say_how_they_differ(run: dict, tmp_path: Path) -> None:
    from biasmonkey.harness_ext.app.report.inputs import ModelResults
    from biasmonkey.tasks.mc_position import report

    models = [ModelResults("a", "a"), ModelResults("b", "b")]
    models[0].records[POSITION.name][TASK] = run["records"]
    models[1].records[POSITION.name][TASK] = run["records"][:41]  # the content-free document and 10 items
    tables = report.tables(models)
    rows = tables["position"]
    assert list(rows["model"]) == ["a"] * 4 + ["b"] * 4 and list(rows["n_items"][::4]) == [15, 10]
    note = report.like_with_like(rows)
    assert note is not None and "a: 15 items, b: 10 items" in note and "settings" not in note
    assert report.like_with_like(rows[rows["model"] == "a"]) is None
    panel = report.headline(tables)
    assert list(panel.values.index) == ["a", "b"]
    assert list(panel.values.columns) == [f"mmlu_anatomy_authors · {LABELS[c]}" for c in ("raw", "pride", "contextual")]
    section = report.section(tables, tmp_path)
    assert note in section.blocks
    assert (tmp_path / "position_recalls_mmlu_anatomy_authors.png").is_file()
    assert report.summary(models[1], tables)["position_items"] == 10


def test_items_whose_original_order_has_no_answer_are_counted_and_named(run: dict) -> None:
    """A selection of documents without an item's original order (Inspect's --sample-id): the item
    is in no number, and the summary and the report's warnings say how many and which."""
    from biasmonkey.tasks.mc_position import report

    records = run["records"]
    last = records[-1].id  # the last item, asked in three of its four orders
    kept = [r for r in records if not (r.id == last and r.shift == 0)]
    assert len(kept) == len(records) - 1
    assert summarize(kept).conditions["raw"].n_items == 14 and unasked_ids(kept) == [last]
    table = summary_table([kept], tasks=[TASK])
    note = f"{NAME}: 1 item left out of every number, as the original order has no answer ({last})"
    assert any(n.startswith(note) for n in table.notes), table.notes
    assert not any("has no answer" in n for n in summary_table([records], tasks=[TASK]).notes)

    (row,) = [w for w in report.warnings([OneTaskModel(kept, TASK, "tiny")], {}) if w["warning"] == "items left out"]
    assert row["task"] == TASK and row["detail"].startswith(note.split(": ", 1)[1])


def test_a_run_without_a_scored_item_still_reports(tiny_model: Path, tmp_path: Path) -> None:
    """`--limit 1` holds the content-free document only: no item, so no numbers. The report says so
    in the task's table, with no recall figure and no headline panel (it used to stop on an empty figure)."""
    import biasmonkey.harness_ext.app.report as report

    write_wrappers(["mmlu_anatomy_authors"], tmp_path / "wrapped", [str(EXAMPLES)])
    run_lm_eval(tiny_model, tmp_path / "out", TASK, "--limit", "1", include=str(tmp_path / "wrapped"))
    text = report.write_report([tmp_path / "out"], tmp_path / "report", {str(tiny_model): "tiny"}).read_text()
    assert f"*{NAME}: raw vs each correction*" in text and "no numbers: no items" in text
    figures = {p.name for p in (tmp_path / "report" / "figures").glob("*.png")}
    assert "position_rstd.png" in figures and not any(f.startswith("position_recalls_") for f in figures)
    assert "headline.png" not in figures
