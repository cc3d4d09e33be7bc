"""A real lm-eval run (tiny random model, --limit 2) of the response-bias group, a yes-no task and
an answer-position task logs none of lm-eval's false alarms about our declarations: no
"Higher_is_better values ... are not consistent" (a group's tasks declare each metric's direction
alike) and no "Metrics were not scored on the same number of documents" (every document logs every
metric that can skip it). The numbers behind the second are unchanged: the means over part of the
documents and their stderrs are lm-eval's own formulas over the same values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lm_eval.api.metrics import mean as lm_eval_mean
from lm_eval.api.metrics import mean_stderr as lm_eval_mean_stderr

pytestmark = pytest.mark.usefixtures("data_dir")
REPO = Path(__file__).resolve().parents[2]
TASKS = "biasmonkey,biasmonkey_yesno_comps,biasmonkey_answer_position_anatomy"
FALSE_ALARMS = ("Higher_is_better values", "not scored on the same number of documents")


@pytest.fixture(scope="module")
def run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, dict[str, Path]]:
    """The captured log (stdout and stderr), the results and each task's samples file."""
    out = tmp_path_factory.mktemp("lm-eval-warnings")
    cmd = [
        *(sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_model}"),
        *("--device", "cpu", "--batch_size", "8", "--include_path", str(REPO / "tasks"), "--tasks", TASKS),
        *("--limit", "2", "--output_path", str(out), "--log_samples"),
    ]
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    samples = {p.name.split("_20")[0].removeprefix("samples_"): p for p in out.rglob("samples_*.jsonl")}
    return proc.stdout + proc.stderr, results, samples


def test_no_false_alarms(run) -> None:
    log, results, _ = run
    assert "biasmonkey_acquiescence" in results["results"] and "biasmonkey_yesno_comps" in results["results"]
    for alarm in FALSE_ALARMS:
        assert alarm not in log, [line for line in log.splitlines() if alarm in line]


def test_group_tasks_declare_one_direction_per_metric(run) -> None:
    _, results, _ = run
    better = results["higher_is_better"]
    bias, perturbation = better["biasmonkey_acquiescence"], better["biasmonkey_acquiescence_key_typo"]
    assert bias["delta"] is perturbation["delta"] is None  # Δ is signed: no arrow on either kind of task
    assert bias == perturbation


def test_means_over_part_of_the_documents_keep_lm_evals_numbers(run) -> None:
    """p_yes_gold_yes (items whose answer is yes) and recall_A (questions whose answer is A): every
    document logs them (None where it has no value), and the mean and stderr are lm-eval's."""
    _, results, samples = run
    for task, names in {
        "biasmonkey_yesno_comps": ("p_yes_gold_yes", "p_yes_gold_no"),
        "biasmonkey_answer_position_anatomy": ("recall_A", "recall_B", "recall_C", "recall_D"),
    }.items():
        logged = [json.loads(line) for line in samples[task].read_text().splitlines()]
        reported = results["results"][task]
        for name in names:
            assert all(name in doc and f"{name}_stderr" in doc for doc in logged)
            values = [doc[name] for doc in logged if doc[name] is not None]
            if not values:
                continue
            assert reported[f"{name},none"] == pytest.approx(lm_eval_mean(values), rel=1e-12)
            if len(values) > 1:
                expected = lm_eval_mean_stderr(values)
                assert reported[f"{name}_stderr,none"] == pytest.approx(expected, rel=1e-9, abs=1e-15)
