"""Diversity of a generated test set: self-BLEU (nltk) and ROUGE-L (rouge-score); lower = more diverse.

Each test is one text: its control followed by its treatment. Both numbers are computed per bias
and over the whole set, each on a seeded random subset so that large sets stay fast:

- self-BLEU: for each of at most `max_texts` texts (default 100), BLEU-4 (uniform weights, nltk's
  `SmoothingFunction().method1`: a zero n-gram count becomes 0.1) of that text against all the
  other texts of the subset as references; the mean over the subset. Tokens: lowercased words
  and punctuation marks (`\\w+|[^\\w\\s]`).
- ROUGE-L: the F-measure of the longest common subsequence (rouge-score, no stemming; it is
  symmetric), averaged over at most `max_pairs` (default 200) distinct pairs of texts drawn from
  all pairs.

The subsets are drawn with `random.Random(seed)` (the run's `--seed`), so the report is reproducible.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score.rouge_scorer import RougeScorer

from biasmonkey.tasks.atomic_write import write_text

MAX_TEXTS = 100
MAX_PAIRS = 200
_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def self_bleu(texts: Sequence[str], max_texts: int = MAX_TEXTS, seed: int = 0) -> float | None:
    """Mean BLEU-4 of each text against all others (None for fewer than two texts)."""
    if len(texts) < 2:
        return None
    subset = list(texts) if len(texts) <= max_texts else random.Random(seed).sample(list(texts), max_texts)
    tokenized = [tokens(t) for t in subset]
    smoothing = SmoothingFunction().method1
    scores = [
        sentence_bleu(tokenized[:i] + tokenized[i + 1 :], hypothesis, smoothing_function=smoothing)
        for i, hypothesis in enumerate(tokenized)
    ]
    return sum(scores) / len(scores)


def rouge_l(texts: Sequence[str], max_pairs: int = MAX_PAIRS, seed: int = 0) -> float | None:
    """Mean ROUGE-L F-measure over (a random subset of) the distinct pairs (None for fewer than two texts)."""
    if len(texts) < 2:
        return None
    pairs = list(itertools.combinations(range(len(texts)), 2))
    if len(pairs) > max_pairs:
        pairs = random.Random(seed).sample(pairs, max_pairs)
    scorer = RougeScorer(["rougeL"])
    scores = [scorer.score(texts[i], texts[j])["rougeL"].fmeasure for i, j in pairs]
    return sum(scores) / len(scores)


def text_of_test(row: Mapping[str, str]) -> str:
    return f"{row['control']}\n{row['treatment']}"


def diversity(
    rows: Sequence[Mapping[str, str]], seed: int = 0, max_texts: int = MAX_TEXTS, max_pairs: int = MAX_PAIRS
) -> dict[str, Any]:
    """Self-BLEU and ROUGE-L per bias (by the rows' `bias` value) and over all rows."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(row["bias"], []).append(text_of_test(row))
    groups["all"] = [text_of_test(row) for row in rows]
    return {
        "seed": seed,
        "max_texts": max_texts,
        "max_pairs": max_pairs,
        "groups": {
            name: {
                "tests": len(texts),
                "self_bleu": self_bleu(texts, max_texts, seed),
                "rouge_l": rouge_l(texts, max_pairs, seed),
            }
            for name, texts in groups.items()
        },
    }


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def write_diversity_report(
    rows: Sequence[Mapping[str, str]],
    json_path: Path,
    md_path: Path,
    seed: int = 0,
    max_texts: int = MAX_TEXTS,
    max_pairs: int = MAX_PAIRS,
) -> dict[str, Any]:
    """Compute the diversity of `rows` and write it as JSON and as a markdown table."""
    result = diversity(rows, seed, max_texts, max_pairs)
    write_text(json_path, json.dumps(result, indent=2) + "\n")
    lines = [
        f"Self-BLEU on at most {max_texts} tests per group, ROUGE-L F on at most {max_pairs} pairs per group, "
        f"subsets drawn with seed {seed}. Lower is more diverse.",
        "",
        "| bias | tests | self-BLEU | ROUGE-L |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {g['tests']} | {_cell(g['self_bleu'])} | {_cell(g['rouge_l'])} |"
        for name, g in result["groups"].items()
    ]
    write_text(md_path, "\n".join(lines) + "\n")
    return result
