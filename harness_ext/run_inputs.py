"""What a run's numbers depend on that lm-eval's results file does not say, recorded beside it.

lm-eval records the model as it was named (`pretrained=tiny`) and an input file's option as its
path (`data_path=tests.csv`). Two runs written into one folder may so look alike and differ: another
folder `tiny` in another working directory, weights rewritten in place, a tests file edited or
swapped. `biasmonkey run` records, for each results file it writes, digests of those inputs
(`INPUTS_FILE` in the results folder: {results file name: {input: digest}}, earlier entries kept):

- `weights`: the model's identity as the request cache keys it, without the backend and dtype (the
  resolved folder and its files' names, sizes and times; a hub id; a served model's URL and name);
- each input-file option a family declares (`Options.input_files`, e.g. the cognitive `data_path`):
  the file's sha256, `default` when the option was not given; then, where the family reads an
  unpinned file of its own (`Options.default_input`: the cognitive tests copy in
  `$BIASMONKEY_DATA_DIR/cognitive/`), that file's sha256 under "<family>:<option>".

The scanner (`logs.lm_eval_outputs`) reads them back (`recorded_inputs`) and, among outputs of one
folder, model and settings, makes each input that differs a setting of its own (`distinguish`), so
that such runs are two runs in every summary, report and comparison, never one table. Outputs of
runs made without `biasmonkey run` have the input file's path as given, and no weights digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from biasmonkey.tasks.atomic_write import write_text

INPUTS_FILE = "biasmonkey_inputs.json"
DEFAULT = "default"  # an input-file option not given: the family's own data
UNKNOWN = "unknown"  # not recorded (a run made without `biasmonkey run`, or before this record existed)
DIGEST_CHARS = 12


def digest_of(value: Any) -> str:
    """A short sha256 of a JSON-able value (sorted keys)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:DIGEST_CHARS]


def file_digest(path: str | Path) -> str:
    """The sha256 ("sha256:" and its first 12 hex digits) of a file's bytes, wherever it lies; of a
    folder's files (their names within it and their bytes), in name order."""
    path = Path(path)
    sha = hashlib.sha256()
    for part in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
        if part != path:
            sha.update(str(part.relative_to(path)).encode() + b"\0")
        with part.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
    return "sha256:" + sha.hexdigest()[:DIGEST_CHARS]


def default_input_key(family: str, option: str) -> str:
    """The record's key of the file a family's input-file option reads when it is not given."""
    return f"{family}:{option}"


def _read(path: Path) -> dict[str, dict[str, str]]:
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(entries, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in entries.values()
        ):
            raise ValueError("not an object of {results file: {input: digest}}")
        return entries
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{path}: not a readable record of the runs' inputs ({err}); it tells apart runs of other weights "
            "or data written into this folder: restore it, or delete it (those runs then read as one)"
        ) from None


def record_inputs(written: Iterable[Path], inputs: Mapping[str, str]) -> list[Path]:
    """Record `inputs` for each results file a run `written`, in each one's folder; the files written."""
    by_folder: dict[Path, list[str]] = {}
    for path in written:
        by_folder.setdefault(path.parent, []).append(path.name)
    for folder, names in by_folder.items():
        merged = _read(folder / INPUTS_FILE) | {name: dict(inputs) for name in names}
        write_text(folder / INPUTS_FILE, json.dumps(dict(sorted(merged.items())), indent=1) + "\n")
    return [folder / INPUTS_FILE for folder in by_folder]


def recorded_inputs(results: Path) -> dict[str, str]:
    """The inputs recorded for an lm-eval results file ({} when none were)."""
    return dict(_read(results.parent / INPUTS_FILE).get(results.name, {}))


def distinguish(groups: Mapping[Any, list[Mapping[str, str]]]) -> dict[Any, list[str]]:
    """For each group of outputs (one folder, model and settings; each output's inputs, an input it
    does not have left out), the inputs whose values differ within it: each becomes a setting."""
    differing = {}
    for key, members in groups.items():
        names = sorted({name for inputs in members for name in inputs})
        differing[key] = [name for name in names if len({i[name] for i in members if name in i}) > 1]
    return differing
