"""The yes-no data layer (real AES zips, broken zips, download + cache) and the prompts.

Real-file tests need BIASMONKEY_DATA_DIR and skip without it. Broken inputs are AES zips
written into tmp_path with the real layout `<dir>/yesno/<zip>`. Downloads only ever go to a
local http.server. No test prints decrypted text.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import pyzipper

from biasmonkey.metrics.yesno import authors_folds
from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.data import EWOK_DOMAINS, DataError, load_items, zip_path
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt

EWOK_ROWS = {
    "agent_properties": 588,
    "material_dynamics": 134,
    "material_properties": 100,
    "physical_dynamics": 60,
    "physical_interactions": 184,
    "physical_relations": 184,
    "quantitative_properties": 138,
    "social_interactions": 124,
    "social_properties": 148,
    "social_relations": 328,
    "spatial_relations": 148,
}  # datasets README: 2,136 rows, 50/50 Yes/No in every file


def _read_csv(zip_file: Path, password: bytes, member: str) -> pd.DataFrame:
    """An independent read of one member (pandas), to compare the loader against."""
    with pyzipper.AESZipFile(zip_file) as zf:
        zf.setpassword(password)
        return pd.read_csv(io.BytesIO(zf.read(member)))


# ------------------------------------------------------------------------------ real files


def test_real_comps(data_dir: Path) -> None:
    items = load_items("comps")
    assert len(items) == 2100
    assert Counter(i.gold for i in items) == {"Yes": 1041, "No": 1059}
    assert [i.id for i in items[:3]] == ["comps-1", "comps-2", "comps-3"] and len({i.id for i in items}) == 2100
    df = _read_csv(data_dir / "yesno" / "compsynq-data.zip", b"yesnocompspass1", "comps_yn_rand_2prop_2100.csv")
    assert [i.query for i in items] == df["Question"].tolist()
    assert [i.gold for i in items] == df["Correct Answer"].tolist()
    assert {i.dataset for i in items} == {"comps"} and {i.domain for i in items} == {None}


def test_real_ewok(data_dir: Path) -> None:
    items = load_items("ewok")
    assert len(items) == 2136 and len({i.id for i in items}) == 2136
    assert Counter(i.domain for i in items) == EWOK_ROWS
    for domain in EWOK_DOMAINS:
        golds = Counter(i.gold for i in items if i.domain == domain)
        assert golds["Yes"] == golds["No"] == EWOK_ROWS[domain] // 2
    df = _read_csv(data_dir / "yesno" / "ewokynq-data.zip", b"yesnoewokpass1", "processed_t2q_physical_dynamics.csv")
    one = load_items("ewok", "physical_dynamics")
    assert [i.query for i in one] == (df["Context"] + " " + df["Question"]).tolist()
    assert [i.gold for i in one] == df["Correct Answer"].tolist()
    assert one[0].id == "ewok-physical_dynamics-1" and one == [i for i in items if i.domain == "physical_dynamics"]


@pytest.mark.requires("shared_data")
def test_real_zips_resolve_locally_with_the_documented_checksums(data_dir: Path) -> None:
    documented = dict(
        (m.group(2), m.group(1))
        for m in re.finditer(r"^\s+([0-9a-f]{64})\s+(\S+\.zip)\s*$", (data_dir / "README.md").read_text(), re.M)
    )
    for dataset, spec in data.ZIPS.items():
        path = zip_path(dataset)
        assert path == data_dir / "yesno" / spec.name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256 == documented[spec.name]


def test_real_arith(data_dir: Path) -> None:
    """Arith-YNQ (from BIG-bench arithmetic, Apache-2.0): 6 kinds × 200, half Yes in each."""
    items = load_items("arith")
    assert len(items) == 1200 and len({i.id for i in items}) == 1200
    assert Counter(i.gold for i in items) == {"Yes": 600, "No": 600}
    assert (items[0].id, items[0].query, items[0].gold) == ("arith-1", "Is 8 plus 3 equal to 17?", "No")
    assert (items[-1].query, items[-1].gold) == ("Is 60 times 85 equal to 5100?", "Yes")
    df = _read_csv(data_dir / "yesno" / "arithynq-data.zip", b"yesnoarithpass1", "arith-ynq-big.csv")
    assert [i.query for i in items] == df["Question"].tolist()  # the Context column ('') is not used
    assert set(df["Context"]) == {"''"}
    assert [i.gold for i in items] == df["Correct Answer"].tolist()
    assert Counter(zip(df["Digits"], df["Correct Answer"])) == {
        (kind, gold): 100
        for kind in (
            "1_digit_addition",
            "1_digit_subtraction",
            "1_digit_multiplication",
            "2_digit_addition",
            "2_digit_subtraction",
            "2_digit_multiplication",
        )
        for gold in ("Yes", "No")
    }
    assert {i.dataset for i in items} == {"arith"} and {i.domain for i in items} == {None}


def test_real_babi(data_dir: Path) -> None:
    """bAbI-YNQ (from the bAbI tasks, BSD): 12 tasks × 100, half Yes in each."""
    items = load_items("babi")
    assert len(items) == 1200 and len({i.id for i in items}) == 1200
    assert Counter(i.gold for i in items) == {"Yes": 600, "No": 600}
    assert (items[0].id, items[0].query, items[0].gold) == (
        "babi-1",
        "Sandra went to the hallway. Is Sandra in the hallway?",
        "Yes",
    )
    df = _read_csv(data_dir / "yesno" / "babiynq-data.zip", b"yesnobabipass1", "babi-ynq-big.csv")
    assert [i.query for i in items] == (df["Context"] + " " + df["Question"]).tolist()
    assert [i.gold for i in items] == df["Correct Answer"].tolist()
    tasks = ("qa1", "qa2", "qa4", "qa6", "qa9", "qa10", "qa11", "qa12", "qa13", "qa15", "qa17", "qa18")
    assert Counter(zip(df["task"], df["Correct Answer"])) == {(t, g): 50 for t in tasks for g in ("Yes", "No")}
    assert {i.dataset for i in items} == {"babi"} and {i.domain for i in items} == {None}


@pytest.mark.requires("shared_data")
def test_reference_results_fit_our_items(data_dir: Path) -> None:
    """The authors' per-model yes-no results count our items: every plain bias and accuracy is a
    multiple of 1/N for our N per set or EWoK domain (MMLU: tests/answer_position/test_answer_position_data.py)."""
    ref = data_dir / "yesno" / "reference" / "summary_jsons"
    sizes = {"comps": 2100, "arith": 1200, "babi": 1200, **EWOK_ROWS}

    def whole(x: float) -> bool:
        return abs(x - round(x)) < 1e-6

    files = [path for path in sorted(ref.glob("*.json")) if not path.stem.endswith("_mmlu")]
    assert len(files) == 48  # 3 prompts × 4 families × 4 yes-no sets
    for path in files:
        for domain, models in json.loads(path.read_text()).items():
            assert len(models) == 4, path.name
            for model, r in models.items():
                n = sizes[domain]
                assert whole(r["plain_bias"] * n) and whole(r["plain_acc"] * n), (path.name, domain, model)
                # Specific: accuracy over all n items, bias over the items in a fold (EWoK: n − n % 4)
                in_folds = int((authors_folds([True] * n, "ewok" if domain in EWOK_ROWS else domain) >= 0).sum())
                assert whole(r["kfold_acc"] * n) and whole(r["kfold_bias"] * in_folds), (path.name, domain, model)


def test_authors_folds_on_our_items(data_dir: Path) -> None:
    """Our items are in the authors' file order: the gold answers of the authors' per-question
    file (tests/fixtures/yesno) are ours, and the COMPS, Arith and bAbI folds are scikit-learn's
    StratifiedKFold(5, shuffle=True, random_state=42) on the 'Correct Answer' column."""
    fixture = (
        Path(__file__).parent.parent
        / "fixtures"
        / "yesno"
        / "authors_items_zeroshot_ewok_physical_dynamics_qwen1.5-7b.csv"
    )
    authors = pd.read_csv(fixture, comment="#")
    assert [i.gold for i in load_items("ewok", "physical_dynamics")] == authors["Correct Answer"].tolist()
    model_selection = pytest.importorskip("sklearn.model_selection")
    for dataset in ("comps", "arith", "babi"):
        gold = [i.gold for i in load_items(dataset)]
        expected = [0] * len(gold)
        splits = model_selection.StratifiedKFold(5, shuffle=True, random_state=42).split(gold, gold)
        for fold, (_, test) in enumerate(splits):
            for i in test:
                expected[i] = fold
        assert authors_folds([g == "Yes" for g in gold], dataset).tolist() == expected, dataset


def test_unknown_dataset_and_domain() -> None:
    with pytest.raises(DataError, match="unknown yes-no dataset 'boolq'"):
        load_items("boolq")
    with pytest.raises(DataError, match="unknown EWoK domain 'cooking'"):
        load_items("ewok", "cooking")
    with pytest.raises(DataError, match="no domains"):
        load_items("comps", "agent_properties")
    with pytest.raises(DataError, match="'arith' has no domains"):
        load_items("arith", "1_digit_addition")
    with pytest.raises(DataError, match="multiple-choice.*answer_position.data.load_mmlu"):
        load_items("mmlu")


# ------------------------------------------------------------------------------ broken zips

COMPS_HEADER = "property,prefix,Context,Question,Correct Answer,negative_sample_type\r\n"
EWOK_HEADER = (
    "Question Number,MetaTemplateID,Domain,ItemGroupID,ContextDiff,ContextNum,Context,Question,Correct Answer\r\n"
)
EWOK_ROW = "{n},1,social-relations,,x,1,Ann hugs Bo.,Do they touch?,{gold}\r\n"


def _aes_zip(members: dict[str, str], password: bytes) -> bytes:
    buf = io.BytesIO()
    with pyzipper.AESZipFile(buf, "w", compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as zf:
        zf.setpassword(password)
        for name, text in members.items():
            zf.writestr(name, text)
    return buf.getvalue()


@pytest.fixture
def fake_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """Write `<tmp>/data/yesno/<zip>` for a dataset, point BIASMONKEY_DATA_DIR there and pin its
    sha256 (and, optionally, the password the loader uses), so the loader reaches the zip checks."""
    root = tmp_path / "data"
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(root))

    def write(dataset: str, payload: bytes, password: bytes | None = None) -> Path:
        spec = data.ZIPS[dataset]
        path = root / "yesno" / spec.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        pinned = data.ZipSpec(spec.name, hashlib.sha256(payload).hexdigest(), password or spec.password)
        monkeypatch.setitem(data.ZIPS, dataset, pinned)
        return path

    return write


def test_well_formed_fake_zip_loads(fake_zip) -> None:
    fake_zip(
        "comps",
        _aes_zip(
            {data.COMPS_FILE: COMPS_HEADER + "p,x,c,Is ice cold?,Yes\r\np,x,c,Is fire wet?, No \r\n"},
            b"yesnocompspass1",
        ),
    )
    items = load_items("comps")
    assert [(i.id, i.query, i.gold) for i in items] == [
        ("comps-1", "Is ice cold?", "Yes"),
        ("comps-2", "Is fire wet?", "No"),
    ]


def test_wrong_password(fake_zip) -> None:
    path = fake_zip("comps", _aes_zip({data.COMPS_FILE: COMPS_HEADER + "p,x,c,Q?,Yes\r\n"}, b"another password"))
    with pytest.raises(DataError) as err:
        load_items("comps")
    msg = str(err.value)
    assert "wrong password" in msg and str(path) in msg and data.COMPS_FILE in msg


@pytest.mark.parametrize("damage", ["flip", "truncate", "not-a-zip"])
def test_corrupt_zip(fake_zip, damage: str) -> None:
    good = _aes_zip({data.COMPS_FILE: COMPS_HEADER + "p,x,c,Is ice cold?,Yes\r\n" * 50}, b"yesnocompspass1")
    payload = {
        "flip": good[:120] + bytes([good[120] ^ 0xFF]) + good[121:],  # inside the encrypted member data
        "truncate": good[: len(good) // 2],
        "not-a-zip": b"<html>rate limited</html>",
    }[damage]
    path = fake_zip("comps", payload)
    with pytest.raises(DataError) as err:
        load_items("comps")
    assert "corrupt zip" in str(err.value) and str(path) in str(err.value)


def test_missing_file_in_zip(fake_zip) -> None:
    path = fake_zip("ewok", _aes_zip({"processed_t2q_social_relations.csv": EWOK_HEADER}, b"yesnoewokpass1"))
    with pytest.raises(DataError) as err:
        load_items("ewok", "agent_properties")
    msg = str(err.value)
    assert str(path) in msg and "no file 'processed_t2q_agent_properties.csv'" in msg
    assert "processed_t2q_social_relations.csv" in msg  # what the zip does hold


BAD_EWOK = [
    pytest.param(
        EWOK_HEADER.replace(",Context,", ",Setting,") + EWOK_ROW.format(n=1, gold="Yes"),
        ["missing column(s) ['Context']"],
        id="missing-column",
    ),
    pytest.param(
        EWOK_HEADER + EWOK_ROW.format(n=1, gold="Yes") + EWOK_ROW.format(n=2, gold="Probably not"),
        ["row 2 (line 3)", "column 'Correct Answer'", "'Probably not' is not Yes or No"],
        id="bad-label",
    ),
    pytest.param(
        EWOK_HEADER + EWOK_ROW.format(n=1, gold="Yes") + EWOK_ROW.format(n=2, gold="yes"),
        ["row 2 (line 3)", "'yes' is not Yes or No"],
        id="lower-case-label",
    ),
    pytest.param(
        EWOK_HEADER + EWOK_ROW.format(n=1, gold="Yes").replace("Do they touch?", ""),
        ["row 1 (line 2)", "column 'Question': empty"],
        id="empty-question",
    ),
    pytest.param(EWOK_HEADER, ["no rows"], id="no-rows"),
]


@pytest.mark.parametrize(("content", "fragments"), BAD_EWOK)
def test_malformed_ewok_file_names_file_row_and_column(fake_zip, content: str, fragments: list[str]) -> None:
    fake_zip("ewok", _aes_zip({"processed_t2q_social_relations.csv": content}, b"yesnoewokpass1"))
    with pytest.raises(DataError) as err:
        load_items("ewok", "social_relations")
    msg = str(err.value)
    assert "ewokynq-data.zip:processed_t2q_social_relations.csv" in msg
    for fragment in fragments:
        assert fragment in msg
    assert "Ann hugs Bo." not in msg  # rows are named, never quoted


ARITH_HEADER = "Type,Digits,Context,Question,Correct Answer\r\n"
BABI_HEADER = "task,QID,AnsRefIDs,Context,Question,Correct Answer\r\n"


def test_well_formed_fake_arith_babi(fake_zip) -> None:
    fake_zip(
        "arith",
        _aes_zip(
            {data.ARITH_FILE: ARITH_HEADER + "A,1_digit_addition,'',Is 1 plus 1 equal to 2?,Yes\r\n"},
            b"yesnoarithpass1",
        ),
    )
    fake_zip(
        "babi",
        _aes_zip({data.BABI_FILE: BABI_HEADER + "qa1,1,[1], Ann is here. ,Is Ann here?,Yes\r\n"}, b"yesnobabipass1"),
    )
    assert [(i.id, i.query, i.gold) for i in load_items("arith")] == [("arith-1", "Is 1 plus 1 equal to 2?", "Yes")]
    assert [(i.id, i.query) for i in load_items("babi")] == [("babi-1", "Ann is here. Is Ann here?")]


BAD_FILES = [
    pytest.param(
        "arith",
        data.ARITH_FILE,
        ARITH_HEADER.replace("Question", "Query") + "A,d,'',Q?,Yes\r\n",
        ["missing column(s) ['Question']"],
        id="arith-missing-column",
    ),
    pytest.param(
        "arith",
        data.ARITH_FILE,
        ARITH_HEADER + "A,d,'',Q?,Yes\r\nA,d,'',Q2?,Maybe\r\n",
        ["row 2 (line 3)", "column 'Correct Answer'", "'Maybe' is not Yes or No"],
        id="arith-bad-label",
    ),
    pytest.param(
        "babi",
        data.BABI_FILE,
        BABI_HEADER + "qa1,1,[1],,Is Ann here?,Yes\r\n",
        ["row 1 (line 2)", "column 'Context': empty"],
        id="babi-empty-context",
    ),
]


@pytest.mark.parametrize(("dataset", "member", "content", "fragments"), BAD_FILES)
def test_malformed_arith_babi_name_file_row_and_column(fake_zip, dataset, member, content, fragments) -> None:
    fake_zip(dataset, _aes_zip({member: content}, data.ZIPS[dataset].password))
    with pytest.raises(DataError) as err:
        load_items(dataset)
    msg = str(err.value)
    assert f"{data.ZIPS[dataset].name}:{member}" in msg
    for fragment in fragments:
        assert fragment in msg
    assert "Ann is here" not in msg and "What is 1 + 1" not in msg  # rows are named, never quoted


def test_local_copy_missing_or_changed(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    expected = tmp_path / "yesno" / "compsynq-data.zip"
    with pytest.raises(DataError) as err:
        load_items("comps")
    assert str(expected) in str(err.value) and "BIASMONKEY_DATA_DIR" in str(err.value)

    original = (data_dir / "yesno" / "compsynq-data.zip").read_bytes()
    expected.parent.mkdir()
    expected.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(DataError) as err:
        load_items("comps")
    msg = str(err.value)
    assert "checksum mismatch" in msg and str(expected) in msg and data.ZIPS["comps"].sha256 in msg


# ------------------------------------------------------------------------------ download + cache


def _serve_zip(upstream, monkeypatch: pytest.MonkeyPatch, name: str, payload: bytes) -> None:
    (upstream.root / "datasets").mkdir(exist_ok=True)
    (upstream.root / "datasets" / name).write_bytes(payload)
    monkeypatch.setenv(data.BASE_URL_ENV, f"{upstream.url}/datasets")


def _cached_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def test_download_verifies_caches_and_keeps_only_the_zip(
    data_dir: Path, upstream, cache_dir: Path, monkeypatch
) -> None:
    payload = (data_dir / "yesno" / "ewokynq-data.zip").read_bytes()
    _serve_zip(upstream, monkeypatch, "ewokynq-data.zip", payload)
    items = load_items("ewok")
    assert len(items) == 2136
    assert upstream.requests == ["/datasets/ewokynq-data.zip"]  # one download for 11 files
    (cached,) = _cached_files(cache_dir)
    assert cached.name == "ewokynq-data.zip" and cached.read_bytes() == payload
    assert data.UPSTREAM_COMMIT[:12] in str(cached)
    assert len(load_items("ewok", "spatial_relations")) == 148  # from the cache
    assert upstream.requests == ["/datasets/ewokynq-data.zip"]
    assert _cached_files(cache_dir) == [cached]  # decrypted text never lands on disk


def test_download_with_wrong_content_is_rejected_and_not_cached(upstream, cache_dir: Path, monkeypatch) -> None:
    served = b"not the pinned zip"
    _serve_zip(upstream, monkeypatch, "compsynq-data.zip", served)
    with pytest.raises(DataError) as err:
        load_items("comps")
    msg = str(err.value)
    assert "checksum mismatch" in msg and hashlib.sha256(served).hexdigest() in msg
    assert data.ZIPS["comps"].sha256 in msg and data.UPSTREAM_REPO in msg
    assert _cached_files(cache_dir) == []


def test_download_404_is_a_clear_error(upstream, cache_dir: Path, monkeypatch) -> None:
    monkeypatch.setenv(data.BASE_URL_ENV, f"{upstream.url}/datasets")
    with pytest.raises(DataError, match=r"could not download .*/datasets/compsynq-data\.zip.*BIASMONKEY_DATA_DIR"):
        load_items("comps")
    assert _cached_files(cache_dir) == []


def test_default_url_is_the_pinned_upstream_commit(cache_dir: Path, monkeypatch) -> None:
    """Without a data dir the loader asks raw.githubusercontent.com at the pinned commit."""
    asked = []

    def fake_download(url: str, dest: Path, expected: str, upstream: str) -> None:
        asked.append(url)
        raise DataError("offline")

    monkeypatch.delenv(data.BASE_URL_ENV, raising=False)
    monkeypatch.setattr("biasmonkey.tasks.fetch.download", fake_download)
    with pytest.raises(DataError, match="offline"):
        load_items("comps")
    assert asked == [
        "https://raw.githubusercontent.com/ombbhatt/logprobs-bias-correct/"
        "48591bb20f6d95f3a27bb81041dd59a4b81e2570/datasets/compsynq-data.zip"
    ]


# ------------------------------------------------------------------------------ prompts


def test_zero_shot_prompt_is_the_query() -> None:
    assert render_prompt("Does a cat bark?", "comps") == "Does a cat bark?"
    assert CONTINUATIONS == (" Yes", "Yes", " No", "No")


def test_few_shot_prompts_as_in_the_design_notes() -> None:
    assert render_prompt("Does a cat bark?", "comps", "fewshot") == (
        "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
        "#EXAMPLE\nQuestion: Does a blueberry fire bullets?\nResponse: No\n\n"
        "#EXAMPLE\nQuestion: Does a turtle have a hard shell?\nResponse: Yes\n\n"
        "#EXAMPLE\nQuestion: Does a cat bark?\nResponse:"
    )
    assert render_prompt("Ann is tall. Is Ann short?", "ewok", "fewshot") == (
        "#INSTRUCTIONS\nAnswer the following yes-no questions:\n\n"
        "#EXAMPLE\nQuestion: Claire sees something that is fabric. Can Claire pour it?\nResponse: No\n\n"
        "#EXAMPLE\nQuestion: Sally pays salary to Harry. Is Sally Harry's boss?\nResponse: Yes\n\n"
        "#EXAMPLE\nQuestion: Ann is tall. Is Ann short?\nResponse:"
    )
    with pytest.raises(ValueError, match="unknown prompt"):
        render_prompt("Q?", "comps", "threeshot")
    with pytest.raises(ValueError, match="no few-shot examples"):
        render_prompt("Q?", "boolq", "fewshot")
