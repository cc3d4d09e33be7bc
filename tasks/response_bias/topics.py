"""ATP topic flags of the survey questions, from the upstream `all-questions-coded.csv`.

The file (pinned in `biasmonkey.tasks.response_bias.data`) codes each question key with three
0/1 topic columns; a question may carry several topics or none. Records are matched to it by
their question key; keys the file does not list are counted as "not coded" and left out of the
topic rows (never guessed).
"""

from __future__ import annotations

import csv
from pathlib import Path

CODED_FILE = "all-questions-coded.csv"
TOPICS = ("Personal and social identity", "Science and technology", "National / political issues")
NO_TOPIC = "no topic flag"


def load_topics(path: Path | None = None) -> dict[str, tuple[str, ...]]:
    """{question key: its topics (NO_TOPIC alone when none is flagged)}; errors name file and row."""
    if path is None:
        from biasmonkey.tasks.response_bias.data import resolve

        path = resolve(CODED_FILE)
    topics: dict[str, tuple[str, ...]] = {}
    with Path(path).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("key", *TOPICS) if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}")
        for row_no, row in enumerate(reader, 2):
            flags = {}
            for topic in TOPICS:
                value = (row[topic] or "").strip()
                if value not in ("0", "1"):
                    raise ValueError(f"{path}, row {row_no}: topic flag {topic!r} is {value!r}, expected 0 or 1")
                flags[topic] = value == "1"
            if row["key"] in topics:
                raise ValueError(f"{path}, row {row_no}: duplicate key {row['key']!r}")
            topics[row["key"]] = tuple(t for t in TOPICS if flags[t]) or (NO_TOPIC,)
    return topics
