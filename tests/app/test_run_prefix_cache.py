"""`biasmonkey run --backend server` closes summary.md with the served engine's prefix-cache hit rate
over the run, read from the server's Prometheus `/metrics` (vLLM's counters) before and after it,
and says so where the server exposes none (llama.cpp): tests/fault_server.py with fake counters
(tiny model's tokenizer). The same against a real vLLM server: tests/harness/test_vllm.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fault_server import FaultServer

from biasmonkey.harness_ext.app.run import engine_lines
from biasmonkey.harness_ext.app.summary import to_markdown

QUERIES, HITS = 120, 30  # prompt tokens per answered request (fake counters): a 25 % hit rate
SECTION = "## Served engine (this biasmonkey run)"


def counters(server_box: list[FaultServer], engines: int = 2) -> str:
    """vLLM-style counters that grow with the requests answered, split over engines (labels)."""
    served = server_box[0].answered if server_box else 0
    lines = []
    for name, per in (("queries", QUERIES), ("hits", HITS)):
        lines += [f"# HELP vllm:prefix_cache_{name} Prefix cache {name}.", f"# TYPE vllm:prefix_cache_{name} counter"]
        for engine in range(engines):
            lines.append(
                f'vllm:prefix_cache_{name}_total{{engine="{engine}",model_name="tiny"}} {served * per / engines}'
            )
    return "\n".join(lines) + "\n"


def run(server: FaultServer, tokenizer: Path, out: Path) -> subprocess.CompletedProcess:
    argv = ["run", "--backend", "server", "--base-url", server.url, "--server-model", "tiny"]
    argv += ["--tokenizer", str(tokenizer), "--tasks", "biasmonkey_acquiescence", "--limit", "3"]
    argv += ["--output", str(out), "--num-concurrent", "2"]
    env = {k: v for k, v in os.environ.items() if k != "BIASMONKEY_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_summary_states_the_hit_rate_or_that_the_server_does_not_expose_it(
    tiny_model: Path, data_dir: Path, tmp_path: Path
) -> None:
    box: list[FaultServer] = []
    with FaultServer(model="tiny", metrics=lambda: counters(box)) as server:
        box.append(server)
        proc = run(server, tiny_model, tmp_path / "vllm-like")
        assert proc.returncode == 0, proc.stderr[-3000:]
        answered = server.answered
        metric_reads = [r for r in server.requests if r.path == "/metrics"]
    assert answered > 0
    summary = (tmp_path / "vllm-like" / "summary.md").read_text()
    expected = (
        f"Prefix-cache hit rate: 25.0% ({answered * HITS:,} of the {answered * QUERIES:,} prompt tokens looked up "
        "during the run were in the server's prefix cache"
    )
    assert f"\n{SECTION}\n\n{expected}" in summary, summary
    assert expected in proc.stdout  # printed with the summary
    # the run's own reads (before and after) and the backend's (around its requests)
    assert len(metric_reads) >= 2

    with FaultServer(model="tiny") as bare:  # /metrics: HTTP 404, as llama.cpp's server
        proc = run(bare, tiny_model, tmp_path / "llama-like")
        assert proc.returncode == 0, proc.stderr[-3000:]
    summary = (tmp_path / "llama-like" / "summary.md").read_text()
    assert f"{SECTION}\n\nPrefix-cache hit rate: not exposed by the server (`{bare.url[:-3]}/metrics`" in summary
    assert "%" not in summary.split(SECTION)[1]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({"queries": 100.0, "hits": 10.0}, {"queries": 1100.0, "hits": 520.0}, "51.0% (510 of the 1,000 prompt tokens"),
        ({"queries": 100.0, "hits": 10.0}, {"queries": 100.0, "hits": 10.0}, "n/a, no prompt tokens were looked up"),
        ({"queries": 900.0, "hits": 10.0}, {"queries": 50.0, "hits": 1.0}, "not measured, the server's counters"),
        (None, {"queries": 1.0, "hits": 0.0}, "not exposed by the server"),
        ({"queries": 1.0, "hits": 0.0}, None, "not exposed by the server"),
    ],
    ids=["measured", "nothing-looked-up", "restarted", "none-before", "none-after"],
)
def test_engine_lines(before: dict | None, after: dict | None, expected: str) -> None:
    (line,) = engine_lines("http://h:8000/v1", before, after)
    assert line.startswith("Prefix-cache hit rate: ") and expected in line and "`http://h:8000/metrics`" in line


def test_engine_lines_close_the_summary_only_when_given() -> None:
    """`biasmonkey summarize` and the hf backends pass none: no section."""
    assert SECTION not in to_markdown({}, {})
    assert to_markdown({}, {}, ["Prefix-cache hit rate: x"]).endswith(f"\n\n{SECTION}\n\nPrefix-cache hit rate: x\n")
