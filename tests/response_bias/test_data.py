"""The BiasMonkey data layer: real files, corrupt copies, and the download/cache path.

Real-file tests need the upstream data: BIASMONKEY_DATA_DIR (relative paths resolve against the
CWD) or the filled data cache (the `data_dir` fixture of conftest.py). Corrupt inputs are written
into tmp_path with the real layout `<dir>/biasmonkey/prompts/<file>`. Downloads only ever go to a
local http.server.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from biasmonkey.tasks.response_bias import data
from biasmonkey.tasks.response_bias.data import DataError, load_rows, prompt_file, resolve

BIASES = ("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
PERTURBATIONS = ("key_typo", "middle_random", "letter_swap")
ROWS = {"acquiescence": 176, "allow_forbid": 48, "response_order": 271, "opinion_float": 126, "odd_even": 126}
ALL_TASKS = [(b, s) for b in BIASES for s in ("bias", *PERTURBATIONS)]

# q / q' columns as documented in the datasets README (the perturbation files keep the bias's
# q' header; odd_even perturbations are the opinion_float perturbation files).
Q_COLUMNS = {
    "acquiescence": ("orig alpha", "pos alpha"),
    "allow_forbid": ("orig alpha", "forbid alpha"),
    "response_order": ("orig alpha", "reversed alpha"),
    "opinion_float": ("orig alpha", "float alpha"),
    "odd_even": ("middle alpha", "no middle alpha"),
}


def _raw_rows(root: Path, name: str) -> list[dict[str, str]]:
    with (root / "biasmonkey" / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _expected_qp_options(bias: str, setting: str, raw: dict[str, str]) -> int:
    n = int(raw["num options"])
    if setting != "bias":
        return n
    return {"acquiescence": 2, "opinion_float": int(raw.get("num options new") or 0), "odd_even": 4}.get(bias, n)


# ------------------------------------------------------------------------------ real files


@pytest.mark.parametrize(("bias", "setting"), ALL_TASKS)
def test_real_file_row_counts_and_option_counts(data_dir: Path, bias: str, setting: str) -> None:
    name = prompt_file(bias, setting)
    raw_rows = _raw_rows(data_dir, name)
    rows = load_rows(bias, setting)
    assert len(rows) == len(raw_rows) == ROWS[bias]
    assert len({r.key for r in rows}) == len(rows)

    source_bias = "opinion_float" if bias == "odd_even" and setting != "bias" else bias
    q_col, qp_col = Q_COLUMNS[source_bias]
    for row, raw in zip(rows, raw_rows):
        assert row.key == raw["key"]
        assert row.control.text == raw[q_col] and row.treatment.text == raw[qp_col]
        assert len(row.control.options) == int(raw["num options"])
        assert len(row.treatment.options) == _expected_qp_options(bias, setting, raw)
        for question in (row.control, row.treatment):
            assert question.stem.strip()
            assert question.letters == tuple("ABCDEF"[: len(question.options)])


@pytest.mark.parametrize(
    ("bias", "q_options", "qp_options"),
    [("opinion_float", {5}, {6}), ("odd_even", {5}, {4}), ("allow_forbid", {2}, {2})],
)
def test_real_bias_files_fixed_option_counts(data_dir: Path, bias: str, q_options: set, qp_options: set) -> None:
    rows = load_rows(bias, "bias")
    assert {len(r.control.options) for r in rows} == q_options
    assert {len(r.treatment.options) for r in rows} == qp_options


def test_real_perturbation_files_keep_keys_and_originals(data_dir: Path) -> None:
    for bias in BIASES:
        originals = {r.key: r.control.text for r in load_rows(bias, "bias")}
        for setting in PERTURBATIONS:
            rows = load_rows(bias, setting)
            assert {r.key: r.control.text for r in rows} == originals, (bias, setting)
            # q' is the perturbed original: same options, (almost always) a different stem
            assert all(r.treatment.options == r.control.options for r in rows)
            assert sum(r.treatment.text != r.control.text for r in rows) > 0.9 * len(rows)


def test_real_acquiescence_reword(data_dir: Path) -> None:
    plain = load_rows("acquiescence", "bias")
    reword = load_rows("acquiescence", "bias", reword=True)
    assert len(reword) == 176
    assert [r.key for r in reword] == [r.key for r in plain]
    assert all(len(r.treatment.options) == 2 for r in reword)
    assert any(a.treatment.text != b.treatment.text for a, b in zip(plain, reword))


def test_real_files_resolve_locally_with_the_documented_checksums(data_dir: Path) -> None:
    readme = data_dir / "README.md"
    documented = {}
    if readme.is_file():
        documented = dict(
            (m.group(2), m.group(1)) for m in re.finditer(r"^\s+([0-9a-f]{64})\s+(\S+)\s*$", readme.read_text(), re.M)
        )
    for name, (_, sha) in data.FILES.items():
        path = resolve(name)
        assert path == data_dir / "biasmonkey" / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
        if documented:
            assert documented[name] == sha, name


# ------------------------------------------------------------------------------ local dir errors


def test_missing_file_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))
    expected = tmp_path / "biasmonkey" / "prompts" / "acquiescence.csv"
    for call in (lambda: resolve("prompts/acquiescence.csv"), lambda: load_rows("acquiescence", "bias")):
        with pytest.raises(DataError) as err:
            call()
        assert str(expected) in str(err.value) and "BIASMONKEY_DATA_DIR" in str(err.value)


def test_unknown_file_name() -> None:
    with pytest.raises(DataError, match="unknown BiasMonkey data file 'prompts/nope.csv'"):
        resolve("prompts/nope.csv")


def test_checksum_mismatch_names_file_and_both_hashes(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "prompts/acquiescence.csv"
    original = (data_dir / "biasmonkey" / name).read_bytes()
    copy = tmp_path / "biasmonkey" / name
    copy.parent.mkdir(parents=True)
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(tmp_path))

    copy.write_bytes(original)  # an intact copy in this layout is accepted
    assert resolve(name) == copy

    changed = bytearray(original)
    changed[100] ^= 0x01  # one byte
    copy.write_bytes(bytes(changed))
    with pytest.raises(DataError) as err:
        load_rows("acquiescence", "bias")
    msg = str(err.value)
    assert "checksum mismatch" in msg and str(copy) in msg
    assert hashlib.sha256(bytes(changed)).hexdigest() in msg
    assert hashlib.sha256(original).hexdigest() in msg


# ------------------------------------------------------------------------------ malformed rows


def _question(stem: str, options: list[str]) -> str:
    return "\n".join([stem] + [f"{letter}. {text}" for letter, text in zip("ABCDEF", options)])


def _row(*cells: str) -> str:
    return ",".join(f'"{c}"' if "\n" in c else c for c in cells) + "\n"


RO_FILE = "prompts/response_order.csv"
RO_HEADER = "key,num options,orig alpha,reversed alpha\n"
Q3 = _question("Q?", ["x", "y", "z"])  # 4 physical lines
Q3_REV = _question("Q?", ["z", "y", "x"])
# A row of two 4-line questions spans 4 + 4 − 1 = 7 physical lines (the q cell's last line and
# the q' cell's first line share one). Header = line 1, so rows start at lines 2, 9, 16.
GOOD1 = _row("K1", "3", Q3, Q3_REV)
GOOD3 = _row("K3", "3", Q3, Q3_REV)

MALFORMED = [
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("K2", "2", "Q?\nA. x\nC. y", "Q?\nA. y\nB. x") + GOOD3,
        ["line 9", "key 'K2'", "column 'orig alpha'", "option letters do not parse", "['A', 'C']"],
        id="letters-A-then-C",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("K2", "3", Q3, _question("Q?", ["z", "x"])) + GOOD3,
        ["line 9", "key 'K2'", "column 'reversed alpha'", "2 options, expected 3"],
        id="wrong-option-count",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("", "3", Q3, Q3_REV) + GOOD3,
        ["line 9", "key ''", "empty key"],
        id="empty-key",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + GOOD3 + _row("K1", "3", Q3, Q3_REV),
        ["duplicate key", "'K1' at lines 2, 16"],
        id="duplicate-key",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("K2", "three", Q3, Q3_REV),
        ["line 9", "key 'K2'", "option count is not an integer"],
        id="non-integer-num-options",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("K2", "", Q3, Q3_REV),
        ["line 9", "key 'K2'", "option count is not an integer"],
        id="empty-num-options",
    ),
    pytest.param(
        RO_FILE,
        RO_HEADER + GOOD1 + _row("K2", "3", "A. x\nB. y\nC. z", Q3_REV),
        ["line 9", "key 'K2'", "question text is empty"],
        id="no-stem",
    ),
    pytest.param(
        RO_FILE,
        "key,num options,orig alpha,reversed\n" + GOOD1,
        ["missing column(s) ['reversed alpha']"],
        id="missing-column",
    ),
    pytest.param(RO_FILE, RO_HEADER, ["no rows"], id="no-rows"),
    pytest.param(
        "prompts/odd_even.csv",
        "key,num options,num options new,middle alpha,no middle alpha\n"
        + _row("K1", "5", "4.0", _question("Q?", list("vwxyz")), _question("Q?", list("vwyz"))),
        ["line 2", "key 'K1'", "option count is not an integer"],
        id="odd-even-num-options-new",
    ),
]


@pytest.mark.parametrize(("name", "content", "fragments"), MALFORMED)
def test_malformed_rows_name_file_row_and_key(fake_prompt_file, name: str, content: str, fragments: list[str]) -> None:
    path = fake_prompt_file(name, content)
    bias = Path(name).stem
    with pytest.raises(DataError) as err:
        load_rows(bias, "bias")
    msg = str(err.value)
    assert str(path) in msg
    for fragment in fragments:
        assert fragment in msg


def test_well_formed_fake_file_loads_with_start_lines(fake_prompt_file) -> None:
    fake_prompt_file(RO_FILE, RO_HEADER + GOOD1 + _row("K2", "3", Q3, Q3_REV) + GOOD3)
    rows = load_rows("response_order", "bias")
    assert [(r.key, r.line) for r in rows] == [("K1", 2), ("K2", 9), ("K3", 16)]
    assert rows[0].control.stem == "Q?" and rows[0].control.options == ("x", "y", "z")
    assert rows[0].treatment.options == ("z", "y", "x")


# ------------------------------------------------------------------------------ download + cache


def _serve(upstream: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, files: dict[str, bytes]) -> None:
    for rel, payload in files.items():
        dest = upstream.root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(payload)
    monkeypatch.setenv(data.BASE_URL_ENV, upstream.url)


def _cached_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file()] if cache.exists() else []


def test_download_verifies_and_caches(data_dir: Path, upstream, cache_dir: Path, monkeypatch) -> None:
    acq = (data_dir / "biasmonkey" / "prompts" / "acquiescence.csv").read_bytes()
    coded = (data_dir / "biasmonkey" / "all-questions-coded.csv").read_bytes()
    _serve(upstream, monkeypatch, {"prompts/acquiescence.csv": acq, "analysis/all-questions-coded.csv": coded})

    path = resolve("prompts/acquiescence.csv")
    assert upstream.requests == ["/prompts/acquiescence.csv"]
    assert path.is_relative_to(cache_dir) and path.name == "acquiescence.csv"
    assert path.read_bytes() == acq

    # Second resolve and a full load come from the cache: no new request.
    assert resolve("prompts/acquiescence.csv") == path
    assert len(load_rows("acquiescence", "bias")) == 176
    assert upstream.requests == ["/prompts/acquiescence.csv"]

    # The coded-questions file lives under analysis/ upstream.
    coded_path = resolve("all-questions-coded.csv")
    assert upstream.requests[-1] == "/analysis/all-questions-coded.csv"
    assert coded_path.is_relative_to(cache_dir) and coded_path.read_bytes() == coded
    assert sorted(p.name for p in _cached_files(cache_dir)) == ["acquiescence.csv", "all-questions-coded.csv"]


def test_download_with_wrong_content_is_rejected_and_not_cached(upstream, cache_dir: Path, monkeypatch) -> None:
    served = b"key,num options,orig alpha,pos alpha\n"
    _serve(upstream, monkeypatch, {"prompts/acquiescence.csv": served})
    for attempt in (1, 2):  # nothing was cached, so the second call asks the server again
        with pytest.raises(DataError) as err:
            resolve("prompts/acquiescence.csv")
        msg = str(err.value)
        assert "checksum mismatch" in msg and "acquiescence.csv" in msg
        assert hashlib.sha256(served).hexdigest() in msg
        assert data.FILES["prompts/acquiescence.csv"][1] in msg
        assert _cached_files(cache_dir) == []
        assert len(upstream.requests) == attempt


def test_corrupt_cached_file_is_not_trusted(upstream, cache_dir: Path, monkeypatch) -> None:
    # Stand-in content with its sha pinned, so this runs without the real data.
    good = b"pinned content\n"
    monkeypatch.setitem(
        data.FILES, "prompts/acquiescence.csv", ("prompts/acquiescence.csv", hashlib.sha256(good).hexdigest())
    )
    _serve(upstream, monkeypatch, {"prompts/acquiescence.csv": good})
    path = resolve("prompts/acquiescence.csv")
    assert path.read_bytes() == good and len(upstream.requests) == 1

    path.write_bytes(b"tampered\n")  # e.g. a disk error or an older, unverified write
    assert resolve("prompts/acquiescence.csv") == path
    assert path.read_bytes() == good and len(upstream.requests) == 2  # fetched again, re-verified


def test_download_404_is_a_clear_error(upstream, cache_dir: Path, monkeypatch) -> None:
    _serve(upstream, monkeypatch, {})
    with pytest.raises(DataError, match=r"could not download .*/prompts/acquiescence\.csv.*BIASMONKEY_DATA_DIR"):
        resolve("prompts/acquiescence.csv")
    assert _cached_files(cache_dir) == []


def test_unreachable_server_mentions_the_data_dir_variable(cache_dir: Path, monkeypatch) -> None:
    with socket.socket() as s:  # a free port that nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv(data.BASE_URL_ENV, f"http://127.0.0.1:{port}")
    with pytest.raises(DataError) as err:
        load_rows("acquiescence", "bias")
    msg = str(err.value)
    assert f"127.0.0.1:{port}/prompts/acquiescence.csv" in msg
    assert "BIASMONKEY_DATA_DIR" in msg
    assert _cached_files(cache_dir) == []


def test_cached_copy_works_offline(upstream, cache_dir: Path, monkeypatch) -> None:
    good = b"pinned content\n"
    monkeypatch.setitem(
        data.FILES, "prompts/acquiescence.csv", ("prompts/acquiescence.csv", hashlib.sha256(good).hexdigest())
    )
    _serve(upstream, monkeypatch, {"prompts/acquiescence.csv": good})
    path = resolve("prompts/acquiescence.csv")
    shutil.rmtree(upstream.root)  # the server has nothing any more
    monkeypatch.setenv(data.BASE_URL_ENV, "http://127.0.0.1:9")  # and the URL goes nowhere
    assert resolve("prompts/acquiescence.csv") == path
    assert len(upstream.requests) == 1
