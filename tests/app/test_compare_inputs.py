"""What `biasmonkey compare` accepts as its pairs and settings, on hand-made runs (no records read):
a family's prompt settings count only for the tasks of that family both runs have, `--pairs` takes
run labels whose settings hold commas, and a run may be in one pair of `--pairs` only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.compare import CompareRun, check_settings, pair_info, run_pairs
from biasmonkey.harness_ext.logs import Run

YESNO = "biasmonkey_yesno_comps"
ANCHORING = "biasmonkey_cognitive_anchoring"
ALGEBRA = "biasmonkey_answer_position_abstract_algebra"
LIMIT = (("dtype", "float32"), ("limit", "2"))


def run(model: str, tasks: list[str], settings: tuple[tuple[str, str], ...] = LIMIT) -> CompareRun:
    """A run of `model` with `settings` holding `tasks` (their records are never read here)."""
    return CompareRun(Run(model, settings).label, Run(model, settings), Path(model), dict.fromkeys(tasks), {})


SEEDED = (("dtype", "float32"), ("limit", "2"), ("seed", "7"))  # e.g. yes-no's --seed 7: its Specific folds


def test_a_family_prompt_setting_counts_only_on_that_familys_common_tasks() -> None:
    # yes-no's `seed` draws its Specific folds, not its prompts: it was refused as cognitive's prompt `seed`
    a, b = run("tiny", [YESNO]), run("tiny", [YESNO], SEEDED)
    check_settings([(a, b)], allow=False)
    assert pair_info(a, b)["differing_settings"] == "seed (unset vs 7)"  # named all the same
    # a cognitive task in both runs: `seed` orders its options, a prompt change, refused
    c, d = run("tiny", [YESNO, ANCHORING]), run("tiny", [YESNO, ANCHORING], SEEDED)
    with pytest.raises(ValueError, match=r"differ in settings that change the prompts: seed \(unset vs 7\)"):
        check_settings([(c, d)], allow=False)
    check_settings([(c, d)], allow=True)
    # a cognitive task in one run only: not compared, so its `seed` changes none of the compared prompts
    check_settings([(run("tiny", [YESNO, ANCHORING]), run("tiny", [YESNO], SEEDED))], allow=False)
    # no task in common: no prompt is compared, so none differs (not even the harness's chat template)
    chat = (("apply_chat_template", "true"), *SEEDED)
    check_settings([(run("tiny", [ALGEBRA]), run("tiny", [YESNO, ANCHORING], chat))], allow=False)
    # the harness's settings still count on any common task
    with pytest.raises(ValueError, match=r"apply_chat_template \(unset vs true\)"):
        check_settings([(run("tiny", [YESNO]), run("tiny", [YESNO], chat))], allow=False)


def test_pairs_of_run_labels_with_commas() -> None:
    runs = [run(f"tiny{i}", [YESNO]) for i in range(4)]
    labels = [r.label for r in runs]
    assert labels[0] == "tiny0 (dtype=float32, limit=2)"
    # it was "write each pair as A:B": the label was cut at its comma
    chosen = run_pairs(runs, None, f"{labels[0]}:{labels[1]},{labels[2]}:tiny3")
    assert [(a.label, b.label) for a, b in chosen] == [(labels[0], labels[1]), (labels[2], labels[3])]
    # a model name still works
    assert run_pairs(runs, None, "tiny1:tiny2")[0] == (runs[1], runs[2])
    with pytest.raises(ValueError, match="A and B each a run's label, model name or path"):
        run_pairs(runs, None, f"{labels[0]},{labels[1]}")


def test_a_run_in_two_pairs_is_refused() -> None:
    # tiny0:tiny1 and tiny0:tiny2 share tiny0: its noise moves both units alike, so they are not independent
    runs = [run(f"tiny{i}", [YESNO]) for i in range(3)]
    l0, l1, l2 = (r.label for r in runs)
    with pytest.raises(ValueError, match="is in two pairs") as err:
        run_pairs(runs, None, "tiny0:tiny1,tiny0:tiny2")
    assert str(err.value).startswith(f"--pairs: the run {l0} is in two pairs ({l0}:{l1} and {l0}:{l2})")
    with pytest.raises(
        ValueError, match=re.escape(f"the run {l1} is in two pairs")
    ):  # as B of one pair and A of another
        run_pairs(runs, None, "tiny0:tiny1,tiny1:tiny2")
    assert len(run_pairs([*runs, run("tiny3", [YESNO])], None, "tiny0:tiny1,tiny2:tiny3")) == 2
