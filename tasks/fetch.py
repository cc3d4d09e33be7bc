"""Resolve a pinned upstream data file: a local copy, or a verified download kept in the cache.

Every task family keeps its upstream files out of the package. A file is taken from
`$BIASMONKEY_DATA_DIR/<local path>` when that variable is set (it must be there and match its
sha256), otherwise it is downloaded once from its pinned URL, checked against its sha256 and
cached under `cache_root()/data/<cache path>`. A cached copy is re-verified on every use.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from biasmonkey.tasks.cache import cache_root

DATA_DIR_ENV = "BIASMONKEY_DATA_DIR"

log = logging.getLogger(__name__)


class DataError(ValueError):
    """A data file is missing, corrupt or malformed; the message names the file and row."""


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def download(url: str, dest: Path, expected: str, upstream: str) -> None:
    """Fetch url into dest, but only if its sha256 matches: a bad payload never reaches the cache."""
    log.info("downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            payload = resp.read()
    except (urllib.error.URLError, OSError) as err:
        raise DataError(
            f"could not download {url}: {err}. Set {DATA_DIR_ENV} to a local copy of the data to work offline."
        ) from err
    actual = hashlib.sha256(payload).hexdigest()
    if actual != expected:
        raise DataError(
            f"checksum mismatch for {dest.name} downloaded from {url}: sha256 {actual}, expected {expected} "
            f"(upstream {upstream}); not cached"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename, so an interrupted download never leaves a partial file in the cache.
    with tempfile.NamedTemporaryFile(dir=dest.parent, delete=False) as tmp:
        try:
            tmp.write(payload)
        except BaseException:
            tmp.close()
            Path(tmp.name).unlink(missing_ok=True)
            raise
    Path(tmp.name).replace(dest)
