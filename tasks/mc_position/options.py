"""Run options of the wrapped multiple-choice tasks, declared once for both harnesses (lm-eval
`--metadata`, Inspect `-T`) and the CLI. Which task is wrapped is fixed per task."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from biasmonkey.metrics.answer_position import K_FOLDS, SEED
from biasmonkey.tasks.options import Options, check_choice, check_int, check_numpy_seed, option

DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return
SPELLINGS = ("task", "both")


def _share(text: str) -> float:
    """`--pride-share`'s text as a number (argparse prints this error after the flag's name)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"pride_share must be a number in (0, 1), e.g. 0.05 (the paper's); got {text!r}"
        ) from None


@dataclass(frozen=True)
class PositionOptions(Options):
    permutations: int = option(0, "cyclic orders asked per item, the original included (0: all n of an n-option item)")
    permutation_seed: int = option(0, "the seed of the orders drawn when permutations is below an item's n")
    letter_spellings: str = option(
        "task",
        "each letter scored as the task's answer (the delimiter and the letter: ' A') or 'both': "
        "the log-sum-exp of ' A' and 'A', as Bhatt & Ivanova",
        choices=SPELLINGS,
    )
    pride_share: float = option(0.05, "PriDe: the share of items whose permutations estimate the prior", parse=_share)
    pride_seed: int = option(0, "PriDe: the seed of the calibration items' draw")
    k: int = option(K_FOLDS, "folds of the Specific correction: k − 1 balanced folds and the extra fold")
    seed: int = option(SEED, "the seed of the Specific correction's balanced folds (np.random.seed, as the authors')")
    resamples: int = option(1000, "bootstrap resamples of the items for the confidence intervals")
    top_logprobs: int = option(DEFAULT_TOP_LOGPROBS, "alternatives requested per answer", harnesses=("inspect",))

    def __post_init__(self) -> None:
        check_int("permutations", self.permutations, 0)
        if self.permutations == 1:
            raise ValueError(
                "option permutations=1 asks the original order only: position bias needs at least 2 orders "
                "(0: all cyclic orders)"
            )
        check_int("permutation_seed", self.permutation_seed, 0)
        check_choice("letter_spellings", self.letter_spellings, SPELLINGS)
        if isinstance(self.pride_share, bool) or not isinstance(self.pride_share, int | float):
            raise ValueError(f"option pride_share={self.pride_share!r} must be a number in (0, 1)")
        if not 0 < self.pride_share < 1:
            raise ValueError(f"option pride_share={self.pride_share!r} must be in (0, 1), e.g. 0.05 (the paper's)")
        check_int("pride_seed", self.pride_seed, 0)
        check_int("k", self.k, 3)
        check_numpy_seed("seed", self.seed)
        check_int("resamples", self.resamples, 1)
        check_int("top_logprobs", self.top_logprobs, 1)
