"""`biasmonkey plan`: what a run costs, per task and per backend, before any model is loaded.

The requests are built exactly as lm-eval builds them (its `TaskManager` over our task folder, then
each task's `build_all_requests`), and tokenised as lm-eval's HF backend tokenises them (lm-eval's
own `loglikelihood` on an `HFLM` that holds only the model's tokenizer, no weights). From them:

- documents: pairs, yes-no questions or cognitive-bias tests;
- harness requests: what the harness hands to the model (generation repeats counted);
- distinct prompts: distinct contexts; their prompt tokens, and their trie tokens (the distinct
  prefixes: what a backend that computes each shared prefix once must compute);
- model sequences and prompt tokens per backend, where a prompt token is a token the model must
  process (generated tokens are not counted):

  - `hf` (lm-eval's own): one sequence per distinct context + all-but-last continuation tokens (its
    logits cache groups requests so), of that many tokens;
  - `biasmonkey-hf`: every distinct prefix once: the prefix-tree (trie) tokens of all requests'
    context + all-but-last continuation tokens (one sequence per distinct context is counted);
  - `vllm` (also `sglang`, `local-completions`): one full sequence per log-likelihood request, of
    context + continuation minus the last token (prompt log-probabilities are requested, so the
    prefix cache is not used);
  - `biasmonkey-server`: one request per distinct context, of the context's tokens, for one-token
    continuations; one per distinct context + continuation, of all its tokens, for multi-token ones
    (the cognitive tasks' exact mode: their prompt log-probabilities are echoed, outside the prefix cache);
  - `server-prefix-cache`: the same requests to a server whose prefix cache is on (vLLM
    `--enable-prefix-caching`): at best the trie tokens of the distinct contexts (vLLM reuses whole
    blocks of `--block-size` tokens, so it computes somewhat more);
  - `inspect`: one request per side of a document (its own prompt; yes-no adds one no-context
    request per model; cognitive generate mode makes two calls per side, whose second prompt holds
    the first answer, so its tokens are unknown; exact mode of the cognitive tasks is lm-eval only).

Generation requests (sample and generate modes) are one sequence of the context per request on
every backend. Totals are over all tasks together: lm-eval batches the requests of all tasks, so
a prompt shared by several tasks (a response-bias task's original questions) is computed once.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.run_checks import check_device, check_model, device, positive_int, unknown_tasks
from biasmonkey.tasks.families import FAMILIES, family_of
from biasmonkey.tasks.options import add_cli_arguments, cli_metadata

OPTION_TYPES = [family.options_type for family in FAMILIES.values()]

# `--suite` → lm-eval task spec (a group or tag of the task YAML files).
SUITES = {name: family.suite for name, family in FAMILIES.items() if family.suite}  # open task tables have none
SUITES["all"] = ",".join(SUITES.values())
DEFAULT_SUITE = next(iter(FAMILIES))  # the first family's

DOCUMENT_UNITS = {name: family.unit for name, family in FAMILIES.items()}

# The backends a plan counts, in table order, and how each runs the requests.
BACKENDS = {
    "hf": "lm-eval hf: one sequence per context + all-but-last continuation tokens",
    "biasmonkey-hf": "each distinct prefix once: the prefix tree of the contexts and all-but-last continuation tokens",
    "vllm": "lm-eval vllm, sglang, local-completions: one full sequence per log-likelihood request",
    "biasmonkey-server": "one request per distinct context (one per context + label for multi-token labels)",
    "server-prefix-cache": "biasmonkey-server with the server's prefix cache on: at best the distinct contexts' trie tokens",
    "inspect": "one request per side of a document",
}
BACKEND_ALIASES = {"sglang": "vllm", "local-completions": "vllm", "stock-hf": "hf"}
BACKEND_LABELS = {"vllm": "vllm/sglang/local-completions", "server-prefix-cache": "server + prefix cache"}


def tasks_dir() -> Path:
    """The folder to pass to lm-eval's --include_path (the installed biasmonkey.tasks)."""
    import biasmonkey.tasks

    return Path(biasmonkey.tasks.__file__).resolve().parent


def select_tasks(args: argparse.Namespace, folder: Path) -> None:
    """A family's own task selection (its `task_selection` hook: task files it writes under
    `folder`) into `args.tasks` and `args.include_dir` (lm-eval's --tasks and --include_path);
    else unchanged."""
    from biasmonkey.harness_ext.app.cli import family_hooks

    for hook in family_hooks("task_selection"):
        if (chosen := hook(args, folder)) is not None:
            args.tasks, args.include_dir = chosen
            return


def include_dir(args: argparse.Namespace) -> Path:
    """lm-eval's --include_path of the run: biasmonkey's tasks, or the folder a selection wrote."""
    return getattr(args, "include_dir", None) or tasks_dir()


def task_spec(suite: str | None, tasks: str | None) -> str:
    """The lm-eval `--tasks` value: `tasks` if given, else the suite's group or tag."""
    return tasks or SUITES[suite or DEFAULT_SUITE]


# ---------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Request:
    """One lm-eval request: a log-likelihood (continuation set) or a generation (continuation None)."""

    doc_id: int
    context: str
    continuation: str | None
    repeats: int = 1
    max_gen_toks: int | None = None  # a generation's new tokens (its task's setting; None: the backend's)


@dataclass
class TaskRequests:
    """A task's requests as lm-eval builds them."""

    name: str
    family: str | None  # "response_bias", "yesno", "cognitive"; None for a task that is not ours
    options: Any  # the family's options as the task read them (None for other tasks)
    requests: list[Request]

    @property
    def documents(self) -> int:
        return len({r.doc_id for r in self.requests})


@contextlib.contextmanager
def _quiet_lm_eval() -> Iterator[None]:
    """No lm-eval progress bars or INFO lines while this process builds requests (warnings stay)."""
    import lm_eval.api.task as task_module

    logger = logging.getLogger("lm_eval")
    level, progress = logger.level, task_module.tqdm
    logger.setLevel(logging.WARNING)
    task_module.tqdm = functools.partial(progress, disable=True)
    try:
        yield
    finally:
        task_module.tqdm = progress
        logger.setLevel(level)


def _load_tasks(spec: str, metadata: dict[str, Any], include: Path | None = None) -> dict[str, Any]:
    """lm-eval's task objects for a task spec (our folder, or `include`, only, unless the spec names other tasks)."""
    from lm_eval.tasks import TaskManager

    from biasmonkey.harness_ext.lm_eval.task_index import resolves_within

    names = [name.strip() for name in spec.split(",") if name.strip()]
    folder = str(include or tasks_dir())
    ours = TaskManager(include_path=folder, include_defaults=False, metadata=metadata)
    if resolves_within(ours.task_index, names):
        return _loaded(ours, names)
    if any(not name.startswith("biasmonkey") for name in names):  # another suite's task: index lm-eval's too (slow)
        manager = TaskManager(include_path=folder, metadata=metadata)
        if set(names) <= set(manager.all_tasks):
            return _loaded(manager, names)
    raise unknown_tasks(spec, ours.all_tasks)


def _loaded(manager: Any, names: list[str]) -> dict[str, Any]:
    """The tasks' objects; a dataset that cannot be read or reached (lm-eval loads it here: a Hub
    dataset offline, a missing file) is one line naming the tasks and the fix."""
    try:
        return manager.load(names)["tasks"]
    except OSError as err:  # datasets' ConnectionError, DatasetNotFoundError and FileNotFoundError among them
        raise ValueError(
            f"{', '.join(names)}: a task's dataset could not be loaded ({type(err).__name__}: {err}); check its "
            "dataset_path and data files, or, for a Hugging Face Hub dataset, fetch it once with network "
            "(HF_HUB_OFFLINE and HF_DATASETS_OFFLINE unset) so that it is cached"
        ) from None


def build_requests(
    spec: str,
    metadata: dict[str, Any] | None = None,
    limit: int | None = None,
    chat_template: Any = None,
    include: Path | None = None,
) -> list[TaskRequests]:
    """Every task's requests, built as `lm_eval` builds them for a run with these arguments.

    `chat_template`: the model's `apply_chat_template` (as lm-eval passes it with --apply_chat_template);
    `include`: lm-eval's --include_path (default: biasmonkey's tasks)."""
    from lm_eval.evaluator_utils import get_sample_size

    out = []
    with _quiet_lm_eval():
        for name, task in _load_tasks(spec, dict(metadata or {}), include).items():
            # as lm_eval.simple_evaluate does without --num_fewshot and with its default seed
            if task.get_config("num_fewshot") is None:
                task.set_config(key="num_fewshot", value=0)
            task.set_fewshot_seed(seed=1234)
            task.build_all_requests(
                limit=get_sample_size(task, limit),
                rank=0,
                world_size=1,
                apply_chat_template=chat_template is not None,
                chat_template=chat_template,
            )
            requests = [
                Request(
                    inst.doc_id,
                    inst.args[0],
                    inst.args[1] if inst.request_type == "loglikelihood" else None,
                    inst.repeats or 1,
                    inst.args[1].get("max_gen_toks") if inst.request_type == "generate_until" else None,
                )
                for inst in task.instances
            ]
            family = family_of(name)
            out.append(TaskRequests(name, family.name if family else None, getattr(task, "options", None), requests))
    return out


# ---------------------------------------------------------------------------- tokens


def _tokenizer_lm(tokenizer: Any) -> Any:
    """lm-eval's HF backend with a tokenizer and no model: its own tokenisation of requests, each
    distinct string once (`prefill` encodes many in a batch, the same tokens as one at a time:
    backends/batch_encode.py)."""
    from lm_eval.api.model import LM
    from lm_eval.models.huggingface import HFLM

    from biasmonkey.harness_ext.lm_eval.backends.batch_encode import BatchEncoding

    class TokenizerOnlyHFLM(BatchEncoding, HFLM):
        def __init__(self, tokenizer: Any) -> None:
            LM.__init__(self)  # not HFLM.__init__, which loads the model
            self.tokenizer = tokenizer
            self.backend = "causal"
            self.add_bos_token = None
            self.custom_prefix_token_id = None
            self.enable_thinking = False
            self.chat_template_args: dict[str, Any] = {}

        def _loglikelihood_tokens(self, requests: list[Any], **kwargs: Any) -> list[Any]:
            return [(tuple(context), tuple(continuation)) for _, context, continuation in requests]

    return TokenizerOnlyHFLM(tokenizer)


def load_tokenizer(source: str | None) -> tuple[Any, str]:
    """The tokenizer of a model folder or hub id (default: the bundled SmolLM2), and its name; no weights."""
    from transformers import AutoTokenizer

    if source is None:
        from biasmonkey.harness_ext.app.default_model import ensure_default_model

        source = str(ensure_default_model(log=lambda message: print(message, file=sys.stderr)))
    return AutoTokenizer.from_pretrained(source), Path(source).name if Path(source).exists() else source


@dataclass(frozen=True)
class Encoded:
    """A request in tokens: a log-likelihood's context and continuation, or a generation's context."""

    request: Request
    context: tuple[int, ...]
    continuation: tuple[int, ...] = ()


def encode(tasks: Sequence[TaskRequests], lm: Any, batched: bool = True) -> dict[str, list[Encoded]]:
    """Each task's requests in tokens, as lm-eval's HF backend tokenises them (`batched`: every
    distinct string encoded in batches first, `lm.prefill`; tests/bench_plan_encode.py times both)."""
    from lm_eval.api.instance import Instance

    def one(task: TaskRequests) -> list[Encoded]:
        scored = [r for r in task.requests if r.continuation is not None]
        instances = [Instance("loglikelihood", {}, (r.context, r.continuation), 0) for r in scored]
        pairs = iter(lm.loglikelihood(instances, disable_tqdm=True) if instances else [])
        return [
            Encoded(r, *next(pairs)) if r.continuation is not None else Encoded(r, tuple(lm.tok_encode(r.context)))
            for r in task.requests
        ]

    if batched:
        lm.prefill(lambda: [one(task) for task in tasks])
    return {task.name: one(task) for task in tasks}


# ---------------------------------------------------------------------------- counting


@dataclass
class Cost:
    sequences: int | None = 0
    prompt_tokens: int | None = 0

    def add(self, sequences: int | None, tokens: int | None) -> None:
        self.sequences = None if self.sequences is None or sequences is None else self.sequences + sequences
        self.prompt_tokens = None if self.prompt_tokens is None or tokens is None else self.prompt_tokens + tokens


@dataclass
class Row:
    task: str
    documents: int
    requests: int
    distinct_prompts: int
    prompt_tokens: int = 0  # of the distinct contexts
    trie_tokens: int = 0  # their distinct prefixes
    costs: dict[str, Cost] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "documents": self.documents,
            "requests": self.requests,
            "distinct_prompts": self.distinct_prompts,
            "prompt_tokens": self.prompt_tokens,
            "trie_tokens": self.trie_tokens,
            "backends": {
                name: {"sequences": c.sequences, "prompt_tokens": c.prompt_tokens} for name, c in self.costs.items()
            },
        }


def simple_counts(tasks: Sequence[TaskRequests]) -> tuple[int, int, int]:
    """Documents, harness requests and distinct prompts of all tasks together (no tokenising)."""
    documents = sum(t.documents for t in tasks)
    requests = sum(r.repeats for t in tasks for r in t.requests)
    prompts = len({r.context for t in tasks for r in t.requests})
    return documents, requests, prompts


def _generations(encoded: Sequence[Encoded]) -> tuple[int, int]:
    """Sequences and prompt tokens of the generation requests: one sequence per request and repeat."""
    gens = [e for e in encoded if e.request.continuation is None]
    return sum(e.request.repeats for e in gens), sum(len(e.context) * e.request.repeats for e in gens)


def _stock_hf(encoded: Sequence[Encoded]) -> tuple[int, int]:
    groups = {e.context + e.continuation[:-1] for e in encoded if e.request.continuation is not None}
    gen_sequences, gen_tokens = _generations(encoded)
    return len(groups) + gen_sequences, sum(map(len, groups)) + gen_tokens


def _served(encoded: Sequence[Encoded], prefix_cache: bool) -> tuple[int, int]:
    """biasmonkey-server: one request per distinct context text of one-token continuations, of its
    tokens (with the server's prefix cache on, at best their trie tokens), and one per distinct full
    sequence of a multi-token continuation (its prompt log-probabilities echoed, of all its tokens:
    vLLM reads no prefix cache for such requests)."""
    scored = [e for e in encoded if e.request.continuation is not None]
    contexts = {e.request.context: e.context for e in scored if len(e.continuation) == 1}
    sequences = {(*e.context, *e.continuation) for e in scored if len(e.continuation) > 1}
    tokens = trie_token_count(contexts.values()) if prefix_cache else sum(map(len, contexts.values()))
    gen_sequences, gen_tokens = _generations(encoded)
    return len(contexts) + len(sequences) + gen_sequences, tokens + sum(map(len, sequences)) + gen_tokens


def trie_token_count(token_lists: Any) -> int:
    """The distinct prefixes of the sequences (`prompt_trie.trie_token_count`; imported here, since the
    backends' package registers them with lm-eval, which the other commands never import)."""
    from biasmonkey.harness_ext.lm_eval.backends.prompt_trie import trie_token_count as count

    return count(token_lists)


def _distinct_contexts(encoded: Sequence[Encoded]) -> list[tuple[int, ...]]:
    return list({e.context: None for e in encoded})


def _prefix_tree(encoded: Sequence[Encoded]) -> tuple[int, int]:
    """biasmonkey-hf: the trie tokens of every scored request's context + all-but-last continuation tokens."""
    scored = [e for e in encoded if e.request.continuation is not None]
    tokens = trie_token_count(e.context + e.continuation[:-1] for e in scored)
    gen_sequences, gen_tokens = _generations(encoded)
    return len({e.context for e in scored}) + gen_sequences, tokens + gen_tokens


def _per_request(encoded: Sequence[Encoded]) -> tuple[int, int]:
    scored = [e for e in encoded if e.request.continuation is not None]
    tokens = sum(len(e.context) + len(e.continuation) - 1 for e in scored)
    gen_sequences, gen_tokens = _generations(encoded)
    return len(scored) + gen_sequences, tokens + gen_tokens


def _inspect(task: TaskRequests, encoded: Sequence[Encoded]) -> tuple[int | None, int | None]:
    """Inspect: one request per side of a document (see the module docstring)."""
    family = FAMILIES.get(task.family or "")
    calls = family.inspect_calls(task.options) if family else None
    if family is None or calls is None:
        return None, None
    by_doc: dict[int, dict[str, int]] = defaultdict(dict)
    for e in encoded:
        if e.request.context:  # no-context requests are shared by the tasks, below
            by_doc[e.request.doc_id].setdefault(e.request.context, len(e.context))
    shared = family.inspect_shared_calls
    requests = calls.sides * calls.per_side * len(by_doc) + shared
    if not calls.known_tokens:
        return requests, None
    lengths = by_doc.values()
    return requests, sum(round(sum(ls.values()) * calls.sides / len(ls)) * calls.per_side for ls in lengths) + shared


def backend_cost(backend: str, tasks: Sequence[TaskRequests], encoded: dict[str, list[Encoded]]) -> Cost:
    """Sequences and prompt tokens of `tasks` run together on `backend`."""
    every = [e for t in tasks for e in encoded[t.name]]
    if backend == "hf":
        return Cost(*_stock_hf(every))
    if backend == "biasmonkey-hf":
        return Cost(*_prefix_tree(every))
    if backend in ("biasmonkey-server", "server-prefix-cache"):
        return Cost(*_served(every, prefix_cache=backend == "server-prefix-cache"))
    if backend == "vllm":
        return Cost(*_per_request(every))
    if backend == "inspect":
        cost = Cost()
        for t in tasks:
            cost.add(*_inspect(t, encoded[t.name]))
        for family in FAMILIES.values():  # a family's shared calls are once per model, not per task
            extra = family.inspect_shared_calls * max(sum(t.family == family.name for t in tasks) - 1, 0)
            cost.add(-extra, -extra)
        return cost
    raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")


def plan_rows(tasks: Sequence[TaskRequests], encoded: dict[str, list[Encoded]], backends: Sequence[str]) -> list[Row]:
    """One row per task and a last row for all tasks together."""
    rows = []
    for group, label in [([t], t.name) for t in tasks] + [(list(tasks), "total")]:
        documents, requests, prompts = simple_counts(group)
        contexts = _distinct_contexts([e for t in group for e in encoded[t.name]])
        row = Row(label, documents, requests, prompts, sum(map(len, contexts)), trie_token_count(contexts))
        for backend in backends:
            row.costs[backend] = backend_cost(backend, group, encoded)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------- output


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def format_table(rows: Sequence[Row], backends: Sequence[str]) -> str:
    """A fixed-width table: per backend "sequences / prompt tokens"."""
    header = ["task", "documents", "requests", "distinct prompts", "prompt tokens", "trie tokens"]
    header += [BACKEND_LABELS.get(b, b) for b in backends]
    body = [
        [r.task, _number(r.documents), _number(r.requests), _number(r.distinct_prompts)]
        + [_number(r.prompt_tokens), _number(r.trie_tokens)]
        + [f"{_number(r.costs[b].sequences)} / {_number(r.costs[b].prompt_tokens)}" for b in backends]
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def fmt(line: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))

    lines = [fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(line) for line in body[:-1]] + [fmt(["-" * w for w in widths]), fmt(body[-1])]
    return "\n".join(lines)


def parse_backends(text: str) -> list[str]:
    if text == "all":
        return list(BACKENDS)
    chosen = []
    for name in (n.strip() for n in text.split(",")):
        name = BACKEND_ALIASES.get(name, name)
        if name not in BACKENDS:
            raise argparse.ArgumentTypeError(f"unknown backend {name!r}; use all or some of {', '.join(BACKENDS)}")
        chosen.append(name)
    return list(dict.fromkeys(chosen))


def cmd_plan(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="biasmonkey-plan-") as folder:
        select_tasks(args, Path(folder))
        return plan_selected(args)


def plan_selected(args: argparse.Namespace) -> int:
    spec = task_spec(args.suite, args.tasks)
    metadata = cli_metadata(args, OPTION_TYPES)
    if args.calibrate:
        check_device(args.device)
    if args.tokenizer:  # a missing folder or unreachable hub id: one line, before loading anything
        check_model(args.tokenizer, "--tokenizer", weights=False)
    elif args.model:
        check_model(args.model, weights=args.calibrate)
    tokenizer, tokenizer_name = load_tokenizer(args.tokenizer or args.model)
    lm = _tokenizer_lm(tokenizer)
    chat_template = lm.apply_chat_template if args.apply_chat_template else None
    tasks = build_requests(spec, metadata, args.limit, chat_template, include_dir(args))
    encoded = encode(tasks, lm)
    rows = plan_rows(tasks, encoded, args.backend)
    estimates: dict[str, float | None] = {}
    calibration = None
    if args.calibrate:
        from biasmonkey.harness_ext.app.calibrate import calibrate
        from biasmonkey.harness_ext.app.default_model import ensure_default_model

        model = args.model or str(ensure_default_model(log=lambda message: print(message, file=sys.stderr)))
        calibration = calibrate(model, [e.context for t in tasks for e in encoded[t.name]], args.device)
        estimates = {
            b: None if c.prompt_tokens is None else c.prompt_tokens * calibration.seconds_per_token
            for b, c in rows[-1].costs.items()
        }
    if args.json:
        print(
            json.dumps(
                {
                    "tasks": spec,
                    "options": metadata,
                    "limit": args.limit,
                    "apply_chat_template": args.apply_chat_template,
                    "tokenizer": tokenizer_name,
                    "backends": {b: BACKENDS[b] for b in args.backend},
                    "rows": [r.as_dict() for r in rows],
                    **(
                        {"calibration": vars(calibration), "estimated_seconds": estimates}
                        if calibration is not None
                        else {}
                    ),
                },
                indent=2,
            )
        )
        return 0
    settings = [f"--tasks {spec} ({len(tasks)} task{'s' if len(tasks) != 1 else ''})", f"tokenizer {tokenizer_name}"]
    settings += [f"options {json.dumps(metadata)}"] if metadata else []
    settings += [f"--limit {args.limit}"] if args.limit is not None else []
    settings += ["chat template"] if args.apply_chat_template else []
    print(f"biasmonkey plan: {', '.join(settings)}")
    print("per backend: model sequences / prompt tokens")
    print(format_table(rows, args.backend))
    print()
    for b in args.backend:
        print(f"{BACKEND_LABELS.get(b, b)}: {BACKENDS[b]}")
    if rows[-1].trie_tokens:
        share = rows[-1].prompt_tokens / rows[-1].trie_tokens
        print(
            f"The distinct prompts hold {share:.2f}× their trie tokens: computing each shared prefix once saves that."
        )
    if calibration is not None:
        print(
            f"Calibration: {calibration.seconds_per_token * 1e3:.3f} ms per prompt token on {calibration.device} "
            f"({calibration.dtype}) "
            f"({calibration.prompts} of the prompts, {calibration.tokens} tokens, fastest of {calibration.rounds}); "
            "estimated time of all tasks (prompt tokens only): "
            + ", ".join(f"{BACKEND_LABELS.get(b, b)} {_duration(t)}" for b, t in estimates.items())
        )
    total = rows[-1].costs
    if "vllm" in total and "biasmonkey-hf" in total and total["biasmonkey-hf"].sequences:
        ratio = total["vllm"].sequences / total["biasmonkey-hf"].sequences
        print(f"vllm/sglang/local-completions run {ratio:.1f}× the sequences of biasmonkey-hf.")
    return 0


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return (
        f"{seconds:.0f} s"
        if seconds < 120
        else f"{seconds / 60:.1f} min"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h"
    )


def add_selection_arguments(p: argparse.ArgumentParser) -> None:
    """--suite/--tasks, the run options, --limit and --apply-chat-template (shared by `run` and `plan`)."""
    p.add_argument(
        "--suite",
        choices=list(SUITES),
        default=DEFAULT_SUITE,
        help=f"which suite to run (default: {DEFAULT_SUITE}); --tasks overrides it",
    )
    p.add_argument("--tasks", help="lm-eval task names, groups or tags, comma-separated (overrides --suite)")
    add_cli_arguments(p.add_argument_group("run options (lm-eval --metadata; default: each task's own)"), OPTION_TYPES)
    from biasmonkey.harness_ext.app.cli import family_hooks

    for hook in family_hooks("add_selection_options"):
        hook(p)
    p.add_argument("--limit", type=positive_int, help="documents (pairs, questions, tests) per task, for a quick look")
    p.add_argument(
        "--apply-chat-template",
        action="store_true",
        help="send each prompt through the model's chat template (default: the raw prompt, the papers' protocol); "
        "a setting of its own in every summary and report",
    )


def add_subcommand(subparsers: Any) -> None:
    """Register `plan` on the `biasmonkey` CLI's subparsers."""
    p = subparsers.add_parser(
        "plan",
        help="what a run will cost before it starts: requests, distinct prompts and prompt tokens per task and backend",
    )
    add_selection_arguments(p)
    p.add_argument("--model", help="model folder or hub id whose tokenizer counts tokens (default: bundled SmolLM2)")
    p.add_argument("--tokenizer", help="tokenizer folder or hub id (overrides --model)")
    p.add_argument(
        "--backend",
        type=parse_backends,
        default=list(BACKENDS),
        help=f"comma-separated, or all (default): {', '.join(BACKENDS)} (sglang and local-completions count as vllm)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="time the model (--model, default the bundled SmolLM2) on a few of the prompts and estimate each "
        "backend's time from its prompt tokens (loads the weights)",
    )
    p.add_argument(
        "--device",
        type=device,
        default="cpu",
        help="where --calibrate runs the model: cpu (default), cuda, cuda:N, mps or xpu",
    )
    p.set_defaults(func=cmd_plan)
