"""The yes-no data layer (real AES zips, broken zips, download + cache) and the prompts.

Real-file tests need BIASMONKEY_DATA_DIR and skip without it. Broken inputs are AES zips
written into tmp_path with the real layout `<dir>/yesno/<zip>`. Downloads only ever go to a
local http.server. No test prints decrypted text.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyzipper
import pytest
from test_data import cache_dir, upstream  # noqa: F401  (fixtures: local http.server, empty cache)

from biasmonkey.tasks.yesno import data
from biasmonkey.tasks.yesno.data import EWOK_DOMAINS, DataError, load_items, zip_path
from biasmonkey.tasks.yesno.prompts import CONTINUATIONS, render_prompt

EWOK_ROWS = {
    "agent_properties": 588, "material_dynamics": 134, "material_properties": 100, "physical_dynamics": 60,
    "physical_interactions": 184, "physical_relations": 184, "quantitative_properties": 138,
    "social_interactions": 124, "social_properties": 148, "social_relations": 328, "spatial_relations": 148,
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


def test_real_zips_resolve_locally_with_the_documented_checksums(data_dir: Path) -> None:
    documented = dict(
        (m.group(2), m.group(1))
        for m in re.finditer(r"^\s+([0-9a-f]{64})\s+(\S+\.zip)\s*$", (data_dir / "README.md").read_text(), re.M)
    )
    for dataset, spec in data.ZIPS.items():
        path = zip_path(dataset)
        assert path == data_dir / "yesno" / spec.name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == spec.sha256 == documented[spec.name]


def test_unknown_dataset_and_domain() -> None:
    with pytest.raises(DataError, match="unknown yes-no dataset 'boolq'"):
        load_items("boolq")
    with pytest.raises(DataError, match="unknown EWoK domain 'cooking'"):
        load_items("ewok", "cooking")
    with pytest.raises(DataError, match="no domains"):
        load_items("comps", "agent_properties")


# ------------------------------------------------------------------------------ broken zips

COMPS_HEADER = "property,prefix,Context,Question,Correct Answer,negative_sample_type\r\n"
EWOK_HEADER = "Question Number,MetaTemplateID,Domain,ItemGroupID,ContextDiff,ContextNum,Context,Question,Correct Answer\r\n"
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
    fake_zip("comps", _aes_zip({data.COMPS_FILE: COMPS_HEADER + "p,x,c,Is ice cold?,Yes\r\np,x,c,Is fire wet?, No \r\n"}, b"yesnocompspass1"))
    items = load_items("comps")
    assert [(i.id, i.query, i.gold) for i in items] == [("comps-1", "Is ice cold?", "Yes"), ("comps-2", "Is fire wet?", "No")]


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


def test_download_verifies_caches_and_keeps_only_the_zip(data_dir: Path, upstream, cache_dir: Path, monkeypatch) -> None:
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
