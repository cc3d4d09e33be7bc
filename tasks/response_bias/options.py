"""Run options of the response-bias tasks, shared by both harness adapters.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=sample n_samples=50`), which
lm-eval merges with the model arguments, so unknown keys are ignored here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biasmonkey.tasks.options import OptionsFromMapping
from biasmonkey.tasks.response_bias.pairs import build_pairs
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES, RULES
from biasmonkey.tasks.response_bias.prompts import TEMPLATES

MODES = ("exact", "sample")


@dataclass(frozen=True)
class RunOptions(OptionsFromMapping):
    mode: str = "exact"  # exact: option log-probabilities; sample: N sampled answers at temperature 1
    n_samples: int = 50  # answers drawn per question in sample mode (all are kept)
    perturbation_seed: int | None = None  # None: published perturbed prompts; int: our seeded draw
    perturbation_rules: str = DEFAULT_RULES  # "paper" or "published" word rules of the generator
    allow_forbid_all: bool = False  # keep the 8 allow/forbid pairs the published analysis excludes
    template: str = "default"
    fewshot_seed: int = 1234  # few-shot draws (identical for q and q')

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"option mode={self.mode!r} is invalid; use one of {', '.join(MODES)}")
        if not isinstance(self.n_samples, int) or isinstance(self.n_samples, bool) or self.n_samples < 1:
            raise ValueError(f"option n_samples={self.n_samples!r} must be a positive integer")
        if self.perturbation_seed is not None and (
            not isinstance(self.perturbation_seed, int) or isinstance(self.perturbation_seed, bool)
        ):
            raise ValueError(f"option perturbation_seed={self.perturbation_seed!r} must be an integer")
        if self.perturbation_rules not in RULES:
            raise ValueError(
                f"option perturbation_rules={self.perturbation_rules!r} is unknown; use one of {', '.join(RULES)}"
            )
        if not isinstance(self.allow_forbid_all, bool):
            raise ValueError(f"option allow_forbid_all={self.allow_forbid_all!r} must be true or false")
        if self.template not in TEMPLATES:
            raise ValueError(f"option template={self.template!r} is unknown; available: {', '.join(TEMPLATES)}")

    def task_pairs(self, bias: str, setting: str, reword: bool = False) -> list[dict[str, Any]]:
        """The pairs of one task under these options."""
        return build_pairs(
            bias,
            setting,
            perturbation_seed=self.perturbation_seed,
            perturbation_rules=self.perturbation_rules,
            allow_forbid_all=self.allow_forbid_all,
            reword=reword,
        )
