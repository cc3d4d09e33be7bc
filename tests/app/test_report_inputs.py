"""The report's inputs: what the bundled default model is (4-bit weights converted to float32),
and one entry per harness where a task comes from both."""

from __future__ import annotations

from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.default_model import default_model_dir, is_default_model
from biasmonkey.harness_ext.app.report import default_model_notes
from biasmonkey.harness_ext.app.report.inputs import ModelResults


def test_the_default_model_is_described_in_the_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASMONKEY_CACHE_DIR", str(tmp_path))
    folder = default_model_dir()
    assert folder == tmp_path / "models" / "SmolLM2-135M-Instruct"
    models = [ModelResults("SmolLM2-135M-Instruct", str(folder)), ModelResults("other", str(tmp_path / "other"))]
    (note,) = default_model_notes(models)
    assert note.startswith("SmolLM2-135M-Instruct: biasmonkey's default model, HuggingFaceTB/SmolLM2-135M-Instruct")
    assert "4-bit Q4_1 GGUF" in note and "float32" in note and str(folder) in note
    assert default_model_notes(models[1:]) == []
    assert is_default_model(str(folder) + "/") and not is_default_model("HuggingFaceTB/SmolLM2-135M-Instruct")


def test_one_task_of_one_setting_from_both_harnesses_gives_an_entry_per_harness(tmp_path: Path) -> None:
    from biasmonkey.harness_ext.app.report.inputs import _entries
    from biasmonkey.harness_ext.logs import TaskOutput
    from biasmonkey.tasks.families import FAMILIES

    rb, settings = FAMILIES["response_bias"], (("limit", "5"),)

    def out(task: str, harness: str, stamp: str = "1") -> TaskOutput:
        return TaskOutput(task, rb, harness, tmp_path / f"{harness}-{task}", stamp, "m", {}, settings)

    both = [out("odd_even", "lm-eval"), out("acquiescence", "lm-eval"), out("odd_even", "inspect")]
    entries = {label: sorted(o.task for o in group) for label, group in _entries(both)}
    assert entries == {"inspect": ["odd_even"], "lm-eval": ["acquiescence", "odd_even"]}
    # different tasks from the two harnesses: one model, one entry
    (only,) = _entries([out("acquiescence", "lm-eval"), out("odd_even", "inspect")])
    assert only[0] == "" and len(only[1]) == 2
