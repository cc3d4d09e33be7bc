"""The lm-eval task every family shares (harness_ext/lm_eval/task.py), built by lm-eval from the
real task files and data: a document's metric values, and what lm-eval copies of the task."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from lm_eval.tasks import TaskManager, get_task_dict

from biasmonkey.harness_ext.app.plan import tasks_dir
from biasmonkey.harness_ext.lm_eval.task import DocResults, RecordDict
from biasmonkey.tasks.yesno.codecs import from_lm_eval
from biasmonkey.tasks.yesno.scoring import ItemRecord


@pytest.fixture(scope="module")
def task(data_dir: Path):
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False)
    return get_task_dict(["biasmonkey_yesno_arith"], manager)["biasmonkey_yesno_arith"]


def results(i: int) -> list[tuple[float, bool]]:
    """Eight (log-likelihood, is_greedy) results: the four answers after the prompt, then after BOS."""
    return [(-0.5 - 0.25 * ((i + j) % 5), False) for j in range(4)] + [
        (-1.0, False),
        (-2.0, False),
        (-1.5, False),
        (-3.0, False),
    ]


def test_metrics_that_take_the_whole_record_share_one_dict_per_document(task) -> None:
    docs = list(task.test_docs())[:6]
    values = [task.process_results(doc, results(i)) for i, doc in enumerate(docs)]
    whole = [name for name, value in values[0].items() if isinstance(value, dict)]
    assert len(whole) >= 2  # the suite's set-level metrics
    for doc, i, value in zip(docs, range(6), values):
        assert all(value[name] is value[whole[0]] for name in whole)
        assert value[whole[0]] == from_lm_eval(doc, results(i)).as_dict()
        assert isinstance(value[whole[0]], RecordDict) and value[whole[0]].record == from_lm_eval(doc, results(i))
    # each set-level metric aggregates the shared dicts as the family's metric does the records
    records = [from_lm_eval(doc, results(i)) for i, doc in enumerate(docs)]
    own = {m.name: m.aggregate for m in task.reported_metrics}
    for entry in task.config.metric_list:
        if entry["metric"] in whole:
            got = entry["aggregation"]([v[entry["metric"]] for v in values])
            assert got == pytest.approx(own[entry["metric"]](records), nan_ok=True), entry["metric"]
            # the same dicts read back from lm-eval's JSON logs: parsed into the same records
            logged = [json.loads(json.dumps(v[entry["metric"]])) for v in values]
            assert entry["aggregation"](logged) == pytest.approx(got, nan_ok=True), entry["metric"]
    assert ItemRecord.from_dict(values[0][whole[0]]) == from_lm_eval(docs[0], results(0))


def test_copies_of_the_config_leave_the_task_and_its_documents_alone(task) -> None:
    # lm-eval deep-copies the config for the results file; a bound method would copy the task
    assert isinstance(task.config.process_results, DocResults)
    memo: dict = {}
    copied = copy.deepcopy(task.config, memo)
    assert id(task) not in memo and copied.process_results is task.config.process_results
    assert task.dump_config()["process_results"] == "biasmonkey.tasks.yesno.lm_eval_task.YesNoTask.process_doc"


@pytest.mark.parametrize(
    "name",
    [
        "biasmonkey_yesno_comps_fewshot",
        "biasmonkey_acquiescence_key_typo",
        "biasmonkey_cognitive_anchoring",
        "biasmonkey_answer_position_anatomy",
    ],
)
def test_documents_are_plain_dicts_read_once_the_same_as_the_datasets_rows(data_dir: Path, name: str) -> None:
    cognitive = {"data_path": str(Path(__file__).resolve().parents[1] / "fixtures" / "cognitive" / "tests.csv")}
    metadata = cognitive if "cognitive" in name else None
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False, metadata=metadata)
    task = get_task_dict([name], manager)[name]
    docs = task.test_docs()
    assert isinstance(docs, list) and task.eval_docs is docs  # read off the dataset once
    assert docs == list(task.dataset["test"])  # as lm-eval would iterate the dataset's rows
    assert [doc for _, doc in task.doc_iterator(limit=3)] == docs[:3]
