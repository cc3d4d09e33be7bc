"""Cheap checks of a model before any weights load: a local folder's files, or a hub id's reachability.

A local folder must hold a `config.json` that parses, tokenizer files, and weights that look whole:
a `model.safetensors` whose header parses and whose size matches the header (8 bytes of header
length, the JSON header, then the tensors up to the largest `data_offsets` end), a sharded
checkpoint whose index parses and names only shards that are there (each checked the same way),
or a non-empty `pytorch_model.bin` (sharded: every shard of its index). Nothing is loaded; a
multi-gigabyte checkpoint costs a few small reads.

A hub id must be in the Hugging Face cache, or the Hub must answer one request for its
`config.json`, so that a model that cannot be fetched fails now in one line, not after a minute of
retries inside lm-eval. The request (with huggingface_hub's own lookups before it) runs in a
daemon thread that gets `HUB_DEADLINE` seconds in all: huggingface_hub's timeouts bound each read,
and a Hub (or proxy) that trickles its answer would otherwise hold the run forever. Each failure is
a `ValueError` naming the option, the file and the fix.
"""

from __future__ import annotations

import json
import os
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

HUB_TIMEOUT = 5.0  # seconds for each read of the one request that tells whether the Hub has the model
HUB_DEADLINE = 10.0  # seconds for that check in all
SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PYTORCH_BIN = "pytorch_model.bin"
PYTORCH_INDEX = "pytorch_model.bin.index.json"
MAX_HEADER = 100 * 2**20  # safetensors refuses larger headers too
VOCAB_FILES = ("vocab.json", "vocab.txt", "spiece.model", "sentencepiece.bpe.model")


def read_json(path: Path, flag: str, model: str) -> Any:
    """A JSON file of the model folder, or an error naming the file, line and column."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{flag} {model}: {path.name} is not valid JSON ({err.msg} at line {err.lineno}, column {err.colno}); "
            "fix or re-download the file"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"{flag} {model}: cannot read {path.name} ({err}); fix or re-download the file") from None


def check_config(path: Path, flag: str, model: str) -> None:
    config = read_json(path / "config.json", flag, model)
    if not isinstance(config, dict):
        raise ValueError(f"{flag} {model}: config.json holds no JSON object; fix or re-download it")


def check_tokenizer_files(path: Path, flag: str, model: str) -> None:
    """tokenizer.json, or a sentencepiece/tiktoken model, or tokenizer_config.json with a vocabulary."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (path / name).is_file():
            read_json(path / name, flag, model)
    if (path / "tokenizer.json").is_file() or any(path.glob("*.model")) or any(path.glob("*.tiktoken")):
        return
    if (path / "tokenizer_config.json").is_file() and any((path / name).is_file() for name in VOCAB_FILES):
        return
    raise ValueError(
        f"{flag} {model}: no tokenizer files in that folder (tokenizer.json, tokenizer.model, or "
        "tokenizer_config.json with vocab.json); copy the model's tokenizer files into it"
    )


def check_safetensors(file: Path, flag: str, model: str) -> None:
    """The 8-byte header length, the JSON header, and a file size that holds every tensor."""
    fix = "the file is damaged or truncated; re-download it"
    size = file.stat().st_size
    with file.open("rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise ValueError(f"{flag} {model}: {file.name} has {size} bytes, no safetensors header; {fix}")
        (length,) = struct.unpack("<Q", raw)
        if length > min(MAX_HEADER, size - 8):
            raise ValueError(f"{flag} {model}: {file.name}: header of {length:,} bytes in a {size:,}-byte file; {fix}")
        try:
            header = json.loads(f.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ValueError(f"{flag} {model}: {file.name}: its header is not valid JSON; {fix}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{flag} {model}: {file.name}: its header is not a JSON object; {fix}")
    ends = [t["data_offsets"][1] for k, t in header.items() if k != "__metadata__" and isinstance(t, dict)]
    expected = 8 + length + max(ends, default=0)
    if size != expected:
        raise ValueError(f"{flag} {model}: {file.name} has {size:,} bytes, its header says {expected:,}; {fix}")


def check_index(path: Path, index: str, flag: str, model: str) -> list[Path]:
    """The shards a sharded checkpoint's index names: each must be there."""
    weight_map = read_json(path / index, flag, model)
    weight_map = weight_map.get("weight_map") if isinstance(weight_map, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(f"{flag} {model}: {index} has no weight_map; fix or re-download it")
    shards = [path / name for name in dict.fromkeys(weight_map.values())]
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise ValueError(
            f"{flag} {model}: {index} names {len(missing)} missing shard(s): {', '.join(missing[:3])}"
            f"{' …' if len(missing) > 3 else ''}; download the missing files"
        )
    return shards


def check_weights(path: Path, flag: str, model: str) -> None:
    """Weights transformers would load: safetensors (whole or sharded), else pytorch_model.bin."""
    if (path / SAFETENSORS).is_file():
        check_safetensors(path / SAFETENSORS, flag, model)
    elif (path / SAFETENSORS_INDEX).is_file():
        for shard in check_index(path, SAFETENSORS_INDEX, flag, model):
            check_safetensors(shard, flag, model)
    elif (path / PYTORCH_BIN).is_file() or (path / PYTORCH_INDEX).is_file():
        files = (
            [path / PYTORCH_BIN] if (path / PYTORCH_BIN).is_file() else check_index(path, PYTORCH_INDEX, flag, model)
        )
        empty = [f.name for f in files if f.stat().st_size == 0]
        if empty:
            raise ValueError(f"{flag} {model}: {', '.join(empty)} is empty; re-download it")
    else:
        raise ValueError(
            f"{flag} {model}: no weights in that folder ({SAFETENSORS}, {SAFETENSORS_INDEX} or {PYTORCH_BIN}); "
            "download the model's weights into it"
        )


def check_model_folder(path: Path, model: str, flag: str = "--model", weights: bool = True) -> None:
    """A local model folder that transformers can load (`weights=False`: a tokenizer folder, whose
    config.json, if any, must parse)."""
    if weights or (path / "config.json").is_file():
        check_config(path, flag, model)
    check_tokenizer_files(path, flag, model)
    if weights:
        check_weights(path, flag, model)


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def check_hub_model(model: str, flag: str = "--model") -> None:
    """A hub id: cached, or the Hub answers one bounded request for its config.json."""
    from huggingface_hub import errors, get_hf_file_metadata, hf_hub_url, try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(model, "config.json")
    except errors.HFValidationError as err:  # e.g. "a--b": not a name the Hub takes
        raise ValueError(f"{flag} {model}: not a local folder nor a valid hub id ({err})") from None
    if isinstance(cached, str):
        return
    if _offline():
        raise ValueError(
            f"{flag} {model}: not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
            "download it first or give a local folder"
        )
    try:
        _within_deadline(lambda: get_hf_file_metadata(hf_hub_url(model, "config.json"), timeout=HUB_TIMEOUT))
    except HubDeadline:
        from huggingface_hub import constants

        raise ValueError(
            f"{flag} {model}: not a local folder nor in the Hugging Face cache, and the Hub ({constants.ENDPOINT}) "
            f"did not answer within {HUB_DEADLINE:g} s whether it has the model (its config.json), so the run "
            f"stops before it starts. A model in the cache skips this check: download it first (`hf download "
            f"{model}`), or give a local folder"
        ) from None
    except errors.GatedRepoError:
        raise ValueError(
            f"{flag} {model}: a gated model; accept its licence on the Hub and log in (hf auth login), "
            "or give a local folder"
        ) from None
    except errors.RepositoryNotFoundError:
        raise ValueError(
            f"{flag} {model}: no such model on the Hugging Face Hub (nor a local folder); check the name"
        ) from None
    except errors.EntryNotFoundError:
        raise ValueError(
            f"{flag} {model}: the Hub repository has no config.json; is it a transformers model?"
        ) from None
    except Exception as err:  # connection refused, timeout, DNS, proxy, HTTP 5xx: the Hub cannot be reached
        reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise ValueError(
            f"{flag} {model}: not a local folder, not in the Hugging Face cache, and the Hub cannot be reached "
            f"({reason}); download it first or give a local folder"
        ) from None


class HubDeadline(Exception):
    """The Hub check ran past `HUB_DEADLINE`."""


def _within_deadline(call: Callable[[], object]) -> None:
    """`call()` in a daemon thread, given `HUB_DEADLINE` seconds in all: its exception is raised here,
    and HubDeadline when it has not returned by then (the thread is left to end with the process)."""
    raised: list[BaseException] = []
    finished = threading.Event()

    def run() -> None:
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            raised.append(err)
        finished.set()

    threading.Thread(target=run, name="hub-check", daemon=True).start()
    if not finished.wait(HUB_DEADLINE):
        raise HubDeadline
    if raised:
        raise raised[0]
