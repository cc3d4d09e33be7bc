"""Rows per forward for `batch_size=auto` (and `auto:N`) in `biasmonkey-hf`, with no probe forward.

lm-eval's own detection runs five forwards of `max_batch_size` sequences with full-vocabulary
logits on every call (on a 1.7B model about 3.4 s, more than the whole few-shot yes-no suite).
This backend's forwards are rows of at most `row_tokens` positions whose LM head runs only at the
scored positions, so their memory is known from the model's shape: per row position the kept
keys/values of every layer, one layer's activations and the attention mask, plus full-vocabulary
log-probabilities at the scored positions. The rows per forward are what fits in half the free
memory, between 1 and `max_batch_size`.
"""

from __future__ import annotations

import os

import torch

# Share of the free memory the forwards may take (the estimate leaves out allocator fragmentation).
MEMORY_SHARE = 0.5


def free_memory(device: torch.device) -> int:
    """Bytes free for new tensors on `device` (CUDA: the driver's free memory plus PyTorch's cached
    blocks; elsewhere the machine's available memory)."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def row_bytes(config: object, dtype: torch.dtype, width: int, depth: int, scored: int) -> int:
    """Bytes one row of `width` positions over a cached prefix of `depth` needs in a forward that
    scores `scored` of its positions."""
    size = torch.finfo(dtype).bits // 8 if dtype.is_floating_point else 4
    hidden = config.hidden_size
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    layers = config.num_hidden_layers
    inner = getattr(config, "intermediate_size", None) or 4 * hidden
    kept = 2 * layers * kv_heads * head_dim * size  # keys and values of every layer
    # one layer at a time: residual, norm, attention output, queries/keys/values, the MLP's three
    activations = (4 * hidden + (heads + 2 * kv_heads) * head_dim + 3 * inner) * size
    mask = (depth + width) * (1 + size)  # the boolean mask and its additive form
    logits = scored * config.vocab_size * (size + 4 + 4)  # logits, float32 copy, log-softmax
    return (depth + width) * kept + width * (2 * activations + mask) + logits


def auto_rows(config: object, dtype: torch.dtype, device: torch.device, width: int, scored: int, most: int) -> int:
    """Rows of `width` positions, `scored` of them scored, that fit in `MEMORY_SHARE` of the free
    memory: between 1 and `most`. (The backend's forwards hold at most rows × `width` positions,
    cached prefixes included, so no prefix depth enters.)"""
    fit = int(MEMORY_SHARE * free_memory(device) // row_bytes(config, dtype, width, 0, scored))
    return max(1, min(most, fit))
