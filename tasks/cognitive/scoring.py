"""Per-test records: the contract between the harness adapters and the metrics.

An adapter turns one test's model outputs into a CognitiveRecord: in exact mode the log-likelihood
of each answer label after the control and after the treatment prompt, in generate mode the
two answer texts (in the two-step protocol the extraction replies, with the free answers they
were extracted from). Answers are mapped back to the original option order here; every
set-level number is computed from a list of records (`summarize_records`). Both harnesses build
their records with these functions, so the same texts give the same records and metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from biasmonkey.metrics import distribution_from_logprobs
from biasmonkey.metrics.cognitive import (
    BiasSummary,
    bias_score,
    check_params,
    expected_metric,
    random_baseline,
    summarize_bias,
)
from biasmonkey.tasks.cognitive.prompts import SIDES, extract_option, to_original


@dataclass(frozen=True)
class CognitiveRecord:
    """One test's outcome. Answers and distributions are in the original option order."""

    id: str
    bias: str
    scenario: str
    mode: str  # "exact" or "generate"
    reversed: bool
    k: int
    x_1: float
    x_2: float
    p_control: list[float] | None  # exact mode: answer distribution over the control options
    p_treatment: list[float] | None
    answer_control: int | None  # zero-based; exact mode: the most likely option
    answer_treatment: int | None
    response_control: str | None  # generate mode: the text the answer was read from (two_step: the extraction reply)
    response_treatment: str | None
    score: float | None  # m at the two answers; None when the test failed
    expected_score: float | None  # exact mode: E[m] under the two distributions
    random_baseline: float  # E[m] for uniformly random answers
    failure: str | None = None  # why the test has no score
    # Records rebuilt from an epoch-averaged Inspect score: the share of its epochs that failed.
    failed_share: float | None = None
    # Two-step protocol: the free answers the extraction step read (None in the other modes).
    decision_control: str | None = None
    decision_treatment: str | None = None

    @property
    def failed(self) -> bool:
        return self.score is None

    @property
    def failure_weight(self) -> float:
        """1 for a failed test, 0 for a scored one (the failed share of its epochs, when averaged)."""
        return float(self.failed) if self.failed_share is None else self.failed_share

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CognitiveRecord:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def option_counts(doc: Mapping[str, Any]) -> tuple[int, int]:
    """(control, treatment) options of a test."""
    return len(doc["control_options"]), len(doc["treatment_options"])


def metric_params_of(doc: Mapping[str, Any]) -> tuple[int, float, float]:
    """(k, x_1, x_2) of a test, checked against its options (`metrics.cognitive.check_params`);
    the error names the test."""
    k, x_1, x_2 = float(doc["k"]), float(doc["x_1"]), float(doc["x_2"])
    try:
        check_params(k, x_1, x_2, *option_counts(doc))
    except ValueError as err:
        raise ValueError(f"test {doc['id']}: metric parameters: {err}") from None
    return int(k), x_1, x_2


def random_baseline_of(doc: Mapping[str, Any]) -> float:
    """E[m] of a test for uniformly random answers."""
    return random_baseline(*option_counts(doc), *metric_params_of(doc))


def _common(doc: Mapping[str, Any], mode: str) -> dict[str, Any]:
    k, x_1, x_2 = metric_params_of(doc)
    return {
        "id": doc["id"],
        "bias": doc["bias"],
        "scenario": doc["scenario"],
        "mode": mode,
        "reversed": bool(doc["reversed"]),
        "k": k,
        "x_1": x_1,
        "x_2": x_2,
        "random_baseline": random_baseline_of(doc),
    }


def score_exact(
    doc: Mapping[str, Any], control_logprobs: Sequence[float], treatment_logprobs: Sequence[float]
) -> CognitiveRecord:
    """Exact mode: per side, the log-likelihood of each offered option's answer label
    ("Option 1:" … "Option n:", in the offered order).

    Each side's distribution is the softmax over these total log-likelihoods (the model's
    answer distribution renormalised over the valid options), reordered to the original options.
    The argmax answers give `score`, the two distributions `expected_score`.
    """
    dists = []
    for side, lps in zip(SIDES, (control_logprobs, treatment_logprobs)):
        n = len(doc[f"{side}_options"])
        if len(lps) != n:
            raise ValueError(f"test {doc['id']}: {len(lps)} log-likelihoods for the {n} {side} options")
        offered = distribution_from_logprobs(lps)
        dists.append(offered[::-1] if doc["reversed"] else offered)
    p_control, p_treatment = dists
    a_1, a_2 = int(np.argmax(p_control)), int(np.argmax(p_treatment))
    k, x_1, x_2 = metric_params_of(doc)
    return CognitiveRecord(
        **_common(doc, "exact"),
        p_control=p_control.tolist(),
        p_treatment=p_treatment.tolist(),
        answer_control=a_1,
        answer_treatment=a_2,
        response_control=None,
        response_treatment=None,
        score=bias_score(a_1, a_2, k, x_1, x_2, n_1=p_control.size, n_2=p_treatment.size),
        expected_score=expected_metric(p_control, p_treatment, k, x_1, x_2),
    )


def read_answer(text: str, n_options: int, reversed_options: bool) -> tuple[int | None, str | None]:
    """(zero-based original option, None) for a valid answer, else (None, why it is not one)."""
    number = extract_option(text)
    if number is None:
        return None, "no 'Option N' in the answer"
    if not 1 <= number <= n_options:
        return None, f"Option {number} is not one of the {n_options} options"
    return to_original(number - 1, n_options, reversed_options), None


def score_answers(
    doc: Mapping[str, Any],
    control_answer: str,
    treatment_answer: str,
    decisions: tuple[str, str] | None = None,
) -> CognitiveRecord:
    """Generate mode: the answer texts (one-step answers, or the extraction step's replies, with
    the two free answers they were extracted from as `decisions`).

    A side without a valid "Option N" fails the test: it gets no score and is counted in the
    failure rate, as the paper did.
    """
    answers, failures = [], []
    for side, text in zip(SIDES, (control_answer, treatment_answer)):
        index, problem = read_answer(text, len(doc[f"{side}_options"]), bool(doc["reversed"]))
        answers.append(index)
        if problem:
            failures.append(f"{side}: {problem}")
    a_1, a_2 = answers
    n_1, n_2 = option_counts(doc)
    score = None if failures else bias_score(a_1, a_2, *metric_params_of(doc), n_1=n_1, n_2=n_2)
    return CognitiveRecord(
        **_common(doc, "generate"),
        p_control=None,
        p_treatment=None,
        answer_control=a_1,
        answer_treatment=a_2,
        response_control=control_answer,
        response_treatment=treatment_answer,
        score=score,
        expected_score=None,
        failure="; ".join(failures) or None,
        decision_control=decisions[0] if decisions else None,
        decision_treatment=decisions[1] if decisions else None,
    )


# Why a record of step one of lm-eval's two-step runs has no score yet.
STEP_ONE_ONLY = "two-step protocol, step one only: free answers, not yet extracted (run step two with decisions=...)"


def step_one_record(doc: Mapping[str, Any], control_decision: str, treatment_decision: str) -> CognitiveRecord:
    """Step one of the two-step protocol in lm-eval (`two_step.py`): the free answers, no answer or score yet."""
    return CognitiveRecord(
        **_common(doc, "generate"),
        p_control=None,
        p_treatment=None,
        answer_control=None,
        answer_treatment=None,
        response_control=None,
        response_treatment=None,
        score=None,
        expected_score=None,
        failure=STEP_ONE_ONLY,
        decision_control=control_decision,
        decision_treatment=treatment_decision,
    )


def summarize_records(records: Sequence[CognitiveRecord]) -> BiasSummary:
    """The per-bias numbers of a list of records (one task)."""
    exact = bool(records) and all(r.mode == "exact" for r in records)
    return summarize_bias(
        [r.score for r in records],
        [r.random_baseline for r in records],
        [r.expected_score for r in records] if exact else None,
    )
