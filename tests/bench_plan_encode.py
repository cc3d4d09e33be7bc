"""How fast `biasmonkey plan` (and the prompt-length check of `biasmonkey run`) turns requests into
tokens (not a test): lm-eval's HF tokenisation one call at a time against `encode`'s batches of
distinct strings (`prefill`), on the same requests with the same tokenizer. The requests are built
once; each round times both variants on a fresh tokenizer-only model, interleaved, and the minimum is kept.

    python tests/bench_plan_encode.py [--tasks SPEC] [--limit N] [--rounds 3] [--model FOLDER]
    (default: the answer-position zero-shot group, 20 questions per subject; the bundled SmolLM2's tokenizer)
"""

from __future__ import annotations

import argparse
import json
import time

from transformers import AutoTokenizer

from biasmonkey.harness_ext.app.plan import _tokenizer_lm, build_requests, encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="biasmonkey-answer-position-zeroshot")
    parser.add_argument("--limit", type=int, default=20, help="documents per task (0: all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", help="a model folder whose tokenizer is used (default: the bundled SmolLM2)")
    args = parser.parse_args()
    if args.model is None:
        from biasmonkey.harness_ext.app.default_model import ensure_default_model

        args.model = str(ensure_default_model())
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tasks = build_requests(args.tasks, {}, args.limit or None)
    n = sum(len(t.requests) for t in tasks)
    best = {"one call per string": float("inf"), "batched": float("inf")}
    results = {}
    for _ in range(args.rounds):
        for name in best:
            lm = _tokenizer_lm(tokenizer)
            start = time.perf_counter()
            results[name] = encode(tasks, lm, batched=name == "batched")
            best[name] = min(best[name], time.perf_counter() - start)
    assert results["batched"] == results["one call per string"], "the two variants gave different tokens"
    print(f"{args.tasks}, limit {args.limit or 'none'}: {len(tasks)} tasks, {n:,} requests, the same tokens")
    for name, s in best.items():
        print(f"{name:22s} {s:7.2f} s")
    print(f"ratio (batched / one call per string): {best['batched'] / best['one call per string']:.3f}")
    print(json.dumps({"tasks": args.tasks, "limit": args.limit, "requests": n, "rounds": args.rounds, "seconds": best}))


if __name__ == "__main__":
    main()
