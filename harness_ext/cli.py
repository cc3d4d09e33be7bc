"""The `biasmonkey` command line: tasks-dir, score-samples, run, summarize, inspect-eval-set, yesno-compare."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from biasmonkey.harness_ext.yesno_compare import add_subcommand as add_yesno_compare
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES, RULES


def tasks_dir() -> Path:
    """The folder to pass to lm-eval's --include_path (the installed biasmonkey.tasks)."""
    import biasmonkey.tasks

    return Path(biasmonkey.tasks.__file__).resolve().parent


def cmd_tasks_dir(args: argparse.Namespace) -> int:
    print(tasks_dir())
    return 0


def cmd_score_samples(args: argparse.Namespace) -> int:
    from biasmonkey.tasks.response_bias.released_samples import score_sample_dir

    rows = score_sample_dir(args.directory, include_reword=args.include_reword)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'bias':<16}{'setting':<15}{'n':>5}{'delta':>10}{'p':>12}")
        for r in rows:
            print(f"{r['bias']:<16}{r['setting']:<15}{r['n']:>5}{r['delta']:>10.3f}{r['p_value']:>12.3g}")
    return 0


def lm_eval_command(args: argparse.Namespace, model_path: str) -> list[str]:
    cmd = [
        sys.executable, "-m", "lm_eval",
        "--model", "hf",
        "--model_args", f"pretrained={model_path},dtype={args.dtype}",
        "--device", args.device,
        "--batch_size", str(args.batch_size),
        "--include_path", str(tasks_dir()),
        "--tasks", args.tasks,
        "--output_path", str(args.output),
        "--log_samples",
    ]
    metadata = {"mode": args.mode, "n_samples": args.n_samples, "perturbation_rules": args.perturbation_rules}
    if args.perturbation_seed is not None:
        metadata["perturbation_seed"] = args.perturbation_seed
    cmd += ["--metadata", json.dumps(metadata)]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.apply_chat_template:
        cmd += ["--apply_chat_template"]
    return cmd


def cmd_run(args: argparse.Namespace) -> int:
    from biasmonkey.tasks.response_bias.data import resolve_all

    # Fail early, with one clear message, if the prompt files cannot be had.
    print(f"Checking the {len(resolve_all())} BiasMonkey data files: ok", flush=True)
    if args.model:
        model_path = args.model
    else:
        from biasmonkey.harness_ext.default_model import ensure_default_model

        model_path = str(ensure_default_model())
    env = dict(os.environ)
    if Path(model_path).exists():  # a local model needs no hub; avoid minutes of network time-outs
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("HF_DATASETS_OFFLINE", "1")
    cmd = lm_eval_command(args, model_path)
    print("Running:", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env)
    if proc.returncode != 0:
        print(f"lm_eval failed with exit code {proc.returncode}", file=sys.stderr)
        return proc.returncode
    return cmd_summarize(argparse.Namespace(results=args.output, out=None))


def cmd_summarize(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.summary import write_summary

    md, csv_path = write_summary(args.results, args.out)
    print(md.read_text())
    print(f"Summary written to {md} and {csv_path}")
    return 0


def cmd_inspect_eval_set(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.inspect_eval_set import parse_task_args, run_eval_set

    ok = run_eval_set(args.config, args.model, args.log_dir, parse_task_args(args.task_arg), args.limit)
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="biasmonkey", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("tasks-dir", help="print the task folder for lm_eval --include_path")
    p.set_defaults(func=cmd_tasks_dir)

    p = sub.add_parser("score-samples", help="rescore the authors' released samples (Tjuatja et al.)")
    p.add_argument("directory", type=Path, help="folder of <bias>.csv / <bias>-<perturbation>.csv sample files")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.add_argument("--include-reword", action="store_true", help="add the acquiescence reword row if present")
    p.set_defaults(func=cmd_score_samples)

    p = sub.add_parser("run", help="run the response-bias suite with lm-eval and write a summary")
    p.add_argument("--model", help="HF model folder or hub id (default: the bundled SmolLM2-135M-Instruct)")
    p.add_argument("--tasks", default="biasmonkey", help="lm-eval task names or globs (default: the whole suite)")
    p.add_argument("--mode", choices=("exact", "sample"), default="exact")
    p.add_argument("--n-samples", type=int, default=50, help="answers per question in sample mode")
    p.add_argument("--perturbation-seed", type=int, help="draw perturbations with our seeded generator")
    p.add_argument("--perturbation-rules", choices=tuple(RULES), default=DEFAULT_RULES,
                   help="the generator's word rules: as the paper states them, or as the published files are")
    p.add_argument("--limit", type=int, help="pairs per task (for a quick look)")
    p.add_argument("--batch-size", default="16")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--apply-chat-template", action="store_true")
    p.add_argument("--output", type=Path, default=Path("results"), help="output folder (default: ./results)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("summarize", help="summary table of an lm-eval output folder (run with --log_samples)")
    p.add_argument("results", type=Path, help="the folder given to lm_eval --output_path, or an Inspect log dir")
    p.add_argument("--out", type=Path, help="where to write summary.md/.csv (default: the results folder)")
    p.set_defaults(func=cmd_summarize)

    p = sub.add_parser("inspect-eval-set", help="run an Inspect eval set from a YAML file in configs/")
    p.add_argument("config", type=Path, help="e.g. configs/inspect_response_bias.yaml")
    p.add_argument("--model", help="Inspect model, e.g. openai/gpt-4o-mini or hf/<folder> (overrides the file)")
    p.add_argument("--log-dir", help="log folder (overrides the file)")
    p.add_argument("--limit", type=int, help="pairs per task (for a quick look)")
    p.add_argument("-T", dest="task_arg", action="append", default=[], metavar="KEY=VALUE",
                   help="task argument, e.g. -T mode=sample (repeatable; overrides the file)")
    p.set_defaults(func=cmd_inspect_eval_set)

    add_yesno_compare(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="biasmonkey: %(message)s")  # e.g. download progress
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"biasmonkey: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
