"""Run options of the cognitive-bias tasks, declared once for both harnesses and the CLI.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=generate seed=7`), merged
with the model arguments, so unknown keys are ignored (near misses are warned about); in Inspect
they are the task's `-T` parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biasmonkey.tasks.cognitive.data import bias_tests
from biasmonkey.tasks.cognitive.prompts import DEFAULT_PROMPTS, ONE_STEP_MAX_TOKENS, TWO_STEP_PROMPTS, is_reversed
from biasmonkey.tasks.options import Options, check_bool, check_choice, check_int, check_text, option

MODES = ("exact", "generate")
PROTOCOLS = ("two_step", "one_step")
# Default generation length per protocol: one_step as in lm-eval; two_step leaves room for a
# free answer with some reasoning (the extraction step only needs "Option N").
DEFAULT_MAX_TOKENS = {"one_step": ONE_STEP_MAX_TOKENS, "two_step": 512}


@dataclass(frozen=True)
class CognitiveOptions(Options):
    mode: str = option(
        "exact",
        "exact: label log-likelihoods; generate: greedy answers read with the paper's regex",
        choices=MODES,
        inspect_default="generate",
    )
    reverse_options: bool = option(True, "offer the options of a seeded half of the tests in reverse (the paper)")
    seed: int = option(42, "seeds which tests are reversed")
    data_path: str | None = option(None, "a local CSV/parquet copy of the tests (else $BIASMONKEY_DATA_DIR or the Hub)")
    revision: str | None = option(None, "Hub revision of the dataset (default: the pinned one)")
    protocol: str = option(
        "two_step",
        "generate mode: the paper's two_step, or one_step as in lm-eval",
        harnesses=("inspect",),
        choices=PROTOCOLS,
    )
    # Only Inspect chains the two calls; lm-eval's one-step prompt is always ours.
    prompts: str = option(
        DEFAULT_PROMPTS,
        "two_step prompts: paper (the authors' exact decision and extraction prompts) or biasmonkey (our wording)",
        harnesses=("inspect",),
        choices=tuple(TWO_STEP_PROMPTS),
    )
    max_tokens: int | None = option(
        None, "tokens per generated answer (default: 512 two_step, 48 one_step)", harnesses=("inspect",), parse=int
    )

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES, "is invalid for the cognitive-bias tasks")
        check_bool("reverse_options", self.reverse_options)
        check_int("seed", self.seed)
        for name in ("data_path", "revision"):
            check_text(name, getattr(self, name))
        check_choice("protocol", self.protocol, PROTOCOLS)
        check_choice("prompts", self.prompts, TWO_STEP_PROMPTS)
        check_int("max_tokens", self.max_tokens, 1, optional=True)

    @property
    def generation_tokens(self) -> int:
        """Tokens per generated answer: max_tokens, or the protocol's default."""
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS[self.protocol]

    def task_docs(self, bias: str) -> list[dict[str, Any]]:
        """The harness documents of one bias under these options (option order drawn per test)."""
        return [
            test.to_doc(self.reverse_options and is_reversed(test.id, self.seed))
            for test in bias_tests(bias, self.data_path, self.revision)
        ]
