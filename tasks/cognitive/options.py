"""Run options of the cognitive-bias tasks, declared once for both harnesses and the CLI.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=generate seed=7`), merged
with the model arguments, so unknown keys are ignored (near misses are warned about); in Inspect
they are the task's `-T` parameters.

Modes: `exact` (lm-eval only, its default) reads the model's distribution over the option labels
after our one-step prompt; `generate` decides by greedy generation, with `protocol=two_step` (the
paper's: a free answer, then an extraction call; lm-eval runs it as two runs, `two_step.py`) or
`protocol=one_step` (our one prompt, the answer read directly).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from biasmonkey.tasks.cognitive.data import CORRECTED_PARAMS, bias_tests, local_copy
from biasmonkey.tasks.cognitive.prompts import (
    DEFAULT_PROMPTS,
    ONE_STEP_MAX_TOKENS,
    REVERSALS,
    TWO_STEP_PROMPTS,
    authors_reversed,
    is_reversed,
)
from biasmonkey.tasks.cognitive.two_step import DECIDE, EXTRACT, lm_eval_docs
from biasmonkey.tasks.options import Options, check_bool, check_choice, check_int, check_text, option

MODES = ("exact", "generate")
PROTOCOLS = ("two_step", "one_step")
METRIC_PARAMS = ("corrected", "published")
# two_step's generation length when max_tokens is not given. The authors set none (each API's
# default; their Anthropic class the required max_tokens=1024), so Inspect sends none and the
# provider's default applies (OpenAI: none; hf/: 2048). lm-eval needs a number, and fits prompt and
# answer into the model's context: 2048, as Inspect's hf/ default.
LM_EVAL_TWO_STEP_MAX_TOKENS = 2048


@dataclass(frozen=True)
class CognitiveOptions(Options):
    mode: str = option(
        "exact",
        "exact: label log-likelihoods; generate: greedy answers read with the paper's regex",
        choices=MODES,
        inspect_default="generate",
    )
    reverse_options: bool = option(True, "offer the options of some tests in reverse (the paper), see reversal")
    reversal: str = option(
        "authors",
        "which tests are reversed: authors (the tests the authors' decision code reverses, by their row in the file) "
        "or hash (a fair coin per seed and test id)",
        choices=REVERSALS,
    )
    seed: int = option(42, "seeds which tests are reversed (authors: their first seed, 42)")
    metric_params: str = option(
        "corrected",
        "corrected: score Conservatism with the authors' corrected parameters (k=-1, x_1=x_2=0); "
        "published: every test's own metric_params (the published figures)",
        choices=METRIC_PARAMS,
    )
    data_path: str | None = option(None, "a local CSV/parquet copy of the tests (else $BIASMONKEY_DATA_DIR or the Hub)")
    revision: str | None = option(None, "Hub revision of the dataset (default: the pinned one)")
    protocol: str = option(
        "two_step",
        "generate mode: two_step, the paper's (a free answer, then an extraction call; in lm-eval two runs, "
        "see decisions), or one_step (our one prompt asking for the option line)",
        choices=PROTOCOLS,
    )
    prompts: str = option(
        DEFAULT_PROMPTS,
        "two_step prompts: paper (the authors' exact decision and extraction prompts) or biasmonkey (our wording)",
        choices=tuple(TWO_STEP_PROMPTS),
    )
    max_tokens: int | None = option(
        None,
        "tokens per generated answer (default: one_step 48; two_step none in Inspect, the provider's default, "
        f"and {LM_EVAL_TWO_STEP_MAX_TOKENS} in lm-eval, which needs one)",
        parse=int,
    )
    decisions: str | None = option(
        None,
        "two_step in lm-eval, step two: the --output_path (or samples file) of step one, the run without "
        "decisions, whose free answers step two extracts",
        harnesses=("lm_eval",),
    )

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES, "is invalid for the cognitive-bias tasks")
        check_bool("reverse_options", self.reverse_options)
        check_choice("reversal", self.reversal, REVERSALS)
        check_int("seed", self.seed)
        check_choice("metric_params", self.metric_params, METRIC_PARAMS)
        for name in ("data_path", "revision", "decisions"):
            check_text(name, getattr(self, name))
        check_choice("protocol", self.protocol, PROTOCOLS)
        check_choice("prompts", self.prompts, TWO_STEP_PROMPTS)
        check_int("max_tokens", self.max_tokens, 1, optional=True)
        if self.decisions is not None and (self.mode, self.protocol) != ("generate", "two_step"):
            raise ValueError(
                f"option decisions={self.decisions!r} is step two of the two-step protocol: use it with "
                "mode=generate protocol=two_step"
            )

    def generation_tokens(self, harness: str) -> int | None:
        """Tokens per generated answer in `harness` (None: the provider's default)."""
        if self.max_tokens is not None:
            return self.max_tokens
        if self.protocol == "one_step":
            return ONE_STEP_MAX_TOKENS
        return LM_EVAL_TWO_STEP_MAX_TOKENS if harness == "lm_eval" else None

    locations: ClassVar[tuple[str, ...]] = ("data_path", "decisions")

    @classmethod
    def default_input(cls, name: str) -> Path | None:
        """The tests file under $BIASMONKEY_DATA_DIR/cognitive/ that a run without `data_path` reads
        (no pinned sha256: the Hub's copy is pinned by its revision instead)."""
        return local_copy() if name == "data_path" else None

    def intermediate(self) -> bool:
        """Step one of lm-eval's two-step protocol: free answers, scored by step two."""
        return self.lm_eval_step == DECIDE

    def follow_up(self, outputs: str) -> dict[str, Any]:
        """Step two reads step one's free answers from its output folder."""
        return {"decisions": outputs} if self.intermediate() else {}

    @property
    def lm_eval_step(self) -> str | None:
        """lm-eval's run of the two-step protocol: `decide` (step one), `extract` (step two), or None."""
        if (self.mode, self.protocol) != ("generate", "two_step"):
            return None
        return DECIDE if self.decisions is None else EXTRACT

    def task_docs(self, bias: str) -> list[dict[str, Any]]:
        """The harness documents of one bias under these options: each test's option order and,
        with metric_params=corrected, the authors' corrected parameters where they exist."""
        tests = bias_tests(bias, self.data_path, self.revision)
        if not self.reverse_options:
            flags = [False] * len(tests)
        elif self.reversal == "authors":
            flags = authors_reversed([t.row for t in tests], self.seed)
        else:
            flags = [is_reversed(t.id, self.seed) for t in tests]
        docs = [test.to_doc(flag) for test, flag in zip(tests, flags)]
        corrected = CORRECTED_PARAMS.get(tests[0].bias) if self.metric_params == "corrected" else None
        if corrected:
            for doc in docs:
                doc["k"], doc["x_1"], doc["x_2"] = corrected
        return docs

    def lm_eval_docs(self, bias: str) -> list[dict[str, Any]]:
        """The lm-eval documents: `task_docs`, marked with the step of the two-step protocol and, in
        step two, with step one's free answers (`two_step.py`)."""
        return lm_eval_docs(self.task_docs(bias), self.lm_eval_step, self.prompts, self.decisions)
