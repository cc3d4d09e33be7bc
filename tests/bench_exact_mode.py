"""Benchmark (run with `make bench`; not part of the tests).

1. The full response-bias suite in exact mode on SmolLM2-135M-Instruct through lm-eval: wall
   time, distinct prompts, and model forward passes (sequences through the model), which
   must equal the distinct prompts.
2. A plain batched transformers forward over the same distinct prompts, for the ratio.
3. Sampling (N answers per question) against exact mode on a subset.
All figures of one invocation come from one process on one machine. The suite's results table
(`summary.md`, as `biasmonkey summarize` writes it) is computed from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402
from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from biasmonkey.harness_ext.app.cli import tasks_dir  # noqa: E402
from biasmonkey.harness_ext.app.default_model import ensure_default_model  # noqa: E402
from biasmonkey.harness_ext.app.summary import to_markdown  # noqa: E402
from biasmonkey.metrics import BIASES, PERTURBATIONS  # noqa: E402
from biasmonkey.tasks.response_bias.codecs import from_lm_eval as read_logged_pair  # noqa: E402
from biasmonkey.tasks.response_bias.summary import rows_in_suite_order  # noqa: E402

ALL_TASKS = [f"biasmonkey_{b}" for b in BIASES] + [f"biasmonkey_{b}_{p}" for b in BIASES for p in PERTURBATIONS]


class ForwardCounter:
    """Counts sequences that go through the model's forward (batch rows, summed over calls)."""

    def __init__(self, model: torch.nn.Module):
        self.sequences = 0
        self.calls = 0
        model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs) -> None:
        ids = args[0] if args else kwargs.get("input_ids")
        self.sequences += int(ids.shape[0])
        self.calls += 1

    def reset(self) -> None:
        self.sequences = self.calls = 0


def evaluate(lm: HFLM, tasks: list[str], metadata: dict, limit: int | None = None) -> tuple[dict, float]:
    manager = TaskManager(include_path=str(tasks_dir()), metadata=metadata)
    start = time.perf_counter()
    results = simple_evaluate(model=lm, tasks=tasks, task_manager=manager, limit=limit, log_samples=True)
    return results, time.perf_counter() - start


def distinct_contexts(results: dict) -> list[str]:
    contexts = set()
    for samples in results["samples"].values():
        for sample in samples:
            contexts.update(arg[0] for arg in sample["arguments"])
    return sorted(contexts)


def plain_forward_seconds(lm: HFLM, prompts: list[str], batch_size: int) -> float:
    """Batched transformers forward (full logits, as lm-eval's HF backend computes them)."""
    tok, model = lm.tokenizer, lm.model
    encoded = sorted((tok(p, add_special_tokens=False).input_ids for p in prompts), key=len, reverse=True)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(encoded), batch_size):
            batch = encoded[i : i + batch_size]
            width = max(map(len, batch))
            ids = torch.tensor([[pad] * (width - len(x)) + x for x in batch])
            mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch])
            model(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench_out"))
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--subset-limit", type=int, default=10, help="pairs per task for sampling vs exact")
    parser.add_argument("--suite-limit", type=int, help="pairs per task in part 1 (default: all; for a quick check)")
    parser.add_argument("--n-samples", type=int, default=50)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)

    lm = HFLM(pretrained=str(ensure_default_model()), device="cpu", batch_size=args.batch_size, dtype="float32")
    counter = ForwardCounter(lm.model)

    print("1/3 full exact suite ...", flush=True)
    results, suite_seconds = evaluate(lm, ALL_TASKS, {"mode": "exact"}, limit=args.suite_limit)
    contexts = distinct_contexts(results)
    suite = {
        "wall_seconds": round(suite_seconds, 1),
        "pairs": sum(len(s) for s in results["samples"].values()),
        "loglikelihood_requests": sum(len(s["arguments"]) for v in results["samples"].values() for s in v),
        "distinct_prompts": len(contexts),
        "forward_sequences": counter.sequences,
        "forward_calls": counter.calls,
    }

    records = (
        [read_logged_pair(s["doc"], s["filtered_resps"]) for s in samples] for samples in results["samples"].values()
    )
    table = to_markdown(rows_in_suite_order(records), "Survey response biases: SmolLM2-135M-Instruct (exact mode)")
    (args.out / "summary.md").write_text(table)

    print("2/3 plain batched forward over the same prompts ...", flush=True)
    plain = plain_forward_seconds(lm, contexts, args.batch_size)
    suite["plain_forward_seconds"] = round(plain, 1)
    suite["ratio_suite_to_plain_forward"] = round(suite_seconds / plain, 2)

    print("3/3 sampling vs exact on a subset ...", flush=True)
    subset = ["biasmonkey_acquiescence", "biasmonkey_response_order"]
    counter.reset()
    _, exact_seconds = evaluate(lm, subset, {"mode": "exact"}, limit=args.subset_limit)
    exact_sequences = counter.sequences
    counter.reset()
    sampled, sample_seconds = evaluate(
        lm, subset, {"mode": "sample", "n_samples": args.n_samples}, limit=args.subset_limit
    )
    sampling = {
        "tasks": subset,
        "pairs_per_task": args.subset_limit,
        "n_samples": args.n_samples,
        "exact_seconds": round(exact_seconds, 1),
        "sample_seconds": round(sample_seconds, 1),
        "ratio_sample_to_exact": round(sample_seconds / exact_seconds, 1),
        "exact_forward_sequences": exact_sequences,
        "sample_forward_sequences": counter.sequences,
        "invalid_rate": {t: sampled["results"][t].get("invalid_rate,all_samples") for t in subset},
    }

    report = {
        "model": "SmolLM2-135M-Instruct (float32, CPU)",
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "suite": suite,
        "sampling_vs_exact": sampling,
    }
    (args.out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
