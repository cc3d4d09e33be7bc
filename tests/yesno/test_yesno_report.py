"""The yes-no report beside the authors' released results: their 16 models on the tasks run (the
real `summary_jsons` files), the verdict sentence and the headline panel."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from records import yesno_item

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.tasks.yesno import baselines, report


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
    low, high = min(expected.values()), max(expected.values())
    assert sentence.endswith(
        f"after the Specific correction; the authors' 16 models on the same task: {low:+.2f} to {high:+.2f} before "
        "correction (16 less biased, |bias| 1.00)."
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
