"""The `biasmonkey` command line: tasks-dir, score-samples, run, summarize, inspect-eval-set, yesno-compare, generate,
representativeness."""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from biasmonkey.harness_ext.cognitive_generate import add_subcommand as add_generate
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
    if args.perturbation_seeds is not None:
        metadata["perturbation_seeds"] = args.perturbation_seeds
    if args.template != "default":
        metadata["template"] = args.template
    if args.virtual_samples:
        metadata.update(virtual_samples=args.virtual_samples, virtual_seed=args.virtual_seed)
    cmd += ["--metadata", json.dumps(metadata)]
    if args.limit is not None:
        cmd += ["--limit", str(args.limit)]
    if args.apply_chat_template:
        cmd += ["--apply_chat_template"]
    return cmd


def seed_list(text: str) -> list[int]:
    """--perturbation-seeds: "1,2,3" -> [1, 2, 3]."""
    from biasmonkey.tasks.response_bias.options import parse_seeds

    try:
        return list(parse_seeds(text) or ())
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("option perturbation_seeds=")) from None


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
    status = cmd_summarize(argparse.Namespace(results=args.output, out=None))
    return status or cmd_report(argparse.Namespace(results=[args.output], out=args.output / "report", name=[]))


def cmd_summarize(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.summary import write_summary

    md, csv_path = write_summary(args.results, args.out)
    print(md.read_text())
    print(f"Summary written to {md} and {csv_path}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.report import write_report
    from biasmonkey.harness_ext.report.inputs import parse_names

    md = write_report(args.results, args.out, parse_names(args.name))
    print(f"Report written to {md} and {md.with_suffix('.html')} (tables, figures and leaderboard files in {args.out})")
    return 0


def cmd_representativeness(args: argparse.Namespace) -> int:
    import csv

    from biasmonkey.harness_ext.summary import task_records
    from biasmonkey.metrics.representativeness import mean_representativeness
    from biasmonkey.tasks.response_bias.human_distributions import load_human_distributions, model_questions, score_questions

    human = load_human_distributions(args.human)
    records = [r for task in task_records(args.results).values() for r in task]
    if not records:
        raise ValueError(f"{args.results}: no response-bias results (lm-eval --log_samples files or Inspect logs)")
    model = model_questions(records)
    scores = score_questions(human, model, args.human)
    rows = [
        {"key": s.key, "task": model[s.key].task, "n_options": s.n_options, "representativeness": s.score,
         "wasserstein": s.wasserstein, "model_refusal": s.model_refusal, "human_refusal": s.human_refusal,
         "model_spread": model[s.key].spread}
        for s in scores
    ]
    print(f"{'key':<24}{'task':<28}{'n':>3}{'score':>9}{'W1':>8}{'model refusal':>15}{'human refusal':>15}")
    for r in rows:
        print(f"{r['key']:<24}{r['task']:<28}{r['n_options']:>3}{r['representativeness']:>9.3f}{r['wasserstein']:>8.3f}"
              f"{r['model_refusal']:>15.3f}{r['human_refusal']:>15.3f}")
    print(f"Mean representativeness over {len(scores)} questions: {mean_representativeness(scores):.3f}")
    spread = max(r["model_spread"] for r in rows)
    print(f"Largest difference of the model's p_q between tasks asking the same question: {spread:.2g}")
    if args.out:
        with args.out.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"Per-question scores written to {args.out}")
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
    p.add_argument("--virtual-samples", type=int, default=0,
                   help="exact mode: also report the Δ of N answers drawn per question from its valid-option distribution")
    p.add_argument("--virtual-seed", type=int, default=0, help="seed of the virtual draws")
    p.add_argument("--perturbation-seed", type=int, help="draw perturbations with our seeded generator")
    p.add_argument("--perturbation-seeds", type=seed_list, metavar="1,2,3",
                   help="several seeded draws in one run (the paper's robustness experiment); per-draw metrics")
    p.add_argument("--template", default="default",
                   help="prompt template of tasks/response_bias/templates.yml (default, extended, *_steer1/2)")
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

    p = sub.add_parser("report", help="report (markdown, HTML, tables, figures, leaderboard files) over one or many models")
    p.add_argument("results", type=Path, nargs="+", help="lm-eval --output_path folders, Inspect log folders or log files")
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into")
    p.add_argument("--name", action="append", default=[], metavar="MODEL=NAME",
                   help="show MODEL (its full or short name) as NAME (repeatable)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("representativeness", help="1 − W1/(n−1) of the model's answers to human ones (OpinionQA)")
    p.add_argument("results", type=Path, help="an lm-eval output folder (--log_samples) or an Inspect log dir")
    p.add_argument("--human", type=Path, required=True, help="human answer shares: .csv (key,option,share[,refusal]) or .json")
    p.add_argument("--out", type=Path, help="write the per-question scores to this CSV file")
    p.set_defaults(func=cmd_representativeness)

    p = sub.add_parser("inspect-eval-set", help="run an Inspect eval set from a YAML file in configs/")
    p.add_argument("config", type=Path, help="e.g. configs/inspect_response_bias.yaml")
    p.add_argument("--model", help="Inspect model, e.g. openai/gpt-4o-mini or hf/<folder> (overrides the file)")
    p.add_argument("--log-dir", help="log folder (overrides the file)")
    p.add_argument("--limit", type=int, help="pairs per task (for a quick look)")
    p.add_argument("-T", dest="task_arg", action="append", default=[], metavar="KEY=VALUE",
                   help="task argument, e.g. -T mode=sample (repeatable; overrides the file)")
    p.set_defaults(func=cmd_inspect_eval_set)

    add_yesno_compare(sub)
    add_generate(sub)
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
