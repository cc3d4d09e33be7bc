"""End to end: `biasmonkey generate` with SmolLM2-135M-Instruct as the generator, through Inspect's
`hf/` provider, on two of the shipped templates (slow). Quality is not asserted (a 135M model
rarely writes the JSON asked for): the pipeline runs, every reply is validated and its outcome
recorded, and whatever is written loads as cognitive-bias tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_generation import SCENARIOS

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.tasks.cognitive.data import load_tests
from biasmonkey.tasks.cognitive.generation.generate import output_paths

pytestmark = [
    pytest.mark.slow,
    pytest.mark.requires("smollm2"),
]

REASONS = {"invalid_json", "missing_gap", "empty_gap", "unfilled_gap", "broken_options"}


def test_smollm2_generates_through_inspect(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.txt"
    scenarios.write_text(SCENARIOS[0] + "\n")
    out = tmp_path / "gen.csv"
    code = main(
        [
            "generate",
            "--biases",
            "anchoring,framing_effect",
            "--scenarios",
            str(scenarios),
            "--model",
            f"hf/{ensure_default_model()}",
            "-M",
            "device=cpu",
            "--max-tokens",
            "48",
            "--max-retries",
            "0",
            "--out",
            str(out),
        ]
    )
    report = json.loads(output_paths(out)["report_json"].read_text())
    journal = [json.loads(line) for line in output_paths(out)["progress"].read_text().splitlines()]
    assert set(report) == {"anchoring", "framing_effect"} and len(journal) == 2
    for counts in report.values():
        assert counts["planned"] == 1 and counts["written"] + counts["failed"] == 1
        assert counts["model_calls"] >= 1
    for outcome in journal:
        if outcome["status"] == "failed":  # with no retries, a failed test has exactly one rejection
            (rejection,) = outcome["rejections"]
            assert rejection["reason"] in REASONS or rejection["reason"].startswith("check:")
            assert rejection["detail"]
    written = sum(counts["written"] for counts in report.values())
    assert code == (0 if written else 1)
    if written:
        assert len(load_tests(data_path=out)) == written
    else:
        assert out.read_text() == "bias,scenario,control,treatment,metric_params\n"
