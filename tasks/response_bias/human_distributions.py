"""Human answer distributions for the representativeness score, supplied by the user.

Two formats, UTF-8 text with or without a BOM (shares are fractions of all respondents; per
question they must sum to 1 ± 0.01):

CSV, long format, one row per option, header `key,option,share` and an optional `refusal` column:

    key,option,share,refusal
    SAFECRIME_W26,A,0.30,
    SAFECRIME_W26,B,0.45,
    SAFECRIME_W26,C,0.23,
    SAFECRIME_W26,refused,0.02,

`option` is the letter of an option of the survey question as the respondents saw it, in the
survey's order (A, B, … as `all-questions-coded.csv` and OpinionQA's `references` list them,
"Refused" left out), or `refused` for a refusal share without an option.
`refusal` = yes/true/1 marks an option as a refusal (e.g. "Not sure"); a survey option the model
was not offered (`survey_questions`) must be one, or be left out with its share in `refused`.

JSON: `{"SAFECRIME_W26": {"shares": [0.30, 0.45, 0.23], "refusal": 0.02, "refusal_options": []}}`
(`refusal` and `refusal_options`, letters, are optional).

Refusals are left out of the score and reported separately (`biasmonkey.metrics.representativeness`).
The model's distribution of a key is its answer distribution to the survey question as the
respondents saw it (`biasmonkey.tasks.response_bias.survey_questions`): q for acquiescence and
response order; for the odd/even and opinion-float questions q (5 options) where the original had
a middle option and odd/even's q′ (its 4 options, in their own positions) where it had not. The
human shares are put in the prompt's option order before the comparison. A key whose survey
question no run holds (e.g. one only allow/forbid asks: its q is a Yes/No rewording) is an error
naming the key.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biasmonkey.metrics.representativeness import QuestionScore, question_representativeness
from biasmonkey.metrics.response_bias import PERTURBATIONS
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.response_bias.pairs import task_name
from biasmonkey.tasks.response_bias.survey_questions import (
    REWORDED_BIASES,
    SAME_Q_BIASES,
    SurveyQuestion,
    survey_questions,
)
from biasmonkey.tasks.text_files import read_csv, read_utf8

SUM_TOLERANCE = 0.01
REFUSED = "refused"
TRUE_WORDS = ("yes", "true", "1")
FALSE_WORDS = ("", "no", "false", "0")


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
    if isinstance(value, bool):  # JSON true/false: float() would take them as 1 and 0
        raise ValueError(f"{where}: share {json.dumps(value)} is not a number; write the fraction, e.g. 0.25")
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: share {value!r} is not a number") from None
    if not math.isfinite(share) or share < 0:
        raise ValueError(f"{where}: share {value!r} must be a non-negative number")
    return share


def _checked(
    path: Path, key: str, shares: list[float], refusal: float, refusal_options: list[int]
) -> HumanDistribution:
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
    reader = read_csv(path)
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
    if not rows:
        raise ValueError(f"{path}: no rows below the header; add one row per question and option (key,option,share)")
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
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected an object {{key: {{"shares": [...]}}}}')
    if not data:
        raise ValueError(f'{path}: no questions; expected {{key: {{"shares": [...]}}, ...}}')
    out = {}
    for key, entry in data.items():
        where = f"{path}, question {key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("shares"), list):
            raise ValueError(f'{where}: expected {{"shares": [...], "refusal": share (optional)}}')
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
    """The model's answers to one key's survey question (`survey`), or why there are none."""

    key: str
    survey: SurveyQuestion | None  # None: no prompt file of the suite holds the survey question
    task: str | None  # the task the answers were taken from, e.g. "odd_even" or "opinion_float_key_typo"
    p: tuple[float, ...] | None  # over survey.options, in the prompt's order (None: see `missing`)
    spread: float  # largest |difference| of p across the other tasks asking the same prompt (0: one task)
    missing: str = ""  # why p is None

    @property
    def question(self) -> str:
        """Which prompt was compared, e.g. "odd_even q′" ("–" when none)."""
        return self.survey.label if self.survey is not None else "–"

    @property
    def note(self) -> str:
        """How the human shares were mapped: reordered options, options the model was not offered."""
        if self.survey is None:
            return ""
        parts = []
        if self.survey.side == "qp" and self.survey.bias == "odd_even":
            parts.append("original without a middle option")
        if self.survey.reordered:
            parts.append("survey lists the options in another order")
        if self.survey.not_offered:
            parts.append("not offered: " + ", ".join(self.survey.not_offered))
        return "; ".join(parts)


def _tasks_asking(sq: SurveyQuestion) -> list[tuple[str, str]]:
    """(bias, setting) of every task whose prompts include the survey question, preferred first."""
    if sq.side == "qp":
        return [(sq.bias, "bias")]  # only the bias task asks q′ unperturbed
    return [(bias, setting) for bias in SAME_Q_BIASES[sq.bias] for setting in ("bias", *PERTURBATIONS)]


def model_questions(
    records: Sequence[Any], survey: Mapping[str, SurveyQuestion] | None = None
) -> dict[str, ModelQuestion]:
    """Per key of the records (`PairRecord`s of any response-bias tasks), the model's answer
    distribution to the survey question: the q (or odd/even q′) distribution of the first task in
    `_tasks_asking` order that holds the key with a valid answer. `survey` defaults to the table
    of the published prompt files (`survey_questions()`)."""
    if survey is None:
        survey = survey_questions()
    by_task: dict[tuple[str, str], dict[str, Any]] = {}
    biases_of: dict[str, set[str]] = {}
    for r in records:
        by_task.setdefault((r.bias, r.setting), {})[r.key] = r
        biases_of.setdefault(r.key, set()).add(r.bias)
    out: dict[str, ModelQuestion] = {}
    for key, biases in biases_of.items():
        sq = survey.get(key)
        if sq is None:
            reason = (
                "only allow/forbid asks it, and its q is a Yes/No rewording of the survey question"
                if biases <= set(REWORDED_BIASES)
                else "no prompt file of the suite holds its survey question"
            )
            out[key] = ModelQuestion(key, None, None, None, math.nan, reason)
            continue
        found = []
        for bias, setting in _tasks_asking(sq):
            rec = by_task.get((bias, setting), {}).get(key)
            p = None if rec is None else (rec.p_q if sq.side == "q" else rec.p_qp)
            if p is not None and len(p) == len(sq.options):
                found.append((task_name(bias, setting), tuple(p)))
        if not found:
            tasks = ", ".join(lm_eval_task_name(task_name(b, s)) for b, s in _tasks_asking(sq))
            reason = (
                f"the respondents' question is {sq.label} ({len(sq.options)} options), asked by {tasks}; "
                "the results hold no valid answers to it"
            )
            out[key] = ModelQuestion(key, sq, None, None, math.nan, reason)
            continue
        task, p = found[0]
        spread = max(abs(a - b) for _, other in found for a, b in zip(p, other))
        out[key] = ModelQuestion(key, sq, task, p, spread)
    return out


def _in_prompt_order(h: HumanDistribution, sq: SurveyQuestion, where: str) -> tuple[list[float], list[int], float]:
    """The human shares over the prompt's options, the prompt positions of refusal options, and
    the refusal share of survey options the model was not offered."""
    if sq.survey_options is None or sq.survey_to_prompt is None:
        if len(h.shares) != len(sq.options):
            raise ValueError(
                f"{where}: {len(h.shares)} option shares, but the question the respondents saw "
                f"({sq.label}) offers {len(sq.options)} options"
            )
        return list(h.shares), list(h.refusal_options), 0.0
    survey, mapping = sq.survey_options, sq.survey_to_prompt
    offered = [i for i, pos in enumerate(mapping) if pos is not None]
    if len(h.shares) == len(survey):
        letters = list(range(len(survey)))
    elif len(h.shares) == len(offered):  # the options the model was not offered left out
        letters = offered
    else:
        listed = ", ".join(f"{string.ascii_uppercase[i]} {o!r}" for i, o in enumerate(survey))
        raise ValueError(
            f"{where}: {len(h.shares)} option shares, but the survey question has {len(survey)} options "
            f"({listed}; Refused left out), the model's ({sq.label}) {len(sq.options)}"
        )
    shares = [0.0] * len(sq.options)
    refusal: list[int] = []
    extra = 0.0
    for letter, i in enumerate(letters):
        pos = mapping[i]
        if pos is None:
            if letter not in h.refusal_options:
                raise ValueError(
                    f"{where}: option {string.ascii_uppercase[letter]} ({survey[i]!r}) of the survey question is "
                    f"not offered to the model ({sq.label}); mark it as a refusal"
                )
            extra += h.shares[letter]
            continue
        shares[pos] = h.shares[letter]
        if letter in h.refusal_options:
            refusal.append(pos)
    return shares, refusal, extra


def score_questions(
    human: Mapping[str, HumanDistribution], model: Mapping[str, ModelQuestion], source: str | Path = "human data"
) -> list[QuestionScore]:
    """Representativeness of every question of the human data against the model's answers to the
    same survey question (`model_questions`). A key the results do not hold, one whose survey
    question no run asked, and an option count that differs are errors naming the key."""
    unknown = sorted(set(human) - set(model))
    if unknown:
        raise ValueError(
            f"{source}: question key(s) {', '.join(unknown[:5])}{' …' if len(unknown) > 5 else ''} "
            f"are not in the results ({len(unknown)} of {len(human)} keys)"
        )
    missing = [key for key in human if model[key].p is None]
    if missing:
        listed = "; ".join(f"{key}: {model[key].missing}" for key in missing[:5])
        raise ValueError(
            f"{source}: no model answers to the question the respondents saw for {len(missing)} of "
            f"{len(human)} key(s) ({listed}{' …' if len(missing) > 5 else ''})"
        )
    scores = []
    for key, h in human.items():
        m = model[key]
        assert m.p is not None and m.survey is not None
        shares, refusal, extra = _in_prompt_order(h, m.survey, f"{source}, question {key}")
        scores.append(question_representativeness(key, m.p, shares, refusal, h.refusal + extra))
    return scores
