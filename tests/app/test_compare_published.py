"""`biasmonkey compare --published yesno` without runs: the yes-no authors' Table 1 (their
`bias_analysis_summary.csv`) through the command, from their released per-model biases
(`yesno/reference/summary_jsons/`), and the errors of that mode. The expected numbers are the
authors' own file (tests/fixtures/yesno/bias_analysis_summary.csv), the pairs their script's
(`MODEL_PAIRS` of test_yesno_metrics)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_yesno_metrics import MODEL_PAIRS  # the authors' eight model pairs

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.metrics.multiple_testing import holm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA_ENV = "BIASMONKEY_DATA_DIR"


def table_1() -> list[dict[str, str]]:
    with (FIXTURES / "yesno" / "bias_analysis_summary.csv").open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def run_json(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[dict, str]:
    assert main(["compare", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def authors_pairs() -> list[tuple[str, str]]:
    return [pair for family in ("falcon", "mpt", "qwen", "llama") for pair in MODEL_PAIRS[family]]


@pytest.mark.requires("shared_data")
def test_table_1_through_the_command(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    """Every row of the authors' Table 1 summary from `compare --published yesno`, with the authors'
    eight pairs by default; d with the paper's sign (their script prints the opposite)."""
    result, err = run_json(["--published", "yesno"], capsys)
    assert result["mode"] == "pairs" and result["correction"] == "holm"
    assert [(p["a"], p["b"]) for p in result["pairs"]] == authors_pairs()
    assert "summary_jsons" in err and "Table 1" in err  # the note says where the numbers come from
    want = table_1()
    rows = result["rows"]
    assert [(r["prompt"], r["dataset"]) for r in rows] == [(w["prompt"], w["dataset"]) for w in want]  # their order
    for row, w in zip(rows, want):
        where = (w["prompt"], w["dataset"])
        assert row["family"] == "yesno" and row["task"] == f"{w['dataset']} ({w['prompt']})"
        assert row["n"] == int(w["n"]) and row["n_pairs"] == 8 and row["undefined_units"] == 0, where
        for name in ("mean_abs_base", "mean_abs_instruct", "mean_difference", "percent_reduction"):
            assert row[name] == pytest.approx(float(w[name]), rel=1e-9), (*where, name)
        assert row["cohens_d"] == pytest.approx(-float(w["cohens_d"]), rel=1e-9), where  # the paper's sign
        assert row["p_value"] == pytest.approx(float(w["p_value"]), rel=1e-7), where
    # every p adjusted together, Holm over the 15 rows
    assert [r["p_adjusted"] for r in rows] == pytest.approx(list(holm([r["p_value"] for r in rows])))
    # a bare --pairs is the same table
    bare, _ = run_json(["--published", "yesno", "--pairs"], capsys)
    assert bare["rows"] == rows and bare["pairs"] == result["pairs"]
    # the markdown table: one line per row, with the % reduction
    assert main(["compare", "--published", "yesno"]) == 0
    out = capsys.readouterr().out
    assert "| yesno | comps (zeroshot) | 8 | 0 | 0.420 | 0.192 | -0.228 | 54.252 | 1.053 | 0.021 |" in out
    assert "% reduction" in out and out.count("| yesno |") == len(want)


@pytest.mark.requires("shared_data")
def test_prompt_and_set_selection_and_chosen_pairs(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    want = {(w["prompt"], w["dataset"]): w for w in table_1()}
    fewshot, _ = run_json(["--published", "yesno:fewshot"], capsys)
    assert [r["task"] for r in fewshot["rows"]] == [
        "ewok (fewshot)",
        "comps (fewshot)",
        "babi (fewshot)",
        "arith (fewshot)",
        "mmlu (fewshot)",
    ]
    assert [r["p_adjusted"] for r in fewshot["rows"]] == pytest.approx(  # Holm over these 5 rows only
        list(holm([r["p_value"] for r in fewshot["rows"]]))
    )
    picked, _ = run_json(["--published", "yesno:zeroshot,instronly,comps,ewok"], capsys)
    assert [(r["prompt"], r["dataset"]) for r in picked["rows"]] == [
        ("zeroshot", "ewok"),
        ("zeroshot", "comps"),
        ("instronly", "ewok"),
        ("instronly", "comps"),
    ]
    for row in picked["rows"]:
        assert row["mean_difference"] == pytest.approx(float(want[row["prompt"], row["dataset"]]["mean_difference"]))
    # two of the pairs, given by the models' names: EWoK has 2 × 11 units, COMPS 2
    pairs = "Qwen1.5-7B:Qwen1.5-7B-Chat,Llama-2-7b-hf:Llama-2-7b-chat-hf"
    two, _ = run_json(["--published", "yesno:zeroshot,comps,ewok", "--pairs", pairs], capsys)
    assert (
        [[p["a"], p["b"]] for p in two["pairs"]]
        == [p.split(":") for p in pairs.split(",")]
        == [list(p) for p in (MODEL_PAIRS["qwen"][0], MODEL_PAIRS["llama"][0])]
    )
    assert [(r["task"], r["n"], r["n_pairs"]) for r in two["rows"]] == [
        ("ewok (zeroshot)", 22, 2),
        ("comps (zeroshot)", 2, 2),
    ]
    ref = data_dir / "yesno" / "reference" / "summary_jsons"
    comps = {
        m: v["plain_bias"]
        for family in ("qwen", "llama")
        for m, v in json.loads((ref / f"zeroshot_{family}_comps.json").read_text())["comps"].items()
    }
    diffs = [abs(comps["Qwen1.5-7B-Chat"]) - abs(comps["Qwen1.5-7B"])]
    diffs.append(abs(comps["Llama-2-7b-chat-hf"]) - abs(comps["Llama-2-7b-hf"]))
    assert two["rows"][1]["mean_difference"] == pytest.approx(sum(diffs) / 2)


@pytest.mark.requires("shared_data")
def test_writes_the_output_files(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", "--published", "yesno:zeroshot", "--output", str(tmp_path)]) == 0
    capsys.readouterr()
    assert {p.name for p in tmp_path.iterdir()} == {"compare.md", "compare.csv", "compare.json", "forest.png"}
    written = list(csv.DictReader((tmp_path / "compare.csv").open()))
    assert [r["task"] for r in written] == [f"{d} (zeroshot)" for d in ("ewok", "comps", "babi", "arith", "mmlu")]
    assert json.loads((tmp_path / "compare.json").read_text())["mode"] == "pairs"


def error(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """The one-line message of a refused command (exit 2, no traceback)."""
    assert main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("biasmonkey: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_missing_data_is_one_clear_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    err = error(["--published", "yesno"], capsys)
    assert str(tmp_path / "yesno" / "reference" / "summary_jsons") in err
    assert DATA_ENV in err and "`biasmonkey data fetch` does not download them" in err
    monkeypatch.delenv(DATA_ENV)
    err = error(["--published", "yesno"], capsys)
    assert f"{DATA_ENV} is not set" in err and "yesno/reference/summary_jsons/" in err
    # a folder that lacks one file: that file named
    folder = tmp_path / "yesno" / "reference" / "summary_jsons"
    folder.mkdir(parents=True)
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    err = error(["--published", "yesno:comps"], capsys)
    assert f"{folder / 'zeroshot_falcon_comps.json'}: missing (the authors' released results)" in err


def test_a_damaged_value_is_named(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A bias written as null or "0.3" in a copy of the authors' file: the file, the entry and the fix,
    never a row without that model or a traceback (checked as the report reads the same files)."""
    import json
    import shutil

    shutil.copytree(data_dir / "yesno" / "reference", tmp_path / "yesno" / "reference")
    path = tmp_path / "yesno" / "reference" / "summary_jsons" / "zeroshot_qwen_comps.json"
    found = json.loads(path.read_text())
    model = sorted(found["comps"])[0]
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    for value, shown in ((None, "null"), ("0.3", '"0.3"')):
        found["comps"][model]["plain_bias"] = value
        path.write_text(json.dumps(found))
        err = error(["--published", "yesno:zeroshot,comps"], capsys)
        assert f"{path}: entry comps/{model}: plain_bias is {shown}, not a finite number; restore" in err


def test_refused_requests(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # a run cannot be paired item by item with per-domain summaries: said before reading any run
    err = error([str(tmp_path), "--published", "yesno"], capsys)
    assert "no published per-item data for 'yesno'" in err and "not per-item answers" in err
    assert "`biasmonkey compare --published yesno`" in err
    assert "did you mean 'fewshot'?" in error(["--published", "yesno:fewshoot"], capsys)
    assert "no published data for 'nope'" in error(["--published", "nope"], capsys)
    assert "needs the runs" in error(["--published", "response_bias"], capsys)  # per-item data: runs needed
    assert "--baseline names no run" in error(["--published", "yesno", "--baseline", "x"], capsys)
    assert "give the runs to compare" in error([], capsys)
    assert "--pairs needs the pairs" in error([str(tmp_path), str(tmp_path), "--pairs"], capsys)


@pytest.mark.requires("shared_data")
def test_unknown_published_model_in_pairs(data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    err = error(["--published", "yesno", "--pairs", "Qwen-7B:Qwen1.5-7B-Chat"], capsys)
    assert "no published model 'Qwen-7B'; did you mean 'Qwen1.5-7B'?" in err
    assert "A:B" in error(["--published", "yesno", "--pairs", "Qwen1.5-7B"], capsys)
    twice = "Qwen1.5-7B:Qwen1.5-7B-Chat,Qwen1.5-7B-Chat:Qwen1.5-7B"
    assert "is given twice (once as Qwen1.5-7B:Qwen1.5-7B-Chat)" in error(
        ["--published", "yesno", "--pairs", twice], capsys
    )
