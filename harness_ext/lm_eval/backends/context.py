"""Requests longer than the model's context: an error, or, where allowed, a cut that is counted.

lm-eval's HF backend cuts a request that does not fit the model's context from the left and says
so only in its log ("Truncating N tokens from the left"), so a run on a short-context model gives
numbers of other prompts, silently. biasmonkey's backends refuse such requests (`ContextTooLong`,
one line from the launcher) unless the model argument `allow_truncation=true` is given; then the
cut requests are counted and logged (`Cuts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

ALLOW = "allow_truncation=true in --model_args (biasmonkey run: --allow-truncation)"


class ContextTooLong(ValueError):
    """Requests that do not fit the model's context, where truncation is not allowed."""


class ModelArgumentError(ValueError):
    """A model argument (`--model_args`) of biasmonkey's backends that is refused: the launcher says
    so in one line, exit status 2."""


def as_flag(name: str, value: Any) -> bool:
    """A boolean model argument (lm-eval may hand over the string)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text not in ("true", "false", "1", "0", "yes", "no"):
            raise ModelArgumentError(f"model argument {name}={value!r}: use true or false")
        return text in ("true", "1", "yes")
    if value in (True, False, 0, 1):  # (a number other than 0 or 1 is no flag)
        return bool(value)
    raise ModelArgumentError(f"model argument {name}={value!r}: use true or false")


@dataclass
class Cuts:
    """Requests cut to fit the context: how many, and by how many tokens (the most, and in all)."""

    requests: int = 0
    most: int = 0
    total: int = 0

    def add(self, excess: Iterable[int]) -> None:
        for cut in excess:
            self.requests += 1
            self.most = max(self.most, cut)
            self.total += cut

    def sentence(self, limit: int) -> str:
        return (
            f"{self.requests:,} request(s) cut from the left to fit the model's context of {limit:,} tokens "
            f"(by up to {self.most:,} tokens, {self.total:,} in all): their prompts lost their beginning"
        )


def refuse_or_count(backend: str, needed: list[int], limit: int, allowed: bool, cuts: Cuts, what: str) -> int:
    """`needed`: the tokens each request needs within `limit`. Over-long ones raise `ContextTooLong`,
    or, when `allowed`, are added to `cuts`; returns how many do not fit."""
    excess = [n - limit for n in needed if n > limit]
    if excess and not allowed:
        raise ContextTooLong(
            f"{backend}: {len(excess):,} {what} do not fit the model's context of {limit:,} tokens (the longest "
            f"needs {max(excess) + limit:,}); lm-eval would cut their prompts from the left, changing them. Use a "
            f"model with a longer context, fewer shots or a shorter template, or allow the cut with {ALLOW}"
        )
    cuts.add(excess)
    return len(excess)
