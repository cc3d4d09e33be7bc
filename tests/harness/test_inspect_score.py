"""`inspect score` re-scores a biasmonkey log of every family from the installed entry point
alone, with the scorer the log names or one given with `--scorer biasmonkey/<scorer>`, and
gets the original metrics back. The logs are real runs of the tiny random model."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from transformers import AutoTokenizer

from biasmonkey.harness_ext.inspect.common import metric_table_name
from biasmonkey.tasks.families import FAMILIES, family_module

pytestmark = pytest.mark.usefixtures("data_dir")
REPO = Path(__file__).resolve().parents[2]
COGNITIVE_FIXTURE = REPO / "tests" / "fixtures" / "cognitive" / "tests.csv"
MC_TASKS = REPO / "tests" / "fixtures" / "mc_position" / "mc_tasks.py"
LIMIT = 3

# The `inspect` command line, run in one fresh process once per argument list (each call goes
# through the CLI's start-up, which loads the inspect_ai entry points, as `inspect score` does).
CLI = """
import json, sys
from inspect_ai._cli.main import inspect
for argv in json.loads(sys.argv[1]):
    inspect.main(args=argv, standalone_mode=False, auto_envvar_prefix="INSPECT")
"""


@pytest.fixture(scope="module")
def logs(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One log per family (the response-bias one with per-draw and virtual-sampling metrics,
    whose names and scorer arguments depend on the options)."""
    out = tmp_path_factory.mktemp("inspect-score")
    vocab = len(AutoTokenizer.from_pretrained(tiny_model))
    runs = {
        "response_bias": (
            "acquiescence_key_typo",
            {"top_logprobs": vocab, "perturbation_seeds": [1, 2], "virtual_samples": 4},
        ),
        "yesno": ("yesno_comps", {"top_logprobs": vocab}),
        "answer_position": ("answer_position_anatomy", {"top_logprobs": vocab}),
        # every sample (content-free ones come first): 3 option counts, then 4 items in all their orders
        "mc_position": ("position", {"task": f"{MC_TASKS}@posmc", "top_logprobs": vocab}),
        "cognitive": (
            "cognitive_information_bias",
            {"data_path": str(COGNITIVE_FIXTURE), "reversal": "hash", "max_tokens": 6},
        ),
    }
    paths = {}
    for family, (task, task_args) in runs.items():
        (log,) = inspect_eval(
            f"biasmonkey/{task}",
            model=f"hf/{tiny_model}",
            model_args={"device": "cpu", "do_sample": False},
            limit=None if family == "mc_position" else LIMIT,
            task_args=task_args,
            log_dir=str(out / family),
            display="none",
        )
        assert log.status == "success", log.error
        paths[family] = Path(log.location)
    return paths


def metrics(log: EvalLog) -> dict[str, float]:
    return {name: m.value for name, m in log.results.scores[0].metrics.items()}


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.fixture(scope="module")
def rescored(logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every log re-scored twice, from an unrelated directory: `inspect score LOG` and with
    `--scorer biasmonkey/<scorer>` (plus the log's scorer arguments as -S)."""
    out = tmp_path_factory.mktemp("rescored")
    jobs, argvs = {}, []
    for family, path in logs.items():
        header = read_eval_log(str(path), header_only=True)
        (scorer,) = header.eval.scorers
        explicit = [f"--scorer=biasmonkey/{FAMILIES[family].scorer}"]
        for key, value in (scorer.options or {}).items():
            explicit += ["-S", f"{key}={json.dumps(value)}"]
        for how, extra in (("plain", []), ("explicit", explicit)):
            jobs[family, how] = out / f"{family}-{how}.eval"
            argvs.append(["score", str(path), "--action=overwrite", f"--output-file={jobs[family, how]}", *extra])
    proc = subprocess.run(
        [sys.executable, "-c", CLI, json.dumps(argvs)], cwd=out, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return jobs


@pytest.mark.parametrize("how", ["plain", "explicit"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_inspect_score_gives_the_original_metrics(logs, rescored, family: str, how: str) -> None:
    original, again = read_eval_log(str(logs[family])), read_eval_log(str(rescored[family, how]))
    before, after = metrics(original), metrics(again)
    assert len(before) > 5 and before.keys() == after.keys()
    assert all(same(before[k], after[k]) for k in before), {k: (before[k], after[k]) for k in before}
    scorer = FAMILIES[family].scorer
    assert [s.name for s in again.results.scores] == [scorer]  # the key the log readers use
    for a, b in zip(original.samples, again.samples):
        assert a.scores[scorer].value == b.scores[scorer].value
    if family == "response_bias":  # metric names made from the options
        assert {"delta_s1", "delta_s2_p", "virtual_delta", "virtual_n_pairs"} <= before.keys()


def test_logs_name_registered_tables_and_carry_the_scoring_version(logs) -> None:
    for family, path in logs.items():
        header = read_eval_log(str(path), header_only=True)
        (table,) = header.eval.metrics
        assert table.name == f"biasmonkey/{metric_table_name(FAMILIES[family])}"
        assert header.eval.task_version == family_module(family, "inspect_task").SCORING_VERSION >= 1


def test_entry_point_registers_the_tables_and_scorers_at_import() -> None:
    """Importing the entry point in a fresh process is enough to resolve every name a log keeps."""
    names = [f"metric:biasmonkey/{f}_metrics" for f in FAMILIES]
    names += [f"scorer:{kind}{f.scorer}" for f in FAMILIES.values() for kind in ("biasmonkey/", "")]
    code = (
        "import sys, biasmonkey.harness_ext.inspect.registry\n"
        "from inspect_ai._util.registry import _registry\n"
        "print([n for n in sys.argv[1:] if n not in _registry])"
    )
    proc = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr
