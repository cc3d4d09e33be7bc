"""`biasmonkey report` end to end over two tiny random models from real harness runs: one through
`biasmonkey run` (lm-eval, all three suites), one through Inspect (`hf/` provider); every table
number is checked against a recomputation from the logged records."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats
from tiny_model import build_tiny_model

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.logs import records_from_eval_log, records_from_samples_file

REPO = Path(__file__).resolve().parents[2]
RB_TASKS = ["acquiescence", "acquiescence_key_typo", "odd_even"]
LIMIT = 6


def inspect_run(model: Path, tasks: list[str], log_dir: Path, limit: int) -> None:
    """Run `tasks` through Inspect's hf/ provider with the raw prompt (no chat template)."""
    from inspect_ai import eval as inspect_eval

    raw_prompt = yaml.safe_load((REPO / "configs" / "inspect_hf_raw_prompt.yaml").read_text())
    logs = inspect_eval(
        tasks,
        model=f"hf/{model}",
        model_args={"device": "cpu", **raw_prompt},
        limit=limit,
        task_args={"top_logprobs": 500},
        log_dir=str(log_dir),
        display="none",
        max_connections=1,
    )
    assert all(log.status == "success" for log in logs)


@pytest.fixture(scope="module")
def runs(
    tiny_model: Path, data_dir_with_cognitive_fixture: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """Model "alpha" (the tiny model, seed 0) via `biasmonkey run`; model "beta" (seed 1) via Inspect."""
    root = tmp_path_factory.mktemp("report-e2e")
    data = data_dir_with_cognitive_fixture
    mp = pytest.MonkeyPatch()
    mp.setenv("BIASMONKEY_DATA_DIR", str(data))
    tasks = ",".join(
        [*(f"biasmonkey_{t}" for t in RB_TASKS), "biasmonkey_yesno_comps", "biasmonkey_cognitive_hindsight_bias"]
    )
    lm_out = root / "lm_eval"
    try:
        assert (
            main(
                [
                    "run",
                    "--model",
                    str(tiny_model),
                    "--tasks",
                    tasks,
                    "--limit",
                    str(LIMIT),
                    "--batch-size",
                    "8",
                    "--output",
                    str(lm_out),
                ]
            )
            == 0
        )
    finally:
        mp.undo()

    beta = build_tiny_model(root / "beta", seed=1)
    inspect_run(beta, [f"biasmonkey/{t}" for t in [*RB_TASKS, "yesno_comps"]], root / "inspect", LIMIT)
    return {"lm_eval": lm_out, "inspect": root / "inspect", "alpha": tiny_model, "beta": beta, "root": root}


@pytest.fixture(scope="module")
def report(runs: dict[str, Path]) -> Path:
    out = runs["root"] / "report"
    code = main(
        [
            "report",
            str(runs["lm_eval"]),
            str(runs["inspect"]),
            "--out",
            str(out),
            "--name",
            f"{runs['alpha']}=alpha",
            "--name",
            "beta=beta",
        ]
    )
    assert code == 0
    return out


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


def user_rows(report: Path) -> list[dict[str, str]]:
    """The response-bias rows of the models run here (not of the paper's models shown beside them)."""
    return [r for r in rows(report / "tables" / "response_bias.csv") if r["protocol"] != "paper: 50 samples"]


def expected_records(runs: dict[str, Path]) -> dict[tuple[str, str], list]:
    """Records per (model, task) read straight from the harness files."""
    out = {}
    for path in runs["lm_eval"].rglob("samples_biasmonkey_*.jsonl"):
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        out["alpha", task] = records_from_samples_file(path)
    for path in runs["inspect"].glob("*.eval"):
        from inspect_ai.log import read_eval_log

        task = "biasmonkey_" + read_eval_log(str(path), header_only=True).eval.task.removeprefix("biasmonkey/")
        out["beta", task] = records_from_eval_log(path)
    return out


def test_run_ends_with_a_report(runs: dict[str, Path]) -> None:
    report = runs["lm_eval"] / "report"
    assert (runs["lm_eval"] / "summary.md").is_file()  # the summary is still written
    assert (report / "report.md").is_file() and (report / "report.html").is_file()
    rb = rows(report / "tables" / "response_bias.csv")
    assert {r["model"] for r in rb if r["protocol"] == "exact"} == {runs["alpha"].name}
    # by default the paper's nine models stand beside it, from their released samples
    assert len({r["model"] for r in rb if r["protocol"] == "paper: 50 samples"}) == 9


def test_report_files(report: Path) -> None:
    for name in (
        "response_bias",
        "human_likeness",
        "topics",
        "uncertainty",
        "yesno",
        "cognitive",
        "all_tests",
        "inputs",
        "comparison",  # two models of the same tasks: each compared with the first
        "comparison_runs",
    ):
        assert (report / "tables" / f"{name}.csv").is_file() and (report / "tables" / f"{name}.json").is_file()
    figures = (
        "bias_grid_alpha",
        "bias_grid_beta",
        "bias_grid_paper_models",
        "response_bias_dendrogram",
        "uncertainty_scatter",
        "topics",
        "yesno",
        "cognitive_heatmap",
        "comparison_forest",
    )
    for name in figures:
        assert (report / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert not (report / "figures" / "cognitive_dendrogram.png").exists()  # one model with cognitive results
    md = (report / "report.md").read_text()
    for title in (
        "Survey response biases",
        "Yes-no bias",
        "Cognitive biases",
        "Multiple comparisons",
        "Comparison of runs",
        "no dendrogram",
    ):
        assert title in md
    # the summary opens the report and the inputs close it
    sections = [part.split("\n", 1)[0] for part in md.split("\n## ")[1:]]
    assert sections[0] == "Summary" and sections[-1] == "Inputs"
    assert "- **alpha**: Survey response biases (exact): human-likeness score" in md
    assert "- **beta**: Survey response biases (exact)" in md
    assert (report / "figures" / "headline.png").is_file() and (report / "figures" / "headline.svg").is_file()
    html = (report / "report.html").read_text()
    # self-contained: every figure embedded (and the headline), none linked
    assert html.count("data:image/png;base64,") == len(figures) + 1 and 'src="figures/' not in html
    inputs = {(r["model"], r["task"]): r["harness"] for r in rows(report / "tables" / "inputs.csv")}
    assert (
        inputs["alpha", "biasmonkey_acquiescence"] == "lm-eval"
        and inputs["beta", "biasmonkey_acquiescence"] == "inspect"
    )
    assert ("beta", "biasmonkey_cognitive_hindsight_bias") not in inputs


def test_tables_equal_an_independent_recomputation(runs: dict[str, Path], report: Path) -> None:
    records = expected_records(runs)
    rb = {(r["model"], r["bias"], r["setting"]): r for r in user_rows(report)}
    assert len(rb) == 2 * len(RB_TASKS)
    for model in ("alpha", "beta"):
        for task, (bias, setting) in zip(
            RB_TASKS, [("acquiescence", "bias"), ("acquiescence", "key_typo"), ("odd_even", "bias")]
        ):
            deltas = [r.delta for r in records[model, f"biasmonkey_{task}"] if r.delta is not None]
            row = rb[model, bias, setting]
            assert int(row["n_pairs"]) == len(deltas) == LIMIT
            assert float(row["delta"]) == pytest.approx(np.mean(deltas), abs=1e-9)
            assert float(row["p"]) == pytest.approx(stats.ttest_1samp(deltas, 0).pvalue, rel=1e-6)
    yesno = {(r["model"], r["correction"]): r for r in rows(report / "tables" / "yesno.csv")}
    for model in ("alpha", "beta"):
        items = records[model, "biasmonkey_yesno_comps"]
        votes = np.sign([i.yes - i.no for i in items])
        assert float(yesno[model, "base"]["bias"]) == pytest.approx(votes.mean())  # (#yes − #no)/N
        correct = [0.5 if v == 0 else float((v > 0) == i.gold_yes) for v, i in zip(votes, items)]
        assert float(yesno[model, "base"]["accuracy"]) == pytest.approx(np.mean(correct))
    (cog,) = rows(report / "tables" / "cognitive.csv")
    scores = [r.score for r in records["alpha", "biasmonkey_cognitive_hindsight_bias"] if r.score is not None]
    assert cog["model"] == "alpha" and float(cog["score"]) == pytest.approx(np.mean(scores))


def test_lm_eval_aggregates_agree_with_the_report(runs: dict[str, Path], report: Path) -> None:
    """A cross-check only (the report never reads them): lm-eval's printed Δ equals the recomputed one."""
    # lm-eval's own file, beside its samples (the report's leaderboard export has the same name pattern)
    (results_file,) = [p for p in runs["lm_eval"].rglob("results_*.json") if any(p.parent.glob("samples_*.jsonl"))]
    printed = json.loads(results_file.read_text())["results"]
    rb = {(r["model"], r["bias"], r["setting"]): r for r in rows(report / "tables" / "response_bias.csv")}
    assert printed["biasmonkey_odd_even"]["delta,none"] == pytest.approx(
        float(rb["alpha", "odd_even", "bias"]["delta"]), abs=1e-9
    )


def test_summary_counts_equal_the_tables(report: Path) -> None:
    rb = user_rows(report)
    for s in rows(report / "tables" / "summary.csv"):
        mine = [r for r in rb if r["model"] == s["model"] and r["setting"] != "bias" and r["p"]]
        assert int(s["perturbations"]) == len(mine)
        assert int(s["perturbations_significant_holm"]) == sum(float(r["p_holm"]) < 0.05 for r in mine)


def test_the_paper_models_can_be_left_out_or_chosen(runs: dict[str, Path], tmp_path: Path) -> None:
    assert main(["report", str(runs["inspect"]), "--out", str(tmp_path / "none"), "--no-baselines"]) == 0
    assert {r["protocol"] for r in rows(tmp_path / "none" / "tables" / "response_bias.csv")} == {"exact"}
    assert "beside the paper's models" not in (tmp_path / "none" / "report.md").read_text()
    assert main(["report", str(runs["inspect"]), "--out", str(tmp_path / "one"), "--baselines", "llama2-7b"]) == 0
    paper = [r for r in rows(tmp_path / "one" / "tables" / "response_bias.csv") if r["model"] != "beta"]
    assert {r["model"] for r in paper} == {"llama2-7b (paper, sampled)"} and len(paper) == 20
    assert all(r["p_holm"] == "" for r in paper)  # reference values, outside the family
    row = next(r for r in paper if (r["bias"], r["setting"]) == ("acquiescence", "bias"))
    assert float(row["delta"]) == pytest.approx(1.921, abs=1e-3)  # score-samples / TACL Table 4


# Runs a biasmonkey command in a fresh interpreter, then prints which harnesses it imported.
HARNESS_IMPORTS = """
import json, sys
from biasmonkey.harness_ext.app.cli import main
code = main(sys.argv[1:])
print("HARNESSES", json.dumps([m for m in ("lm_eval", "inspect_ai") if m in sys.modules]))
sys.exit(code)
"""


@pytest.mark.parametrize(("source", "imported"), [("lm_eval", []), ("inspect", ["inspect_ai"])])
def test_reading_logs_imports_only_the_harness_whose_logs_are_read(
    runs: dict[str, Path], data_dir_with_cognitive_fixture: Path, tmp_path: Path, source: str, imported: list[str]
) -> None:
    env = {**os.environ, "BIASMONKEY_DATA_DIR": str(data_dir_with_cognitive_fixture)}
    for command in (
        ["report", str(runs[source]), "--out", str(tmp_path / "r"), "--no-baselines"],
        ["summarize", str(runs[source]), "--out", str(tmp_path / "s")],
    ):
        done = subprocess.run(
            [sys.executable, "-c", HARNESS_IMPORTS, *command], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-2000:]
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("HARNESSES ")]
        assert json.loads(line.removeprefix("HARNESSES ")) == imported, command[0]
    assert (tmp_path / "r" / "report.md").is_file() and (tmp_path / "s" / "summary.md").is_file()


def test_every_p_value_is_adjusted_over_one_family(report: Path) -> None:
    tests = rows(report / "tables" / "all_tests.csv")
    ps = [float(t["p"]) for t in tests if t["p"]]
    m = len(ps)
    # rb 6 + uncertainty ≤ 6 + topics + cognitive 1: every table with a p is in the family
    assert {t["table"] for t in tests} == {"response_bias", "uncertainty", "topics", "cognitive"}
    smallest = min((t for t in tests if t["p"]), key=lambda t: float(t["p"]))
    assert float(smallest["p_holm"]) == pytest.approx(min(1.0, m * float(smallest["p"])))  # Holm's first step
    assert float(smallest["p_bh"]) == pytest.approx(min(1.0, m * float(smallest["p"])), rel=1e-9) or float(
        smallest["p_bh"]
    ) <= float(smallest["p_holm"])
    rb = rows(report / "tables" / "response_bias.csv")
    assert all(float(r["p_holm"]) >= float(r["p"]) for r in rb if r["protocol"] == "exact")


def test_leaderboard_exports(report: Path) -> None:
    """The exports' numbers are the report's; their formats are tested against lm-eval and the Hub in
    test_report_leaderboard.py."""
    table = {(r["model"], r["bias"], r["setting"]): r for r in rows(report / "tables" / "response_bias.csv")}
    for model in ("alpha", "beta"):
        folder = report / "leaderboard" / model
        (results_file,) = folder.glob("results_*.json")  # lm-eval's name: results_<timestamp>.json
        results = json.loads(results_file.read_text())
        assert set(results) >= {"results", "versions", "n-samples", "config", "higher_is_better", "model_name", "date"}
        entry = results["results"]["biasmonkey_acquiescence"]
        assert entry["delta,none"] == pytest.approx(float(table[model, "acquiescence", "bias"]["delta"]))
        assert entry["delta_p_holm,none"] == pytest.approx(float(table[model, "acquiescence", "bias"]["p_holm"]))
        assert results["n-samples"]["biasmonkey_acquiescence"] == {"original": 176, "effective": LIMIT}
        # Δ is signed (its sign is a direction, not better or worse): neither higher nor lower is better
        assert results["higher_is_better"]["biasmonkey_acquiescence"]["delta"] is None
        assert results["higher_is_better"]["biasmonkey_acquiescence_key_typo"]["delta"] is None
        assert "score,none" in results["results"]["biasmonkey_human_likeness"]
        (hf,) = yaml.safe_load((folder / ".eval_results" / "biasmonkey_odd_even.yaml").read_text())
        assert hf["dataset"] == {"id": "REPLACE-ME/biasmonkey", "task_id": "biasmonkey_odd_even"}  # no --hub-dataset
        assert hf["value"] == pytest.approx(abs(float(table[model, "odd_even", "bias"]["delta"])), abs=1e-6)
        assert hf["notes"].startswith("lower = less biased") and "not more human-like" in hf["notes"]
    (yn,) = yaml.safe_load(
        (report / "leaderboard" / "alpha" / ".eval_results" / "biasmonkey_yesno_comps.yaml").read_text()
    )
    assert "0 = as many yes as no" in yn["notes"]
    assert "REPLACE-ME/biasmonkey` is a placeholder" in (report / "report.md").read_text()


# ---------------------------------------------------------------------------- errors


def report_error(args: list[str], capsys: pytest.CaptureFixture) -> str:
    assert main(["report", *args]) == 2
    return capsys.readouterr().err


def test_nothing_found_names_the_path(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "empty").mkdir()
    assert f"{tmp_path / 'empty'}: no biasmonkey outputs" in report_error(
        [str(tmp_path / "empty"), "--out", str(tmp_path / "r")], capsys
    )
    assert "no such file or folder" in report_error([str(tmp_path / "missing"), "--out", str(tmp_path / "r")], capsys)


def test_a_corrupt_samples_file_names_the_file(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(runs["lm_eval"], copy)
    (samples,) = copy.rglob("samples_biasmonkey_odd_even_*.jsonl")
    samples.write_text(samples.read_text()[:500])  # a truncated line
    err = report_error([str(copy), "--out", str(tmp_path / "r")], capsys)
    assert str(samples) in err and "line 1" in err


def test_a_corrupt_inspect_log_names_the_file(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bad = tmp_path / "logs" / "2026-01-01T00-00-00+00-00_acquiescence_x.eval"
    bad.parent.mkdir()
    bad.write_bytes(next(runs["inspect"].glob("*.eval")).read_bytes()[:300])
    assert f"{bad}: not a readable Inspect log" in report_error([str(bad.parent), "--out", str(tmp_path / "r")], capsys)


def test_one_model_in_two_places_gives_an_entry_per_place(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two runs of one model with one setting (two output folders) are two entries named by their
    place, compared item by item, never one model's rows read from either."""
    copy = tmp_path / "again"
    shutil.copytree(runs["lm_eval"], copy)
    out = tmp_path / "r"
    assert main(["report", str(runs["lm_eval"]), str(copy), "--out", str(out), "--name", f"{runs['alpha']}=alpha"]) == 0
    names = sorted(
        {r["model"] for r in rows(out / "tables" / "response_bias.csv") if r["protocol"] != "paper: 50 samples"}
    )
    assert names == sorted([f"alpha [{runs['lm_eval']}]", f"alpha [{copy}]"])
    compared = rows(out / "tables" / "comparison_runs.csv")
    assert [r["role"] for r in compared] == ["baseline", "compared"]
    assert {r["run"].rsplit(" [", 1)[1] for r in compared} == {f"{runs['lm_eval']}]", f"{copy}]"}
    # so under one path holding both
    both = tmp_path / "both"
    for place in ("a", "b"):
        shutil.copytree(runs["lm_eval"], both / place)
    assert main(["report", str(both), "--out", str(tmp_path / "r1"), "--name", f"{runs['alpha']}=alpha"]) == 0
    mine = {
        r["model"]
        for r in rows(tmp_path / "r1" / "tables" / "response_bias.csv")
        if r["protocol"] != "paper: 50 samples"
    }
    assert mine == {f"alpha [{both / 'a'}]", f"alpha [{both / 'b'}]"}
    # the same files given twice (one path twice, a folder and its model folder) are refused
    (model_folder,) = [p for p in runs["lm_eval"].iterdir() if p.is_dir() and any(p.glob("samples_*.jsonl"))]
    for given in ([runs["lm_eval"], runs["lm_eval"]], [runs["lm_eval"], model_folder]):
        err = report_error([*map(str, given), "--out", str(tmp_path / "r2")], capsys)
        assert f"is found under both {runs['lm_eval']} and {given[1]}: give each results path once" in err


def test_two_models_with_one_name_is_an_error(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    err = report_error(
        [
            str(runs["lm_eval"]),
            str(runs["inspect"]),
            "--out",
            str(tmp_path / "r"),
            "--name",
            f"{runs['alpha']}=same",
            "--name",
            "beta=same",
        ],
        capsys,
    )
    assert "both have the short name 'same'" in err and "--name" in err


def test_a_single_json_inspect_log(runs: dict[str, Path], tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    (log,) = [
        p
        for p in runs["inspect"].glob("*.eval")
        if read_eval_log(str(p), header_only=True).eval.task == "biasmonkey/odd_even"
    ]
    single = tmp_path / "odd_even.json"
    write_eval_log(read_eval_log(str(log)), str(single))
    assert main(["report", str(single), "--out", str(tmp_path / "r")]) == 0
    (row,) = user_rows(tmp_path / "r")
    deltas = [r.delta for r in records_from_eval_log(log)]
    assert (row["model"], row["bias"], float(row["delta"])) == ("beta", "odd_even", pytest.approx(np.mean(deltas)))


def lm_eval_output_as(runs: dict[str, Path], model: Path, dest: Path, keep: str = "") -> Path:
    """A copy of the lm-eval output whose results file names `model` (as if lm-eval had run it), with
    only the samples files whose name contains `keep`."""
    shutil.copytree(runs["lm_eval"], dest, ignore=shutil.ignore_patterns("report"))
    (results_file,) = dest.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    results["model_name"] = str(model)
    results_file.write_text(json.dumps(results))
    for samples in dest.rglob("samples_*.jsonl"):
        if keep not in samples.name:
            samples.unlink()
    return dest


def test_one_model_through_both_harnesses_is_one_model(runs: dict[str, Path], tmp_path: Path) -> None:
    # lm-eval "--model hf pretrained=<beta>" and Inspect "hf/<beta>" name the same model.
    lm_eval = lm_eval_output_as(runs, runs["beta"], tmp_path / "lm", keep="cognitive")
    assert main(["report", str(lm_eval), str(runs["inspect"]), "--out", str(tmp_path / "r")]) == 0
    inputs = {(r["model"], r["task"]): r["harness"] for r in rows(tmp_path / "r" / "tables" / "inputs.csv")}
    assert inputs["beta", "biasmonkey_cognitive_hindsight_bias"] == "lm-eval"
    assert inputs["beta", "biasmonkey_odd_even"] == "inspect"
    assert {model for model, _ in inputs} == {"beta"}


def test_the_same_task_from_both_harnesses_stands_side_by_side(runs: dict[str, Path], tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    # One model, one task through lm-eval (dtype=float32) and Inspect (top_logprobs=500): two entries,
    # named by the settings that differ, each with its own harness's records (never one averaged row).
    lm_eval = lm_eval_output_as(runs, runs["beta"], tmp_path / "lm", keep="odd_even")
    assert main(["report", str(lm_eval), str(runs["inspect"]), "--out", str(tmp_path / "r")]) == 0
    inputs = {
        r["harness"]: r["model"] for r in rows(tmp_path / "r" / "tables" / "inputs.csv") if "odd_even" in r["task"]
    }
    assert inputs == {"lm-eval": "beta (dtype=float32)", "inspect": "beta (top_logprobs=500)"}
    deltas = {(r["model"], r["bias"]): float(r["delta"]) for r in user_rows(tmp_path / "r")}
    (samples,) = lm_eval.rglob("samples_biasmonkey_odd_even_*.jsonl")
    (log,) = [
        p
        for p in runs["inspect"].glob("*.eval")
        if read_eval_log(str(p), header_only=True).eval.task == "biasmonkey/odd_even"
    ]
    lm_records, inspect_records = records_from_samples_file(samples), records_from_eval_log(log)
    assert deltas[inputs["lm-eval"], "odd_even"] == pytest.approx(np.mean([r.delta for r in lm_records]))
    assert deltas[inputs["inspect"], "odd_even"] == pytest.approx(np.mean([r.delta for r in inspect_records]))
