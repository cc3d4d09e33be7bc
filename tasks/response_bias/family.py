"""The response-bias family's contract: its tasks, the metrics each task reports, its codecs.

Metric names are the same in both harnesses. Positive Δ on a bias task is the human-like
direction (higher is better there); humans show no change on the perturbation tasks.
"""

from __future__ import annotations

from typing import Any

from biasmonkey.metrics.response_bias import BIASES, SETTINGS
from biasmonkey.metrics.virtual_sampling import expected_draws, mean_invalid_mass, virtual_delta
from biasmonkey.tasks.contract import Family, Metric, t_test_metrics
from biasmonkey.tasks.response_bias import codecs
from biasmonkey.tasks.response_bias.options import RunOptions
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.response_bias.summary import summarize

# biasmonkey_acquiescence, …_acquiescence_key_typo, … (20 tasks), and the reworded acquiescence
# task outside the main suite.
TASKS: dict[str, dict[str, Any]] = {
    **{task_name(b, s): {"bias": b, "setting": s, "reword": False} for b in BIASES for s in SETTINGS},
    task_name("acquiescence", "bias", reword=True): {"bias": "acquiescence", "setting": "bias", "reword": True},
}
SUITE_TASKS = tuple(task_name(b, s) for b in BIASES for s in SETTINGS)  # the group `biasmonkey`


def _invalid_rate(counts: list[tuple[float, float]]) -> float:
    """Invalid answers over all sampled answers (0 when nothing was sampled, as in exact mode)."""
    answers = sum(n for _, n in counts)
    return sum(i for i, _ in counts) / answers if answers else 0.0


def metrics(
    options: RunOptions, harness: str, bias: str, setting: str, reword: bool = False
) -> list[Metric[PairRecord]]:
    """What a task reports: Δ with its t-test, the answers' uncertainty, invalid answers (sample
    mode; Inspect always), imputed option log-probabilities (top-k reading: Inspect, lm-eval's biasmonkey-server), the virtual-sampling statistics when
    virtual_samples > 0, and every perturbation draw's Δ when perturbation_seeds is set."""
    is_bias = setting == "bias"
    table: list[Metric[PairRecord]] = [
        *t_test_metrics("delta", "n_pairs", lambda r: r.delta, is_bias),
        Metric("uncertainty_q", False, lambda r: r.uncertainty_q),
        Metric("uncertainty_qp", False, lambda r: r.uncertainty_qp),
    ]
    if options.mode == "sample" or harness == "inspect":
        table.append(Metric("invalid_rate", False, lambda r: (r.n_invalid, r.n_answers), _invalid_rate))
    table.append(Metric("imputed_options", False, lambda r: r.n_imputed, sum))
    if n := options.virtual_samples:
        seed = options.virtual_seed
        table += [
            *t_test_metrics("virtual_delta", "virtual_n_pairs", lambda r: virtual_delta(r, n, seed), is_bias),
            Metric("invalid_mass", False, mean_invalid_mass),
            Metric("virtual_expected_draws", False, lambda r: expected_draws(r, n)),
        ]
    for draw in options.draw_seeds(setting):
        table += t_test_metrics(
            f"delta_s{draw}",
            f"n_pairs_s{draw}",
            lambda r: r.delta,
            is_bias,
            applies=lambda r, d=draw: r.perturbation_seed == d,
        )
    return table


def docs(options: RunOptions, bias: str, setting: str, reword: bool = False) -> list[dict[str, Any]]:
    return options.task_pairs(bias, setting, reword)


FAMILY: Family[PairRecord] = Family(
    name="response_bias",
    title="Survey response biases (Tjuatja et al., TACL 2024)",
    item="pair",
    tasks=TASKS,
    options_type=RunOptions,
    record_type=PairRecord,
    docs=docs,
    metrics=metrics,
    summarize=summarize,
    from_lm_eval=codecs.from_lm_eval,
    from_inspect=codecs.from_inspect,
    scorer="pair_scorer",
    variants=tuple(name for name in TASKS if name not in SUITE_TASKS),
)
