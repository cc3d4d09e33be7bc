"""`biasmonkey compare` on a folder holding two models of one short name (mock/a/tiny and mock/b/tiny,
Inspect's mockllm with scripted answers): each run is labelled by its model's full name, as `summarize`
titles it; results given twice are still refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from inspect_ai.model import get_model
from test_inspect import output, prompts, run

from biasmonkey.harness_ext.app.cli import main

pytestmark = pytest.mark.usefixtures("data_dir")
SETTINGS = "(apply_chat_template=true, limit=2)"  # a chat API always gets the chat format


def tiny(name: str, qp_a1: float, qp_a2: float):
    """A mockllm model `name` answering acquiescence's first two pairs: q A .5, q' A `qp_a1` and `qp_a2`."""
    (q1, qp1), (q2, qp2) = prompts()
    answers = {
        q1: output("A", [(" A", 0.5), (" B", 0.5)]),
        qp1: output("A", [(" A", qp_a1), (" B", 1 - qp_a1)]),
        q2: output("A", [(" A", 0.5), (" B", 0.5)]),
        qp2: output("A", [(" A", qp_a2), (" B", 1 - qp_a2)]),
    }
    return get_model(f"mockllm/{name}", custom_outputs=lambda messages, *_: answers[messages[-1].text])


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    """One log folder: mock/a/tiny (Δ = 100·(q'[A] − q[A]) = 10, 30) and mock/b/tiny (20, 45), same settings."""
    root = tmp_path_factory.mktemp("labels")
    run("biasmonkey/acquiescence", tiny("mock/a/tiny", 0.6, 0.8), root, limit=2)
    run("biasmonkey/acquiescence", tiny("mock/b/tiny", 0.7, 0.95), root, limit=2)
    return root / "logs"


@pytest.fixture(scope="module")
def one_log(logs: Path) -> Path:
    """One of the folder's two logs."""
    return sorted(logs.iterdir())[0]


def test_two_models_of_one_short_name_are_labelled_by_their_full_names(
    logs: Path, capsys: pytest.CaptureFixture
) -> None:
    # It was "the same run is given twice: tiny (…) [logs], tiny (…) [logs]". B − A per pair: 20 − 10 = 10 and
    # 45 − 30 = 15: mean 12.5, SD 5/√2 = 3.536, t = 12.5 / (3.536/√2) = 5 on 1 df, p = 1 − (2/π)·atan(5) = 0.1257.
    a, b = f"mockllm/mock/a/tiny {SETTINGS}", f"mockllm/mock/b/tiny {SETTINGS}"
    assert main(["compare", str(logs), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["pairs"] == [{"a": a, "b": b, "differing_settings": ""}]
    (delta,) = [r for r in found["rows"] if r["measure"] == "delta"]
    assert (delta["a"], delta["b"], delta["n"]) == (a, b, 2)
    assert (delta["value_a"], delta["value_b"]) == (pytest.approx(20.0), pytest.approx(32.5))
    assert delta["difference"] == pytest.approx(12.5)
    assert delta["p"] == pytest.approx(1 - 2 / math.pi * math.atan(5))
    # a run is picked by its full name; the short name is ambiguous, and the error lists both labels
    assert main(["compare", str(logs), "--baseline", "mockllm/mock/b/tiny", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"][0]["a"] == b
    assert main(["compare", str(logs), "--baseline", "tiny"]) == 2
    assert f"--baseline tiny: several runs of that name ({a}; {b})" in capsys.readouterr().err


def test_results_given_twice_are_refused(logs: Path, one_log: Path, capsys: pytest.CaptureFixture) -> None:
    # the folder twice, or the folder and one of its logs: the same files, a run paired with itself
    for again in (logs, one_log):
        assert main(["compare", str(logs), str(again)]) == 2
        err = capsys.readouterr().err
        assert "the same run is given twice: mockllm/mock/" in err and "give each run once" in err
