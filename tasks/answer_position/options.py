"""Run options of the answer-position tasks, declared once for both harnesses (lm-eval
`--metadata`, Inspect `-T`) and the CLI. The subject and the prompt type are fixed per task."""

from __future__ import annotations

from dataclasses import dataclass

from biasmonkey.metrics.answer_position import K_FOLDS, SEED
from biasmonkey.tasks.options import Options, check_int, check_numpy_seed, option

DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return


@dataclass(frozen=True)
class AnswerPositionOptions(Options):
    k: int = option(K_FOLDS, "folds of the Specific correction: k − 1 balanced folds and the extra fold")
    seed: int = option(SEED, "the seed of the balanced folds' draw (np.random.seed, as the authors')")
    top_logprobs: int = option(DEFAULT_TOP_LOGPROBS, "alternatives requested per answer", harnesses=("inspect",))

    def __post_init__(self) -> None:
        check_int("top_logprobs", self.top_logprobs, 1)
        check_int("k", self.k, 1)
        if self.k < 3:
            raise ValueError(f"option k={self.k} must be at least 3: each balanced fold is calibrated on the others")
        check_numpy_seed("seed", self.seed)
