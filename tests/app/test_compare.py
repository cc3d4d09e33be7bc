"""`biasmonkey compare` on real run folders: two tiny random models through the stock lm_eval CLI (one
task of every family, two answer-position subjects), one of them again with the chat template, and an
Inspect log; the report's comparison section and `--published` on the same runs. Every expected
number is recomputed here from the runs' own files with the families' summaries (and the released
samples), never taken from the code under test."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_inspect import output, prompts, run, scripted
from test_lm_eval_e2e import run_lm_eval
from tiny_model import build_tiny_model

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.compare import compare
from biasmonkey.harness_ext.app.report import write_report
from biasmonkey.harness_ext.app.report.comparison import comparison
from biasmonkey.harness_ext.app.report.inputs import discover
from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.metrics.multiple_testing import holm
from biasmonkey.metrics.paired import mcnemar
from biasmonkey.tasks.answer_position.compare import item_measures as ap_measures
from biasmonkey.tasks.answer_position.compare import rstd_statistic
from biasmonkey.tasks.answer_position.scoring import summarize as ap_summarize
from biasmonkey.tasks.response_bias.compare import published_models
from biasmonkey.tasks.response_bias.published_samples import published_deltas
from biasmonkey.tasks.yesno.compare import abs_mean, item_votes
from biasmonkey.tasks.yesno.scoring import summarize as yn_summarize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = (
    "biasmonkey_acquiescence,biasmonkey_yesno_comps,biasmonkey_cognitive_anchoring,"
    "biasmonkey_answer_position_abstract_algebra,biasmonkey_answer_position_astronomy"
)
LIMIT = "8"
META = json.dumps({"data_path": str(FIXTURES / "cognitive" / "tests.csv")})

pytestmark = pytest.mark.usefixtures("data_dir")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """alpha and beta on one task of every family, and alpha's acquiescence with the chat template."""
    root = tmp_path_factory.mktemp("compare")
    alpha, beta = build_tiny_model(root / "alpha", seed=0), build_tiny_model(root / "beta", seed=1)
    out, chat = root / "out", root / "chat"
    run_lm_eval(alpha, out, TASKS, "--limit", LIMIT, "--metadata", META)
    run_lm_eval(beta, out, TASKS, "--limit", LIMIT, "--metadata", META)
    run_lm_eval(alpha, chat, "biasmonkey_acquiescence", "--limit", LIMIT, "--apply_chat_template")
    folders = {p.name.rsplit("__", 1)[-1]: p for p in out.iterdir()}
    return {"root": root, "out": out, "chat": chat, "alpha": folders["alpha"], "beta": folders["beta"]}


def samples(folder: Path, task: str) -> Path:
    (path,) = folder.glob(f"samples_biasmonkey_{task}_*.jsonl")
    return path


def logged_deltas(folder: Path) -> dict[str, float]:
    """{pair key: Δ} as lm-eval logged them in the acquiescence samples file."""
    lines = [json.loads(line) for line in samples(folder, "acquiescence").read_text().splitlines()]
    return {s["doc"]["key"]: s["delta"] for s in lines}


def test_two_models_every_family(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    alpha, beta = runs["alpha"], runs["beta"]
    assert main(["compare", str(alpha), str(beta), "--json", "--output", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["correction"] == "holm" and result["mode"] == "items"
    rows = {(r["task"], r["measure"]): r for r in result["rows"]}
    # response bias: mean of the logged Δ, B − A, over the 8 pairs
    da, db = logged_deltas(alpha), logged_deltas(beta)
    delta = rows["biasmonkey_acquiescence", "delta"]
    assert delta["n"] == 8 and delta["test"] == "paired t"
    assert delta["difference"] == pytest.approx(sum(db[k] - da[k] for k in da) / 8)
    assert delta["ci_low"] < delta["difference"] < delta["ci_high"]
    # yes-no: |bias| and accuracy of each run as its summary computes them, before and after each correction
    sa, sb = (yn_summarize(records_from_samples_file(samples(f, "yesno_comps"))) for f in (alpha, beta))
    for suffix in ("", "_generic", "_specific"):
        bias = rows["biasmonkey_yesno_comps", f"abs_bias{suffix}"]
        assert (bias["value_a"], bias["value_b"]) == (
            pytest.approx(abs(getattr(sa, f"bias{suffix}"))),
            pytest.approx(abs(getattr(sb, f"bias{suffix}"))),
        )
        accuracy = rows["biasmonkey_yesno_comps", f"accuracy{suffix}"]
        assert accuracy["value_b"] - accuracy["value_a"] == pytest.approx(
            getattr(sb, f"accuracy{suffix}") - getattr(sa, f"accuracy{suffix}")
        )
        assert accuracy["test"] == "McNemar exact (binomial)"  # at most 8 discordant items
    # answer position: RStd of the subject, as the family's summary has it
    ra, rb = (
        ap_summarize(records_from_samples_file(samples(f, "answer_position_abstract_algebra"))) for f in (alpha, beta)
    )
    rstd = rows["biasmonkey_answer_position_abstract_algebra", "rstd"]
    assert (rstd["value_a"], rstd["value_b"]) == (pytest.approx(ra.rstd), pytest.approx(rb.rstd))
    assert rstd["test"].startswith("paired bootstrap")
    # cognitive: paired t and Wilcoxon on the test scores
    score = rows["biasmonkey_cognitive_anchoring", "score"]
    assert score["test"] == "paired t" and "p_wilcoxon" in score
    # every p adjusted together, Holm's method
    ps = [r["p"] if r["p"] is not None else math.nan for r in result["rows"]]
    adjusted = [r["p_adjusted"] if r["p_adjusted"] is not None else math.nan for r in result["rows"]]
    assert adjusted == pytest.approx(list(holm(ps)), nan_ok=True)
    # the files
    assert {p.name for p in tmp_path.iterdir()} == {"compare.md", "compare.csv", "compare.json", "forest.png"}
    assert "p adjusted by Holm over the" in (tmp_path / "compare.md").read_text()
    assert len(list(csv.DictReader((tmp_path / "compare.csv").open()))) == len(result["rows"])
    assert (tmp_path / "forest.png").read_bytes()[:4] == b"\x89PNG"
    # BH on request, stated
    assert main(["compare", str(alpha), str(beta), "--correction", "bh"]) == 0
    assert "p adjusted by Benjamini–Hochberg" in capsys.readouterr().out


def test_family_item_values_reproduce_the_family_numbers(runs: dict[str, Path]) -> None:
    records = records_from_samples_file(samples(runs["alpha"], "yesno_comps"))
    s = yn_summarize(records)
    votes = item_votes(records)
    for correction, field in (("base", "bias"), ("generic", "bias_generic"), ("specific", "bias_specific")):
        assert abs_mean(votes[correction]["votes"][None])[0] == pytest.approx(abs(getattr(s, field)))
    mcq = records_from_samples_file(samples(runs["alpha"], "answer_position_abstract_algebra"))
    rstd = ap_measures("answer_position_abstract_algebra", mcq)[0]
    assert rstd.name == "rstd"
    rows = np.array([[rstd.values[r.id] for r in mcq]])  # one "resample": every question once
    assert rstd_statistic(rows)[0] == pytest.approx(ap_summarize(mcq).rstd)


def test_refuses_runs_on_other_items(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    fewer = tmp_path / runs["beta"].name
    shutil.copytree(runs["beta"], fewer)
    path = samples(fewer, "yesno_comps")
    lines = path.read_text().splitlines()
    dropped = json.loads(lines[-1])["doc"]["id"]
    path.write_text("\n".join(lines[:-1]) + "\n")
    (results_file,) = fewer.glob("results_*.json")  # a run on fewer items, as its results file says
    results = json.loads(results_file.read_text())
    results["n-samples"]["biasmonkey_yesno_comps"]["effective"] = len(lines) - 1
    results_file.write_text(json.dumps(results))
    assert main(["compare", str(runs["alpha"]), str(fewer)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err  # one message (its list of problems on the next line)
    assert "do not cover the same items" in err and "--common-items" in err
    assert "biasmonkey_yesno_comps: beta (dtype=float32, limit=8) lacks 1 of the 8 items of alpha" in err
    assert dropped in err
    assert main(["compare", str(runs["alpha"]), str(fewer), "--common-items", "--json"]) == 0
    captured = capsys.readouterr()
    assert "biasmonkey_yesno_comps: 1 items of alpha (dtype=float32, limit=8) and 0 of beta" in captured.err
    assert "7 compared" in captured.err
    rows = {(r["task"], r["measure"]): r for r in json.loads(captured.out)["rows"]}
    assert rows["biasmonkey_yesno_comps", "accuracy"]["n"] == 7 and rows["biasmonkey_acquiescence", "delta"]["n"] == 8


def test_two_settings_of_one_model_are_never_paired_silently(
    runs: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    # the chat-template run of alpha and alpha's raw-prompt run: refused, naming the setting
    assert main(["compare", str(runs["out"]), str(runs["chat"]), "--baseline", str(runs["chat"])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("biasmonkey: error: ") and err.count("\n") == 1
    assert "differ in settings that change the prompts: apply_chat_template (true vs unset)" in err
    assert "--allow-settings" in err
    # allowed: compared, and the output names the differing setting; beta vs chat too (both differ)
    assert (
        main(["compare", str(runs["out"]), str(runs["chat"]), "--baseline", str(runs["chat"]), "--allow-settings"]) == 0
    )
    out = capsys.readouterr().out
    assert out.count("Settings that differ (A vs B): apply_chat_template (true vs unset)") == 2
    # one folder holding both models: each is a run of its own, compared as a pair
    result = compare([runs["out"]])
    assert [(p["a"], p["b"]) for p in result.pairs] == [
        ("alpha (dtype=float32, limit=8)", "beta (dtype=float32, limit=8)")
    ]
    # a name that picks no run is an error naming the runs
    assert main(["compare", str(runs["out"]), "--baseline", "gamma"]) == 2
    assert "--baseline gamma: no run of that name" in capsys.readouterr().err


def test_mixed_lm_eval_and_inspect(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (q1, qp1), (q2, qp2) = prompts()
    model = scripted(
        {
            q1: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            qp1: lambda: output("A", [(" A", 0.6), (" B", 0.4)]),  # Δ = 100(.6 − .5) = 10
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            qp2: lambda: output("A", [(" A", 0.8), (" B", 0.2)]),  # Δ = 100(.8 − .5) = 30
        }
    )
    run("biasmonkey/acquiescence", model, tmp_path, limit=2)
    logs, alpha = tmp_path / "logs", runs["alpha"]
    # a chat API gets the chat format: a prompt-changing setting, and 2 pairs against lm-eval's 8
    assert main(["compare", str(alpha), str(logs)]) == 2
    assert "apply_chat_template" in capsys.readouterr().err
    assert main(["compare", str(alpha), str(logs), "--allow-settings"]) == 2
    err = capsys.readouterr().err
    assert "biasmonkey_acquiescence: model (apply_chat_template=true, limit=2) lacks 6 of the 8 items of alpha" in err
    assert main(["compare", str(alpha), str(logs), "--allow-settings", "--common-items", "--json"]) == 0
    captured = capsys.readouterr()
    assert "6 items of alpha (dtype=float32, limit=8) and 0 of model" in captured.err
    (row,) = [r for r in json.loads(captured.out)["rows"] if r["measure"] == "delta"]
    keys = [json.loads(line)["doc"]["key"] for line in samples(alpha, "acquiescence").read_text().splitlines()[:2]]
    da = logged_deltas(alpha)
    assert row["n"] == 2 and row["value_b"] == pytest.approx(20.0)
    assert row["difference"] == pytest.approx((10 - da[keys[0]] + 30 - da[keys[1]]) / 2)


def test_model_pairs_form_matches_yesno_compare(runs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    alpha, beta = runs["alpha"], runs["beta"]
    assert main(["yesno-compare", "--pair", str(alpha), str(beta), "--json"]) == 0
    (want,) = json.loads(capsys.readouterr().out)
    assert main(["compare", str(alpha), str(beta), "--pairs", f"{alpha}:{beta}", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "pairs"
    rows = {r["task"]: r for r in result["rows"]}
    got = rows["biasmonkey_yesno_comps"]
    for key in ("n", "mean_abs_base", "mean_abs_instruct", "mean_difference", "undefined_units"):
        assert got[key] == want[key], key
    # every family: one unit per task, the change of |bias measure| (response bias: |mean Δ|)
    da, db = logged_deltas(alpha), logged_deltas(beta)
    rb = rows["biasmonkey_acquiescence"]
    assert rb["family"] == "response_bias" and rb["n"] == 1
    assert rb["mean_difference"] == pytest.approx(abs(sum(db.values()) / 8) - abs(sum(da.values()) / 8))


def test_a_pair_given_twice_or_a_run_paired_with_itself_is_refused(
    runs: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    """The pairs are the paired statistics' units: the same pair twice would count as two independent
    units (d and p inflated), a run with itself as a unit of no change."""
    alpha, beta = runs["alpha"], runs["beta"]

    def refused(argv: list[str]) -> str:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("biasmonkey: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
        return err

    a, b = f"{alpha}", f"{beta}"
    both = ["compare", a, b, "--json", "--pairs"]
    la, lb = "alpha (dtype=float32, limit=8)", "beta (dtype=float32, limit=8)"  # the runs' labels
    assert f"the pair {la}:{lb} is given twice; give each pair once" in refused([*both, f"{a}:{b},{a}:{b}"])
    assert f"the pair {lb}:{la} is given twice (once as {la}:{lb})" in refused([*both, f"{a}:{b},{b}:{a}"])
    assert f"--pairs {la}:{la}: a run paired with itself" in refused([*both, f"{a}:{a}"])
    twice = ["yesno-compare", "--pair", a, b, "--pair", a, b]
    assert f"--pair: the pair {alpha.resolve()}:{beta.resolve()} is given twice" in refused(twice)
    assert "a run paired with itself" in refused(["yesno-compare", "--pair", a, str(alpha / ".")])


def test_answer_position_overall_row(runs: dict[str, Path]) -> None:
    rows = {(r["task"], r["measure"]): r for r in compare([runs["alpha"], runs["beta"]]).rows}
    subjects = ("abstract_algebra", "astronomy")
    records = {
        f: [records_from_samples_file(samples(runs[f], f"answer_position_{s}")) for s in subjects]
        for f in ("alpha", "beta")
    }
    rstd = rows["all 2 subjects (zeroshot)", "rstd"]  # the mean of the subjects' RStd, as the family's report
    for side, f in (("value_a", "alpha"), ("value_b", "beta")):
        assert rstd[side] == pytest.approx(np.mean([ap_summarize(r).rstd for r in records[f]]))
    assert rstd["n"] == 16 and rstd["test"].startswith("paired bootstrap")
    # accuracy over the 16 questions pooled: McNemar on every question's correctness
    correct = {f: [q.answers()["ABCD".index(q.gold)] for r in records[f] for q in r] for f in records}
    accuracy = rows["all 2 subjects (zeroshot)", "accuracy"]
    assert accuracy["value_b"] - accuracy["value_a"] == pytest.approx(
        np.mean(correct["beta"]) - np.mean(correct["alpha"])
    )
    binary = [(x, y) for x, y in zip(correct["alpha"], correct["beta"]) if x in (0, 1) and y in (0, 1)]
    assert accuracy["p"] == pytest.approx(mcnemar(*zip(*binary)).p, nan_ok=True)


def test_report_section_on_two_tiny_models(runs: dict[str, Path], tmp_path: Path) -> None:
    md = write_report([runs["out"]], tmp_path, baselines=False, topics=False).read_text()
    section = md[md.index("## Comparison of runs") :]
    alpha = "alpha (dtype=float32, limit=8)"
    assert f"Each run compared with the baseline, **{alpha}** (the first run in the report's order" in section
    assert "These p-values form their own Holm family" in section
    assert "figures/comparison_forest.png" in section
    # the section's numbers are `biasmonkey compare --baseline alpha`'s, Holm over the section's tests
    want = compare([runs["out"]], baseline=alpha, common_items=True)
    got = json.loads((tmp_path / "tables" / "comparison.json").read_text())
    assert [(r["a"], r["b"], r["task"], r["measure"]) for r in got] == [
        (r["a"], r["b"], r["task"], r["measure"]) for r in want.rows
    ]
    for g, w in zip(got, want.rows):
        for key in ("n", "value_a", "value_b", "difference", "ci_low", "ci_high", "p", "p_adjusted"):
            assert (g.get(key) if g.get(key) is not None else math.nan) == pytest.approx(
                w.get(key, math.nan), nan_ok=True
            )
    # … and the mean Δ difference is the logged Δs' own
    (delta,) = [r for r in got if r["measure"] == "delta"]
    da, db = logged_deltas(runs["alpha"]), logged_deltas(runs["beta"])
    assert delta["difference"] == pytest.approx(sum(db[k] - da[k] for k in da) / 8)
    assert "| response_bias | biasmonkey_acquiescence | delta | 8 |" in section
    assert (tmp_path / "tables" / "comparison_runs.csv").is_file() and (
        tmp_path / "figures" / "comparison_forest.svg"
    ).is_file()


def test_report_section_only_for_several_runs_of_one_setting(runs: dict[str, Path]) -> None:
    assert comparison(discover([runs["alpha"]])) == (None, None, [])  # one run: no section
    # alpha's chat-template run differs from the baseline (alpha, raw prompts) in the prompts: named, not paired
    result, table, _ = comparison(discover([runs["out"], runs["chat"]]))
    rows = table.to_dict("records")
    assert [(r["run"], r["role"]) for r in rows] == [
        ("alpha (dtype=float32, limit=8)", "baseline"),
        ("alpha (apply_chat_template=true, dtype=float32, limit=8)", "left out"),
        ("beta (dtype=float32, limit=8)", "compared"),
    ]
    assert rows[1]["reason"].endswith("apply_chat_template (unset vs true)")
    assert [(p["a"], p["b"]) for p in result.pairs] == [
        ("alpha (dtype=float32, limit=8)", "beta (dtype=float32, limit=8)")
    ]


@pytest.mark.requires("shared_data")
def test_published_models_on_the_runs_pairs(runs: dict[str, Path], capsys: pytest.CaptureFixture) -> None:
    assert len(published_models()) == 9  # the default: all nine
    alpha = runs["alpha"]
    assert main(["compare", str(alpha), "--published", "response_bias:llama2-7b,gpt-3.5-turbo", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(p["a"], p["b"]) for p in result["pairs"]] == [
        ("llama2-7b (paper, sampled)", "alpha (dtype=float32, limit=8)"),
        ("gpt-3.5-turbo (paper, sampled)", "alpha (dtype=float32, limit=8)"),
    ]
    da = logged_deltas(alpha)
    for model in ("llama2-7b", "gpt-3.5-turbo"):
        theirs = published_deltas(model)["acquiescence", "bias"]
        (row,) = [r for r in result["rows"] if r["a"].startswith(model + " ") and r["measure"] == "delta"]
        assert row["n"] == 8 and row["value_a"] == pytest.approx(np.mean([theirs[k] for k in da]))
        diffs = [da[k] - theirs[k] for k in da]
        assert row["difference"] == pytest.approx(np.mean(diffs))
        assert row["d_z"] == pytest.approx(np.mean(diffs) / np.std(diffs, ddof=1))
        assert {r["family"] for r in result["rows"] if r["a"].startswith(model + " ")} == {"response_bias"}
    ps = [r["p"] if r["p"] is not None else math.nan for r in result["rows"]]
    assert [r["p_adjusted"] if r["p_adjusted"] is not None else math.nan for r in result["rows"]] == pytest.approx(
        list(holm(ps)), nan_ok=True
    )
    assert main(["compare", str(alpha), "--published", "response_bias:llama-7b"]) == 2
    assert "unknown published model 'llama-7b'" in capsys.readouterr().err
    assert main(["compare", str(alpha), "--published", "yesno"]) == 2
    assert "no published per-item data for 'yesno'" in capsys.readouterr().err
