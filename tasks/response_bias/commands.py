"""The response-bias family's commands: `score-samples` (the authors' released samples rescored)
and `representativeness` (the model's answers against human ones), and the options it adds to
`summarize` and `report` (`--uncertainty-side`, `--baselines`, `--no-baselines`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


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

    from biasmonkey.harness_ext.app.summary import task_records
    from biasmonkey.metrics.representativeness import mean_representativeness
    from biasmonkey.tasks.atomic_write import atomic_open
    from biasmonkey.tasks.response_bias.family import FAMILY
    from biasmonkey.tasks.response_bias.human_distributions import (
        load_human_distributions,
        model_questions,
        score_questions,
    )

    human = load_human_distributions(args.human)
    records = [r for task in task_records(args.results, FAMILY).values() for r in task]
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
        with atomic_open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"Per-question scores written to {args.out}")
    return 0


def add_commands(sub: Any) -> None:
    """`score-samples` and `representativeness` on the `biasmonkey` CLI's subparsers."""
    p = sub.add_parser(
        "score-samples",
        help="rescore the answers of the response-bias paper's models (Tjuatja et al.'s released samples)",
    )
    p.add_argument("directory", type=Path, help="folder of <bias>.csv / <bias>-<perturbation>.csv sample files")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    p.add_argument("--include-reword", action="store_true", help="add the acquiescence reword row if present")
    p.set_defaults(func=cmd_score_samples)

    p = sub.add_parser(
        "representativeness", help="score how close a model's survey answers are to people's (1 − W1/(n−1), OpinionQA)"
    )
    p.add_argument("results", type=Path, help="an lm-eval output folder (--log_samples) or an Inspect log dir")
    p.add_argument(
        "--human", type=Path, required=True, help="human answer shares: .csv (key,option,share[,refusal]) or .json"
    )
    p.add_argument("--out", type=Path, help="write the per-question scores to this CSV file")
    p.set_defaults(func=cmd_representativeness)


def add_summary_options(p: argparse.ArgumentParser) -> None:
    add_uncertainty_side(p)


def summary_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"uncertainty_side": args.uncertainty_side}


def add_report_options(p: argparse.ArgumentParser) -> None:
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


def report_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "baselines": False if args.no_baselines else (args.baselines or True),
        "uncertainty_side": args.uncertainty_side,
    }
