"""`biasmonkey data fetch|status` and the list of pinned files behind them. Downloads only ever go
to the local http.server of the `upstream` fixture, with small stand-in files pinned in place of
the real ones."""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from biasmonkey.harness_ext.app.data_command import add_subcommand
from biasmonkey.tasks.cognitive.generation import generate
from biasmonkey.tasks.fetch import cache_status, pinned_files
from biasmonkey.tasks.response_bias import data, published_samples
from biasmonkey.tasks.yesno import data as yesno

# local path -> stand-in content, one file per kind of pinned file
STAND_INS = {
    "biasmonkey/prompts/acquiescence.csv": b"key,num options\n",
    "biasmonkey/samples/llama2-7b/acquiescence.csv": b"key,response,group,num_options\n",
    "yesno/compsynq-data.zip": b"not really a zip",
    "cognitive/scenarios.txt": b"A manager decides.\n",
}


def sha(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="biasmonkey")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def stand_ins(upstream: SimpleNamespace, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Pin the stand-ins in place of every family's files and serve them at their upstream paths."""
    payload = STAND_INS
    prompt, sample = (
        payload["biasmonkey/prompts/acquiescence.csv"],
        payload["biasmonkey/samples/llama2-7b/acquiescence.csv"],
    )
    monkeypatch.setattr(data, "FILES", {"prompts/acquiescence.csv": ("prompts/acquiescence.csv", sha(prompt))})
    monkeypatch.setattr(published_samples, "SHA256", {"llama2-7b/acquiescence.csv": sha(sample)})
    spec = yesno.ZipSpec("compsynq-data.zip", sha(payload["yesno/compsynq-data.zip"]), b"pass")
    monkeypatch.setattr(yesno, "ZIPS", {"comps": spec})
    monkeypatch.setattr(generate, "SCENARIOS_URL", f"{upstream.url}/cognitive/data/scenarios.txt")
    monkeypatch.setattr(generate, "SCENARIOS_SHA256", sha(payload["cognitive/scenarios.txt"]))
    monkeypatch.setenv(data.BASE_URL_ENV, f"{upstream.url}/bm")
    monkeypatch.setenv(yesno.BASE_URL_ENV, f"{upstream.url}/yn")
    served = {
        "bm/prompts/acquiescence.csv": payload["biasmonkey/prompts/acquiescence.csv"],
        "bm/results/llama2-7b/csv/acquiescence.csv": payload["biasmonkey/samples/llama2-7b/acquiescence.csv"],
        "yn/compsynq-data.zip": payload["yesno/compsynq-data.zip"],
        "cognitive/data/scenarios.txt": payload["cognitive/scenarios.txt"],
    }
    for path, content in served.items():
        (upstream.root / path).parent.mkdir(parents=True, exist_ok=True)
        (upstream.root / path).write_bytes(content)
    return SimpleNamespace(upstream=upstream, cache=cache_dir, served=served)


def test_every_family_pins_its_files_once() -> None:
    files = pinned_files()
    # 19 prompt files, 9 models × 17 released sample files, 5 yes-no zips, the cognitive scenarios
    assert len(files) == 19 + 9 * 17 + 5 + 1
    assert len({f.local_path for f in files}) == len({f.cache_path for f in files}) == len(files)
    assert all(re.fullmatch(r"[0-9a-f]{64}", f.sha256) and f.url.startswith("https://") for f in files)


def test_fetch_fills_the_cache_where_every_resolver_finds_it(stand_ins: SimpleNamespace, capsys) -> None:
    assert cli("data", "status") == 1
    out = capsys.readouterr().out
    assert out.count("missing   ") == 4 and "0 of 4 pinned files verified" in out and "biasmonkey data fetch" in out
    assert cli("data", "fetch") == 0
    assert "4 of 4 pinned files verified" in capsys.readouterr().out
    assert sorted(stand_ins.upstream.requests) == sorted(f"/{path}" for path in stand_ins.served)
    assert cli("data", "status") == 0
    assert capsys.readouterr().out.count("verified  ") == 4
    # The families' own resolvers take the cached copies: the same paths, no new download.
    cached = {f.local_path: f.cached() for f in pinned_files()}
    assert all(path.is_relative_to(stand_ins.cache) for path in cached.values())
    assert data.resolve("prompts/acquiescence.csv") == cached["biasmonkey/prompts/acquiescence.csv"]
    sample = published_samples.resolve_sample("llama2-7b", "acquiescence.csv")
    assert sample == cached["biasmonkey/samples/llama2-7b/acquiescence.csv"]
    assert yesno.zip_path("comps") == cached["yesno/compsynq-data.zip"]
    assert generate.read_scenarios(generate.PUBLISHED_SCENARIOS) == ["A manager decides."]
    assert cli("data", "fetch") == 0  # nothing left to download
    assert len(stand_ins.upstream.requests) == 4


def test_a_bad_download_is_not_cached_and_fails_the_fetch(stand_ins: SimpleNamespace, capsys) -> None:
    (stand_ins.upstream.root / "yn" / "compsynq-data.zip").write_bytes(b"another version")
    assert cli("data", "fetch") == 1
    out = capsys.readouterr().out
    assert "yesno/compsynq-data.zip: error: checksum mismatch" in out and "3 of 4 pinned files verified" in out
    assert cache_status(pinned_files())["yesno/compsynq-data.zip"] == "missing"


def test_a_corrupt_cached_copy_is_reported_and_replaced(stand_ins: SimpleNamespace, capsys) -> None:
    assert cli("data", "fetch") == 0
    zip_file = next(f for f in pinned_files() if f.local_path.startswith("yesno/")).cached()
    zip_file.write_bytes(b"bit rot")
    assert cli("data", "status") == 1
    assert "corrupt   yesno/compsynq-data.zip" in capsys.readouterr().out
    assert cli("data", "fetch") == 0
    assert zip_file.read_bytes() == STAND_INS["yesno/compsynq-data.zip"]


def test_fetch_from_a_local_folder_copies_verified_files_only(
    stand_ins: SimpleNamespace, tmp_path: Path, capsys
) -> None:
    local = tmp_path / "shared"
    for path, content in STAND_INS.items():
        (local / path).parent.mkdir(parents=True, exist_ok=True)
        (local / path).write_bytes(content)
    (local / "cognitive" / "scenarios.txt").write_bytes(b"edited\n")
    assert cli("data", "fetch", "--from", str(local)) == 1
    out = capsys.readouterr().out
    assert out.count(f"copied from {local}") == 3
    assert "cognitive/scenarios.txt: error: checksum mismatch" in out
    assert stand_ins.upstream.requests == []  # a copy that is there but wrong is not downloaded instead
    assert list(cache_status(pinned_files()).values()).count("verified") == 3


def test_status_lists_the_data_dir_while_it_is_set(
    stand_ins: SimpleNamespace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Runs read $BIASMONKEY_DATA_DIR's copies while it is set (checked against their sha256), not the
    cache's: the status lists those, and the hint does not send an offline machine to a download."""
    local = tmp_path / "shared"
    for path, content in STAND_INS.items():
        (local / path).parent.mkdir(parents=True, exist_ok=True)
        (local / path).write_bytes(content)
    monkeypatch.setenv("BIASMONKEY_DATA_DIR", str(local))
    assert cli("data", "status") == 0
    out = capsys.readouterr().out
    assert out.count("verified  ") == 4 and f"4 of 4 pinned files verified in $BIASMONKEY_DATA_DIR ({local})" in out
    (local / "cognitive" / "scenarios.txt").write_bytes(b"edited\n")
    (local / "yesno" / "compsynq-data.zip").unlink()
    assert cli("data", "status") == 1
    out = capsys.readouterr().out
    assert "corrupt   cognitive/scenarios.txt" in out and "missing   yesno/compsynq-data.zip" in out
    assert "2 of 4 pinned files verified" in out and "unset BIASMONKEY_DATA_DIR to use the cache" in out
    assert stand_ins.upstream.requests == []
