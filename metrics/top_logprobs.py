"""Answer log-probabilities from a top-k list of next-token log-probabilities.

Exact mode through an API (Inspect providers, OpenAI-compatible servers) asks for one token with
its top-k alternatives and reads the answers from them. An answer label (an option letter, "Yes", …) matches a returned token with
or without a leading space, whatever the tokenizer's space marker (" A", "ĠA", "▁A", "A"); the
label's probability is the sum over its matching tokens, as lm-eval scores both spellings.
`spelling_logprobs` keeps the spellings apart instead: " Yes" matches " Yes", "ĠYes" and "▁Yes",
while "Yes" matches only a token without a space marker.

Imputed floor: a label with no matching token in the top-k gets the probability
min(p_k, R / m), where p_k is the smallest returned probability (no unreturned token can be
more likely), R is the probability mass the top-k leaves unreturned and m is the number of
missing labels (together they cannot take more than R). Every imputation is counted and
reported (`imputed_options`; `imputed_continuations` in the yes-no tasks); raise
`top_logprobs` to avoid them.

Validation: answers are checked where they enter (`check_top_logprobs`, which every reader here
calls first). A log-probability must be a finite number at most `LOGPROB_TOLERANCE` (a probability
of at most 1, with room for rounding), and the probabilities of a top-k list must sum to at most
1 + `LOGPROB_TOLERANCE`. Anything else (NaN, +2.5, a top-k holding more than all the mass) is an
`InvalidLogprobs` error naming its source, never a score.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np

SPACE_MARKERS = (" ", "Ġ", "▁")  # plain space, GPT-2 byte-level BPE, SentencePiece
TINY = 1e-300  # keeps an imputed log-probability finite when the top-k holds all the mass
# Rounding allowed above log 1 = 0, and above a total probability of 1: servers compute in float32
# or less, and a top-k of 1,000 probabilities summed in float32 is off by about 1e-5 at worst.
LOGPROB_TOLERANCE = 1e-4
VALID_LOGPROBS = (
    f"log-probabilities must be finite and at most 0, and a top-k's probabilities sum to at most 1 "
    f"(within {LOGPROB_TOLERANCE:g})"
)


class InvalidLogprobs(ValueError):
    """Log-probabilities no distribution has: not finite, above 0, or more than all the mass."""


class ImputedLogprob(float):
    """A log-probability that is an imputed floor, not a returned value. lm-eval writes results
    into its sample logs with `str()`, which marks it: "-7.25 imputed"."""

    MARK = " imputed"

    def __str__(self) -> str:
        return float.__repr__(self) + self.MARK


def logged_logprob(value: float | str) -> tuple[float, bool]:
    """A log-likelihood as a harness returned it (float) or logged it (string), and whether it was
    imputed. One above 0 (beyond `LOGPROB_TOLERANCE`, +inf too) is a ValueError: no model gives it,
    and read as a score it would outweigh every real answer (not finite: left to the scoring)."""
    if isinstance(value, str):
        number = value.removesuffix(ImputedLogprob.MARK)
        read = float(number), number != value
    else:
        read = float(value), isinstance(value, ImputedLogprob)
    if read[0] > LOGPROB_TOLERANCE:
        raise ValueError(logprob_problem(read[0]))
    return read


def logprob_problem(value: object) -> str | None:
    """Why `value` is no log-probability (not a number, not finite, above 0); None if it is one."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"log-probability {value!r} is not a number"
    if not math.isfinite(float(value)):
        return f"log-probability {value!r} is not finite"
    if value > LOGPROB_TOLERANCE:
        return f"log-probability {value:+g} is above 0 (a probability of {math.exp(min(value, 700.0)):.6g})"
    return None


def top_logprobs_problem(top: Sequence[tuple[str, object]]) -> str | None:
    """Why a top-k list of (token, log-probability) is no part of a distribution; None if it is."""
    for token, value in top:
        if (problem := logprob_problem(value)) is not None:
            return f"{problem} (token {token!r})"
    mass = math.fsum(math.exp(float(value)) for _, value in top)  # type: ignore[arg-type]
    if mass > 1 + LOGPROB_TOLERANCE:
        return f"the {len(top)} tokens' probabilities sum to {mass:.6g}, more than 1"
    return None


def check_top_logprobs(top: Sequence[tuple[str, object]], source: str = "the top log-probabilities") -> None:
    """Raise `InvalidLogprobs` naming `source` (the model or server, and the request) unless `top`
    is a valid top-k list (see the module docstring)."""
    if (problem := top_logprobs_problem(top)) is not None:
        raise InvalidLogprobs(f"{source}: invalid log-probabilities: {problem}; {VALID_LOGPROBS}")


def bare_token(token: str) -> str:
    """The token without one leading space marker."""
    return token[1:] if token[:1] in SPACE_MARKERS else token


def spaced_token(token: str) -> str:
    """The token with a leading space marker written as a plain space."""
    return " " + token[1:] if token[:1] in SPACE_MARKERS else token


def label_logprobs(
    top: Sequence[tuple[str, float]], labels: Sequence[str], source: str = "the top log-probabilities"
) -> tuple[list[float], int]:
    """Log-probability of each label from the top-k list, and how many labels were imputed.
    `source` (e.g. "model openai/gpt-4o") names where `top` came from in the error for an invalid list."""
    return _matched_logprobs(top, labels, bare_token, source)


def spelling_logprobs(
    top: Sequence[tuple[str, float]], spellings: Sequence[str], source: str = "the top log-probabilities"
) -> tuple[list[float], int]:
    """Log-probability of each exact spelling (" Yes" vs "Yes") from the top-k list, and how many
    spellings were imputed (with the same floor as labels)."""
    return _matched_logprobs(top, spellings, spaced_token, source)


def _matched_logprobs(
    top: Sequence[tuple[str, float]], labels: Sequence[str], normalise: Callable[[str], str], source: str
) -> tuple[list[float], int]:
    """Sum the tokens whose `normalise`d text is a label; impute the floor for the missing ones."""
    check_top_logprobs(top, source)
    logmass = {label: -math.inf for label in labels}
    for token, logprob in top:
        label = normalise(token)
        if label in logmass:
            logmass[label] = float(np.logaddexp(logmass[label], logprob))
    missing = [label for label in labels if logmass[label] == -math.inf]
    if missing:
        smallest = min(math.exp(lp) for _, lp in top)
        unreturned = max(1.0 - sum(math.exp(lp) for _, lp in top), 0.0)
        floor = math.log(max(min(smallest, unreturned / len(missing)), TINY))
        for label in missing:
            logmass[label] = floor
    return [logmass[label] for label in labels], len(missing)
