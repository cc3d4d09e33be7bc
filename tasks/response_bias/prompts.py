"""Prompt templates for the survey questions (wording of the paper's Appendix B.2 template)."""

from __future__ import annotations

TEMPLATES: dict[str, str] = {
    # The paper's default: one answer token after "Answer:".
    "default": (
        "Please answer the following question with one of the alphabetical options provided.\n"
        "Question: {question}\n"
        "Answer:"
    ),
}


# A sampled answer is valid with or without a space before the letter, so exact mode scores both
# spellings as the next token and adds their probabilities (in both harnesses).
ANSWER_SPELLINGS = (" {letter}", "{letter}")


def answer_continuations(letters: list[str] | tuple[str, ...]) -> list[str]:
    """The continuations exact mode scores for a side, grouped by option: " A", "A", " B", "B", …"""
    return [spelling.format(letter=letter) for letter in letters for spelling in ANSWER_SPELLINGS]


def render_prompt(question: str, template: str = "default") -> str:
    """The full prompt for one survey question (stem plus lettered options)."""
    try:
        fmt = TEMPLATES[template]
    except KeyError:
        raise ValueError(f"unknown prompt template {template!r}; available: {', '.join(TEMPLATES)}") from None
    return fmt.format(question=question.rstrip())


def parse_answer(text: str, letters: tuple[str, ...] | list[str]) -> int | None:
    """Index of the option a sampled answer names, or None when it is not a valid answer.

    Valid: one offered letter (either case), optionally wrapped as "(B)" or followed by "." or ")".
    Anything else (end of turn, other letters, words) is invalid and must be counted as such.
    """
    s = text.strip().strip("()").rstrip(".").strip()
    if len(s) == 1 and s.upper() in letters:
        return list(letters).index(s.upper())
    return None
