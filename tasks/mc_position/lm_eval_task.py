"""lm-eval adapter: any `multiple_choice` task, asked lettered in its original and cyclic orders.

A wrapper task file (`wrappers.py` writes them) includes the wrapped task's own YAML and names
`PositionTask` as its class, so lm-eval itself loads the wrapped task's data, `process_docs`,
templates and few-shot settings. Its documents are the wrapped task's, each in every cyclic order
(`prompts.shifts_for`), after one content-free document per option count; each carries its
`biasmonkey_position` entry (id, kind, n, gold, shift, the options in the order shown), which
`--log_samples` records. Per document one `loglikelihood` request per letter and spelling.

- A task whose answer choices are the letters (lm-eval's MMLU: choices A–D, options in a field of
  the document rendered by its own template) is asked through its own template, the options field
  rotated; the letters are scored as the task scores them (the delimiter, then the letter).
- Any other multiple-choice task (cloze form: the choices are the option texts, as ARC or
  HellaSwag) is rendered as a lettered question (`prompts.lettered_prompt`: its own prompt
  without a closing "Answer:", the options lettered, "Answer:") and scored on " A", " B", ….
  Its content-free prompt is its own template over a document with every text N/A (Zhao et al.),
  as a lettered task's; the Inspect adapter, which has no template, rebuilds the same framing from
  the questions (`prompts.content_free_question`).

A text target is read by `prompts.target_choice` (a choice's text or a letter within the
choices; refused when it is a letter and another choice's text), as the Inspect adapter reads it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from biasmonkey.harness_ext.lm_eval.task import DocResults, doc_values, metric_list
from biasmonkey.tasks.contract import base_task_name, reported
from biasmonkey.tasks.mc_position.codecs import META, from_lm_eval
from biasmonkey.tasks.mc_position.family import FAMILY, TASKS
from biasmonkey.tasks.mc_position.options import PositionOptions
from biasmonkey.tasks.mc_position.prompts import (
    CONTENT_FREE,
    LETTERS,
    check_option_count,
    check_options,
    cyclic_order,
    lettered_prompt,
    shifts_for,
    shown_position,
    target_choice,
)


def lettered_choices(choices: Sequence[str]) -> bool:
    """Whether a task's answer choices are its letters in order ("A", "B", … or "(A)", "(B)", …)."""
    stripped = [str(c).strip().strip("()").strip() for c in choices]
    return stripped == list(LETTERS[: len(stripped)])


def _option_fields(doc: Mapping[str, Any], n: int) -> list[tuple[str, ...]]:
    """Fields of a document holding a list of `n` texts (top level, or one level down)."""
    found = []
    for key, value in doc.items():
        if isinstance(value, list) and len(value) == n and all(isinstance(v, str) for v in value):
            found.append((key,))
        elif isinstance(value, Mapping):
            found += [(key, *path) for path in _option_fields(value, n) if len(path) == 1]
    return found


def _get(doc: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of `doc` with the field at `path` replaced."""
    out = copy.deepcopy(doc)
    inner = out
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return out


def _blanked(doc: Any) -> Any:
    """Every text of a document replaced by the content-free "N/A"."""
    if isinstance(doc, str):
        return CONTENT_FREE
    if isinstance(doc, Mapping):
        return {k: _blanked(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_blanked(v) for v in doc]
    return doc


class PositionTask(ConfigurableTask):
    """A wrapped multiple-choice task (the wrapped task's config, included by the wrapper file)."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)
        name = base_task_name(config.get("task", "")) or ""
        if name not in TASKS:
            raise ValueError(
                f"task {config.get('task')!r} is not a biasmonkey position task (biasmonkey_position_<task>)"
            )
        self.inner = TASKS[name]["inner"]
        if config.get("output_type") != "multiple_choice":
            raise ValueError(
                f"{self.inner}: output_type {config.get('output_type')!r}; answer-position bias wraps "
                "multiple_choice tasks only (a task whose documents have answer choices)"
            )
        self.options = PositionOptions.from_mapping(config.get("metadata"))
        self.reported_metrics = reported(FAMILY, self.options, "lm_eval", {"inner": self.inner})
        self.options_field: tuple[str, ...] | None = None  # a lettered task's options (None: rendered here)
        self._documents: datasets.Dataset | None = None
        config.update(
            output_type="loglikelihood",
            process_results=DocResults(self),
            metric_list=metric_list(self.reported_metrics, FAMILY.record_type),
        )
        super().__init__(config=config, **kwargs)

    # ------------------------------------------------------------------ the wrapped task's items

    def _choices(self, doc: dict[str, Any]) -> list[str]:
        return [str(c) for c in ConfigurableTask.doc_to_choice(self, doc)]

    def _gold(self, doc: dict[str, Any], choices: list[str], where: str) -> int:
        target = ConfigurableTask.doc_to_target(self, doc)
        if isinstance(target, str):  # a letter or a choice's text (refused when both), else an index
            named = target_choice(target, choices, where)
            target = named if named is not None else int(target) if target.strip().isdigit() else target
        if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(choices):
            raise ValueError(
                f"{where}: the answer {target!r} is not one of its {len(choices)} choices (a task with several "
                "correct answers or a free-text answer cannot be wrapped)"
            )
        return target

    def _find_options_field(self, doc: dict[str, Any], n: int, where: str) -> tuple[str, ...]:
        """The field a lettered task's template renders its options from: the list of n texts that
        the prompt shows, each once and in order (told by rendering marker texts in its place)."""
        markers = [f"\x00option {i}\x00" for i in range(n)]
        for path in _option_fields(doc, n):
            shown = str(ConfigurableTask.doc_to_text(self, _set(doc, path, markers)))
            positions = [shown.find(m) for m in markers]
            if all(p >= 0 and shown.count(m) == 1 for p, m in zip(positions, markers)) and positions == sorted(
                positions
            ):
                return path
        raise ValueError(
            f"{where}: the task letters its choices ({', '.join(LETTERS[:n])}) but no field of its documents "
            "holds the options its prompt shows; wrap a task whose documents carry the options as a list"
        )

    def _items(self, docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each item in each of its orders, after one content-free document per option count."""
        content_free: dict[int, dict[str, Any]] = {}
        asked = []
        for index, doc in enumerate(docs):
            where = f"{self.inner}, document {index}"
            choices = self._choices(doc)
            n = len(choices)
            check_option_count(n, where)
            gold = self._gold(doc, choices, where)
            lettered = lettered_choices(choices)
            if index == 0 and lettered:
                self.options_field = self._find_options_field(doc, n, where)
            if lettered != (self.options_field is not None):
                raise ValueError(f"{where}: its choices {choices[:3]}… are lettered in some documents only")
            options = list(_get(doc, self.options_field)) if self.options_field else choices
            if len(options) != n:
                raise ValueError(f"{where}: {len(options)} options for {n} lettered choices")
            check_options(options, where)
            item_id = f"{self.inner}-{index}"
            if n not in content_free:
                blank = _blanked(doc)  # the prompt format kept, every text N/A (Zhao et al.)
                content_free[n] = self._document(
                    blank, f"content_free_{n}", "content_free", n, -1, 0, [CONTENT_FREE] * n
                )
            for shift in shifts_for(n, self.options.permutations, self.options.permutation_seed, item_id):
                shown = [options[i] for i in cyclic_order(n, shift)]
                asked.append(self._document(doc, item_id, "item", n, gold, shift, shown))
        return [*content_free.values(), *asked]

    def _document(
        self, doc: dict[str, Any], item_id: str, kind: str, n: int, gold: int, shift: int, shown: list[str]
    ) -> dict[str, Any]:
        meta = {"id": item_id, "kind": kind, "n": n, "gold": gold, "shift": shift, "options": shown}
        return {**doc, META: meta}

    @property
    def eval_docs(self) -> datasets.Dataset:
        if self._documents is None:
            wrapped = super().eval_docs
            self.features = list(wrapped.features)  # the wrapped task's templates read fields by name
            self._documents = datasets.Dataset.from_list(self._items(list(wrapped)))
        return self._documents

    # ------------------------------------------------------------------ prompts and requests

    def _meta(self, doc: dict[str, Any]) -> dict[str, Any]:
        """A document's position entry; a few-shot example (a plain document) in its original order."""
        if META in doc:
            return doc[META]
        choices = self._choices(doc)
        options = list(_get(doc, self.options_field)) if self.options_field else choices
        return {
            "id": "",
            "kind": "item",
            "n": len(choices),
            "gold": self._gold(doc, choices, "few-shot example"),
            "shift": 0,
            "options": options,
        }

    def _labels(self, doc: dict[str, Any], n: int) -> list[str]:
        return self._choices(doc) if self.options_field else list(LETTERS[:n])

    def doc_to_text(self, doc: dict[str, Any], doc_to_text: Any = None) -> str:
        meta = self._meta(doc)
        if self.options_field:
            return ConfigurableTask.doc_to_text(self, _set(doc, self.options_field, list(meta["options"])))
        return lettered_prompt(str(ConfigurableTask.doc_to_text(self, doc)), meta["options"])

    def doc_to_choice(self, doc: dict[str, Any], doc_to_choice: Any = None) -> list[str]:
        return self._labels(doc, self._meta(doc)["n"])

    def doc_to_target(self, doc: dict[str, Any], doc_to_target: Any = None) -> str:
        meta = self._meta(doc)
        position = 0 if meta["kind"] == "content_free" else shown_position(meta["gold"], meta["n"], meta["shift"])
        return self._labels(doc, meta["n"])[position]

    def _spellings(self, label: str) -> list[str]:
        delimiter = self.config.target_delimiter
        return [delimiter + label, label] if self.options.letter_spellings == "both" else [delimiter + label]

    def construct_requests(self, doc: dict[str, Any], ctx: str, **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        continuations = [s for label in self.doc_to_choice(doc) for s in self._spellings(label)]
        return [
            Instance(request_type="loglikelihood", doc=doc, arguments=(ctx, c), idx=i, **kwargs)
            for i, c in enumerate(continuations)
        ]

    def process_doc(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        return doc_values(self.reported_metrics, from_lm_eval(doc, results))
