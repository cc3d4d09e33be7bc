"""How a wrapped multiple-choice item is asked: lettered, in its original order and its cyclic shifts.

Under shift s an item's n options are shown rotated: position p (letter p: A, B, …) shows the
original option (p + s) mod n, so the gold option moves through every position over the n shifts
(PriDe's cyclic permutations, Zheng et al., ICLR 2024). A task whose own prompt already letters
its options (its choices are the letters, as lm-eval's MMLU) is rendered by its own template over
the rotated options; any other task (a cloze task such as ARC's or HellaSwag's default form, an
Inspect sample with `choices`) is rendered here as a lettered question (`lettered_prompt`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import numpy as np

from biasmonkey.metrics.position_bias import LETTERS, MAX_OPTIONS, MIN_OPTIONS, cyclic_order

__all__ = ["LETTERS", "MAX_OPTIONS", "MIN_OPTIONS", "cyclic_order"]  # with this module's own names below
CONTENT_FREE = "N/A"  # Zhao et al. (ICML 2021): the content-free input in place of the question and options
ANSWER_CUE = "Answer:"


def shown_position(gold: int, n: int, shift: int) -> int:
    """Where the original option `gold` stands under `shift`."""
    return (gold - shift) % n


def shifts_for(n: int, permutations: int, seed: int, key: str) -> list[int]:
    """The shifts an item of `n` options is asked under: 0 (the original order) first, then all
    the others (`permutations` 0 or ≥ n), or `permutations` − 1 of them drawn without replacement,
    seeded by `seed` and the item's `key` (the same item gets the same shifts in every run)."""
    if permutations == 0 or permutations >= n:
        return list(range(n))
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    drawn = rng.choice(np.arange(1, n), permutations - 1, replace=False)
    return [0, *sorted(int(s) for s in drawn)]


def check_option_count(n: int, where: str) -> None:
    if not MIN_OPTIONS <= n <= MAX_OPTIONS:
        raise ValueError(
            f"{where}: {n} option{'s' if n != 1 else ''}; answer-position bias needs {MIN_OPTIONS} to "
            f"{MAX_OPTIONS} options (one letter each)"
        )


def without_answer_cue(text: str) -> str:
    """A cloze prompt without its closing "Answer:" (the lettered prompt ends with its own)."""
    stripped = text.rstrip()
    return stripped.removesuffix(ANSWER_CUE).rstrip() if stripped.endswith(ANSWER_CUE) else stripped


def lettered_prompt(question: str, options: Sequence[str]) -> str:
    """The question, each option on its own line after its letter ("A. …"), then "Answer:"."""
    lines = [without_answer_cue(question), *(f"{x}. {o}" for x, o in zip(LETTERS, options)), ANSWER_CUE]
    return "\n".join(lines)


def content_free_question(questions: Sequence[str]) -> str:
    """The content-free input (Zhao et al. 2021) in place of the question within the items' own
    framing: the text that every distinct question (as asked, without a closing "Answer:") shares
    at its start and at its end, cut back to a space or line break so that no part of a word is
    kept, around "N/A" — "Question: N/A" for questions asked as "Question: …\nAnswer:", "N/A"
    for questions asked as they are. "N/A" alone with fewer than two distinct questions. The
    Inspect adapter's, which has only the questions as asked; lm-eval renders the task's template
    over N/A, the same prompt unless every question also shares words of its own there."""
    distinct = sorted({without_answer_cue(q) for q in questions})
    if len(distinct) < 2:
        return CONTENT_FREE
    start = os.path.commonprefix(distinct)
    start = start[: max((i + 1 for i, ch in enumerate(start) if ch.isspace()), default=0)]
    room = min(len(q) for q in distinct) - len(start)  # the start and the end never overlap
    end = os.path.commonprefix([q[::-1] for q in distinct])[:room][::-1]
    end = end[next((i for i, ch in enumerate(end) if ch.isspace()), len(end)) :]
    return start + CONTENT_FREE + end


def target_choice(target: str, choices: Sequence[str], where: str) -> int | None:
    """The choice a text target names: a letter within the choices ("A", "B", …: Inspect's
    convention) or the text of exactly one choice (spaces stripped: lm-eval's); None when it names
    none. ValueError when it is a letter and the text of another choice (choices ["B", "C", "D"],
    target "C": Inspect's convention reads choice 2, lm-eval's choice 1), in both harnesses alike."""
    text = target.strip()
    by_letter = LETTERS.index(text) if len(text) == 1 and text in LETTERS[: len(choices)] else None
    by_text = [i for i, c in enumerate(choices) if str(c).strip() == text]
    if by_letter is not None and by_text and by_text != [by_letter]:
        raise ValueError(
            f"{where}: target {target!r} is ambiguous: as a letter it names choice {by_letter} "
            f"({choices[by_letter]!r}), as a text choice {by_text[0]}; give a target that names one choice "
            "(in lm-eval the choice's index) or choices that are not the letters of other choices"
        )
    if by_letter is not None:
        return by_letter
    return by_text[0] if len(by_text) == 1 else None


def check_options(options: Sequence[str], where: str) -> None:
    """ValueError unless every option has a text and no two are the same (after stripping spaces): a
    blank option would be asked as an empty line, and of two identical options only the gold one counts
    as right."""
    texts = [str(option).strip() for option in options]
    fix = "correct or drop the document (e.g. in the wrapped task's process_docs)"
    for i, text in enumerate(texts):
        if not text:
            raise ValueError(f"{where}: option {LETTERS[i]} (choice {i}) is blank; {fix}")
        if text in texts[:i]:
            first = texts.index(text)
            raise ValueError(
                f"{where}: options {LETTERS[first]} and {LETTERS[i]} (choices {first} and {i}) are the same text "
                f"{text[:60]!r}, so choosing the copy that is not the gold one would be scored wrong; {fix}"
            )
