"""Benchmark (a script, not a test): virtual sampling against the harness's real sampling protocol.

On a subset (default 2 tasks × 8 pairs, SmolLM2-135M-Instruct, raw prompt, CPU) one process runs
1. exact mode with virtual sampling (`virtual_samples=N`): one forward pass per prompt, N virtual
   valid answers per question side drawn from the renormalised option distribution;
2. lm-eval's real sampling (`mode=sample n_samples=N`): N one-token answers at temperature 1 per
   question side, shares over the valid answers only (invalid ones counted).
It reports the wall-time ratio, and per task the exact Δ, the virtual Δ, the real Δ, the real
invalid rate beside the virtual invalid mass, and whether real and virtual Δ agree within
sampling noise: z = (Δ_real − Δ_virtual) / sqrt(se_real² + se_virtual²) over the pairs both have
(se: stderr over pairs), and the paired t-tests of the per-pair differences real − virtual,
real − exact and virtual − exact (each estimates the exact Δ without bias, so the differences
should be 0 up to noise).

Run: `nice python tests/bench_virtual_sampling.py --out bench_out` (writes virtual_sampling.md/.json).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch
from bench_exact_mode import evaluate  # sets the offline environment before lm-eval loads
from lm_eval.models.huggingface import HFLM

from biasmonkey.harness_ext.app.default_model import ensure_default_model
from biasmonkey.metrics import DeltaSummary, summarize_deltas
from biasmonkey.metrics.virtual_sampling import virtual_delta, virtual_statistics
from biasmonkey.tasks.response_bias.codecs import from_lm_eval as read_logged_pair
from biasmonkey.tasks.response_bias.scoring import PairRecord

TASKS = ["biasmonkey_acquiescence", "biasmonkey_response_order"]


def task_records(results: dict) -> dict[str, list[PairRecord]]:
    return {
        task: [read_logged_pair(s["doc"], s["filtered_resps"]) for s in samples]
        for task, samples in results["samples"].items()
    }


def fmt(s: DeltaSummary) -> str:
    return f"{s.mean:+.2f} ± {s.stderr:.2f}" if s.n > 1 else "n/a"


def compare_task(exact: list[PairRecord], real: list[PairRecord], n: int, seed: int) -> dict:
    """The per-task figures: exact, virtual and real Δ, their differences and the invalid answers."""
    exact_by_key = {r.key: r for r in exact}
    virtual = {r.key: virtual_delta(r, n, seed) for r in exact}
    both = [r for r in real if r.delta is not None]  # pairs the real protocol gave a Δ
    s_exact = summarize_deltas([r.delta for r in exact])
    s_virtual = virtual_statistics(exact, n, seed)
    s_real = summarize_deltas([r.delta for r in both])
    s_virtual_both = summarize_deltas([virtual[r.key] for r in both])
    z = (s_real.mean - s_virtual_both.mean) / math.hypot(s_real.stderr, s_virtual_both.stderr)
    paired = {
        "real_minus_virtual": summarize_deltas([r.delta - virtual[r.key] for r in both]),
        "real_minus_exact": summarize_deltas([r.delta - exact_by_key[r.key].delta for r in both]),
        "virtual_minus_exact": summarize_deltas([virtual[r.key] - exact_by_key[r.key].delta for r in exact]),
    }
    answers = sum(r.n_answers for r in real)
    return {
        "pairs": len(exact),
        "pairs_with_real_delta": len(both),
        "exact": s_exact.as_dict(),
        "virtual": s_virtual.delta.as_dict(),
        "virtual_on_real_pairs": s_virtual_both.as_dict(),
        "real": s_real.as_dict(),
        "z_real_vs_virtual": z,
        "paired": {k: v.as_dict() for k, v in paired.items()},
        "real_invalid_rate": sum(r.n_invalid for r in real) / answers,
        "virtual_invalid_mass": s_virtual.invalid_mass,
        "virtual_expected_draws": s_virtual.expected_draws,
        "_summaries": (s_exact, s_virtual.delta, s_real, paired),
    }


def to_markdown(report: dict) -> str:
    n = report["n_samples"]
    lines = [
        f"# Virtual sampling vs real sampling ({report['model']}, {report['pairs_per_task']} pairs per task, N = {n})",
        "",
        f"Wall time: exact mode + virtual sampling {report['exact_seconds']:.1f} s, real sampling "
        f"{report['sample_seconds']:.1f} s → real sampling costs **{report['ratio']:.0f}×** (one run, one process).",
        "",
        "| task | exact Δ | virtual Δ | real Δ (pairs) | z real vs virtual | real − virtual (paired p) "
        "| real − exact (paired p) | virtual − exact (paired p) | real invalid rate | virtual invalid mass | expected draws for N |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task, t in report["tasks"].items():
        s_exact, s_virtual, s_real, paired = t.pop("_summaries")
        diffs = [
            f"{fmt(paired[k])} ({paired[k].p:.2f})"
            for k in ("real_minus_virtual", "real_minus_exact", "virtual_minus_exact")
        ]
        lines.append(
            f"| {task.removeprefix('biasmonkey_')} | {fmt(s_exact)} | {fmt(s_virtual)} | {fmt(s_real)} ({s_real.n}/{t['pairs']}) "
            f"| {t['z_real_vs_virtual']:+.2f} | {' | '.join(diffs)} | {t['real_invalid_rate']:.1%} "
            f"| {t['virtual_invalid_mass']:.1%} | {t['virtual_expected_draws']:.0f} |"
        )
    lines += [
        "",
        "Δ in points, mean ± stderr over pairs. Real sampling: shares over the valid answers of the N drawn "
        "(a pair with no valid answer on a side has no Δ); virtual: N valid answers drawn from the exact "
        "distribution renormalised over the options (seed "
        f"{report['virtual_seed']}). z uses the pairs with a real Δ; |z| < 2 is consistent with sampling noise. "
        "Paired p: two-sided t-test of the per-pair difference against 0. Invalid mass: 1 − probability of "
        'the option letters (" A", "A", …) per question side; the real protocol also accepts lower-case '
        'letters and "(A"-style tokens, so its invalid rate can be slightly below the mass.',
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("bench_out"))
    parser.add_argument("--limit", type=int, default=8, help="pairs per task")
    parser.add_argument("--n-samples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0, help="virtual sampling seed")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    lm = HFLM(pretrained=str(ensure_default_model()), device="cpu", batch_size=args.batch_size, dtype="float32")

    exact_options = {"mode": "exact", "virtual_samples": args.n_samples, "virtual_seed": args.seed}
    evaluate(lm, TASKS, exact_options, limit=1)  # warm-up (model and task loading)
    print("1/2 exact mode + virtual sampling ...", flush=True)
    exact, exact_seconds = evaluate(lm, TASKS, exact_options, limit=args.limit)
    print(f"2/2 real sampling, N = {args.n_samples} ...", flush=True)
    real, sample_seconds = evaluate(lm, TASKS, {"mode": "sample", "n_samples": args.n_samples}, limit=args.limit)

    exact_records, real_records = task_records(exact), task_records(real)
    report = {
        "model": "SmolLM2-135M-Instruct (float32, CPU, raw prompt)",
        "pairs_per_task": args.limit,
        "n_samples": args.n_samples,
        "virtual_seed": args.seed,
        "exact_seconds": exact_seconds,
        "sample_seconds": sample_seconds,
        "ratio": sample_seconds / exact_seconds,
        "tasks": {t: compare_task(exact_records[t], real_records[t], args.n_samples, args.seed) for t in TASKS},
    }
    # the harness's own virtual metrics must be the ones recomputed here
    for t in TASKS:
        reported = exact["results"][t]["virtual_delta,none"]
        assert math.isclose(reported, report["tasks"][t]["virtual"]["mean"], abs_tol=1e-9), (t, reported)
    md = to_markdown(report)
    (args.out / "virtual_sampling.md").write_text(md)
    (args.out / "virtual_sampling.json").write_text(json.dumps(report, indent=2) + "\n")
    print(md)


if __name__ == "__main__":
    main()
