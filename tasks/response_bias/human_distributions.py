"""Human answer distributions for the representativeness score, supplied by the user.

Two formats (shares are fractions of all respondents; per question they must sum to 1 ± 0.01):

CSV, long format, one row per option, header `key,option,share` and an optional `refusal` column:

    key,option,share,refusal
    SAFECRIME_W26,A,0.30,
    SAFECRIME_W26,B,0.45,
    SAFECRIME_W26,C,0.23,
    SAFECRIME_W26,refused,0.02,

`option` is the letter of an option the model was offered (A, B, … in the order of the
original question q, all of them) or `refused` for a refusal share the model had no option for.
`refusal` = yes/true/1 marks an offered option as a refusal (e.g. a "Refused" option).

JSON: `{"SAFECRIME_W26": {"shares": [0.30, 0.45, 0.23], "refusal": 0.02, "refusal_options": []}}`
(`refusal` and `refusal_options`, letters, are optional).

Refusals are left out of the score and reported separately (`biasmonkey.metrics.representativeness`).
The model's distribution for a key is the original question's (p_q) from the first task holding the
key in MODEL_TASK_ORDER: the bias task before its perturbation tasks (all ask the same q), and
allow/forbid last, because its q is a yes/no rewording where the other biases ask the survey's own
question (31 keys are in both acquiescence and allow/forbid).
"""

from __future__ import annotations

import csv
import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biasmonkey.metrics.representativeness import QuestionScore, question_representativeness
from biasmonkey.metrics.response_bias import PERTURBATIONS
from biasmonkey.tasks.response_bias.pairs import task_name

SUM_TOLERANCE = 0.01
REFUSED = "refused"
TRUE_WORDS = ("yes", "true", "1")
FALSE_WORDS = ("", "no", "false", "0")
BIAS_ORDER = ("acquiescence", "response_order", "opinion_float", "odd_even", "allow_forbid")
MODEL_TASK_ORDER = tuple((bias, setting) for bias in BIAS_ORDER for setting in ("bias", *PERTURBATIONS))


@dataclass(frozen=True)
class HumanDistribution:
    key: str
    shares: tuple[float, ...]  # per offered option A, B, …
    refusal: float = 0.0  # refusal share without an offered option
    refusal_options: tuple[int, ...] = ()  # positions of offered options that are refusals


def _letter_position(letter: str, where: str) -> int:
    if len(letter) != 1 or letter.upper() not in string.ascii_uppercase:
        raise ValueError(f"{where}: option {letter!r} is neither a letter A–Z nor {REFUSED!r}")
    return string.ascii_uppercase.index(letter.upper())


def _share(value: Any, where: str) -> float:
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: share {value!r} is not a number") from None
    if not math.isfinite(share) or share < 0:
        raise ValueError(f"{where}: share {value!r} must be a non-negative number")
    return share


def _checked(path: Path, key: str, shares: list[float], refusal: float, refusal_options: list[int]) -> HumanDistribution:
    where = f"{path}, question {key}"
    total = sum(shares) + refusal
    if abs(total - 1) > SUM_TOLERANCE:
        raise ValueError(f"{where}: shares sum to {total:.4f}, not 1 (± {SUM_TOLERANCE})")
    if len(shares) < 2:
        raise ValueError(f"{where}: {len(shares)} option share(s); a question needs at least two")
    if any(i >= len(shares) for i in refusal_options):
        raise ValueError(f"{where}: refusal option {string.ascii_uppercase[max(refusal_options)]} has no share")
    return HumanDistribution(key, tuple(shares), refusal, tuple(sorted(set(refusal_options))))


def _from_csv(path: Path) -> dict[str, HumanDistribution]:
    rows: dict[str, dict[str, Any]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = {"key", "option", "share"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}; expected key,option,share[,refusal]")
        for line, row in enumerate(reader, start=2):
            where = f"{path}, row {line}"
            key, option = (row["key"] or "").strip(), (row["option"] or "").strip()
            if not key:
                raise ValueError(f"{where}: empty key")
            entry = rows.setdefault(key, {"shares": {}, "refusal": None, "refusal_options": []})
            share = _share(row["share"], where)
            if option.lower() == REFUSED:
                if entry["refusal"] is not None:
                    raise ValueError(f"{where}: a second {REFUSED!r} row for question {key}")
                entry["refusal"] = share
                continue
            pos = _letter_position(option, where)
            if pos in entry["shares"]:
                raise ValueError(f"{where}: option {option} of question {key} appears twice")
            entry["shares"][pos] = share
            flag = (row.get("refusal") or "").strip().lower()
            if flag not in TRUE_WORDS + FALSE_WORDS:
                raise ValueError(f"{where}: refusal {flag!r} must be one of yes/no/true/false/1/0 or empty")
            if flag in TRUE_WORDS:
                entry["refusal_options"].append(pos)
    out = {}
    for key, entry in rows.items():
        positions = sorted(entry["shares"])
        if positions != list(range(len(positions))):
            letters = "".join(string.ascii_uppercase[i] for i in positions)
            raise ValueError(f"{path}, question {key}: options {letters} are not A, B, … without gaps")
        shares = [entry["shares"][i] for i in positions]
        out[key] = _checked(path, key, shares, entry["refusal"] or 0.0, entry["refusal_options"])
    return out


def _from_json(path: Path) -> dict[str, HumanDistribution]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object {{key: {{\"shares\": [...]}}}}")
    out = {}
    for key, entry in data.items():
        where = f"{path}, question {key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("shares"), list):
            raise ValueError(f"{where}: expected {{\"shares\": [...], \"refusal\": share (optional)}}")
        unknown = set(entry) - {"shares", "refusal", "refusal_options"}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        shares = [_share(v, where) for v in entry["shares"]]
        refusal_options = [_letter_position(str(x), where) for x in entry.get("refusal_options", [])]
        out[key] = _checked(path, key, shares, _share(entry.get("refusal", 0.0), where), refusal_options)
    return out


def load_human_distributions(path: str | Path) -> dict[str, HumanDistribution]:
    """Human distributions per question key from a `.csv` or `.json` file (format above)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such human-distribution file")
    if path.suffix.lower() == ".csv":
        return _from_csv(path)
    if path.suffix.lower() == ".json":
        return _from_json(path)
    raise ValueError(f"{path}: human distributions must be a .csv or .json file")


@dataclass(frozen=True)
class ModelQuestion:
    key: str
    task: str  # e.g. "acquiescence" or "odd_even_key_typo": where p_q was taken from
    p_q: tuple[float, ...]
    spread: float  # largest |difference| of p_q across the chosen bias's other tasks (same q prompt)


def model_questions(records: Sequence[Any]) -> dict[str, ModelQuestion]:
    """The model's original-question distribution per key (see MODEL_TASK_ORDER), from per-pair
    records (`PairRecord`) of any response-bias tasks; records without p_q are skipped."""
    by_task: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        if r.p_q is not None:
            by_task.setdefault((r.bias, r.setting), {})[r.key] = r
    out: dict[str, ModelQuestion] = {}
    for bias, setting in MODEL_TASK_ORDER:
        for key, rec in by_task.get((bias, setting), {}).items():
            if key in out:
                continue
            same_q = [by_task.get((bias, s), {}).get(key) for s in ("bias", *PERTURBATIONS)]
            diffs = [abs(a - b) for o in same_q if o is not None and len(o.p_q) == len(rec.p_q) for a, b in zip(rec.p_q, o.p_q)]
            out[key] = ModelQuestion(key, task_name(bias, setting), tuple(rec.p_q), max(diffs))
    return out


def score_questions(
    human: Mapping[str, HumanDistribution], model: Mapping[str, ModelQuestion], source: str | Path = "human data"
) -> list[QuestionScore]:
    """Representativeness of every question of the human data; a key the results do not hold, or
    an option count that differs, is an error naming the key."""
    unknown = sorted(set(human) - set(model))
    if unknown:
        raise ValueError(
            f"{source}: question key(s) {', '.join(unknown[:5])}{' …' if len(unknown) > 5 else ''} "
            f"are not in the results ({len(unknown)} of {len(human)} keys)"
        )
    scores = []
    for key, h in human.items():
        m = model[key]
        if len(h.shares) != len(m.p_q):
            raise ValueError(
                f"{source}, question {key}: {len(h.shares)} option shares, but the model's question "
                f"(task {m.task}) offers {len(m.p_q)} options"
            )
        scores.append(question_representativeness(key, m.p_q, h.shares, h.refusal_options, h.refusal))
    return scores
