"""Run an Inspect eval set described by a YAML file (see configs/inspect_response_bias.yaml).

The file's keys are arguments of `inspect_ai.eval_set`, passed unchanged, so the file reads as
the Python call it stands for; the command line may override the model, log dir and task args.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import yaml


def load_eval_set_config(path: Path) -> dict[str, Any]:
    """The eval_set arguments in a config file; unknown keys are an error naming them."""
    from inspect_ai import eval_set

    try:
        config = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(config, dict) or not config.get("tasks"):
        raise ValueError(f"{path}: expected a mapping with a `tasks` list")
    known = set(inspect.signature(eval_set).parameters)
    if unknown := sorted(set(config) - known):
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)} (keys are inspect_ai.eval_set arguments)")
    return config


def run_eval_set(
    path: Path, model: str | None, log_dir: str | None, task_args: dict[str, Any], limit: int | None = None
) -> bool:
    """Run the eval set; True when every task completed."""
    from inspect_ai import eval_set

    config = load_eval_set_config(path)
    overrides = {"model": model, "log_dir": log_dir, "limit": limit}
    config.update({key: value for key, value in overrides.items() if value is not None})
    config["task_args"] = {**(config.get("task_args") or {}), **task_args}
    if not config.get("model"):
        raise ValueError(f"{path}: no model; give --model (e.g. hf/HuggingFaceTB/SmolLM2-135M-Instruct)")
    success, _ = eval_set(**config)
    return success


def parse_task_args(pairs: list[str]) -> dict[str, Any]:
    """`-T key=value` pairs, values read as YAML (as `inspect eval -T` does)."""
    args = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"task argument {pair!r} is not key=value")
        args[key] = yaml.safe_load(value)
    return args
