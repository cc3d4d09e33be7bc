"""Loading the cognitive-bias tests: our fixtures in the published schema, local CSV/parquet
copies, $BIASMONKEY_DATA_DIR, the (mocked) Hub path, bad input; option order and prompts."""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pytest

from biasmonkey.tasks.cognitive import data
from biasmonkey.tasks.cognitive.data import BIASES, DataError, bias_slug, bias_tests, load_tests, parse_metric_params
from biasmonkey.tasks.cognitive.options import CognitiveOptions
from biasmonkey.tasks.cognitive.prompts import (
    answer_labels,
    answer_prompt,
    authors_reversed,
    extract_option,
    extraction_prompt,
    is_reversed,
    render_test,
    side_text,
)
from biasmonkey.tasks.cognitive.scoring import score_answers

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cognitive" / "tests.csv"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch):
    """No test sees another's parsed data, and none finds a real $BIASMONKEY_DATA_DIR copy."""
    monkeypatch.delenv("BIASMONKEY_DATA_DIR", raising=False)
    data._load_cached.cache_clear()
    yield
    data._load_cached.cache_clear()


def fixture_table() -> pd.DataFrame:
    return pd.read_csv(FIXTURES, dtype=str, keep_default_na=False)


def write_csv(tmp_path: Path, table: pd.DataFrame, name: str = "tests.csv") -> Path:
    path = tmp_path / name
    table.to_csv(path, index=False)
    return path


def test_fixtures_cover_every_bias_with_both_scales_signs_and_offsets() -> None:
    tests = load_tests(FIXTURES)
    assert len(tests) == 60
    assert Counter(t.bias for t in tests) == {slug: 2 for slug in BIASES}
    assert {len(t.control.options) for t in tests} == {7, 11}
    assert {t.k for t in tests} == {1, -1}
    assert any(t.x_1 != 0 for t in tests) and any(t.x_1 != t.x_2 for t in tests)
    assert len({t.id for t in tests}) == 60


def test_first_fixture_row_parses_into_stem_options_and_parameters() -> None:
    first = load_tests(FIXTURES)[0]
    assert (first.bias, first.row, first.source) == ("anchoring", 1, str(FIXTURES))
    assert first.control.options == tuple(f"{10 * i}%" for i in range(11))
    assert first.control.stem.startswith("Situation:\nSuppose you are a marketing manager")
    assert first.control.stem.endswith("\n\nAnswer Options:")
    assert "more than 87%" in first.treatment.stem and "more than 87%" not in first.control.stem
    assert (first.k, first.x_1, first.x_2) == (1, 9.0, 9.0)  # {'k': 1, 'x_1': 9, 'x_2': 9}
    # JSON-serialised parameters parse as well (row 2: {"k": 1, "x_1": 2, "x_2": 2}).
    assert (load_tests(FIXTURES)[1].k, load_tests(FIXTURES)[1].x_1) == (1, 2.0)


def test_unreversed_rendering_is_the_published_text() -> None:
    table = fixture_table()
    for test, (control, treatment) in zip(load_tests(FIXTURES), zip(table["control"], table["treatment"])):
        assert render_test(test.control.stem, test.control.options, False) == control.rstrip()
        assert render_test(test.treatment.stem, test.treatment.options, False) == treatment.rstrip()


def test_ids_are_content_hashes_that_survive_subsets_and_parquet(tmp_path: Path) -> None:
    every = load_tests(FIXTURES)
    subset = load_tests(write_csv(tmp_path, fixture_table().iloc[[7, 3]]))
    assert [t.id for t in subset] == [every[7].id, every[3].id]
    assert [t.row for t in subset] == [1, 2]  # rows count within the file that was read

    parquet = tmp_path / "tests.parquet"
    fixture_table().to_parquet(parquet)
    assert [t.id for t in load_tests(parquet)] == [t.id for t in every]
    assert load_tests(parquet)[5].treatment == every[5].treatment


# The fixture's 60 ids (sha256 of them joined by spaces), as the loader gave them before line ends
# were normalised: an LF file's ids must never change (they seed the option order and pair records).
FIXTURE_IDS_SHA256 = "f0966e1df651c0a3fd27abdbeac9e27572e842904efd86ec157f146beaf5feb4"


def test_line_ends_do_not_change_ids_texts_or_option_order(tmp_path: Path) -> None:
    every = load_tests(FIXTURES)
    ids = [t.id for t in every]
    assert ids[:2] == ["anchoring-e5c57a2ad4dd", "anchoring-490fac70349f"]
    assert hashlib.sha256(" ".join(ids).encode()).hexdigest() == FIXTURE_IDS_SHA256
    for name, line_end in (("crlf.csv", b"\r\n"), ("cr.csv", b"\r")):  # saved on Windows, on an old Mac
        path = tmp_path / name
        path.write_bytes(FIXTURES.read_bytes().replace(b"\n", line_end))
        copy = load_tests(path)
        assert [t.id for t in copy] == ids, path.name
        assert [(t.scenario, t.control, t.treatment) for t in copy] == [
            (t.scenario, t.control, t.treatment) for t in every
        ]
        for seed in (0, 7):  # reversal=hash: a coin per (seed, id)
            assert [is_reversed(seed, t.id) for t in copy] == [is_reversed(seed, t.id) for t in every]


def test_a_duplicated_row_is_run_twice_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The fixture has no two identical tests; a repeated row is run and counted twice, as the
    authors' script runs every row, never silently: a warning names both rows, and each copy has an
    id of its own."""
    assert len({t.id for t in load_tests(FIXTURES)}) == 60
    table = fixture_table().iloc[[1, 0, 2, 0]]
    with caplog.at_level("WARNING"):
        tests = load_tests(write_csv(tmp_path, table))
    assert "tests.csv: rows 2 and 4 are the same test" in caplog.text and "both are run and counted" in caplog.text
    assert [t.id for t in tests][3] == f"{tests[1].id}-row4" and len({t.id for t in tests}) == 4


def test_a_blank_option_is_refused_naming_row_and_column(tmp_path: Path) -> None:
    for blank in ("Option 5: ", "Option 5:"):
        table = fixture_table()
        assert "Option 5: 40%" in table.loc[0, "treatment"]
        table.loc[0, "treatment"] = table.loc[0, "treatment"].replace("Option 5: 40%", blank)
        with pytest.raises(DataError, match=r"tests.csv, row 1, column 'treatment': Option 5 has no text"):
            load_tests(write_csv(tmp_path, table))


def test_control_and_treatment_with_different_option_counts_are_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tests = load_tests(FIXTURES)
    assert all(len(t.control.options) == len(t.treatment.options) for t in tests)  # as every template gives
    table = fixture_table()
    table.loc[0, "treatment"] = table.loc[0, "treatment"].replace("\nOption 11: 100%", "")  # an option line lost
    with pytest.raises(DataError, match=r"tests.csv, row 1: the control has 11 options and the treatment 10"):
        load_tests(write_csv(tmp_path, table))

    # the pinned published dataset is scored as the authors published it, with a warning
    with caplog.at_level("WARNING"):
        (test,) = data.parse_rows(table.iloc[[0]], "tum-nlp/cognitive-biases-in-llms@98fd1fd7728b", published=True)
    assert (
        "row 1: the control has 11 options and the treatment 10" in caplog.text and "scored as published" in caplog.text
    )
    assert (len(test.control.options), len(test.treatment.options)) == (11, 10)


@pytest.mark.parametrize(
    ("spelling", "slug"),
    [
        ("Status Quo Bias", "status_quo_bias"),
        ("Status-Quo Bias", "status_quo_bias"),
        ("in-group bias", "in_group_bias"),
        ("Escalation of Commitment", "escalation_of_commitment"),
        ("self_serving_bias", "self_serving_bias"),
        ("Prejudice", None),
    ],
)
def test_bias_names_match_ignoring_case_spaces_and_hyphens(spelling: str, slug: str | None) -> None:
    assert bias_slug(spelling) == slug


def test_bias_tests_filter_and_reject_unknown_names() -> None:
    assert [t.bias for t in bias_tests("Status Quo Bias", FIXTURES)] == ["status_quo_bias"] * 2
    with pytest.raises(DataError, match="unknown bias 'sunk_cost'"):
        bias_tests("sunk_cost", FIXTURES)


def test_bias_without_tests_is_an_error(tmp_path: Path) -> None:
    path = write_csv(tmp_path, fixture_table().iloc[:2])  # anchoring only
    with pytest.raises(DataError, match=r"tests.csv: no tests for the bias 'Halo Effect'"):
        bias_tests("halo_effect", path)


# ---------------------------------------------------------------------------- bad input


def test_missing_column_names_file_and_column(tmp_path: Path) -> None:
    path = write_csv(tmp_path, fixture_table().drop(columns=["metric_params"]))
    with pytest.raises(DataError, match=r"tests.csv: missing column\(s\) \['metric_params'\]"):
        load_tests(path)


def test_unknown_bias_names_file_and_row(tmp_path: Path) -> None:
    table = fixture_table()
    table.loc[4, "bias"] = "Sunk Cost Fallacy"
    with pytest.raises(DataError, match=r"tests.csv, row 5: unknown bias 'Sunk Cost Fallacy'"):
        load_tests(write_csv(tmp_path, table))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("k=1, x_1=0, x_2=0", "is neither JSON nor a Python dict literal"),
        ("[1, 0, 0]", "must be a dict with k, x_1, x_2"),
        ("{'k': 1, 'x_1': 0}", "lacks x_2"),
        ("{'k': 2, 'x_1': 0, 'x_2': 0}", "k must be 1 or -1"),
        ("{'k': 1, 'x_1': 'left', 'x_2': 0}", "'left' is not a number"),
        ("{'k': 1, 'x_1': float('nan'), 'x_2': 0}", "neither JSON nor a Python dict literal"),
        ('{"k": 1, "x_1": NaN, "x_2": 0}', "must be finite"),
    ],
)
def test_unparsable_metric_params_name_file_and_row(tmp_path: Path, value: str, message: str) -> None:
    table = fixture_table()
    table.loc[2, "metric_params"] = value
    with pytest.raises(DataError, match=rf"tests.csv, row 3: metric_params .*{message}"):
        load_tests(write_csv(tmp_path, table))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"k": 1, "x_1": 25, "x_2": 9}', "x_1 = 25 is outside the 11 control options' zero-based indices 0 to 10"),
        ('{"k": 1, "x_1": 9, "x_2": 11}', "x_2 = 11 is outside the 11 treatment options' zero-based indices 0 to 10"),
        ('{"k": 1, "x_1": -1, "x_2": 9}', "x_1 = -1 is outside the 11 control options' zero-based indices 0 to 10"),
    ],
)
def test_reference_outside_the_options_names_file_row_and_fix(tmp_path: Path, value: str, message: str) -> None:
    table = fixture_table()
    table.loc[0, "metric_params"] = value  # row 1: an 11-option anchoring test (x = 9, see above)
    fix = "x_1 and x_2 are zero-based indices of the control and treatment options \\(0 = Option 1\\): correct"
    with pytest.raises(DataError, match=rf"tests.csv, row 1: metric_params {message}; {fix}"):
        load_tests(write_csv(tmp_path, table))
    table.loc[0, "metric_params"] = '{"k": 1, "x_1": 10, "x_2": 0}'  # both ends of the scale are valid
    first = load_tests(write_csv(tmp_path, table))[0]
    assert (first.x_1, first.x_2) == (10, 0)


def test_every_fixture_reference_is_an_option_index() -> None:
    tests = load_tests(FIXTURES)
    assert len(tests) == 60
    assert all(0 <= t.x_1 <= len(t.control.options) - 1 and 0 <= t.x_2 <= len(t.treatment.options) - 1 for t in tests)


def test_metric_params_accept_dicts_and_one_element_lists() -> None:
    assert parse_metric_params({"k": -1, "x_1": 3, "x_2": [6]}, "here") == (-1, 3.0, 6.0)
    assert parse_metric_params("{'k': [[1]], 'x_1': 0.0, 'x_2': 10}", "here") == (1, 0.0, 10.0)
    with pytest.raises(DataError, match="here: metric_params .*True is not a number"):
        parse_metric_params({"k": 1, "x_1": True, "x_2": 0}, "here")


@pytest.mark.parametrize(
    ("control", "found"),
    [
        ("Situation:\nPick one.\nOption 1: yes\nOption 3: no", r"\[1, 3\]"),  # a gap in the numbering
        ("Situation:\nPick one.\nOption 1: yes", r"\[1\]"),  # a single option
        ("Situation:\nPick one.\nOption 1: yes\nOption 2: no\nThanks!", "none"),  # options not at the end
        ("Option 1: yes\nOption 2: no", None),  # no text before the options
    ],
)
def test_option_list_that_does_not_parse_names_row_and_column(tmp_path: Path, control: str, found: str | None) -> None:
    table = fixture_table()
    table.loc[9, "control"] = control
    message = (
        rf"the option list does not parse \(found option numbers {found}"
        if found
        else "the prompt has options but no text before them"
    )
    with pytest.raises(DataError, match=rf"tests.csv, row 10, column 'control': {message}"):
        load_tests(write_csv(tmp_path, table))


def test_empty_and_unreadable_files(tmp_path: Path) -> None:
    empty = write_csv(tmp_path, fixture_table().iloc[:0])
    with pytest.raises(DataError, match="tests.csv: no rows"):
        load_tests(empty)
    with pytest.raises(DataError, match=r"unsupported file type '\.json'"):
        load_tests(write_csv(tmp_path, fixture_table(), name="tests.json"))
    with pytest.raises(DataError, match="nothing.csv does not exist"):
        load_tests(tmp_path / "nothing.csv")


# ---------------------------------------------------------------------------- where the data comes from


def test_data_dir_copy_is_used_when_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cognitive").mkdir()
    write_csv(tmp_path / "cognitive", fixture_table().iloc[:4], name="cognitive-biases-in-llms.csv")
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("the Hub must not be asked"))
    assert len(load_tests()) == 4
    # An explicit file wins over the data dir.
    assert len(load_tests(FIXTURES)) == 60


def test_hub_is_loaded_at_the_pinned_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    # $BIASMONKEY_DATA_DIR without the test file (like the shared data folder): go to the Hub.
    (tmp_path / "cognitive").mkdir()
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    calls = []

    def fake_load_dataset(path, **kwargs):
        calls.append((path, kwargs))
        return datasets.DatasetDict({"train": datasets.Dataset.from_pandas(fixture_table().iloc[:6])})

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    with caplog.at_level(logging.INFO, logger="biasmonkey.tasks.cognitive.data"):
        tests = load_tests()
    assert calls == [("tum-nlp/cognitive-biases-in-llms", {"revision": data.HUB_REVISION})]
    assert len(data.HUB_REVISION) == 40
    assert "loading the tests from the Hugging Face Hub" in caplog.text
    assert [t.id for t in tests] == [t.id for t in load_tests(FIXTURES)[:6]]  # same content, same ids
    assert tests[0].source == f"tum-nlp/cognitive-biases-in-llms@{data.HUB_REVISION[:12]}"
    load_tests()  # parsed once per process and revision
    assert len(calls) == 1
    load_tests(revision="abc123")
    assert calls[-1] == ("tum-nlp/cognitive-biases-in-llms", {"revision": "abc123"})


def test_hub_errors_explain_how_to_work_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(path, **kwargs):
        raise ConnectionError("Couldn't reach the Hub (offline mode is enabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(
        DataError, match=r"could not load tum-nlp/cognitive-biases-in-llms@[0-9a-f]{40} .*offline mode.*data_path="
    ):
        load_tests()


def test_hub_with_several_splits_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    part = datasets.Dataset.from_pandas(fixture_table().iloc[:2])
    monkeypatch.setattr(datasets, "load_dataset", lambda path, **k: datasets.DatasetDict({"train": part, "test": part}))
    with pytest.raises(DataError, match=r"expected one split, found \['train', 'test'\]"):
        load_tests()


# ---------------------------------------------------------------------------- options and prompts


def test_options_validate_and_ignore_foreign_keys(caplog) -> None:
    opts = CognitiveOptions.from_mapping({"mode": "generate", "seed": 7, "pretrained": "/models/x", "dtype": "float32"})
    assert (opts.mode, opts.seed, opts.reverse_options, opts.data_path) == ("generate", 7, True, None)
    with caplog.at_level(logging.WARNING):
        CognitiveOptions.from_mapping({"reverse_option": False})
    assert "did you mean 'reverse_options'" in caplog.text
    for bad, message in [
        ({"mode": "sample"}, "mode='sample' is invalid for the cognitive-bias tasks"),
        ({"reverse_options": "yes"}, "reverse_options='yes' must be true or false"),
        ({"seed": 1.5}, "seed=1.5 must be an integer"),
        ({"data_path": ""}, "data_path='' must be a non-empty string"),
        ({"reversal": "coin"}, "reversal='coin' is invalid; use one of authors, hash"),
        ({"metric_params": "old"}, "metric_params='old' is invalid; use one of corrected, published"),
    ]:
        with pytest.raises(ValueError, match=message):
            CognitiveOptions.from_mapping(bad)


def test_reversal_is_a_seeded_coin_per_test_id() -> None:
    ids = [f"test-{i}" for i in range(2000)]
    draws = [is_reversed(i, 42) for i in ids]
    assert 900 < sum(draws) < 1100  # about half
    assert draws == [is_reversed(i, 42) for i in ids]  # the same every time
    assert draws != [is_reversed(i, 43) for i in ids]  # and another seed draws anew


def authors_decision_run(table: pd.DataFrame, n_batches: int, max_retries: int = 1) -> dict[int, bool]:
    """Which rows (from 1) the authors' decision run reverses, simulated step by step: their
    run/test_decision.py splits the table into n_batches consecutive batches; per batch, for each
    bias in order of appearance, decide_all(tests, seed=42, max_retries) decides its tests in order
    (each at the first attempt), adding max_retries to the seed after each; a test's options are
    reversed when random.Random(seed).random() < 0.5."""
    reversed_rows = {}
    for batch in np.array_split(np.arange(len(table)), n_batches):
        biases = table["bias"].to_numpy()[batch]
        for bias in dict.fromkeys(biases):
            seed = 42
            for row in batch[biases == bias]:
                reversed_rows[int(row) + 1] = random.Random(seed).random() < 0.5
                seed += max_retries
    return reversed_rows


def test_default_reversal_is_the_authors_rule(tmp_path: Path) -> None:
    # In every batch of 10 the seeds 42 … 51: 43, 44, 45, 47, 49, 50, 51 reverse (7 of 10); the
    # script before 2024-10-07 (max_retries=5) used 42, 47, …, 87: 6 of 10.
    assert authors_reversed(range(1, 11)) == [False, True, True, True, False, True, False, True, True, True]
    assert authors_reversed(range(1, 11), step=5) == [False, True, False, True, False, True, True, False, True, True]
    table = fixture_table()  # 60 rows, two per bias in bias order
    shuffled = table.sample(frac=1.0, random_state=3)  # biases mixed within each batch of 10
    shuffled_path = tmp_path / "shuffled.csv"
    shuffled.to_csv(shuffled_path, index=False)
    for frame, path in ((table, FIXTURES), (shuffled, shuffled_path)):
        expected = authors_decision_run(frame, len(frame) // 10)  # the authors' 10 rows per batch
        for bias in BIASES:
            docs = CognitiveOptions(data_path=str(path)).task_docs(bias)
            assert [d["reversed"] for d in docs] == [expected[d["row"]] for d in docs], (path.name, bias)
        rows = list(range(1, len(frame) + 1))
        by_five = authors_decision_run(frame, len(frame) // 10, max_retries=5)
        for bias in BIASES:
            own = [r for r in rows if data.bias_slug(frame["bias"].iloc[r - 1]) == bias]
            assert authors_reversed(own, step=5) == [by_five[r] for r in own]
    hashed = CognitiveOptions(data_path=str(FIXTURES), reversal="hash").task_docs("anchoring")
    assert [d["reversed"] for d in hashed] == [is_reversed(d["id"], 42) for d in hashed]
    off = CognitiveOptions(data_path=str(FIXTURES), reverse_options=False).task_docs("anchoring")
    assert [d["reversed"] for d in off] == [False, False]


def test_conservatism_is_scored_with_the_authors_corrected_parameters(tmp_path: Path) -> None:
    """The published Conservatism tests carry k = −1, x_1 = 0, x_2 = n − 1 (the treatment answer
    mirrored); the authors' corrected analysis scores them with k = −1, x_1 = x_2 = 0."""
    table = fixture_table()
    table.loc[table["bias"] == "Conservatism", "metric_params"] = '{"k": -1, "x_1": 0, "x_2": 6}'
    path = tmp_path / "published.csv"
    table.to_csv(path, index=False)
    corrected = CognitiveOptions(data_path=str(path)).task_docs("conservatism")
    published = CognitiveOptions(data_path=str(path), metric_params="published").task_docs("conservatism")
    assert {(d["k"], d["x_1"], d["x_2"]) for d in corrected} == {(-1, 0.0, 0.0)}
    assert {(d["k"], d["x_1"], d["x_2"]) for d in published} == {(-1, 0.0, 6.0)}
    doc = {**corrected[0], "reversed": False}
    # The conservative pair: A in the control (option 1), B in the treatment (option 7).
    # corrected: −1·(|0 − 0| − |6 − 0|)/6 = 1; published: −1·(|0 − 0| − |6 − 6|) = 0
    assert score_answers(doc, "Option 1", "Option 7").score == pytest.approx(1.0)
    assert score_answers({**published[0], "reversed": False}, "Option 1", "Option 7").score == 0.0
    # A in both: corrected 0; published −1·(0 − 6)/6 = 1 (the sign error)
    assert score_answers(doc, "Option 1", "Option 1").score == 0.0
    assert score_answers({**published[0], "reversed": False}, "Option 1", "Option 1").score == pytest.approx(1.0)
    for bias in BIASES:  # no other bias is touched
        if bias != "conservatism":
            assert CognitiveOptions(data_path=str(path)).task_docs(bias) == CognitiveOptions(
                data_path=str(path), metric_params="published"
            ).task_docs(bias)


def test_reversed_rendering_renumbers_the_options_for_both_sides() -> None:
    test = load_tests(FIXTURES)[0]
    doc = test.to_doc(reversed_options=True)
    for side in ("control", "treatment"):
        lines = side_text(doc, side).splitlines()
        assert lines[-11:] == [f"Option {i}: {100 - 10 * (i - 1)}%" for i in range(1, 12)]
    prompt = answer_prompt(side_text(doc, "control"))
    assert prompt.startswith("You are given a decision task") and prompt.endswith("\nAnswer:")
    assert answer_labels(3) == ["Option 1:", "Option 2:", "Option 3:"]


def test_extraction_prompt_and_regex() -> None:
    prompt = extraction_prompt(["100%", "50%", "0%"], "  I would go with the second one, Option 2.  ", "biasmonkey")
    assert (
        "OPTIONS:\nOption 1: 100%\nOption 2: 50%\nOption 3: 0%\n\nANSWER:\nI would go with the second one, Option 2.\n\n"
        in prompt
    )
    assert [
        extract_option(t) for t in ["Option 10: 90%", "my option 3", "Options 4", "No option selected", "Option10"]
    ] == [10, 3, None, None, None]
