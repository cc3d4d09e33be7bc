"""The wheel installs everything under the single `biasmonkey` namespace, task YAMLs included."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_layout_and_entry_points(tmp_path: Path) -> None:
    # Build from a copy: setuptools writes build/ and an egg-info into the source folder.
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "results", "bench_out", "__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("biasmonkey-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"biasmonkey", next(t for t in top if t.endswith(".dist-info"))}  # no stray `tasks`/`metrics`
    yamls = [n for n in names if n.startswith("biasmonkey/tasks/response_bias/") and n.endswith(".yaml")]
    assert len(yamls) == 23  # 20 tasks + acquiescence_reword + the shared template + the group
    assert "biasmonkey/tasks/response_bias/README.md" in names
    assert "biasmonkey/tasks/response_bias/templates.yml" in names  # the prompt templates
    cognitive_templates = [
        n for n in names if n.startswith("biasmonkey/tasks/cognitive/templates/") and n.endswith(".yml")
    ]
    assert len(cognitive_templates) == 30 and "biasmonkey/tasks/cognitive/templates/README.md" in names
    assert (
        "biasmonkey/tasks/cognitive/generation/generate.py" in names
        and "biasmonkey/harness_ext/app/report/__init__.py" in names
    )
    # every package folder is packaged (setup.py finds them: a new family needs no line), and the report's templates
    for folder in ("tasks", "metrics", "harness_ext"):
        for init in (REPO / folder).rglob("__init__.py"):
            assert f"biasmonkey/{init.relative_to(REPO).as_posix()}" in names
    assert "biasmonkey/harness_ext/app/report/templates/report.html.j2" in names
    for suite in ("yesno", "cognitive"):
        shipped = {n for n in names if n.startswith(f"biasmonkey/tasks/{suite}/") and n.endswith(".yaml")}
        assert len(shipped) == len(list((REPO / "tasks" / suite).glob("*.yaml"))) > 0, suite
        assert f"biasmonkey/tasks/{suite}/README.md" in names
    assert not any(n.startswith("biasmonkey/tests") or "fixtures" in n for n in names)
    assert "biasmonkey/metrics/statistics.py" in names and "biasmonkey/harness_ext/app/cli.py" in names
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "biasmonkey/harness_ext/inspect/registry.py" in names
    assert "[inspect_ai]" in entry_points and "biasmonkey = biasmonkey.harness_ext.inspect.registry" in entry_points
    assert "biasmonkey = biasmonkey.harness_ext.app.cli:main" in entry_points
    assert "biasmonkey/harness_ext/lm_eval/backends/hf_prefix.py" in names
    assert "biasmonkey-server = biasmonkey.harness_ext.lm_eval.backends.served:ServedLM" in entry_points
    assert "[lm_eval.tasks]" in entry_points and "biasmonkey = biasmonkey.tasks" in entry_points
