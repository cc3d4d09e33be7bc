"""The hub-id check (`model_checks.check_hub_model`) gets `HUB_DEADLINE` seconds in all. Its Hub is
tests/fault_server.py trickling (HTTP 200 headers at once, then a chunk every 0.2 s, never the
end), at HF_ENDPOINT: huggingface_hub's timeouts bound each read, so before the fix its first
request (`GET /api/...`) held the check for good. The check runs in a subprocess (HF_ENDPOINT is read
when huggingface_hub is imported), killed by the test's own timeout if it hangs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fault_server import FaultServer

from biasmonkey.harness_ext.app.model_checks import HUB_DEADLINE

CHECK = """
import sys, time
from biasmonkey.harness_ext.app import model_checks
model_checks.HUB_DEADLINE = float(sys.argv[1])
start = time.monotonic()
try:
    model_checks.check_hub_model("org/name", "--tokenizer")
except ValueError as err:
    print(err)
print(f"{time.monotonic() - start:.2f}")
"""


def trickling_hub_env(hub: FaultServer, tmp_path: Path) -> dict[str, str]:
    """Online (HF_HUB_OFFLINE unset), an empty cache, and the Hub at the trickling server."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return env | {"HF_ENDPOINT": hub.url.removesuffix("/v1"), "HF_HOME": str(tmp_path / "hf-home")}


def test_a_trickling_hub_fails_the_check_at_its_deadline(tmp_path: Path) -> None:
    with FaultServer(trickle=0.2) as hub:
        env = trickling_hub_env(hub, tmp_path)
        proc = subprocess.run([sys.executable, "-c", CHECK, "1.0"], capture_output=True, text=True, env=env, timeout=60)
        assert hub.requests, "the check never asked the Hub"
    assert proc.returncode == 0, proc.stderr[-3000:]
    message, seconds = proc.stdout.strip().rsplit("\n", 1)
    assert 1.0 <= float(seconds) < 3 * 1.0
    assert message == (
        "--tokenizer org/name: not a local folder nor in the Hugging Face cache, and the Hub "
        f"({hub.url.removesuffix('/v1')}) did not answer within 1 s whether it has the model (its config.json), "
        "so the run stops before it starts. A model in the cache skips this check: download it first "
        "(`hf download org/name`), or give a local folder"
    )


def test_plan_with_a_hub_tokenizer_on_a_trickling_hub_stops_with_one_line(tmp_path: Path) -> None:
    """The whole command, with the real deadline: exit 2 and the message, within 3 × HUB_DEADLINE."""
    with FaultServer(trickle=0.2) as hub:
        proc = subprocess.run(
            [sys.executable, "-m", "biasmonkey.harness_ext.app.cli", "plan", "--tasks", "biasmonkey_acquiescence"]
            + ["--tokenizer", "org/tok"],
            capture_output=True,
            text=True,
            env=trickling_hub_env(hub, tmp_path),
            timeout=3 * HUB_DEADLINE,
        )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "--tokenizer org/tok: not a local folder nor in the Hugging Face cache, and the Hub" in proc.stderr
    assert f"did not answer within {HUB_DEADLINE:g} s whether it has the model" in proc.stderr
