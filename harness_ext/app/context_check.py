"""`biasmonkey run`: prompts that do not fit the model's context, found before the run.

lm-eval's HF backend cuts a request longer than the model's context from the left and says so only
in its log, so a short-context model would score other prompts than the task's, silently. Before
lm-eval starts, `check_context` tokenises the run's requests as lm-eval's HF backend does (the
plan's tokeniser-only `HFLM`, `plan.encode`) and compares each with the model's context as that
backend determines it (`context_length`: the config's `n_positions`, `max_position_embeddings` or
`n_ctx`, else the tokenizer's `model_max_length`, else 2048; a `max_length` model argument wins).
A request fits when context + continuation minus its last token (log-likelihoods), or context +
`max_gen_toks` (generations), is within it.

A request that does not fit is an error naming the task, its longest prompt in tokens and the
model's limit, unless `--allow-truncation`: then the run line says how many distinct prompts were
cut and by how much (`Fit`), and the run records it beside its results (`harness_ext/truncation.py`),
where summary.md, the report, its tables and its exports read it.

Only requests whose text is long enough to possibly not fit are tokenised (a token is at least
one byte of UTF-8, and a few special tokens are added at most), so a model with a long context
costs next to nothing here: the tokenizer is not even loaded, and a local model folder's context,
once read, is kept in biasmonkey's cache by the folder's small files (`model_context`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.plan import TaskRequests, build_requests, encode
from biasmonkey.harness_ext.truncation import TaskCuts, cut_sentence
from biasmonkey.tasks.atomic_write import make_folder, write_text
from biasmonkey.tasks.cache import cache_root

log = logging.getLogger("biasmonkey")

DEFAULT_MAX_LENGTH = 2048  # lm-eval's HFLM when nothing says otherwise
DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's HFLM, where a task sets none
SPECIAL_TOKENS_SLACK = 8  # BOS/EOS and the like a tokenizer may add to a text
CONTEXT_ATTRIBUTES = ("n_positions", "max_position_embeddings", "n_ctx")  # lm-eval's order
TOKENIZER_INFINITY = 10**20  # above this, `model_max_length` means "unset"
LIMITS_CACHE = "context_limits"  # under cache_root(): each local model folder's context (`model_context`)
KEYED_FILE_BYTES = 64 * 2**20  # files up to this size key a folder's context (weights above it do not)


@dataclass
class Fit:
    """What `check_context` found: the limit (None: unknown, nothing checked) and the cuts per task."""

    limit: int | None = None
    source: str = ""
    cuts: dict[str, TaskCuts] = field(default_factory=dict)

    @property
    def cut_prompts(self) -> int:
        return sum(c.prompts for c in self.cuts.values())

    def sentence(self) -> str:
        """The cut prompts in words ("" when none)."""
        return cut_sentence(self.cuts)

    def run_note(self) -> str:
        """For the run line: "; TRUNCATED: …" when prompts are cut."""
        return f"; TRUNCATED (--allow-truncation): {self.sentence()}" if self.cuts else ""


def context_length(config: Any, tokenizer: Any, max_length: int | None = None) -> tuple[int, str]:
    """The model's context in tokens as lm-eval's HF backend determines it, and where it comes from."""
    if max_length:
        return int(max_length), "the max_length model argument"
    inner = getattr(config, "text_config", None) or config
    for name in CONTEXT_ATTRIBUTES:
        if getattr(inner, name, None) is not None:
            return int(getattr(inner, name)), f"config.json {name}"
    model_max = getattr(tokenizer, "model_max_length", None)
    if model_max is not None and model_max < TOKENIZER_INFINITY:
        return int(model_max), "the tokenizer's model_max_length"
    return DEFAULT_MAX_LENGTH, "lm-eval's default (the config names none)"


def _needed(context: Sequence[int], continuation: Sequence[int], max_gen_toks: int | None, scored: bool) -> int:
    """Tokens a request needs within the context (see the module docstring)."""
    if scored:
        return len(context) + len(continuation) - 1
    return len(context) + (max_gen_toks or DEFAULT_MAX_GEN_TOKS)


def _may_not_fit(request: Any, limit: int) -> bool:
    """Whether a request's text is long enough that it might not fit (tokens <= UTF-8 bytes)."""
    text = request.context + (request.continuation or "")
    extra = 0 if request.continuation is not None else request.max_gen_toks or DEFAULT_MAX_GEN_TOKS
    return len(text.encode()) + SPECIAL_TOKENS_SLACK + extra > limit


def find_cuts(tasks: Sequence[TaskRequests], lm: Any, limit: int) -> dict[str, TaskCuts]:
    """Per task, its distinct prompts with a request that needs more than `limit` tokens."""
    candidates = []
    for task in tasks:
        distinct = list(dict.fromkeys(r for r in task.requests if _may_not_fit(r, limit)))
        if distinct:
            candidates.append(replace(task, requests=distinct))
    from transformers.utils import logging as transformers_logging

    level = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # its "longer than the maximum" warning: said below, in words
    try:
        encoded_tasks = encode(candidates, lm)
    finally:
        transformers_logging.set_verbosity(level)
    cuts: dict[str, TaskCuts] = {}
    for name, encoded in encoded_tasks.items():
        needs: dict[str, int] = {}  # prompt -> the most tokens one of its requests needs
        for e in encoded:
            needed = _needed(e.context, e.continuation, e.request.max_gen_toks, e.request.continuation is not None)
            if needed > limit:
                needs[e.request.context] = max(needs.get(e.request.context, 0), needed)
        if needs:
            longest = max(needs.values())
            cuts[name] = TaskCuts(limit, len(needs), longest, longest - limit, sum(n - limit for n in needs.values()))
    return cuts


def too_long(fit: Fit, model: str) -> ValueError:
    """The error for prompts that do not fit: the worst task, its longest prompt, the limit, the fixes."""
    worst, c = max(fit.cuts.items(), key=lambda item: item[1].longest)
    others = f" (and {len(fit.cuts) - 1} other task(s))" if len(fit.cuts) > 1 else ""
    return ValueError(
        f"{worst}{others}: {c.prompts:,} prompt(s) do not fit the model's context: the longest needs "
        f"{c.longest:,} tokens, {model} takes {fit.limit:,} ({fit.source}); lm-eval would cut them from the left "
        "and score other prompts. Use a model with a longer context, or --allow-truncation to run them cut "
        "(the run line, the summary and the report then count them)"
    )


def _load_tokenizer(source: str) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source)
    except Exception as err:  # a tokenizer transformers cannot read
        raise ValueError(f"{source}: cannot load its tokenizer ({str(err).splitlines()[0][:200]})") from None


def load_for_context(source: str, server: bool) -> tuple[Any, Any]:
    """The tokenizer and config (None where there is none) of a model folder or hub id; no weights."""
    from transformers import AutoConfig

    tokenizer = _load_tokenizer(source)
    try:
        config = AutoConfig.from_pretrained(source)
    except Exception as err:
        if not server:  # an hf model without a config that loads cannot run at all
            raise ValueError(f"{source}: cannot read its config.json ({str(err).splitlines()[0][:200]})") from None
        config = None  # a tokenizer folder of a served model
    return tokenizer, config


def _folder_key(source: str, server: bool) -> str | None:
    """The key of a local model folder's context: transformers' version and each top-level file up to
    KEYED_FILE_BYTES (config, tokenizer, small weights), by name and content; None for a hub id."""
    folder = Path(source)
    if not folder.is_dir():
        return None
    from importlib.metadata import version

    digest = hashlib.sha256(f"transformers {version('transformers')} server={server}".encode())
    for file in sorted(folder.iterdir()):
        if file.is_file() and file.stat().st_size <= KEYED_FILE_BYTES:
            digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def model_context(source: str, server: bool) -> tuple[int | None, str, Any]:
    """The model's context (`context_length`; None: a served model's tokenizer folder that names none),
    where it comes from, and the tokenizer where it was loaded. Kept per local folder (`_folder_key`)
    under cache_root()/LIMITS_CACHE: loading a config imports torch and transformers, seconds that a
    run whose prompts are all short enough does not need again."""
    key = _folder_key(source, server)
    path = cache_root() / LIMITS_CACHE / f"{key}.json" if key else None
    if path is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            cached = json.loads(path.read_text())
            limit, where = cached["limit"], cached["source"]
            if (limit is None or (type(limit) is int and limit > 0)) and isinstance(where, str):
                return limit, where, None  # else not what model_context wrote: read afresh
    tokenizer, config = load_for_context(source, server)
    if server and config is None and getattr(tokenizer, "model_max_length", TOKENIZER_INFINITY) >= TOKENIZER_INFINITY:
        limit, where = None, "unknown"  # the served model's context is unknown here: the server judges
    else:
        limit, where = context_length(config, tokenizer)
    if path is not None:
        with contextlib.suppress(OSError, ValueError):  # a cache that cannot be written is no error
            make_folder(path.parent)
            write_text(path, json.dumps({"limit": limit, "source": where}))
    return limit, where, tokenizer


def check_context(
    args: argparse.Namespace, tasks: list[TaskRequests], source: str | None, metadata: dict[str, Any]
) -> Fit:
    """The run's prompts against the model's context (see the module docstring): an error when one
    does not fit, unless `args.allow_truncation`; returns what is cut."""
    server = args.backend == "server"
    if not source:
        return Fit()
    from biasmonkey.harness_ext.app.plan import _tokenizer_lm

    limit, where, tokenizer = model_context(source, server)
    if limit is None:
        return Fit()  # the served model's context is unknown here: the server judges
    if not args.apply_chat_template and not any(_may_not_fit(r, limit) for task in tasks for r in task.requests):
        return Fit(limit, where)  # every prompt is too short to be cut: no tokenizer needed
    lm = _tokenizer_lm(tokenizer if tokenizer is not None else _load_tokenizer(source))
    if args.apply_chat_template:  # the prompts as lm-eval will send them, template included
        from biasmonkey.harness_ext.app.plan import include_dir, task_spec

        chat_template = lm.apply_chat_template
        tasks = build_requests(
            task_spec(args.suite, args.tasks), metadata, args.limit, chat_template, include_dir(args)
        )
    fit = Fit(limit, where, find_cuts(tasks, lm, limit))
    label = Path(source).name if Path(source).exists() else source
    if fit.cuts and not getattr(args, "allow_truncation", False):
        raise too_long(fit, label)
    if fit.cuts:
        log.warning("%s", fit.sentence())
    return fit
