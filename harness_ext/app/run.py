"""`biasmonkey run`: a suite through the lm_eval CLI (with biasmonkey's backends), then the summary and the report.

lm-eval runs in a subprocess, through `python -m biasmonkey.harness_ext.lm_eval` (the stock lm_eval
command line with our model backends registered). Before it starts, this process builds the run's
requests as lm-eval will (`biasmonkey.harness_ext.app.plan`, no model) and prints one line: suite,
tasks, documents, requests, distinct prompts, backend. Options and data problems fail here, with
one clear message, before a model is loaded.

Resuming: every exact/generate-mode run keeps lm-eval's request cache (`--use_cache`) in
`<output>/cache/<backend>-<model hash>`; lm-eval's cache key is the request alone, so the path
carries the model's identity (model, dtype, backend). `--resume` continues an interrupted run from
it. Without `--resume` the cache of an earlier finished run of the same model is removed first; that
of a run that did not finish (no `COMPLETE_SUFFIX` file beside it) is refused, naming its finished
requests, unless `--fresh` discards it. Sampled answers (`mode=sample`) are never read back by
lm-eval, so a sample-mode run keeps no cache and cannot resume.

Beside each results file the run records digests of what its numbers depend on that lm-eval does not
record: the model's weights and the input files of the options that name one
(harness_ext/run_inputs.py), so that two runs of a model named alike are never read as one.

With `--backend server`, the run reads the server's prefix-cache counters (vLLM's Prometheus
`/metrics`) before its first lm-eval step and after its last, and summary.md closes with the hit
rate over the run (`engine_lines`), or says that the server does not expose it (llama.cpp).

Arguments after `--` go to the lm_eval command line unchanged, after biasmonkey's own (`--seed`,
`--gen_kwargs`, `--wandb_args`, …); a flag that biasmonkey sets itself is refused there, naming the
biasmonkey option to use instead (`run_checks.check_lm_eval_args`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.context_check import check_context
from biasmonkey.harness_ext.app.plan import (
    DOCUMENT_UNITS,
    OPTION_TYPES,
    add_selection_arguments,
    build_requests,
    include_dir,
    select_tasks,
    simple_counts,
    task_spec,
    tasks_dir,
)
from biasmonkey.harness_ext.app.run_checks import (
    DTYPES,
    LM_EVAL_FLAGS_SET_BY_RUN,
    batch_size,
    cache_entries,
    check_api_key_env,
    check_cache,
    check_device,
    check_lm_eval_args,
    check_model,
    check_output,
    device,
    env_name,
    non_negative_int,
    positive_int,
    positive_seconds,
    warn_unused_options,
)
from biasmonkey.harness_ext.app.run_lock import OutputLock, output_lock
from biasmonkey.harness_ext.lm_eval.parent_watch import PARENT_ENV, start_group_watch
from biasmonkey.harness_ext.run_inputs import default_input_key, digest_of, file_digest, record_inputs
from biasmonkey.harness_ext.truncation import record_truncation
from biasmonkey.tasks.families import FAMILIES
from biasmonkey.tasks.options import cli_metadata

__all__ = ["add_subcommand", "cache_path", "cmd_run", "lm_eval_command", "tasks_dir"]

# `--backend` → the lm-eval model it runs.
LM_EVAL_MODELS = {"hf": "biasmonkey-hf", "server": "biasmonkey-server", "stock-hf": "hf"}
BACKEND_NOTES = {
    "hf": "one forward per distinct prompt",
    "server": "one request per distinct prompt",
    "stock-hf": "lm-eval's own HF backend",
}
LAUNCHER = "biasmonkey.harness_ext.lm_eval"
OPTIONS_BY_FAMILY = {name: family.options_type for name, family in FAMILIES.items()}
# The lm-eval flags `run` sets itself (refused after `--`), as its help lists them.
SET_BY_RUN = [strings[0] for dest, (strings, _) in LM_EVAL_FLAGS_SET_BY_RUN.items() if dest != "help"]
# Set for the launcher: it then drops lm-eval's advice to apply the chat template (biasmonkey's raw
# prompt is the paper's protocol; --apply-chat-template is the documented alternative).
QUIET_ENV = "BIASMONKEY_RUN"
SERVER_FLAGS = (
    "base_url",
    "server_model",
    "tokenizer",
    "num_concurrent",
    "top_logprobs",
    "timeout",
    "max_retries",
    "api_key_env",
)
# The served backend reads the API key from this variable unless --api-key-env names another; the
# key itself never travels in model_args (lm-eval writes those into its results files).
DEFAULT_API_KEY_ENV = "BIASMONKEY_API_KEY"
# After SIGINT/SIGTERM, how long lm-eval gets to stop before it is killed.
STOP_GRACE_SECONDS = 10.0
# Beside a request cache (`<cache>.complete`): the run that filled it finished.
COMPLETE_SUFFIX = ".complete"


def model_args(args: argparse.Namespace, model_path: str | None) -> str:
    """lm-eval's --model_args, as JSON (so that a comma or `=` in a path or name survives)."""
    if args.backend == "server":
        values: dict[str, Any] = {"base_url": args.base_url, "model": args.server_model}
        optional = ("tokenizer", "num_concurrent", "top_logprobs", "timeout", "max_retries", "api_key_env")
        values.update({name: getattr(args, name) for name in optional if getattr(args, name) is not None})
    else:
        values = {"pretrained": model_path, "dtype": args.dtype}
    if getattr(args, "allow_truncation", False) and args.backend != "stock-hf":  # (stock hf always cuts)
        values["allow_truncation"] = True
    return json.dumps(values)


def _fingerprint(path: Path) -> list[tuple[str, int, int]]:
    """A local model folder's files (name, size, mtime): a model rewritten in place gets a new cache."""
    if path.is_file():
        stat = path.stat()
        return [(path.name, stat.st_size, stat.st_mtime_ns)]
    return sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in path.iterdir() if f.is_file())


def model_identity(args: argparse.Namespace, model_path: str | None) -> dict[str, Any]:
    """What lm-eval's answers depend on besides the request: backend, model (and its files), dtype."""
    identity: dict[str, Any] = {"backend": LM_EVAL_MODELS[args.backend]}
    if args.backend == "server":
        identity.update(
            base_url=args.base_url, model=args.server_model, tokenizer=args.tokenizer, top_logprobs=args.top_logprobs
        )
        # what the server says it serves (`run_suite` asks it once): another model behind the same URL
        # and name is another cache
        identity["served"] = getattr(args, "served_identity", None)
    else:
        local = Path(model_path or "")
        identity.update(model=str(local.resolve()) if local.exists() else model_path, dtype=args.dtype)
        if local.exists():
            identity["files"] = _fingerprint(local)
    return identity


def run_inputs(
    args: argparse.Namespace, model_path: str | None, metadata: dict[str, Any], families: Iterable[str] = ()
) -> dict[str, str]:
    """The digests recorded beside the run's results (run_inputs.py): the model's identity without the
    backend and dtype (settings of their own), each input file named by an option and, for the
    `families` run, each unpinned file one of their input-file options reads when not given
    (`Options.default_input`, as "<family>:<option>")."""
    identity = {k: v for k, v in model_identity(args, model_path).items() if k not in ("backend", "dtype")}
    inputs = {"weights": digest_of(identity)}
    for name in sorted({name for options in OPTION_TYPES for name in options.input_files}):
        if metadata.get(name):
            inputs[name] = file_digest(metadata[name])
    for family in sorted(set(families)):
        options = OPTIONS_BY_FAMILY[family]
        for name in options.input_files:
            if not metadata.get(name) and (path := options.default_input(name)) is not None:
                inputs[default_input_key(family, name)] = file_digest(path)
    return inputs


def cache_path(args: argparse.Namespace, model_path: str | None) -> Path:
    """`<output>/cache/<backend>-<model hash>` (lm-eval appends `_rank<N>.db`)."""
    digest = hashlib.sha256(json.dumps(model_identity(args, model_path), sort_keys=True).encode()).hexdigest()
    return args.output / "cache" / f"{LM_EVAL_MODELS[args.backend]}-{digest[:12]}"


def uses_cache(args: argparse.Namespace) -> bool:
    """lm-eval never reads sampled answers back from its cache: sample mode keeps none."""
    return not args.no_cache and args.mode != "sample"


@dataclass(frozen=True)
class Step:
    """One lm-eval invocation of a run: its tasks, output folder and options added to the run's."""

    tasks: str
    output: Path
    options: dict[str, Any] = field(default_factory=dict)


def lm_eval_steps(args: argparse.Namespace, tasks: list[Any], stamp: str) -> list[Step]:
    """One lm-eval run, or, where tasks are intermediate (the cognitive two-step protocol's free
    answers), the other tasks, then the intermediate ones into `<output>/steps/<stamp>`, then the
    follow-up run that reads them into the output folder."""
    spec = task_spec(args.suite, args.tasks)
    staged = [t for t in tasks if t.options is not None and t.options.intermediate()]
    if not staged:
        return [Step(spec, args.output)]
    rest = [t.name for t in tasks if t not in staged]
    first = args.output / "steps" / stamp
    follow = {k: v for t in staged for k, v in t.options.follow_up(str(first)).items()}
    names = ",".join(t.name for t in staged)
    return [Step(",".join(rest), args.output)] * bool(rest) + [Step(names, first), Step(names, args.output, follow)]


def results_folder_name(args: argparse.Namespace, model_path: str | None) -> str:
    """The folder of the run's lm-eval files, named after the model as the user gave it: the default
    model's name, a local folder's name, a hub id or served model with "/" as "__" (lm-eval's rule),
    not lm-eval's name built from the whole path ("__root__.cache__…")."""
    if args.backend == "server":
        given = args.server_model
    elif args.model is None:
        from biasmonkey.harness_ext.app.default_model import DEFAULT_MODEL_NAME

        given = DEFAULT_MODEL_NAME
    else:
        given = Path(args.model).name if Path(args.model).expanduser().exists() else args.model
    from biasmonkey.harness_ext.app.report.leaderboard import sanitize_model_name

    return sanitize_model_name(str(given or model_path)).strip("_.") or "model"


def lm_eval_command(
    args: argparse.Namespace, model_path: str | None, step: Step | None = None, metadata: dict[str, Any] | None = None
) -> list[str]:
    """The lm-eval command line of one step; `metadata`: the run's task options as `cmd_run` read
    them once from the flags (default: read them here)."""
    step = step or Step(task_spec(args.suite, args.tasks), args.output)
    metadata = cli_metadata(args, OPTION_TYPES) if metadata is None else metadata
    cmd = [sys.executable, "-m", LAUNCHER, "--model", LM_EVAL_MODELS[args.backend]]
    cmd += ["--model_args", model_args(args, model_path)]
    if args.backend != "server":
        cmd += ["--device", args.device, "--batch_size", str(args.batch_size)]
    cmd += [
        "--include_path",
        str(include_dir(args)),
        "--tasks",
        step.tasks,
        "--output_path",
        str(step.output / results_folder_name(args, model_path) / "results.json"),
        "--log_samples",
    ]
    # Always explicit (even "{}"): the command line shows every task option the run used.
    cmd += ["--metadata", json.dumps(metadata | step.options)]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.apply_chat_template:
        cmd += ["--apply_chat_template"]
    if uses_cache(args):
        cmd += ["--use_cache", str(cache_path(args, model_path))]
    # The user's lm-eval arguments (after `--`), last and in their order (checked by check_inputs).
    return cmd + list(getattr(args, "lm_eval_args", None) or [])


def check_backend_flags(args: argparse.Namespace) -> None:
    if args.backend == "server":
        if not (args.base_url and args.server_model):
            raise ValueError("--backend server needs --base-url URL and --server-model NAME (the served model)")
        if args.model:
            raise ValueError("--model is for the hf backends; the server's model is --server-model")
        import importlib.util

        if importlib.util.find_spec("biasmonkey.harness_ext.lm_eval.backends.served") is None:
            raise ValueError("the biasmonkey-server backend (harness_ext/lm_eval/backends/served.py) is not installed")
    else:
        given = [f"--{name.replace('_', '-')}" for name in SERVER_FLAGS if getattr(args, name) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: only with --backend server")
    if args.resume and getattr(args, "fresh", False):
        raise ValueError("--resume continues an earlier run, --fresh discards it: give one of them")
    if args.resume and args.no_cache:
        raise ValueError("--resume reads the request cache; drop --no-cache")
    if args.resume and args.mode == "sample":
        raise ValueError(
            "--resume: a sample-mode run cannot resume (lm-eval never reads sampled answers back from its cache)"
        )


def run_line(args: argparse.Namespace, tasks: list[Any], model_label: str, cache: Path | None) -> str:
    """The one line `run` prints before lm-eval starts (counts from the plan code, no tokenising)."""
    documents, requests, prompts = simple_counts(tasks)
    families = {t.family for t in tasks}
    unit = DOCUMENT_UNITS[next(iter(families))] if len(families) == 1 and None not in families else "documents"
    suite = f"tasks {args.tasks}" if args.tasks else f"{args.suite} suite ({task_spec(args.suite, None)})"
    cached = f"; {'resuming from' if args.resume else 'cache'} {cache}" if cache else ""
    forwarded = getattr(args, "lm_eval_args", None)
    passed = f"; lm-eval arguments {' '.join(forwarded)}" if forwarded else ""
    return (
        f"biasmonkey run: {suite}: {len(tasks)} task{'s' if len(tasks) != 1 else ''}, "
        f"{documents:,} {unit}, "
        f"{requests:,} requests, {prompts:,} distinct prompts; backend {LM_EVAL_MODELS[args.backend]} "
        f"({BACKEND_NOTES[args.backend]}) on {model_label}{cached}{passed}"
    )


def check_inputs(args: argparse.Namespace) -> None:
    """Everything about the run's inputs that can be known before a model loads."""
    check_lm_eval_args(args.lm_eval_args)
    check_backend_flags(args)
    check_output(args.output)
    if uses_cache(args):  # (lm-eval would stop on a file there, after the model loaded)
        check_output(args.output / "cache", "--output's request cache")
    if args.backend == "server":
        check_api_key_env(args.api_key_env)
        if args.tokenizer:
            check_model(args.tokenizer, "--tokenizer", weights=False)
    else:
        if args.model:
            check_model(args.model)
        check_device(args.device)


def complete_marker(cache: Path) -> Path:
    return cache.with_name(cache.name + COMPLETE_SUFFIX)


def check_earlier_cache(cache: Path, files: list[Path], fresh: bool) -> None:
    """Before a run without --resume removes the request cache of an earlier run of the same model:
    a folder in its place is refused, and so is the cache of a run that did not finish (its finished
    requests would be lost) unless `fresh`."""
    for db in files:
        if not db.is_file():
            raise ValueError(
                f"{db} is not a file, where the run's request cache goes: remove it, or choose another --output"
            )
    done = sum(cache_entries(db) for db in files)
    if done and not fresh and not complete_marker(cache).exists():
        raise ValueError(
            f"{files[0]} holds {done:,} finished requests of an earlier run of this model that did not finish: "
            "add --resume to continue it, or --fresh to discard them and start over"
        )


def resume_hint(cache: Path | None) -> str | None:
    """The advice after a failed or stopped run: only when the cache holds something to resume from."""
    if cache is None:
        return None
    db = Path(f"{cache}_rank0.db")
    done = cache_entries(db)
    if not done:
        return None
    return f"{done:,} distinct finished requests are kept in {db}: run the same command with --resume to continue"


def prefix_cache_counters(args: argparse.Namespace) -> dict[str, float] | None:
    """The server's prefix-cache counters now (`served.read_prefix_cache`: vLLM's `/metrics`, with the
    run's API key; None where the server exposes none, e.g. llama.cpp). Never raises."""
    from biasmonkey.harness_ext.lm_eval.backends.served import read_prefix_cache

    key = os.environ.get(args.api_key_env or DEFAULT_API_KEY_ENV)
    return read_prefix_cache(args.base_url, headers={"Authorization": f"Bearer {key}"} if key else None)


def engine_lines(base_url: str, before: dict[str, float] | None, after: dict[str, float] | None) -> list[str]:
    """summary.md's lines on the served engine: the prefix-cache hit rate over the run, from the
    server's counters read before and after it (in prompt tokens), or why there is none."""
    where = f"`{base_url.rstrip('/').removesuffix('/v1')}/metrics`"
    if before is None or after is None:
        return [
            f"Prefix-cache hit rate: not exposed by the server ({where} has no vLLM prefix-cache counters), "
            "so none is given."
        ]
    queries, hits = after["queries"] - before["queries"], after["hits"] - before["hits"]
    if queries < 0 or hits < 0:
        return [
            f"Prefix-cache hit rate: not measured, the server's counters at {where} went back during the run (a restart)."
        ]
    if queries == 0:
        return [
            f"Prefix-cache hit rate: n/a, no prompt tokens were looked up in the server's prefix cache during "
            f"the run ({where}; answers from the request cache, or only requests for prompt log-probabilities, "
            "which vLLM computes without its prefix cache)."
        ]
    return [
        f"Prefix-cache hit rate: {100 * hits / queries:.1f}% ({hits:,.0f} of the {queries:,.0f} prompt tokens "
        f"looked up during the run were in the server's prefix cache; the server's counters at {where}, so "
        "other clients' requests in the same time count too)."
    ]


def run_lm_eval_child(cmd: list[str], env: dict[str, str], lock: OutputLock | None = None) -> int:
    """Run lm-eval in its own process group. SIGINT and SIGTERM stop it and everything it started:
    the signal is passed on, and after a grace period the group is killed. A SIGKILL of this process
    kills lm-eval and everything it started too (`parent_watch`: the launcher, told this pid, dies
    with it, and the group's watchdog kills the group). lm-eval inherits the output folder's `lock`,
    which so stays held while it lives. Returns lm-eval's exit status, or 128 + the signal's number
    when this process was stopped (130 SIGINT, 143 SIGTERM)."""
    env = dict(env, **{PARENT_ENV: str(os.getpid())})
    keep = (lock.fd,) if lock else ()
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, pass_fds=keep)
    try:
        watchdog = start_group_watch(proc.pid)
    except OSError:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if lock:
        lock.note_child(proc.pid)
    received: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                code = proc.wait(timeout=STOP_GRACE_SECONDS if received else None)
                break
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        with contextlib.suppress(ProcessLookupError):  # anything lm-eval started and left behind
            os.killpg(proc.pid, signal.SIGKILL)
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # its end: it finds the group gone
        watchdog.wait()
    return 128 + received[0] if received else code


def cmd_run(args: argparse.Namespace) -> int:
    """`biasmonkey run`; the output folder's lock (`run_lock`) is released however the run ends."""
    with contextlib.ExitStack() as held:
        return run_suite(args, held)


def run_suite(args: argparse.Namespace, held: contextlib.ExitStack) -> int:
    from biasmonkey.harness_ext.app.report import write_report
    from biasmonkey.harness_ext.app.report.families import check_report_inputs
    from biasmonkey.harness_ext.app.summary import latest_outputs, write_summary

    check_inputs(args)
    select_tasks(args, args.output)
    metadata = cli_metadata(args, OPTION_TYPES)
    # The run's requests, as lm-eval will build them: bad options and missing data fail here, before lm-eval.
    tasks = build_requests(task_spec(args.suite, args.tasks), metadata, args.limit, include=include_dir(args))
    warn_unused_options(metadata, (t.family for t in tasks), OPTIONS_BY_FAMILY)
    check_report_inputs([t.name for t in tasks])  # the authors' results the report reads: damaged ones fail now
    model_path: str | None = None
    if args.backend != "server":
        if args.model:
            model_path = args.model
        else:
            from biasmonkey.harness_ext.app.default_model import ensure_default_model

            model_path = str(ensure_default_model())
    # Prompts longer than the model's context: an error now, or counted (--allow-truncation).
    fit = check_context(
        args, tasks, (args.tokenizer or args.server_model) if args.backend == "server" else model_path, metadata
    )
    # One run per output folder, from here on: a live run's folder is refused (a dead one's lock is free).
    lock = held.enter_context(output_lock(args.output))
    if args.backend == "server":
        from biasmonkey.harness_ext.lm_eval.backends.served import served_model_identity

        args.served_identity = served_model_identity(args.base_url, args.api_key_env)
    cache = cache_path(args, model_path) if uses_cache(args) else None
    cache_files = list(cache.parent.glob(f"{cache.name}_rank*.db")) if cache else []
    if args.resume and not cache_files:
        others = sorted(db.name for db in cache.parent.glob("*_rank*.db")) if cache else []
        found = f"; {cache.parent} holds the caches of other ones: {', '.join(others)}" if others else ""
        raise ValueError(
            f"--resume: no request cache at {cache}_rank0.db (the cache is per model, its files, dtype and backend"
            f"{found}); resume with the interrupted run's --model, --dtype and --backend, or run without --resume"
        )
    if args.resume:
        for db in cache_files:
            check_cache(db)
    elif cache:
        check_earlier_cache(cache, cache_files, getattr(args, "fresh", False))
    label = args.server_model if args.backend == "server" else Path(str(model_path)).name or str(model_path)
    print(run_line(args, tasks, label, cache) + fit.run_note(), flush=True)
    if cache and not args.resume:
        for stale in [*cache_files, complete_marker(cache)]:
            stale.unlink(missing_ok=True)

    env = dict(os.environ, **{QUIET_ENV: "1"})
    local = (args.tokenizer or args.server_model) if args.backend == "server" else model_path
    if local and Path(local).exists():  # a local model needs no hub; avoid minutes of network time-outs
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    steps = lm_eval_steps(args, tasks, time.strftime("%Y%m%dT%H%M%S"))
    earlier = set(args.output.rglob("samples_*.jsonl"))  # the run's own are those written after this
    earlier_results = set(args.output.rglob("results_*.json"))
    inputs = run_inputs(args, model_path, metadata, (t.family for t in tasks if t.family))
    counters = prefix_cache_counters(args) if args.backend == "server" else None
    for number, step in enumerate(steps, 1):
        if len(steps) > 1:
            print(f"biasmonkey run: lm-eval run {number} of {len(steps)}: {step.tasks} -> {step.output}", flush=True)
        code = run_lm_eval_child(lm_eval_command(args, model_path, step, metadata), env, lock)
        # The cut prompts stay beside the results (those of a failed step too), for every later reader.
        record_truncation(set(args.output.rglob("samples_*.jsonl")) - earlier, fit.cuts)
        record_inputs(set(args.output.rglob("results_*.json")) - earlier_results, inputs)
        if code != 0:
            stopped = {130: "stopped by SIGINT", 143: "stopped by SIGTERM"}.get(code)
            print(f"biasmonkey run: {stopped or f'lm_eval failed with exit code {code}'}", file=sys.stderr)
            if hint := resume_hint(cache):
                print(hint, file=sys.stderr)
            return code
    if cache:
        complete_marker(cache).touch()
    if latest_outputs(args.output):
        engine = engine_lines(args.base_url, counters, prefix_cache_counters(args)) if args.backend == "server" else []
        md, csv_path = write_summary(args.output, engine=engine)
        print(md.read_text())
        print(f"Summary written to {md} and {csv_path}")
    report = write_report([args.output], args.output / "report")
    print(f"Report written to {report} and {report.with_suffix('.html')}")
    return 0


def add_subcommand(subparsers: Any) -> None:
    """Register `run` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "run",
        help="run a suite with lm-eval, then write a summary and the report",
        description="Run a suite (or --tasks) with lm-eval through biasmonkey's backends, then write the summary "
        "and the report into --output.",
        epilog="lm-eval arguments: everything after -- goes to the lm_eval command line unchanged, after the "
        "arguments biasmonkey builds, e.g. biasmonkey run --limit 10 -- --seed 1,2,3,4 --gen_kwargs temperature=0 "
        "--wandb_args project=bias (lm-eval's flags: python -m lm_eval run --help; note that --seed after -- is "
        "lm-eval's seed, before it the yesno/cognitive run option). The lm-eval flags biasmonkey sets itself are "
        f"refused after --, with the biasmonkey option to use instead: {', '.join(SET_BY_RUN)}.",
    )
    add_selection_arguments(p)
    p.add_argument(
        "--backend",
        choices=list(LM_EVAL_MODELS),
        default="hf",
        help="hf (default): --model biasmonkey-hf, one forward per distinct prompt; server: --model "
        "biasmonkey-server, an OpenAI-compatible completions server; stock-hf: lm-eval's own --model hf",
    )
    p.add_argument("--model", help="HF model folder or hub id (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--batch-size", type=batch_size, default="16", help="an integer, auto or auto:N (default: 16)")
    p.add_argument("--device", type=device, default="cpu", help="cpu (default), cuda, cuda:N, mps or xpu")
    p.add_argument("--dtype", choices=DTYPES, default="float32", help="the model's weights (default: float32)")
    server = p.add_argument_group("--backend server")
    server.add_argument("--base-url", help="the server's OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1")
    server.add_argument("--server-model", help="the model name the server serves")
    server.add_argument(
        "--tokenizer", help="HF tokenizer folder or hub id of the served model (default: --server-model)"
    )
    server.add_argument("--num-concurrent", type=positive_int, help="concurrent requests (default: 4)")
    server.add_argument(
        "--top-logprobs",
        type=positive_int,
        help="top log-probabilities per request where the server cannot return given token ids (default: 20; "
        "spellings outside them get the imputed floor, counted as imputed_options/imputed_continuations)",
    )
    server.add_argument(
        "--timeout",
        type=positive_seconds,
        help="seconds to wait for one answer before retrying (default: the backend's, 120); a hanging server "
        "fails after timeout × (max retries + 1)",
    )
    server.add_argument(
        "--max-retries",
        type=non_negative_int,
        help="retries of a request that timed out, failed with 408/409/425/429/500/502/503/504 or answered malformed JSON (default: 3)",
    )
    server.add_argument(
        "--api-key-env",
        type=env_name,
        metavar="VARIABLE",
        help=f"the environment variable holding the server's API key, sent as a bearer token (default: "
        f"{DEFAULT_API_KEY_ENV}, when set); the key itself never goes into results, logs or reports",
    )
    p.add_argument("--output", type=Path, default=Path("results"), help="output folder (default: ./results)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same model, dtype and backend from its request cache",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start over, discarding the finished requests of an earlier run of the same model that did not finish "
        "(without it such a run is refused; add --resume to continue it instead)",
    )
    p.add_argument("--no-cache", action="store_true", help="keep no request cache (the run cannot be resumed)")
    p.add_argument(
        "--allow-truncation",
        action="store_true",
        help="run prompts longer than the model's context cut from the left (default: an error before the run); "
        "the run line and summary.md count them",
    )
    p.add_argument(
        "lm_eval_args",
        nargs="*",
        metavar="LM_EVAL_ARG",
        help="after --: arguments for the lm_eval command line, e.g. -- --seed 1,2,3,4 (see below)",
    )
    p.set_defaults(func=cmd_run)
