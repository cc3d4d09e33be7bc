"""Resolve, verify and parse the BiasMonkey prompt files (Tjuatja et al., TACL 2024).

Files come from a local copy when BIASMONKEY_DATA_DIR is set (layout
`$BIASMONKEY_DATA_DIR/biasmonkey/prompts/<bias>.csv`), otherwise they are downloaded once
from the pinned upstream commit, checked against their sha256 and cached under the user
cache dir (or BIASMONKEY_CACHE_DIR). Upstream data is never shipped with the package.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass
from pathlib import Path

from biasmonkey.tasks.fetch import DataError, PinnedFile

UPSTREAM_REPO = "lindiatjuatja/BiasMonkey"
UPSTREAM_COMMIT = "7e3728d7916ead2187ebae261b4729d928dabbee"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{UPSTREAM_REPO}/{UPSTREAM_COMMIT}"
BASE_URL_ENV = "BIASMONKEY_BIASMONKEY_URL"  # override the download source (tests, mirrors)

# Local path (under biasmonkey/) -> (upstream path, sha256).
FILES: dict[str, tuple[str, str]] = {
    "prompts/acquiescence-key_typo.csv": (
        "prompts/acquiescence-key_typo.csv",
        "8024c85efcb29fdb51158a17800531be7ec2849b88126ac8dc87e23ff10510b6",
    ),
    "prompts/acquiescence-letter_swap.csv": (
        "prompts/acquiescence-letter_swap.csv",
        "b2b065a086cebbe59bd001bea0abce8b67657ee83d005a406acbe584807000d4",
    ),
    "prompts/acquiescence-middle_random.csv": (
        "prompts/acquiescence-middle_random.csv",
        "333e72f6a041f33c0b348b69896e1c47cd9e4ebed6cb173dd0c405e02742a2c0",
    ),
    "prompts/acquiescence.csv": (
        "prompts/acquiescence.csv",
        "48c5d85f7f7dd38c53b4640006220cdf41010f6dd441c091ac0be06b028cd36e",
    ),
    "prompts/acquiescence_reword.csv": (
        "prompts/acquiescence_reword.csv",
        "5b0a7cb5cf05ed6f056370c60855860e17c63b0c0b26b060c26e25216aeadf72",
    ),
    "prompts/allow_forbid-key_typo.csv": (
        "prompts/allow_forbid-key_typo.csv",
        "a541e493ebd91550c9f0f0d15d72426714d239bc90ffee453da5241f620db188",
    ),
    "prompts/allow_forbid-letter_swap.csv": (
        "prompts/allow_forbid-letter_swap.csv",
        "96f789f33065d7313f81387be472b935817739899d6fdda0d3438c066f32f51f",
    ),
    "prompts/allow_forbid-middle_random.csv": (
        "prompts/allow_forbid-middle_random.csv",
        "88c4895ed9528a2342e39f3d0035bf0cb2bef8978a8877af1a39052682db51c9",
    ),
    "prompts/allow_forbid.csv": (
        "prompts/allow_forbid.csv",
        "d740dfea416d1ff1453f0d2bf55378eaf0e57e7171d2a980a6cba15692003f67",
    ),
    "prompts/odd_even.csv": (
        "prompts/odd_even.csv",
        "39ae96634302a88b55be30a7b1c988a66546a161acf8f5fa56f08e27e28acd6e",
    ),
    "prompts/opinion_float-key_typo.csv": (
        "prompts/opinion_float-key_typo.csv",
        "86a581e6fc7217f56f847888393237414c24b8013fb1136c6a8cf993d0c0ac7d",
    ),
    "prompts/opinion_float-letter_swap.csv": (
        "prompts/opinion_float-letter_swap.csv",
        "c345c80a4dbaf1ff26f9690c93dadc7c8d139a5187f8b837da76d24a6a087ed3",
    ),
    "prompts/opinion_float-middle_random.csv": (
        "prompts/opinion_float-middle_random.csv",
        "68e652c1d521767110aeb6db325739a2a23cff0c08f88da408a81a281ecf0faf",
    ),
    "prompts/opinion_float.csv": (
        "prompts/opinion_float.csv",
        "6d8d36c721834af5e9fbbe2855847ee28179dd0404e581a9fcdb0492ad594b45",
    ),
    "prompts/response_order-key_typo.csv": (
        "prompts/response_order-key_typo.csv",
        "8e08d49bec244479d0be03c348d1bbe6b984c91d6d7353830c3be1c028638bc7",
    ),
    "prompts/response_order-letter_swap.csv": (
        "prompts/response_order-letter_swap.csv",
        "27eadd0386030ab47a737058839f5326ca3c4067337c1bae9dce985ae1df6f35",
    ),
    "prompts/response_order-middle_random.csv": (
        "prompts/response_order-middle_random.csv",
        "a3396a020a3cd5985b6803da8668b933d8b862c4ccc2c7a79ea00a8a104cd728",
    ),
    "prompts/response_order.csv": (
        "prompts/response_order.csv",
        "5b27613cf498b98105738f8fc2747b0f780d738a339e150a2ccfa46641f55299",
    ),
    "all-questions-coded.csv": (
        "analysis/all-questions-coded.csv",
        "af7a52adbf83e4eb0b4f4306fe23facdd73388e0322fce056d1843ad60e5736d",
    ),
}


# ---------------------------------------------------------------------------- resolving


def resolve(name: str) -> Path:
    """Local path of a verified data file, e.g. resolve("prompts/acquiescence.csv")."""
    if name not in FILES:
        raise DataError(f"unknown BiasMonkey data file {name!r}")
    return pinned_file(name).fetch()


def pinned_file(name: str) -> PinnedFile:
    """One of FILES as a pinned file: where it lies locally and in the cache, its URL and sha256."""
    upstream_path, sha = FILES[name]
    return PinnedFile(
        local_path=f"biasmonkey/{name}",
        cache_path=f"biasmonkey/{UPSTREAM_COMMIT[:12]}/{name}",
        url=f"{base_url()}/{upstream_path}",
        sha256=sha,
        upstream=f"{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}",
    )


def base_url() -> str:
    """Where the upstream files are downloaded from (BIASMONKEY_BIASMONKEY_URL overrides it)."""
    return os.environ.get(BASE_URL_ENV, DEFAULT_BASE_URL).rstrip("/")


def resolve_all() -> list[Path]:
    """Resolve (and, without BIASMONKEY_DATA_DIR, download and cache) every data file."""
    return [resolve(name) for name in FILES]


# ---------------------------------------------------------------------------- parsing

_OPTION_LINE = re.compile(r"^([A-Za-z])\.\s?(.*)$")


@dataclass(frozen=True)
class Question:
    """A survey question as published (`text`) with its stem and lettered options A, B, ..."""

    text: str
    stem: str
    options: tuple[str, ...]

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple(chr(ord("A") + i) for i in range(len(self.options)))


def parse_question(text: str, where: str) -> Question:
    """Split 'stem\nA. opt\nB. opt' into stem and options; `where` names file and row."""
    lines = text.rstrip().split("\n")
    start = len(lines)
    # Options are the trailing run of lettered lines, from the last one back to "A.".
    while start > 0 and (m := _OPTION_LINE.match(lines[start - 1].strip())):
        start -= 1
        if m.group(1).upper() == "A":
            break
    matches = [_OPTION_LINE.match(line.strip()) for line in lines[start:]]
    letters = [m.group(1) for m in matches if m]
    expected = [chr(ord("A") + i) for i in range(len(letters))]
    if len(letters) < 2 or letters != expected:
        raise DataError(
            f"{where}: option letters do not parse (found {letters or 'none'}; expected "
            f"lines 'A. ...', 'B. ...' in order after the question)"
        )
    stem = "\n".join(lines[:start])
    if not stem.strip():
        raise DataError(f"{where}: question text is empty")
    return Question(text=text, stem=stem, options=tuple(m.group(2).strip() for m in matches if m))


@dataclass(frozen=True)
class PromptRow:
    """One row of a prompt file: the control question q and the treatment q'."""

    key: str
    control: Question
    treatment: Question
    line: int  # 1-based line of the row in its file (header = line 1)


# Columns of each bias file: (q column, q' column); the perturbation files reuse them.
COLUMNS: dict[str, tuple[str, str]] = {
    "acquiescence": ("orig alpha", "pos alpha"),
    "allow_forbid": ("orig alpha", "forbid alpha"),
    "response_order": ("orig alpha", "reversed alpha"),
    "opinion_float": ("orig alpha", "float alpha"),
    "odd_even": ("middle alpha", "no middle alpha"),
}


def prompt_file(bias: str, setting: str, reword: bool = False) -> str:
    """Data file name for a (bias, setting); odd/even perturbations live in the opinion_float files."""
    if bias not in COLUMNS:
        raise DataError(f"unknown bias {bias!r}; expected one of {', '.join(COLUMNS)}")
    if setting == "bias":
        return f"prompts/{bias}_reword.csv" if reword else f"prompts/{bias}.csv"
    source = "opinion_float" if bias == "odd_even" else bias
    return f"prompts/{source}-{setting}.csv"


def _expected_counts(bias: str, setting: str, row: dict[str, str]) -> tuple[int, int]:
    """Option counts of (q, q') that a well-formed row must have."""
    n = int(row["num options"])
    if setting != "bias":
        return n, n  # q' is the perturbed original
    if bias == "acquiescence":
        return n, 2  # the leading question is always Yes/No
    if bias in ("opinion_float", "odd_even"):
        return n, int(row["num options new"])
    return n, n


def load_rows(bias: str, setting: str, reword: bool = False) -> list[PromptRow]:
    """Parse and validate every row of the prompt file for (bias, setting)."""
    name = prompt_file(bias, setting, reword)
    path = resolve(name)
    q_col, qp_col = COLUMNS["opinion_float" if bias == "odd_even" and setting != "bias" else bias]
    required = ["key", "num options", q_col, qp_col]
    if setting == "bias" and bias in ("opinion_float", "odd_even"):
        required.append("num options new")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: missing column(s) {missing}; found {reader.fieldnames}")
        rows: list[PromptRow] = []
        start = reader.line_num + 1  # first physical line of the next record (records span lines)
        for raw in reader:
            line, start = start, reader.line_num + 1
            where = f"{path}, row at line {line} (key {raw.get('key')!r})"
            if not raw["key"]:
                raise DataError(f"{where}: empty key")
            try:
                n_q, n_qp = _expected_counts(bias, setting, raw)
            except (TypeError, ValueError) as err:
                raise DataError(f"{where}: option count is not an integer ({err})") from None
            control = parse_question(raw[q_col] or "", f"{where}, column {q_col!r}")
            treatment = parse_question(raw[qp_col] or "", f"{where}, column {qp_col!r}")
            for col, question, expected in ((q_col, control, n_q), (qp_col, treatment, n_qp)):
                if len(question.options) != expected:
                    raise DataError(f"{where}, column {col!r}: {len(question.options)} options, expected {expected}")
            rows.append(PromptRow(raw["key"], control, treatment, line))
    if not rows:
        raise DataError(f"{path}: no rows")
    lines_of: dict[str, list[int]] = {}
    for r in rows:
        lines_of.setdefault(r.key, []).append(r.line)
    dups = {k: v for k, v in lines_of.items() if len(v) > 1}
    if dups:
        where = "; ".join(f"{k!r} at lines {', '.join(map(str, v))}" for k, v in sorted(dups.items()))
        raise DataError(f"{path}: duplicate key(s): {where}")
    return rows
