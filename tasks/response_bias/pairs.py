"""Build (q, q') pairs for every response bias and non-bias perturbation.

A pair is a flat dict (one harness document): the two question texts, their option letters,
and `qp_positions`, which maps each q' option onto q's option positions so that answers to q'
are compared in the original order (response order reverses the options; the 4-option
odd/even question drops the middle one, so its labels a,b,c,d stand for a,b,d,e).
"""

from __future__ import annotations

from typing import Any

from biasmonkey.metrics.response_bias import BIASES, PERTURBATIONS, SETTINGS
from biasmonkey.tasks.response_bias.data import DataError, PromptRow, load_rows, prompt_file
from biasmonkey.tasks.response_bias.perturb import DEFAULT_RULES, perturb_question

# The published analysis leaves out these allow/forbid questions (48 -> 40 pairs).
ALLOW_FORBID_EXCLUDED = (
    "GAP21Q46_W82",
    "RACESURV15b_W43",
    "DRONE4D_W27",
    "ABORTIONALLOW_W32",
    "INEQ10_W54",
    "INEQ11_W54",
    "POLICY1_W42",
    "GOVT_ROLE_W32",
)


def qp_positions(bias: str, setting: str, row: PromptRow) -> list[int]:
    """Original option position of each q' option; checks the published rows agree."""
    q, qp = row.control.options, row.treatment.options
    n = len(q)
    if setting != "bias" or bias in ("acquiescence", "allow_forbid", "opinion_float"):
        positions = list(range(len(qp)))
        if setting != "bias" and qp != q:
            raise DataError(f"{bias}/{setting} key {row.key}: perturbed question changed the options")
        return positions
    if bias == "response_order":
        positions = list(range(n - 1, -1, -1))
    elif bias == "odd_even":
        positions = [0, 1, 3, 4]
    else:  # pragma: no cover - guarded by BIASES
        raise AssertionError(bias)
    if tuple(q[i] for i in positions) != qp:
        raise DataError(
            f"{bias} key {row.key}: q' options {list(qp)} are not the expected rearrangement "
            f"{[q[i] for i in positions]} of q's options"
        )
    return positions


def task_name(bias: str, setting: str, reword: bool = False) -> str:
    """acquiescence, acquiescence_key_typo, …, acquiescence_reword (the alternative wording)
    (lm-eval prefixes `biasmonkey_`, Inspect `biasmonkey/`)."""
    return (bias if setting == "bias" else f"{bias}_{setting}") + ("_reword" if reword else "")


def build_pairs(
    bias: str,
    setting: str,
    *,
    perturbation_seed: int | None = None,
    perturbation_rules: str = DEFAULT_RULES,
    allow_forbid_all: bool = False,
    reword: bool = False,
) -> list[dict[str, Any]]:
    """All pairs of one task. Published prompts by default.

    perturbation_seed: draw q' for a perturbation setting with our seeded generator instead of
        the published perturbed prompt (same seed -> byte-identical prompts).
    perturbation_rules: which words the generator may touch: "paper" (as the paper states the
        rules) or "published" (as the released perturbed prompts show them).
    allow_forbid_all: keep the 8 allow/forbid questions the published analysis excludes.
    reword: use the alternative acquiescence wording (acquiescence_reword.csv).
    """
    if bias not in BIASES:
        raise ValueError(f"unknown bias {bias!r}; expected one of {', '.join(BIASES)}")
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    if reword and (bias, setting) != ("acquiescence", "bias"):
        raise ValueError("reword applies to the acquiescence bias task only")
    seeded = perturbation_seed is not None and setting in PERTURBATIONS
    rows = load_rows(bias, "bias" if seeded else setting, reword=reword)
    source = prompt_file(bias, setting, reword)
    if seeded:
        source = f"seeded:{perturbation_seed}:{perturbation_rules}"
    pairs = []
    for row in rows:
        if bias == "allow_forbid" and not allow_forbid_all and row.key in ALLOW_FORBID_EXCLUDED:
            continue
        q_text = row.control.text
        if seeded:
            qp_text = perturb_question(q_text, setting, int(perturbation_seed), row.key, perturbation_rules)
            qp_letters = list(row.control.letters)
            positions = list(range(len(qp_letters)))
        else:
            qp_text = row.treatment.text
            qp_letters = list(row.treatment.letters)
            positions = qp_positions(bias, setting, row)
        pairs.append(
            {
                "key": row.key,
                "bias": bias,
                "setting": setting,
                "source": source,
                "q": q_text,
                "qp": qp_text,
                "q_letters": list(row.control.letters),
                "qp_letters": qp_letters,
                "qp_positions": positions,
            }
        )
    return pairs
