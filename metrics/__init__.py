"""Pure metrics (numpy/scipy only): per-pair Δ, t-tests, uncertainty, human-likeness."""

from biasmonkey.metrics.response_bias import (
    BIASES,
    PERTURBATIONS,
    SETTINGS,
    DeltaRule,
    delta_rule,
    distribution_from_counts,
    distribution_from_logprobs,
    pair_delta,
)
from biasmonkey.metrics.statistics import (
    SIGNIFICANCE,
    Correlation,
    DeltaSummary,
    human_likeness,
    normalized_entropy,
    pearson,
    summarize_deltas,
)

__all__ = [
    "BIASES",
    "PERTURBATIONS",
    "SETTINGS",
    "SIGNIFICANCE",
    "Correlation",
    "DeltaRule",
    "DeltaSummary",
    "delta_rule",
    "distribution_from_counts",
    "distribution_from_logprobs",
    "human_likeness",
    "normalized_entropy",
    "pair_delta",
    "pearson",
    "summarize_deltas",
]
