"""Runs that lm-eval records alike but whose inputs differ are never read as one run: `biasmonkey run`
records the weights' and input files' digests beside its results (harness_ext/run_inputs.py) and the
scanner makes each that differs a setting. And the request cache of a run that did not finish is
never removed without being asked (`--fresh`)."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from tiny_model import build_tiny_model

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.run import check_earlier_cache, complete_marker
from biasmonkey.harness_ext.run_inputs import INPUTS_FILE, file_digest, record_inputs, recorded_inputs

REPO = Path(__file__).resolve().parents[2]
COGNITIVE_TESTS = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"

pytestmark = pytest.mark.usefixtures("data_dir")


def test_file_digests(tmp_path: Path) -> None:
    one = tmp_path / "one.csv"
    one.write_bytes(b"a,b\n1,2\n")
    assert file_digest(one) == "sha256:" + hashlib.sha256(b"a,b\n1,2\n").hexdigest()[:12]
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(one, folder / "x.csv")
    before = file_digest(folder)
    (folder / "x.csv").write_bytes(b"a,b\n1,3\n")  # one byte changed
    assert file_digest(folder) != before


def test_the_record_keeps_earlier_entries_and_names_a_damaged_file(tmp_path: Path) -> None:
    first, second = tmp_path / "results_1.json", tmp_path / "results_2.json"
    record_inputs([first], {"weights": "aaa"})
    record_inputs([second], {"weights": "bbb", "data_path": "sha256:ccc"})
    assert recorded_inputs(first) == {"weights": "aaa"}
    assert recorded_inputs(second) == {"weights": "bbb", "data_path": "sha256:ccc"}
    assert recorded_inputs(tmp_path / "results_3.json") == {}
    (tmp_path / INPUTS_FILE).write_text('{"results_1.json": 5}')
    with pytest.raises(ValueError, match=rf"{INPUTS_FILE}: not a readable record .* restore it, or delete it"):
        recorded_inputs(first)


def _cache(db: Path, rows: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE unnamed (key TEXT PRIMARY KEY, value BLOB)")
        conn.executemany("INSERT INTO unnamed VALUES (?, ?)", [(str(i), b"") for i in range(rows)])


def test_the_cache_of_a_run_that_did_not_finish_is_not_discarded_unasked(tmp_path: Path) -> None:
    cache = tmp_path / "biasmonkey-hf-abc"
    db = tmp_path / "biasmonkey-hf-abc_rank0.db"
    _cache(db, 3)
    with pytest.raises(ValueError, match=r"holds 3 finished requests .* did not finish: add --resume .* or --fresh"):
        check_earlier_cache(cache, [db], fresh=False)
    check_earlier_cache(cache, [db], fresh=True)  # asked for
    complete_marker(cache).touch()  # the earlier run finished: its answers are in its results
    check_earlier_cache(cache, [db], fresh=False)
    db.unlink()
    db.mkdir()
    with pytest.raises(ValueError, match=r"_rank0.db is not a file, where the run's request cache goes"):
        check_earlier_cache(cache, [db], fresh=True)


def test_resume_and_fresh_together_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "--output", str(tmp_path / "out"), "--resume", "--fresh"]) == 2
    assert "--resume continues an earlier run, --fresh discards it" in capsys.readouterr().err


# ---------------------------------------------------------------------------- real runs into one folder


def swapped_copy(path: Path) -> None:
    """The cognitive test fixture written to `path` with each test's control and treatment swapped."""
    with COGNITIVE_TESTS.open(newline="") as f:
        rows = list(csv.DictReader(f))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({**r, "control": r["treatment"], "treatment": r["control"]} for r in rows)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Path]:
    """Into one folder, one model folder `tiny`: acquiescence and anchoring on tests A; anchoring on
    tests B (each test's control and treatment swapped); then, its weights rewritten in place (another
    seed), acquiescence and anchoring on tests A again."""
    root = tmp_path_factory.mktemp("run-inputs")
    model = build_tiny_model(root / "tiny", seed=0)
    tests_b = root / "tests_b.csv"
    swapped_copy(tests_b)
    out = root / "out"
    run = ["run", "--model", str(model), "--limit", "2", "--output", str(out), "--reversal", "hash"]
    both = ["--tasks", "biasmonkey_acquiescence,biasmonkey_cognitive_anchoring", "--data-path", str(COGNITIVE_TESTS)]
    assert main([*run, *both]) == 0
    assert main([*run, "--tasks", "biasmonkey_cognitive_anchoring", "--data-path", str(tests_b)]) == 0
    build_tiny_model(model, seed=1)
    assert main([*run, *both]) == 0
    return {"out": out, "tests_b": tests_b}


def _logged(out: Path, task: str) -> dict[tuple[str, str], float]:
    """{(weights, data digest or ""): the mean of the per-document values lm-eval logged}, from the files."""
    found = {}
    key = "delta" if task == "acquiescence" else "score"
    for path in out.rglob(f"samples_biasmonkey_{task}_*.jsonl"):
        stamp = path.stem.removeprefix(f"samples_biasmonkey_{task}_")
        inputs = recorded_inputs(path.parent / f"results_{stamp}.json")
        values = [json.loads(line)[key] for line in path.read_text().splitlines()]
        values = [v for v in values if v is not None]
        found[inputs["weights"], inputs["data_path"] if task != "acquiescence" else ""] = sum(values) / len(values)
    return found


def test_the_record_holds_the_weights_and_the_tests_file(runs: dict[str, Path]) -> None:
    records = json.loads((runs["out"] / "tiny" / INPUTS_FILE).read_text())
    assert len(records) == 3  # one per results file
    weights = {r["weights"] for r in records.values()}
    assert len(weights) == 2
    assert {r["data_path"] for r in records.values()} == {file_digest(COGNITIVE_TESTS), file_digest(runs["tests_b"])}


def test_summarize_keeps_models_and_tests_files_apart(runs: dict[str, Path], tmp_path: Path) -> None:
    assert main(["summarize", str(runs["out"]), "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))

    def settings(row: dict[str, str]) -> dict[str, str]:
        return dict(part.split("=", 1) for part in row["settings"].split(", "))

    acquiescence = {settings(r)["weights"]: float(r["delta"]) for r in rows if r["bias"] == "acquiescence"}
    assert acquiescence == {w: pytest.approx(v) for (w, _), v in _logged(runs["out"], "acquiescence").items()}
    assert len(acquiescence) == 2  # one per model: neither hides the other
    anchoring = {
        (settings(r)["weights"], settings(r)["data_path"]): float(r["score"])
        for r in rows
        if r["task"].endswith("anchoring")
    }
    assert anchoring == {k: pytest.approx(v) for k, v in _logged(runs["out"], "cognitive_anchoring").items()}
    assert len(anchoring) == 3  # the first model on tests A and on tests B, the second on tests A


def test_resume_refuses_a_server_that_now_serves_other_weights(
    tiny_model: Path, tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    """A served run that failed midway resumes from its cache only while the server at the same URL
    and name says it serves the same weights (its /v1/models entry): not after a restart on another
    file, which would mix two models' answers in one table."""
    from fault_server import FaultServer

    card = {"owned_by": "llamacpp", "root": "/models/a.gguf"}
    out = tmp_path / "out"
    with FaultServer(model="m", fail_after=3, model_card=lambda: dict(card)) as server:
        argv = ["run", "--backend", "server", "--base-url", server.url, "--server-model", "m"]
        argv += ["--tokenizer", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "3"]
        argv += ["--max-retries", "0", "--num-concurrent", "1", "--output", str(out)]
        assert main(argv) != 0  # the server fails after 3 prompts
        assert "continue" in capfd.readouterr().err
        server.fail_after = None
        card["root"] = "/models/b.gguf"  # restarted on other weights, same URL and name
        assert main([*argv, "--resume"]) == 2
        assert "--resume: no request cache at" in capfd.readouterr().err
        answered = server.answered
        card["root"] = "/models/a.gguf"  # the same weights again: resumes, sending only the rest
        assert main([*argv, "--resume"]) == 0
    cached = re.search(r"Cached requests: (\d+), Requests remaining: (\d+)", capfd.readouterr().err)
    assert answered == 3 and int(cached.group(1)) > 0  # the 3 prompts' requests came from the cache


def test_the_data_folders_own_tests_copy_is_recorded_and_told_apart(
    data_dir_with_cognitive_fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --data-path, the cognitive tasks read the copy in $BIASMONKEY_DATA_DIR/cognitive/, which no
    pinned sha256 guards: two runs on two copies (the second with each test's control and treatment
    swapped) are two runs, data_path=sha256:…, while the response-bias task of the same runs, which
    reads checksummed files, stays one setting."""
    other = tmp_path / "data_b"
    shutil.copytree(data_dir_with_cognitive_fixture, other, symlinks=True)
    copy = other / "cognitive" / "cognitive-biases-in-llms.csv"
    copy.unlink()
    swapped_copy(copy)
    model = build_tiny_model(tmp_path / "tiny", seed=0)
    out = tmp_path / "out"
    run = ["run", "--model", str(model), "--limit", "2", "--output", str(out), "--reversal", "hash"]
    run += ["--tasks", "biasmonkey_acquiescence,biasmonkey_cognitive_anchoring"]
    digests = []
    for data in (data_dir_with_cognitive_fixture, other):
        monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(data))
        assert main(run) == 0
        digests.append(file_digest(data / "cognitive" / "cognitive-biases-in-llms.csv"))
    assert digests[0] != digests[1]
    records = json.loads((out / "tiny" / INPUTS_FILE).read_text())
    assert sorted(r["cognitive:data_path"] for r in records.values()) == sorted(digests)
    assert main(["summarize", str(out), "--out", str(tmp_path / "summary")]) == 0
    rows = list(csv.DictReader((tmp_path / "summary" / "summary.csv").open()))
    anchoring = sorted(r["settings"] for r in rows if r["task"].endswith("anchoring"))
    assert anchoring == sorted(f"data_path={d}, dtype=float32, limit=2, reversal=hash" for d in digests)
    assert {r["settings"] for r in rows if r.get("bias") == "acquiescence"} == {"dtype=float32, limit=2"}
