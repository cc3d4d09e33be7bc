"""Measure the yes-no suite for the README table (not part of the tests).

Runs the stock lm_eval CLI on one model over COMPS-YNQ and EWoK-YNQ, zero- and few-shot
(the `biasmonkey-yesno` tag), then prints a markdown table recomputed from the logged
per-item records. Default model: the bundled SmolLM2-135M-Instruct.

    python tests/bench_yesno.py                                  # SmolLM2, full sets
    python tests/bench_yesno.py --model <folder> --gguf-file <name>.gguf --label "Gemma 3 270M (base)"
    python tests/bench_yesno.py ... --every 7                    # every 7th item of each set
    python tests/bench_yesno.py --table-only --out <folder>      # table of an earlier run

The output folder holds the logged samples, which contain decrypted EWoK text: it defaults
to the user cache, never to the checkout, and must not be shared in plain text.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from biasmonkey.harness_ext.app.cli import tasks_dir
from biasmonkey.harness_ext.logs import records_from_samples_file
from biasmonkey.tasks.cache import cache_root
from biasmonkey.tasks.yesno.commands import latest_yesno_outputs
from biasmonkey.tasks.yesno.data import load_items
from biasmonkey.tasks.yesno.scoring import summarize

TASKS = (
    "biasmonkey_yesno_comps",
    "biasmonkey_yesno_comps_fewshot",
    "biasmonkey_yesno_ewok",
    "biasmonkey_yesno_ewok_fewshot",
)


def every_nth(step: int) -> str:
    """lm-eval --samples JSON: every `step`-th item of each whole-set task (all EWoK domains)."""
    sizes = {task: len(load_items("comps" if "comps" in task else "ewok")) for task in TASKS}
    return json.dumps({task: list(range(0, n, step)) for task, n in sizes.items()})


def lm_eval_command(
    model: str, out: Path, tasks: str, batch_size: int, limit: int | None, gguf_file: str | None = None
) -> list[str]:
    model_args = f"pretrained={model},dtype=float32" + (f",gguf_file={gguf_file}" if gguf_file else "")
    cmd = [
        "nice",
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "hf",
        "--model_args",
        model_args,
        "--device",
        "cpu",
        "--batch_size",
        str(batch_size),
        "--include_path",
        str(tasks_dir()),
        "--tasks",
        tasks,
        "--output_path",
        str(out),
        "--log_samples",
    ]
    return cmd + (["--limit", str(limit)] if limit else [])


def _f(x: float, pct: bool = False) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x:+.1f}" if pct else f"{x:+.3f}"


def table(out: Path, label: str) -> str:
    """Markdown rows (base / Generic / Specific bias and accuracy) from the logged records."""
    files = {task: o.path for task, o in latest_yesno_outputs(out).items()}
    lines = [
        f"| {'model':<28} | set | prompt | n | bias | acc | Generic bias | Generic acc | Specific bias | Specific acc "
        "| Δ% bias G / S | Δ% acc G / S | P(yes) gold Yes / No |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for task in TASKS:
        if task not in files:
            continue
        s = summarize(records_from_samples_file(files[task]))
        dataset = "COMPS-YNQ" if "comps" in task else "EWoK-YNQ"
        prompt = "few-shot" if task.endswith("fewshot") else "zero-shot"
        lines.append(
            f"| {label:<28} | {dataset} | {prompt} | {s.n} | {_f(s.bias)} | {s.accuracy:.3f} | {_f(s.bias_generic)} "
            f"| {s.accuracy_generic:.3f} | {_f(s.bias_specific)} | {s.accuracy_specific:.3f} "
            f"| {_f(s.delta_pct_bias_generic, True)} / {_f(s.delta_pct_bias_specific, True)} "
            f"| {_f(s.delta_pct_accuracy_generic, True)} / {_f(s.delta_pct_accuracy_specific, True)} "
            f"| {s.p_yes_gold_yes:.3f} / {s.p_yes_gold_no:.3f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="HF model folder (default: the bundled SmolLM2-135M-Instruct)")
    parser.add_argument(
        "--gguf-file", help="GGUF file name inside the --model folder (lm-eval de-quantises it on load)"
    )
    parser.add_argument("--label", default="SmolLM2-135M-Instruct")
    parser.add_argument("--out", type=Path, help="lm-eval output folder (default: in the user cache)")
    parser.add_argument("--tasks", default="biasmonkey-yesno", help="lm-eval tasks (default: the four whole-set tasks)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--limit", type=int, help="the first items of each task (for a quick look)")
    parser.add_argument("--every", type=int, help="a subset: every N-th item of each whole-set task")
    parser.add_argument("--table-only", action="store_true", help="print the table of an existing --out folder")
    args = parser.parse_args()

    out = args.out or cache_root() / "bench" / "yesno" / args.label.replace(" ", "_").replace("/", "_")
    if not args.table_only:
        if args.model:
            model = args.model
        else:
            from biasmonkey.harness_ext.app.default_model import ensure_default_model

            model = str(ensure_default_model())
        cmd = lm_eval_command(model, out, args.tasks, args.batch_size, args.limit, args.gguf_file)
        if args.every:
            cmd += ["--samples", every_nth(args.every)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        print("Running:", " ".join(cmd), flush=True)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        print(f"lm_eval took {time.perf_counter() - start:.0f} s", flush=True)
    print(table(out, args.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
