"""Yes-no and multiple-choice question sets of Bhatt & Ivanova (CogSci 2025): resolve, decrypt, parse.

Yes-no: COMPS-YNQ and EWoK-YNQ (the paper), Arith-YNQ and bAbI-YNQ (the authors' follow-up),
loaded as `Item`s. The same release's MMLU zip (the authors' answer-position study) is read with
the same reader by the answer-position family (`biasmonkey.tasks.answer_position.data`).

The authors ship every set as a password-protected AES zip. The zips are resolved like every
other upstream file (`biasmonkey.tasks.fetch`: `$BIASMONKEY_DATA_DIR/yesno/<zip>`, or a verified
download cached under the user cache dir) and decrypted in memory only, with the passwords of
the upstream README (`yesno<dataset>pass1`, MMLU `mcqmmlupass1`). The EWoK terms forbid
redistributing EWoK-derived text in plain text, so decrypted text is never written to disk by
this module, and error messages name the file, row and column at fault instead of quoting rows.

Queries are built as in the authors' `logprobs_yesno.py` (upstream commit
below): COMPS and Arith use the question alone (Arith's `Context` column holds `''` in every
row); EWoK and bAbI join context and question with one space; cells are stripped.
"""

from __future__ import annotations

import csv
import io
import os
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyzipper

from biasmonkey.tasks.fetch import DataError, PinnedFile

UPSTREAM_REPO = "ombbhatt/logprobs-bias-correct"
UPSTREAM_COMMIT = "48591bb20f6d95f3a27bb81041dd59a4b81e2570"
UPSTREAM = f"{UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{UPSTREAM_REPO}/{UPSTREAM_COMMIT}/datasets"
BASE_URL_ENV = "BIASMONKEY_YESNO_URL"  # override the download source (tests, mirrors)

DATASETS = ("comps", "ewok", "arith", "babi")  # yes-no sets (load_items)
MCQ_DATASETS = ("mmlu",)  # multiple-choice sets: `biasmonkey.tasks.answer_position.data.load_mmlu`
ANSWERS = ("Yes", "No")


@dataclass(frozen=True)
class ZipSpec:
    name: str
    sha256: str
    password: bytes


ZIPS: dict[str, ZipSpec] = {
    "comps": ZipSpec(
        "compsynq-data.zip", "fc0187421884e2e8b5746e174bb18a7d12b3e7477dffcdbf3a2832b66505db03", b"yesnocompspass1"
    ),
    "ewok": ZipSpec(
        "ewokynq-data.zip", "5d4cce99322d20a2ef2c701df99b55452979a30e46559f8a0f2852305e00e2e3", b"yesnoewokpass1"
    ),
    "arith": ZipSpec(
        "arithynq-data.zip", "d36aa8fb6b847ad9b3e1ac4f7ef4ecba17ed538cb09e3cb0a2d390e94504dbc7", b"yesnoarithpass1"
    ),
    "babi": ZipSpec(
        "babiynq-data.zip", "ff75063d7711dad497f72edffb412b876ef525ad3e96cf5f5e3e4e07f1b3f6a5", b"yesnobabipass1"
    ),
    "mmlu": ZipSpec(
        "mmlu-data.zip", "f07a75a8250ea7aa36418eb3888df698589e568c8fe8eaa980c071ea67176084", b"mcqmmlupass1"
    ),
}

# The COMPS-YNQ file the paper uses (2,100 rows); the zip also holds larger pools.
COMPS_FILE = "comps_yn_rand_2prop_2100.csv"
# The files the authors' unified_runner.py reads (the zips hold nothing else).
ARITH_FILE = "arith-ynq-big.csv"  # 1,200 rows: 6 kinds (`Digits`) × 200, half Yes in each
BABI_FILE = "babi-ynq-big.csv"  # 1,200 rows: 12 bAbI tasks (`task`) × 100, half Yes in each
EWOK_DOMAINS = (
    "agent_properties",
    "material_dynamics",
    "material_properties",
    "physical_dynamics",
    "physical_interactions",
    "physical_relations",
    "quantitative_properties",
    "social_interactions",
    "social_properties",
    "social_relations",
    "spatial_relations",
)


def ewok_file(domain: str) -> str:
    if domain not in EWOK_DOMAINS:
        raise DataError(f"unknown EWoK domain {domain!r}; expected one of {', '.join(EWOK_DOMAINS)}")
    return f"processed_t2q_{domain}.csv"


@dataclass(frozen=True)
class Item:
    """One yes-no question: a stable id, the query the prompt is built from, the gold answer."""

    id: str  # comps-<row>, ewok-<domain>-<row>, arith-<row>, babi-<row>; rows count from 1 after the header
    dataset: str
    query: str
    gold: str  # "Yes" or "No"
    domain: str | None = None  # EWoK domain

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def zip_path(dataset: str) -> Path:
    """Local path of the verified upstream zip of `dataset` ("comps", "ewok", "arith", "babi", "mmlu")."""
    if dataset not in ZIPS:
        raise DataError(f"unknown yes-no dataset {dataset!r}; expected one of {', '.join(ZIPS)}")
    return pinned_zip(dataset).fetch()


def pinned_zip(dataset: str) -> PinnedFile:
    """One of ZIPS as a pinned file."""
    spec = ZIPS[dataset]
    base = os.environ.get(BASE_URL_ENV, DEFAULT_BASE_URL).rstrip("/")
    return PinnedFile(
        local_path=f"yesno/{spec.name}",
        cache_path=f"yesno/{UPSTREAM_COMMIT[:12]}/{spec.name}",
        url=f"{base}/{spec.name}",
        sha256=spec.sha256,
        upstream=UPSTREAM,
    )


def read_member(dataset: str, member: str) -> bytes:
    """Decrypted bytes of one file in the dataset's zip (in memory only)."""
    return read_members(dataset, (member,))[member]


def read_members(dataset: str, members: tuple[str, ...]) -> dict[str, bytes]:
    """Decrypted bytes of several files of one zip, resolved and verified once (in memory only)."""
    path = zip_path(dataset)
    out: dict[str, bytes] = {}
    names: list[str] = []
    member = members[0] if members else ""
    try:
        with pyzipper.AESZipFile(path) as zf:
            names = zf.namelist()
            if all(m in names for m in members):
                zf.setpassword(ZIPS[dataset].password)
                for member in members:
                    out[member] = zf.read(member)
    except RuntimeError as err:  # pyzipper reports a wrong or missing password this way
        where = f"{path}, file {member!r}"
        if "password" in str(err):
            raise DataError(f"{where}: wrong password for the zip ({err})") from None
        raise DataError(f"{where}: corrupt zip ({err})") from None
    except (pyzipper.BadZipFile, zlib.error, EOFError) as err:
        raise DataError(f"{path}, file {member!r}: corrupt zip ({type(err).__name__}: {err})") from None
    missing = [m for m in members if m not in names]
    if missing:
        held = ", ".join(names[:12]) + (", …" if len(names) > 12 else "")
        raise DataError(f"{path}: no file {missing[0]!r} in the zip (it holds {held or 'nothing'})")
    return out


def _rows(
    dataset: str, member: str, required: tuple[str, ...], raw: bytes | None = None
) -> list[tuple[int, str, dict[str, str]]]:
    """(row number, location for messages, row) for each data row; checks the header."""
    if raw is None:
        raw = read_member(dataset, member)
    where = f"{ZIPS[dataset].name}:{member}"
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{where}: not UTF-8 text ({err})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(f"{where}: missing column(s) {missing}; found {reader.fieldnames}")
    rows = []
    start = reader.line_num + 1
    for n, row in enumerate(reader, 1):
        line, start = start, reader.line_num + 1
        rows.append((n, f"{where}, row {n} (line {line})", row))
    if not rows:
        raise DataError(f"{where}: no rows")
    return rows


def _cell(row: dict[str, str], column: str, loc: str) -> str:
    value = (row.get(column) or "").strip()
    if not value:
        raise DataError(f"{loc}, column {column!r}: empty")
    return value


def _gold(row: dict[str, str], loc: str) -> str:
    value = (row.get("Correct Answer") or "").strip()
    if value not in ANSWERS:
        shown = value if len(value) <= 20 else value[:20] + "…"
        raise DataError(f"{loc}, column 'Correct Answer': label {shown!r} is not Yes or No")
    return value


def load_comps() -> list[Item]:
    """COMPS-YNQ: 2,100 questions; the query is the `Question` column."""
    return [
        Item(f"comps-{n}", "comps", _cell(row, "Question", loc), _gold(row, loc))
        for n, loc, row in _rows("comps", COMPS_FILE, ("Question", "Correct Answer"))
    ]


def load_ewok(domain: str) -> list[Item]:
    """EWoK-YNQ, one domain; the query is `Context + " " + Question`."""
    rows = _rows("ewok", ewok_file(domain), ("Context", "Question", "Correct Answer"))
    return [
        Item(
            f"ewok-{domain}-{n}",
            "ewok",
            _cell(row, "Context", loc) + " " + _cell(row, "Question", loc),
            _gold(row, loc),
            domain,
        )
        for n, loc, row in rows
    ]


def load_arith() -> list[Item]:
    """Arith-YNQ: 1,200 arithmetic questions; the query is the `Question` column."""
    return [
        Item(f"arith-{n}", "arith", _cell(row, "Question", loc), _gold(row, loc))
        for n, loc, row in _rows("arith", ARITH_FILE, ("Question", "Correct Answer"))
    ]


def load_babi() -> list[Item]:
    """bAbI-YNQ: 1,200 questions; the query is `Context + " " + Question`."""
    return [
        Item(
            f"babi-{n}",
            "babi",
            _cell(row, "Context", loc) + " " + _cell(row, "Question", loc),
            _gold(row, loc),
        )
        for n, loc, row in _rows("babi", BABI_FILE, ("Context", "Question", "Correct Answer"))
    ]


def load_items(dataset: str, domain: str | None = None) -> list[Item]:
    """All items of a yes-no dataset ("comps", "arith", "babi"; "ewok": all 11 domains, or one `domain`)."""
    if dataset in ("comps", "arith", "babi"):
        if domain is not None:
            raise DataError(f"{dataset!r} has no domains")
        return {"comps": load_comps, "arith": load_arith, "babi": load_babi}[dataset]()
    if dataset == "ewok":
        domains = EWOK_DOMAINS if domain is None else (domain,)
        return [item for d in domains for item in load_ewok(d)]
    if dataset in MCQ_DATASETS:
        raise DataError(
            f"{dataset!r} is multiple-choice, not yes-no: load it with "
            "biasmonkey.tasks.answer_position.data.load_mmlu()"
        )
    raise DataError(f"unknown yes-no dataset {dataset!r}; expected one of {', '.join(DATASETS)}")
