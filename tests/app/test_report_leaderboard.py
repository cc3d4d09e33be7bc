"""The report's leaderboard exports against the formats' own code: lm-eval's results file (compared with
the file lm-eval writes in the same test run, and read with lm-eval's readers and the `datasets` json
loader), the Hub's `.eval_results` entries (huggingface_hub's parser) and the shipped Benchmark
`configs/hub/eval.yaml` (Inspect's `eval.yaml` task model)."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_lm_eval_e2e import run_lm_eval
from test_report_e2e import inspect_run
from tiny_model import build_tiny_model

from biasmonkey.harness_ext.app.cli import main
from biasmonkey.harness_ext.app.report import build_tables, discover
from biasmonkey.harness_ext.app.report.hub import (
    HUB_METRIC,
    PLACEHOLDER_DATASET,
    eval_yaml,
    eval_yaml_text,
    hub_tasks,
)
from biasmonkey.harness_ext.app.report.leaderboard import write_leaderboard
from biasmonkey.tasks.families import FAMILIES

REPO = Path(__file__).resolve().parents[2]
LM_TASKS = [
    "biasmonkey_acquiescence",
    "biasmonkey_acquiescence_key_typo",
    "biasmonkey_yesno_comps",
    "biasmonkey_cognitive_hindsight_bias",
]
INSPECT_TASKS = ["biasmonkey/acquiescence", "biasmonkey/yesno_comps"]
LIMIT = 3
HUB = "someone/biasmonkey-bench"
# lm-eval's results file name: results_<datetime.now().isoformat() with ":" -> "-">.json
LM_EVAL_NAME = re.compile(r"^results_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(\.\d{6})?\.json$")


@pytest.fixture(scope="module")
def runs(
    tiny_model: Path, data_dir_with_cognitive_fixture: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """alpha: the tiny model through the stock lm_eval CLI; beta (seed 1) through Inspect; the report over both."""
    root = tmp_path_factory.mktemp("leaderboard")
    data = data_dir_with_cognitive_fixture
    env_patch = pytest.MonkeyPatch()
    env_patch.setenv("BIASMONKEY_DATA_DIR", str(data))
    try:
        metadata = json.dumps({"perturbation_seeds": [1, 2]})
        lm_eval_args = ("--limit", str(LIMIT), "--metadata", metadata)
        run_lm_eval(tiny_model, root / "lm_eval", ",".join(LM_TASKS), *lm_eval_args, cwd=root)
        beta = build_tiny_model(root / "beta", seed=1)
        inspect_run(beta, INSPECT_TASKS, root / "inspect", LIMIT)
    finally:
        env_patch.undo()
    out = root / "report"
    args = [str(root / "lm_eval"), str(root / "inspect"), "--out", str(out)]
    assert main(["report", *args, "--name", f"{tiny_model}=alpha", "--name", "beta=beta", "--hub-dataset", HUB]) == 0
    return {"root": root, "lm_eval": root / "lm_eval", "inspect": root / "inspect", "report": out, "beta": beta}


def lm_eval_file(runs: dict[str, Path]) -> Path:
    (path,) = runs["lm_eval"].rglob("results_*.json")
    return path


def exported_file(runs: dict[str, Path], model: str) -> Path:
    (path,) = (runs["report"] / "leaderboard" / model).glob("results_*.json")
    return path


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # strict JSON is not needed to read lm-eval's own file (it writes NaN)


def as_number(value: Any) -> float:
    return math.nan if value == "N/A" else float(value)


# ---------------------------------------------------------------------------- lm-eval results file


def test_file_name_and_discovery_as_lm_eval(runs: dict[str, Path]) -> None:
    from lm_eval.utils import get_file_datetime, get_latest_filename, get_results_filenames

    theirs, ours = lm_eval_file(runs), exported_file(runs, "alpha")
    assert LM_EVAL_NAME.match(theirs.name) and LM_EVAL_NAME.match(ours.name)
    files = [str(p) for p in (runs["report"] / "leaderboard" / "alpha").rglob("*") if p.is_file()]
    assert get_results_filenames(files) == [str(ours)]  # the .eval_results YAML files are not taken for results
    # the report ran after lm-eval: our file is the newest of the two by lm-eval's own ordering
    assert get_latest_filename([str(theirs), str(ours)]) == str(ours)
    assert get_file_datetime(ours.name) > get_file_datetime(theirs.name)


def test_top_level_keys_and_shapes_match_lm_evals_file(runs: dict[str, Path]) -> None:
    theirs, ours = load(lm_eval_file(runs)), load(exported_file(runs, "alpha"))
    assert list(ours) == list(theirs)  # same keys, same order (lm-eval 0.4.13; tokenizer keys for an hf model)
    for key, value in theirs.items():
        if value is not None:
            assert isinstance(ours[key], type(value)), key
    assert isinstance(ours["date"], float) and isinstance(ours["total_evaluation_time_seconds"], str)
    assert set(ours["config"]) == set(theirs["config"]) | {"biasmonkey"}
    assert ours["model_name"] == theirs["model_name"]
    assert ours["model_name_sanitized"] == theirs["model_name_sanitized"]  # lm-eval's sanitisation
    assert ours["date"] == theirs["date"] and ours["git_hash"] == theirs["git_hash"]
    for task in LM_TASKS:
        mine, real = ours["results"][task], theirs["results"][task]
        assert set(real) <= set(mine), set(real) - set(mine)
        assert ours["configs"][task] == theirs["configs"][task]
        assert ours["versions"][task] == theirs["versions"][task] and ours["n-shot"][task] == theirs["n-shot"][task]
        assert ours["n-samples"][task] == theirs["n-samples"][task]
        assert ours["higher_is_better"][task].items() >= theirs["higher_is_better"][task].items()
        assert ours["task_hashes"][task] == theirs["task_hashes"][task]
        for key in mine:
            assert not isinstance(mine[key], float) or math.isfinite(mine[key])  # NaN is written as "N/A"
            if key.endswith("_stderr,none"):
                assert mine[key] == "N/A" or isinstance(mine[key], float), key
        for key, value in real.items():  # every number lm-eval printed, recomputed from the records
            if "," in key and isinstance(value, (int, float)) and not math.isnan(value):
                assert as_number(mine[key]) == pytest.approx(value, rel=1e-9, abs=1e-12), (task, key)
                assert type(mine[key]) is type(value), (task, key)
            elif "," in key:  # lm-eval's NaN or "N/A"
                assert mine[key] == "N/A", (task, key)
    # per-draw metrics came from the run's options (perturbation_seeds=[1, 2])
    assert "delta_s2,none" in ours["results"]["biasmonkey_acquiescence_key_typo"]


def test_lm_evals_readers_load_it(runs: dict[str, Path]) -> None:
    from datasets import load_dataset
    from lm_eval.utils import make_table

    path = exported_file(runs, "alpha")
    ours = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard JSON {c}"))
    table = make_table(ours)  # the CLI's renderer: needs results + versions, stderr a float or "N/A"
    for task in [*LM_TASKS, "biasmonkey_human_likeness"]:
        assert task in table
    # what EvaluationTracker.recreate_metadata_card does with the newest results file of a model
    loaded = load_dataset("json", data_files=str(path), split="train")
    assert set(loaded["results"][0]) == set(ours["results"])
    assert (
        loaded["results"][0]["biasmonkey_acquiescence"]["delta,none"]
        == ours["results"]["biasmonkey_acquiescence"]["delta,none"]
    )


def test_report_only_additions(runs: dict[str, Path]) -> None:
    ours = load(exported_file(runs, "alpha"))
    rb = {
        (r["bias"], r["setting"]): r
        for r in json.loads((runs["report"] / "tables" / "response_bias.json").read_text())
        if r["model"] == "alpha"
    }
    entry = ours["results"]["biasmonkey_acquiescence"]
    assert entry["delta_p_holm,none"] == pytest.approx(rb["acquiescence", "bias"]["p_holm"])
    assert entry["abs_delta,none"] == pytest.approx(abs(entry["delta,none"]))
    assert ours["higher_is_better"]["biasmonkey_acquiescence"]["abs_delta"] is False
    assert ours["results"]["biasmonkey_yesno_comps"]["abs_bias,none"] == pytest.approx(
        abs(ours["results"]["biasmonkey_yesno_comps"]["bias,none"])
    )
    assert "score,none" in ours["results"]["biasmonkey_human_likeness"]
    sources = ours["config"]["biasmonkey"]["sources"]
    assert {t: s["harness"] for t, s in sources.items()} == dict.fromkeys(LM_TASKS, "lm-eval")
    assert ours["config"]["biasmonkey"]["hub_dataset"] == HUB


def test_a_model_run_through_inspect_only(runs: dict[str, Path]) -> None:
    theirs, ours = load(lm_eval_file(runs)), load(exported_file(runs, "beta"))
    tokenizer = {"tokenizer_pad_token", "tokenizer_eos_token", "tokenizer_bos_token", "eot_token_id", "max_length"}
    assert list(ours) == [k for k in theirs if k not in tokenizer]  # lm-eval writes those only for a tokenizer
    assert ours["model_name"] == str(runs["beta"]) and ours["model_source"] == ours["config"]["model"] == "hf"
    assert set(theirs["config"]) - {"model_num_parameters"} <= set(ours["config"])  # hf backend: model info
    assert ours["n-samples"]["biasmonkey_acquiescence"] == theirs["n-samples"]["biasmonkey_acquiescence"]
    config = ours["configs"]["biasmonkey_acquiescence"]
    assert config["metadata"]["inspect_task"] == "biasmonkey/acquiescence"
    assert [m["metric"] for m in config["metric_list"]] == [
        m["metric"] for m in theirs["configs"]["biasmonkey_acquiescence"]["metric_list"]
    ]
    assert set(theirs["results"]["biasmonkey_acquiescence"]) <= set(ours["results"]["biasmonkey_acquiescence"])
    assert re.fullmatch(r"[0-9a-f]{64}", ours["task_hashes"]["biasmonkey_acquiescence"])
    # the sum of the logs' run times (Inspect stamps start and end to the second: a quick run may take 0 s)
    from datetime import datetime

    from inspect_ai.log import read_eval_log

    headers = [read_eval_log(str(p), header_only=True) for p in sorted(runs["inspect"].rglob("*.eval"))]
    took = [datetime.fromisoformat(h.stats.completed_at) - datetime.fromisoformat(h.stats.started_at) for h in headers]
    assert headers and float(ours["total_evaluation_time_seconds"]) == sum(t.total_seconds() for t in took)


# ---------------------------------------------------------------------------- Hub


def entries(runs: dict[str, Path], model: str) -> dict[str, list[dict[str, Any]]]:
    folder = runs["report"] / "leaderboard" / model / ".eval_results"
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}


def test_eval_results_parse_with_huggingface_hub(runs: dict[str, Path]) -> None:
    from huggingface_hub import eval_result_entries_to_yaml, parse_eval_result_entries

    benchmark_ids = {t["id"] for t in yaml.safe_load((REPO / "configs" / "hub" / "eval.yaml").read_text())["tasks"]}
    for model in ("alpha", "beta"):
        results = load(exported_file(runs, model))["results"]
        found = entries(runs, model)
        assert set(found) == set(results) - {"biasmonkey_human_likeness"}
        for task, data in found.items():
            (entry,) = parse_eval_result_entries(data)
            assert eval_result_entries_to_yaml([entry]) == data  # nothing outside the format
            assert (entry.dataset_id, entry.task_id) == (HUB, task) and task in benchmark_ids
            assert entry.source_url == f"https://huggingface.co/datasets/{HUB}"  # the Benchmark's page
            suite = hub_tasks()[task][0]
            assert entry.value == pytest.approx(results[task][f"{HUB_METRIC[suite]},none"], abs=1e-6)
            assert entry.value >= 0 and entry.notes.startswith("lower = less biased")
            datetime.fromisoformat(entry.date.replace("Z", "+00:00"))
    (odd,) = entries(runs, "alpha")["biasmonkey_acquiescence_key_typo"]
    assert "as humans are" in odd["notes"] and "perturbation_seeds=(1, 2)" in odd["notes"]
    (bias,) = entries(runs, "beta")["biasmonkey_acquiescence"]
    assert "not more human-like" in bias["notes"] and "; inspect, mode=exact, top_logprobs=500" in bias["notes"]
    assert bias["notes"].endswith(f", n={LIMIT}")


def test_the_report_names_the_dataset(runs: dict[str, Path]) -> None:
    md = (runs["report"] / "report.md").read_text()
    assert f"`dataset.id`: `{HUB}`" in md and "lower = less biased" in md and PLACEHOLDER_DATASET not in md


def test_default_dataset_is_a_named_placeholder_and_old_files_go(runs: dict[str, Path], tmp_path: Path) -> None:
    models = discover([runs["inspect"]])
    tables = build_tables(models, baselines=False, topics=False)
    write_leaderboard(models, tables, tmp_path, now=datetime(2020, 1, 2, 3, 4, 5, 678901))
    written = write_leaderboard(models, tables, tmp_path, now=datetime(2021, 1, 2, 3, 4, 5))
    (results,) = (tmp_path / "beta").glob("results*.json")  # the earlier report's file is replaced
    assert results.name == "results_2021-01-02T03-04-05.json" and results in written
    for path in (tmp_path / "beta" / ".eval_results").glob("*.yaml"):
        assert yaml.safe_load(path.read_text())[0]["dataset"]["id"] == PLACEHOLDER_DATASET


def test_a_bad_hub_dataset_is_refused(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(runs["inspect"]), "--out", str(tmp_path), "--hub-dataset", "not-an-id"])
    assert exit_info.value.code == 2 and "OWNER/NAME" in capsys.readouterr().err


# ---------------------------------------------------------------------------- the Benchmark's eval.yaml


def test_shipped_eval_yaml_is_current_and_valid() -> None:
    shipped = (REPO / "configs" / "hub" / "eval.yaml").read_text()
    assert shipped == eval_yaml_text(), "regenerate it: see configs/hub/README.md"
    spec = yaml.safe_load(shipped)
    assert spec == eval_yaml()
    # The Hub's eval.yaml specification: name, description, evaluation_framework, tasks[].id (unique)
    assert {"name", "description", "evaluation_framework", "tasks"} <= set(spec)
    assert spec["evaluation_framework"] == "inspect-ai"  # an identifier of huggingface.js EVALUATION_FRAMEWORKS
    ids = [t["id"] for t in spec["tasks"]]
    exported = sum(len(set(f.tasks) - set(f.variants)) for f in FAMILIES.values())  # every task of every suite
    assert ids == list(hub_tasks()) and len(ids) == len(set(ids)) == exported
    assert "biasmonkey_acquiescence_reword" not in ids  # a variant outside the suite is never exported
    # inspect-ai tasks need field_spec, solvers and scorers; check them with Inspect's own eval.yaml model
    from inspect_ai._eval.task.hf import HFTask

    for task in spec["tasks"]:
        HFTask.model_validate(task)
