"""Attention over a `biasmonkey-hf` forward in chunks of queries, each over the keys it can see.

A prefix-tree forward's keys are its cached positions, then its own row positions in preorder. A
row position sees its ancestors in the row, which come before it, and never a later position, so
a query chunk [s, e) has nothing to see past key `cached + e`. With a custom mask PyTorch's
attention kernels (memory-efficient, math; flash takes no mask) still compute every query against
every key, masked: about half of a row's in-row work is for keys that no query sees. Run per
chunk of `chunk` queries over the keys up to its end, the work follows the triangle (chunks of 128
in a row of 512 leave out three eighths of it); each chunk is transformers' own sdpa attention
(grouped key/value heads, scaling) on its slices, so the numbers are the same up to the kernels'
rounding.

It is model argument `attention_chunk` (0, the default: off; on CPU it brought nothing, on an H100
0.98–1.08× the unchunked time: docs/performance.md). It applies only inside biasmonkey-hf's
prefix-tree forwards, whose 4D masks transformers passes through unchanged, and only where the
model runs sdpa: for their duration the model's config names this attention (`chunked`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward


def _attention(
    chunk: int,
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """sdpa over query chunks: query [batch, heads, positions, dim], key and value [batch, kv
    heads, cached + positions, dim], mask [batch, 1, positions, cached + positions]; the output
    [batch, positions, heads, dim], as transformers' sdpa returns it."""
    positions = query.shape[2]
    if attention_mask is None or attention_mask.dim() != 4 or positions <= chunk:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    cached = key.shape[2] - positions
    outputs = []
    for start in range(0, positions, chunk):
        end = min(start + chunk, positions)
        seen = cached + end
        out, _ = sdpa_attention_forward(
            module,
            query[:, :, start:end],
            key[:, :, :seen],
            value[:, :, :seen],
            attention_mask[:, :, start:end, :seen],
            **kwargs,
        )
        outputs.append(out)
    return torch.cat(outputs, dim=1), None


@functools.cache
def _registered(chunk: int) -> str:
    """The name under which transformers finds sdpa over chunks of `chunk` queries (registered once)."""
    name = f"biasmonkey_sdpa_chunks_of_{chunk}"
    AttentionInterface.register(name, functools.partial(_attention, chunk))
    return name


@contextlib.contextmanager
def chunked(config: Any, chunk: int) -> Iterator[None]:
    """While inside, a model of `config` running sdpa attends in chunks of `chunk` queries (0: as
    before); its attention is named as before afterwards, whatever happened. A config with
    sub-configs (a model of several parts, each naming its own attention) is left alone: naming
    one attention sets it on every part."""
    if chunk <= 0 or config._attn_implementation != "sdpa" or getattr(config, "sub_configs", None):
        yield
        return
    config._attn_implementation = _registered(chunk)
    try:
        yield
    finally:
        config._attn_implementation = "sdpa"
