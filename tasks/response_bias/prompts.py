"""Prompts for the survey questions: the templates of templates.yml (the published prompts: TACL
Appendix B.2 by default, and the preprint's extended-generation and steering templates; our own
wording of the latter as `<name>_biasmonkey`) and the answer readers."""

from __future__ import annotations

from biasmonkey.tasks.response_bias.templates import TEMPLATES, get_template

__all__ = ["ANSWER_SPELLINGS", "TEMPLATES", "answer_continuations", "parse_answer", "parse_output", "render_prompt"]


# A sampled answer is valid with or without a space before the letter, so exact mode scores both
# spellings as the next token and adds their probabilities (in both harnesses).
ANSWER_SPELLINGS = (" {letter}", "{letter}")


def answer_continuations(letters: list[str] | tuple[str, ...]) -> list[str]:
    """The continuations exact mode scores for a side, grouped by option: " A", "A", " B", "B", …"""
    return [spelling.format(letter=letter) for letter in letters for spelling in ANSWER_SPELLINGS]


def render_prompt(question: str, template: str = "default") -> str:
    """The full prompt for one survey question (stem plus lettered options)."""
    return get_template(template).render(question)


def parse_answer(text: str, letters: tuple[str, ...] | list[str]) -> int | None:
    """Index of the option a sampled answer names, or None when it is not a valid answer.

    Valid: one offered letter (either case), optionally wrapped as "(B)" or followed by "." or ")".
    Anything else (end of turn, other letters, words) is invalid and must be counted as such.
    """
    s = text.strip().strip("()").rstrip(".").strip()
    if len(s) == 1 and s.upper() in letters:
        return list(letters).index(s.upper())
    return None


def parse_output(text: str, letters: tuple[str, ...] | list[str], template: str = "default") -> int | None:
    """Index of the option a sampled output names under `template`, or None (an invalid answer):
    a one-token template's output must be the letter itself (`parse_answer`); a generation
    template's output names it on an `Answer: <letter>` line."""
    chosen = get_template(template)
    return chosen.read_answer(text, letters) if chosen.generates else parse_answer(text, letters)
