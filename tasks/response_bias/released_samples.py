"""Rescore the authors' released model samples (Tjuatja et al., TACL 2024).

The BiasMonkey release ships, per model, one CSV per (bias, setting) with 50 sampled answers
per (question, prompt group): columns ``key, response, group, num_options``. `score_sample_dir`
turns one model's folder into the Table-4 rows (mean Δ in points, t-test p, per bias and
setting) exactly as the authors' own analysis yields them on those samples, quirks included:
each quirk is reproduced on purpose and commented where it happens.

Δ and the t-test come from `biasmonkey.metrics`; this module only reads, validates and counts.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biasmonkey.metrics import (
    BIASES,
    SETTINGS,
    distribution_from_counts,
    pair_delta,
    summarize_deltas,
)
from biasmonkey.tasks.response_bias.data import COLUMNS as COLUMNS_BY_BIAS
from biasmonkey.tasks.response_bias.pairs import ALLOW_FORBID_EXCLUDED
from biasmonkey.tasks.text_files import read_csv

ROWS_PER_GROUP = 50
COLUMNS = ("key", "response", "group", "num_options")

# (q group, q' group) per bias: the sample groups are named after the prompt-file columns the
# answers were drawn from. In the perturbation files the q' column keeps the bias's header but
# holds the perturbed original. The published protocol drops 8 allow/forbid keys in every setting.
GROUPS = COLUMNS_BY_BIAS

REWORD_FILE = "acquiescence_reword.csv"  # optional extra treatment wording (some models only)

_RESPONSE = re.compile(r"[a-z]?")  # one lower-case letter, or empty (an upstream defect we keep)


@dataclass(frozen=True)
class GroupSamples:
    """The sampled answers to one prompt (q or q') of one question."""

    counts: Counter[str]  # letter -> number of rows; empty responses are not letters
    rows: int  # all rows, empty responses included
    num_options: int

    def distribution(self) -> np.ndarray:
        """Share of rows per letter a, b, c, … (positions as labelled in the file).

        Quirk: the denominator is the number of rows (50), not the number of valid answers,
        so an empty response lowers every share — as in the authors' analysis.
        """
        size = max([self.num_options, *(ord(letter) - ord("a") + 1 for letter in self.counts)])
        counts = [self.counts.get(chr(ord("a") + i), 0) for i in range(size)]
        return distribution_from_counts(counts, total=self.rows)


def source_bias(bias: str, setting: str) -> str:
    """The bias whose sample file and Δ rule produce the (bias, setting) row.

    Quirk: opinion_float has no perturbation samples of its own. The authors' notebook scores
    its perturbation rows on the odd_even-<perturbation> samples (same 126 originals) with the
    odd/even Δ (q'[b] + q'[d] − q[b] − q[d]), so those rows equal the odd_even ones; the
    opinion-float rule (q[c] − q'[c]) does not reproduce the published numbers.
    """
    return "odd_even" if bias == "opinion_float" and setting != "bias" else bias


def sample_file_name(bias: str, setting: str) -> str:
    source = source_bias(bias, setting)
    return f"{source}.csv" if setting == "bias" else f"{source}-{setting}.csv"


def expected_files() -> list[str]:
    """Every file `score_sample_dir` reads, in scoring order, without duplicates."""
    names = [sample_file_name(b, s) for b in BIASES for s in SETTINGS]
    return list(dict.fromkeys(names))


def read_samples(path: str | Path, groups: tuple[str, str]) -> dict[str, tuple[GroupSamples, GroupSamples]]:
    """Read one sample file into {key: (q samples, q' samples)}, keys in file order.

    Raises ValueError naming the file and the line or key at fault for a missing file or
    column, a group other than `groups`, a response that is neither empty nor one lower-case
    letter, a bad num_options, or a (key, group) without exactly 50 rows.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: sample file not found")
    answers: dict[str, dict[str, Counter[str]]] = {}  # key -> group -> response -> rows
    options: dict[tuple[str, str], int] = {}  # (key, group) -> num_options
    reader = read_csv(path)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)} (header: {reader.fieldnames})")
    for row in reader:
        where = f"{path}, line {reader.line_num}"
        if any(row[c] is None for c in COLUMNS):
            raise ValueError(f"{where}: expected {len(COLUMNS)} fields, got a short row")
        key, response, group = row["key"], row["response"], row["group"]
        if group not in groups:
            raise ValueError(f"{where} (key {key!r}): group {group!r} is not one of {groups}")
        if not _RESPONSE.fullmatch(response):
            raise ValueError(f"{where} (key {key!r}): response {response!r} is neither empty nor one lower-case letter")
        n_options = int(row["num_options"]) if row["num_options"].strip().isdigit() else 0
        if n_options < 1:
            raise ValueError(f"{where} (key {key!r}): num_options {row['num_options']!r} is not a positive integer")
        if options.setdefault((key, group), n_options) != n_options:
            raise ValueError(
                f"{where}: num_options {n_options} differs from earlier rows of key {key!r}, group {group!r}"
            )
        answers.setdefault(key, {g: Counter() for g in groups})[group][response] += 1
    if not answers:
        raise ValueError(f"{path}: no sample rows")
    samples = {}
    for key, by_group in answers.items():
        for group, tally in by_group.items():
            if tally.total() != ROWS_PER_GROUP:
                raise ValueError(
                    f"{path}, key {key!r}: {tally.total()} rows in group {group!r}, expected {ROWS_PER_GROUP}"
                )
        q, qp = (
            GroupSamples(
                Counter({r: n for r, n in by_group[g].items() if r}),  # "" = empty response
                by_group[g].total(),
                options[(key, g)],
            )
            for g in groups
        )
        samples[key] = (q, qp)
    return samples


def pair_deltas(sample_dir: str | Path, bias: str, setting: str) -> dict[str, float]:
    """Δ per question (points) for one (bias, setting) row, keyed by question key."""
    source = source_bias(bias, setting)
    samples = read_samples(Path(sample_dir) / sample_file_name(bias, setting), GROUPS[source])
    return _deltas(samples, source, setting)


def _deltas(samples: dict[str, tuple[GroupSamples, GroupSamples]], rule_bias: str, setting: str) -> dict[str, float]:
    deltas = {}
    for key, (q, qp) in samples.items():
        if rule_bias == "allow_forbid" and key in ALLOW_FORBID_EXCLUDED:
            continue  # published protocol: 40 of 48 allow/forbid pairs
        # qp_positions stays None (q' letters = q positions) on purpose:
        # - response_order: the `reversed alpha` answers in the released files are already
        #   mapped back to the original order (raw q[a] − q'[a] gives the published 24.915
        #   for llama2-7b);
        # - odd_even: the published analysis counts the raw q' letters b and d. The llama2
        #   files already hold the 4-option answers as a, b, d, e (c never occurs when
        #   num_options is 4), while gpt-3.5-turbo's (and some llama2-7b keys') are the
        #   unshifted a–d labels and were counted unshifted anyway: raw counting gives the
        #   published gpt-3.5-turbo 25.048; shifting with [0, 1, 3, 4] would not.
        deltas[key] = pair_delta(rule_bias, setting, q.distribution(), qp.distribution())
    return deltas


def _row(bias: str, setting: str, deltas: dict[str, float]) -> dict[str, object]:
    summary = summarize_deltas(deltas.values())
    return {
        "bias": bias,
        "setting": setting,
        "n": summary.n,
        "delta": summary.mean,
        "p_value": summary.p,
    }


def score_sample_dir(path: str | Path, include_reword: bool = False) -> list[dict[str, object]]:
    """Score one model's released samples into rows {bias, setting, n, delta, p_value}.

    Rows come in a stable order: biases as in `biasmonkey.metrics.BIASES`, settings "bias"
    then the perturbations (key_typo, middle_random, letter_swap). delta is the mean Δ in
    percentage points over the n questions; p_value the two-sided one-sample t-test against 0.
    With include_reword, an extra ("acquiescence", "reword") row follows the acquiescence rows
    when the folder has acquiescence_reword.csv (scored with the acquiescence bias rule).
    Other files in the folder are ignored. Raises ValueError for a missing folder or file and
    for malformed samples (see `read_samples`).
    """
    sample_dir = Path(path)
    if not sample_dir.is_dir():
        raise ValueError(f"{sample_dir}: sample directory not found")
    missing = [name for name in expected_files() if not (sample_dir / name).is_file()]
    if missing:
        raise ValueError(f"{sample_dir}: missing sample file(s) {', '.join(missing)}")
    results = []
    for bias in BIASES:
        for setting in SETTINGS:
            results.append(_row(bias, setting, pair_deltas(sample_dir, bias, setting)))
        if bias == "acquiescence" and include_reword and (sample_dir / REWORD_FILE).is_file():
            samples = read_samples(sample_dir / REWORD_FILE, GROUPS["acquiescence"])
            results.append(_row(bias, "reword", _deltas(samples, "acquiescence", "bias")))
    return results


__all__ = [
    "ALLOW_FORBID_EXCLUDED",
    "GROUPS",
    "ROWS_PER_GROUP",
    "GroupSamples",
    "expected_files",
    "pair_deltas",
    "read_samples",
    "sample_file_name",
    "score_sample_dir",
    "source_bias",
]
