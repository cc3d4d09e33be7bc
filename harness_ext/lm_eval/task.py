"""The part every biasmonkey lm-eval task shares: options, documents and metrics from the family.

A task YAML names a `FamilyTask` subclass as its `class` and the family's `load_docs` as its
`custom_dataset`. The subclass builds the requests (`construct_requests`) and reads a document's
results into the family's record (`record`); everything else comes from the family's contract:
`metric_list` from its metric table, `process_results` from the metrics' per-record values.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import datasets
from lm_eval.api.task import ConfigurableTask

from biasmonkey.harness_ext import short_errors
from biasmonkey.tasks.contract import Family, Metric, base_task_name, reported

short_errors.install()  # stock lm_eval: an error in a task's options or data is one line


def family_dataset(family: Family, arguments: dict[str, Any]) -> datasets.DatasetDict:
    """`custom_dataset` hook: a task's documents as a single `test` split.

    lm-eval calls it with the task's `dataset_kwargs` (the task's fixed arguments) merged with
    the run metadata (`--metadata` and the model arguments), so keys that are not options are
    ignored."""
    fixed_names = list(inspect.signature(family.docs).parameters)[1:]
    fixed = {name: arguments.pop(name) for name in fixed_names if name in arguments}
    options = family.options_type.from_mapping(arguments)
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(family.docs(options, **fixed))})


class RecordDict(dict):
    """A record as the dict that lm-eval logs with the document (JSON like any dict), holding the
    record it was made from: each set-level metric's aggregation reads that record instead of
    parsing the dict again (for the few-shot yes-no suite, eight metrics × 3,300 documents)."""

    record: Any


def _record(value: Any, record_type: type) -> Any:
    if isinstance(value, RecordDict):
        return value.record
    return record_type.from_dict(value) if isinstance(value, dict) else value


def _aggregation(metric: Metric, record_type: type) -> Callable[[list[Any]], float]:
    """A set-level metric's aggregation over the documents that have a value (the others logged
    None); whole records arrive as the dicts `process_results` returned."""

    def aggregate(values: list[Any]) -> float:
        assert metric.aggregate is not None
        return metric.aggregate([_record(v, record_type) for v in values if v is not None])

    aggregate.__name__ = metric.name
    return aggregate


def metric_list(metrics: Sequence[Metric], record_type: type) -> list[dict[str, Any]]:
    """lm-eval's `metric_list`: `mean` (which also gives a stderr) or the metric's own aggregation."""
    return [
        {
            "metric": m.name,
            "aggregation": "mean" if m.aggregate is None else _aggregation(m, record_type),
            "higher_is_better": m.higher_is_better,
        }
        for m in metrics
    ]


def doc_values(metrics: Sequence[Metric], record: Any) -> dict[str, Any]:
    """`process_results` of one document: each metric's value of its record; whole records are
    passed as dicts. A record without a value logs None for a metric with its own aggregation
    (which skips it), so every document counts once in each such metric and lm-eval sees one
    number of documents per task; it is left out of a `mean` metric, which cannot skip it."""
    out = {}
    whole = None  # the record as a dict, made once and given to every metric that takes it whole
    for m in metrics:
        value = m.value(record)
        if value is record:
            if whole is None:
                whole = RecordDict(record.as_dict())
                whole.record = record
            value = whole
        if value is not None or m.aggregate is not None:
            out[m.name] = value
    return out


class DocResults:
    """A task's `process_results`: its `process_doc`, in a holder that lm-eval's copies leave as
    it is. lm-eval deep-copies a task's config for its results (`TaskConfig.to_dict`), and a
    bound method's copy copies its task, with every document and request: 0.42 s for the few-shot
    yes-no suite's two tasks with their requests built, 0.005 s with this holder."""

    def __init__(self, task: Any) -> None:
        self.task = task

    def __call__(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        return self.task.process_doc(doc, results)

    def __deepcopy__(self, memo: dict[int, Any]) -> DocResults:
        return self

    def __str__(self) -> str:  # what lm-eval writes for it in the results' config
        return f"{type(self.task).__module__}.{type(self.task).__qualname__}.process_doc"


class Documents(list):
    """A split's documents as plain dicts, with the dataset's `features` (lm-eval reads their names)."""

    def __init__(self, documents: list[dict[str, Any]], features: datasets.Features) -> None:
        super().__init__(documents)
        self.features = features


class FamilyTask(ConfigurableTask):
    """A biasmonkey task of `family`; subclasses build its requests and read its results."""

    family: ClassVar[Family]
    _test_documents: Documents | None = None

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.pop("class", None)  # TaskConfig does not know the key lm-eval used to find us
        name = base_task_name(config.get("task", ""))
        if name not in self.family.tasks:
            raise ValueError(f"task {config.get('task')!r} is not one of the biasmonkey {self.family.name} tasks")
        self.fixed = dict(self.family.tasks[name])
        self.options = self.family.options_type.from_mapping(config.get("metadata"))
        self.reported_metrics = reported(self.family, self.options, "lm_eval", self.fixed)
        config.update(
            test_split="test",
            process_results=DocResults(self),
            metric_list=metric_list(self.reported_metrics, self.family.record_type),
            **self.harness_config(),
        )
        super().__init__(config=config, **kwargs)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """The task's documents from the family, under the options parsed once in `__init__` (the
        YAML's `custom_dataset` hook, `family_dataset`, serves lm-eval's own loaders and checks).
        Also spares the warning lm-eval logs once per task in its `download` (that custom
        arguments can go through `--metadata`: biasmonkey's options do, and are documented)."""
        documents = self.family.docs(self.options, **self.fixed)
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(documents)})
        self._test_documents = None

    def test_docs(self) -> Documents:
        """The documents as plain dicts, read off the dataset once (`Dataset.to_list`: the same
        dicts as its rows). lm-eval goes through them twice in a run, to build the requests and to
        score them, and a `datasets.Dataset` decodes each row it yields in Python: 0.3 s a pass for
        the few-shot yes-no suite's 3,300 documents on 2 cores."""
        if self._test_documents is None:
            dataset = super().test_docs()
            self._test_documents = Documents(dataset.to_list(), dataset.features)
        return self._test_documents

    def harness_config(self) -> dict[str, Any]:
        """Task settings that depend on the options (output type, generation settings, filters)."""
        return {}

    def record(self, doc: dict[str, Any], results: list[Any]) -> Any:
        """The family's record of one document from its results (filtered responses, in request order)."""
        raise NotImplementedError

    def process_doc(self, doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
        return doc_values(self.reported_metrics, self.record(doc, results))
