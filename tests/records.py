"""Hand-made family records for the report and summary tests."""

from __future__ import annotations

import dataclasses

from biasmonkey.tasks.cognitive.scoring import CognitiveRecord
from biasmonkey.tasks.response_bias.scoring import PairRecord
from biasmonkey.tasks.yesno.scoring import ItemRecord


def pair(key: str, setting: str, delta: float | None, bias: str = "acquiescence", **extra: float) -> PairRecord:
    """A response-bias pair with Δ `delta` (None: no Δ) and entropy 0.5 on both sides (constant entropy:
    Pearson r undefined, so no uncertainty test joins a report's family); `extra` sets other fields."""
    record = PairRecord(
        key=key,
        bias=bias,
        setting=setting,
        p_q=None,
        p_qp=None,
        delta=delta,
        uncertainty_q=0.5,
        uncertainty_qp=0.5,
    )
    return dataclasses.replace(record, **extra)


def cognitive_test(i: int, score: float | None, baseline: float = 0.0) -> CognitiveRecord:
    """A generate-mode Anchoring test with `score` (None: the model gave no answer)."""
    return CognitiveRecord(
        id=f"t{i}",
        bias="Anchoring",
        scenario="s",
        mode="generate",
        reversed=False,
        k=1,
        x_1=0,
        x_2=0,
        p_control=None,
        p_treatment=None,
        answer_control=None,
        answer_treatment=None,
        response_control="",
        response_treatment="",
        score=score,
        expected_score=None,
        random_baseline=baseline,
        failure=None if score is not None else "no answer",
    )


def yesno_item(i: int, gold: str, yes: float, no: float, imputed: float = 0, imputed_null: float = 0) -> ItemRecord:
    """A COMPS item whose four answer forms score `yes`, `yes`, `no`, `no` (null prompt: 0 each)."""
    return ItemRecord(
        id=f"i{i}",
        dataset="comps",
        domain=None,
        gold=gold,
        logprobs=(yes, yes, no, no),
        null_logprobs=(0, 0, 0, 0),
        yes=yes,
        no=no,
        null_yes=-2.0,
        null_no=-1.0,
        n_imputed=imputed,
        n_imputed_null=imputed_null,
    )
