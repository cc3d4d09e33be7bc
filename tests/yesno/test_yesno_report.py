"""The yes-no report beside the authors' released results: their 16 models on the tasks run (the
real `summary_jsons` files), the verdict sentence and the headline panel."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from records import yesno_item

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.logs import TaskOutput
from biasmonkey.tasks.yesno import baselines, report
from biasmonkey.tasks.yesno.family import FAMILY


def model_saying_yes() -> ModelResults:
    """Four COMPS items, every one answered yes: base bias (#yes − #no)/N = +1."""
    m = ModelResults(name="m1", model="org/m1")
    items = [yesno_item(i, gold, -1.0, -3.0) for i, gold in enumerate(["Yes", "No", "Yes", "No"])]
    m.records["yesno"]["biasmonkey_yesno_comps"] = items
    m.records["yesno"]["biasmonkey_yesno_ewok"] = items  # pooled EWoK: no authors' rows
    return m


def their_plain_bias(root: Path) -> dict[str, float]:
    """The authors' zero-shot COMPS plain bias per model, read straight from their four files."""
    out = {}
    for family in ("falcon", "llama", "mpt", "qwen"):
        data = json.loads((root / "yesno/reference/summary_jsons" / f"zeroshot_{family}_comps.json").read_text())
        out |= {model: r["plain_bias"] for model, r in data["comps"].items()}
    return out


@pytest.mark.requires("shared_data")
def test_authors_models_beside_a_model(data_dir: Path, tmp_path: Path) -> None:
    expected = their_plain_bias(Path(os.environ["BIASMONKEY_DATA_DIR"]))
    assert len(expected) == 16 and expected["Llama-2-7b-hf"] == pytest.approx(0.371428571)  # 780/2100
    tables = report.tables([model_saying_yes()])
    authors = tables["yesno_authors"]
    assert set(authors["task"]) == {"yesno_comps"}  # EWoK pooled over domains has none
    assert dict(zip(authors["model"], authors["bias"])) == expected
    row = {"model": "m1", "yesno_tasks": 2, "yesno_bias_base": 1.0, "yesno_bias_specific": 0.0}
    sentence = report.summary_sentence(row, tables)
    low, high = min(map(abs, expected.values())), max(map(abs, expected.values()))
    assert sentence.endswith(
        f"after the Specific correction; the authors' 16 models on the same task: |bias| {low:.2f} to {high:.2f} before "
        "correction (16 less biased than this run's 1.00)."
    )
    panel = report.headline(tables)
    assert list(panel.values.columns) == ["yesno_comps", "yesno_ewok"] and panel.references == 16
    assert panel.values.loc["m1"].tolist() == [1.0, 1.0]
    assert panel.values.loc["Llama-2-7b-hf (authors)", "yesno_comps"] == pytest.approx(expected["Llama-2-7b-hf"])
    section = report.section(tables, tmp_path)
    assert any(getattr(b, "caption", "") == "The authors' models: bias and accuracy per task" for b in section.blocks)


def test_without_the_reference_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    assert not baselines.available()
    tables = report.tables([model_saying_yes()])
    assert "yesno_authors" not in tables
    row = {"model": "m1", "yesno_tasks": 2, "yesno_bias_base": 1.0, "yesno_bias_specific": 0.0}
    assert report.summary_sentence(row, tables).endswith("+1.00, +0.00 after the Specific correction.")
    assert report.headline(tables).references == 0


# ---------------------------------------------------------------------------- the run's options and settings


def run_entry(name: str, tasks: dict[str, list], options: dict | None = None, settings: tuple = ()) -> ModelResults:
    """A report entry whose tasks were run with lm-eval `--metadata` `options` and `settings` (no file read)."""
    m = ModelResults(name=name, model=f"org/{name}")
    for task, records in tasks.items():
        path = Path(f"/runs/{name}/{task}.jsonl")
        m.sources[task] = TaskOutput(
            task, FAMILY, "lm-eval", path, "1", m.model, settings=settings, given_options=options or {}
        )
        m.records["yesno"][task] = records
    return m


def ewok_blocks() -> list:
    """12 items of one EWoK domain, 3 blocks of 4 (gold Yes, No, Yes, No each), yes − no margins
    +2 (block 0), +0.25 (block 1), −1 (block 2): before correction every answer is yes."""
    margins = [2.0] * 4 + [0.25] * 4 + [-1.0] * 4
    return [
        replace(
            yesno_item(i, "Yes" if i % 2 == 0 else "No", m - 3, -3),
            id=f"e{i}",
            dataset="ewok",
            domain="agent_properties",
        )
        for i, m in enumerate(margins)
    ]


EWOK = "biasmonkey_yesno_ewok_agent_properties"


def test_specific_under_the_runs_k() -> None:
    # Specific subtracts the mean margin of the other folds' items. k = 5: 3 folds of one block each:
    # block 0: 2 − (0.25 − 1)/2 = 2.375 yes; block 1: 0.25 − (2 − 1)/2 = −0.25 no; block 2: −1 − (2 + 0.25)/2 no
    # → (4 − 8)/12 = −1/3. k = 2 (blocks 0, 1 | 2): blocks 0, 1 minus −1 → 3, 1.25 yes; block 2 minus 1.125 no
    # → (8 − 4)/12 = +1/3. Accuracy 0.5 either way (each block: 2 Yes, 2 No, one answer).
    default = run_entry("a", {EWOK: ewok_blocks()})
    k2 = run_entry("b", {EWOK: ewok_blocks()}, {"k": 2, "seed": 7})
    table = report.tables([default, k2])["yesno"]
    specific = table[table["correction"] == "specific"].set_index("model")
    assert specific.loc["a", ["bias", "accuracy", "k", "seed"]].tolist() == pytest.approx([-1 / 3, 0.5, 5, 42])
    assert specific.loc["b", ["bias", "accuracy", "k", "seed"]].tolist() == pytest.approx([1 / 3, 0.5, 2, 7])
    base = table[table["correction"] == "base"]
    assert report._folds_text(base[base["model"] == "b"]) == "2-fold, seed 7"
    assert report._folds_text(base) == (
        "k-fold; the runs differ in k or seed: k = 5, seed 42 for a yesno_ewok_agent_properties; "
        "k = 2, seed 7 for b yesno_ewok_agent_properties"
    )


def answering(answers: str, golds: str = "YNYN") -> list:
    """COMPS items answered as `answers` (Y or N) with gold answers `golds`."""
    return [
        yesno_item(i, "Yes" if g == "Y" else "No", *((-1.0, -3.0) if a == "Y" else (-3.0, -1.0)))
        for i, (a, g) in enumerate(zip(answers, golds))
    ]


def test_verdict_on_mean_absolute_bias_of_the_compared_tasks() -> None:
    # comps: 3 yes, 1 no → +0.5; comps_fewshot: all no → −1; ewok (pooled, no authors' row): all yes → +1.
    # This run's mean |bias| over the 2 compared tasks: (0.5 + 1)/2 = 0.75 (a signed mean would read −0.25).
    # Authors a: (0.6 + 0.6)/2 = 0.60, b: (0.2 + 0.9)/2 = 0.55: both less biased; 4 + 4 of the 12 items compared.
    m = ModelResults(name="m1", model="org/m1")
    tasks = {"comps": "YYYN", "comps_fewshot": "NNNN", "ewok": "YYYY"}
    m.records["yesno"] |= {f"biasmonkey_yesno_{t}": answering(a) for t, a in tasks.items()}
    authors = pd.DataFrame(
        [("yesno_comps", "a", 0.6), ("yesno_comps_fewshot", "a", -0.6)]
        + [("yesno_comps", "b", 0.2), ("yesno_comps_fewshot", "b", 0.9)],
        columns=["task", "model", "bias"],
    )
    tables = {"yesno": report.tables([m])["yesno"], "yesno_authors": authors}
    sentence = report.summary_sentence({"model": "m1", **report.summary(m, tables)}, tables)
    assert sentence.startswith("Yes-no bias (mean over 3 tasks, 0 = unbiased): +0.17, ")  # (0.5 − 1 + 1)/3
    assert sentence.endswith(
        "after the Specific correction (this run: 12 items; 8 of them on the 2 tasks the authors report; the authors': "
        "every item of each task); the authors' 2 models on the same 2 tasks: mean |bias| per task 0.55 to 0.60 "
        "before correction (2 less biased than this run's 0.75)."
    )


def test_chat_template_and_items_beside_the_authors(tmp_path: Path) -> None:
    # comps with --limit 4 and a chat template: 3 yes, 1 no → +0.5; the authors' model a: |−0.2| = 0.2 < 0.5
    settings = (("apply_chat_template", "true"), ("limit", "4"))
    m = run_entry("m1", {"biasmonkey_yesno_comps": answering("YYYN")}, settings=settings)
    authors = pd.DataFrame([("yesno_comps", "a", -0.2)], columns=["task", "model", "bias"])
    tables = {"yesno": report.tables([m])["yesno"], "yesno_authors": authors}
    sentence = report.summary_sentence({"model": "m1", **report.summary(m, tables)}, tables)
    assert sentence.endswith(
        "(this run: 4 items; the authors': every item of each task); the authors' 1 model on the same task (their raw "
        "prompts; this run: a chat template, apply_chat_template=true): |bias| 0.20 to 0.20 before correction "
        "(1 less biased than this run's 0.50)."
    )
    panel = report.headline(tables)
    assert panel.title.endswith(
        "(0 = unbiased); m1: 4 items per task (apply_chat_template=true, limit=4); the authors' models: every item "
        "of each task, raw prompts (not the chat template of m1)"
    )
    assert panel.values.loc["m1", "yesno_comps"] == 0.5 and panel.references == 1
    blocks = [b for b in report.section(tables, tmp_path).blocks if isinstance(b, str)]
    assert "Specific (5-fold, seed 42) log-probability corrections" in blocks[0]
    assert blocks[-1].endswith(
        "(Specific; k = 5, seed 42) bias and accuracy as they computed them (their k-fold bias divides by the items of "
        "a fold). This report's rows: m1: 4 items per task (apply_chat_template=true, limit=4). m1 ran with a chat "
        "template (apply_chat_template=true): its prompts are not theirs, so the rows compare different prompts."
    )


def test_headline_without_the_authors_says_the_items() -> None:
    # two entries, one of 4 items and default settings, one of 2 and 4 items per task under --limit
    a = run_entry("a", {"biasmonkey_yesno_comps": answering("YYYN")})
    b = run_entry(
        "b",
        {"biasmonkey_yesno_comps": answering("YN", "YN"), "biasmonkey_yesno_comps_fewshot": answering("NNNN")},
        settings=(("limit", "4"),),
    )
    title = report.headline({"yesno": report.tables([a, b])["yesno"]}).title
    assert title.endswith("(0 = unbiased); a: 4 items per task (default settings); b: 2–4 items per task (limit=4)")
