"""The floor the benchmarks compare against (not a test): one batched forward per distinct prompt,
left-padded, the LM head at the last position only; what any backend that runs every distinct
prompt whole must at least do."""

from __future__ import annotations

import time

import torch
from lm_eval.models.huggingface import HFLM


def last_position_forward(lm: HFLM, contexts: list[tuple[int, ...]], batch_size: int) -> float:
    """Seconds for batched forwards over `contexts`, the LM head at the last position only."""
    tok = lm.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ordered = sorted(contexts, key=len, reverse=True)
    synchronize(lm.device)
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(ordered), batch_size):
            batch = ordered[i : i + batch_size]
            width = max(map(len, batch))
            ids = torch.tensor([[pad] * (width - len(x)) + list(x) for x in batch], device=lm.device)
            mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=lm.device)
            logits = lm.model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits
            torch.log_softmax(logits[:, -1], dim=-1)
    synchronize(lm.device)
    return time.perf_counter() - start


def synchronize(device: torch.device | str) -> None:
    """Wait for the device's queued work (a no-op off CUDA), so that wall times are the work's."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
