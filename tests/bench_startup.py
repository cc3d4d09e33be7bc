"""What every `biasmonkey run` pays before its first forward (not a test): lm-eval's task index with
and without its built-in task files, and the prompt-length check's model context read afresh and
from the cache. Each measurement is a fresh Python process (as a run starts one), timed inside it
around the work alone (the model context's imports of torch and transformers are its work); the rounds interleave the variants and the minimum is kept.

    python tests/bench_startup.py [--rounds 3] [--model FOLDER]   (default model: the tiny GPT-2)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from biasmonkey.harness_ext.app.plan import tasks_dir

INDEX = """
import time
from lm_eval.tasks import TaskManager
start = time.perf_counter()
TaskManager(include_path={folder!r}, include_defaults={defaults})
print(time.perf_counter() - start)
"""
CONTEXT = """
import os, time; os.environ["BIASMONKEY_CACHE_DIR"] = {cache!r}
from biasmonkey.harness_ext.app.context_check import model_context
start = time.perf_counter()
model_context({model!r}, server=False)
print(time.perf_counter() - start)
"""


def seconds(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", help="a local model folder (default: the tiny GPT-2, built here)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from tiny_model import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "tiny"))
        warm = str(Path(tmp) / "warm-cache")
        seconds(CONTEXT.format(cache=warm, model=model))  # fills the warm cache
        variants = {
            "task index: lm-eval's built-in tasks too": INDEX.format(folder=str(tasks_dir()), defaults=True),
            "task index: biasmonkey's folder only": INDEX.format(folder=str(tasks_dir()), defaults=False),
            "model context: read (config, tokenizer)": None,  # a fresh cache each round
            "model context: from the cache": CONTEXT.format(cache=warm, model=model),
        }
        best = dict.fromkeys(variants, float("inf"))
        for round_ in range(args.rounds):
            for name, code in variants.items():
                code = code or CONTEXT.format(cache=str(Path(tmp) / f"cold-{round_}"), model=model)
                best[name] = min(best[name], seconds(code))
    names = list(best)
    for name in names:
        print(f"{name:45s} {best[name]:7.2f} s")
    print(f"index ratio (folder only / full): {best[names[1]] / best[names[0]]:.3f}")
    print(f"context ratio (cached / read):    {best[names[3]] / best[names[2]]:.3f}")
    print(json.dumps({"rounds": args.rounds, "seconds": best}))


if __name__ == "__main__":
    main()
