"""Per-question records to and from what each harness logs.

- lm-eval `--log_samples`: the question `doc` and its eight `(log-likelihood, is_greedy)` results,
  the CONTINUATIONS after the prompt (an imputed top-k floor is logged as "-7.25 imputed").
- Inspect: `Score.value` holds the log-probabilities `lp_space_a`, `lp_a`, … `lp_space_d`,
  `lp_d`, the letters' `a` … `d` (log-sum-exp of each pair), `gold` (0–3) and `n_imputed`; the
  sample's metadata is the question (id, domain, gold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biasmonkey.metrics.top_logprobs import logged_logprob
from biasmonkey.tasks.answer_position.prompts import CONTINUATIONS, LETTERS
from biasmonkey.tasks.answer_position.scoring import McqRecord, score_item
from biasmonkey.tasks.contract import LoggedScore


def _slug(continuation: str) -> str:
    return ("space_" if continuation.startswith(" ") else "") + continuation.strip().lower()


PROMPT_KEYS = tuple(f"lp_{_slug(c)}" for c in CONTINUATIONS)  # lp_space_a, lp_a, …, lp_space_d, lp_d


def from_lm_eval(doc: Mapping[str, Any], results: Sequence[Any]) -> McqRecord:
    """The record of one document from its eight (log-likelihood, is_greedy) results."""
    values = [logged_logprob(r[0]) for r in results]  # lm-eval logs the numbers as strings
    if len(values) != len(CONTINUATIONS):
        raise ValueError(f"item {doc['id']}: {len(values)} results, expected {len(CONTINUATIONS)}")
    return score_item(doc, [lp for lp, _ in values], sum(flag for _, flag in values))


def score_value(record: McqRecord) -> dict[str, float]:
    """The record as Inspect's `Score.value` (see the module docstring)."""
    return {
        **dict(zip(PROMPT_KEYS, record.logprobs)),
        **{x.lower(): lp for x, lp in zip(LETTERS, record.letters)},
        "gold": float(LETTERS.index(record.gold)),
        "n_imputed": float(record.n_imputed),
    }


def from_inspect(score: LoggedScore) -> McqRecord:
    """The record behind a (possibly epoch-reduced) score."""
    doc, value = score.sample_metadata, score.value
    if not isinstance(value, dict) or "gold" not in doc or "domain" not in doc or not set(PROMPT_KEYS) <= set(value):
        raise ValueError(f"sample {score.sample_id}: not a biasmonkey answer-position score")
    return score_item(doc, [value[k] for k in PROMPT_KEYS], value.get("n_imputed", 0))
