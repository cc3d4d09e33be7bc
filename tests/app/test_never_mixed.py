"""Results of two models, or of two settings of one model, in one output folder are never mixed:
summarize, report, leaderboard exports and yesno-compare key every output by model and settings
(`biasmonkey.harness_ext.logs.Run`). The lm-eval outputs are real runs of two tiny random models
into one `--output_path`; every expected number is the mean of the per-pair Δ that lm-eval logged
in the run's own samples file."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from test_cli import _sample
from test_inspect import output, prompts, run, scripted
from test_lm_eval_e2e import run_lm_eval
from tiny_model import build_tiny_model

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.report import write_report
from biasmonkey.harness_ext.app.summary import task_records
from biasmonkey.harness_ext.logs import UNKNOWN_SETTINGS, as_settings, lm_eval_settings, records_from_samples_file, scan
from biasmonkey.tasks.families import RESPONSE_BIAS, YESNO

TASKS = "biasmonkey_acquiescence,biasmonkey_yesno_comps"
LIMIT = "3"

pytestmark = pytest.mark.usefixtures("data_dir")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """One lm-eval output folder: alpha (acquiescence + yes-no), beta (the same), and alpha again with
    a one-shot prompt (acquiescence only; lm-eval writes it into alpha's model folder)."""
    root = tmp_path_factory.mktemp("never-mixed")
    alpha, beta = build_tiny_model(root / "alpha", seed=0), build_tiny_model(root / "beta", seed=1)
    out = root / "out"
    run_lm_eval(alpha, out, TASKS, "--limit", LIMIT)
    run_lm_eval(beta, out, TASKS, "--limit", LIMIT)
    run_lm_eval(alpha, out, "biasmonkey_acquiescence", "--limit", LIMIT, "--num_fewshot", "1")
    return {"root": root, "out": out, "alpha": alpha, "beta": beta}


def model_folder(runs: dict[str, Path], model: str) -> Path:
    (folder,) = [p for p in runs["out"].iterdir() if p.name.endswith(f"__{model}")]  # lm-eval's sanitised path
    return folder


def logged(runs: dict[str, Path]) -> dict[tuple[str, int], tuple[Path, float]]:
    """{(model, shots): (acquiescence samples file, mean logged Δ)}, read straight from lm-eval's files."""
    found = {}
    for path in runs["out"].rglob("samples_biasmonkey_acquiescence_*.jsonl"):
        stamp = path.stem.removeprefix("samples_biasmonkey_acquiescence_")
        results = json.loads((path.parent / f"results_{stamp}.json").read_text())
        shots = results["n-shot"]["biasmonkey_acquiescence"]
        deltas = [json.loads(line)["delta"] for line in path.read_text().splitlines()]
        found[Path(results["model_name"]).name, shots] = (path, sum(deltas) / len(deltas))
    assert len(found) == 3
    return found


def csv_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.open()))


# ---------------------------------------------------------------------------- summarize


def test_summarize_gives_each_model_and_setting_its_own_table(runs: dict[str, Path], tmp_path: Path) -> None:
    assert main(["summarize", str(runs["out"]), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("# Summary: 3 runs")
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == [
        "## alpha (dtype=float32, limit=3)",
        "## alpha (dtype=float32, limit=3, num_fewshot=1)",
        "## beta (dtype=float32, limit=3)",
    ]
    every = csv_rows(tmp_path / "summary.csv")
    # each run's yes-no task has its own table and rows too
    assert {(Path(r["model"]).name, r["settings"]) for r in every if r["family"] == "yesno"} == {
        ("alpha", "dtype=float32, limit=3"),
        ("beta", "dtype=float32, limit=3"),
    }
    rows = [r for r in every if r["family"] == "response_bias"]
    expected = logged(runs)
    got = {(Path(r["model"]).name, r["settings"]): float(r["delta"]) for r in rows}
    assert got == {
        ("alpha", "dtype=float32, limit=3"): pytest.approx(expected["alpha", 0][1]),
        ("alpha", "dtype=float32, limit=3, num_fewshot=1"): pytest.approx(expected["alpha", 1][1]),
        ("beta", "dtype=float32, limit=3"): pytest.approx(expected["beta", 0][1]),
    }
    assert {r["n_pairs"] for r in rows} == {LIMIT}


def test_summarize_model_picks_one(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["summarize", str(runs["out"]), "--out", str(tmp_path / "b"), "--model", "beta"]) == 0
    md = (tmp_path / "b" / "summary.md").read_text()
    assert md.startswith("# Summary: beta (dtype=float32, limit=3)\n") and "## alpha" not in md
    (row,) = [r for r in csv_rows(tmp_path / "b" / "summary.csv") if r["family"] == "response_bias"]
    assert row["model"] == str(runs["beta"])
    # the full name works too; alpha's two settings stay two tables
    assert main(["summarize", str(runs["out"]), "--out", str(tmp_path / "a"), "--model", str(runs["alpha"])]) == 0
    assert (tmp_path / "a" / "summary.md").read_text().count("\n## alpha (") == 2
    capsys.readouterr()
    assert main(["summarize", str(runs["out"]), "--out", str(tmp_path / "g"), "--model", "gamma"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("biasmonkey: error: --model gamma: no biasmonkey results of that model")
    assert str(runs["alpha"]) in err and str(runs["beta"]) in err


def test_a_one_run_reader_names_the_runs(runs: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match="holds the results of 3 runs, not to be mixed") as err:
        task_records(runs["out"], RESPONSE_BIAS)
    assert str(runs["alpha"]) in str(err.value) and "num_fewshot=1" in str(err.value)
    assert set(task_records(model_folder(runs, "beta"), RESPONSE_BIAS)) == {"biasmonkey_acquiescence"}


# ---------------------------------------------------------------------------- report and leaderboard


@pytest.fixture(scope="module")
def report(runs: dict[str, Path]) -> Path:
    out = runs["root"] / "report"
    write_report([runs["out"]], out, baselines=False)
    return out


def test_report_rows_per_model_and_setting(runs: dict[str, Path], report: Path) -> None:
    expected = logged(runs)
    rb = {r["model"]: float(r["delta"]) for r in csv_rows(report / "tables" / "response_bias.csv")}
    assert rb == {
        "alpha": pytest.approx(expected["alpha", 0][1]),
        "alpha (num_fewshot=1)": pytest.approx(expected["alpha", 1][1]),
        "beta": pytest.approx(expected["beta", 0][1]),
    }
    # the yes-no task ran zero-shot only
    assert {r["model"] for r in csv_rows(report / "tables" / "yesno.csv")} == {"alpha", "beta"}
    inputs = {(r["model"], r["task"]): r for r in csv_rows(report / "tables" / "inputs.csv")}
    assert inputs["alpha (num_fewshot=1)", "biasmonkey_acquiescence"]["settings"].endswith("num_fewshot=1")
    assert Path(inputs["alpha", "biasmonkey_acquiescence"]["file"]) == expected["alpha", 0][0]


def test_leaderboard_files_per_model_and_setting(runs: dict[str, Path], report: Path) -> None:
    expected = logged(runs)
    folders = {p.name: p for p in (report / "leaderboard").iterdir()}
    assert set(folders) == {"alpha", "alpha_num_fewshot_1", "beta"}
    for folder, (model, shots), tasks in [
        ("alpha", ("alpha", 0), {"biasmonkey_acquiescence", "biasmonkey_yesno_comps"}),
        ("alpha_num_fewshot_1", ("alpha", 1), {"biasmonkey_acquiescence"}),
        ("beta", ("beta", 0), {"biasmonkey_acquiescence", "biasmonkey_yesno_comps"}),
    ]:
        (path,) = folders[folder].glob("results_*.json")
        results = json.loads(path.read_text())
        assert results["model_name"] == str(runs[model])
        assert set(results["results"]) == tasks | {"biasmonkey_human_likeness"}
        assert results["results"]["biasmonkey_acquiescence"]["delta,none"] == pytest.approx(expected[model, shots][1])
        source = results["config"]["biasmonkey"]["sources"]["biasmonkey_acquiescence"]
        assert Path(source["path"]) == expected[model, shots][0]
        assert ("num_fewshot=1" in source["settings"]) == (shots == 1)
        assert results["n-shot"]["biasmonkey_acquiescence"] == shots


# ---------------------------------------------------------------------------- yesno-compare


def test_yesno_compare_takes_one_run_per_folder(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    alpha, beta = model_folder(runs, "alpha"), model_folder(runs, "beta")
    assert main(["yesno-compare", "--unit", "task", "--pair", str(alpha), str(beta), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["task"] == "biasmonkey_yesno_comps" and row["n"] == 1
    # the whole output folder holds two models' yes-no runs: refused, naming both
    assert main(["yesno-compare", "--pair", str(runs["out"]), str(beta)]) == 2
    err = capsys.readouterr().err
    assert "holds the results of 2 runs" in err and str(runs["alpha"]) in err and str(runs["beta"]) in err


def test_yesno_compare_refuses_runs_on_other_items(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    fewer = tmp_path / "beta-fewer"
    shutil.copytree(model_folder(runs, "beta"), fewer)
    (samples,) = fewer.glob("samples_biasmonkey_yesno_comps_*.jsonl")
    lines = samples.read_text().splitlines()
    dropped = json.loads(lines[-1])["doc"]["id"]
    samples.write_text("\n".join(lines[:-1]) + "\n")
    # a run on fewer items (its results file says so: a cut samples file alone is refused as damaged)
    (results_file,) = fewer.glob(f"results_{samples.stem.removeprefix('samples_biasmonkey_yesno_comps_')}.json")
    results = json.loads(results_file.read_text())
    results["n-samples"]["biasmonkey_yesno_comps"]["effective"] = len(lines) - 1
    results_file.write_text(json.dumps(results))
    alpha = model_folder(runs, "alpha")
    assert main(["yesno-compare", "--pair", str(alpha), str(fewer)]) == 2
    err = capsys.readouterr().err
    assert "do not cover the same items" in err
    assert f"biasmonkey_yesno_comps: {fewer} lacks 1 of the 3 items of {alpha} ({dropped})" in err
    assert f"items of {fewer}" not in err  # alpha lacks none of them


# ---------------------------------------------------------------------------- what is a setting


def results_of(runs: dict[str, Path], model: str, shots: int) -> dict:
    path = logged(runs)[model, shots][0]
    stamp = path.stem.removeprefix("samples_biasmonkey_acquiescence_")
    return json.loads((path.parent / f"results_{stamp}.json").read_text())


def test_what_counts_as_a_setting(runs: dict[str, Path]) -> None:
    results = results_of(runs, "alpha", 0)
    task = "biasmonkey_acquiescence"
    assert as_settings(lm_eval_settings(results, task, RESPONSE_BIAS)) == (("dtype", "float32"), ("limit", "3"))
    # where and how fast it ran is not a setting
    fast = json.loads(json.dumps(results))
    fast["config"].update(batch_size="64", device="cuda:0")
    fast["config"]["model_args"]["device"] = "cuda:0"
    assert lm_eval_settings(fast, task, RESPONSE_BIAS) == lm_eval_settings(results, task, RESPONSE_BIAS)
    # nor is an API key (a secret never shown in a label) or the variable holding it
    fast["config"]["model_args"].update(api_key="sk-short", api_key_env="MY_KEY")
    assert lm_eval_settings(fast, task, RESPONSE_BIAS) == lm_eval_settings(results, task, RESPONSE_BIAS)
    # a run option the task's family has is one; one it does not have is not (yes-no has no `allow_forbid_all`)
    other = json.loads(json.dumps(results))
    other["configs"][task]["metadata"]["allow_forbid_all"] = True
    other["configs"]["biasmonkey_yesno_comps"]["metadata"]["allow_forbid_all"] = True
    assert lm_eval_settings(other, task, RESPONSE_BIAS)["allow_forbid_all"] is True
    yesno = "biasmonkey_yesno_comps"
    assert lm_eval_settings(other, yesno, YESNO) == lm_eval_settings(results, yesno, YESNO)
    # so are the limit, seeds other than lm-eval's defaults and the chat template
    other["config"].update(limit=2.0, random_seed=7)
    other["chat_template"] = "{{ messages }}"
    changed = lm_eval_settings(other, task, RESPONSE_BIAS)
    assert (changed["limit"], changed["random_seed"], changed["apply_chat_template"]) == (2.0, 7, True)
    # an lm-eval --samples selection (fewer documents than the task has, without a --limit) is one
    picked = json.loads(json.dumps(results))
    picked["config"]["limit"] = None
    picked["n-samples"][task] = {"original": 176, "effective": 2}
    assert lm_eval_settings(picked, task, RESPONSE_BIAS)["samples"] == "2 of 176"
    picked["n-samples"][task] = {"original": 176, "effective": 176}
    assert "samples" not in lm_eval_settings(picked, task, RESPONSE_BIAS)


def test_a_samples_file_without_its_results_file_has_unknown_settings(runs: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / model_folder(runs, "beta").name
    folder.mkdir()
    (samples,) = model_folder(runs, "beta").glob("samples_biasmonkey_acquiescence_*.jsonl")
    shutil.copy(samples, folder)
    (out,) = scan(tmp_path)
    assert out.settings == UNKNOWN_SETTINGS and out.run.label.endswith("(settings=unknown)")


# ---------------------------------------------------------------------------- Inspect, JSONL


def test_two_inspect_settings_of_one_model_stay_apart(tmp_path: Path) -> None:
    (q1, qp1), (q2, qp2) = prompts()

    def model(qp_a1: float, qp_a2: float):
        return scripted(
            {
                q1: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
                qp1: lambda: output("A", [(" A", qp_a1), (" B", 1 - qp_a1)]),
                q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
                qp2: lambda: output("A", [(" A", qp_a2), (" B", 1 - qp_a2)]),
            }
        )

    # Δ = 100·(q'[a] − q[a]): 10 and 30 (mean 20); then, at temperature 0.5 with top_logprobs 5, 20 and 40 (mean 30)
    run("biasmonkey/acquiescence", model(0.6, 0.8), tmp_path, limit=2)
    run("biasmonkey/acquiescence", model(0.7, 0.9), tmp_path, limit=2, temperature=0.5, task_args={"top_logprobs": 5})
    assert main(["summarize", str(tmp_path / "logs")]) == 0
    rows = {r["settings"]: float(r["delta"]) for r in csv_rows(tmp_path / "logs" / "summary.csv")}
    # a chat API (here Inspect's mock model) always gets the chat format: apply_chat_template=true
    assert rows == {
        "apply_chat_template=true, limit=2": pytest.approx(20.0),
        "apply_chat_template=true, limit=2, temperature=0.5, top_logprobs=5": pytest.approx(30.0),
    }
    write_report([tmp_path / "logs"], tmp_path / "report", baselines=False)
    rb = {r["model"]: float(r["delta"]) for r in csv_rows(tmp_path / "report" / "tables" / "response_bias.csv")}
    assert rb == {"model": pytest.approx(20.0), "model (temperature=0.5, top_logprobs=5)": pytest.approx(30.0)}


def test_blank_lines_in_a_samples_file_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "samples_biasmonkey_acquiescence_2026-01-02T00-00-00.000000.jsonl"
    # Δ = 100·(0.7 − 0.6) = 10 and 100·(0.8 − 0.5) = 30; a blank line between them and one at the end
    path.write_text(_sample("K1", [0.6, 0.4], [0.7, 0.3]) + "\n\n" + _sample("K2", [0.5, 0.5], [0.8, 0.2]) + "\n\n")
    records = records_from_samples_file(path)
    assert [r.key for r in records] == ["K1", "K2"]
    assert [r.delta for r in records] == [pytest.approx(10.0), pytest.approx(30.0)]
