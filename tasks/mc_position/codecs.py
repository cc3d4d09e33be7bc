"""Per-document records to and from what each harness logs.

- lm-eval `--log_samples`: the document (the wrapped task's own fields and `biasmonkey_position`:
  id, kind, n, gold, shift, the options in the order shown) and its results, each letter's
  spellings in order (an imputed top-k floor is logged as "-7.25 imputed").
- Inspect: `Score.value` holds the spellings' log-probabilities `lp_0`, `lp_1`, … (letter by
  letter), each letter's `A`, `B`, … and `n_imputed`; the sample's metadata is the document's
  `biasmonkey_position` entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from biasmonkey.metrics.top_logprobs import logged_logprob
from biasmonkey.tasks.contract import LoggedScore
from biasmonkey.tasks.mc_position.prompts import LETTERS
from biasmonkey.tasks.mc_position.scoring import PositionRecord, score_document

META = "biasmonkey_position"  # the key of a wrapped document's position entry


def from_lm_eval(doc: Mapping[str, Any], results: Sequence[Any]) -> PositionRecord:
    """The record of one document from its (log-likelihood, is_greedy) results."""
    if META not in doc:
        raise ValueError(f"document without its {META!r} entry: not a biasmonkey position document")
    values = [logged_logprob(r[0]) for r in results]  # lm-eval logs the numbers as strings
    return score_document(doc[META], [lp for lp, _ in values], sum(flag for _, flag in values))


def score_value(record: PositionRecord) -> dict[str, float]:
    """The record as Inspect's `Score.value` (see the module docstring)."""
    return {
        **{f"lp_{i}": lp for i, lp in enumerate(record.logprobs)},
        **dict(zip(LETTERS, record.letters)),
        "n_imputed": float(record.n_imputed),
    }


def from_inspect(score: LoggedScore) -> PositionRecord:
    """The record behind a (possibly epoch-reduced) score."""
    doc, value = score.sample_metadata.get(META), score.value
    if not isinstance(doc, Mapping) or not isinstance(value, dict) or "lp_0" not in value:
        raise ValueError(f"sample {score.sample_id}: not a biasmonkey position score")
    logprobs = [value[f"lp_{i}"] for i in range(sum(1 for key in value if key.startswith("lp_")))]
    return score_document(doc, logprobs, value.get("n_imputed", 0))
