"""`biasmonkey plan --calibrate`: the chosen model's seconds per prompt token on this machine,
measured on the plan's own prompts, so that the plan's token counts become time estimates.

A few of the distinct prompts (spread over their lengths) go through the model in batches, the LM
head at the last position only, a few rounds, the fastest kept: seconds ÷ prompt tokens. An
estimate multiplies a backend's prompt tokens by it: padding, per-sequence overhead and generated
tokens (sample and generate modes) are not in it.

On CUDA the model runs in bfloat16 (as GPU runs do) with more prompts per batch, one warm-up round
first, and the clock stops when the device has finished (its work is queued asynchronously)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    seconds_per_token: float
    prompts: int  # prompts timed per round
    tokens: int  # their tokens
    rounds: int
    device: str
    dtype: str = "float32"


def sample_prompts(contexts: Sequence[Sequence[int]], count: int) -> list[tuple[int, ...]]:
    """`count` prompts spread evenly over the distinct prompts sorted by length (all if fewer)."""
    ordered = sorted({tuple(c) for c in contexts if c}, key=len)
    if len(ordered) <= count:
        return ordered
    step = (len(ordered) - 1) / (count - 1) if count > 1 else 0
    return [ordered[round(i * step)] for i in range(count)]


def calibrate(
    model: str,
    contexts: Sequence[Sequence[int]],
    device: str = "cpu",
    prompts: int = 16,
    batch_size: int = 8,
    rounds: int = 3,
) -> Calibration:
    """Time the model (float32; bfloat16 on CUDA) on a sample of `contexts`; an error names the model
    when it cannot load."""
    import torch
    from transformers import AutoModelForCausalLM

    cuda = torch.device(device).type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    warmup = 1 if cuda else 0  # rounds not timed
    if cuda:  # a GPU needs wide batches to be timed as a run uses it
        prompts, batch_size = max(prompts, 128), max(batch_size, 32)
    sample = sample_prompts(contexts, prompts)
    if not sample:
        raise ValueError("--calibrate: the plan has no prompt to time")
    try:
        lm = AutoModelForCausalLM.from_pretrained(model, dtype=dtype).to(device).eval()
    except (OSError, ValueError) as err:
        raise ValueError(f"--calibrate: cannot load the model {model!r} ({err})") from err
    pad = lm.config.pad_token_id if lm.config.pad_token_id is not None else 0
    batches = []  # on the device before the clock starts: only the model is timed
    for i in range(0, len(sample), batch_size):
        batch = sample[i : i + batch_size]
        width = max(map(len, batch))
        ids = torch.tensor([list(x) + [pad] * (width - len(x)) for x in batch], device=device)
        mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in batch], device=device)
        batches.append((ids, mask))
    best = float("inf")
    with torch.no_grad():
        for round_ in range(warmup + rounds):
            start = time.perf_counter()
            for ids, mask in batches:
                lm(input_ids=ids, attention_mask=mask, logits_to_keep=1)
            if cuda:
                torch.cuda.synchronize(device)
            if round_ >= warmup:
                best = min(best, time.perf_counter() - start)
    tokens = sum(map(len, sample))
    return Calibration(best / tokens, len(sample), tokens, rounds, device, str(dtype).removeprefix("torch."))
