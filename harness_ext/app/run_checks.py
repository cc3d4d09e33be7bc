"""Checks of `biasmonkey run` / `plan` inputs, made before any model loads.

Each check raises `ValueError` naming the culprit and the fix (the CLI prints it and exits 2), or
is an argparse `type=` that does the same at parse time. What can only fail later (a server that
hangs, a model file that is corrupt) is reported by the backends.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("biasmonkey")

DTYPES = ("auto", "float32", "float16", "bfloat16", "float64")
DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?|xpu(:\d+)?)$")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------- argparse types


def _int_at_least(minimum: int, words: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be {words}")
        return value

    return parse


positive_int = _int_at_least(1, "at least 1")  # --limit, --num-concurrent, --top-logprobs
non_negative_int = _int_at_least(0, "0 or more")  # --max-retries


def positive_seconds(text: str) -> float:
    """Seconds > 0 (--timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive number of seconds")
    return value


def batch_size(text: str) -> str:
    """lm-eval's batch size: a positive integer, `auto` or `auto:N`."""
    if re.fullmatch(r"auto(:[1-9]\d*)?", text) or (text.isdigit() and int(text) >= 1):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: use a positive integer, auto, or auto:N")


def device(text: str) -> str:
    if DEVICE.match(text):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: use cpu, cuda, cuda:N, mps or xpu")


def env_name(text: str) -> str:
    if ENV_NAME.match(text):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not an environment variable name")


# ---------------------------------------------------------------------------- checks


def check_model(model: str, flag: str = "--model", weights: bool = True) -> None:
    """A local model folder must hold a parsing `config.json`, tokenizer files and whole weights
    (`model_checks`; `weights=False`: a tokenizer folder); anything else must look like a hub id that
    is cached or that the Hub answers for."""
    from biasmonkey.harness_ext.app.model_checks import check_hub_model, check_model_folder

    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"{flag} {model}: not a model folder (give the folder holding config.json)")
        if weights and not (path / "config.json").is_file():
            raise ValueError(f"{flag} {model}: no config.json in that folder; is it a Hugging Face model folder?")
        if not os.access(path, os.R_OK | os.X_OK):
            raise ValueError(f"{flag} {model}: the folder is not readable")
        check_model_folder(path, model, flag, weights)
        return
    if model.startswith(("/", ".", "~")) or not HUB_ID.match(model):
        raise ValueError(
            f"{flag} {model}: no such {'model' if weights else 'tokenizer'} folder (and not a hub id like org/name)"
        )
    check_hub_model(model, flag)


def device_count(kind: str) -> int:
    """How many devices of `kind` (cuda, mps or xpu) torch sees."""
    import torch

    if kind == "cuda":
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    if kind == "mps":
        return int(torch.backends.mps.is_available())
    if kind == "xpu" and hasattr(torch, "xpu") and torch.xpu.is_available():
        return torch.xpu.device_count()
    return 0


def check_device(name: str) -> None:
    """A device that torch cannot see is an error now, not after the model loads."""
    if name == "cpu":
        return
    kind, _, index = name.partition(":")
    count = device_count(kind)
    if int(index or 0) >= count:
        raise ValueError(f"--device {name}: torch sees {count} {kind.upper()} device(s); use --device cpu")


def check_output(output: Path, flag: str = "--output") -> None:
    """The output folder (option `flag`) must be a folder we can write into, or creatable (nothing is
    created here)."""
    if output.exists() and not output.is_dir():
        raise ValueError(f"{flag} {output}: a file is in the way; give a folder")
    existing = output.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{flag} {output}: {existing} is a file, not a folder; choose another folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {output}: {existing} is not writable; choose another folder")


def check_include_path(folders: Iterable[Path]) -> None:
    """Each --include-path must be a readable folder: lm-eval skips a missing one silently, so a typo
    would fall back to its built-in task of the same name."""
    for folder in folders:
        if not folder.exists():
            raise ValueError(f"--include-path {folder}: no such folder; give the folder of your lm-eval task files")
        if not folder.is_dir():
            raise ValueError(f"--include-path {folder}: not a folder; give the folder holding the task YAML files")
        if not os.access(folder, os.R_OK | os.X_OK):
            raise ValueError(f"--include-path {folder}: the folder is not readable")


def check_api_key_env(name: str | None) -> None:
    """An --api-key-env given explicitly must name a variable that is set (its value is never shown)."""
    if name and not os.environ.get(name):
        raise ValueError(f"--api-key-env {name}: the environment variable {name} is not set")


def unknown_tasks(spec: str, known: Sequence[str]) -> ValueError:
    """The error for a task spec lm-eval does not know, with the closest biasmonkey names."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in known] or names
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    return ValueError(
        f"--tasks: unknown task {', '.join(hints)}; `biasmonkey plan --tasks NAME` lists a task's requests, "
        "and the task names are the `task:` lines of the YAML files in `biasmonkey tasks-dir`"
    )


def warn_unused_options(
    given: Mapping[str, Any], families: Iterable[str | None], option_types: Mapping[str, type]
) -> list[str]:
    """Warn (and return the warnings) for each given run option that no chosen task's family reads."""
    chosen = sorted({f for f in families if f})
    warnings = []
    for name in given:
        readers = [family for family, cls in option_types.items() if name in {f.name for f in cls.option_fields()}]
        if not set(readers) & set(chosen):
            warnings.append(
                f"--{name.replace('_', '-')} applies to {', '.join(readers) or 'no'} tasks, not to the chosen "
                f"{', '.join(chosen) or 'non-biasmonkey'} tasks: ignored"
            )
    for message in warnings:
        log.warning("%s", message)
    return warnings


# ---------------------------------------------------------------------------- lm-eval arguments after --

# The lm-eval flags `biasmonkey run` sets itself (`run.lm_eval_command`), by lm-eval's name for them
# (its argparse dest): their option strings in lm-eval 0.4.13, and what to use instead.
LM_EVAL_FLAGS_SET_BY_RUN: dict[str, tuple[tuple[str, ...], str]] = {
    "model": (("--model", "-M"), "choose the lm-eval model with biasmonkey's --backend (hf, server, stock-hf)"),
    "model_args": (
        ("--model_args", "-a"),
        "use biasmonkey's --model and --dtype (hf backends), or --base-url, --server-model, --tokenizer, "
        "--num-concurrent, … (--backend server)",
    ),
    "tasks": (("--tasks", "-t"), "use biasmonkey's --suite or --tasks"),
    "output_path": (("--output_path", "-o"), "use biasmonkey's --output"),
    "log_samples": (("--log_samples", "-s"), "biasmonkey always logs the samples (the summary and report read them)"),
    "use_cache": (
        ("--use_cache", "-c"),
        "biasmonkey keeps lm-eval's request cache in <output>/cache; use --no-cache or --resume",
    ),
    "include_path": (("--include_path",), "biasmonkey always includes its own task folder (`biasmonkey tasks-dir`)"),
    "limit": (("--limit", "-L"), "use biasmonkey's --limit"),
    "batch_size": (("--batch_size", "-b"), "use biasmonkey's --batch-size"),
    "device": (("--device",), "use biasmonkey's --device"),
    "metadata": (
        ("--metadata",),
        "use biasmonkey's run options (--mode, --template, …; `biasmonkey tasks list` shows them)",
    ),
    "apply_chat_template": (("--apply_chat_template",), "use biasmonkey's --apply-chat-template"),
    "config": (
        ("--config", "-C"),
        "a config file could set what biasmonkey sets; give lm-eval's other flags one by one after --",
    ),
    "help": (("--help", "-h"), "lm-eval's own flags: python -m lm_eval run --help"),
}
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _lm_eval_options() -> dict[str, tuple[str, bool]]:
    """lm-eval's `run` option strings → (dest, whether it takes a value), from lm-eval's own parser
    (so that abbreviations resolve as lm-eval resolves them); the table above where lm-eval's CLI
    cannot be read."""
    try:
        from lm_eval._cli import HarnessCLI

        parser = HarnessCLI()._subparsers.choices["run"]
        return {s: (a.dest, a.nargs != 0) for a in parser._actions for s in a.option_strings}
    except Exception:  # another lm-eval layout: the known flags only
        flags = {"log_samples", "help"}
        return {s: (d, d not in flags) for d, (strings, _) in LM_EVAL_FLAGS_SET_BY_RUN.items() for s in strings}


def _lm_eval_dests(token: str, options: Mapping[str, tuple[str, bool]]) -> list[str]:
    """The lm-eval options a command-line token sets, as lm-eval's argparse reads it: a long flag
    (`--flag` or `--flag=value`, or an unambiguous prefix of one), or a cluster of short flags
    (`-s`, `-sL5`, `-o=out`); ambiguous prefixes give every candidate."""
    if token.startswith("--"):
        flag = token.split("=", 1)[0]
        if flag in options:
            return [options[flag][0]]
        return sorted({d for s, (d, _) in options.items() if s.startswith("--") and s.startswith(flag)})
    dests = []
    for char in token[1:]:
        if char == "=" or f"-{char}" not in options:
            break
        dest, takes_value = options[f"-{char}"]
        dests.append(dest)
        if takes_value:  # the rest of the token is its value
            break
    return dests


def check_lm_eval_args(forwarded: Sequence[str]) -> list[str]:
    """The lm-eval arguments given after `--`: any lm-eval flag, except those `biasmonkey run` sets
    itself (an error naming the biasmonkey option to use instead)."""
    forwarded = list(forwarded)
    if forwarded and not forwarded[0].startswith("-"):
        raise ValueError(
            f"{forwarded[0]!r}: not a biasmonkey run option; lm-eval arguments go after -- and begin with a flag, "
            "e.g. biasmonkey run … -- --seed 1,2,3,4"
        )
    options = _lm_eval_options() if any(t.startswith("-") for t in forwarded) else {}
    for token in forwarded:
        if token == "--":  # lm-eval's own positional arguments follow
            break
        if not token.startswith("-") or token == "-" or _NUMBER.match(token):
            continue
        dests = _lm_eval_dests(token, options)
        for dest in dests:
            if dest in LM_EVAL_FLAGS_SET_BY_RUN:
                strings, advice = LM_EVAL_FLAGS_SET_BY_RUN[dest]
                reads = "reads it as" if len(dests) == 1 or not token.startswith("--") else "could read it as"
                read_as = "" if token.split("=", 1)[0] in strings else f" (lm-eval {reads} {strings[0]})"
                raise ValueError(f"lm-eval argument {token}{read_as} after --: biasmonkey run sets it itself; {advice}")
    return forwarded


# ---------------------------------------------------------------------------- the request cache


def cache_entries(db: Path) -> int:
    """The number of finished requests in one of lm-eval's cache files (0 if there is none)."""
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM unnamed").fetchone()[0])
    except sqlite3.Error:
        return 0


def invalid_cached_answer(value: Any) -> bool:
    """A cached log-likelihood no model gives: a loglikelihood answer is (log-likelihood, is_greedy), a
    rolling one a bare number; either is invalid when the number is not finite or above 0 (beyond
    `biasmonkey.metrics.top_logprobs.LOGPROB_TOLERANCE`). Generations (text) are never invalid here."""
    from biasmonkey.metrics.top_logprobs import logprob_problem

    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # text, or nothing this check knows
    return logprob_problem(value) is not None


def check_cache(db: Path) -> int:
    """Before resuming: the cache file must be a readable lm-eval cache. Entries that cannot be read
    back, and log-likelihoods no model gives (NaN, above 0: cached before answers were validated),
    are removed (they are recomputed) and counted; returns that count."""
    import pickle

    unreadable, invalid = [], []
    try:
        with sqlite3.connect(db) as conn:
            for key, value in conn.execute("SELECT key, value FROM unnamed").fetchall():
                try:
                    answer = pickle.loads(value)
                except Exception:
                    unreadable.append(key)
                    continue
                if invalid_cached_answer(answer):
                    invalid.append(key)
            conn.executemany("DELETE FROM unnamed WHERE key = ?", [(k,) for k in unreadable + invalid])
    except sqlite3.Error as err:
        raise ValueError(
            f"--resume: the request cache {db} is corrupt ({err}); delete it, or run without --resume to start over"
        ) from err
    if unreadable:
        log.warning("%d unreadable entries of %s skipped (they are recomputed)", len(unreadable), db)
    if invalid:
        log.warning(
            "%d cached answer(s) of %s with invalid log-probabilities (not finite, or above 0) dropped "
            "(they are asked for again)",
            len(invalid),
            db,
        )
    return len(unreadable) + len(invalid)
