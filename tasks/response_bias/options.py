"""Run options of the response-bias tasks, declared once for both harnesses and the CLI.

In lm-eval they arrive through `--metadata` (e.g. `--metadata mode=sample n_samples=50`), which
lm-eval merges with the model arguments, so unknown keys are ignored; in Inspect they are the
task's `-T` parameters; `biasmonkey run` has one flag per option.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from biasmonkey.metrics.response_bias import PERTURBATIONS
from biasmonkey.tasks.options import Options, check_bool, check_choice, check_int, option
from biasmonkey.tasks.response_bias.pairs import build_pairs, task_name
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES, RULES
from biasmonkey.tasks.response_bias.templates import TEMPLATES, get_template

MODES = ("exact", "sample")
DEFAULT_TOP_LOGPROBS = 20  # the most OpenAI-compatible APIs return


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


def seed_list(text: str) -> tuple[int, ...] | None:
    """Command-line reader of perturbation_seeds ("1,2,3")."""
    try:
        return parse_seeds(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("option perturbation_seeds=")) from None


@dataclass(frozen=True)
class RunOptions(Options):
    mode: str = option(
        "exact", "exact: option log-probabilities; sample: N sampled answers at temperature 1", choices=MODES
    )
    n_samples: int = option(50, "answers drawn per question in sample mode (all are kept)")
    perturbation_seed: int | None = option(
        None, "draw the typo variants with our seeded generator instead of the published ones", parse=int
    )
    # Several seeded draws in one run: every perturbation task holds the pairs of each draw; bias
    # tasks ignore it (they have no perturbation). Read as a tuple.
    perturbation_seeds: tuple[int, ...] | None = option(
        None, "several seeded perturbation draws in one run, e.g. 1,2,3 (per-draw metrics)", parse=seed_list
    )
    perturbation_rules: str = option(DEFAULT_RULES, "the seeded generator's word rules", choices=tuple(RULES))
    allow_forbid_all: bool = option(False, "keep the 8 allow/forbid pairs the published analysis excludes")
    template: str = option("default", "prompt template of tasks/response_bias/templates.yml", choices=tuple(TEMPLATES))
    fewshot_seed: int = option(1234, "seeds the few-shot draws (identical for q and q')", harnesses=("lm_eval",))
    virtual_samples: int = option(
        0, "exact mode: also draw N valid answers per question from its distribution (0: off)"
    )
    virtual_seed: int = option(0, "seed of the virtual draws (same seed, same draws on every machine)")
    top_logprobs: int = option(
        DEFAULT_TOP_LOGPROBS, "alternatives requested per answer in exact mode", harnesses=("inspect",)
    )

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES)
        check_int("n_samples", self.n_samples, 1)
        check_int("perturbation_seed", self.perturbation_seed, optional=True)
        check_choice("perturbation_rules", self.perturbation_rules, RULES, "is unknown")
        check_bool("allow_forbid_all", self.allow_forbid_all)
        check_int("fewshot_seed", self.fewshot_seed)
        for name in ("virtual_samples", "virtual_seed"):
            check_int(name, getattr(self, name), 0)
        check_int("top_logprobs", self.top_logprobs, 1)
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

    def draw_seeds(self, setting: str) -> tuple[int, ...]:
        """The perturbation draws a task of `setting` reports one by one (none for bias tasks)."""
        return (self.perturbation_seeds or ()) if setting in PERTURBATIONS else ()

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
