"""`--model biasmonkey-hf`: lm-eval's HF backend computing each distinct prompt prefix once.

Stock `--model hf` runs one sequence per (context, continuation) request unless every
continuation of a context is a single token (its logits cache groups requests by context + all
but the last continuation token). The cognitive-bias tasks score multi-token labels ("Option 1:"
… "Option 11:", 7 or 11 per prompt), so there it runs about eight sequences per prompt; and every
suite's prompts share long prefixes (instructions, few-shot examples), which it runs again for
each prompt.

This backend takes the same arguments as `hf` and returns the same (log-likelihood, is_greedy)
pairs, with compute in proportion to the distinct prompt tokens:

1. The token sequences context + continuation[:-1] of all requests form one prefix tree
   (prompt_trie.py): every distinct prefix is one node. A continuation's token j is scored at the
   node of context + continuation[:j] (j = 0: the context's last node).
2. The tree is cut into rows of at most `row_tokens` nodes (default 512), each over the cached
   keys/values of an anchor node's path: small subtrees are packed whole; a larger subtree goes
   in with its heaviest path (its shared prefix) and as many side branches as fit, and the
   keys/values of that path are kept for the rows of what did not fit. A 4D attention mask lets
   each node see the anchor's path and its own ancestors in the row only; position ids are the
   nodes' depths; the LM head runs only at the nodes that score a token (`logits_to_keep`). So
   every tree node goes through the model exactly once.
3. Rows whose anchor is computed are batched, widest first: `batch_size` rows per forward, more
   when rows are short (up to batch_size * row_tokens tokens, prefixes included), fewer where a
   narrower row would pad the forward by more than 10% of its tokens (rows of a forward are
   padded to its widest; a forward of at most row_tokens positions takes any row). Kept paths
   are freed when the rows below them are done. While they hold `prefix_cache_tokens` tokens of
   keys/values or more (default 16384), rows that would keep more wait while other rows can
   run, else the deepest row runs alone; so the kept keys/values stay within that limit plus
   one batch's paths plus one context's length. With `batch_size=auto` (or `auto:N`) the rows
   per forward are estimated once per call from the rows' shape and the free memory
   (auto_batch.py), not by lm-eval's full-vocabulary probe. With `pack_rows` (default "auto":
   on an accelerator, not on CPU) a batch row (a `_Lane`) holds several planned rows side by
   side, each over its own anchor's path, with the union of those paths as its cache: the
   partial rows that planning leaves under each anchor share forwards instead of running in
   narrow ones of their own (few-shot yes-no: 4 forwards instead of 12); a forward that no
   other would follow may then pad by one row's positions more than 10% rather than leave rows
   for a forward of their own (on a GPU each has a fixed cost).
4. Each request's answer goes to lm-eval's request cache (`--use_cache`) as soon as the scores of
   the forward that scores its last token are read: once the next forward is queued, or when that
   next forward fails; so a run that fails later resumes without recomputing it. A forward's
   answers go in with one commit (request_cache.py), not one commit per request. The host's work
   overlaps the device's: inputs go to the device from pinned memory, queued without waiting
   (`_to_device`), and scores come back through an event. A log-likelihood that is not finite (a
   broken model) is an `InvalidLogprobs` error naming the request instead, raised before it is
   cached.

lm-eval's tokenisation of the requests reads encodings made in batches of distinct strings
(batch_encode.py): the same tokens as one call at a time.

Model arguments besides `hf`'s: `row_tokens`, `prefix_cache_tokens`, `pack_rows`, `prefix_sharing` (True;
False runs each distinct context whole in one pass, scoring only its last position, and sends
multi-token continuations to the stock code), `warm_up`, `fuse_norms`, `attention_chunk` and
`allow_truncation` (False; below).

`warm_up` (default "auto": on CUDA, where a process loads each kernel at its first launch) runs
two forwards like a call's in a thread as soon as the model is made (warm_up.py), while lm-eval
builds its tasks and tokenises, so that the first call does not pay for those first launches; the
call waits for it first. Its answers go nowhere and it leaves the counters at zero.

`fuse_norms` (default "auto": on CUDA) runs the model's RMSNorm modules as PyTorch's one-kernel
`F.rms_norm` during this path's forwards, where their class computes the same (fused_norms.py: a
probe decides; in bfloat16 a norm's output may differ by a unit in the last place).

`attention_chunk` (default 0: off) runs a forward's attention in chunks of that many queries, each
over the keys up to its last position, which is all that a position in a prefix-tree row sees
(chunked_attention.py): the same numbers up to the kernels' rounding, for the in-row work that
the mask hides.

Requests that do not fit the model's context (context + continuation[:-1] of a log-likelihood,
a generation's context + `max_gen_toks`) are an error (`context.ContextTooLong`) before any
forward, unless the model argument `allow_truncation=true` is given: then they go to the stock
code, which cuts them from the left, and their count is logged (`truncation`, a `context.Cuts`).

Requests this path does not cover go, unchanged, to the stock code (`HFLM._loglikelihood_tokens`):
requests whose context + continuation do not fit the model's window (allowed truncation),
rolling-window requests (`loglikelihood_rolling`), seq2seq models, models split across devices
(`parallelize=True`, a device map, offloaded weights: logged once), and, on
models whose attention takes no custom mask (flash or flex attention, sliding-window or other
non-standard cache layers), multi-token continuations (single-token ones then run one pass per
distinct context, without sharing).

transformers: the cache goes to the model as `cache=` (transformers >= 5.24), else as
`past_key_values=` (5.21 to 5.23; renamed there, the old name goes in 5.40). Requires >= 5.21
(a 2D `logits_to_keep`).

Counters, cumulative since the model was created or `reset_counters()` was called, logged in
one line at the end of each batch of requests (lm-eval sends all of a run's at once):

- `distinct_contexts`: distinct contexts scored by this path;
- `context_tokens`: their tokens (what one pass per distinct context would run);
- `trie_tokens`: distinct prefix-tree tokens of those contexts (`trie_token_count`);
- `computed_tokens`: context tokens run through the model, padding excluded (= `trie_tokens`
  with sharing; `context_tokens` without);
- `continuation_tokens`: continuation tokens run through the model beyond the contexts;
- `padding_tokens`: padding positions in the model's input;
- `forward_passes`, `rows`: model calls and their batch rows;
- `peak_cached_tokens`: the most kept prefix keys/values at once, in tokens;
- `fallback_requests`: requests handed to the stock code.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import logging
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM
from torch.nn.attention import SDPBackend, sdpa_kernel
from tqdm import tqdm
from transformers.cache_utils import DynamicCache, DynamicLayer

from biasmonkey.harness_ext.lm_eval.backends.auto_batch import auto_rows
from biasmonkey.harness_ext.lm_eval.backends.batch_encode import BatchEncoding
from biasmonkey.harness_ext.lm_eval.backends.chunked_attention import chunked
from biasmonkey.harness_ext.lm_eval.backends.context import Cuts, ModelArgumentError, as_flag, refuse_or_count
from biasmonkey.harness_ext.lm_eval.backends.fused_norms import Forward, fusable_norms, installed
from biasmonkey.harness_ext.lm_eval.backends.prompt_trie import ROOT, PromptTrie, Row, RowPlanner, trie_token_count
from biasmonkey.harness_ext.lm_eval.backends.request_cache import CacheFriendlyLM, cache_answers
from biasmonkey.harness_ext.lm_eval.backends.score_tally import Answer, Pair, Score, Tally
from biasmonkey.harness_ext.lm_eval.backends.warm_up import WARM_UP_ROWS, Background, warm_up_requests
from biasmonkey.metrics.top_logprobs import InvalidLogprobs

log = logging.getLogger(__name__)

Tokens = tuple[int, ...]
Request = tuple[Any, list[int], list[int]]  # ((context, continuation) or None, context tokens, continuation tokens)
# Pair (score_tally.py): (context, continuation) as the context's number in the call (its tokens:
# `contexts[number]`) and the continuation's tokens. Numbered once, a context's tokens (hundreds in
# a few-shot prompt) are not hashed again each time a request is looked up.
Done = Callable[[list[tuple[Pair, Answer]]], None]  # called with each forward's answers once they are read

# sdpa's kernels for the rows' masked attention: every one but cuDNN's (see `_inference`)
ATTENTION_KERNELS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
# Attention implementations that accept a custom 4D mask: boolean for sdpa, additive for eager.
MASKABLE_ATTENTION = ("sdpa", "eager")
DEFAULT_ROW_TOKENS = 512  # measured on CPU (SmolLM2): 256 left the long cognitive prompts 2 % over the floor
DEFAULT_PREFIX_CACHE_TOKENS = 16384
# A forward's padding positions stay within this share of its real ones (rows go widest first).
PADDING_SLACK = 0.1


def cache_argument(model: torch.nn.Module) -> str:
    """The name under which the model's forward takes a cache: `cache` (transformers >= 5.24),
    else `past_key_values`."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _positions(name: str, value: Any, least: int = 0) -> int:
    """A model argument that is a count of positions, `least` or more."""
    try:
        count = int(str(value).strip())
    except ValueError:
        count = least - 1
    if count < least:
        raise ModelArgumentError(f"model argument {name}={value!r}: use a whole number of positions, {least} or more")
    return count


def _auto_flag(name: str, value: Any) -> bool | None:
    """A model argument that is true, false or auto (None: decided by the device once it is known)."""
    try:
        return None if str(value).strip().lower() == "auto" else as_flag(name, value)
    except ValueError:
        raise ModelArgumentError(f"model argument {name}={value!r}: use auto, true or false") from None


def _batch_size(value: Any) -> None:
    """lm-eval's batch_size for this backend: rows per forward, 1 or more, auto or auto:N."""
    if not re.fullmatch(r"auto(:[1-9]\d*)?|[1-9]\d*", str(value).strip()):
        raise ModelArgumentError(f"batch_size={value!r}: use a whole number of rows, 1 or more, auto or auto:N")


@dataclass
class _Spine:
    """Kept keys/values of a path of trie nodes, every layer's in one tensor ([layers, nodes, kv
    heads, head dim]: a forward's cache is read and assembled in a few operations, not a few per
    layer and anchor, which on a GPU is a kernel launch each)."""

    nodes: list[int]
    keys: torch.Tensor
    values: torch.Tensor
    previous: int  # the anchor whose path precedes the spine (ROOT: none)
    pending: int = 0  # rows anchored on it, and spines kept below it, still to run


@dataclass
class _Scores:
    """A forward's log-probabilities and greedy flags by (node, token) (by (row, token) without
    sharing), copied off the device without waiting for it: read (which waits) after the next
    forward is queued, so that the host's work for one forward overlaps the device's for the other."""

    pairs: list[tuple[int, int]]
    values: torch.Tensor | None = None
    hits: torch.Tensor | None = None
    ready: torch.cuda.Event | None = None  # recorded after the copies (CUDA only)
    tally: Tally | None = None  # the requests of its prefix tree (with sharing)

    def queue(self, values: torch.Tensor, hits: torch.Tensor) -> None:
        on_cuda = values.device.type == "cuda"
        self.values = values.to("cpu", non_blocking=on_cuda)
        self.hits = hits.to("cpu", non_blocking=on_cuda)
        if on_cuda:  # on the stream of the scores' device: the current device may be another one
            self.ready = torch.cuda.Event()
            self.ready.record(torch.cuda.current_stream(values.device))

    def read(self, results: dict[tuple[int, int], Answer]) -> list[tuple[int, int]]:
        """Store the scores into `results`; the pairs scored."""
        if self.values is not None:
            if self.ready is not None:
                self.ready.synchronize()
            results.update(zip(self.pairs, zip(self.values.tolist(), self.hits.tolist())))
        return self.pairs

    def settle(self, done: Done) -> None:
        """Read the scores (with sharing) and hand `done` the requests of `tally` they complete."""
        done(self.tally.complete(self.read(self.tally.results)))


Path = list[tuple[int, int]]  # an anchor's path: (kept spine by its first node, its nodes on the path), root first


def _to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """`array` on `device`, queued without waiting. On CUDA a copy from ordinary (pageable) host
    memory first waits for all the work queued on the device, so the host could not prepare one
    forward while the other runs; a copy from pinned memory does not wait."""
    tensor = torch.from_numpy(array)
    if device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a call's requests are grouped and scored, then
    as before. A call allocates hundreds of thousands of tuples, lists and dicts, enough to set off
    a full collection that scans every object of the process (0.31-0.33 s in an lm-eval run of the
    few-shot yes-no suite, 734,000 objects: a pause the device's work cannot hide). Its own paths
    make no reference cycles (tested), so refcounting frees all they drop; what the stock code's
    fallback might leave in cycles waits for the next collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _starts(counts: dict[int, int]) -> dict[int, int]:
    """Where each key's run of `counts[key]` positions starts when the runs are laid end to end."""
    starts, offset = {}, 0
    for key, count in counts.items():
        starts[key], offset = offset, offset + count
    return starts


@dataclass
class _Lane:
    """One batch row of a forward: planned rows side by side (`offsets`: where each starts), each
    over its own anchor's path. The lane's cache holds the union of those paths: of each kept
    spine on one (`spans`, by first node), as many nodes as the furthest path reaches."""

    rows: list[Row] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    spans: dict[int, int] = field(default_factory=dict)
    size: int = 0  # positions of its rows
    depth: int = 0  # cached positions: the sum of `spans`

    def depth_with(self, path: Path) -> int:
        return self.depth + sum(max(0, n - self.spans.get(first, 0)) for first, n in path)

    def add(self, row: Row, path: Path) -> None:
        self.depth = self.depth_with(path)
        for first, n in path:
            self.spans[first] = max(n, self.spans.get(first, 0))
        self.rows.append(row)
        self.offsets.append(self.size)
        self.paths.append(path)
        self.size += len(row.nodes)


@register_model("biasmonkey-hf")
class PrefixReuseHFLM(CacheFriendlyLM, BatchEncoding, HFLM):
    """`HFLM` computing each distinct prefix once (see the module docstring)."""

    def __init__(
        self,
        *args: Any,
        row_tokens: int = DEFAULT_ROW_TOKENS,
        prefix_cache_tokens: int = DEFAULT_PREFIX_CACHE_TOKENS,
        prefix_sharing: bool | str = True,
        allow_truncation: bool | str = False,
        pack_rows: bool | str = "auto",
        warm_up: bool | str = "auto",
        fuse_norms: bool | str = "auto",
        attention_chunk: int | str = 0,
        **kwargs: Any,
    ) -> None:
        self._warm_up: Background | None = None
        # the model arguments checked before the weights load
        _batch_size(kwargs.get("batch_size", 1))
        self.row_tokens = _positions("row_tokens", row_tokens, least=1)
        self.prefix_cache_tokens = _positions("prefix_cache_tokens", prefix_cache_tokens)
        self.prefix_sharing = as_flag("prefix_sharing", prefix_sharing)
        self.allow_truncation = as_flag("allow_truncation", allow_truncation)
        self.attention_chunk = _positions("attention_chunk", attention_chunk)
        pack, fuse, warm = (
            _auto_flag(n, v) for n, v in (("pack_rows", pack_rows), ("fuse_norms", fuse_norms), ("warm_up", warm_up))
        )
        super().__init__(*args, **kwargs)
        cuda = self.device.type == "cuda"
        # Packing puts several planned rows in one batch row over the union of their cached paths:
        # fewer, fuller forwards (on a GPU each has a fixed cost in kernel launches), but each position
        # attends to that union, masked: on CPU, where time follows the positions attended, 5-16 %
        # slower (SmolLM2-135M's shape, 2 cores). Hence auto: on an accelerator.
        self.pack_rows = self.device.type != "cpu" if pack is None else pack
        self.fuse_norms = cuda if fuse is None else fuse  # (auto: one kernel on CUDA only)
        self._norms: list[tuple[torch.nn.Module, Forward]] | None = None  # (`_fused_norms`, at the first forward)
        self.truncation_cuts = Cuts()  # requests cut to fit the context (allow_truncation only)
        self._masks_supported: bool | None = None
        self._cache_argument: str | None = None
        self._devices: list[str] | None = None  # the devices of the model's weights (`_split_devices`)
        self.reset_counters()
        if (cuda if warm is None else warm) and self._prefix_path_supported():
            self._warm_up = Background(self._warm_up_forwards, "biasmonkey-hf warm-up")

    def _warm_up_forwards(self) -> None:
        """Forwards like a call's, answers dropped, counters left at zero (warm_up.py; in its thread)."""
        share = self.prefix_sharing and self._supports_masks()
        rows = WARM_UP_ROWS if self.batch_size == "auto" else min(WARM_UP_ROWS, int(self.batch_size))
        vocabulary = getattr(self.model.config, "vocab_size", None) or self.vocab_size
        contexts, groups = warm_up_requests(self.row_tokens, rows, vocabulary, share, self.max_length)
        score = self._score_shared if share else self._score_contexts
        try:
            score(contexts, groups, None, False, lambda answers: None)
        finally:
            self._zero_counters()

    def reset_counters(self) -> None:
        self.settle_warm_up()
        self._zero_counters()

    def settle_warm_up(self) -> None:
        """Wait for the warm-up (`warm_up`) if it still runs: before the model is used or its counters read."""
        if self._warm_up is not None:
            self._warm_up.settle()

    def _zero_counters(self) -> None:
        self.distinct_contexts = 0
        self.context_tokens = 0
        self.trie_tokens = 0
        self.computed_tokens = 0
        self.continuation_tokens = 0
        self.padding_tokens = 0
        self.forward_passes = 0
        self.rows = 0
        self.peak_cached_tokens = 0
        self.fallback_requests = 0

    # ------------------------------------------------------------------ what this path covers

    def _prefix_path_supported(self) -> bool:
        """A causal model whose forward can restrict the LM head to chosen positions, on one device."""
        parameters = inspect.signature(self.model.forward).parameters
        return self.backend == "causal" and "logits_to_keep" in parameters and not self._split_devices()

    def _split_devices(self) -> list[str]:
        """The devices the model's weights are split across (`parallelize=True`, a device map, weights
        offloaded to CPU or disk), if more than one, with a warning the first time: the prefix-tree
        path keeps every layer's keys and values in one tensor on `self.device`, so such a model's
        requests go to the stock code."""
        if self._devices is None:
            self._devices = sorted({str(p.device) for p in chain(self.model.parameters(), self.model.buffers())})
            if len(self._devices) > 1:
                log.warning(
                    "biasmonkey-hf: the model is split across %s; prefix sharing needs it on one device, so "
                    "lm-eval's stock hf code scores its requests (as fast as --model hf). To share prefixes, "
                    "load it on one device (without parallelize=True or a device map).",
                    ", ".join(self._devices),
                )
        return self._devices if len(self._devices) > 1 else []

    def _supports_masks(self) -> bool:
        """Whether rows can run over cached keys/values with a custom 4D mask."""
        if self._masks_supported is None:
            config = self.model.config
            cache = DynamicCache(config=config)
            self._masks_supported = getattr(config, "_attn_implementation", None) in MASKABLE_ATTENTION and all(
                type(layer) is DynamicLayer for layer in cache.layers
            )
        return self._masks_supported

    def _check_context(self, needed: list[int], what: str, limit: int | None = None) -> None:
        """Requests needing more tokens than the model's context: an error, or counted and logged
        where `allow_truncation` is given (the stock code then cuts them from the left)."""
        limit = self.max_length if limit is None else limit
        if refuse_or_count("biasmonkey-hf", needed, limit, self.allow_truncation, self.truncation_cuts, what):
            log.warning("biasmonkey-hf: %s", self.truncation_cuts.sentence(limit))

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[Answer]:
        """lm-eval's, with the requests' distinct strings encoded in batches first (batch_encode.py)."""

        def tokenise() -> None:  # the tokenizer calls that lm-eval's loglikelihood makes
            for context, continuation in (request.args for request in requests):
                if context:
                    self._encode_pair(context, continuation)
                else:
                    self.tok_encode(continuation, add_special_tokens=False)

        self.prefill(tokenise)
        try:
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        finally:
            self.forget_encodings()

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """lm-eval's generation, after checking that each distinct context leaves room for its
        `max_gen_toks` (the stock code cuts the context from the left otherwise)."""
        self.settle_warm_up()
        by_room: dict[int, set[str]] = defaultdict(set)
        for request in requests:
            context, gen_kwargs = request.args[0], request.args[1]
            new_tokens = int(gen_kwargs.get("max_gen_toks", self.max_gen_toks)) if self.backend == "causal" else 0
            by_room[self.max_length - new_tokens].add(context)
        for room, contexts in by_room.items():
            if room > 0:  # else lm-eval refuses the configuration itself
                self._check_context([len(self.tok_encode(c)) for c in contexts], "generation prompts", room)
        return super().generate_until(requests, disable_tqdm=disable_tqdm)

    # ------------------------------------------------------------------ requests

    def _loglikelihood_tokens(
        self,
        requests: list[Request],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[Answer]:
        self.settle_warm_up()
        if not self._prefix_path_supported():
            if self.backend == "causal":  # (seq2seq models take the context and continuation apart)
                self._check_context([len(c) + len(k) - 1 for key, c, k in requests if key is not None], "requests")
            self.fallback_requests += len(requests)
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)
        with _collector_paused():  # (the call's objects are freed before the collector resumes)
            answers = self._answer_requests(requests, disable_tqdm, override_bs)
        log.info(self.counters_line())
        return answers

    def _answer_requests(self, requests: list[Request], disable_tqdm: bool, override_bs: int | None) -> list[Answer]:
        """The requests grouped by (context, continuation), each group scored once; those this path
        does not cover go to the stock code. Requests that do not fit the context are checked
        (`_check_context`) before any forward."""
        share = self.prefix_sharing and self._supports_masks()
        limit = self.max_length  # (a property that reads the model's config: once, not per request)

        # (context, continuation) -> indices of the requests asking for it
        groups: dict[Pair, list[int]] = defaultdict(list)
        fallback: list[int] = []
        contexts: list[Tokens] = []
        numbers: dict[Tokens, int] = {}
        # lm-eval's tokenising gives the requests of one context the same list: numbered by identity
        # first (the requests keep the lists alive, so no identity is reused during the call)
        number_of_object: dict[int, int] = {}
        too_long: list[int] = []  # the tokens needed by requests that do not fit (stock would cut them)
        for i, (key, context, cont) in enumerate(requests):
            if key is None:
                fallback.append(i)
                continue
            needed = len(context) + len(cont) - 1  # (context + continuation[:-1], seen whole)
            if needed > limit:
                too_long.append(needed)
                fallback.append(i)
                continue
            if not context or not cont or (len(cont) > 1 and not share):
                fallback.append(i)
                continue
            number = number_of_object.get(id(context))
            if number is None:
                tokens = tuple(context)
                number = numbers.get(tokens)
                if number is None:
                    number = numbers[tokens] = len(contexts)
                    contexts.append(tokens)
                number_of_object[id(context)] = number
            groups[number, tuple(cont)].append(i)

        self._check_context(too_long, "requests", limit)
        answers: list[Answer | None] = [None] * len(requests)
        if fallback:
            self.fallback_requests += len(fallback)
            scored = super()._loglikelihood_tokens(
                [requests[i] for i in fallback], disable_tqdm=disable_tqdm, override_bs=override_bs
            )
            for i, answer in zip(fallback, scored):
                answers[i] = answer
        if groups:
            self.distinct_contexts += len(contexts)
            self.context_tokens += sum(map(len, contexts))
            show = not disable_tqdm and self.rank == 0

            def done(batch: list[tuple[Pair, Answer]]) -> None:
                cached: list[tuple[Any, Answer]] = []
                try:
                    for request, answer in batch:
                        if not math.isfinite(answer[0]):
                            raise self._invalid(requests[groups[request][0]], answer)
                        for i in groups[request]:
                            answers[i] = answer
                            cached.append((requests[i][0], answer))
                finally:  # (what came before an invalid answer is cached all the same)
                    cache_answers(self.cache_hook, "loglikelihood", cached)

            if share:
                self._score_shared(contexts, groups, override_bs, show, done)
            else:
                self._score_contexts(contexts, groups, override_bs, show, done)
            if any(answer is None for answer in answers):
                raise RuntimeError("biasmonkey-hf: some requests were never answered")
        return answers  # type: ignore[return-value]

    def _invalid(self, request: Request, answer: Answer) -> InvalidLogprobs:
        """The error for a log-likelihood that is not finite (NaN or inf from a broken model, or float16
        overflow), naming the request: raised before anything of it is cached."""
        context, continuation = request[0]
        return InvalidLogprobs(
            f"biasmonkey-hf: the model {getattr(self, 'pretrained', '?')!r} gave the log-likelihood {answer[0]!r} for "
            f"{continuation!r} after …{context[-60:]!r}; its weights or dtype may be broken "
            "(e.g. float16 overflow: try --dtype float32 or bfloat16)"
        )

    def counters_line(self) -> str:
        ratio = self.computed_tokens / self.trie_tokens if self.trie_tokens else float("nan")
        return (
            f"biasmonkey-hf: {self.distinct_contexts} distinct contexts, {self.context_tokens} context tokens, "
            f"{self.trie_tokens} trie tokens, {self.computed_tokens} computed ({ratio:.3f} x trie), "
            f"{self.continuation_tokens} continuation and {self.padding_tokens} padding tokens, "
            f"{self.forward_passes} forward passes ({self.rows} rows), peak cached prefix {self.peak_cached_tokens} "
            f"tokens, {self.fallback_requests} requests to the stock code"
        )

    def _rows_per_forward(self, override_bs: int | None, width: int, scored: Callable[[], int]) -> int:
        """`batch_size`; for "auto" (and "auto:N") the rows of `width` positions, `scored()` of them
        scored, that fit in memory (auto_batch.py: an estimate from the model's shape, no probe)."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        if override_bs:
            return override_bs
        rows = auto_rows(self.model.config, self.model.dtype, self.device, width, scored(), self.max_batch_size)
        log.info("biasmonkey-hf: batch_size=auto: %d rows of %d positions per forward", rows, width)
        return rows

    # ------------------------------------------------------------------ model passes

    @contextlib.contextmanager
    def _inference(self) -> Iterator[None]:
        """No gradients, HFLM's optional mixed-precision autocast, sdpa off cuDNN's attention
        (cuDNN builds a plan for each new shape, and the rows' shapes vary from forward to forward:
        on an H200 the first call took 6.5 s against 0.9 s for later ones with it, 1.2 s without),
        and the fused norms (`fuse_norms`)."""
        with (
            torch.no_grad(),
            torch.autocast(
                device_type=self.device.type,
                dtype=self.mixed_precision_dtype,
                enabled=self.mixed_precision_dtype is not None,
            ),
            sdpa_kernel(ATTENTION_KERNELS),
            installed(self._fused_norms()),
        ):
            yield

    def _fused_norms(self) -> list[tuple[torch.nn.Module, Forward]]:
        """The norms run as `F.rms_norm` with `fuse_norms` (auto: on CUDA, where PyTorch normalises in
        one kernel; fused_norms.py): the modules found, and their classes probed, at the first forward."""
        if self._norms is None:
            self._norms = fusable_norms(self.model) if self.fuse_norms else []
            if self._norms:
                kinds = sorted({type(module).__name__ for module, _ in self._norms})
                log.info("biasmonkey-hf: %d norms (%s) run as F.rms_norm", len(self._norms), ", ".join(kinds))
        return self._norms

    def _forward(self, **kwargs: Any) -> torch.Tensor:
        """Log-probabilities at the kept positions."""
        out = self.model(**kwargs)
        self.forward_passes += 1
        self.rows += int(kwargs["input_ids"].shape[0])
        return F.log_softmax(out.logits, dim=-1, dtype=self.softmax_dtype)

    def _score_contexts(
        self, contexts: list[Tokens], groups: dict[Pair, list[int]], override_bs: int | None, show: bool, done: Done
    ) -> None:
        """Without sharing: each distinct context in one pass, scored at its last position
        (single-token continuations only); `done` gets a batch's answers once the next batch's
        pass is queued (or has failed), as in `_score_shared`."""
        by_context: dict[int, list[Tokens]] = defaultdict(list)
        for number, cont in groups:
            by_context[number].append(cont)
        order = sorted(by_context, key=lambda n: (-len(contexts[n]), contexts[n]))  # longest first, as lm-eval
        self.trie_tokens += trie_token_count(contexts[n] for n in order)
        batch_size = self._rows_per_forward(override_bs, len(contexts[order[0]]), lambda: 1)
        previous: tuple[list[tuple[int, Pair]], _Scores] | None = None

        def answered(batch: tuple[list[tuple[int, Pair]], _Scores] | None) -> None:
            if batch is not None:
                results: dict[tuple[int, int], Answer] = {}
                batch[1].read(results)
                done([((number, cont), results[row, cont[0]]) for row, (number, cont) in batch[0]])

        for start in tqdm(range(0, len(order), batch_size), disable=not show, desc="biasmonkey-hf contexts"):
            batch = order[start : start + batch_size]
            lengths = np.asarray([len(contexts[n]) for n in batch])
            table = np.zeros((len(batch), int(lengths.max())), dtype=np.int64)
            for row, number in enumerate(batch):
                table[row, : lengths[row]] = contexts[number]
            asked = [(row, (number, cont)) for row, number in enumerate(batch) for cont in by_context[number]]
            scores = _Scores([(row, cont[0]) for row, (_, cont) in asked])
            try:
                ids, last = _to_device(table, self.device), _to_device(lengths[:, None] - 1, self.device)
                rows, tokens = _to_device(np.asarray(scores.pairs).T.copy(), self.device)
                with self._inference():
                    # Right padding needs no mask: a causal model's real positions never see the padding.
                    logprobs = self._forward(input_ids=ids, use_cache=False, logits_to_keep=last)[:, 0]
                    scores.queue(logprobs[rows, tokens], logprobs.argmax(dim=-1)[rows] == tokens)
            finally:  # the previous batch's scores are read while this one runs (or once it failed)
                answered(previous)
            previous = asked, scores
            self.computed_tokens += int(lengths.sum())
            self.padding_tokens += table.size - int(lengths.sum())
        answered(previous)

    def _score_shared(
        self, contexts: list[Tokens], groups: dict[Pair, list[int]], override_bs: int | None, show: bool, done: Done
    ) -> None:
        """Every node of the requests' prefix tree once (see the module docstring); `done` gets
        each request's answer after the pass that scores its last token. Before the first forward
        only what it needs is done (the tree, the scored positions, the root's rows); while the
        device runs, the rows below a kept spine are planned once its forward is queued
        (`RowPlanner`), what each request needs and which requests a score completes at the first
        read (`Tally`), and the counters at the end."""
        trie = PromptTrie()
        targets: dict[int, set[int]] = defaultdict(set)  # node -> tokens scored there
        # A context's continuations share its path: each context is inserted once (`ends`: its last
        # node), the tokens but the last of each multi-token continuation once below it (`below`).
        ends = [ROOT] * len(contexts)  # (ROOT: not inserted yet; every context has a request)
        below: dict[Pair, list[int]] = {}
        for number, cont in groups:
            end = ends[number]
            if end == ROOT:
                end = ends[number] = trie.insert(contexts[number])
            targets[end].add(cont[0])
            if len(cont) > 1:
                nodes = below.get((number, cont[:-1]))
                if nodes is None:
                    nodes = below[number, cont[:-1]] = trie.path_to(trie.insert(cont[:-1], end), len(cont) - 1)
                for node, token in zip(nodes, cont[1:]):
                    targets[node].add(token)

        def wanted() -> dict[Pair, list[Score]]:  # request -> (node, token) scored: at the first read
            return {
                (number, cont): [(ends[number], cont[0])]
                if len(cont) == 1
                else [(ends[number], cont[0]), *zip(below[number, cont[:-1]], cont[1:])]
                for number, cont in groups
            }

        tally = Tally(wanted)

        planner = RowPlanner(trie, self.row_tokens)  # rows below a kept spine: planned once it is queued
        rows = planner.rows
        is_scored = np.zeros(len(trie), dtype=bool)
        is_scored[list(targets)] = True
        trie_arrays = (np.asarray(trie.token, dtype=np.int64), np.asarray(trie.depth, dtype=np.int64), is_scored)

        def scored_per_row() -> int:  # (batch_size=auto only: every row planned first)
            # a lane packs several rows: its scored positions at most the densest row's share of row_tokens
            densest = max(np.count_nonzero(is_scored[row.nodes]) / len(row.nodes) for row in planner.plan_all())
            return math.ceil(densest * self.row_tokens)

        batch_rows = self._rows_per_forward(override_bs, self.row_tokens, scored_per_row)
        depth = trie.depth

        def prefix(r: int) -> int:  # cached positions below row r
            return 0 if rows[r].anchor == ROOT else depth[rows[r].anchor] + 1

        spines: dict[int, _Spine] = {}  # kept spines, by first node
        on_spine: dict[int, tuple[int, int]] = {}  # node of a kept spine -> (spine, its nodes up to this one)
        cached = ran = 0
        ready = planner.take(ROOT)
        pack = self.pack_rows
        pbar = tqdm(total=len(trie), disable=not show, desc="biasmonkey-hf prefix-tree tokens")

        def release(anchor: int) -> None:
            nonlocal cached
            while anchor != ROOT:
                spine = spines[on_spine[anchor][0]]
                spine.pending -= 1
                if spine.pending:
                    return
                del spines[spine.nodes[0]]
                for node in spine.nodes:
                    del on_spine[node]
                cached -= len(spine.nodes)
                anchor = spine.previous

        def path(anchor: int) -> Path:
            """The kept spines (by first node, and how many of their nodes) that make up `anchor`'s path."""
            out = []
            while anchor != ROOT:
                first, length = on_spine[anchor]
                out.append((first, length))
                anchor = spines[first].previous
            return out[::-1]

        previous: _Scores | None = None
        while ready:
            ready.sort(key=lambda r: (-len(rows[r].nodes), -prefix(r)))  # widest first
            full = cached >= self.prefix_cache_tokens
            candidates = [r for r in ready if not rows[r].spines] if full else ready
            if not candidates:  # every ready row keeps a spine: go deepest first
                candidates = [max(ready, key=prefix)]
            lanes, chosen = self._fill_lanes(
                candidates,
                rows,
                path,
                batch_rows,
                self.prefix_cache_tokens - cached,
                self.row_tokens,
                pack,
                spare=self.row_tokens if pack and len(candidates) == len(ready) else 0,
            )
            ready = [r for r in ready if r not in chosen]
            try:
                kept, queued = self._run_rows(lanes, targets, trie_arrays, spines)
                queued.tally = tally
            finally:  # the previous forward's scores are read while this one runs (or once it failed)
                if previous is not None:
                    previous.settle(done)
            previous = queued
            for lane in lanes:
                pbar.update(lane.size)
                ran += lane.size
            for spine in kept:  # kept before the batch's anchors are released
                spines[spine.nodes[0]] = spine
                on_spine.update((node, (spine.nodes[0], i + 1)) for i, node in enumerate(spine.nodes))
                if spine.previous != ROOT:
                    spines[on_spine[spine.previous][0]].pending += 1
                cached += len(spine.nodes)
                for node in spine.nodes:
                    opened = planner.take(node)
                    spine.pending += len(opened)
                    ready += opened
            self.peak_cached_tokens = max(self.peak_cached_tokens, cached)
            for lane in lanes:
                for row in lane.rows:
                    release(row.anchor)
        pbar.close()
        if planner.left or spines or ran != len(trie):
            raise RuntimeError(
                f"biasmonkey-hf: {planner.left} anchors never ran, {len(spines)} spines left, "
                f"{ran} of {len(trie)} prefix-tree nodes run"
            )
        # Counted while the last forward runs: every node ran once (checked above), as context or
        # as continuation (a node on no context's path).
        in_context = bytearray(len(trie))
        for end in ends:
            in_context[end] = 1
        for node in range(len(trie) - 1, -1, -1):  # a parent's id is below its children's
            if in_context[node] and trie.parent[node] != ROOT:
                in_context[trie.parent[node]] = 1
        context_nodes = sum(in_context)
        self.trie_tokens += context_nodes
        self.computed_tokens += context_nodes
        self.continuation_tokens += len(trie) - context_nodes
        previous.settle(done)
        if tally.unanswered:
            raise RuntimeError(f"biasmonkey-hf: {tally.unanswered} scores missing")

    @staticmethod
    def _fill_lanes(
        candidates: list[int],
        rows: list[Row],
        path: Callable[[int], Path],
        batch_rows: int,
        room: int,
        row_tokens: int,
        pack: bool,
        spare: int = 0,
    ) -> tuple[list[_Lane], set[int]]:
        """The next forward's lanes and the rows in them. The `candidates` (widest first) go, each
        into a new lane (with `pack`: into the lane with room for it within `row_tokens` positions
        whose cache it enlarges least, if any), while the forward holds at most max(`batch_rows`,
        batch_rows * row_tokens // (width + cached depth)) lanes and its rows keep at most `room`
        more spine tokens (the first row whatever it keeps). Then, in a forward wider than
        `row_tokens` positions, the least filled lanes wait for a later one while padding exceeds
        PADDING_SLACK of the real positions, and by `spare` positions more where no later forward
        would come anyway (no candidate left out, no spine kept: the caller passes 0 where ready
        rows other than the candidates wait). With packed rows (on a GPU) a forward has a fixed
        cost, launching every layer's kernels and the host's work around it, about as long as
        2,000 positions of the 1.7B shape's; on CPU time follows the positions attended."""
        lanes: list[_Lane] = []
        width = depth = adding = 0
        narrowest = min(len(rows[r].nodes) for r in candidates)
        for r in candidates:
            row = rows[r]
            keeps = sum(map(len, row.spines))
            if lanes and keeps and adding + keeps > room:
                continue
            anchor_path = path(row.anchor)
            fits = [lane for lane in lanes if lane.size + len(row.nodes) <= row_tokens] if pack else []
            lane = min(fits, key=lambda lane: lane.depth_with(anchor_path) - lane.depth, default=None)
            if lane is None:
                size, lane_depth, count = len(row.nodes), sum(n for _, n in anchor_path), len(lanes) + 1
            else:
                size, lane_depth, count = lane.size + len(row.nodes), lane.depth_with(anchor_path), len(lanes)
            most = max(batch_rows, batch_rows * row_tokens // (max(width, size) + max(depth, lane_depth)))
            if lanes and count > most:
                if not pack or all(lane.size + narrowest > row_tokens for lane in lanes):
                    break  # full: no later (narrower) row fits
                continue
            if lane is None:
                lane = _Lane()
                lanes.append(lane)
            lane.add(row, anchor_path)
            width, depth, adding = max(width, size), max(depth, lane_depth), adding + keeps
        real = sum(lane.size for lane in lanes)
        if adding or sum(len(lane.rows) for lane in lanes) < len(candidates):
            spare = 0  # a later forward comes anyway
        while len(lanes) > 1 and len(lanes) * width > max(row_tokens, (1 + PADDING_SLACK) * real + spare):
            lanes.remove(drop := min(lanes, key=lambda lane: lane.size))
            real, width, spare = real - drop.size, max(lane.size for lane in lanes), 0
        chosen = {id(row) for lane in lanes for row in lane.rows}
        return lanes, {r for r in candidates if id(rows[r]) in chosen}

    def _run_rows(
        self,
        lanes: list[_Lane],
        targets: dict[int, set[int]],
        trie_arrays: tuple[np.ndarray, np.ndarray, np.ndarray],
        spines: dict[int, _Spine],
    ) -> tuple[list[_Spine], _Scores]:
        """One forward over `lanes`, each row over its anchor's cached path (`spines`), queued on
        the device (`trie_arrays`: the trie's tokens, depths and whether `targets` scores there, by
        node): returns the spines the rows keep and the (node, token) scores, read later."""
        device, n = self.device, len(lanes)
        width, depth = max(lane.size for lane in lanes), max(lane.depth for lane in lanes)
        most_rows = max(len(lane.rows) for lane in lanes)
        # built on the host with numpy and queued to the device (_to_device): the previous forward may still run
        table = np.zeros((4, n, width), dtype=np.int64)  # token ids, positions, ends, the row in the lane
        table[2] = -1
        table[3] = most_rows  # padding: a row index that sees no cached position
        sees = np.zeros((n, most_rows + 1, depth), dtype=bool)  # [lane, row in it, cached position]
        lane_nodes = []
        for b, lane in enumerate(lanes):
            nodes = np.fromiter(chain.from_iterable(row.nodes for row in lane.rows), dtype=np.int64, count=lane.size)
            lane_nodes.append(nodes)
            table[0, b, : lane.size] = trie_arrays[0][nodes]
            table[1, b, : lane.size] = trie_arrays[1][nodes]
            table[2, b, : lane.size] = np.concatenate([np.add(row.ends, o) for row, o in zip(lane.rows, lane.offsets)])
            table[3, b, : lane.size] = np.repeat(np.arange(len(lane.rows)), [len(row.nodes) for row in lane.rows])
            start = _starts(lane.spans)
            for k, anchor_path in enumerate(lane.paths):
                for first, count in anchor_path:
                    sees[b, k, start[first] : start[first] + count] = True
        ids, positions, ends, row_of = _to_device(table, device)
        lengths = _to_device(np.asarray([lane.size for lane in lanes]), device)
        self.padding_tokens += n * width - sum(lane.size for lane in lanes)

        # Node j is visible from node i when it is an ancestor-or-self in the row (j <= i < end[j]),
        # or on the row's anchor path in the lane's cache; padding sees itself only.
        at = torch.arange(width, device=device)
        real = at[None, :] < lengths[:, None]  # [lanes, width]
        tree = (at[None, None, :] <= at[None, :, None]) & (at[None, :, None] < ends[:, None, :])
        tree |= ~real[:, :, None] & torch.eye(width, dtype=torch.bool, device=device)
        on_path = _to_device(sees, device)[torch.arange(n, device=device)[:, None], row_of]
        allowed = torch.cat([on_path, tree], dim=-1)[:, None]
        if self.model.config._attn_implementation == "sdpa":
            mask = allowed
        else:  # eager adds the mask to the attention scores
            dtype = self.model.dtype
            mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)

        keeps = any(row.spines for lane in lanes for row in lane.rows)
        cache = self._prefix_cache(lanes, depth, spines) if depth or keeps else None
        scored = [np.flatnonzero(trie_arrays[2][nodes]) for nodes in lane_nodes]  # positions in the lane
        keep = np.zeros((n, max(1, *map(len, scored))), dtype=np.int64)
        for b, s in enumerate(scored):
            keep[b, : len(s)] = s
        keep = _to_device(keep, device)
        if self._cache_argument is None:
            self._cache_argument = cache_argument(self.model)
        arguments: dict[str, Any] = {self._cache_argument: cache} if cache is not None else {}
        # (chunked here, not in `_inference`: only these forwards pass a 4D tree mask)
        with self._inference(), chunked(self.model.config, self.attention_chunk):
            logprobs = self._forward(
                input_ids=ids,
                position_ids=positions,
                attention_mask=mask,
                use_cache=cache is not None,
                logits_to_keep=keep,
                **arguments,
            )  # [lanes, kept, vocab]
            greedy = logprobs.argmax(dim=-1)

        where, pairs = [], []
        for b, (nodes, s) in enumerate(zip(lane_nodes, scored)):
            for k, node in enumerate(nodes[s].tolist()):
                for token in targets[node]:
                    where.append((b, k, token))
                    pairs.append((node, token))
        scores = _Scores(pairs)
        if where:
            b, k, token = _to_device(np.asarray(where, dtype=np.int64), device).T
            scores.queue(logprobs[b, k, token], greedy[b, k] == token)

        return self._kept_spines(lanes, cache, depth), scores

    @staticmethod
    def _kept_spines(lanes: list[_Lane], cache: DynamicCache | None, depth: int) -> list[_Spine]:
        """The spines the lanes' rows keep, read off their forward's cache (positions from `depth`
        on) with one gather per layer for all of them."""
        wanted = [
            (b, o, row, spine)
            for b, lane in enumerate(lanes)
            for row, o in zip(lane.rows, lane.offsets)
            for spine in row.spines
        ]
        if not wanted:
            return []
        device = cache.layers[0].keys.device
        batch = _to_device(np.concatenate([np.full(len(s), b) for b, _, _, s in wanted]), device)
        at = _to_device(np.concatenate([np.asarray(s) + depth + o for _, o, _, s in wanted]), device)
        # [layers, nodes of every spine, kv heads, head dim]
        keys = torch.stack([layer.keys[batch, :, at] for layer in cache.layers])
        values = torch.stack([layer.values[batch, :, at] for layer in cache.layers])
        sizes = [len(s) for _, _, _, s in wanted]
        return [
            _Spine(nodes=[row.nodes[i] for i in s], keys=k, values=v, previous=row.anchor)
            for (_, _, row, s), k, v in zip(wanted, keys.split(sizes, dim=1), values.split(sizes, dim=1))
        ]

    def _prefix_cache(self, lanes: list[_Lane], depth: int, spines: dict[int, _Spine]) -> DynamicCache:
        """A cache holding each lane's spans of kept spines, padded to `depth` (empty when depth is
        0). The spans go into one pool (each spine as far as a lane reaches into it) and every
        lane's positions are gathered from it at once; padding repeats a pooled position, which
        the rows' masks hide."""
        cache = DynamicCache(config=self.model.config)
        if not depth:
            return cache
        reach: dict[int, int] = {}  # kept spine (first node) -> its nodes in the pool
        for lane in lanes:
            for first, count in lane.spans.items():
                reach[first] = max(count, reach.get(first, 0))
        start = _starts(reach)
        index = np.zeros((len(lanes), depth), dtype=np.int64)
        for b, lane in enumerate(lanes):
            if lane.depth:
                pieces = [np.arange(start[first], start[first] + count) for first, count in lane.spans.items()]
                index[b, : lane.depth] = np.concatenate(pieces)
        at = _to_device(index.reshape(-1), self.device)
        layers, _, heads, dim = spines[next(iter(reach))].keys.shape

        def gathered(part: str) -> torch.Tensor:  # [layers, lanes, kv heads, depth, head dim]
            pool = torch.cat([getattr(spines[first], part)[:, :count] for first, count in reach.items()], dim=1)
            return pool[:, at].view(layers, len(lanes), depth, heads, dim).transpose(2, 3)

        keys, values = gathered("keys"), gathered("values")
        for layer in range(layers):
            cache.update(keys[layer], values[layer], layer)
        return cache
