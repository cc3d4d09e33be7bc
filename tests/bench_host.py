"""The host's share of a `--model biasmonkey-hf` call (not a test): the work a GPU cannot hide.

    python tests/bench_host.py --bundle gpu_bundle [--suites ...] [--rounds 6] [--out bench_out/host.json]

It takes the requests that `bench_gpu.py build` records (the bundle) and runs them on CPU. The
tokens are renumbered densely (the same prefix tree) and scored by a random two-layer Llama over
that small vocabulary, so that the model's own time is small; it is timed and subtracted. Each
request's key (what lm-eval's request cache hashes) is its token ids as text, about as long as the
prompt. Per suite, `--rounds` interleaved rounds run four variants:

- `shipped`: the code as shipped, without lm-eval's request cache (as `bench_gpu.py` calls it);
- `collector running`: the same with Python's cyclic garbage collector left running
  (`_collector_paused` replaced by a no-op);
- `request cache`: with lm-eval's request cache (`--use_cache`, which `biasmonkey run` always
  passes: its CachingLM over a fresh SqliteDict), each forward's answers written with one commit
  (request_cache.py);
- `cache, commit per request`: the same, each answer through lm-eval's `add_partial`, which
  commits and waits for the disk every time (as before request_cache.py).

With `--baseline CHECKOUT` (another checkout of this repository, e.g. `git worktree add /tmp/base
HEAD~3`) the same rounds also run that checkout's `biasmonkey-hf` (its hf_prefix.py,
request_cache.py, score_tally.py and prompt_trie.py; every other module is this checkout's), `shipped` and `request cache`,
interleaved with this one's: `baseline shipped`, `baseline request cache`.

With `--lm-eval-tasks` it also runs those lm-eval tasks (options in `--lm-eval-metadata`) as whole
lm-eval runs with lm-eval's request cache, `--rounds` times, interleaved over `--run-variants`:
`shipped` (biasmonkey-hf), `cache as lm-eval leaves it` (biasmonkey-hf with a commit per answer
and lm-eval's tokenising one request at a time) and `stock hf` (lm-eval's own backend). It
reports the run's time before CachingLM's `loglikelihood` (`before_the_model_s`: building the
tasks and their requests) and the phases of that call: its lookups before the model, the model's
`loglikelihood` (tokenising and the call), its writing of every answer again after; the rest of
the run after the model (`after_the_model_s`: scoring, aggregating, the results); the whole run
(`run_s`); and the same run resumed (`resumed_s`: every answer read from the cache). The model is
a random one of `--shape` on `--device` in `--dtype` (default: the tiny one on CPU); the data come
from $BIASMONKEY_DATA_DIR, else from the bundle's `data` folder (`bench_gpu.py build` copies the
few-shot yes-no and response-bias files there), so that on a GPU machine:

    python tests/bench_host.py --bundle gpu_bundle --suites --rounds 2 --shape 1.7b --device cuda \
        --dtype bfloat16 --run-variants shipped "stock hf" \
        --lm-eval-tasks biasmonkey_yesno_comps_fewshot biasmonkey_yesno_babi_fewshot

For each suite it reports the min and mean of:

- `upfront_s`: from the call to its first forward (grouping, prefix tree, plan): on a GPU the
  device is idle all along;
- `host_s`: the whole call less its forwards;
- `full_collections` and `collector_s`: the collector's full (generation 2) collections during the
  call, each scanning every object of the process, and the seconds they took (the mean per call).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import lm_eval.evaluator
import torch
from bench_gpu import GPU_SUITES, SHAPES, Requests, baseline_class, build_model, load_bundle
from lm_eval import simple_evaluate
from lm_eval.api.model import CacheHook, CachingLM, TemplateLM
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager
from transformers import AutoTokenizer

import biasmonkey.harness_ext.lm_eval.backends.hf_prefix as hf_prefix
from biasmonkey.harness_ext.lm_eval.__main__ import freeze_before_evaluating
from biasmonkey.tasks.fetch import DATA_DIR_ENV

VARIANTS = ("shipped", "collector running", "request cache", "cache, commit per request")


def renumbered(requests: Requests) -> tuple[Requests, int]:
    """The requests with their tokens numbered 0..V-1 in order of first use, and V; each keyed by
    its token ids as text. Requests that share a context list still do (as lm-eval's tokenising
    with batch_encode.py gives them), so that grouping them costs what it costs in a run."""
    ids: dict[int, int] = {}
    lists: dict[int, list[int]] = {}  # id of a bundle context -> its renumbered list

    def context_of(context: list[int]) -> list[int]:
        if id(context) not in lists:
            lists[id(context)] = [ids.setdefault(t, len(ids)) for t in context]
        return lists[id(context)]

    out = [
        (
            (" ".join(map(str, context)), " ".join(map(str, cont))),
            context_of(context),
            [ids.setdefault(t, len(ids)) for t in cont],
        )
        for _, context, cont in requests
    ]
    return out, len(ids)


def commit_per_request(hook: CacheHook, attr: str, entries: list[tuple[Any, Any]]) -> None:
    for arguments, answer in entries:
        hook.add_partial(attr, arguments, answer)


class Clock:
    """One call's forwards, its first forward, and the collector's full collections."""

    def __init__(self, lm: hf_prefix.PrefixReuseHFLM) -> None:
        self.model_s = self.collector_s = 0.0
        self.first: float | None = None
        self.collections = 0
        self._started = 0.0
        forward, run_rows = lm._forward, lm._run_rows

        def timed_forward(**kwargs: Any) -> torch.Tensor:
            start = time.perf_counter()
            out = forward(**kwargs)
            self.model_s += time.perf_counter() - start
            return out

        def first_forward(*args: Any, **kwargs: Any) -> Any:
            if self.first is None:
                self.first = time.perf_counter()
            return run_rows(*args, **kwargs)

        lm._forward, lm._run_rows = timed_forward, first_forward

    def collector(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.collections += 1
            self.collector_s += time.perf_counter() - self._started


def one_call(lm: hf_prefix.PrefixReuseHFLM, requests: Requests, variant: str, folder: str) -> dict[str, float]:
    clock = Clock(lm)
    paused, cache_answers = hf_prefix._collector_paused, hf_prefix.cache_answers
    if variant == "collector running":
        hf_prefix._collector_paused = contextlib.nullcontext
    caching = CachingLM(lm, tempfile.mktemp(suffix=".db", dir=folder)) if "cache" in variant else None
    if variant == "cache, commit per request":  # as lm-eval leaves its cache: a stack kept per statement too
        hf_prefix.cache_answers = commit_per_request
        caching.dbdict.conn._outer_stack = True
    gc.callbacks.append(clock.collector)
    try:
        start = time.perf_counter()
        lm._loglikelihood_tokens(requests, disable_tqdm=True)
        total = time.perf_counter() - start
    finally:
        gc.callbacks.remove(clock.collector)
        hf_prefix._collector_paused, hf_prefix.cache_answers = paused, cache_answers
        del lm._forward, lm._run_rows
        if caching is not None:
            caching.dbdict.close()
            lm.set_cache_hook(CacheHook(None))
    return {
        "call_s": total,
        "upfront_s": clock.first - start,
        "host_s": total - clock.model_s,
        "full_collections": clock.collections,
        "collector_s": clock.collector_s,
    }


def summary(calls: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("upfront_s", "host_s", "call_s"):
        values = [c[name] for c in calls]
        out[name] = {"min": round(min(values), 4), "mean": round(statistics.mean(values), 4)}
    out["full_collections"] = sum(c["full_collections"] for c in calls)
    out["collector_s_per_call"] = round(statistics.mean(c["collector_s"] for c in calls), 4)
    return out


class CacheAsLeft(hf_prefix.PrefixReuseHFLM):
    """`biasmonkey-hf` with lm-eval's request cache as CachingLM leaves it (before request_cache.py)."""

    set_cache_hook = TemplateLM.set_cache_hook
    loglikelihood = TemplateLM.loglikelihood


RUN_VARIANTS = {  # a whole lm-eval run's model class
    "shipped": hf_prefix.PrefixReuseHFLM,
    "cache as lm-eval leaves it": CacheAsLeft,
    "stock hf": HFLM,  # lm-eval's own backend
}


def whole_runs(
    tasks: list[str], metadata: dict[str, Any], model: torch.nn.Module, tokenizer: Any, args: argparse.Namespace
) -> dict[str, Any]:
    """Seconds in the phases of whole lm-eval runs over `tasks` with the request cache, per variant
    (`args.run_variants`), fastest of `args.rounds` interleaved."""
    manager = TaskManager(include_path=str(Path(__file__).resolve().parents[1] / "tasks"), metadata=metadata)
    marks: dict[str, float] = {}
    getattr_of_caching = CachingLM.__getattr__

    def timed_getattr(self: CachingLM, attr: str) -> Any:
        method = getattr_of_caching(self, attr)
        if attr != "loglikelihood":
            return method

        def phases(requests: list[Any]) -> Any:
            marks["start"] = time.perf_counter()
            out = method(requests)
            marks["end"] = time.perf_counter()
            return out

        return phases

    def evaluate(cls: type, cache: str) -> None:
        """One run, its start and end in `marks` ("run", "returned"); biasmonkey-hf's as its launcher
        runs lm-eval (the collector leaves alone what exists when lm-eval starts evaluating)."""
        lm = cls(pretrained=model, tokenizer=tokenizer, batch_size=args.batch)
        stock_evaluate = lm_eval.evaluator.evaluate
        if cls is hf_prefix.PrefixReuseHFLM:
            freeze_before_evaluating()
        inner = lm.loglikelihood

        def model_phase(requests: list[Any], *a: Any, **k: Any) -> Any:
            marks["model"] = time.perf_counter()
            out = inner(requests, *a, **k)
            marks["written"] = time.perf_counter()
            return out

        lm.loglikelihood = model_phase
        marks["run"] = time.perf_counter()
        try:
            simple_evaluate(
                model=lm, tasks=tasks, task_manager=manager, use_cache=cache, verbosity="ERROR", metadata=metadata
            )
        finally:
            lm_eval.evaluator.evaluate = stock_evaluate
            gc.unfreeze()
        marks["returned"] = time.perf_counter()

    best: dict[str, dict[str, float]] = {}
    CachingLM.__getattr__ = timed_getattr
    with tempfile.TemporaryDirectory() as folder:
        try:
            for _ in range(args.rounds):
                for variant in args.run_variants:
                    cls, cache = RUN_VARIANTS[variant], tempfile.mktemp(dir=folder)
                    cache_answers = hf_prefix.cache_answers
                    if cls is CacheAsLeft:
                        hf_prefix.cache_answers = commit_per_request
                    try:
                        evaluate(cls, cache)
                        phase = {
                            "run_s": marks["returned"] - marks["run"],
                            "before_the_model_s": marks["start"] - marks["run"],
                            "lookups_before_s": marks["model"] - marks["start"],
                            "model_loglikelihood_s": marks["written"] - marks["model"],
                            "writing_again_after_s": marks["end"] - marks["written"],
                            "total_s": marks["end"] - marks["start"],
                        }
                        phase["after_the_model_s"] = marks["returned"] - marks["end"]
                        # the same run resumed: every answer from the cache, the model not called
                        evaluate(cls, cache)
                        phase["resumed_s"] = marks["end"] - marks["start"]
                    finally:
                        hf_prefix.cache_answers = cache_answers
                    kept = best.setdefault(variant, phase)
                    if phase["run_s"] < kept["run_s"]:
                        best[variant] = phase
        finally:
            CachingLM.__getattr__ = getattr_of_caching
    for variant, phase in best.items():
        print(f"lm-eval run with the request cache, {variant}: " + ", ".join(f"{k} {v:.2f}" for k, v in phase.items()))
    return {"tasks": tasks, **{v: {k: round(x, 3) for k, x in p.items()} for v, p in best.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, required=True, help="a folder written by bench_gpu.py build")
    parser.add_argument("--suites", nargs="*", default=GPU_SUITES, choices=GPU_SUITES, help="none: whole runs only")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--pack-rows", default="true", help="as on a GPU (auto packs on accelerators only)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lm-eval-tasks", nargs="+", default=[], help="also run these tasks with the request cache")
    parser.add_argument(
        "--lm-eval-metadata", type=json.loads, default={}, help='their options, e.g. \'{"mode": "exact"}\''
    )
    parser.add_argument("--run-variants", nargs="+", default=list(RUN_VARIANTS)[:2], choices=list(RUN_VARIANTS))
    parser.add_argument("--shape", default="tiny", choices=list(SHAPES), help="the whole runs' model")
    parser.add_argument("--device", default="cpu", help="the whole runs' device")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="the whole runs' dtype")
    parser.add_argument("--baseline", type=Path, help="another checkout: its biasmonkey-hf, interleaved")
    parser.add_argument("--out", type=Path, default=Path("bench_out") / "host.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    suites = load_bundle(args.bundle)
    tokenizer = AutoTokenizer.from_pretrained(args.bundle / "tokenizer")
    report: dict[str, Any] = {"rounds": args.rounds, "batch": args.batch, "pack_rows": args.pack_rows, "suites": {}}
    for suite in args.suites:
        requests, vocabulary = renumbered(suites[suite])
        lm = hf_prefix.PrefixReuseHFLM(
            pretrained=build_model("tiny", torch.float32, "cpu", vocabulary),
            tokenizer=tokenizer,
            batch_size=args.batch,
            pack_rows=args.pack_rows,
        )
        lm._loglikelihood_tokens(requests, disable_tqdm=True)  # warm-up
        variants = [(variant, lm, variant) for variant in VARIANTS]
        if args.baseline:
            base = baseline_class(args.baseline)(
                pretrained=lm.model, tokenizer=tokenizer, batch_size=args.batch, pack_rows=args.pack_rows
            )
            base._loglikelihood_tokens(requests, disable_tqdm=True)
            variants += [(f"baseline {variant}", base, variant) for variant in ("shipped", "request cache")]
        calls: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in variants}
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.rounds):
                for name, model, variant in variants:
                    calls[name].append(one_call(model, requests, variant, folder))
        report["suites"][suite] = entry = {"requests": len(requests), "tracked_objects": len(gc.get_objects())}
        entry.update({variant: summary(c) for variant, c in calls.items()})
        for variant in calls:
            s = entry[variant]
            print(
                f"{suite:16s} {variant:25s} call min {s['call_s']['min']:.3f} s, upfront {s['upfront_s']['min']:.3f} s, "
                f"host min {s['host_s']['min']:.3f} "
                f"mean {s['host_s']['mean']:.3f} s; {s['full_collections']} full collections in {args.rounds} calls "
                f"({s['collector_s_per_call']:.3f} s per call)",
                flush=True,
            )
    if args.lm_eval_tasks:
        if DATA_DIR_ENV not in os.environ and (args.bundle / "data").is_dir():  # on the GPU machine
            os.environ[DATA_DIR_ENV] = str((args.bundle / "data").resolve())
        model = build_model(args.shape, getattr(torch, args.dtype), args.device, len(tokenizer))
        report["lm_eval_run"] = {
            "shape": args.shape,
            "device": args.device,
            "dtype": args.dtype,
            **whole_runs(args.lm_eval_tasks, args.lm_eval_metadata, model, tokenizer, args),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
