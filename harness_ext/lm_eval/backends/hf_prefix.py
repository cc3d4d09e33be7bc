"""`--model biasmonkey-hf`: lm-eval's HF backend with one model pass per distinct prompt.

Stock `--model hf` runs one sequence per (context, continuation) request unless every
continuation of a context is a single token (its logits cache groups requests by context + all
but the last continuation token). The cognitive-bias tasks score multi-token labels ("Option 1:"
… "Option 11:", 7 or 11 per prompt), so there it runs about eight sequences per prompt.

This backend takes the same arguments as `hf` and returns the same (log-likelihood, is_greedy)
pairs, computed with prefix reuse:

1. Requests are grouped by context tokens. Distinct contexts go through the model once each,
   batched (`batch_size` contexts per forward, longest first, right-padded as lm-eval pads);
   the LM head runs only at each context's last position (`logits_to_keep`), whose
   log-probabilities score the first token of every continuation.
2. If a context has continuations of more than one token, its keys/values are kept and the
   later tokens of all its continuations are scored in one pass over the cached prefix. The
   continuations' input tokens form a trie (" Option", " ", "1" are shared by the labels), laid
   out as one row per context; a 4D attention mask lets each trie token see its own context
   and its trie ancestors only, and position ids continue from the context's length. One such
   pass serves all contexts of the batch.

Requests this path does not cover go, unchanged, to the stock code (`HFLM._loglikelihood_tokens`):
requests whose context + continuation do not fit the model's window (stock lm-eval truncates
them from the left), rolling-window requests (`loglikelihood_rolling`), seq2seq models, and
multi-token continuations on models whose attention takes no custom mask (flash or flex
attention, sliding-window or other non-standard cache layers).

Counters, cumulative since the model was created or `reset_counters()` was called:

- `prefix_sequences`: context rows run through the model (one per distinct context);
- `prompt_tokens`: the tokens of those rows, padding excluded;
- `continuation_rows`: trie rows run over a cached prefix (one per context that has a
  continuation of more than one token);
- `continuation_tokens`: trie tokens in those rows, padding excluded;
- `fallback_requests`: requests handed to the stock code.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM
from tqdm import tqdm
from transformers.cache_utils import DynamicCache, DynamicLayer

Tokens = tuple[int, ...]
Request = tuple[Any, list[int], list[int]]  # ((context, continuation) or None, context tokens, continuation tokens)
Answer = tuple[float, bool]  # (sum of log-probabilities, every token greedy)

# Attention implementations that accept a custom 4D mask: boolean for sdpa, additive for eager.
MASKABLE_ATTENTION = ("sdpa", "eager")


@dataclass
class ContinuationTrie:
    """The input tokens of one context's continuations, shared where their prefixes agree.

    Token c[0] of a continuation c is scored at the context's last position; token c[j] (j >= 1)
    at the trie node `nodes[c[:j]]`, which holds the input token c[j-1] at position
    len(context) + j - 1."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # -1: the node follows the context directly
    nodes: dict[Tokens, int] = field(default_factory=dict)

    @classmethod
    def of(cls, continuations: Sequence[Tokens]) -> ContinuationTrie:
        trie = cls()
        for cont in continuations:
            for j in range(1, len(cont)):
                if cont[:j] not in trie.nodes:
                    trie.nodes[cont[:j]] = len(trie.tokens)
                    trie.tokens.append(cont[j - 1])
                    trie.parents.append(trie.nodes.get(cont[: j - 1], -1))
        return trie

    def path(self, node: int) -> list[int]:
        """The node and its ancestors."""
        path = []
        while node >= 0:
            path.append(node)
            node = self.parents[node]
        return path

    def positions(self, cont: Tokens) -> list[int]:
        """Where each token of `cont` is scored: 0 = the context's last position, 1 + n = node n."""
        return [0] + [1 + self.nodes[cont[:j]] for j in range(1, len(cont))]


@register_model("biasmonkey-hf")
class PrefixReuseHFLM(HFLM):
    """`HFLM` with one model pass per distinct context (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tries_supported: bool | None = None
        self.reset_counters()

    def reset_counters(self) -> None:
        self.prefix_sequences = 0
        self.prompt_tokens = 0
        self.continuation_rows = 0
        self.continuation_tokens = 0
        self.fallback_requests = 0

    # ------------------------------------------------------------------ what this path covers

    def _prefix_path_supported(self) -> bool:
        """A causal model whose forward can restrict the LM head to chosen positions."""
        parameters = inspect.signature(self.model.forward).parameters
        return self.backend == "causal" and "logits_to_keep" in parameters

    def _supports_tries(self) -> bool:
        """Whether multi-token continuations can be scored over a cached prefix with a custom mask."""
        if self._tries_supported is None:
            config = self.model.config
            cache = DynamicCache(config=config)
            self._tries_supported = getattr(config, "_attn_implementation", None) in MASKABLE_ATTENTION and all(
                type(layer) is DynamicLayer for layer in cache.layers
            )
        return self._tries_supported

    def _fits(self, context: Sequence[int], continuation: Sequence[int]) -> bool:
        """The model sees context + continuation[:-1] whole (stock lm-eval truncates beyond this)."""
        return len(context) + len(continuation) - 1 <= self.max_length

    # ------------------------------------------------------------------ requests

    def _loglikelihood_tokens(
        self,
        requests: list[Request],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[Answer]:
        if not self._prefix_path_supported():
            return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)

        # context -> continuation -> indices of the requests asking for it
        groups: dict[Tokens, dict[Tokens, list[int]]] = defaultdict(lambda: defaultdict(list))
        fallback: list[int] = []
        for i, (key, context, cont) in enumerate(requests):
            stock = key is None or not self._fits(context, cont) or (len(cont) > 1 and not self._supports_tries())
            if stock:
                fallback.append(i)
            else:
                groups[tuple(context)][tuple(cont)].append(i)

        answers: list[Answer | None] = [None] * len(requests)
        if fallback:
            self.fallback_requests += len(fallback)
            scored = super()._loglikelihood_tokens(
                [requests[i] for i in fallback], disable_tqdm=disable_tqdm, override_bs=override_bs
            )
            for i, answer in zip(fallback, scored):
                answers[i] = answer

        contexts = sorted(groups, key=lambda c: (-len(c), c))  # longest first, as lm-eval orders
        batch_size = self._prefix_batch_size(contexts, groups, override_bs)
        pbar = tqdm(
            total=len(requests) - len(fallback),
            disable=disable_tqdm or self.rank != 0,
            desc="Running loglikelihood requests (prefix reuse)",
        )
        for start in range(0, len(contexts), batch_size):
            batch = contexts[start : start + batch_size]
            for context, scores in zip(batch, self._score_batch(batch, [list(groups[c]) for c in batch])):
                for cont, answer in scores.items():
                    for i in groups[context][cont]:
                        answers[i] = answer
                        # lm-eval's --use_cache stores every answer as it comes (resumable runs)
                        self.cache_hook.add_partial("loglikelihood", requests[i][0], answer)
                        pbar.update(1)
        pbar.close()
        return answers  # type: ignore[return-value]

    def _prefix_batch_size(
        self, contexts: list[Tokens], groups: dict[Tokens, dict[Tokens, list[int]]], override_bs: int | None
    ) -> int:
        """Contexts per forward: `batch_size`, or lm-eval's detection on the longest request for "auto"."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        if override_bs:
            return override_bs
        if not contexts:
            return 1
        longest = max(groups[contexts[0]], key=len)
        return self._detect_batch_size([(None, list(contexts[0]), list(longest))], 0)

    # ------------------------------------------------------------------ model passes

    @contextlib.contextmanager
    def _inference(self) -> Iterator[None]:
        """No gradients, and HFLM's optional mixed-precision autocast."""
        with (
            torch.no_grad(),
            torch.autocast(
                device_type=self.device.type,
                dtype=self.mixed_precision_dtype,
                enabled=self.mixed_precision_dtype is not None,
            ),
        ):
            yield

    def _score_batch(self, contexts: list[Tokens], conts: list[list[Tokens]]) -> list[dict[Tokens, Answer]]:
        """Answers for every continuation of a batch of distinct contexts."""
        lengths = torch.tensor([len(c) for c in contexts], device=self.device)
        ids = torch.zeros((len(contexts), int(lengths.max())), dtype=torch.long, device=self.device)
        for row, context in enumerate(contexts):
            ids[row, : len(context)] = torch.tensor(context, device=self.device)
        tries = [ContinuationTrie.of(c) for c in conts]
        deeper = [row for row, trie in enumerate(tries) if trie.tokens]

        with self._inference():
            # Right padding needs no mask: a causal model's real positions never see the padding.
            out = self.model(input_ids=ids, use_cache=bool(deeper), logits_to_keep=(lengths - 1)[:, None])
            last = F.log_softmax(out.logits[:, -1], dim=-1, dtype=self.softmax_dtype)  # [batch, vocab]
            later = self._score_tries(out.past_key_values, lengths, tries, deeper) if deeper else {}
        self.prefix_sequences += len(contexts)
        self.prompt_tokens += int(lengths.sum())

        results = []
        for row, trie in enumerate(tries):
            logprobs = torch.cat([last[row : row + 1], later[row]]) if row in later else last[row : row + 1]
            greedy = logprobs.argmax(dim=-1)
            answers = {}
            for cont in conts[row]:
                positions = torch.tensor(trie.positions(cont), device=self.device)
                tokens = torch.tensor(cont, device=self.device)
                answers[cont] = (float(logprobs[positions, tokens].sum()), bool((greedy[positions] == tokens).all()))
            results.append(answers)
        return results

    def _score_tries(
        self, cache: DynamicCache, lengths: torch.Tensor, tries: list[ContinuationTrie], rows: list[int]
    ) -> dict[int, torch.Tensor]:
        """Log-probabilities at every trie node of `rows`, one trie row per context over its cached keys/values."""
        if type(cache) is not DynamicCache or any(type(layer) is not DynamicLayer for layer in cache.layers):
            raise RuntimeError(f"biasmonkey-hf: unexpected cache {type(cache).__name__} after the prefix pass")
        if len(rows) < len(tries):
            cache.batch_select_indices(torch.tensor(rows, device=self.device))
        width = cache.get_seq_length()  # padded context length
        depth = max(len(tries[row].tokens) for row in rows)
        ids = torch.zeros((len(rows), depth), dtype=torch.long, device=self.device)
        positions = torch.zeros_like(ids)
        allowed = torch.zeros((len(rows), 1, depth, width + depth), dtype=torch.bool, device=self.device)
        for i, row in enumerate(rows):
            trie, length = tries[row], int(lengths[row])
            allowed[i, 0, :, :length] = True  # the context (padding nodes see it too; they are discarded)
            for node, token in enumerate(trie.tokens):
                path = trie.path(node)
                ids[i, node] = token
                positions[i, node] = length + len(path) - 1
                allowed[i, 0, node, [width + n for n in path]] = True
        if self.model.config._attn_implementation == "sdpa":
            mask = allowed
        else:  # eager adds the mask to the attention scores
            dtype = self.model.dtype
            mask = torch.zeros(allowed.shape, dtype=dtype, device=self.device).masked_fill(
                ~allowed, torch.finfo(dtype).min
            )
        out = self.model(input_ids=ids, position_ids=positions, attention_mask=mask, past_key_values=cache)
        logprobs = F.log_softmax(out.logits, dim=-1, dtype=self.softmax_dtype)  # [rows, depth, vocab]
        self.continuation_rows += len(rows)
        self.continuation_tokens += sum(len(tries[row].tokens) for row in rows)
        return {row: logprobs[i, : len(tries[row].tokens)] for i, row in enumerate(rows)}
