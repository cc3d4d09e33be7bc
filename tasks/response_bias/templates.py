"""The prompt templates of the response-bias tasks (templates.yml) and the `Answer: <letter>` reader.

A template is either a one-token template (the answer is the next token, a letter: exact and
sample mode) or a generation template (the model writes up to `max_new_tokens` tokens and the
answer is read from a line `Answer: <letter>`: sample mode only). The shipped templates are the
papers' published prompts under the papers' names, each citing its `source`, and our own earlier
wording of the same templates under `<name>_biasmonkey`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from biasmonkey.metrics.response_bias import BIASES

TEMPLATES_FILE = Path(__file__).with_name("templates.yml")
ANSWER_KINDS = ("letter", "answer_line")
ANSWER_PREFIX = "Answer:"

# "Answer:" (any case) then the letter, optionally in brackets or bold, ending the line or followed
# by ".", ")", ":" or ",", or by a dash ("Answer: B - because ..."). "Answer: A good idea" is no answer.
_ANSWER_LABEL = re.compile(r"\s*[*]*answer[ \t*]*:", re.IGNORECASE)
_ANSWER_LINE = re.compile(
    r"^[ \t*]*answer[ \t*]*:[ \t*]*\(?([a-z])\)?\**(?=[ \t]*$|[.):,]|[ \t]+[-–—])", re.MULTILINE | re.IGNORECASE
)


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str  # with {question}
    max_new_tokens: int
    answer: str  # one of ANSWER_KINDS
    biases: tuple[str, ...]  # the biases whose tasks may use it
    description: str
    source: str = ""  # where the text comes from (paper, appendix), or that it is our own wording

    @property
    def generates(self) -> bool:
        """True for a generation template (free text, sample mode only)."""
        return self.answer == "answer_line"

    def render(self, question: str) -> str:
        return self.text.format(question=question.rstrip())

    def check_task(self, bias: str, task: str) -> None:
        """A clear error when this template does not apply to `bias` (task: the task's name)."""
        if bias not in self.biases:
            raise ValueError(
                f"option template={self.name!r} applies only to the {', '.join(self.biases)} tasks, "
                f"not to task {task!r}"
            )

    def read_answer(self, completion: str, letters: tuple[str, ...] | list[str]) -> int | None:
        """Index of the option an `answer_line` output names, or None when it names none.

        The first line `Answer: <letter>` counts. When the prompt ends with "Answer:", the
        output's first line completes that line, unless the output starts its own "Answer:"
        line (as a chat model answering in a new turn does).
        """
        continues = self.text.rstrip().endswith(ANSWER_PREFIX) and not _ANSWER_LABEL.match(completion)
        return read_answer_line((ANSWER_PREFIX if continues else "") + completion, letters)


def read_answer_line(text: str, letters: tuple[str, ...] | list[str]) -> int | None:
    """Index of the offered letter on the first `Answer: <letter>` line of text, else None."""
    match = _ANSWER_LINE.search(text)
    if match is None or match.group(1).upper() not in letters:
        return None
    return list(letters).index(match.group(1).upper())


_REQUIRED = ("text", "max_new_tokens", "answer", "biases", "description")


def _template(name: str, entry: object, source: Path) -> PromptTemplate:
    """One validated template; errors name the file and the template."""
    where = f"{source}, template {name!r}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping of text, max_new_tokens, answer, biases, description[, source]")
    missing = set(_REQUIRED) - set(entry)
    if missing:
        raise ValueError(f"{where}: missing {', '.join(sorted(missing))}")
    unknown = set(entry) - {*_REQUIRED, "source"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    text, tokens, answer, biases = entry["text"], entry["max_new_tokens"], entry["answer"], entry["biases"]
    if not isinstance(text, str) or "{question}" not in text:
        raise ValueError(f"{where}: text must contain {{question}}")
    if answer not in ANSWER_KINDS:
        raise ValueError(f"{where}: answer={answer!r} is not one of {', '.join(ANSWER_KINDS)}")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
        raise ValueError(f"{where}: max_new_tokens={tokens!r} must be a positive integer")
    if answer == "letter" and tokens != 1:
        raise ValueError(f"{where}: a `letter` answer is one token (max_new_tokens: 1); use answer_line")
    biases = BIASES if biases == "all" else biases
    if not isinstance(biases, list | tuple) or not biases or set(biases) - set(BIASES):
        raise ValueError(f"{where}: biases={entry['biases']!r} must be `all` or a list of {', '.join(BIASES)}")
    cited = entry.get("source", "")
    if not isinstance(cited, str):
        raise ValueError(f"{where}: source={cited!r} must be text (where the prompt comes from)")
    return PromptTemplate(name, text, tokens, answer, tuple(biases), str(entry["description"]), cited)


def load_templates(path: Path = TEMPLATES_FILE) -> dict[str, PromptTemplate]:
    """Every template of a templates file, by name."""
    entries = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(entries, dict) or not entries:
        raise ValueError(f"{path}: expected a mapping of template names to templates")
    return {name: _template(name, entry, Path(path)) for name, entry in entries.items()}


TEMPLATES: dict[str, PromptTemplate] = load_templates()


def get_template(name: str) -> PromptTemplate:
    """The template named by the run option `template`."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown prompt template {name!r}; available: {', '.join(TEMPLATES)}") from None
