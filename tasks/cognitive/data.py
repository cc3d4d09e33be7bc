"""Load and validate the cognitive-bias tests of Malberg et al. (2025).

The published dataset (`tum-nlp/cognitive-biases-in-llms` on the Hugging Face Hub, CC BY-SA 4.0)
has one row per test with the columns bias, scenario, control, treatment and metric_params
(a dict with k, x_1, x_2). Control and treatment are full prompts ending with the option list
"Option 1: …", "Option 2: …"; answers are zero-based indices into that list, and so are x_1 and
x_2 (of the control and treatment options): a row whose x lies outside [0, n − 1] is refused, and
so is a blank option and, in a local file, a control and treatment with different option counts
(the authors' templates give both sides the same number; in the published dataset, a warning). A
test that appears twice in a file is run twice, as the authors' script runs every row, with a
warning naming both rows (the second copy's id ends in `-row<N>`). Line ends are
read as "\n" (a CRLF copy gives the same tests, ids and option orders as the LF file).

Where the tests come from, first match wins:
1. an explicit local file (`data_path`, CSV or parquet);
2. `$BIASMONKEY_DATA_DIR/cognitive/cognitive-biases-in-llms.parquet` or `.csv`, if one exists
   (the shared data folder normally holds only the scenarios, so without the file we go on);
3. the Hub, through `datasets.load_dataset`, at the pinned revision `HUB_REVISION`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biasmonkey.metrics.cognitive import check_params
from biasmonkey.tasks.fetch import DATA_DIR_ENV, DataError

HUB_DATASET = "tum-nlp/cognitive-biases-in-llms"
# The dataset repository's commit "Update README.md" (98fd1fd, the dataset card describing the
# 30,000-test CSV). Pinned so every run scores the same tests; override with revision=<sha>.
HUB_REVISION = "98fd1fd7728b320bb0690c51e72ca190191f2358"
LOCAL_NAMES = (
    "cognitive-biases-in-llms.parquet",
    "cognitive-biases-in-llms.csv",
)  # under $BIASMONKEY_DATA_DIR/cognitive/
COLUMNS = ("bias", "scenario", "control", "treatment", "metric_params")

# Task name suffix -> the `bias` value as the authors' generators write it. Lookups ignore case,
# spaces, hyphens and underscores, so "Status-Quo Bias" (the paper's spelling) matches too.
BIASES: dict[str, str] = {
    "anchoring": "Anchoring",
    "anthropomorphism": "Anthropomorphism",
    "availability_heuristic": "Availability Heuristic",
    "bandwagon_effect": "Bandwagon Effect",
    "confirmation_bias": "Confirmation Bias",
    "conservatism": "Conservatism",
    "disposition_effect": "Disposition Effect",
    "endowment_effect": "Endowment Effect",
    "escalation_of_commitment": "Escalation Of Commitment",
    "framing_effect": "Framing Effect",
    "fundamental_attribution_error": "Fundamental Attribution Error",
    "halo_effect": "Halo Effect",
    "hindsight_bias": "Hindsight Bias",
    "hyperbolic_discounting": "Hyperbolic Discounting",
    "illusion_of_control": "Illusion of Control",
    "in_group_bias": "In Group Bias",
    "information_bias": "Information Bias",
    "loss_aversion": "Loss Aversion",
    "mental_accounting": "Mental Accounting",
    "negativity_bias": "Negativity Bias",
    "not_invented_here": "Not Invented Here",
    "optimism_bias": "Optimism Bias",
    "planning_fallacy": "Planning Fallacy",
    "reactance": "Reactance",
    "risk_compensation": "Risk Compensation",
    "self_serving_bias": "Self Serving Bias",
    "social_desirability_bias": "Social Desirability Bias",
    "status_quo_bias": "Status Quo Bias",
    "stereotyping": "Stereotyping",
    "survivorship_bias": "Survivorship Bias",
}

log = logging.getLogger(__name__)

# Metric parameters the authors corrected after publishing the dataset, whose metric_params keep the
# old ones: their Conservatism metric mirrored the treatment answer (flip_treatment, i.e. x_2 = n − 1)
# until commit bb3d532 (merged 2025-10-30); since 2025-10-31 their run/analysis.py recomputes every
# Conservatism score with k = −1, x_1 = x_2 = 0. Run option metric_params=corrected applies these.
CORRECTED_PARAMS: dict[str, tuple[int, float, float]] = {"conservatism": (-1, 0.0, 0.0)}


def _bias_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BY_KEY = {_bias_key(published): slug for slug, published in BIASES.items()}


def bias_slug(name: str) -> str | None:
    """The task suffix of a published bias name (or of a slug), None if it is not one of the 30."""
    return _BY_KEY.get(_bias_key(name))


# ---------------------------------------------------------------------------- parsing a row

# The trailing run of "Option N: text" lines that ends a published prompt.
_OPTION_BLOCK = re.compile(r"(?:^[ \t]*Option \d+:.*(?:\n|\Z))+\Z", re.MULTILINE)
_OPTION_LINE = re.compile(r"^[ \t]*Option (\d+):[ \t]?(.*?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Question:
    """One side of a test: the text before the option list, and the option texts in order."""

    stem: str
    options: tuple[str, ...]


def parse_question(text: str, where: str) -> Question:
    """Split a published prompt into its stem and its trailing "Option N: …" lines (each with a text)."""
    text = text.rstrip()
    block = _OPTION_BLOCK.search(text)
    options = _OPTION_LINE.findall(block.group(0)) if block else []
    numbers_found = [int(number) for number, _ in options]
    if len(numbers_found) < 2 or numbers_found != list(range(1, len(numbers_found) + 1)):
        raise DataError(
            f"{where}: the option list does not parse (found option numbers {numbers_found or 'none'}; "
            f"expected lines 'Option 1: …', 'Option 2: …', … at the end of the prompt)"
        )
    blank = [number for number, option in options if not option.strip()]
    if blank:
        raise DataError(f"{where}: Option {blank[0]} has no text; give every option its text, or drop the row")
    stem = text[: block.start()].removesuffix("\n")
    if not stem.strip():
        raise DataError(f"{where}: the prompt has options but no text before them")
    return Question(stem=stem, options=tuple(option for _, option in options))


def _number(value: Any) -> float:
    """A metric parameter: a number, or a one-element list of one (as numpy arrays print)."""
    while isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def parse_metric_params(value: Any, where: str) -> tuple[int, float, float]:
    """(k, x_1, x_2) from a dict, or its JSON or Python-literal text."""
    params = value
    if isinstance(value, str):
        try:
            params = json.loads(value)
        except ValueError:
            try:
                params = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise DataError(f"{where}: metric_params {value!r} is neither JSON nor a Python dict literal") from None
    if not isinstance(params, Mapping):
        raise DataError(f"{where}: metric_params must be a dict with k, x_1, x_2, got {value!r}")
    missing = [key for key in ("k", "x_1", "x_2") if key not in params]
    if missing:
        raise DataError(f"{where}: metric_params {value!r} lacks {', '.join(missing)}")
    try:
        k, x_1, x_2 = (_number(params[key]) for key in ("k", "x_1", "x_2"))
    except ValueError as err:
        raise DataError(f"{where}: metric_params {value!r}: {err}") from None
    if k not in (1.0, -1.0):
        raise DataError(f"{where}: metric_params k must be 1 or -1, got {params['k']!r}")
    if not (math.isfinite(x_1) and math.isfinite(x_2)):
        raise DataError(f"{where}: metric_params x_1, x_2 must be finite, got {x_1}, {x_2}")
    return int(k), x_1, x_2


def check_references(k: int, x_1: float, x_2: float, control: Question, treatment: Question, where: str) -> None:
    """DataError unless x_1 and x_2 are zero-based indices of the control and treatment options."""
    try:
        check_params(k, x_1, x_2, len(control.options), len(treatment.options))
    except ValueError as err:
        raise DataError(
            f"{where}: metric_params {err}; x_1 and x_2 are zero-based indices of the control and treatment "
            "options (0 = Option 1): correct the row's metric_params, or drop the row"
        ) from None


@dataclass(frozen=True)
class CognitiveTest:
    """One published test, validated. `row` counts data rows from 1 (the header is not a row)."""

    id: str
    bias: str  # task suffix, e.g. "status_quo_bias"
    scenario: str
    control: Question
    treatment: Question
    k: int
    x_1: float
    x_2: float
    source: str
    row: int

    def to_doc(self, reversed_options: bool) -> dict[str, Any]:
        """The harness document: everything rendering and scoring need, JSON-serialisable."""
        return {
            "id": self.id,
            "bias": self.bias,
            "bias_name": BIASES[self.bias],
            "scenario": self.scenario,
            "source": self.source,
            "row": self.row,
            "k": self.k,
            "x_1": self.x_1,
            "x_2": self.x_2,
            "reversed": reversed_options,
            "control_stem": self.control.stem,
            "control_options": list(self.control.options),
            "treatment_stem": self.treatment.stem,
            "treatment_options": list(self.treatment.options),
        }


def _text(value: Any) -> str:
    """A cell as text, its line ends "\n" (CRLF and lone CR as well), so a copy saved with other line
    ends gives the same tests and ids."""
    text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_rows(table: pd.DataFrame, source: str, published: bool = False) -> list[CognitiveTest]:
    """Validate every row of a table in the published schema; errors name the source and row."""
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise DataError(f"{source}: missing column(s) {missing}; found {list(table.columns)}")
    tests: list[CognitiveTest] = []
    seen: dict[str, int] = {}  # test id -> its row
    for row, values in enumerate(table[list(COLUMNS)].itertuples(index=False), start=1):
        where = f"{source}, row {row}"
        bias_value, scenario, control, treatment = (_text(v) for v in values[:4])
        slug = bias_slug(bias_value)
        if slug is None:
            raise DataError(
                f"{where}: unknown bias {bias_value!r}; expected one of the 30 published names "
                f"({', '.join(BIASES.values())})"
            )
        k, x_1, x_2 = parse_metric_params(values[4], where)
        control_q = parse_question(control, f"{where}, column 'control'")
        treatment_q = parse_question(treatment, f"{where}, column 'treatment'")
        if len(control_q.options) != len(treatment_q.options):
            problem = (
                f"{where}: the control has {len(control_q.options)} options and the treatment "
                f"{len(treatment_q.options)}; the authors' templates give both sides the same number"
            )
            if not published:  # a local file: an option line lost
                raise DataError(f"{problem} (an option line lost?): correct the row, or drop it")
            log.warning("%s; scored as published", problem)
        check_references(k, x_1, x_2, control_q, treatment_q, where)
        # A content hash: the same test gets the same id (and option order) in any file or subset.
        digest = hashlib.sha256(
            "\x1f".join([slug, scenario, control, treatment, f"{k},{x_1},{x_2}"]).encode()
        ).hexdigest()
        test_id = f"{slug}-{digest[:12]}"
        if test_id in seen:  # run twice, as the authors' script runs every row, and said
            first = seen[test_id]
            log.warning(
                "%s: rows %d and %d are the same test (bias, scenario, control, treatment and metric_params alike); "
                "both are run and counted, as every row of the file (drop one to count it once)",
                source,
                first,
                row,
            )
            test_id = f"{test_id}-row{row}"
        else:
            seen[test_id] = row
        tests.append(CognitiveTest(test_id, slug, scenario, control_q, treatment_q, k, x_1, x_2, source, row))
    if not tests:
        raise DataError(f"{source}: no rows")
    return tests


# ---------------------------------------------------------------------------- sources


def read_local(path: Path) -> pd.DataFrame:
    """A local copy of the dataset in the published schema (CSV or parquet)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            # Keep every cell as text: prompts must not be turned into numbers or NaN.
            return pd.read_csv(path, dtype=str, keep_default_na=False)
        if suffix == ".parquet":
            return pd.read_parquet(path)
    except (ValueError, OSError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: cannot be read as {suffix[1:]} ({err})") from err
    raise DataError(f"{path}: unsupported file type {suffix!r}; use a .csv or .parquet file")


def read_hub(revision: str) -> pd.DataFrame:
    """The published dataset through `datasets` (downloaded once into the HF cache)."""
    import datasets

    where = f"{HUB_DATASET}@{revision}"
    try:
        loaded = datasets.load_dataset(HUB_DATASET, revision=revision)
    except Exception as err:  # offline, unknown revision, hub errors: all end the same way for the user
        raise DataError(
            f"could not load {where} from the Hugging Face Hub ({type(err).__name__}: {err}). "
            f"To work offline, pass data_path=<csv or parquet file> or put the file at "
            f"${DATA_DIR_ENV}/cognitive/{LOCAL_NAMES[1]} (or .parquet)"
        ) from err
    splits = list(loaded)
    if len(splits) != 1:
        raise DataError(f"{where}: expected one split, found {splits}")
    return loaded[splits[0]].to_pandas()


def local_copy() -> Path | None:
    """The dataset file under $BIASMONKEY_DATA_DIR/cognitive/, if there is one."""
    root = os.environ.get(DATA_DIR_ENV)
    if not root:
        return None
    for name in LOCAL_NAMES:
        path = Path(root) / "cognitive" / name
        if path.is_file():
            return path
    log.info("no %s under %s/cognitive; loading the tests from the Hugging Face Hub", " or ".join(LOCAL_NAMES), root)
    return None


@functools.lru_cache(maxsize=8)
def _load_cached(source: str, revision: str, stamp: tuple[int, int] | None) -> tuple[CognitiveTest, ...]:
    if stamp is None:
        return tuple(parse_rows(read_hub(revision), f"{HUB_DATASET}@{revision[:12]}", published=True))
    return tuple(parse_rows(read_local(Path(source)), source))


def load_tests(data_path: str | os.PathLike | None = None, revision: str | None = None) -> list[CognitiveTest]:
    """Every test of the dataset, validated (parsed once per source and process)."""
    path = Path(data_path) if data_path else local_copy()
    if path is None:
        return list(_load_cached(HUB_DATASET, revision or HUB_REVISION, None))
    if not path.is_file():
        raise DataError(f"cognitive-bias data file {path} does not exist")
    stat = path.stat()
    return list(_load_cached(str(path.resolve()), "", (stat.st_mtime_ns, stat.st_size)))


def bias_tests(
    bias: str, data_path: str | os.PathLike | None = None, revision: str | None = None
) -> list[CognitiveTest]:
    """The tests of one bias (given by task suffix or published name), in file order."""
    slug = bias_slug(bias)
    if slug is None:
        raise DataError(f"unknown bias {bias!r}; expected one of {', '.join(BIASES)}")
    every = load_tests(data_path, revision)
    tests = [t for t in every if t.bias == slug]
    if not tests:
        raise DataError(f"{every[0].source}: no tests for the bias {BIASES[slug]!r}")
    return tests
