"""Pure metrics (numpy/scipy only): per-pair Δ, t-tests, uncertainty, human-likeness."""

from biasmonkey.metrics.multiple_testing import benjamini_hochberg, holm
from biasmonkey.metrics.representativeness import QuestionScore, mean_representativeness, question_representativeness
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
from biasmonkey.metrics.robustness import DrawVariation, draw_variation
from biasmonkey.metrics.statistics import (
    SIGNIFICANCE,
    Correlation,
    DeltaSummary,
    human_likeness,
    normalized_entropy,
    pearson,
    summarize_deltas,
)
from biasmonkey.metrics.virtual_sampling import VirtualStatistics, virtual_delta, virtual_statistics

__all__ = [
    "BIASES",
    "PERTURBATIONS",
    "SETTINGS",
    "SIGNIFICANCE",
    "Correlation",
    "DeltaRule",
    "DeltaSummary",
    "QuestionScore",
    "VirtualStatistics",
    "DrawVariation",
    "benjamini_hochberg",
    "delta_rule",
    "distribution_from_counts",
    "distribution_from_logprobs",
    "draw_variation",
    "holm",
    "human_likeness",
    "mean_representativeness",
    "normalized_entropy",
    "pair_delta",
    "pearson",
    "question_representativeness",
    "summarize_deltas",
    "virtual_delta",
    "virtual_statistics",
]
