"""The paper's nine models as report baselines: the pinned, checksummed sample files, their scores
(equal to `biasmonkey score-samples`), and how the report shows them (out of the test family,
on by default, `--no-baselines`). Real files come from BIASMONKEY_DATA_DIR; never the network."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from records import pair

from biasmonkey.harness_ext.app import report
from biasmonkey.harness_ext.app.cli import build_parser
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.app.report.tables import build_tables
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.response_bias import published_samples
from biasmonkey.tasks.response_bias.published_samples import (
    PUBLISHED_MODELS,
    SHA256,
    check_models,
    published_deltas,
    resolve_sample,
    sample_dir,
)
from biasmonkey.tasks.response_bias.released_samples import expected_files, score_sample_dir
from biasmonkey.tasks.response_bias.report_tables import PAPER_PROTOCOL, paper_label, published_table

CODED = Path(__file__).parent.parent / "fixtures" / "report" / "coded.csv"


# ---------------------------------------------------------------------------- the data files


@pytest.mark.requires("shared_data")
def test_the_checksum_table_is_the_shared_sha256sums(data_dir: Path) -> None:
    sums = dict(
        reversed(line.split()) for line in (data_dir / "biasmonkey" / "samples" / "SHA256SUMS").read_text().splitlines()
    )
    assert len(PUBLISHED_MODELS) == 9
    assert set(SHA256) == {f"{m}/{f}" for m in PUBLISHED_MODELS for f in expected_files()}  # 9 × 17 files
    assert all(sums[name] == sha for name, sha in SHA256.items())


def test_every_real_file_verifies(data_dir: Path) -> None:
    for model in PUBLISHED_MODELS:
        assert sample_dir(model) == data_dir / "biasmonkey" / "samples" / model  # all 17 files checked


def test_a_tampered_copy_is_an_error_naming_the_file(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "biasmonkey" / "samples" / "llama2-7b"
    folder.mkdir(parents=True)
    for file in expected_files():
        (folder / file).symlink_to(data_dir / "biasmonkey" / "samples" / "llama2-7b" / file)
    tampered = folder / "odd_even.csv"
    tampered.unlink()
    text = (data_dir / "biasmonkey" / "samples" / "llama2-7b" / "odd_even.csv").read_text()
    tampered.write_text(text.replace(",a,", ",b,", 1))
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=rf"checksum mismatch for {tampered}"):
        published_deltas("llama2-7b")
    (folder / "acquiescence.csv").unlink()
    with pytest.raises(DataError, match=r"missing data file .*llama2-7b/acquiescence.csv"):
        sample_dir("llama2-7b")


def test_download_is_verified_and_cached(
    data_dir: Path, upstream, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = data_dir / "biasmonkey" / "samples" / "llama2-7b"
    served = upstream.root / "results" / "llama2-7b" / "csv"
    served.mkdir(parents=True)
    shutil.copy(real / "acquiescence.csv", served / "acquiescence.csv")
    (served / "odd_even.csv").write_text("key,response,group,num_options\n")  # not the pinned file
    monkeypatch.setenv("BIASMONKEY_BIASMONKEY_URL", upstream.url)
    path = resolve_sample("llama2-7b", "acquiescence.csv")
    assert path.read_bytes() == (real / "acquiescence.csv").read_bytes()
    assert path.is_relative_to(cache_dir) and "samples/llama2-7b" in path.as_posix()
    assert resolve_sample("llama2-7b", "acquiescence.csv") == path  # from the cache
    assert upstream.requests == ["/results/llama2-7b/csv/acquiescence.csv"]
    with pytest.raises(DataError, match="checksum mismatch for odd_even.csv downloaded from"):
        resolve_sample("llama2-7b", "odd_even.csv")
    assert not (path.parent / "odd_even.csv").exists()  # a bad payload never reaches the cache


def test_unknown_models_are_named() -> None:
    with pytest.raises(DataError, match="did you mean 'llama2-7b'"):
        check_models(["llama2-7B"])
    assert check_models(["gpt-3.5-turbo", "llama2-7b", "gpt-3.5-turbo"]) == ("gpt-3.5-turbo", "llama2-7b")


# ---------------------------------------------------------------------------- scores


def test_baseline_rows_equal_score_samples(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASMONKEY_CACHE_DIR", str(tmp_path / "cache"))
    published_samples._scored.clear()  # score here, into this test's cache
    table = published_table({"llama2-7b": published_deltas("llama2-7b")})
    expected = score_sample_dir(data_dir / "biasmonkey" / "samples" / "llama2-7b")
    assert len(table) == len(expected) == 20
    for got, want in zip(table.to_dict("records"), expected):
        assert (got["bias"], got["setting"], got["n_pairs"]) == (want["bias"], want["setting"], want["n"])
        assert got["delta"] == pytest.approx(want["delta"], rel=1e-12, abs=1e-12)
        assert got["p"] == pytest.approx(want["p_value"], rel=1e-9, abs=1e-300)
        assert (got["model"], got["protocol"]) == ("llama2-7b (paper, sampled)", PAPER_PROTOCOL)
    row = table[(table["bias"] == "acquiescence") & (table["setting"] == "bias")].iloc[0]
    assert row["delta"] == pytest.approx(1.921, abs=1e-3) and row["p"] == pytest.approx(0.021, abs=5e-4)  # TACL
    # The scored Δs are kept in the cache and read back identically.
    (cached,) = (tmp_path / "cache" / "scores").rglob("llama2-7b-*.json")
    assert json.loads(cached.read_text())["acquiescence/bias"]
    published_samples._scored.clear()
    assert published_table({"llama2-7b": published_deltas("llama2-7b")}).equals(table)


def user_model() -> ModelResults:
    m = ModelResults(name="mine", model="/models/mine")
    m.records["response_bias"]["biasmonkey_acquiescence"] = [
        pair(f"K{i}", "bias", d) for i, d in enumerate([10, 11, 12, 13, 14])
    ]
    m.records["response_bias"]["biasmonkey_acquiescence_key_typo"] = [
        pair(f"K{i}", "key_typo", d) for i, d in enumerate([1, 2, 3, 5])
    ]
    return m


# Δ 1, 2, 4 (mean 7/3) and 3, 3.5, 4 (mean 3.5, sd 0.5, stderr 0.2887, t 12.12, df 2: p 0.0067 → human-like +1)
PUBLISHED = {
    "llama2-7b": {
        ("acquiescence", "bias"): {"a": 3.0, "b": 3.5, "c": 4.0},
        ("acquiescence", "key_typo"): {"a": 1.0, "b": 2.0, "c": 4.0},
    }
}


def test_baselines_stay_out_of_the_test_family() -> None:
    with_paper = build_tables([user_model()], baselines=PUBLISHED, topics=False)
    without = build_tables([user_model()], baselines=False, topics=False)
    # The family (and so every adjusted p of the user's rows) is the same with or without the paper's models.
    assert with_paper["all_tests"].equals(without["all_tests"])
    assert set(with_paper["all_tests"]["model"]) == {"mine"}
    rb = with_paper["response_bias"]
    paper = rb[rb["protocol"] == PAPER_PROTOCOL]
    assert paper["model"].tolist() == [paper_label("llama2-7b")] * 2
    assert paper["p_holm"].isna().all() and paper["p_bh"].isna().all()
    assert rb.loc[rb["model"] == "mine", "p_holm"].tolist() == without["response_bias"]["p_holm"].tolist()
    assert paper["delta"].tolist() == pytest.approx([3.5, 7 / 3])
    hl = with_paper["human_likeness"].set_index("model")
    assert hl.loc["llama2-7b (paper, sampled)", "score"] == 1 and hl.loc["mine", "protocol"] == "exact"
    assert hl.loc["llama2-7b (paper, sampled)", "protocol"] == PAPER_PROTOCOL
    assert with_paper["summary"]["model"].tolist() == ["mine"]  # the summary table is the user's models


# ---------------------------------------------------------------------------- the report and the CLI


@pytest.fixture
def fake_report(monkeypatch: pytest.MonkeyPatch):
    """write_report on a hand-made model (no harness files, no leaderboard), with published_deltas
    recording which models it was asked for and returning PUBLISHED's cells."""
    asked: list[str] = []

    def fake_deltas(model: str):
        asked.append(model)
        return PUBLISHED["llama2-7b"]

    monkeypatch.setattr(report, "discover", lambda paths, names=None, left_out=None: [user_model()])
    monkeypatch.setattr(report, "write_leaderboard", lambda *args, **kwargs: [])
    monkeypatch.setattr(published_samples, "published_deltas", fake_deltas)

    def run(out: Path, **kwargs) -> tuple[str, pd.DataFrame]:
        asked.clear()
        md = report.write_report(["x"], out, topics_file=CODED, **kwargs)
        return md.read_text(), pd.read_csv(out / "tables" / "response_bias.csv")

    run.asked = asked
    return run


def test_baselines_are_on_by_default(fake_report, tmp_path: Path) -> None:
    md, rb = fake_report(tmp_path / "r")
    assert fake_report.asked == list(PUBLISHED_MODELS)
    assert set(rb["model"]) == {"mine", *(paper_label(m) for m in PUBLISHED_MODELS)}
    assert set(rb.loc[rb["model"] != "mine", "protocol"]) == {PAPER_PROTOCOL}
    assert md.index("## Summary") < md.index("## Survey response biases") < md.index("## Inputs")
    assert md.rstrip().split("\n## ")[-1].startswith("Inputs")  # the inputs table is last
    assert "The paper's models (Tjuatja et al., TACL 2024; released samples, 50 answers per prompt" in md
    assert md.index("human-likeness score and perturbations with raw p") < md.index("**Contents**")  # in the verdict
    assert "Δ (points) beside the paper's models" in md
    assert (tmp_path / "r" / "figures" / "bias_grid_paper_models.png").is_file()
    assert (tmp_path / "r" / "figures" / "response_bias_dendrogram.png").is_file()  # 10 models
    assert "complete linkage, Euclidean distance" in md


def test_no_baselines_and_a_subset(fake_report, tmp_path: Path) -> None:
    md, rb = fake_report(tmp_path / "none", baselines=False)
    assert fake_report.asked == [] and set(rb["model"]) == {"mine"}
    assert "paper" not in " ".join(rb["protocol"]) and "beside the paper's models" not in md
    assert not (tmp_path / "none" / "figures" / "bias_grid_paper_models.png").exists()
    assert "no response-bias dendrogram is drawn" in md  # one model
    md, rb = fake_report(tmp_path / "two", baselines=["gpt-3.5-turbo", "llama2-7b"])
    assert fake_report.asked == ["gpt-3.5-turbo", "llama2-7b"]
    assert set(rb["model"]) == {"mine", "gpt-3.5-turbo (paper, sampled)", "llama2-7b (paper, sampled)"}
    _, rb = fake_report(tmp_path / "str", baselines="llama2-70b-chat")
    assert set(rb["model"]) == {"mine", "llama2-70b-chat (paper, sampled)"}


def test_unavailable_baselines(fake_report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(model: str):
        raise DataError(f"could not download {model}: offline")

    monkeypatch.setattr(published_samples, "published_deltas", offline)
    md, rb = fake_report(tmp_path / "default")  # the default still writes the report, and says why
    assert set(rb["model"]) == {"mine"}
    assert "- **The paper's models**, not shown — could not download llama2-7b: offline" in md
    with pytest.raises(DataError, match="offline"):  # asked for by name: an error
        fake_report(tmp_path / "named", baselines=["llama2-7b"])


def test_cli_options() -> None:
    parser = build_parser()
    args = parser.parse_args(["report", "res", "--out", "r"])
    assert (args.baselines, args.no_baselines) == (None, False)
    args = parser.parse_args(["report", "res", "--out", "r", "--baselines", "llama2-7b, gpt-3.5-turbo"])
    assert args.baselines == ["llama2-7b", "gpt-3.5-turbo"]
    assert parser.parse_args(["report", "res", "--out", "r", "--no-baselines"]).no_baselines
    for bad in (["--baselines", "llama2-7B"], ["--baselines", ","], ["--no-baselines", "--baselines", "llama2-7b"]):
        with pytest.raises(SystemExit):
            parser.parse_args(["report", "res", "--out", "r", *bad])


def test_no_response_bias_results_no_baselines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    m = ModelResults(name="yn", model="yn")
    from biasmonkey.tasks.yesno.scoring import ItemRecord

    m.records["yesno"]["biasmonkey_yesno_comps"] = [
        ItemRecord(f"i{i}", "comps", None, "Yes", (-1, -1, -2, -2), None, -1.0, -2.0, None, None) for i in range(3)
    ]
    monkeypatch.setattr(report, "discover", lambda paths, names=None, left_out=None: [m])
    monkeypatch.setattr(report, "write_leaderboard", lambda *args, **kwargs: [])
    monkeypatch.setattr(published_samples, "published_deltas", lambda model: pytest.fail("not needed"))
    md = report.write_report(["x"], tmp_path / "r").read_text()
    assert "The paper's models" not in md and "## Summary" in md
    assert not math.isnan(pd.read_csv(tmp_path / "r" / "tables" / "summary.csv")["yesno_bias_base"].iloc[0])
