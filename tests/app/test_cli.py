"""The biasmonkey command line."""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.summary import to_markdown
from biasmonkey.harness_ext.logs import Run
from biasmonkey.tasks.contract import SummaryTable
from biasmonkey.tasks.response_bias.summary import human_likeness_line

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
    code = main(
        [
            "run",
            "--model",
            str(tiny_model),
            "--tasks",
            "biasmonkey_acquiescence,biasmonkey_acquiescence_key_typo",
            "--limit",
            "4",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    assert list(out.rglob("results_*.json")) and len(list(out.rglob("samples_*.jsonl"))) == 2
    md = (out / "summary.md").read_text()
    assert "| acquiescence | bias | 4 |" in md and "| acquiescence | key_typo | 4 |" in md
    assert "Human-likeness score:" in md
    csv_lines = (out / "summary.csv").read_text().splitlines()
    assert csv_lines[0].startswith("bias,setting,n_pairs,delta") and len(csv_lines) == 3


def _sample(key: str, p_q: list[float], p_qp: list[float]) -> str:
    doc = {
        "key": key,
        "bias": "acquiescence",
        "setting": "bias",
        "source": "hand",
        "q": "q?",
        "qp": "q'?",
        "q_letters": ["A", "B"],
        "qp_letters": ["A", "B"],
        "qp_positions": [0, 1],
    }
    # Each option's two spellings (" A", "A") share its probability; lm-eval logs numbers as strings.
    resps = [[repr(math.log(share)), "False"] for p in p_q + p_qp for share in (0.25 * p, 0.75 * p)]
    return json.dumps({"doc": doc, "filtered_resps": resps})


def test_summarize_recomputes_from_hand_made_records(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "model"
    run.mkdir()
    # Pair K1: Δ = 100·(0.7 − 0.6) = 10; pair K2: Δ = 100·(0.8 − 0.5) = 30.
    (run / "samples_biasmonkey_acquiescence_2026-01-02T00-00-00.000000.jsonl").write_text(
        _sample("K1", [0.6, 0.4], [0.7, 0.3]) + "\n" + _sample("K2", [0.5, 0.5], [0.8, 0.2]) + "\n"
    )
    # An older run of the same task in the same folder is ignored.
    (run / "samples_biasmonkey_acquiescence_2026-01-01T00-00-00.000000.jsonl").write_text(
        _sample("OLD", [0.1, 0.9], [0.9, 0.1]) + "\n"
    )
    assert main(["summarize", str(tmp_path)]) == 0
    (row,) = list(csv.DictReader((tmp_path / "summary.csv").open()))
    # mean 20; sd = √((10² + 10²)/1) = √200; stderr = √200/√2 = 10; t = 2 on 1 df;
    # p = 1 − (2/π)·atan(2) = 0.295167; CI = 20 ± 12.7062·10.
    assert int(row["n_pairs"]) == 2
    assert float(row["delta"]) == pytest.approx(20.0)
    assert float(row["delta_stderr"]) == pytest.approx(10.0)
    # named as the tasks' metrics
    assert float(row["delta_t"]) == pytest.approx(2.0)
    assert float(row["delta_p"]) == pytest.approx(1 - 2 / math.pi * math.atan(2), abs=1e-9)
    assert float(row["delta_ci_low"]) == pytest.approx(20 - 127.062, abs=1e-3)
    # uncertainty: H(0.6, 0.4)/ln 2 = 0.970951 and H(0.5, 0.5)/ln 2 = 1 → mean 0.985475
    assert float(row["uncertainty_q"]) == pytest.approx(0.985475, abs=1e-6)
    assert row["significant"] == "False"
    assert "Human-likeness score: +0 of 1 (acquiescence 0)." in capsys.readouterr().out
    # Every family's samples are summarized: one that cannot be read is an error naming its file.
    broken = run / "samples_biasmonkey_cognitive_anchoring_2026-01-02T00-00-00.000000.jsonl"
    broken.write_text('{"doc": {}}\n')
    assert main(["summarize", str(tmp_path)]) == 2
    assert f"{broken}, line 1: not a biasmonkey cognitive-bias sample" in capsys.readouterr().err


def test_summarize_uncertainty_side_option(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import numpy as np

    (tmp_path / "samples_biasmonkey_acquiescence_2026-01-02T00-00-00.000000.jsonl").write_text(
        # Δ = 10, 30, 5
        _sample("K1", [0.6, 0.4], [0.7, 0.3])
        + "\n"
        + _sample("K2", [0.5, 0.5], [0.8, 0.2])
        + "\n"
        + _sample("K3", [0.9, 0.1], [0.95, 0.05])
        + "\n"
    )

    def entropy(p: float) -> float:
        return -(p * math.log(p) + (1 - p) * math.log(1 - p)) / math.log(2)

    delta = [10, 30, 5]
    r_q = np.corrcoef(delta, [entropy(0.6), entropy(0.5), entropy(0.9)])[0, 1]
    r_qp = np.corrcoef(delta, [entropy(0.7), entropy(0.8), entropy(0.95)])[0, 1]
    rows = {}
    for side in ("paper", "qp"):
        out = tmp_path / side
        assert main(["summarize", str(tmp_path), "--out", str(out), "--uncertainty-side", side]) == 0
        (rows[side],) = list(csv.DictReader((out / "summary.csv").open()))
        assert "uncertainty_side | r_absdelta_uncertainty |" in (out / "summary.md").read_text()
    # acquiescence: the paper correlates with q's entropy; --uncertainty-side qp with q′'s
    assert rows["paper"]["uncertainty_side"] == "q"
    assert float(rows["paper"]["r_absdelta_uncertainty"]) == pytest.approx(r_q)
    assert rows["qp"]["uncertainty_side"] == "qp"
    assert float(rows["qp"]["r_absdelta_uncertainty"]) == pytest.approx(r_qp)
    assert float(rows["qp"]["r_absdelta_uncertainty_q"]) == pytest.approx(r_q)  # q's r stays on every row
    assert "q' on every row, as asked" in (tmp_path / "qp" / "summary.md").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["summarize", str(tmp_path), "--uncertainty-side", "both"])
    assert "invalid choice: 'both'" in capsys.readouterr().err


def test_report_takes_the_uncertainty_side_option() -> None:
    from biasmonkey.harness_ext.app.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["report", "r", "--out", "o"]).uncertainty_side == "paper"
    assert parse(["report", "r", "--out", "o", "--uncertainty-side", "qp"]).uncertainty_side == "qp"


def test_summary_table_marks_significance_and_scores_human_likeness() -> None:
    rows = [
        {
            "bias": "acquiescence",
            "setting": "bias",
            "n_pairs": 10,
            "delta": 5.0,
            "delta_stderr": 1.0,
            "ci_low": 3.0,
            "ci_high": 7.0,
            "t": 5.0,
            "p": 0.001,
            "significant": True,
        },
        {
            "bias": "allow_forbid",
            "setting": "bias",
            "n_pairs": 10,
            "delta": -4.0,
            "delta_stderr": 1.0,
            "ci_low": -6.0,
            "ci_high": -2.0,
            "t": -4.0,
            "p": 0.01,
            "significant": True,
        },
        {
            "bias": "odd_even",
            "setting": "key_typo",
            "n_pairs": 10,
            "delta": 1.0,
            "delta_stderr": 1.0,
            "ci_low": -1.0,
            "ci_high": 3.0,
            "t": 1.0,
            "p": 0.3,
            "significant": False,
        },
    ]
    table = SummaryTable(rows, list(rows[0]), [human_likeness_line(rows)])
    md = to_markdown({Run("m"): {"response_bias": table}}, {Run("m"): "m"})
    assert md.startswith("# Summary: m\n\n## Survey response biases")
    assert "| acquiescence | bias | 10 | 5.000 | 1.000 | 3.000 | 7.000 | 5.000 | 0.001 | yes |" in md
    # +1 (acquiescence, significant Δ > 0) −1 (allow/forbid, significant Δ < 0) = 0 over 2 biases
    assert "Human-likeness score: +0 of 2 (acquiescence +1, allow_forbid -1)." in md


def test_summary_markdown_shows_none_and_nan_as_na() -> None:
    # An untestable row: `significant` None (from a family) or NaN, p NaN, and a column the row lacks: all n/a,
    # never "None", "nan" or "no". A defined row beside it keeps its numbers (0.25 → "0.250", False → "no").
    rows = [
        {"task": "acquiescence", "delta": 5.0, "p": math.nan, "significant": None},
        {"task": "odd_even", "delta": 2.0, "p": 0.25, "significant": False, "extra": 1},
    ]
    table = SummaryTable(rows, ["task", "delta", "p", "significant", "extra"])
    md = to_markdown({Run("m"): {"response_bias": table}}, {Run("m"): "m"})
    assert "| acquiescence | 5.000 | n/a | n/a | n/a |" in md
    assert "| odd_even | 2.000 | 0.250 | no | 1 |" in md
    assert "None" not in md and "nan" not in md


def test_run_without_data_fails_early_with_a_clear_message(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.delenv("BIASMONKEY_DATA_DIR", raising=False)
    monkeypatch.setenv("BIASMONKEY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BIASMONKEY_BIASMONKEY_URL", "http://127.0.0.1:9")  # nothing listens there
    assert main(["run", "--model", str(tiny_model), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "could not download http://127.0.0.1:9/prompts/" in err and "Set BIASMONKEY_DATA_DIR" in err
    assert not (tmp_path / "out").exists()  # lm-eval was never started


def test_run_passes_the_run_options_to_lm_eval_metadata() -> None:
    from biasmonkey.harness_ext.app.cli import build_parser
    from biasmonkey.harness_ext.app.run import lm_eval_command

    args = build_parser().parse_args(
        [
            "run",
            "--mode",
            "sample",
            "--n-samples",
            "7",
            "--perturbation-seed",
            "3",
            "--perturbation-rules",
            "published",
            "--limit",
            "2",
        ]
    )
    cmd = lm_eval_command(args, "/models/m")
    assert json.loads(cmd[cmd.index("--metadata") + 1]) == {
        "mode": "sample",
        "n_samples": 7,
        "perturbation_rules": "published",
        "perturbation_seed": 3,
    }
    assert cmd[cmd.index("--limit") + 1] == "2"
    assert json.loads(cmd[cmd.index("--model_args") + 1]) == {"pretrained": "/models/m", "dtype": "float32"}


def test_version_names_biasmonkey_and_the_harnesses(capsys: pytest.CaptureFixture) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"biasmonkey {version('biasmonkey')}"
    assert lines[1].startswith("lm-eval ") and lines[2].startswith("inspect-ai ")


def test_the_top_level_help_lists_every_command_in_one_line(capsys: pytest.CaptureFixture) -> None:
    from biasmonkey.harness_ext.app.cli import build_parser

    text = build_parser().format_help()
    listed = [line.split()[0:2] for line in text.splitlines() if line.startswith("  ") and not line.startswith("  -")]
    names = {" ".join(words) for words in listed} | {words[0] for words in listed}
    for command in ("run", "plan", "summarize", "report", "tasks list", "data fetch", "yesno-compare", "task-files"):
        assert command in names, f"{command} is not listed in biasmonkey --help"
    assert "tasks/<family>/commands.py" not in text  # what the commands do, not where their code lives


def _every_option(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _every_option(sub, (*path, name))
        else:
            yield " ".join(path), action


def test_every_option_has_help() -> None:
    from biasmonkey.harness_ext.app.cli import build_parser

    options = _every_option(build_parser())
    missing = [f"{command} {'/'.join(a.option_strings) or a.dest}" for command, a in options if not a.help]
    assert not missing, f"options without help: {', '.join(missing)}"


@pytest.mark.parametrize("args", [["tasks", "list"], ["tasks", "list", "--json"], ["run", "--help"], ["--help"]])
def test_a_closed_pipe_ends_a_command_quietly(args: list[str]) -> None:
    """`biasmonkey tasks list | head`: the reader goes away before the output is written."""
    biasmonkey = Path(sys.executable).with_name("biasmonkey")
    proc = subprocess.Popen([str(biasmonkey), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command has started writing (it imports for a second or more)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, 141)  # 0: argparse's help drops a failed write itself
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
