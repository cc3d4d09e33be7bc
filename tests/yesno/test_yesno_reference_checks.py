"""The authors' released results (`yesno/reference/summary_jsons/`: not pinned upstream files, so
checked as they are read, `tasks/yesno/baselines.py`): a damaged copy is one DataError naming the
file, the entry and the fix, raised through the report's own calls (the yes-no and answer-position
tables), never a traceback or a table built from it. Each case damages a copy of the real files."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_yesno_report import model_saying_yes

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.tasks.answer_position import report as ap_report
from biasmonkey.tasks.answer_position.family import task_name
from biasmonkey.tasks.answer_position.scoring import score_item
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.yesno import report as yn_report
from biasmonkey.tasks.yesno.baselines import RESTORE

pytestmark = pytest.mark.requires("shared_data")

Damage = Callable[[bytes], bytes]
FIRST = ("abstract_algebra", "Qwen1.5-7B")  # the first entry of zeroshot_qwen_mmlu.json


def edited(change: Callable[[dict[str, Any]], None]) -> Damage:
    """A damage that parses the JSON, applies `change` and writes it back (NaN as JSON's NaN)."""

    def damage(raw: bytes) -> bytes:
        found = json.loads(raw)
        change(found)
        return json.dumps(found, indent=2).encode()

    return damage


def cut(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


def setter(domain: str, model: str, value: Any, *keys: str) -> Damage:
    def change(found: dict[str, Any]) -> None:
        entry = found[domain][model]
        for key in keys[:-1]:
            entry = entry[key]
        if value is KeyError:
            del entry[keys[-1]]
        else:
            entry[keys[-1]] = value

    return edited(change)


def damaged_copy(data_dir: Path, root: Path, name: str, damage: Damage | str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the reference folder under `root` (made BIASMONKEY_DATA_DIR) with the summary file
    `name` damaged, or replaced by the file `damage` names (another set's results under this name)."""
    shutil.copytree(data_dir / "yesno" / "reference", root / "yesno" / "reference")
    folder = root / "yesno" / "reference" / "summary_jsons"
    path = folder / name
    path.write_bytes((folder / damage).read_bytes() if isinstance(damage, str) else damage(path.read_bytes()))
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(root))
    return path


def assert_named(path: Path, message: str, read: Callable[[], object]) -> None:
    """`read` stops with a DataError naming the damaged file, then `message`, then the fix."""
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}: (.*)?{message}.*{re.escape(RESTORE)}$"):
        read()


def mmlu_model() -> ModelResults:
    """A model with zero-shot anatomy records: the report adds the authors' zero-shot MMLU rows."""
    model = ModelResults(name="m1", model="org/m1")
    model.records["answer_position"][f"biasmonkey_{task_name('anatomy', 'zeroshot')}"] = [
        score_item({"id": f"mmlu-anatomy-{row}", "domain": "anatomy", "gold": gold}, [-0.1, -0.2] + [-5.0] * 6)
        for row, gold in enumerate("ABCD", start=1)
    ]
    return model


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (cut, r"not a JSON file \(Expecting"),  # a file cut short
        (setter(*FIRST, KeyError, "plain_acc"), "entry abstract_algebra/Qwen1.5-7B: plain_acc is missing"),
        (setter(*FIRST, "0.16", "plain_acc"), 'entry abstract_algebra/Qwen1.5-7B: plain_acc is "0.16", not a finite'),
        # once silent: the mean over 56 subjects, shown as over 57
        (setter(*FIRST, None, "plain_acc"), "entry abstract_algebra/Qwen1.5-7B: plain_acc is null, not a finite"),
        (setter(*FIRST, float("nan"), "kfold_recalls", "C"), "abstract_algebra/Qwen1.5-7B: kfold_recalls.C is NaN"),
        (setter(*FIRST, True, "plain_rstd"), "abstract_algebra/Qwen1.5-7B: plain_rstd is true, not a finite"),
        ("zeroshot_qwen_arith.json", r"its subjects are not the 57 MMLU subjects \(missing \['abstract_algebra'"),
        (edited(lambda found: found.pop("virology")), r"not the 57 MMLU subjects \(missing \['virology'\]"),
    ],
)
def test_a_damaged_mmlu_file_is_named_with_its_entry_and_the_fix(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Damage | str, message: str
) -> None:
    path = damaged_copy(data_dir, tmp_path, "zeroshot_qwen_mmlu.json", damage, monkeypatch)
    assert_named(path, message, lambda: ap_report.tables([mmlu_model()]))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("zeroshot_qwen_arith.json", r"no entry 'comps' \(its entries: arith\); it is another set's results"),
        (cut, "not a JSON file"),
        (setter("comps", "Qwen1.5-32B", None, "kfold_bias"), "entry comps/Qwen1.5-32B: kfold_bias is null"),
        (setter("comps", "Qwen1.5-7B", KeyError, "plain_bias"), "entry comps/Qwen1.5-7B: plain_bias is missing"),
        (lambda raw: b"[" + raw + b"]", "expected {domain: {model: {name: number}}}"),
    ],
)
def test_a_damaged_yesno_file_is_named_with_its_entry_and_the_fix(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Damage | str, message: str
) -> None:
    path = damaged_copy(data_dir, tmp_path, "zeroshot_qwen_comps.json", damage, monkeypatch)
    assert_named(path, message, lambda: yn_report.tables([model_saying_yes()]))


def test_the_undamaged_copy_gives_the_tables(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    damaged_copy(data_dir, tmp_path, "zeroshot_qwen_mmlu.json", lambda raw: raw, monkeypatch)
    table = ap_report.tables([mmlu_model()])["answer_position"]
    assert (table["source"] == ap_report.AUTHORS).sum() == 16
    authors = ap_report.baseline_table("zeroshot").set_index("model")
    assert len(authors) == 16 and (authors["subjects"] == 57).all()
    assert authors.loc["Qwen1.5-7B", "accuracy"] == pytest.approx(0.51982, abs=5e-6)  # their summary: 0.5198
    assert len(yn_report.tables([model_saying_yes()])["yesno_authors"]) == 16


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("zeroshot_qwen_comps.json", "biasmonkey_yesno_comps"),
        ("zeroshot_qwen_mmlu.json", "biasmonkey_answer_position_anatomy"),
    ],
)
def test_run_stops_on_a_damaged_file_before_the_model_runs(
    data_dir: Path,
    tiny_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    name: str,
    task: str,
) -> None:
    """The report reads these after the model's run: `biasmonkey run` reads them first, so a damaged
    copy costs no model time (it used to stop the report, after the run)."""
    from biasmonkey.harness_ext.app.cli import main

    path = damaged_copy(data_dir, tmp_path / "data", name, cut, monkeypatch)
    for upstream in (data_dir / "yesno").glob("*.zip"):  # the questions themselves, undamaged
        (tmp_path / "data" / "yesno" / upstream.name).symlink_to(upstream)
    out = tmp_path / "out"
    code = main(["run", "--model", str(tiny_model), "--tasks", task, "--limit", "1", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and f"{path}: not a JSON file" in err and RESTORE in err, err
    assert not list(out.rglob("results_*.json")) and not list(out.rglob("samples_*.jsonl"))  # no model run
