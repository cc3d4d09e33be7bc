"""`biasmonkey data fetch|status`: fill the data cache with every pinned upstream file, or list it.

Without BIASMONKEY_DATA_DIR every family reads its pinned files from the cache (downloaded on first
use). `data fetch` fills it at once, so later runs and the tests work offline; `--from DIR` copies
verified files from a local folder laid out like $BIASMONKEY_DATA_DIR instead of downloading them.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from biasmonkey.tasks.cache import cache_root
from biasmonkey.tasks.fetch import DATA_DIR_ENV, PinnedFile, cache_status, fill_cache, pinned_files


def cmd_fetch(args: argparse.Namespace) -> int:
    files = pinned_files()

    def report(f: PinnedFile, what: str) -> None:
        if args.verbose or what != "cached":
            print(f"{f.local_path}: {what}")

    errors = fill_cache(files, source=args.source, report=report)
    print(f"{len(files) - len(errors)} of {len(files)} pinned files verified in {cache_root() / 'data'}")
    return 1 if errors else 0


def cmd_status(args: argparse.Namespace) -> int:
    """The files runs read: those under $BIASMONKEY_DATA_DIR while it is set, else the cache's."""
    folder = os.environ.get(DATA_DIR_ENV)
    status = cache_status(pinned_files(), folder=Path(folder) if folder else None)
    for name, state in status.items():
        print(f"{state:<9} {name}")
    verified = sum(state == "verified" for state in status.values())
    where = f"${DATA_DIR_ENV} ({folder}), where runs read them while it is set" if folder else cache_root() / "data"
    print(f"{verified} of {len(status)} pinned files verified in {where}")
    if verified < len(status):
        print(
            f"put the upstream copies there, or unset {DATA_DIR_ENV} to use the cache (biasmonkey data fetch)"
            if folder
            else "fill the cache with: biasmonkey data fetch"
        )
    return 0 if verified == len(status) else 1


def add_subcommand(subparsers: Any) -> None:
    """Register `data` (with `fetch` and `status`) on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser("data", help="fill or list the cache of pinned upstream data files")
    sub = p.add_subparsers(dest="data_command", required=True)
    fetch = sub.add_parser("fetch", help="download and verify every pinned data file into the cache")
    fetch.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="DIR",
        help="copy verified files from a folder laid out like $BIASMONKEY_DATA_DIR instead of downloading them",
    )
    fetch.add_argument("-v", "--verbose", action="store_true", help="also list the files already cached")
    fetch.set_defaults(func=cmd_fetch)
    status = sub.add_parser(
        "status",
        help="list each pinned data file: verified, corrupt or missing in the cache (in $BIASMONKEY_DATA_DIR when set)",
    )
    status.set_defaults(func=cmd_status)
