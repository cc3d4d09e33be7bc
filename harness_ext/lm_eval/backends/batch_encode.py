"""lm-eval's HF tokenisation of requests, with every distinct string encoded once, many at a time.

lm-eval's `TemplateLM.loglikelihood` encodes each request on its own (`_encode_pair`: the context,
and the context with its continuation), one tokenizer call per string: about 3 s for the few-shot
yes-no suite's 26,400 requests on 2 CPU cores, while a GPU waits. `BatchEncoding`, a base before
`HFLM`, first records which strings lm-eval's own tokenisation will ask for and the arguments its
`tok_encode` passes to the tokenizer (`_EncodeCall`), encodes them in batches of 1,024 (the
tokenizers library spreads a batch over the cores), and then answers each `tok_encode` call from
those encodings: the same tokens as one call at a time (tests/app/test_plan.py,
tests/harness/test_hf_prefix.py). `biasmonkey plan` tokenises the same way.
"""

from __future__ import annotations

from collections.abc import Callable
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
            for start in range(0, len(keys), batch):
                chunk = keys[start : start + batch]
                ids = real([k[0] for k in chunk], **dict(kwargs), return_attention_mask=False)["input_ids"]
                for (string, special, left), encoding in zip(chunk, ids):
                    self._encoded[(string, special, left)] = encoding[-left:] if left else encoding

    def forget_encodings(self) -> None:
        self._encoded.clear()
