"""Run options of the response-bias tasks, shared by both harness adapters.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=sample n_samples=50`), which
lm-eval merges with the model arguments, so unknown keys are ignored here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from biasmonkey.tasks.options import OptionsFromMapping
from biasmonkey.tasks.response_bias.pairs import build_pairs, task_name
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES, RULES
from biasmonkey.metrics.response_bias import PERTURBATIONS
from biasmonkey.tasks.response_bias.templates import TEMPLATES, get_template

MODES = ("exact", "sample")


@dataclass(frozen=True)
class RunOptions(OptionsFromMapping):
    mode: str = "exact"  # exact: option log-probabilities; sample: N sampled answers at temperature 1
    n_samples: int = 50  # answers drawn per question in sample mode (all are kept)
    perturbation_seed: int | None = None  # None: published perturbed prompts; int: our seeded draw
    # Several seeded draws in one run ("1,2,3" or [1, 2, 3]): every perturbation task holds the
    # pairs of each draw; bias tasks ignore it (they have no perturbation). Read as a tuple.
    perturbation_seeds: tuple[int, ...] | None = None
    perturbation_rules: str = DEFAULT_RULES  # "paper" or "published" word rules of the generator
    allow_forbid_all: bool = False  # keep the 8 allow/forbid pairs the published analysis excludes
    template: str = "default"
    fewshot_seed: int = 1234  # few-shot draws (identical for q and q')
    virtual_samples: int = 0  # exact mode: also draw N answers per side from the valid-option distribution (0: off)
    virtual_seed: int = 0  # seed of those draws (same seed -> same draws on every machine)

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
        for name in ("virtual_samples", "virtual_seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"option {name}={value!r} must be a non-negative integer")
        if self.virtual_samples and self.mode != "exact":
            raise ValueError(
                f"option virtual_samples={self.virtual_samples} draws from exact-mode distributions; "
                f"use it with mode=exact (mode={self.mode!r} samples the model itself)"
            )
        object.__setattr__(self, "perturbation_seeds", parse_seeds(self.perturbation_seeds))
        if self.perturbation_seeds is not None and self.perturbation_seed is not None:
            raise ValueError(
                f"options perturbation_seed={self.perturbation_seed} and perturbation_seeds="
                f"{list(self.perturbation_seeds)} exclude each other; give one draw or the list of draws"
            )
        if self.template not in TEMPLATES:
            raise ValueError(f"option template={self.template!r} is unknown; available: {', '.join(TEMPLATES)}")
        template = TEMPLATES[self.template]
        if template.generates and self.mode != "sample":
            raise ValueError(
                f"option template={self.template!r} lets the model write up to {template.max_new_tokens} tokens "
                f"and reads the answer from an 'Answer: <letter>' line; it needs mode=sample (mode={self.mode!r})"
            )

    def task_pairs(self, bias: str, setting: str, reword: bool = False) -> list[dict[str, Any]]:
        """The pairs of one task under these options, each tagged with the prompt template and
        its perturbation draw (`perturbation_seed`, None for published or bias pairs); with
        perturbation_seeds a perturbation task holds the pairs of every draw."""
        get_template(self.template).check_task(bias, task_name(bias, setting, reword))
        perturbed = setting in PERTURBATIONS
        seeds = self.perturbation_seeds if perturbed and self.perturbation_seeds else (self.perturbation_seed,)
        draws = [
            [
                {**pair, "template": self.template, "perturbation_seed": seed if perturbed else None}
                for pair in build_pairs(
                    bias,
                    setting,
                    perturbation_seed=seed,
                    perturbation_rules=self.perturbation_rules,
                    allow_forbid_all=self.allow_forbid_all,
                    reword=reword,
                )
            ]
            for seed in seeds
        ]
        # Question by question, each question's draws together (so --limit keeps whole questions).
        return [pair for same_question in zip(*draws) for pair in same_question]


def parse_seeds(value: Any) -> tuple[int, ...] | None:
    """The option perturbation_seeds as a tuple of distinct integers: from a list, one integer,
    or text such as "1,2,3", "[1, 2, 3]" or "1 2 3" (None stays None)."""
    if value is None:
        return None
    items = value
    if isinstance(value, str):
        items = value.strip().strip("[]()").replace(",", " ").split()
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    try:
        seeds = tuple(int(s) if isinstance(s, str) else s for s in items)
    except (TypeError, ValueError):
        seeds = ()
    if not seeds or any(not isinstance(s, int) or isinstance(s, bool) for s in seeds) or len(set(seeds)) < len(seeds):
        raise ValueError(f"option perturbation_seeds={value!r} must be a list of distinct integers, e.g. 1,2,3")
    return seeds
