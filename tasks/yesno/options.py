"""Run options of the yes-no tasks, declared once for both harnesses (lm-eval `--metadata`,
Inspect `-T`) and the CLI. The question set, EWoK domain and prompt are fixed per task."""

from __future__ import annotations

from dataclasses import dataclass

from biasmonkey.metrics.yesno import K_FOLDS, SEED
from biasmonkey.tasks.options import Options, check_int, check_numpy_seed, option

DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return


@dataclass(frozen=True)
class YesNoOptions(Options):
    k: int = option(K_FOLDS, "folds of the Specific correction (each fold is calibrated on the others)")
    seed: int = option(
        SEED, "random_state of the Specific folds of COMPS, Arith and bAbI (EWoK's folds are consecutive blocks)"
    )
    top_logprobs: int = option(DEFAULT_TOP_LOGPROBS, "alternatives requested per answer", harnesses=("inspect",))
    null_prompt: str | None = option(
        None,
        "the no-context prompt of the Generic correction (default: the model's prefix token)",
        harnesses=("inspect",),
    )

    def __post_init__(self) -> None:
        check_int("top_logprobs", self.top_logprobs, 1)
        check_int("k", self.k, 1)
        if self.k < 2:
            raise ValueError(f"option k={self.k} must be at least 2: each fold is calibrated on the other folds")
        check_numpy_seed("seed", self.seed)
        if self.null_prompt is not None and not isinstance(self.null_prompt, str):
            raise ValueError(
                f"option null_prompt={self.null_prompt!r} must be a text; quote it as a YAML string, e.g. -T 'null_prompt=\"Q:\"'"
            )
