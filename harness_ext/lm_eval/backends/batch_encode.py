"""lm-eval's HF tokenisation of requests, with every distinct string encoded once, many at a time.

lm-eval's `TemplateLM.loglikelihood` encodes each request on its own (`_encode_pair`: the context,
and the context with its continuation), one tokenizer call per string: about 3 s for the few-shot
yes-no suite's 26,400 requests on 2 CPU cores, while a GPU waits. `BatchEncoding`, a base before
`HFLM`, first records which strings lm-eval's own tokenisation will ask for and the arguments its
`tok_encode` passes to the tokenizer (`_EncodeCall`), encodes them in batches of up to 1,024,
and then answers each `tok_encode` call from those encodings: the same tokens as one call at a
time (tests/app/test_plan.py, tests/harness/test_hf_prefix.py). `biasmonkey plan` tokenises the
same way.

The tokenizers library spreads a batch over the cores only where TOKENIZERS_PARALLELISM allows,
and lm-eval's command line turns it off (to keep forked processes safe). So the batches go to a
pool of threads, one per core (the library lets go of Python's lock while it encodes). With the
prefix token read once per call, that took the few-shot yes-no suite's tokenising and call from
3.7 s to 2.1 s on an H100 machine's 16 cores (the 1.7B model's call itself about 0.5 s).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lm_eval.models.huggingface import HFLM

Key = tuple[str, Any, Any]  # (string, add_special_tokens, left_truncate_len)


class _EncodeCall:
    """A stand-in tokenizer for `HFLM.tok_encode` calls: it keeps the arguments of the last `encode`
    call that lm-eval makes (all else is the real tokenizer's), so the call can be made in a batch.
    The real tokenizer's attributes and decodings are read once (lm-eval decodes the prefix token
    for every string it encodes: 0.15 s for the few-shot yes-no suite's 15,839 strings)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.kwargs: dict[str, Any] = {}
        self._decoded: dict[tuple, str] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.tokenizer, name)
        setattr(self, name, value)
        return value

    def decode(self, ids: Any, **kwargs: Any) -> str:
        key = (tuple(ids) if isinstance(ids, list) else ids, tuple(sorted(kwargs.items())))
        if key not in self._decoded:
            self._decoded[key] = self.tokenizer.decode(ids, **kwargs)
        return self._decoded[key]

    def encode(self, string: str, **kwargs: Any) -> list[int]:
        self.kwargs = kwargs
        return []


class BatchEncoding:
    """`tok_encode` answered from encodings made in batches by `prefill` (see the module docstring)."""

    tokenizer: Any
    _wanted: dict[Key, None] | None = None  # while `prefill` records

    @property
    def _encoded(self) -> dict[Key, list[int]]:
        return self.__dict__.setdefault("_encodings", {})

    def tok_encode(self, string: str, add_special_tokens: bool | None = None, **kwargs: Any) -> list[int]:
        key = (string, add_special_tokens, kwargs.get("left_truncate_len"))
        if key not in self._encoded:
            if self._wanted is not None:
                self._wanted[key] = None
                return [-1]  # a placeholder token, for lm-eval code that looks at the first one
            self._encoded[key] = super().tok_encode(string, add_special_tokens=add_special_tokens, **kwargs)  # type: ignore[misc]
        return self._encoded[key]

    def prefill(self, ask: Callable[[], Any], batch: int = 1024) -> None:
        """Encode, in batches, every string that `ask()` (lm-eval's tokenisation of some requests)
        wants: each call's `encode` arguments are lm-eval's own (recorded by running HFLM.tok_encode
        on a stand-in tokenizer), grouped and sent as one batch."""
        self._wanted = {}
        try:
            ask()
        finally:
            wanted, self._wanted = self._wanted, None
        groups: dict[tuple, list[Key]] = {}
        real = self.tokenizer
        self.tokenizer = call = _EncodeCall(real)
        try:
            for key in wanted:
                HFLM.tok_encode(self, key[0], add_special_tokens=key[1])  # type: ignore[arg-type]
                groups.setdefault(tuple(sorted(call.kwargs.items())), []).append(key)
        finally:
            self.tokenizer = real
        for kwargs, keys in groups.items():
            ids = encode_in_threads(real, [k[0] for k in keys], dict(kwargs), batch)
            for (string, special, left), encoding in zip(keys, ids):
                self._encoded[(string, special, left)] = encoding[-left:] if left else encoding
        self.__dict__["_prefix_id"] = super().prefix_token_id  # type: ignore[misc]

    @property
    def prefix_token_id(self) -> int:
        """lm-eval's, read once while the encodings are held: each reading goes through the
        tokenizer's special-token attributes (20 µs; lm-eval reads it twice for every request
        without context, 0.5 s for the few-shot yes-no suite)."""
        held = self.__dict__.get("_prefix_id")
        return held if held is not None else super().prefix_token_id  # type: ignore[misc]

    def forget_encodings(self) -> None:
        self._encoded.clear()
        self.__dict__.pop("_prefix_id", None)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def encode_in_threads(tokenizer: Any, strings: Sequence[str], kwargs: dict[str, Any], batch: int) -> list[list[int]]:
    """`tokenizer(strings, **kwargs)["input_ids"]` in batches of at most `batch`, one thread per core.
    The first batch goes alone: a fast tokenizer's first call sets its truncation and padding state,
    which later calls with the same arguments only read (changing it while another thread encodes
    fails with "Already borrowed")."""

    def encode(chunk: Sequence[str]) -> list[list[int]]:
        return tokenizer(list(chunk), **kwargs, return_attention_mask=False)["input_ids"]

    workers = min(cores(), 16)
    size = max(1, min(batch, -(-len(strings) // workers)))
    chunks = [strings[start : start + size] for start in range(0, len(strings), size)]
    if not chunks:
        return []
    first = encode(chunks[0])
    if len(chunks) == 1 or workers == 1:
        return first + [ids for chunk in chunks[1:] for ids in encode(chunk)]
    with ThreadPoolExecutor(workers, thread_name_prefix="biasmonkey-encode") as pool:
        return first + [ids for part in pool.map(encode, chunks[1:]) for ids in part]
