"""Which prompt of the suite is the survey question as the human respondents saw it, per key.

Representativeness compares the model's answers with the American Trends Panel's, so the model
side must be the question the respondents answered. Per bias (prompt columns as in
`biasmonkey.tasks.response_bias.data.COLUMNS`):

- acquiescence, response order: q (`orig alpha`), the survey question; every perturbation task
  of the bias asks the same q.
- odd/even and opinion float (the same 126 questions): the original had either 5 options (with
  a middle one; `orig middle option` = True in `odd_even.csv`, 54 keys) or 4 (False, 72 keys;
  `num options` is 5 for every row because q always has a middle option, added where the
  original had none). A 5-option original is q (`middle alpha` = opinion float's `orig alpha`,
  also the q of every odd/even and opinion-float perturbation task). A 4-option original is
  odd/even's q′ (`no middle alpha`), asked by the `odd_even` bias task only.
- allow/forbid: none. Its q is a Yes/No rewording of the survey question (e.g. "Good / Bad"
  becomes "Yes / No"), so keys that only allow/forbid asks have no model answer to compare.

The survey's own option lists come from `all-questions-coded.csv` (OpinionQA's `references`,
"Refused" last). Human shares are read in that order and mapped to the prompt's options by text
(the coded file truncates long options, so one text may be a prefix of the other). For 87 of the
126 odd/even keys, all acquiescence and all response-order keys the order is the prompt's. Two
groups differ: 33 five-option questions list the middle option last ("Neither a good nor bad
thing"; OpinionQA gives it the ordinal value between the 2nd and 3rd option), while the prompt
puts it in the middle, where the scale has it; and 6 four-option questions (RACESURV18a–f_W43)
have a "Not sure" option the prompt does not offer, which the human data must mark as a refusal.

The authors (lindiatjuatja/BiasMonkey@a8eae90, analysis/correlation_human_behavior.ipynb,
`get_model_responses`) pick `no middle alpha` when the human question has an even number of
options (counting every option but the last, "Refused") and `middle alpha` otherwise, and take
`orig alpha` (q) for the other biases, allow/forbid included; they compare the two
distributions letter by letter in the survey's order.
"""

from __future__ import annotations

import ast
import csv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from biasmonkey.tasks.response_bias.data import DataError, load_rows, resolve

CODED_FILE = "all-questions-coded.csv"
REFUSED_OPTION = "Refused"
MIDDLE_FLAG = "orig middle option"
# Biases whose prompt files hold the survey question, in the order a key is looked up.
SOURCE_BIASES = ("acquiescence", "response_order", "odd_even")
# Tasks that ask the same q prompt as a source bias (odd/even's q is opinion float's q).
SAME_Q_BIASES = {
    "acquiescence": ("acquiescence",),
    "response_order": ("response_order",),
    "odd_even": ("opinion_float", "odd_even"),
}
REWORDED_BIASES = ("allow_forbid",)  # q rewords the survey question as Yes/No
SIDE_LABELS = {"q": "q", "qp": "q′"}


@dataclass(frozen=True)
class SurveyQuestion:
    """The survey question of one key as the suite asks it.

    bias, side: the prompt that is the survey question (`side` "q" or "qp" of `bias`'s pairs).
    options: that prompt's options, in the prompt's order (the ordinal order compared).
    survey_options: the survey's options in the survey's order, "Refused" left out (None when
        the coded file does not list the key: human shares are then read in the prompt's order).
    survey_to_prompt: per survey option, its position among `options` (None: not offered).
    """

    key: str
    bias: str
    side: str
    options: tuple[str, ...]
    survey_options: tuple[str, ...] | None = None
    survey_to_prompt: tuple[int | None, ...] | None = None

    @property
    def label(self) -> str:
        """E.g. "odd_even q′" (the bias's prompt column pair and the side)."""
        return f"{self.bias} {SIDE_LABELS[self.side]}"

    @property
    def reordered(self) -> bool:
        """True when the survey lists the offered options in another order than the prompt."""
        matched = [p for p in self.survey_to_prompt or () if p is not None]
        return matched != sorted(matched)

    @property
    def not_offered(self) -> tuple[str, ...]:
        """Survey options the prompt does not offer (e.g. "Not sure")."""
        if self.survey_options is None or self.survey_to_prompt is None:
            return ()
        return tuple(o for o, p in zip(self.survey_options, self.survey_to_prompt) if p is None)


def _same(a: str, b: str) -> bool:
    a, b = " ".join(a.casefold().split()), " ".join(b.casefold().split())
    return a == b or a.startswith(b) or b.startswith(a)


def survey_to_prompt(key: str, survey: tuple[str, ...], prompt: tuple[str, ...]) -> tuple[int | None, ...]:
    """The prompt position of each survey option (None: the prompt does not offer it); every
    prompt option must match exactly one survey option."""
    positions: list[int | None] = []
    for option in survey:
        hits = [i for i, p in enumerate(prompt) if _same(option, p)]
        if len(hits) > 1:
            raise DataError(f"question {key}: survey option {option!r} matches several prompt options {prompt}")
        positions.append(hits[0] if hits else None)
    unmatched = [p for i, p in enumerate(prompt) if i not in positions]
    if unmatched or len(set(p for p in positions if p is not None)) != len(prompt):
        raise DataError(
            f"question {key}: prompt option(s) {unmatched} are not among the survey's options {list(survey)}"
        )
    return tuple(positions)


def load_survey_options(path: Path | None = None) -> dict[str, tuple[str, ...]]:
    """{key: the survey's options without "Refused"} from all-questions-coded.csv."""
    path = Path(path) if path is not None else resolve(CODED_FILE)
    out: dict[str, tuple[str, ...]] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not {"key", "options"} <= set(reader.fieldnames or ()):
            raise DataError(f"{path}: missing column key or options (header: {reader.fieldnames})")
        for line, row in enumerate(reader, start=2):
            try:
                options = ast.literal_eval(row["options"])
            except (ValueError, SyntaxError):
                raise DataError(f"{path}, row {line}: options {row['options']!r} is not a list") from None
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                raise DataError(f"{path}, row {line}: options {row['options']!r} is not a list of texts")
            out[row["key"]] = tuple(o for o in options if o != REFUSED_OPTION)
    return out


def load_middle_flags(path: Path | None = None) -> dict[str, bool]:
    """{key: whether the original question had the middle option} from odd_even.csv."""
    path = Path(path) if path is not None else resolve("prompts/odd_even.csv")
    flags: dict[str, bool] = {}
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if MIDDLE_FLAG not in (reader.fieldnames or ()):
            raise DataError(f"{path}: missing column {MIDDLE_FLAG!r} (header: {reader.fieldnames})")
        for row in reader:
            value = (row[MIDDLE_FLAG] or "").strip()
            if value not in ("True", "False"):
                raise DataError(f"{path}, key {row['key']}: {MIDDLE_FLAG} is {value!r}, expected True or False")
            flags[row["key"]] = value == "True"
    return flags


def build_survey_questions(
    prompts: Mapping[str, Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]],
    middle: Mapping[str, bool],
    survey_options: Mapping[str, tuple[str, ...]],
) -> dict[str, SurveyQuestion]:
    """The table from its sources: `prompts` {bias: {key: (q options, q′ options)}} for the
    SOURCE_BIASES, `middle` the odd/even middle-option flags, `survey_options` the coded lists."""
    out: dict[str, SurveyQuestion] = {}
    for bias in SOURCE_BIASES:
        for key, (q, qp) in prompts.get(bias, {}).items():
            if key in out:
                continue
            side = "q"
            if bias == "odd_even":
                if key not in middle:
                    raise DataError(f"question {key}: no {MIDDLE_FLAG!r} flag in odd_even.csv")
                side = "q" if middle[key] else "qp"
            options = q if side == "q" else qp
            survey = survey_options.get(key)
            mapping = None if survey is None else survey_to_prompt(key, survey, options)
            out[key] = SurveyQuestion(key, bias, side, options, survey, mapping)
    return out


def survey_questions() -> dict[str, SurveyQuestion]:
    """The survey question of every key of the published prompt files (acquiescence, response
    order, odd/even = opinion float); keys only allow/forbid asks are absent."""
    prompts = {
        bias: {row.key: (row.control.options, row.treatment.options) for row in load_rows(bias, "bias")}
        for bias in SOURCE_BIASES
    }
    return build_survey_questions(prompts, load_middle_flags(), load_survey_options())
