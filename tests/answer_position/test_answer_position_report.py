"""The answer-position report hooks on hand-built records: the run's k and seed, the authors' means over
each model's own subjects, one prompt type per headline panel, n/a numbers with their reasons, a
chat-template run said as such.

Every model here answers A: the letter A gets log-sum-exp(-0.1, -0.2), the others log-sum-exp(-5, -5).
With every letter gold, the recalls are (1, 0, 0, 0) and RStd = √(((3/4)² + 3·(1/4)²)/4) = √0.1875 = 0.433."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from biasmonkey.harness_ext.app.report.inputs import ModelResults
from biasmonkey.tasks.answer_position import baselines, report
from biasmonkey.tasks.answer_position.family import task_name
from biasmonkey.tasks.answer_position.options import AnswerPositionOptions
from biasmonkey.tasks.answer_position.scoring import score_item

ALWAYS_A = [-0.1, -0.2] + [-5.0] * 6
RSTD_ALWAYS_A = math.sqrt(0.1875)


def model(
    name: str,
    subjects: Sequence[str],
    prompt: str = "zeroshot",
    golds: str = "ABCD",
    options: AnswerPositionOptions | None = None,
    settings: tuple[tuple[str, str], ...] = (),
) -> ModelResults:
    """A report entry whose run answered A to one question per gold letter in `golds`, per subject."""
    m = ModelResults(name=name, model=f"org/{name}")
    for subject in subjects:
        task = f"biasmonkey_{task_name(subject, prompt)}"
        m.records["answer_position"][task] = [
            score_item({"id": f"mmlu-{subject}-{row}", "domain": subject, "gold": gold}, ALWAYS_A)
            for row, gold in enumerate(golds, start=1)
        ]
        m.sources[task] = SimpleNamespace(options=options or AnswerPositionOptions(), settings=settings)
    return m


def verdict(m: ModelResults, tables: dict[str, pd.DataFrame]) -> str:
    return report.summary_sentence({"model": m.name, **report.summary(m, tables)}, tables)


@pytest.fixture
def authors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The authors' results, one model "a": RStd 0.1 on anatomy, 0.3 on virology (other numbers 0.5)."""
    frame = pd.DataFrame(
        [
            {"family": "f", "model": "a", "subject": s, "accuracy": 0.5, "accuracy_specific": 0.5, "rstd": r,
             "rstd_specific": 0.5}
            for s, r in (("anatomy", 0.1), ("virology", 0.3))
        ]
    )  # fmt: skip
    monkeypatch.setattr(baselines, "available", lambda root=None: True)
    monkeypatch.setattr(baselines, "subject_results", lambda prompt, root=None: frame)


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(baselines, "available", lambda root=None: False)


def test_the_runs_k_and_seed_are_used_and_said(alone: None) -> None:
    """Two questions per gold letter: k = 5 (the default) needs 4 per letter, k = 3 needs 2. With k = 3
    every question has the same log-probabilities, so each letter minus its calibration mean is 0:
    a four-way tie, each letter 1/4 of every answer, recalls (1/4, 1/4, 1/4, 1/4), RStd 0, accuracy 1/4."""
    m = model("m1", ["anatomy"], golds="AABBCCDD", options=AnswerPositionOptions(k=3, seed=5))
    tables = report.tables([m])
    (row,) = tables["answer_position"].to_dict("records")
    assert row["rstd"] == pytest.approx(RSTD_ALWAYS_A)
    assert row["rstd_specific"] == 0.0 and row["accuracy_specific"] == 0.25  # was n/a: summarized with k = 5
    assert (row["k"], row["seed"], row["questions"]) == (3, 5, 8)
    assert verdict(m, tables) == (
        "Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): 0.433, 0.000 after the Specific "
        "correction (this run: 8 questions in 1 subject; Specific with 3 folds, seed 5 where the authors used "
        "5 folds, seed 42)."
    )
    text = report.section(tables, Path("unused")).blocks[0]
    assert "balanced across correct letters (3 folds, seed 5; the authors': 5 folds, seed 42)" in text
    default = report.section(report.tables([model("m2", ["anatomy"])]), Path("unused")).blocks[0]
    assert "balanced across correct letters (5 folds, seed 42) is subtracted" in default


def test_the_authors_are_averaged_over_each_models_own_subjects(authors: None) -> None:
    """m0 ran anatomy and virology, m1 anatomy: the author's RStd beside m0 is (0.1 + 0.3) / 2 = 0.2 over
    2 subjects (once: 0.1, over the 1 subject both ran), beside m1 0.1 over 1."""
    m0, m1 = model("m0", ["anatomy", "virology"]), model("m1", ["anatomy"])
    tables = report.tables([m0, m1])
    table = tables["answer_position"]
    theirs = table[table["source"] == report.AUTHORS].set_index("subject_set")
    assert theirs.loc["m0", "rstd"] == pytest.approx(0.2) and theirs.loc["m0", "subjects"] == 2
    assert theirs.loc["m1", "rstd"] == pytest.approx(0.1) and theirs.loc["m1", "subjects"] == 1
    assert verdict(m0, tables).endswith(
        "(this run: 8 questions in 2 subjects); the authors' 1 model on the same 2 subjects, all their questions: "
        "0.200 to 0.200 (1 below it)."
    )
    assert verdict(m1, tables).endswith("on the same 1 subject, all their questions: 0.100 to 0.100 (1 below it).")
    # a model with the same subjects as m0 shares its block
    assert report.tables([m0, model("m2", ["virology", "anatomy"])])["answer_position"]["subject_set"].tolist() == [
        "m0",
        "m0",
        "m0",
    ]


def test_the_headline_holds_one_prompt_type_and_says_its_basis(authors: None) -> None:
    """m0 zero-shot and m1 few-shot: the panel is zero-shot, m0 and the author's zero-shot row; m1 is named
    as not shown."""
    tables = report.tables([model("m0", ["anatomy"]), model("m1", ["anatomy"], prompt="fewshot")])
    panel = report.headline(tables)
    assert list(panel.values.index) == ["m0", "a (authors)"] and panel.references == 1
    assert panel.values.loc["a (authors)"].tolist() == [0.1, 0.5]
    assert panel.title == (
        "Answer position on MMLU (Bhatt & Ivanova (2025)): RStd of the four letter recalls, zeroshot, 1 subject "
        "(this run: 4 questions; the authors': every question of them); not shown (another prompt type or other subjects): m1 "
        "(0 = none; at most 0.433)"
    )


def test_an_undefined_rstd_is_na_with_its_reason(alone: None) -> None:
    """Gold letters B and C only, on three subjects: no recall of A or D, RStd n/a; too few questions per
    letter for the k − 1 = 4 balanced folds, Specific n/a. Each is a warning per task; the verdict gives
    two subjects' reasons and counts the third."""
    m = model("m1", ["anatomy", "astronomy", "virology"], golds="BC")
    tables = report.tables([m])
    warns = pd.DataFrame(report.warnings([m], tables))
    assert warns["warning"].tolist() == ["RStd n/a", "Specific n/a"] * 3
    assert warns["detail"].iloc[0] == "no question has the gold letter A, D (RStd needs every letter's recall)"
    too_few = (
        "too few questions per gold letter (A 0, B 1, C 1, D 0) for k − 1 = 4 balanced folds, which need at "
        "least 4 of each"
    )
    assert warns["detail"].iloc[1] == too_few
    no_ad = "no question has the gold letter A, D (RStd needs every letter's recall)"
    assert verdict(m, tables) == (
        f"Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): n/a (anatomy: {no_ad}; astronomy: "
        f"{no_ad}; 1 more subject in the warnings), n/a after the Specific correction (anatomy: {too_few}; "
        f"astronomy: {too_few}; 1 more subject in the warnings) (this run: 6 questions in 3 subjects)."
    )
    summary = pd.DataFrame([report.summary(m, tables), {}])  # the second model ran no answer-position task
    assert report.summary_display(summary) == {"MMLU RStd base → specific": ["n/a → n/a", "–"]}


def test_a_chat_template_run_is_said_beside_the_authors_raw_prompts(authors: None) -> None:
    m = model("m1", ["anatomy"], settings=(("apply_chat_template", "true"),))
    tables = report.tables([m])
    chat = "a chat template where the authors used the raw prompt"
    assert verdict(m, tables) == (
        "Answer-position bias on MMLU (RStd of the letter recalls, 0 = none): 0.433, n/a after the Specific "
        "correction (anatomy: too few questions per gold letter (A 1, B 1, C 1, D 1) for k − 1 = 4 balanced folds, "
        f"which need at least 4 of each) (this run: 4 questions in 1 subject; {chat}); the authors' 1 model on the "
        "same 1 subject, all their questions: 0.100 to 0.100 (1 below it)."
    )
    panel = report.headline(tables)
    assert list(panel.values.index) == ["m1 (chat template)", "a (authors)"]
    assert f"; m1: {chat} (0 = none" in panel.title
    blocks = report.section(tables, Path("unused")).blocks
    assert blocks[1] == f"Not as the authors ran it (their numbers beside these differ in it): m1: {chat}."
    raw = report.section(report.tables([model("m2", ["anatomy"])]), Path("unused")).blocks
    assert len(raw) == 2  # the text and the table: nothing to say
