"""The MMLU items of the authors' answer-position study (Bhatt & Ivanova, 2025; `logprobs_mcq.py`).

The authors ship MMLU (cais/mmlu, MIT; 57 subjects, 14,042 questions, one file
`<subject>_processed.csv` each with the columns question, A, B, C, D, answer) as a
password-protected AES zip of the same release as the yes-no sets, so it is resolved, verified
and decrypted in memory by the yes-no reader (`biasmonkey.tasks.yesno.data`: the pinned
`mmlu-data.zip`, password `mcqmmlupass1` from the upstream README). Cells are used as they are
(not stripped: the authors read them raw, and 788 cells carry leading or trailing spaces from
the original MMLU); the options already start with "(A) " … "(D) ". Error messages name the
file, row and column at fault.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from biasmonkey.tasks.answer_position.prompts import LETTERS, mcq_query
from biasmonkey.tasks.fetch import DataError, PinnedFile
from biasmonkey.tasks.yesno import data as release
from biasmonkey.tasks.yesno.data import _rows, read_members

DATASET = "mmlu"  # the key of the authors' zip in `biasmonkey.tasks.yesno.data.ZIPS`


def pinned_files() -> list[PinnedFile]:
    """The authors' `mmlu-data.zip` as a pinned file (`biasmonkey data fetch`), taken from the
    release's zips (`biasmonkey.tasks.yesno.data.ZIPS`, which also holds the yes-no sets)."""
    return [release.pinned_zip(name) for name in release.ZIPS if name == DATASET]


# The 57 MMLU subjects, one file `<subject>_processed.csv` each (14,042 questions in all), in the authors' order.
MMLU_DOMAINS = (
    "abstract_algebra",
    "anatomy",
    "astronomy",
    "business_ethics",
    "clinical_knowledge",
    "college_biology",
    "college_chemistry",
    "college_computer_science",
    "college_mathematics",
    "college_medicine",
    "college_physics",
    "computer_security",
    "conceptual_physics",
    "econometrics",
    "electrical_engineering",
    "elementary_mathematics",
    "formal_logic",
    "global_facts",
    "high_school_biology",
    "high_school_chemistry",
    "high_school_computer_science",
    "high_school_european_history",
    "high_school_geography",
    "high_school_government_and_politics",
    "high_school_macroeconomics",
    "high_school_mathematics",
    "high_school_microeconomics",
    "high_school_physics",
    "high_school_psychology",
    "high_school_statistics",
    "high_school_us_history",
    "high_school_world_history",
    "human_aging",
    "human_sexuality",
    "international_law",
    "jurisprudence",
    "logical_fallacies",
    "machine_learning",
    "management",
    "marketing",
    "medical_genetics",
    "miscellaneous",
    "moral_disputes",
    "moral_scenarios",
    "nutrition",
    "philosophy",
    "prehistory",
    "professional_accounting",
    "professional_law",
    "professional_medicine",
    "professional_psychology",
    "public_relations",
    "security_studies",
    "sociology",
    "us_foreign_policy",
    "virology",
    "world_religions",
)


def mmlu_file(domain: str) -> str:
    if domain not in MMLU_DOMAINS:
        raise DataError(f"unknown MMLU domain {domain!r}; expected one of {', '.join(MMLU_DOMAINS)}")
    return f"{domain}_processed.csv"


@dataclass(frozen=True)
class McqItem:
    """One multiple-choice question (MMLU): options as in the file ("(A) …"), the gold letter.

    `query` is the text the authors' prompts are built from: the question, a newline, then
    "Options: " and the four options joined by ", " (`prompts.mcq_query`).
    """

    id: str  # mmlu-<domain>-<row>; rows count from 1 after the header
    dataset: str
    domain: str
    question: str
    options: tuple[str, ...]  # A, B, C, D
    gold: str  # "A" … "D"
    query: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


MMLU_COLUMNS = ("question", *LETTERS, "answer")


def _raw_cell(row: dict[str, str], column: str, loc: str) -> str:
    value = row.get(column) or ""
    if not value.strip():
        raise DataError(f"{loc}, column {column!r}: empty")
    return value


def _mmlu_items(domain: str, raw: bytes) -> list[McqItem]:
    items = []
    for n, loc, row in _rows(DATASET, mmlu_file(domain), MMLU_COLUMNS, raw):
        question = _raw_cell(row, "question", loc)
        options = tuple(_raw_cell(row, x, loc) for x in LETTERS)
        for x, option in zip(LETTERS, options):
            if not option.startswith(f"({x}) "):
                raise DataError(f"{loc}, column {x!r}: the option does not start with '({x}) '")
        gold = (row.get("answer") or "").strip()
        if gold not in LETTERS:
            shown = gold if len(gold) <= 20 else gold[:20] + "…"
            raise DataError(f"{loc}, column 'answer': {shown!r} is not one of {', '.join(LETTERS)}")
        items.append(
            McqItem(f"mmlu-{domain}-{n}", "mmlu", domain, question, options, gold, mcq_query(question, options))
        )
    return items


def load_mmlu(domain: str | None = None) -> list[McqItem]:
    """MMLU as the authors use it: all 57 domains (in MMLU_DOMAINS order), or one `domain`.

    Every item keeps its original option order and gold letter: the study does not rotate the
    answer through positions (its balancing is in the calibration folds, see
    `biasmonkey.metrics.answer_position.balanced_mcq_folds`).
    """
    domains = MMLU_DOMAINS if domain is None else (domain,)
    files = tuple(mmlu_file(d) for d in domains)
    raws = read_members(DATASET, files)
    return [item for d, f in zip(domains, files) for item in _mmlu_items(d, raws[f])]
