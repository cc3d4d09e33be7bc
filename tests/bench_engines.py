"""Benchmark of the exact-mode engines (a script, not a test).

For each suite, in one process on one model (default SmolLM2-135M-Instruct, float32, CPU):

- `hf`: lm-eval's stock HF backend (`HFLM`) through `simple_evaluate`;
- `biasmonkey-hf`: `PrefixReuseHFLM` (harness_ext/lm_eval/backends/hf_prefix.py), same model object;
- floor: a plain batched forward over the same distinct prompts (the context token ids lm-eval
  builds), longest first, `--batch-size` per forward, right-padded, LM head at each prompt's last
  position only — the least any engine must compute.

Per engine: sequences through the model (a forward hook; rows run without cached keys/values,
and rows run over a cache counted apart), forward calls, the seconds spent in
`_loglikelihood_tokens` (scoring: the engine proper), in `loglikelihood` (adds lm-eval's
tokenising, the same code for both engines) and in the whole `simple_evaluate`. The two
engines' log-likelihoods are compared request by request. With `--repeats N`, biasmonkey-hf and
the floor run N times, interleaved (the machine may be shared), and the fastest run is kept.

    python tests/bench_engines.py --limit 2 --repeats 2 --out bench_engines_out
    python tests/bench_engines.py --suites cognitive --data-path tests/fixtures/cognitive/tests.csv

With `--server URL` (an OpenAI-compatible /v1 URL, e.g. llama.cpp's server on the SmolLM2 GGUF,
`--server-model` its name), each suite also runs through `biasmonkey-server`
(harness_ext/lm_eval/backends/served.py): HTTP requests sent (the server's sequences: one
generated token each) per distinct prompt, and wall seconds. The cognitive suite's exact mode
is refused there (multi-token labels) and reported as such.

    python tests/bench_engines.py --limit 2 --server http://127.0.0.1:8765/v1 --server-model smollm2

Response bias and yes-no read BIASMONKEY_DATA_DIR (or the cache); cognitive defaults to the test
fixture CSV. Writes bench_engines.json and bench_engines.md to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402
from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from biasmonkey.harness_ext.app.cli import tasks_dir  # noqa: E402
from biasmonkey.harness_ext.app.default_model import ensure_default_model  # noqa: E402
from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM  # noqa: E402
from biasmonkey.harness_ext.lm_eval.backends.served import ServedLM  # noqa: E402
from biasmonkey.tasks.families import COGNITIVE, RESPONSE_BIAS  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cognitive" / "tests.csv"
YESNO_TASKS = [
    "biasmonkey_yesno_comps",
    "biasmonkey_yesno_comps_fewshot",
    "biasmonkey_yesno_ewok",
    "biasmonkey_yesno_ewok_fewshot",
]


def suites(data_path: Path) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """suite -> (tasks, run metadata)."""
    response_bias = [
        t for t in RESPONSE_BIAS.lm_eval_tasks() if t.removeprefix("biasmonkey_") not in RESPONSE_BIAS.variants
    ]
    return {
        "response_bias": (response_bias, {"mode": "exact"}),
        "yesno": (YESNO_TASKS, {}),
        "cognitive": (COGNITIVE.lm_eval_tasks(), {"mode": "exact", "data_path": str(data_path)}),
    }


class RowCounter:
    """Rows through the model's forward: without cached keys/values (sequences) and over a cache."""

    def __init__(self, model: torch.nn.Module):
        self.reset()
        model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def reset(self) -> None:
        self.sequences = self.cached_rows = self.calls = 0

    def _hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        rows = int((args[0] if args else kwargs["input_ids"]).shape[0])
        if kwargs.get("past_key_values") is None:
            self.sequences += rows
        else:
            self.cached_rows += rows
        self.calls += 1


def run_engine(lm: HFLM, counter: RowCounter, tasks: list[str], metadata: dict, limit: int | None) -> dict[str, Any]:
    """One lm-eval run; its counts, times, and the token-level requests the backend received."""
    received: list[tuple] = []
    spent = [0.0, 0.0]  # in loglikelihood (tokenising + scoring), in _loglikelihood_tokens (scoring)
    score, loglikelihood = lm._loglikelihood_tokens, lm.loglikelihood

    def timed_loglikelihood(requests: list, disable_tqdm: bool = False) -> list:
        start = time.perf_counter()
        try:
            return loglikelihood(requests, disable_tqdm=disable_tqdm)
        finally:
            spent[0] += time.perf_counter() - start

    def timed_score(requests: list, **kwargs: Any) -> list:
        received.extend(requests)
        start = time.perf_counter()
        try:
            return score(requests, **kwargs)
        finally:
            spent[1] += time.perf_counter() - start

    lm._loglikelihood_tokens = timed_score
    lm.loglikelihood = timed_loglikelihood
    manager = TaskManager(include_path=str(tasks_dir()), metadata=metadata)
    counter.reset()
    if isinstance(lm, PrefixReuseHFLM):
        lm.reset_counters()
    start = time.perf_counter()
    try:
        results = simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True)
    finally:
        del lm._loglikelihood_tokens, lm.loglikelihood
    return {
        "evaluate_seconds": time.perf_counter() - start,
        "loglikelihood_seconds": spent[0],
        "scoring_seconds": spent[1],
        "sequences": counter.sequences,
        "cached_rows": counter.cached_rows,
        "forward_calls": counter.calls,
        "requests": received,
        "trie_tokens": getattr(lm, "continuation_tokens", 0),
        "fallback_requests": getattr(lm, "fallback_requests", 0),
        "answers": {
            (task, s["doc_id"], i): (float(r[0]), bool(r[1]))
            for task, samples in results["samples"].items()
            for s in samples
            for i, r in enumerate(s["filtered_resps"])
        },
    }


def floor_seconds(model: torch.nn.Module, prompts: list[tuple[int, ...]], batch_size: int) -> float:
    """Plain batched forward over `prompts`, LM head at each last position only."""
    prompts = sorted(prompts, key=len, reverse=True)
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(prompts), batch_size):
            batch = prompts[i : i + batch_size]
            ids = torch.zeros((len(batch), len(batch[0])), dtype=torch.long)
            for row, prompt in enumerate(batch):
                ids[row, : len(prompt)] = torch.tensor(prompt)
            last = torch.tensor([len(p) - 1 for p in batch])[:, None]
            model(input_ids=ids, use_cache=False, logits_to_keep=last)
    return time.perf_counter() - start


def bench_suite(
    name: str,
    tasks: list[str],
    metadata: dict,
    args: argparse.Namespace,
    stock: HFLM,
    prefix: PrefixReuseHFLM,
    counter: RowCounter,
) -> dict[str, Any]:
    print(f"{name}: stock hf ...", flush=True)
    hf = run_engine(stock, counter, tasks, metadata, args.limit)
    prompts = sorted({tuple(ctx) for _, ctx, _ in hf["requests"]})
    runs, floors = [], []
    for i in range(args.repeats):  # interleaved, so that both see the same load
        print(f"{name}: biasmonkey-hf and floor, {i + 1}/{args.repeats} ...", flush=True)
        runs.append(run_engine(prefix, counter, tasks, metadata, args.limit))
        assert prompts == sorted({tuple(ctx) for _, ctx, _ in runs[-1]["requests"]}), "the engines saw other prompts"
        counter.reset()
        floors.append(floor_seconds(stock.model, prompts, args.batch_size))
        floor_sequences = counter.sequences
    ours = min(runs, key=lambda r: r["scoring_seconds"])
    floor = min(floors)

    diffs = [abs(hf["answers"][k][0] - ours["answers"][k][0]) for k in hf["answers"]]
    n = len(prompts)

    def engine(r: dict[str, Any]) -> dict[str, Any]:
        return {
            "sequences": r["sequences"],
            "sequences_per_prompt": round(r["sequences"] / n, 2),
            "cached_rows": r["cached_rows"],
            "forward_calls": r["forward_calls"],
            "scoring_seconds": round(r["scoring_seconds"], 2),
            "loglikelihood_seconds": round(r["loglikelihood_seconds"], 2),
            "evaluate_seconds": round(r["evaluate_seconds"], 2),
            "scoring_to_floor": round(r["scoring_seconds"] / floor, 2),
            "loglikelihood_to_floor": round(r["loglikelihood_seconds"] / floor, 2),
        }

    served = bench_server(name, tasks, metadata, args, n) if args.server else None
    return {
        "tasks": len(tasks),
        "documents": len({k[:2] for k in hf["answers"]}),
        "server": served,
        "requests": len(hf["requests"]),
        "distinct_prompts": n,
        "prompt_tokens": sum(map(len, prompts)),
        "hf": engine(hf),
        "biasmonkey_hf": engine(ours)
        | {"trie_tokens": ours["trie_tokens"], "fallback_requests": ours["fallback_requests"]},
        "floor": {"sequences": floor_sequences, "seconds": round(floor, 2)},
        "max_abs_loglikelihood_diff": max(diffs),
        "is_greedy_mismatches": sum(hf["answers"][k][1] != ours["answers"][k][1] for k in hf["answers"]),
    }


def bench_server(name: str, tasks: list[str], metadata: dict, args: argparse.Namespace, prompts: int) -> dict:
    """The suite through biasmonkey-server: requests per distinct prompt and wall seconds."""
    print(f"{name}: biasmonkey-server ...", flush=True)
    lm = ServedLM(
        base_url=args.server,
        model=args.server_model,
        tokenizer=args.tokenizer or args.model or str(ensure_default_model()),
    )
    manager = TaskManager(include_path=str(tasks_dir()), metadata=metadata)
    start = time.perf_counter()
    try:
        simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=args.limit)
    except ValueError as err:
        return {"refused": str(err).split(";")[0]}
    return {
        "requests": lm.requests_sent,
        "requests_per_prompt": round(lm.requests_sent / prompts, 2),
        "imputed": lm.imputed,
        "seconds": round(time.perf_counter() - start, 2),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Engines on {report['model']}, batch size {report['batch_size']}, limit {report['limit']} documents per"
        f" task, {report['torch_threads']} torch threads, best of {report['repeats']} (stock hf: one run). seq/prompt: sequences run"
        " without a cache per distinct prompt (+ trie rows run over a cached prompt). Scoring: seconds in"
        " `_loglikelihood_tokens`; in brackets, seconds in `loglikelihood` (adds lm-eval's tokenising, the same"
        " code for both engines). Floor: a plain batched forward over the distinct prompts, LM head at the last"
        " position only.",
        "",
        "| suite | requests | distinct prompts | hf seq/prompt | biasmonkey-hf seq/prompt | hf scoring s | biasmonkey-hf scoring s | floor s | hf / floor | biasmonkey-hf / floor | max abs Δ log-lik | is_greedy mismatches |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in report["suites"].items():
        hf, ours = s["hf"], s["biasmonkey_hf"]
        lines.append(
            f"| {name} | {s['requests']} | {s['distinct_prompts']} | {hf['sequences_per_prompt']:.2f} |"
            f" {ours['sequences_per_prompt']:.2f} (+ {ours['cached_rows']}) |"
            f" {hf['scoring_seconds']:.1f} ({hf['loglikelihood_seconds']:.1f}) |"
            f" {ours['scoring_seconds']:.1f} ({ours['loglikelihood_seconds']:.1f}) | {s['floor']['seconds']:.1f} |"
            f" {hf['scoring_to_floor']:.2f}× ({hf['loglikelihood_to_floor']:.2f}×) |"
            f" {ours['scoring_to_floor']:.2f}× ({ours['loglikelihood_to_floor']:.2f}×) |"
            f" {s['max_abs_loglikelihood_diff']:.1e} | {s['is_greedy_mismatches']} |"
        )
    served = {name: s["server"] for name, s in report["suites"].items() if s.get("server")}
    if served:
        lines += [
            "",
            f"biasmonkey-server at {report['server']}: HTTP requests (one generated token each) per distinct prompt,"
            " spellings given the imputed floor, wall seconds of the whole run.",
            "",
            "| suite | distinct prompts | requests | requests/prompt | imputed | seconds |",
            "|---|---|---|---|---|---|",
        ]
        for name, r in served.items():
            n = report["suites"][name]["distinct_prompts"]
            if "refused" in r:
                lines.append(f"| {name} | {n} | refused: {r['refused']} | | | |")
            else:
                lines.append(
                    f"| {name} | {n} | {r['requests']} | {r['requests_per_prompt']:.2f} | {r['imputed']} | {r['seconds']:.1f} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench_engines_out"))
    parser.add_argument("--suites", default="response_bias,yesno,cognitive", help="comma-separated")
    parser.add_argument("--limit", type=int, help="documents per task (default: all)")
    parser.add_argument("--data-path", type=Path, default=FIXTURE, help="cognitive tests CSV/parquet")
    parser.add_argument("--model", help="model folder (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--repeats", type=int, default=1, help="biasmonkey-hf and floor runs (interleaved; the fastest is kept)"
    )
    parser.add_argument("--server", help="also run biasmonkey-server against this OpenAI-compatible /v1 URL")
    parser.add_argument("--server-model", help="the served model's name")
    parser.add_argument("--tokenizer", help="the served model's tokenizer (default: --model or SmolLM2)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model = args.model or str(ensure_default_model())
    stock = HFLM(pretrained=model, device="cpu", batch_size=args.batch_size, dtype="float32")
    prefix = PrefixReuseHFLM(
        pretrained=stock.model, tokenizer=stock.tokenizer, device="cpu", batch_size=args.batch_size
    )
    counter = RowCounter(stock.model)
    floor_seconds(stock.model, [tuple(range(10, 60))] * 4, 4)  # warm-up

    table = suites(args.data_path.resolve())
    report = {
        "model": Path(model).name + " (float32, CPU)",
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "limit": args.limit,
        "repeats": args.repeats,
        "server": args.server,
        "suites": {
            name: bench_suite(name, *table[name], args, stock, prefix, counter) for name in args.suites.split(",")
        },
    }
    (args.out / "bench_engines.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "bench_engines.md").write_text(markdown(report))
    print(json.dumps(report, indent=2))
    print(markdown(report))


if __name__ == "__main__":
    main()
