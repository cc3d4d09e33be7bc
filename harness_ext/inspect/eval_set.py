"""Run an Inspect eval set described by a YAML file (see configs/inspect_response_bias.yaml).

The file's keys are arguments of `inspect_ai.eval_set`, passed unchanged, so the file reads as
the Python call it stands for; the command line may override the model, log dir and task args.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from biasmonkey.harness_ext.app.run_checks import check_output
from biasmonkey.tasks.text_files import read_utf8

# How errors name the plain types a YAML value can have.
PLAIN = {
    type(None): "null",
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "a mapping",
    list: "a list",
}
# Keys whose YAML forms are narrower than (or not read from) eval_set's annotations: `task_args` is
# merged with -T, and `model` also admits Model objects, which a YAML file cannot hold.
FORMS: dict[str, list[Any]] = {"task_args": [dict, type(None)], "model": [str, list, type(None)]}


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if (key := self.construct_object(key_node)) in seen:
                    raise yaml.constructor.ConstructorError(
                        problem=f"duplicate key `{key}`; keep one", problem_mark=key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`; an unreadable, non-UTF-8 or invalid file is an error naming it."""
    try:
        text = read_utf8(Path(path))
    except OSError as err:
        raise ValueError(f"{path}: cannot read the file ({err.strerror})") from None
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        line = f" at line {err.problem_mark.line + 1}" if err.problem_mark else ""
        raise ValueError(f"{path}: not valid YAML{line}: {err.problem}") from None
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML ({err})") from None


def yaml_forms(annotation: Any) -> list[Any] | None:
    """The forms a YAML value of an eval_set argument may take: plain types (float admits int) and
    literal values; None where the annotation also admits other objects (left to Inspect to check)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    forms: list[Any] = []
    for arg in typing.get_args(annotation) if union else (annotation,):
        origin = typing.get_origin(arg) or arg
        if origin is typing.Literal:
            forms += typing.get_args(arg)
        elif origin in (Mapping, Sequence):
            forms.append(dict if origin is Mapping else list)
        elif isinstance(origin, type) and origin in PLAIN:
            forms.append(origin)
        else:
            return None
    return forms


def fits(value: Any, forms: list[Any]) -> bool:
    """Whether a YAML value takes one of `forms` (bool is not taken for int)."""
    kind = type(value)
    return any(
        kind is form or (form is float and kind is int)
        if isinstance(form, type)
        else (kind, value) == (type(form), form)
        for form in forms
    )


def check_types(path: Path, config: dict[str, Any], parameters: Mapping[str, inspect.Parameter]) -> None:
    """Each value must be of a type eval_set takes for its key; `tasks` must be task names."""
    tasks = config["tasks"]
    if bad := [task for task in (tasks if isinstance(tasks, list) else [tasks]) if not isinstance(task, str)]:
        raise ValueError(f"{path}: `tasks` must list task names like biasmonkey/acquiescence, not {bad[0]!r}")
    for key, value in config.items():
        forms = FORMS.get(key) or yaml_forms(parameters[key].annotation)
        if forms is not None and not fits(value, forms):
            expected = " or ".join(PLAIN[form] if isinstance(form, type) else repr(form) for form in forms)
            raise ValueError(f"{path}: `{key}` must be {expected}, not {value!r}")
    if isinstance(config.get("limit"), int) and config["limit"] < 1:  # Inspect reads -1 as "all but the last"
        raise ValueError(f"{path}: `limit` must be at least 1")


def load_eval_set_config(path: Path) -> dict[str, Any]:
    """The eval_set arguments in a config file; unknown keys and badly typed values are errors naming them."""
    from inspect_ai import eval_set

    config = read_yaml(path)
    if not isinstance(config, dict) or not config.get("tasks"):
        raise ValueError(f"{path}: expected a mapping with a `tasks` list")
    parameters = inspect.signature(eval_set).parameters
    known = {name for name, parameter in parameters.items() if parameter.kind is not parameter.VAR_KEYWORD}
    if unknown := sorted(set(config) - known, key=str):
        raise ValueError(
            f"{path}: unknown key(s) {', '.join(map(str, unknown))} (keys are inspect_ai.eval_set arguments)"
        )
    check_types(path, config, parameters)
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
    if config.get("log_dir") and "://" not in config["log_dir"]:  # a local folder, not s3://...
        check_output(Path(config["log_dir"]), "--log-dir" if log_dir else f"{path}: `log_dir`")
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
