"""Resolve a pinned upstream data file: a local copy, or a verified download kept in the cache.

Every task family keeps its upstream files out of the package. A file is taken from
`$BIASMONKEY_DATA_DIR/<local path>` when that variable is set (it must be there and match its
sha256), otherwise it is downloaded once from its pinned URL, checked against its sha256 and
cached under `cache_root()/data/<cache path>`. A cached copy is re-verified on every use.

Downloading, checking and caching are pooch's (`pooch.retrieve` with the pinned sha256 as its
`known_hash`): it streams into a temporary file beside the cached one and moves it into place only
when the hash matches, so an interrupted or wrong download never reaches the cache, and it
replaces a cached copy whose hash no longer matches. This module adds the error messages
(`DataError`: the file, where it came from, the fix) and the `$BIASMONKEY_DATA_DIR` path.

`pinned_files()` lists every pinned file of every family; `fill_cache` downloads (or copies from a
local folder) and verifies them all into the cache, and `cache_status` says which are there
(`biasmonkey data fetch` / `biasmonkey data status`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pooch

from biasmonkey.tasks.atomic_write import make_folder, write_bytes
from biasmonkey.tasks.cache import CACHE_HINT, cache_root

DATA_DIR_ENV = "BIASMONKEY_DATA_DIR"
TIMEOUT_S = 60  # per request (connecting, then each read)


class DataError(ValueError):
    """A data file is missing, corrupt or malformed; the message names the file and row."""


def sha256_of(path: Path) -> str:
    return pooch.file_hash(str(path), alg="sha256")


def verify(path: Path, expected: str, origin: str, upstream: str) -> Path:
    """`path` if its sha256 is `expected`, else a DataError naming both hashes."""
    actual = sha256_of(path)
    if actual != expected:
        raise DataError(
            f"checksum mismatch for {path} ({origin}): sha256 {actual}, expected {expected} "
            f"(upstream {upstream}); the file is corrupt or a different version"
        )
    return path


def fetch_pinned(local_path: str, cache_path: str, url: str, sha256: str, upstream: str) -> Path:
    """Local path of a verified copy of one pinned upstream file.

    local_path: where the file sits under $BIASMONKEY_DATA_DIR, e.g. "yesno/compsynq-data.zip".
    cache_path: where a download is kept under `cache_root()/data`; include the upstream
        commit, e.g. "yesno/48591bb20f6d/compsynq-data.zip".
    url: the download URL at the pinned commit. sha256: the file's expected hash.
    upstream: "owner/repo@commit" (or any short origin), quoted in error messages.
    """
    local_dir = os.environ.get(DATA_DIR_ENV)
    if local_dir:
        path = Path(local_dir) / local_path
        if not path.is_file():
            raise DataError(
                f"missing data file {path} ({DATA_DIR_ENV}={local_dir}); expected a copy of {url} ({upstream}) there"
            )
        return verify(path, sha256, f"from {DATA_DIR_ENV}", upstream)
    path = cache_root() / "data" / cache_path
    if path.is_file() and sha256_of(path) == sha256:
        return path
    download(url, path, sha256, upstream)
    return path


class _HashingDownloader:
    """pooch's HTTP downloader that also notes the sha256 of what it fetched, for the error message
    when pooch's own check refuses it (a pooch downloader: called with the URL and the temporary file)."""

    def __init__(self) -> None:
        self.http = pooch.HTTPDownloader(progressbar=False, timeout=TIMEOUT_S)
        self.sha256: str | None = None

    def __call__(self, url: str, output_file: str, pooch_obj: pooch.Pooch | None) -> None:
        self.http(url, output_file, pooch_obj)
        self.sha256 = sha256_of(Path(output_file))


def download(url: str, dest: Path, expected: str, upstream: str) -> None:
    """Fetch url into dest, but only if its sha256 matches: a bad payload never reaches the cache."""
    downloader = _HashingDownloader()
    try:
        pooch.retrieve(url, known_hash=f"sha256:{expected}", fname=dest.name, path=dest.parent, downloader=downloader)
    except (ValueError, OSError) as err:
        # pooch's hash check raises ValueError (the temporary file is already deleted); requests' errors
        # (connection, HTTP status, timeout, a malformed URL) are OSErrors, as are disk errors
        if downloader.sha256 is not None and downloader.sha256 != expected:
            raise DataError(
                f"checksum mismatch for {dest.name} downloaded from {url}: sha256 {downloader.sha256}, "
                f"expected {expected} (upstream {upstream}); not cached"
            ) from err
        raise DataError(
            f"could not download {url}: {err}. Set {DATA_DIR_ENV} to a local copy of the data to work offline."
        ) from err


def _write_atomic(dest: Path, payload: bytes) -> None:
    """Write then rename, so an interrupted write never leaves a partial file in the cache."""
    write_bytes(make_folder(dest.parent, CACHE_HINT) / dest.name, payload, CACHE_HINT)


# ---------------------------------------------------------------------------- every pinned file


@dataclass(frozen=True)
class PinnedFile:
    """One pinned upstream file, with the same paths and URL that its family's resolver uses."""

    local_path: str  # under $BIASMONKEY_DATA_DIR, e.g. "yesno/compsynq-data.zip"
    cache_path: str  # under cache_root()/data, e.g. "yesno/48591bb20f6d/compsynq-data.zip"
    url: str
    sha256: str
    upstream: str  # "owner/repo@commit", for messages

    def fetch(self) -> Path:
        """A verified local copy (`fetch_pinned`)."""
        return fetch_pinned(self.local_path, self.cache_path, self.url, self.sha256, self.upstream)

    def cached(self, cache_dir: Path | None = None) -> Path:
        """Where the file is kept in the cache (`cache_root(cache_dir)/data/<cache path>`)."""
        return cache_root(cache_dir) / "data" / self.cache_path


def pinned_files() -> list[PinnedFile]:
    """Every pinned file of every task family (each family's `data_files`), with the download URLs
    as currently configured (the families' URL overrides apply)."""
    from biasmonkey.tasks.families import FAMILIES  # imported here: the families import this module

    return [f for family in FAMILIES.values() for f in family.data_files()]


def cache_status(files: list[PinnedFile], cache_dir: Path | None = None, folder: Path | None = None) -> dict[str, str]:
    """local_path -> "verified" (cached, checksum matches), "corrupt" (cached, mismatch) or "missing";
    with `folder` (laid out like $BIASMONKEY_DATA_DIR), of the copies there instead of the cache."""
    status = {}
    for f in files:
        path = folder / f.local_path if folder is not None else f.cached(cache_dir)
        status[f.local_path] = (
            "missing" if not path.is_file() else "verified" if sha256_of(path) == f.sha256 else "corrupt"
        )
    return status


def fill_cache(
    files: list[PinnedFile], source: Path | None = None, report: Callable[[PinnedFile, str], None] | None = None
) -> list[str]:
    """Put a verified copy of every file in the cache: kept if already there, else copied from
    `source` (a folder laid out like $BIASMONKEY_DATA_DIR) when it holds a verified copy, else
    downloaded. `report(file, what)` hears about each file; returns the errors (empty: all cached)."""
    errors = []
    for f in files:
        dest = f.cached()
        try:
            if dest.is_file() and sha256_of(dest) == f.sha256:
                what = "cached"
            elif source is not None and (source / f.local_path).is_file():
                payload = verify(source / f.local_path, f.sha256, f"copy in {source}", f.upstream).read_bytes()
                _write_atomic(dest, payload)
                what = f"copied from {source}"
            else:
                download(f.url, dest, f.sha256, f.upstream)
                what = "downloaded"
        except DataError as err:
            errors.append(str(err))
            what = f"error: {err}"
        if report is not None:
            report(f, what)
    return errors
