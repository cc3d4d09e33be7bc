"""The `biasmonkey` command line: tasks-dir, score-samples, run, plan, summarize, inspect-eval-set, yesno-compare,
generate, representativeness, data, task-files."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from biasmonkey.harness_ext.cognitive_generate import add_subcommand as add_generate
from biasmonkey.harness_ext.data_command import add_subcommand as add_data
from biasmonkey.harness_ext.plan import add_subcommand as add_plan
from biasmonkey.harness_ext.run import add_subcommand as add_run
from biasmonkey.harness_ext.run import tasks_dir
from biasmonkey.harness_ext.task_files_command import add_subcommand as add_task_files
from biasmonkey.harness_ext.yesno_compare import add_subcommand as add_yesno_compare


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


def cmd_summarize(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.summary import write_summary

    md, csv_path = write_summary(args.results, args.out, args.uncertainty_side, args.model)
    print(md.read_text())
    print(f"Summary written to {md} and {csv_path}")
    return 0


def hub_dataset_id(text: str) -> str:
    from biasmonkey.harness_ext.report.hub import check_dataset_id

    try:
        return check_dataset_id(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def cmd_report(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.report import write_report
    from biasmonkey.harness_ext.report.hub import PLACEHOLDER_DATASET
    from biasmonkey.harness_ext.report.inputs import parse_names

    hub = args.hub_dataset or PLACEHOLDER_DATASET
    baselines = False if args.no_baselines else (args.baselines or True)
    md = write_report(
        args.results,
        args.out,
        parse_names(args.name),
        hub_dataset=hub,
        baselines=baselines,
        uncertainty_side=args.uncertainty_side,
    )
    print(f"Report written to {md} and {md.with_suffix('.html')} (tables, figures and leaderboard files in {args.out})")
    return 0


def published_models(text: str) -> list[str]:
    from biasmonkey.tasks.response_bias.published_samples import check_models

    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected MODEL,MODEL (or --no-baselines)")
    try:
        return list(check_models(names))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def add_uncertainty_side(p: argparse.ArgumentParser) -> None:
    """The `--uncertainty-side` option of summarize and report."""
    from biasmonkey.tasks.response_bias.uncertainty import CHOICES, DEFAULT_CHOICE

    p.add_argument(
        "--uncertainty-side",
        choices=CHOICES,
        default=DEFAULT_CHOICE,
        help="whose answer uncertainty the correlation with |Δ| uses: paper (default) = the authors' per-bias "
        "choice (TACL Table 4: q for acquiescence and odd/even, q' for response order, opinion float and "
        "allow/forbid; q on perturbation rows), q or qp = that side on every row",
    )


def cmd_representativeness(args: argparse.Namespace) -> int:
    import csv
    from collections import Counter

    from biasmonkey.harness_ext.summary import task_records
    from biasmonkey.metrics.representativeness import mean_representativeness
    from biasmonkey.tasks.response_bias.human_distributions import (
        load_human_distributions,
        model_questions,
        score_questions,
    )

    human = load_human_distributions(args.human)
    records = [r for task in task_records(args.results).values() for r in task]
    if not records:
        raise ValueError(f"{args.results}: no response-bias results (lm-eval --log_samples files or Inspect logs)")
    model = model_questions(records)
    scores = score_questions(human, model, args.human)
    rows = [
        {
            "key": s.key,
            "question": model[s.key].question,
            "task": model[s.key].task,
            "n_options": s.n_options,
            "representativeness": s.score,
            "wasserstein": s.wasserstein,
            "model_refusal": s.model_refusal,
            "human_refusal": s.human_refusal,
            "model_spread": model[s.key].spread,
            "note": model[s.key].note,
        }
        for s in scores
    ]
    print(f"{'key':<24}{'question (task)':<40}{'n':>3}{'score':>9}{'W1':>8}{'model refusal':>15}{'human refusal':>15}")
    for r in rows:
        asked = f"{r['question']} ({r['task']})"
        print(
            f"{r['key']:<24}{asked:<40}{r['n_options']:>3}{r['representativeness']:>9.3f}{r['wasserstein']:>8.3f}"
            f"{r['model_refusal']:>15.3f}{r['human_refusal']:>15.3f}"
        )
    print(f"Mean representativeness over {len(scores)} questions: {mean_representativeness(scores):.3f}")
    used = Counter(r["question"] for r in rows)
    print(
        "The model's answers to the question the respondents saw: "
        + ", ".join(f"{question} for {n} key(s)" for question, n in used.items())
        + " (odd_even q′: the original had no middle option)" * ("odd_even q′" in used)
    )
    surveys = {s.key: model[s.key].survey for s in scores}
    notes = [f"{r['key']} ({r['note']})" for r in rows if surveys[r["key"]].reordered or surveys[r["key"]].not_offered]
    if notes:
        print("Human shares mapped to the prompt's option order: " + "; ".join(notes))
    spread = max(r["model_spread"] for r in rows)
    print(f"Largest difference of the model's answers between tasks asking the same prompt: {spread:.2g}")
    if args.out:
        with args.out.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"Per-question scores written to {args.out}")
    return 0


def cmd_inspect_eval_set(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.inspect.eval_set import parse_task_args, run_eval_set

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

    add_run(sub)
    add_plan(sub)

    p = sub.add_parser("summarize", help="summary table of an lm-eval output folder (run with --log_samples)")
    p.add_argument("results", type=Path, help="the folder given to lm_eval --output_path, or an Inspect log dir")
    p.add_argument("--out", type=Path, help="where to write summary.md/.csv (default: the results folder)")
    p.add_argument(
        "--model",
        metavar="NAME",
        help="summarize this model's runs only (its full or short name, or a run's title as the summary shows it); "
        "default: every run in the folder, each model and each setting of a model in its own table",
    )
    add_uncertainty_side(p)
    p.set_defaults(func=cmd_summarize)

    p = sub.add_parser(
        "report", help="report (markdown, HTML, tables, figures, leaderboard files) over one or many models"
    )
    p.add_argument(
        "results", type=Path, nargs="+", help="lm-eval --output_path folders, Inspect log folders or log files"
    )
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into")
    p.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="MODEL=NAME",
        help="show MODEL (its full or short name) as NAME (repeatable)",
    )
    p.add_argument(
        "--hub-dataset",
        type=hub_dataset_id,
        metavar="OWNER/NAME",
        help="the Hub Benchmark dataset that the .eval_results entries name (register it once: configs/hub/README.md; "
        "default: a placeholder id, REPLACE-ME/biasmonkey)",
    )
    paper = p.add_mutually_exclusive_group()
    paper.add_argument(
        "--baselines",
        type=published_models,
        metavar="MODEL,MODEL",
        help="the paper's models to show beside yours (default, with response-bias results: all nine, llama2-7b … "
        "gpt-3.5-turbo, scored from their released samples)",
    )
    paper.add_argument(
        "--no-baselines", action="store_true", help="leave the paper's models (Tjuatja et al.) out of the report"
    )
    add_uncertainty_side(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("representativeness", help="1 − W1/(n−1) of the model's answers to human ones (OpinionQA)")
    p.add_argument("results", type=Path, help="an lm-eval output folder (--log_samples) or an Inspect log dir")
    p.add_argument(
        "--human", type=Path, required=True, help="human answer shares: .csv (key,option,share[,refusal]) or .json"
    )
    p.add_argument("--out", type=Path, help="write the per-question scores to this CSV file")
    p.set_defaults(func=cmd_representativeness)

    p = sub.add_parser("inspect-eval-set", help="run an Inspect eval set from a YAML file in configs/")
    p.add_argument("config", type=Path, help="e.g. configs/inspect_response_bias.yaml")
    p.add_argument("--model", help="Inspect model, e.g. openai/gpt-4o-mini or hf/<folder> (overrides the file)")
    p.add_argument("--log-dir", help="log folder (overrides the file)")
    p.add_argument("--limit", type=int, help="pairs per task (for a quick look)")
    p.add_argument(
        "-T",
        dest="task_arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="task argument, e.g. -T mode=sample (repeatable; overrides the file)",
    )
    p.set_defaults(func=cmd_inspect_eval_set)

    add_yesno_compare(sub)
    add_generate(sub)
    add_data(sub)
    add_task_files(sub)
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
