"""The paper's two-step protocol in lm-eval: two runs of the same model.

Inspect chains the two calls of a side in one solver (`tasks/cognitive/inspect_task.py`). lm-eval
cannot: it builds every request of a run before it answers any, and gives a task no handle on the
model, so an extraction prompt, which holds the free answer, cannot be a request of the run that
produces that answer. lm-eval therefore runs the protocol as two runs of the same model with the
same options (`mode=generate`, `protocol=two_step`):

1. step one (no `decisions`): each side's request is the decision prompt; the free answers are
   logged with `--log_samples`, and the task reports only `n_decisions`;
2. step two (`decisions=` step one's `--output_path` or samples file): each document carries its
   two logged free answers, the requests are the extraction prompts built from them, and the
   replies are read and scored by `scoring.score_answers`, as Inspect's scorer reads them.

The lm-eval documents carry the step (`STEP`), the prompt set and, in step two, the free answers,
so that every logged sample says what was asked.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from biasmonkey.tasks.cognitive.data import DataError
from biasmonkey.tasks.contract import lm_eval_task_name
from biasmonkey.tasks.samples_check import LoggedDoc, check_samples

log = logging.getLogger(__name__)

STEP = "two_step"  # document key: DECIDE or EXTRACT
DECIDE, EXTRACT = "decide", "extract"
STEP_ONE_FIX = "give the samples file of a step-one run as lm-eval wrote it, or rerun step one"


def _samples_name(bias: str) -> re.Pattern[str]:
    """lm-eval's samples file name of a cognitive task (`samples_<task>_<time stamp>.jsonl`)."""
    return re.compile(rf"^samples_{lm_eval_task_name('cognitive_' + bias)}_\d{{4}}-\d\d-\d\dT[\d\-.]+\.jsonl$")


def _first_doc(path: Path) -> dict[str, Any]:
    with path.open() as f:
        line = f.readline()
    try:
        return json.loads(line)["doc"] if line.strip() else {}
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise DataError(f"{path}, line 1: not an lm-eval sample ({err}); {STEP_ONE_FIX}") from err


def step_one_file(path: str | Path, bias: str) -> Path:
    """The samples file of step one for one bias: `path` itself, or the one under a folder."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"option decisions={str(path)!r}: no such file or folder (give step one's --output_path)")
    name = _samples_name(bias)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("samples_*.jsonl") if name.match(p.name))
    found = [p for p in files if _first_doc(p).get(STEP) == DECIDE]
    if len(found) != 1:
        what = "none" if not found else f"{len(found)}: " + ", ".join(map(str, found))
        raise DataError(
            f"option decisions={str(path)!r}: expected one step-one samples file of the task "
            f"{lm_eval_task_name('cognitive_' + bias)} (a run with mode=generate protocol=two_step and --log_samples), "
            f"found {what}; give the folder or file of one step-one run"
        )
    return found[0]


def read_step_one(path: Path) -> dict[str, tuple[dict[str, Any], tuple[str, str]]]:
    """{test id: (its logged step-one document, (control, treatment) free answers)}; the file is
    checked against what step one said it wrote (`samples_check.check_samples`: each doc_id once,
    and the count and doc_ids of the results file beside it)."""
    out, logged = {}, []
    with path.open() as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
                doc, answers = sample["doc"], sample["filtered_resps"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise DataError(f"{path}, line {number}: not an lm-eval sample ({err}); {STEP_ONE_FIX}") from err
            if doc.get(STEP) != DECIDE or len(answers) != 2 or not all(isinstance(a, str) for a in answers):
                raise DataError(f"{path}, line {number}: not a step-one sample (two free answers); {STEP_ONE_FIX}")
            out[doc["id"]] = (doc, (answers[0], answers[1]))
            logged.append(LoggedDoc.of(number, sample))
    try:
        check_samples(path, logged)
    except ValueError as err:
        raise DataError(f"option decisions (step one of the two-step protocol): {err}") from None
    return out


def with_decisions(docs: list[dict[str, Any]], decisions: str, prompts: str) -> list[dict[str, Any]]:
    """Step two's documents: each test with its two free answers from step one.

    A test without one (step one ran with --limit, or on other data) is left out, with a warning:
    run step two with step one's --limit. A test whose options step one offered in another order,
    or asked with other prompts, is an error."""
    source = step_one_file(decisions, docs[0]["bias"])
    logged = read_step_one(source)
    out = []
    for doc in docs:
        if doc["id"] not in logged:
            continue
        step_doc, (control, treatment) = logged[doc["id"]]
        for key, now in (("reversed", doc["reversed"]), ("prompts", prompts)):
            if step_doc.get(key) != now:
                raise DataError(
                    f"{source}: test {doc['id']} was asked in step one with {key}={step_doc.get(key)!r}, step two has "
                    f"{key}={now!r}; run step two with step one's options"
                )
        out.append(
            {**doc, STEP: EXTRACT, "prompts": prompts, "decision_control": control, "decision_treatment": treatment}
        )
    if not out:
        raise DataError(f"{source}: no free answer for any of the {len(docs)} tests of this task")
    if len(out) < len(docs):
        log.warning(
            "biasmonkey: %s holds free answers for %d of the %d tests (step one ran with --limit?); step two "
            "extracts those only",
            source,
            len(out),
            len(docs),
        )
    return out


def lm_eval_docs(
    docs: list[dict[str, Any]], step: str | None, prompts: str, decisions: str | None
) -> list[dict[str, Any]]:
    """The lm-eval documents at a step of the two-step protocol (`step` None: unchanged)."""
    if step == DECIDE:
        return [{**doc, STEP: DECIDE, "prompts": prompts} for doc in docs]
    if step == EXTRACT:
        assert decisions is not None
        return with_decisions(docs, decisions, prompts)
    return docs
