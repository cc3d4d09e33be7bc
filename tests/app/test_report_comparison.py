"""The report's comparison section on hand-made runs (numbers by hand in the comments), and the
answer-position overall row of `biasmonkey compare` on a small worked case. The same section on real
lm-eval folders of two tiny models is in test_compare.py (it shares that module's runs)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from records import pair

from biasmonkey.harness_ext.app import report
from biasmonkey.harness_ext.app.compare import CompareRun, item_rows
from biasmonkey.harness_ext.app.report.comparison import comparison
from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.harness_ext.logs import Run, TaskOutput
from biasmonkey.tasks.answer_position.compare import overall_measures
from biasmonkey.tasks.answer_position.family import FAMILY as AP
from biasmonkey.tasks.answer_position.scoring import McqRecord
from biasmonkey.tasks.response_bias.family import FAMILY as RB

TASK = "biasmonkey_acquiescence"


def entry(name: str, deltas: list[float], settings: tuple = (("limit", "3"),)) -> ModelResults:
    """A report entry: acquiescence Δ on keys K0, K1, … from an Inspect log (no file read)."""
    m = ModelResults(name=name, model=f"/models/{name}")
    out = TaskOutput("acquiescence", RB, "inspect", Path(f"/logs/{name}.eval"), "1", m.model, settings=settings)
    m.sources[TASK] = out
    m.records["response_bias"][TASK] = [pair(f"K{i}", "bias", d) for i, d in enumerate(deltas)]
    return m


# A: Δ 10, 20, 30; B: 12, 25, 29 → B − A = 2, 5, −1: mean 2, SD 3 (ddof 1), stderr √3, t = 2/√3 = 1.1547,
# df 2: p = 1 − t/√(2 + t²) = 1 − 1.1547/1.8257 = 0.36754 (the t distribution with 2 df in closed form);
# 95% CI 2 ± 4.30265·√3 = [−5.4524, 9.4524]; d_z = 2/3. One test: Holm leaves p as it is.
def test_two_runs_by_hand(tmp_path: Path) -> None:
    models = [entry("a", [10, 20, 30]), entry("b", [12, 25, 29])]
    result, runs, _ = comparison(models)
    assert runs.to_dict("records") == [
        {"run": "a (limit=3)", "role": "baseline", "reason": ""},
        {"run": "b (limit=3)", "role": "compared", "reason": ""},
    ]
    (row,) = [r for r in result.rows if r["measure"] == "delta"]
    assert (row["a"], row["b"], row["n"]) == ("a (limit=3)", "b (limit=3)", 3)
    assert (row["value_a"], row["value_b"], row["difference"]) == (20, pytest.approx(22), pytest.approx(2))
    assert row["p"] == pytest.approx(1 - (2 / math.sqrt(3)) / math.sqrt(2 + 4 / 3), rel=1e-9)
    assert row["p_adjusted"] == pytest.approx(row["p"])
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(-5.4524, abs=1e-4), pytest.approx(9.4524, abs=1e-4))
    assert row["d_z"] == pytest.approx(2 / 3)
    # the report: the section, its tables (CSV, JSON, markdown) and the forest plot beside the figures
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "discover", lambda paths, names=None, left_out=None: models)
        mp.setattr(report, "write_leaderboard", lambda *args, **kwargs: [])
        md = report.write_report(["x"], tmp_path, baselines=False, topics=False).read_text()
    section = md[md.index("## Comparison of runs") :]
    assert "Each run compared with the baseline, **a (limit=3)** (the first run in the report's order" in section
    assert "p adjusted by Holm over the 1 tests of this comparison" in section
    assert "These p-values form their own Holm family, apart from the report's" in section
    assert "| response_bias | biasmonkey_acquiescence | delta | 3 | 20.000 | 22.000 | 2.000 | [-5.452, 9.452] |" in md
    assert "(comparison_forest.png)" not in md and "figures/comparison_forest.png" in md
    assert (tmp_path / "figures" / "comparison_forest.svg").is_file()
    (saved,) = [r for r in json.loads((tmp_path / "tables" / "comparison.json").read_text()) if r["task"] == TASK]
    assert saved["difference"] == pytest.approx(2) and saved["p_adjusted"] == pytest.approx(row["p"])
    assert (tmp_path / "tables" / "comparison.csv").is_file()
    assert (tmp_path / "tables" / "comparison.md").read_text().startswith("# Paired comparison")
    # --baseline picks the other run: the signs turn
    result, runs, _ = comparison(models, baseline="b")
    assert runs["run"].iloc[0] == "b (limit=3)"
    assert [r["difference"] for r in result.rows if r["measure"] == "delta"] == [pytest.approx(-2)]


def test_one_run_has_no_section_and_other_settings_are_left_out(tmp_path: Path) -> None:
    assert comparison([entry("a", [10, 20, 30])]) == (None, None, [])
    chat = (("apply_chat_template", "true"), ("limit", "3"))
    models = [entry("a", [10, 20, 30]), entry("b", [12, 25, 29], chat), entry("c", [11, 21, 31])]
    result, runs, _ = comparison(models)
    assert runs.to_dict("records")[1] == {
        "run": "b (apply_chat_template=true, limit=3)",
        "role": "left out",
        "reason": "differs from the baseline in settings that change the prompts: apply_chat_template (unset vs true)",
    }
    assert [p["b"] for p in result.pairs] == ["c (limit=3)"]  # b never paired
    # only the baseline and a left-out run: the section says so, nothing is compared
    result, runs, _ = comparison(models[:2])
    assert result is None and list(runs["role"]) == ["baseline", "left out"]
    with pytest.raises(ValueError, match="--baseline zeta: no run of that name"):
        comparison(models, baseline="zeta")


def test_another_familys_prompt_setting_does_not_leave_a_run_out() -> None:
    """`seed` changes the cognitive prompts (and moves yes-no Specific folds), not the response-bias
    ones: two acquiescence runs that differ in it are compared, the setting named, not left out."""
    seeded = (("limit", "3"), ("seed", "7"))
    result, runs, _ = comparison([entry("a", [10, 20, 30]), entry("b", [12, 25, 29], seeded)])
    assert list(runs["role"]) == ["baseline", "compared"]
    (row,) = [r for r in result.rows if r["measure"] == "delta"]
    assert row["difference"] == pytest.approx(2)  # B − A = 2, 5, −1 (as in test_two_runs_by_hand)
    assert result.pairs[0]["differing_settings"] == "seed (unset vs 7)"


def mcq(subject: str, answers: str) -> list[McqRecord]:
    """Four questions of a subject, gold A, B, C, D, answered with the given letters."""
    return [
        McqRecord(f"mmlu-{subject}-{i}", subject, gold, (), tuple(0.0 if x == a else -5.0 for x in "ABCD"))
        for i, (gold, a) in enumerate(zip("ABCD", answers))
    ]


def ap_run(name: str, answers: dict[str, str]) -> CompareRun:
    records = {f"biasmonkey_answer_position_{s}": mcq(s, a) for s, a in answers.items()}
    return CompareRun(name, Run(name), Path(name), dict.fromkeys(records), records)


# Two subjects of four questions, one per gold letter. RStd = population SD of the four letter recalls.
# A: algebra always "A" → recalls 1,0,0,0 → RStd √(1/4 − 1/16) = 0.43301; anatomy all right → 0. Mean 0.21651.
# B: algebra right but C answered D → 1,1,0,1 → 0.43301; anatomy right but D answered A → 1,1,1,0 → 0.43301.
# Mean 0.43301; B − A = 0.21651. Accuracy: A 5/8, B 6/8, B − A = 1/8. Discordant: A wrong, B right:
# algebra B, D (2); A right, B wrong: anatomy D (1) → exact McNemar p = min(1, 2·P(X ≤ 1 | 3, ½)) = 1.
def test_answer_position_overall_row_by_hand() -> None:
    assert AP.tasks["answer_position_anatomy"]["prompt"] == "zeroshot"
    a = ap_run("A", {"abstract_algebra": "AAAA", "anatomy": "ABCD"})
    b = ap_run("B", {"abstract_algebra": "ABDD", "anatomy": "ABCA"})
    rows, _ = item_rows([(a, b)], common_items=False)
    overall = {r["measure"]: r for r in rows if r["task"] == "all 2 subjects (zeroshot)"}
    assert set(overall) == {"rstd", "accuracy"}  # 4 questions per subject: too few for Specific's folds
    rstd, accuracy = overall["rstd"], overall["accuracy"]
    third = math.sqrt(3) / 4  # 0.43301
    assert (rstd["value_a"], rstd["value_b"]) == (pytest.approx(third / 2), pytest.approx(third))
    assert rstd["difference"] == pytest.approx(third / 2) and rstd["n"] == 8
    assert rstd["test"].startswith("paired bootstrap") and rstd["headline"]
    assert (accuracy["value_a"], accuracy["value_b"]) == (pytest.approx(5 / 8), pytest.approx(6 / 8))
    assert accuracy["test"] == "McNemar exact (binomial)" and accuracy["p"] == pytest.approx(1.0)
    # the subjects' own rows are still there, and one subject alone makes no overall row
    assert {r["task"] for r in rows} >= {
        "biasmonkey_answer_position_abstract_algebra",
        "biasmonkey_answer_position_anatomy",
    }
    one = ap_run("C", {"anatomy": "ABCD"})
    assert overall_measures(one.records, {}) == {}
