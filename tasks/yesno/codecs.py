"""Per-item records to and from what each harness logs.

- lm-eval `--log_samples`: the item `doc` and its eight `(log-likelihood, is_greedy)` results:
  the CONTINUATIONS after the prompt, then after the empty (prefix-token-only) context (an imputed
  top-k floor is logged as "-7.25 imputed").
- Inspect: `Score.value` holds the log-probabilities `lp_space_yes`, `lp_yes`, `lp_space_no`,
  `lp_no`, the no-context ones `null_lp_…`, the answers `yes`, `no`, `null_yes`, `null_no`
  (log-sum-exp of each pair), `gold_yes` (1/0), `n_imputed` and `n_imputed_null`; the sample's
  metadata is the item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biasmonkey.metrics.top_logprobs import logged_logprob
from biasmonkey.tasks.contract import LoggedScore
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS
from biasmonkey.tasks.yesno.scoring import ItemRecord, score_item


def _slug(continuation: str) -> str:
    return ("space_" if continuation.startswith(" ") else "") + continuation.strip().lower()


PROMPT_KEYS = tuple(f"lp_{_slug(c)}" for c in CONTINUATIONS)  # lp_space_yes, lp_yes, lp_space_no, lp_no
NULL_KEYS = tuple(f"null_{key}" for key in PROMPT_KEYS)


def from_lm_eval(doc: Mapping[str, Any], results: Sequence[Any]) -> ItemRecord:
    """The record of one document from its eight (log-likelihood, is_greedy) results."""
    values = [logged_logprob(r[0]) for r in results]  # lm-eval logs the numbers as strings
    n = len(CONTINUATIONS)
    if len(values) != 2 * n:
        raise ValueError(f"item {doc['id']}: {len(values)} results, expected {2 * n}")
    lls, imputed = [lp for lp, _ in values], [flag for _, flag in values]
    return score_item(doc, lls[:n], lls[n:], sum(imputed[:n]), sum(imputed[n:]))


def score_value(record: ItemRecord) -> dict[str, float]:
    """The record as Inspect's `Score.value` (see the module docstring)."""
    assert record.null_logprobs is not None and record.null_yes is not None and record.null_no is not None
    return {
        **dict(zip(PROMPT_KEYS, record.logprobs)),
        **dict(zip(NULL_KEYS, record.null_logprobs)),
        "yes": record.yes,
        "no": record.no,
        "null_yes": record.null_yes,
        "null_no": record.null_no,
        "gold_yes": float(record.gold_yes),
        "n_imputed": float(record.n_imputed),
        "n_imputed_null": float(record.n_imputed_null),
    }


def from_inspect(score: LoggedScore) -> ItemRecord:
    """The record behind a (possibly epoch-reduced) score."""
    doc, value = score.sample_metadata, score.value
    if not isinstance(value, dict) or "gold" not in doc or not set(PROMPT_KEYS + NULL_KEYS) <= set(value):
        raise ValueError(f"sample {score.sample_id}: not a biasmonkey yes-no score")
    return score_item(
        doc,
        [value[k] for k in PROMPT_KEYS],
        [value[k] for k in NULL_KEYS],
        value.get("n_imputed", 0),
        value.get("n_imputed_null", 0),
    )
