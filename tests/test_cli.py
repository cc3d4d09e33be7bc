"""The biasmonkey command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasmonkey.harness_ext.cli import main
from biasmonkey.harness_ext.summary import summary_rows, to_markdown

REFERENCE = "biasmonkey/samples/reference_deltas.csv"


def test_tasks_dir_is_the_installed_task_folder(capsys: pytest.CaptureFixture) -> None:
    assert main(["tasks-dir"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert (folder / "response_bias" / "acquiescence.yaml").is_file()
    assert (folder / "response_bias" / "_biasmonkey_group.yaml").is_file()


def test_score_samples_json_reproduces_the_tacl_table(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["score-samples", str(data_dir / "biasmonkey/samples/gpt-3.5-turbo"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 20 and set(rows[0]) == {"bias", "setting", "n", "delta", "p_value"}
    by_key = {(r["bias"], r["setting"]): r for r in rows}
    assert round(by_key[("odd_even", "bias")]["delta"], 3) == 25.048
    assert round(by_key[("acquiescence", "bias")]["delta"], 3) == 5.523
    assert round(by_key[("acquiescence", "bias")]["p_value"], 3) == 0.040


def test_score_samples_on_a_missing_folder_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["score-samples", str(tmp_path / "nope"), "--json"]) == 2
    assert "nope" in capsys.readouterr().err


def test_run_writes_lm_eval_results_and_a_summary(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    code = main(["run", "--model", str(tiny_model), "--tasks", "biasmonkey_acquiescence,biasmonkey_acquiescence_key_typo", "--limit", "4", "--output", str(out)])
    assert code == 0
    assert list(out.rglob("results_*.json")) and len(list(out.rglob("samples_*.jsonl"))) == 2
    md = (out / "summary.md").read_text()
    assert "| acquiescence | bias | 4 |" in md and "| acquiescence | key_typo | 4 |" in md
    assert "Human-likeness score:" in md
    csv_lines = (out / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("bias,setting,n_pairs,delta") and len(csv_lines) == 3


def test_summary_table_and_human_likeness_from_hand_made_results() -> None:
    results = {
        "results": {
            "biasmonkey_acquiescence": {"alias": "x", "delta,none": 5.0, "delta_stderr,none": 1.0, "delta_t,none": 5.0,
                                        "delta_p,none": 0.001, "delta_ci_low,none": 3.0, "delta_ci_high,none": 7.0, "n_pairs,none": 10},
            "biasmonkey_allow_forbid": {"delta,none": -4.0, "delta_stderr,none": 1.0, "delta_t,none": -4.0,
                                        "delta_p,none": 0.01, "delta_ci_low,none": -6.0, "delta_ci_high,none": -2.0, "n_pairs,none": 10},
            "biasmonkey_odd_even_key_typo": {"delta,none": 1.0, "delta_stderr,none": 1.0, "delta_t,none": 1.0,
                                             "delta_p,none": 0.3, "delta_ci_low,none": -1.0, "delta_ci_high,none": 3.0, "n_pairs,none": 10},
            "arc_easy": {"acc,none": 0.5},
        }
    }
    rows = summary_rows(results)
    assert [(r["bias"], r["setting"], r["significant"]) for r in rows] == [
        ("acquiescence", "bias", True), ("allow_forbid", "bias", True), ("odd_even", "key_typo", False)]
    md = to_markdown(rows, "t")
    # +1 (acquiescence, significant Δ > 0) −1 (allow/forbid, significant Δ < 0) = 0 over 2 biases
    assert "Human-likeness score: +0 of 2 (acquiescence +1, allow_forbid -1)." in md
