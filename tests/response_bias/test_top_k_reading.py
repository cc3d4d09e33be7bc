"""Exact mode from a top-k list (Inspect): each option spelling (" A", "A") is read on its own, as
lm-eval scores it; a spelling outside the top-k gets the documented floor and is counted in
`imputed_options`, which `biasmonkey summarize` shows with a note."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from records import pair
from test_inspect import metrics, output, prompts, run, scripted
from test_inspect_parity import RAW_PROMPT
from transformers import AutoTokenizer

from biasmonkey.harness_ext.logs import records_from_eval_log
from biasmonkey.metrics import distribution_from_logprobs, pair_delta
from biasmonkey.metrics.top_logprobs import spaced_token
from biasmonkey.tasks.response_bias.prompts import answer_continuations
from biasmonkey.tasks.response_bias.summary import summary_table

pytestmark = pytest.mark.usefixtures("data_dir")


def test_a_letter_with_one_spelling_outside_the_top_k_gets_its_floor_and_is_counted(tmp_path: Path) -> None:
    (q1, qp1), (q2, qp2) = prompts()
    model = scripted(
        {
            # q: A = " A" .5 + "A" .1 = .6; B = " B" .2 + "B" missing: floor min(smallest .1, unreturned
            # (1 − .9) / 1 missing) = .1 → B = .3, p_q = [2/3, 1/3]; 1 imputed
            # (before: "B" dropped, B = .2, p_q = [.75, .25], nothing counted)
            q1: lambda: output("A", [(" A", 0.5), (" B", 0.2), ("A", 0.1), ("x", 0.1)]),
            # q': every spelling returned: A = .45 + .25 = .7, B = .15 + .05 = .2 → p_q' = [7/9, 2/9]
            # Δ = 100·(7/9 − 2/3) = 11.1111 (before: 100·(7/9 − .75) = 2.7778)
            qp1: lambda: output("A", [(" A", 0.45), ("A", 0.25), (" B", 0.15), ("B", 0.05), ("y", 0.05)]),
            # q: the top-k holds all the mass: "A" and "B" get the floor 1e-300 → p_q = [.5, .5]; 2 imputed
            q2: lambda: output("A", [(" A", 0.5), (" B", 0.5)]),
            # q': "A", "B" missing: floor min(.3, (1 − .9) / 2) = .05 each → A .65, B .35; 2 imputed
            # Δ = 100·(.65 − .5) = 15
            qp2: lambda: output("A", [(" A", 0.6), (" B", 0.3)]),
        }
    )
    log = run("biasmonkey/acquiescence", model, tmp_path, limit=2)
    assert log.status == "success", log.error
    m = metrics(log)
    assert m["imputed_options"] == 5  # 1 + 0 + 2 + 2 spellings
    assert m["delta"] == pytest.approx((100 / 9 + 15) / 2)
    first, second = records_from_eval_log(log.location)
    assert first.p_q == pytest.approx([2 / 3, 1 / 3]) and first.delta == pytest.approx(100 / 9)
    assert second.p_qp == pytest.approx([0.65, 0.35]) and second.delta == pytest.approx(15)
    assert (first.n_imputed, second.n_imputed) == (1, 4)

    # `biasmonkey summarize` shows the imputed spellings, with a note naming the row
    from biasmonkey.harness_ext.app.cli import main

    assert main(["summarize", str(tmp_path / "logs")]) == 0
    md = (tmp_path / "logs" / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| bias |"))
    assert header.endswith("| imputed_options |")
    assert "imputed_options: option spellings" in md and "acquiescence/bias (5 spellings in 2 pairs)" in md
    with (tmp_path / "logs" / "summary.csv").open() as f:
        (row,) = csv.DictReader(f)
    assert float(row["imputed_options"]) == 5 and int(row["pairs_with_imputed"]) == 2


def test_summary_has_no_imputed_column_when_nothing_was_imputed() -> None:
    table = summary_table([[pair("K1", "bias", 1.0), pair("K2", "bias", 3.0)]])
    assert "imputed_options" not in table.columns and "imputed_options" not in table.rows[0]
    assert not any("imputed" in note for note in table.notes)
    # one imputed spelling in one pair of two: the column, and the note counting it
    imputed = summary_table([[pair("K1", "bias", 1.0, n_imputed=1), pair("K2", "bias", 3.0)]])
    assert imputed.rows[0]["imputed_options"] == 1 and imputed.rows[0]["pairs_with_imputed"] == 1
    assert list(imputed.columns)[-1] == "imputed_options"
    assert any("acquiescence/bias (1 spellings in 1 pairs)" in note for note in imputed.notes)


def _run(tiny_model: Path, log_dir: Path, top_logprobs: int) -> str:
    (log,) = inspect_eval(
        "biasmonkey/acquiescence",
        model=f"hf/{tiny_model}",
        model_args={"device": "cpu", "dtype": "float64", **RAW_PROMPT},
        limit=4,
        task_args={"top_logprobs": top_logprobs},
        log_dir=str(log_dir),
        display="none",
        max_connections=1,
    )
    assert log.status == "success", log.error
    return log.location


def _expected_side(full: list[tuple[str, float]], letters: list[str], k: int) -> tuple[list[float], int]:
    """An option's log-probability from the k most likely tokens of the whole vocabulary, by the
    documented rule: each spelling's own log-probability if it ranks within k, else the floor
    min(p_k, (1 − top-k mass) / missing spellings)."""
    top = sorted(full, key=lambda t: -t[1])[:k]
    found = {spaced_token(token): lp for token, lp in top}
    spellings = answer_continuations(letters)
    missing = [s for s in spellings if s not in found]
    floor = min(math.exp(top[-1][1]), (1 - sum(math.exp(lp) for _, lp in top)) / max(len(missing), 1))
    probs = [math.exp(found[s]) if s in found else floor for s in spellings]
    return [math.log(probs[i] + probs[i + 1]) for i in range(0, len(probs), 2)], len(missing)


def test_the_tiny_model_with_spellings_outside_the_top_k(tiny_model: Path, tmp_path: Path) -> None:
    """The audited case: at top_logprobs=800 pair ELDCARE_W41's " A" ranks 701 but "A" 831. Each
    missing spelling gets the floor and is counted; with the whole vocabulary nothing is imputed."""
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))
    full_log = read_eval_log(_run(tiny_model, tmp_path / "full", vocab))
    part_location = _run(tiny_model, tmp_path / "top800", 800)
    records = {r.key: r for r in records_from_eval_log(part_location)}
    assert sum(r.n_imputed for r in records_from_eval_log(full_log.location)) == 0
    total = 0
    for sample in full_log.samples:
        doc = sample.metadata
        sides = [_expected_side(sample.store[f"{s}_top_logprobs"], doc[f"{s}_letters"], 800) for s in ("q", "qp")]
        (q_lp, q_missing), (qp_lp, qp_missing) = sides
        p_q, p_qp = distribution_from_logprobs(q_lp), distribution_from_logprobs(qp_lp)
        rec = records[doc["key"]]
        assert rec.n_imputed == q_missing + qp_missing, doc["key"]
        assert rec.p_q == pytest.approx(p_q, abs=1e-9) and rec.p_qp == pytest.approx(p_qp, abs=1e-9)
        expected = pair_delta(doc["bias"], doc["setting"], p_q, p_qp, doc["qp_positions"])
        assert rec.delta == pytest.approx(expected, abs=1e-7), doc["key"]
        total += q_missing + qp_missing
    assert total > 0  # the case the test is about: some spelling ranks below 800
    assert metrics(read_eval_log(part_location))["imputed_options"] == total


@pytest.mark.parametrize(
    "task", ["biasmonkey/acquiescence", "biasmonkey/yesno_comps", "biasmonkey/answer_position_anatomy"]
)
def test_top_logprobs_above_the_vocabulary_reads_the_whole_distribution(
    tiny_model: Path, tmp_path: Path, task: str, caplog: pytest.LogCaptureFixture
) -> None:
    """-T top_logprobs larger than an hf/ model's vocabulary (the provider's top-k stopped every
    sample): the whole distribution, the same records as top_logprobs = the vocabulary, said once."""
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))
    above_vocab = vocab + 5000 + len(task)  # said once per model and number: another number per task

    def records(top_logprobs: int) -> list:
        (log,) = inspect_eval(
            task,
            model=f"hf/{tiny_model}",
            model_args={"device": "cpu", "dtype": "float64", **RAW_PROMPT},
            limit=2,
            task_args={"top_logprobs": top_logprobs},
            log_dir=str(tmp_path / str(top_logprobs)),
            display="none",
            max_connections=1,
        )
        assert log.status == "success", log.error
        return records_from_eval_log(log.location)

    with caplog.at_level("WARNING"):
        above = records(above_vocab)
    said = [r for r in caplog.records if f"top_logprobs={above_vocab} is more than its vocabulary" in r.getMessage()]
    assert len(said) == 1 and f"reading all {vocab}" in said[0].getMessage()
    assert above == records(vocab)
