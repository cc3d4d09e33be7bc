"""Every reader checks what it reads against what the run said it wrote.

A samples file of a real lm-eval run (a tiny random model) and a real Inspect log, changed after
the run as a copy, a merge or a cut transfer changes them: a line repeated, a line lost, a document
replaced, a sample dropped. `biasmonkey summarize` and `biasmonkey report` refuse each with exit
status 2 and one message naming the file, the task and the counts, never a number over other items
than the run's. Unchanged files, and a run on an lm-eval `--samples` selection, still read.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log, write_eval_log
from test_inspect import output, run, scripted
from test_lm_eval_e2e import run_lm_eval

from biasmonkey.harness_ext.app.cli import main

TASK = "biasmonkey_acquiescence"
LIMIT = 3

pytestmark = pytest.mark.usefixtures("data_dir")


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """The model folder of a real lm-eval run of acquiescence on its first 3 pairs."""
    out = tmp_path_factory.mktemp("lm-eval-run")
    run_lm_eval(tiny_model, out, TASK, "--limit", str(LIMIT))
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


@pytest.fixture
def copied(lm_eval_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the run's model folder (the run itself stays intact): its samples and results files."""
    folder = tmp_path / "out" / lm_eval_run.name
    shutil.copytree(lm_eval_run, folder)
    (samples,) = folder.glob(f"samples_{TASK}_*.jsonl")
    (results,) = folder.glob("results_*.json")
    return samples, results


def summarize(results_path: Path, capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """`biasmonkey summarize RESULTS`: its exit status and what it wrote to stderr."""
    capsys.readouterr()
    status = main(["summarize", str(results_path)])
    return status, capsys.readouterr().err


def assert_refused(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert err.startswith("biasmonkey: error: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err  # one line
    for fragment in fragments:
        assert fragment in err, err


def edit_lines(path: Path, edit: Callable[[list[str]], list[str]]) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(edit(lines)))


def n_pairs(summary_csv: Path) -> list[str]:
    return [r["n_pairs"] for r in csv.DictReader(summary_csv.open()) if r["family"] == "response_bias"]


# ---------------------------------------------------------------------------- lm-eval samples files


def test_the_unchanged_run_reads(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    samples, results = copied
    assert json.loads(results.read_text())["n-samples"][TASK]["effective"] == LIMIT
    status, err = summarize(samples.parent.parent, capsys)
    assert status == 0, err
    assert n_pairs(samples.parent.parent / "summary.csv") == [str(LIMIT)]


def test_a_repeated_line_is_refused(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    samples, results = copied
    edit_lines(samples, lambda lines: [*lines, lines[0]])  # the first record appended again
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(
        status,
        err,
        f"{samples}: 4 samples for {TASK} but its results file {results.name} says 3",
        "doc_id 0 twice (lines 1, 4)",
        "the file was changed after the run",
        "rerun the task",
    )
    assert not (samples.parent.parent / "summary.md").exists()


def test_a_cut_file_is_refused(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    samples, results = copied
    edit_lines(samples, lambda lines: lines[:-1])  # cut at a line boundary: the last record lost
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(
        status, err, f"{samples}: 2 samples for {TASK} but its results file {results.name} says 3", "doc_id 2 missing"
    )


def test_a_file_cut_inside_a_line_names_the_line(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    samples, _ = copied
    text = samples.read_text()
    cut = text.index("\n") + 1 + 40  # 40 characters into line 2: half a JSON object
    samples.write_text(text[:cut])
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(
        status,
        err,
        f"{samples}, line 2: not a JSON sample (",
        "the file was changed after the run",
        "rerun the task, or restore the samples file as lm-eval wrote it",
    )


def test_a_replaced_document_is_refused(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    samples, results = copied

    def renumber(lines: list[str]) -> list[str]:  # pair 1 replaced by a document the run did not score
        sample = json.loads(lines[1])
        sample["doc_id"] = 7
        return [lines[0], json.dumps(sample) + "\n", *lines[2:]]

    edit_lines(samples, renumber)
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(
        status,
        err,
        f"{samples}: 3 samples for {TASK} as its results file {results.name} says, but",
        "doc_id 1 missing",
        "doc_id 7 not among the run's 0…2",
    )


def test_a_repeated_line_is_refused_without_a_results_file(
    copied: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    samples, results = copied
    results.unlink()
    edit_lines(samples, lambda lines: [*lines, lines[1]])
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(status, err, f"{samples}: 4 samples for {TASK} but doc_id 1 twice (lines 2, 4)", "rerun the task")


def test_a_log_likelihood_above_0_is_refused(copied: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    """No model gives it; read as a score it would outweigh every other answer (here Δ -0.41 became
    -19.1), so the file is refused, naming the line."""
    samples, _ = copied

    def raise_first(lines: list[str]) -> list[str]:
        sample = json.loads(lines[0])
        sample["filtered_resps"][0][0] = "5.0"
        return [json.dumps(sample) + "\n", *lines[1:]]

    edit_lines(samples, raise_first)
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(status, err, f"{samples}, line 1: not a biasmonkey pair sample", "log-probability +5 is above 0")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: None, "its top level is null, not an object"),
        (lambda r: [r], "its top level is list, not an object"),
        (lambda r: r | {"config": "dtype=float32"}, "'config' is str, not an object"),
        (lambda r: r | {"configs": {TASK: "acquiescence"}}, f"configs['{TASK}'] is str, not an object"),
        (lambda r: r | {"configs": {TASK: {"metadata": [1]}}}, f"configs['{TASK}']['metadata'] is list, not an object"),
        (lambda r: r | {"n-samples": {TASK: 3}}, f"n-samples['{TASK}'] is int, not an object"),
    ],
)
def test_a_results_file_of_another_shape_is_refused(
    copied: tuple[Path, Path], capsys: pytest.CaptureFixture, change: Callable[[dict], object], problem: str
) -> None:
    """Valid JSON that is no results file (every reader went through it with .get and stopped on a traceback)."""
    _, results = copied
    results.write_text(json.dumps(change(json.loads(results.read_text()))))
    status, err = summarize(results.parent.parent, capsys)
    assert_refused(status, err, f"{results}: not an lm-eval results file ({problem})", "rerun the task")


def test_a_results_file_without_the_run_configuration_says_settings_unknown(
    copied: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    samples, results = copied
    data = json.loads(results.read_text())
    del data["config"]
    results.write_text(json.dumps(data))
    status, err = summarize(samples.parent.parent, capsys)
    assert status == 0, err
    assert "(settings=unknown)" in (samples.parent.parent / "summary.md").read_text().splitlines()[0]


def test_the_report_refuses_it_too(copied: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    samples, results = copied
    edit_lines(samples, lambda lines: [*lines, lines[0]])
    capsys.readouterr()
    status = main(["report", str(samples.parent.parent), "--out", str(tmp_path / "report")])
    assert_refused(status, capsys.readouterr().err, f"{samples}: 4 samples for {TASK}", results.name, "doc_id 0 twice")


def test_a_samples_selection_is_checked_by_count(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """lm-eval --samples picks documents anywhere (its results file does not say which): the ids are
    not 0…n−1, and the count still has to match."""
    out = tmp_path / "out"
    run_lm_eval(tiny_model, out, TASK, "--samples", json.dumps({TASK: [4, 9]}))
    (samples,) = out.rglob(f"samples_{TASK}_*.jsonl")
    assert [json.loads(line)["doc_id"] for line in samples.read_text().splitlines()] == [4, 9]
    status, err = summarize(out, capsys)
    assert status == 0, err
    assert n_pairs(out / "summary.csv") == ["2"]
    # the selection is a setting of its own: never one table with a run on every document
    documents = json.loads(next(out.rglob("results_*.json")).read_text())["n-samples"][TASK]["original"]
    assert f"samples=2 of {documents}" in (out / "summary.md").read_text().splitlines()[0]
    edit_lines(samples, lambda lines: lines[:1])
    status, err = summarize(out, capsys)
    assert_refused(status, err, f"{samples}: 1 samples for {TASK} but its results file", "says 2")


# ---------------------------------------------------------------------------- Inspect logs


@pytest.fixture
def inspect_log(tmp_path: Path) -> Path:
    """A real Inspect log of acquiescence on 3 pairs (a scripted model), as JSON."""
    model = scripted({}, default=output("A", [(" A", 0.6), (" B", 0.4)]))
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=3)
    assert log.status == "success" and len(log.samples or []) == 3
    path = tmp_path / "changed" / "acquiescence.json"
    path.parent.mkdir()
    write_eval_log(read_eval_log(log.location), str(path))
    return path


def test_an_inspect_log_reads_unchanged(inspect_log: Path, capsys: pytest.CaptureFixture) -> None:
    status, err = summarize(inspect_log.parent, capsys)
    assert status == 0, err
    assert n_pairs(inspect_log.parent / "summary.csv") == ["3"]


def test_an_inspect_log_with_a_sample_dropped_is_refused(inspect_log: Path, capsys: pytest.CaptureFixture) -> None:
    log = read_eval_log(str(inspect_log))
    dropped = log.samples.pop()  # the sample and its reduced score, as a cut transfer or a merge leaves it
    for reduction in log.reductions or []:
        reduction.samples = [s for s in reduction.samples if s.sample_id != dropped.id]
    write_eval_log(log, str(inspect_log))
    status, err = summarize(inspect_log.parent, capsys)
    assert_refused(
        status,
        err,
        f"{inspect_log}: 2 completed samples for biasmonkey/acquiescence but its header says 3",
        "the log was changed after the run",
    )


def test_an_inspect_log_with_a_sample_repeated_is_refused(inspect_log: Path, capsys: pytest.CaptureFixture) -> None:
    log = read_eval_log(str(inspect_log))
    log.samples.append(log.samples[0])
    write_eval_log(log, str(inspect_log))
    status, err = summarize(inspect_log.parent, capsys)
    first = log.samples[0]
    assert_refused(status, err, "4 completed samples", "says 3", f"sample {first.id!r} epoch {first.epoch} twice")


def test_run_options_this_biasmonkey_does_not_accept_are_refused(
    copied: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A results file whose run options no longer parse (a mode this version lacks): every reader
    stops with the file, the task and the fix, never a table read under other options."""
    samples, results = copied
    data = json.loads(results.read_text())
    data["configs"][TASK]["metadata"]["mode"] = "bogus"
    results.write_text(json.dumps(data))
    status, err = summarize(samples.parent.parent, capsys)
    assert_refused(status, err, f"{samples}: the --metadata options logged for acquiescence", "mode='bogus'", "rerun")
    status = main(["report", str(samples.parent.parent), "--out", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert_refused(status, err, f"{results}: the run options of {TASK}", "mode='bogus'", "rerun the task")
