"""Answer log-probabilities from a top-k list of next-token log-probabilities.

Exact mode through an API (Inspect providers, OpenAI-compatible servers) asks for one token with
its top-k alternatives and reads the answers from them, spelling by spelling (`spelling_logprobs`):
" Yes" matches a token with a leading space whatever the tokenizer's space marker (" Yes", "ĠYes",
"▁Yes"), while "Yes" matches only a token without one. An answer label (an option letter, "Yes",
…) has two spellings, with and without the space; its probability is the sum of both
(`label_logprobs`), as lm-eval scores both spellings.

Imputed floor: a spelling with no matching token in the top-k gets the probability
min(p_k, R / m), where p_k is the smallest returned probability (no unreturned token can be
more likely), R is the probability mass the top-k leaves unreturned and m is the number of
missing spellings (together they cannot take more than R). A label is never summed over the
spellings found alone: a missing spelling gets its floor, so the label's number is not silently
short of it. Every imputed spelling is counted and reported (`imputed_options` in the
response-bias tasks, `imputed_continuations` in the yes-no and answer-position tasks); raise
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
from collections.abc import Sequence

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


def spaced_token(token: str) -> str:
    """The token with a leading space marker written as a plain space."""
    return " " + token[1:] if token[:1] in SPACE_MARKERS else token


def label_logprobs(
    top: Sequence[tuple[str, float]], labels: Sequence[str], source: str = "the top log-probabilities"
) -> tuple[list[float], int]:
    """Log-probability of each label from the top-k list, log(P(" A") + P("A")) with each spelling
    read by `spelling_logprobs`, and how many spellings were imputed. `source` (e.g. "model
    openai/gpt-4o") names where `top` came from in the error for an invalid list."""
    logprobs, n_imputed = spelling_logprobs(top, [s for label in labels for s in (" " + label, label)], source)
    with_space, bare = np.reshape(logprobs, (-1, 2)).T
    return np.logaddexp(with_space, bare).tolist(), n_imputed


def spelling_logprobs(
    top: Sequence[tuple[str, float]], spellings: Sequence[str], source: str = "the top log-probabilities"
) -> tuple[list[float], int]:
    """Log-probability of each exact spelling (" Yes" vs "Yes") from the top-k list, and how many
    spellings were imputed: the sum of the tokens that are the spelling (`spaced_token`), or the
    floor for a spelling with none (see the module docstring)."""
    check_top_logprobs(top, source)
    logmass = {spelling: -math.inf for spelling in spellings}
    for token, logprob in top:
        spelling = spaced_token(token)
        if spelling in logmass:
            logmass[spelling] = float(np.logaddexp(logmass[spelling], logprob))
    missing = [spelling for spelling in spellings if logmass[spelling] == -math.inf]
    if missing:
        smallest = min(math.exp(lp) for _, lp in top)
        unreturned = max(1.0 - sum(math.exp(lp) for _, lp in top), 0.0)
        floor = math.log(max(min(smallest, unreturned / len(missing)), TINY))
        for spelling in missing:
            logmass[spelling] = floor
    return [logmass[spelling] for spelling in spellings], len(missing)
