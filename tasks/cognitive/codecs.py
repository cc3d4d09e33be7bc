"""Per-test records to and from what each harness logs.

- lm-eval `--log_samples`: the test `doc` and its results: exact mode one `(log-likelihood,
  is_greedy)` per answer label, control then treatment; generate mode one answer text per side
  (two_step: step one's free answers, or step two's extraction replies, with the free answers in
  the doc; `two_step.py`).
- Inspect: `Score.value` holds flat numbers: `score` (m, NaN for a failed test), `failed`,
  `control_failed`, `treatment_failed` (0/1), `answer_control`, `answer_treatment` (zero-based
  original indices, NaN when unreadable) and `random_baseline`. With `--epochs N` Inspect's mean
  reducer averages them key by key, skipping NaN: a test's score is the mean m over its epochs
  with two valid answers, `failed` the share of its epochs that failed. `Score.metadata` holds
  the whole record of one epoch (answer texts and failure reasons included).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from biasmonkey.tasks.cognitive.scoring import (
    CognitiveRecord,
    metric_params_of,
    random_baseline_of,
    score_answers,
    score_exact,
    step_one_record,
)
from biasmonkey.tasks.cognitive.two_step import DECIDE, EXTRACT, STEP
from biasmonkey.tasks.contract import LoggedScore


def record_from_results(doc: Mapping[str, Any], results: Sequence[Any], mode: str) -> CognitiveRecord:
    """The record of one lm-eval document from its results (filtered responses, in request order)."""
    if mode == "exact":
        lls = [float(r[0]) for r in results]  # (log-likelihood, is_greedy) per label, control then treatment
        n_control = len(doc["control_options"])
        return score_exact(doc, lls[:n_control], lls[n_control:])
    control, treatment = results
    step = doc.get(STEP)
    if step == DECIDE:
        return step_one_record(doc, control, treatment)
    decisions = (doc["decision_control"], doc["decision_treatment"]) if step == EXTRACT else None
    return score_answers(doc, control, treatment, decisions)


def from_lm_eval(doc: Mapping[str, Any], results: list[Any]) -> CognitiveRecord:
    """The record of one logged document; exact mode logs one result per label, generate mode one per side."""
    n_labels = len(doc["control_options"]) + len(doc["treatment_options"])
    return record_from_results(doc, results, "exact" if len(results) == n_labels else "generate")


def _number(value: float | int | None) -> float:
    return math.nan if value is None else float(value)


def score_value(record: CognitiveRecord) -> dict[str, float]:
    """The record as Inspect's `Score.value` (see the module docstring)."""
    return {
        "score": _number(record.score),
        "failed": float(record.failed),
        "control_failed": float(record.answer_control is None),
        "treatment_failed": float(record.answer_treatment is None),
        "answer_control": _number(record.answer_control),
        "answer_treatment": _number(record.answer_treatment),
        "random_baseline": record.random_baseline,
    }


def _answer(value: float) -> int | None:
    return None if math.isnan(value) or value != int(value) else int(value)


def from_inspect(score: LoggedScore) -> CognitiveRecord:
    """One epoch's whole record when the score carries it; else (an epoch-averaged score) the
    test's mean score over its valid epochs and the share of its epochs that failed."""
    value = score.value
    if not isinstance(value, dict) or "score" not in value:
        raise ValueError(f"sample {score.sample_id}: not a biasmonkey cognitive-bias score")
    doc = score.sample_metadata
    if "control_options" in doc:  # the test's document: its x must be indices of its options
        metric_params_of(doc)
    if score.metadata and "random_baseline" in score.metadata:
        return CognitiveRecord.from_dict(score.metadata)
    return CognitiveRecord(
        id=doc["id"],
        bias=doc["bias"],
        scenario=doc["scenario"],
        mode="generate",
        reversed=bool(doc["reversed"]),
        k=int(doc["k"]),
        x_1=float(doc["x_1"]),
        x_2=float(doc["x_2"]),
        p_control=None,
        p_treatment=None,
        answer_control=_answer(value["answer_control"]),
        answer_treatment=_answer(value["answer_treatment"]),
        response_control=None,
        response_treatment=None,
        score=None if math.isnan(value["score"]) else value["score"],
        expected_score=None,
        random_baseline=value.get("random_baseline", random_baseline_of(doc)),
        failed_share=value["failed"],
    )
