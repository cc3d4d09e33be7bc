"""Text files a user gives (CSV, JSON, YAML, scenario lists): read as UTF-8, a leading BOM (Excel's
"CSV UTF-8") accepted, and anything else an error naming the file, the byte and its line."""

from __future__ import annotations

import csv
import io
from pathlib import Path


def read_utf8(path: Path) -> str:
    """The text of a user's file: UTF-8, a leading BOM (Excel's "CSV UTF-8") dropped; anything
    else is a ValueError naming the file and the line of the first bad byte. Line ends are kept as
    they are (the csv module wants them untranslated)."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ValueError(
            f"{path}: not UTF-8 text (byte {raw[err.start]:#04x} on line {line}); save it as UTF-8"
        ) from None


def read_csv(path: Path) -> csv.DictReader[str]:
    """A DictReader over a user's CSV file, read with `read_utf8`."""
    return csv.DictReader(io.StringIO(read_utf8(path), newline=""))
