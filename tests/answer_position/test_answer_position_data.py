"""The answer-position family's data and prompts: the authors' MMLU items (real zip, broken zips)
and the prompts, string for string against the authors' stimuli.

AUTHORS_* are the MMLU prefixes of the authors' `dataset_prompts.py` (ombbhatt/logprobs-bias-correct
@ 48591bb20f6d95f3a27bb81041dd59a4b81e2570, `get_dataset_prompts("MMLU")`: `prompt_cond1`, for
`fewshot`; `prompt_cond2`, for `instronly`), copied character for character; their
`logprobs_mcq.py` scores `prefix + query + "\\nResponse:" + letter` (zero-shot: no prefix).
Real-file tests need BIASMONKEY_DATA_DIR (or the pinned cache) and skip without it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from test_yesno_data import _aes_zip, _read_csv, fake_zip  # noqa: F401  (fake_zip: a fixture)

from biasmonkey.metrics.answer_position import balanced_mcq_folds, recall_std
from biasmonkey.tasks.answer_position.data import MMLU_DOMAINS, load_mmlu
from biasmonkey.tasks.answer_position.prompts import (
    CONTINUATIONS,
    LETTER_CONTINUATIONS,
    PROMPTS,
    mcq_query,
    render_prompt,
)
from biasmonkey.tasks.fetch import DataError
from biasmonkey.tasks.yesno import data as release

AUTHORS_FEWSHOT = "#INSTRUCTIONS\nAnswer the following multiple choice questions:\n\n#EXAMPLE\nQuestion: What is the shape of the Earth?\nOptions: (A) Cone, (B) Cube, (C) Sphere, (D) Cylinder\nResponse: C\n\n#EXAMPLE\nQuestion: What is the color of the sky?\nOptions: (A) Red, (B) Blue, (C) Green, (D) Yellow\nResponse: B\n\n#EXAMPLE\nQuestion: "
AUTHORS_INSTRONLY = "#INSTRUCTIONS\nAnswer the following multiple choice question:\n\n#EXAMPLE\nQuestion: "
AUTHORS_PREFIX = {"zeroshot": "", "instronly": AUTHORS_INSTRONLY, "fewshot": AUTHORS_FEWSHOT}


# ------------------------------------------------------------------------------ prompts


@pytest.mark.parametrize("prompt", PROMPTS)
def test_every_prompt_type_is_the_authors_text(prompt: str) -> None:
    query = mcq_query("Which one?", ["(A) a", "(B) b", "(C) c", "(D) d"])
    assert render_prompt(query, prompt) == AUTHORS_PREFIX[prompt] + query + "\nResponse:"


def test_spelled_out_prompts_and_continuations() -> None:
    q = mcq_query("What is 1 + 1?", ("(A) 1", "(B) 2", "(C) 3", "(D) 4"))
    assert q == "What is 1 + 1?\nOptions: (A) 1, (B) 2, (C) 3, (D) 4"
    assert render_prompt(q) == "What is 1 + 1?\nOptions: (A) 1, (B) 2, (C) 3, (D) 4\nResponse:"
    assert render_prompt(q, "instronly") == (
        "#INSTRUCTIONS\nAnswer the following multiple choice question:\n\n"
        "#EXAMPLE\nQuestion: What is 1 + 1?\nOptions: (A) 1, (B) 2, (C) 3, (D) 4\nResponse:"
    )
    assert CONTINUATIONS == (" A", "A", " B", "B", " C", "C", " D", "D")
    assert LETTER_CONTINUATIONS["C"] == (" C", "C")
    assert PROMPTS == ("zeroshot", "instronly", "fewshot")
    with pytest.raises(ValueError, match="unknown prompt 'threeshot'"):
        render_prompt(q, "threeshot")


@pytest.mark.parametrize("prompt", PROMPTS)
def test_real_items_render_as_the_authors(data_dir: Path, prompt: str) -> None:
    item = load_mmlu("abstract_algebra")[0]
    question = "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q."
    query = question + "\nOptions: (A) 0, (B) 4, (C) 2, (D) 6"
    assert render_prompt(item.query, prompt) == AUTHORS_PREFIX[prompt] + query + "\nResponse:"


# ------------------------------------------------------------------------------ real files


MMLU_LETTERS = {"A": 3222, "B": 3462, "C": 3582, "D": 3776}  # 14,042 questions, as the upstream README says


def test_real_mmlu(data_dir: Path) -> None:
    """MMLU (cais/mmlu, MIT) as the authors ship it: 57 domains, original option order."""
    items = load_mmlu()
    assert len(items) == 14042 and len({i.id for i in items}) == 14042
    assert Counter(i.gold for i in items) == MMLU_LETTERS
    assert list(dict.fromkeys(i.domain for i in items)) == list(MMLU_DOMAINS) and len(MMLU_DOMAINS) == 57
    first = items[0]
    assert (first.id, first.dataset, first.domain, first.gold) == (
        "mmlu-abstract_algebra-1",
        "mmlu",
        "abstract_algebra",
        "B",
    )
    assert first.question == "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q."
    assert first.options == ("(A) 0", "(B) 4", "(C) 2", "(D) 6")
    assert first.query == first.question + "\nOptions: (A) 0, (B) 4, (C) 2, (D) 6"
    one = load_mmlu("abstract_algebra")
    assert one == [i for i in items if i.domain == "abstract_algebra"]
    assert Counter(i.gold for i in one) == {"A": 22, "B": 26, "C": 31, "D": 21}
    df = _read_csv(data_dir / "yesno" / "mmlu-data.zip", b"mcqmmlupass1", "college_computer_science_processed.csv")
    ccs = load_mmlu("college_computer_science")
    assert [i.question for i in ccs] == df["question"].tolist()  # raw, as the authors read them
    assert [list(i.options) for i in ccs] == df[["A", "B", "C", "D"]].values.tolist()
    assert [i.gold for i in ccs] == df["answer"].tolist()
    assert all(opt.startswith(f"({x}) ") for i in items for x, opt in zip("ABCD", i.options))


# The order in which the authors' MMLU Specific run lists abstract_algebra (0-based file rows):
# outputs/Mar-18-2025/zeroshot/MMLU/mcqkfold/Llama/abstract_algebra/Llama-2-7b-hf_results.csv
# (upstream 9c8abf6), matched row by row on the question text. Rows 0–79: 20 drawn items per
# letter A, B, C, D, five per balanced fold 0–3 in turn; rows 80–99: the extra fold 4.
AUTHORS_ABSTRACT_ALGEBRA_ORDER = [
    5,
    59,
    34,
    6,
    69,
    21,
    88,
    55,
    19,
    20,
    82,
    58,
    86,
    77,
    12,
    41,
    93,
    32,
    52,
    68,
    63,
    96,
    24,
    91,
    37,
    30,
    15,
    46,
    31,
    8,
    27,
    92,
    4,
    64,
    57,
    47,
    49,
    51,
    35,
    54,
    45,
    48,
    13,
    26,
    98,
    71,
    33,
    14,
    62,
    40,
    89,
    76,
    99,
    1,
    97,
    10,
    79,
    17,
    38,
    16,
    18,
    2,
    28,
    78,
    66,
    84,
    60,
    94,
    23,
    74,
    50,
    90,
    36,
    39,
    72,
    70,
    22,
    56,
    7,
    61,
    0,
    3,
    9,
    11,
    25,
    29,
    42,
    43,
    44,
    53,
    65,
    67,
    73,
    75,
    80,
    81,
    83,
    85,
    87,
    95,
]


def test_mmlu_balanced_folds_match_the_authors(data_dir: Path) -> None:
    gold = [i.gold for i in load_mmlu("abstract_algebra")]
    f = balanced_mcq_folds(gold)
    assert f.per_letter == 20  # fewest letter: D with 21 → 20
    assert f.order.tolist() == AUTHORS_ABSTRACT_ALGEBRA_ORDER
    assert [f.fold[i] for i in AUTHORS_ABSTRACT_ALGEBRA_ORDER] == [j // 5 % 4 for j in range(80)] + [4] * 20
    for domain in MMLU_DOMAINS:  # every domain has enough items of each letter for 4 balanced folds
        assert balanced_mcq_folds([i.gold for i in load_mmlu(domain)]).per_letter >= 12


@pytest.mark.requires("shared_data")
def test_reference_results_fit_our_items(data_dir: Path) -> None:
    """The authors' per-model MMLU results count our items: every recall is a multiple of 1/n_X
    for our gold-letter counts n_X (so the study keeps MMLU's original answer positions), the
    accuracy is the recall-weighted sum, the RStd the population SD of the four recalls."""
    ref = data_dir / "yesno" / "reference" / "summary_jsons"
    letters = {d: Counter(i.gold for i in load_mmlu(d)) for d in MMLU_DOMAINS}

    def whole(x: float) -> bool:
        return abs(x - round(x)) < 1e-6

    files = sorted(ref.glob("*_mmlu.json"))
    assert len(files) == 12  # 3 prompts × 4 model families
    for path in files:
        results = json.loads(path.read_text())
        assert list(results) == list(MMLU_DOMAINS), path.name
        for domain, models in results.items():
            assert len(models) == 4, path.name
            n_x = letters[domain]
            for model, r in models.items():
                assert all(whole(r["plain_recalls"][x] * n_x[x]) for x in "ABCD"), (path.name, domain, model)
                hits = sum(r["plain_recalls"][x] * n_x[x] for x in "ABCD")
                assert r["plain_acc"] == pytest.approx(hits / sum(n_x.values())), (path.name, domain, model)
                assert r["plain_rstd"] == pytest.approx(recall_std([r["plain_recalls"][x] for x in "ABCD"]))
                assert r["kfold_rstd"] == pytest.approx(recall_std([r["kfold_recalls"][x] for x in "ABCD"]))


def test_unknown_subject() -> None:
    with pytest.raises(DataError, match="unknown MMLU domain 'cooking'"):
        load_mmlu("cooking")


# ------------------------------------------------------------------------------ broken zips

MMLU_HEADER = '"question","A","B","C","D","answer"\r\n'
MMLU_ROW = '"What is 1 + 1?","(A) 1","(B) 2","(C) 3","(D) 4","{gold}"\r\n'


def test_well_formed_fake_mmlu(fake_zip) -> None:  # noqa: F811
    fake_zip("mmlu", _aes_zip({"anatomy_processed.csv": MMLU_HEADER + MMLU_ROW.format(gold="B")}, b"mcqmmlupass1"))
    (item,) = load_mmlu("anatomy")
    assert (item.id, item.gold, item.query) == (
        "mmlu-anatomy-1",
        "B",
        "What is 1 + 1?\nOptions: (A) 1, (B) 2, (C) 3, (D) 4",
    )


BAD_FILES = [
    pytest.param(
        "mmlu",
        "anatomy_processed.csv",
        MMLU_HEADER + MMLU_ROW.format(gold="B") + MMLU_ROW.format(gold="E"),
        ["row 2 (line 3)", "column 'answer'", "'E' is not one of A, B, C, D"],
        id="mmlu-bad-letter",
    ),
    pytest.param(
        "mmlu",
        "anatomy_processed.csv",
        MMLU_HEADER + MMLU_ROW.format(gold="B").replace("(C) 3", "3"),
        ["row 1 (line 2)", "column 'C'", "does not start with '(C) '"],
        id="mmlu-option-without-letter",
    ),
    pytest.param(
        "mmlu",
        "anatomy_processed.csv",
        MMLU_HEADER.replace('"D",', "") + '"Q?","(A) 1","(B) 2","(C) 3","B"\r\n',
        ["missing column(s) ['D']"],
        id="mmlu-missing-column",
    ),
    pytest.param(
        "mmlu",
        "anatomy_processed.csv",
        MMLU_HEADER + MMLU_ROW.format(gold="B").replace("What is 1 + 1?", " "),
        ["row 1 (line 2)", "column 'question': empty"],
        id="mmlu-empty-question",
    ),
]


@pytest.mark.parametrize(("dataset", "member", "content", "fragments"), BAD_FILES)
def test_malformed_mmlu_names_file_row_and_column(fake_zip, dataset, member, content, fragments) -> None:  # noqa: F811
    fake_zip(dataset, _aes_zip({member: content}, release.ZIPS[dataset].password))
    with pytest.raises(DataError) as err:
        load_mmlu("anatomy")
    msg = str(err.value)
    assert f"{release.ZIPS[dataset].name}:{member}" in msg
    for fragment in fragments:
        assert fragment in msg
    assert "What is 1 + 1" not in msg  # rows are named, never quoted


def test_mmlu_missing_domain_file(fake_zip) -> None:  # noqa: F811
    path = fake_zip(
        "mmlu", _aes_zip({"anatomy_processed.csv": MMLU_HEADER + MMLU_ROW.format(gold="A")}, b"mcqmmlupass1")
    )
    with pytest.raises(DataError) as err:
        load_mmlu()  # all 57 domains: the first missing file is named
    msg = str(err.value)
    assert str(path) in msg and "no file 'abstract_algebra_processed.csv'" in msg and "anatomy_processed.csv" in msg
