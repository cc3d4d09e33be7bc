"""Benchmark of prefix sharing in `--model biasmonkey-hf` (not a test; run by hand).

For each suite, lm-eval builds the token-level log-likelihood requests once (SmolLM2-135M-Instruct,
float32, CPU). Then, interleaved, for --rounds rounds:

- baseline: one batched forward per distinct context, left-padded, the LM head at the last
  position only (`logits_to_keep=1`): the least a backend that runs every distinct prompt whole
  can do (as bench_exact_mode.py's plain forward, without the full logits);
- biasmonkey-hf: the backend's `_loglikelihood_tokens` on the same requests (prefix tree, every
  continuation token scored).

Reported per suite: the minimum wall time of each over the rounds, their ratio (targets: few-shot
yes-no <= 0.3, response bias <= 0.8, every suite <= 1.0), and the backend's token counters
(computed / trie tokens; context tokens / trie tokens is what sharing can save at most).
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
from bench_floor import last_position_forward  # noqa: E402
from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# suite -> (tasks, task metadata, documents per task)
SUITES = {
    "response_bias": (
        ["biasmonkey_acquiescence", "biasmonkey_response_order", "biasmonkey_odd_even"],
        {"mode": "exact"},
        40,
    ),
    "yesno_zero_shot": (["biasmonkey_yesno_comps", "biasmonkey_yesno_babi"], {}, 150),
    "yesno_few_shot": (["biasmonkey_yesno_comps_fewshot", "biasmonkey_yesno_babi_fewshot"], {}, 150),
    "answer_position": (
        ["biasmonkey_answer_position_anatomy", "biasmonkey_answer_position_anatomy_fewshot"],
        {},
        150,
    ),
    # the test fixture's tests (the full dataset needs the Hub or a local copy)
    "cognitive": (
        [
            f"biasmonkey_cognitive_{bias}"
            for bias in (
                "anchoring",
                "framing_effect",
                "hindsight_bias",
                "information_bias",
                "loss_aversion",
                "status_quo_bias",
                "halo_effect",
                "planning_fallacy",
            )
        ],
        {"mode": "exact", "data_path": str(REPO / "tests" / "fixtures" / "cognitive" / "tests.csv")},
        2,  # the fixture has two tests per bias
    ),
}


def default_model() -> str:
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    return str(ensure_default_model())


class Recorder(PrefixReuseHFLM):
    """Records the token-level requests lm-eval hands the backend; answers zeros."""

    def _loglikelihood_tokens(self, requests, disable_tqdm=False, override_bs=None):
        self.recorded.extend(requests)
        return [(0.0, False)] * len(requests)


def requests_of(recorder: Recorder, suite: str, documents: int | None = None, every: bool = False) -> list:
    """lm-eval's token-level requests for `suite`: its default documents per task, at most
    `documents`, or every document (`every`)."""
    tasks, metadata, limit = SUITES[suite]
    limit = None if every else min(limit, documents) if documents else limit
    recorder.recorded = []
    manager = TaskManager(include_path=str(REPO / "tasks"), metadata=metadata)
    simple_evaluate(model=recorder, tasks=tasks, task_manager=manager, limit=limit)
    return recorder.recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--row-tokens", type=int, default=None)
    parser.add_argument("--documents", type=int, default=None, help="at most this many documents per task")
    parser.add_argument("--out", type=Path, default=Path("bench_out") / "prefix_sharing.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    extra = {"row_tokens": args.row_tokens} if args.row_tokens else {}
    lm = PrefixReuseHFLM(pretrained=default_model(), device="cpu", batch_size=args.batch_size, dtype="float32", **extra)
    recorder = Recorder(pretrained=lm.model, tokenizer=lm.tokenizer, device="cpu", batch_size=args.batch_size)
    requests = {suite: requests_of(recorder, suite, args.documents) for suite in args.suites}

    seconds: dict[str, dict[str, list[float]]] = {s: {"baseline": [], "biasmonkey_hf": []} for s in args.suites}
    counters: dict[str, dict] = {}
    for round_ in range(args.rounds):
        for suite in args.suites:
            contexts = list({tuple(ctx) for _, ctx, _ in requests[suite]})
            seconds[suite]["baseline"].append(last_position_forward(lm, contexts, args.batch_size))
            lm.reset_counters()
            start = time.perf_counter()
            lm._loglikelihood_tokens(requests[suite], disable_tqdm=True)
            seconds[suite]["biasmonkey_hf"].append(time.perf_counter() - start)
            counters[suite] = {
                name: getattr(lm, name)
                for name in (
                    "distinct_contexts",
                    "context_tokens",
                    "trie_tokens",
                    "computed_tokens",
                    "continuation_tokens",
                    "padding_tokens",
                    "forward_passes",
                    "rows",
                    "peak_cached_tokens",
                    "fallback_requests",
                )
            }
            times = {k: round(v[-1], 2) for k, v in seconds[suite].items()}
            print(f"round {round_ + 1} {suite}: {times}", flush=True)

    report = {
        "model": "SmolLM2-135M-Instruct (float32, CPU)",
        "torch_threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "row_tokens": lm.row_tokens,
        "rounds": args.rounds,
        "suites": {},
    }
    for suite in args.suites:
        base, hf = min(seconds[suite]["baseline"]), min(seconds[suite]["biasmonkey_hf"])
        c = counters[suite]
        report["suites"][suite] = {
            "tasks": SUITES[suite][0],
            "limit": SUITES[suite][2],
            "requests": len(requests[suite]),
            "baseline_seconds": round(base, 2),
            "biasmonkey_hf_seconds": round(hf, 2),
            "ratio_hf_to_baseline": round(hf / base, 3),
            "context_over_trie_tokens": round(c["context_tokens"] / c["trie_tokens"], 2),
            "computed_over_trie_tokens": round(c["computed_tokens"] / c["trie_tokens"], 3),
            **c,
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
