"""Leaderboard exports per model: an lm-eval-style results JSON and Hugging Face `.eval_results/*.yaml`.

- `<model>/results.json` has lm-eval's shape: `results` {task: {"alias", "<metric>,none": value,
  "<metric>_stderr,none": …}}, `versions`, `n-samples` {task: {"original", "effective"}},
  `higher_is_better`, `config` (the model and the harness configuration found) — every value
  recomputed from the records, under the metric names the tasks report.
- `<model>/.eval_results/<task>.yaml` follows the Hub's documented format (a YAML list of
  entries: `dataset` {`id`, `task_id`}, `value`, optional `date`, `source`, `notes`; see
  https://huggingface.co/docs/hub/eval-results): one scalar per task id. The format has no
  field for a metric's direction, so `notes` states it. For the Hub to list a result on a
  leaderboard, `dataset.id` must name a dataset registered as a Benchmark; the ids here name
  where each suite's data comes from and are to be replaced by the registered one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from biasmonkey.harness_ext.report.inputs import ModelResults

DATASET_IDS = {
    "response_bias": "biasmonkey/response-bias",  # placeholder: the data live on GitHub (lindiatjuatja/BiasMonkey), no Hub Benchmark yet
    "yesno": "biasmonkey/yesno",  # placeholder: COMPS-YNQ / EWoK-YNQ have no Hub Benchmark yet
    "cognitive": "tum-nlp/cognitive-biases-in-llms",
}
NOTES = {
    "response_bias": "delta: mean change in answer share (percentage points); bias tasks: > 0 is the human-like "
    "direction (higher = more human-like), perturbation tasks: 0 is human-like (humans ignore typos)",
    "yesno": "bias: (#yes - #no)/N in [-1, 1]; 0 is unbiased, the sign gives the direction (lower |bias| is better)",
    "cognitive": "score: mean bias metric m in [-1, 1]; > 0 is the biased direction, 0 unbiased (lower is better)",
}
HEADLINE = {"response_bias": "delta", "yesno": "bias", "cognitive": "score"}
VERSION = 1.0


def _number(value: Any) -> Any:
    """JSON-safe: NaN (an undefined statistic) becomes lm-eval's "N/A"; numpy scalars become Python."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    return "N/A" if math.isnan(value) else float(value)


def _rows(tables: dict[str, pd.DataFrame], name: str, model: str) -> list[dict[str, Any]]:
    table = tables.get(name)
    return [] if table is None else table[table["model"] == model].to_dict("records")


def task_metrics(tables: dict[str, pd.DataFrame], model: str) -> dict[str, tuple[str, dict[str, Any], dict[str, bool], int]]:
    """{task: (suite, {metric: value}, {metric: higher_is_better}, n)} of one model, from the report's tables."""
    out: dict[str, tuple[str, dict[str, Any], dict[str, bool], int]] = {}
    for r in _rows(tables, "response_bias", model):
        task = "biasmonkey_" + (r["bias"] if r["setting"] == "bias" else f"{r['bias']}_{r['setting']}")
        is_bias = r["setting"] == "bias"
        values = {"delta": r["delta"], "delta_stderr": r["delta_stderr"], "delta_t": r["t"], "delta_p": r["p"],
                  "delta_p_holm": r["p_holm"], "delta_p_bh": r["p_bh"], "delta_ci_low": r["ci_low"],
                  "delta_ci_high": r["ci_high"], "n_pairs": r["n_pairs"], "uncertainty_q": r["uncertainty_q"],
                  "uncertainty_qp": r["uncertainty_qp"]}
        better = {"delta": is_bias, "delta_t": is_bias, "delta_p": not is_bias, "delta_p_holm": not is_bias, "delta_p_bh": not is_bias,
                  "delta_ci_low": is_bias, "delta_ci_high": is_bias, "n_pairs": True, "uncertainty_q": False, "uncertainty_qp": False}
        out[task] = ("response_bias", values, better, int(r["n_pairs"]))
    yesno: dict[str, dict[str, Any]] = {}
    for r in _rows(tables, "yesno", model):
        suffix = "" if r["correction"] == "base" else f"_{r['correction']}"
        yesno.setdefault("biasmonkey_" + r["task"], {"n": r["n"]}).update({f"bias{suffix}": r["bias"], f"accuracy{suffix}": r["accuracy"]})
    for task, values in yesno.items():
        out[task] = ("yesno", values, {k: k.startswith("accuracy") or k == "n" for k in values}, int(values["n"]))
    for r in _rows(tables, "cognitive", model):
        values = {"score": r["score"], "score_stderr": r["score_stderr"], "score_t": r["t"], "score_p": r["p"],
                  "score_p_holm": r["p_holm"], "score_p_bh": r["p_bh"], "n_tests": r["n_tests"],
                  "failure_rate": r["failures"] / r["n_tests"] if r["n_tests"] else math.nan,
                  "random_baseline": r["random_baseline"], "expected_score": r["expected_score"]}
        values = {k: v for k, v in values.items() if v is not None}
        out["biasmonkey_cognitive_" + r["bias"]] = ("cognitive", values, {k: k == "n_tests" for k in values}, int(r["n_tests"]))
    return out


def results_json(m: ModelResults, tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """One model's numbers in the shape of an lm-eval results file."""
    metrics = task_metrics(tables, m.name)
    results, n_samples, better = {}, {}, {}
    for task, (_, values, hib, n) in sorted(metrics.items()):
        entry: dict[str, Any] = {"alias": task}
        for key, value in values.items():
            if not key.endswith("_stderr"):
                entry[f"{key},none"] = _number(value)
                entry[f"{key}_stderr,none"] = _number(values.get(f"{key}_stderr", math.nan))
        results[task] = entry
        n_samples[task] = {"original": n, "effective": n}
        better[task] = {k: v for k, v in hib.items() if not k.endswith("_stderr")}
    scores = _rows(tables, "human_likeness", m.name)
    if scores:
        results["biasmonkey_human_likeness"] = {"alias": "biasmonkey_human_likeness", "score,none": _number(scores[0]["score"]), "score_stderr,none": "N/A"}
        better["biasmonkey_human_likeness"] = {"score": True}
    return {
        "results": results,
        "versions": {task: VERSION for task in results},
        "n-samples": n_samples,
        "higher_is_better": better,
        "config": {"model_name": m.model, "report_name": m.name, **{k: v for k, v in m.config.items() if _jsonable(v)}},
        "sources": {task: {"harness": out.harness, "path": str(out.path)} for task, out in sorted(m.sources.items())},
    }


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def eval_results_entries(m: ModelResults, tables: dict[str, pd.DataFrame]) -> dict[str, list[dict[str, Any]]]:
    """{task: [entry]} in the Hub's `.eval_results` format: one headline scalar per task id."""
    entries = {}
    for task, (suite, values, _, _) in sorted(task_metrics(tables, m.name).items()):
        value = values[HEADLINE[suite]]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        entries[task] = [{"dataset": {"id": DATASET_IDS[suite], "task_id": task}, "value": round(float(value), 6), "notes": NOTES[suite]}]
    return entries


def write_leaderboard(models: list[ModelResults], tables: dict[str, pd.DataFrame], out_dir: Path) -> list[Path]:
    """Write `<out_dir>/<model>/results.json` and `<out_dir>/<model>/.eval_results/<task>.yaml`."""
    written = []
    for m in models:
        folder = out_dir / m.name
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "results.json"
        path.write_text(json.dumps(results_json(m, tables), indent=2))
        written.append(path)
        for task, entry in eval_results_entries(m, tables).items():
            yaml_path = folder / ".eval_results" / f"{task}.yaml"
            yaml_path.parent.mkdir(exist_ok=True)
            yaml_path.write_text(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True))
            written.append(yaml_path)
    return written
