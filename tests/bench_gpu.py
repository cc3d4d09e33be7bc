"""GPU benchmark of `--model biasmonkey-hf` against stock lm-eval `hf` and the floor (not a test).

Two steps, so that the GPU machine needs neither network nor task data:

    python tests/bench_gpu.py build --bundle gpu_bundle           # any machine with the data
    python tests/bench_gpu.py run --bundle gpu_bundle --shapes 1.7b 8b --out bench_out/gpu.json
    python tests/bench_gpu.py first --bundle gpu_bundle --shapes 1.7b --suites yesno_few_shot [--engine stock]

`build` records lm-eval's token-level log-likelihood requests of every suite (every document;
cognitive: the test fixture) with the SmolLM2 tokenizer, and saves them with the tokenizer and,
in `data/`, the upstream files of the few-shot yes-no and response-bias tasks, for whole lm-eval
runs on the GPU machine (`bench_host.py --lm-eval-tasks`, which times a run's phases outside the
model too).
`run` builds random-weight Llama models of the given shapes on the GPU (timings do not depend on
the weights; the vocabulary is SmolLM2's 49,152), bfloat16 with sdpa attention, and per model and
suite times, after a warm-up on an eighth of each suite's requests, the fastest of `--rounds`
interleaved rounds of:

- stock `hf` (lm-eval's `HFLM._loglikelihood_tokens`) at each `--stock-batch` (`auto`: lm-eval's
  detection, run on every call as it does; measured in the first round only; none given: not run);
- `biasmonkey-hf` at each `--batch` (`auto`: its estimate, auto_batch.py), `--row-tokens`,
  `--pack-rows` (several planned rows in one batch row: fewer forwards), `--fuse-norms`
  (RMSNorm in one kernel, fused_norms.py) and `--attention-chunk` (attention in query chunks over
  the keys they see, chunked_attention.py);
- the floor: one batched forward per distinct context, the LM head at the last position only
  (bench_floor.py), at `--floor-batch` rows (`--no-floor`: not run; a short device session can
  spend its minutes on `biasmonkey-hf`'s variants);
- with `--baseline CHECKOUT` (another checkout of this repository), that checkout's
  `biasmonkey-hf` (its hf_prefix.py, request_cache.py, score_tally.py and prompt_trie.py, the rest from this one) at each
  `--batch`, the first `--row-tokens` and `--pack-rows`: `baseline_<batch>`.

It prints and writes, per model and suite: those times and their ratios; the share of the compute
limit (2 x non-embedding parameters x prefix-tree tokens at the device's measured bf16 matrix
rate); where biasmonkey-hf's time goes (model forwards, kept-cache assembly, the host's Python
around them; from one extra call with the device synchronised around each part), how much of the
host's time the device's work did not hide (the fastest plain call less model and cache), how
often a call makes the host wait for the device (CUDA's sync debug mode) and, with `--profile`,
the share of a call's time the device spent in kernels and the kernels that took most; the same for
the first call on a fresh model (made just before: it waits for biasmonkey-hf's warm-up, which
`first --entry strings` overlaps with tokenising), against the fastest later one; and the largest |difference| in log-likelihood
between stock and biasmonkey-hf beside stock's own across its batch sizes (bfloat16), and in
float32 on the first `--float32-requests` requests of each suite (first shape only).

`first` times the first call in a fresh process (nothing run on the device before but the random
model's initialisation), as a user's run meets it, beside two later calls, for `--engine`
biasmonkey-hf or stock `hf` (batch 32; the first of `--shapes` and `--suites`). With `--profile`
it profiles the first and a later call instead and lists the host-side events (CUDA's runtime
calls among them: kernel launches, which load a kernel's module at its first launch, and
allocations) that took most, and their difference. Run it once per engine, each in its own
process; `CUDA_MODULE_LOADING=EAGER` loads every kernel when the process starts instead. With
`--entry strings` each call is lm-eval's `loglikelihood` on the requests' text (decoded from the
bundle's tokens), tokenising included, as a run calls the model right after making it and building
its tasks: biasmonkey-hf's warm-up (`--warm-up`, warm_up.py) runs while the first call tokenises.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import importlib.util
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from bench_floor import last_position_forward, synchronize  # noqa: E402
from lm_eval.models.huggingface import HFLM  # noqa: E402

from biasmonkey.harness_ext.lm_eval.backends.hf_prefix import PrefixReuseHFLM  # noqa: E402

GPU_SUITES = ["yesno_few_shot", "response_bias", "answer_position", "cognitive"]
VOCABULARY = 49152  # SmolLM2's tokenizer
# Llama-architecture shapes: SmolLM2-1.7B's, and Llama-3-8B's with SmolLM2's vocabulary.
SHAPES: dict[str, dict[str, Any]] = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, tie_word_embeddings=True),
    "1.7b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
                 num_key_value_heads=32, tie_word_embeddings=True, rope_theta=130000.0),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, tie_word_embeddings=False, rope_theta=500000.0),
}  # fmt: skip
# the upstream files of the whole runs: COMPS and bAbI yes-no questions, the response-bias prompts
RUN_DATA = ("yesno/compsynq-data.zip", "yesno/babiynq-data.zip", "biasmonkey/prompts/", "biasmonkey/all-questions")
COUNTERS = ("trie_tokens", "computed_tokens", "continuation_tokens", "padding_tokens", "forward_passes", "rows")

Requests = list[tuple[tuple[str, str], list[int], list[int]]]


# ---------------------------------------------------------------------------- build (any machine)


def build(bundle: Path) -> None:
    from bench_prefix_sharing import Recorder, default_model, requests_of

    lm = PrefixReuseHFLM(pretrained=default_model(), device="cpu", batch_size=1, dtype="float32")
    recorder = Recorder(pretrained=lm.model, tokenizer=lm.tokenizer, device="cpu", batch_size=1)
    suites = {}
    for suite in GPU_SUITES:
        requests = requests_of(recorder, suite, every=True)
        contexts = sorted({tuple(context) for _, context, _ in requests})
        index = {context: i for i, context in enumerate(contexts)}
        suites[suite] = {
            "contexts": [list(c) for c in contexts],
            "requests": [[index[tuple(context)], list(cont)] for _, context, cont in requests],
        }
        print(f"{suite}: {len(requests)} requests, {len(contexts)} distinct contexts", flush=True)
    bundle.mkdir(parents=True, exist_ok=True)
    lm.tokenizer.save_pretrained(bundle / "tokenizer")
    copy_run_data(bundle / "data")
    with gzip.open(bundle / "requests.json.gz", "wt") as f:
        json.dump(suites, f)


def copy_run_data(folder: Path) -> None:
    """The data files of the whole lm-eval runs that `bench_host.py --lm-eval-tasks` times (few-shot
    yes-no and response bias), laid out as in $BIASMONKEY_DATA_DIR, to travel with the bundle."""
    from biasmonkey.tasks.fetch import DATA_DIR_ENV, pinned_files

    source = Path(os.environ[DATA_DIR_ENV])
    for pinned in pinned_files():
        if pinned.local_path.startswith(RUN_DATA):
            target = folder / pinned.local_path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / pinned.local_path, target)


def load_bundle(bundle: Path) -> dict[str, Requests]:
    with gzip.open(bundle / "requests.json.gz", "rt") as f:
        suites = json.load(f)
    return {
        suite: [(("", ""), data["contexts"][i], cont) for i, cont in data["requests"]] for suite, data in suites.items()
    }


# ---------------------------------------------------------------------------- run (the GPU machine)


def baseline_class(checkout: Path) -> type[PrefixReuseHFLM]:
    """`PrefixReuseHFLM` as `checkout` has it: its hf_prefix.py (not registered with lm-eval) over
    its request_cache.py's `cache_answers`, its score_tally.py's `Tally` (where it has one) and its
    prompt_trie.py's tree and planner."""
    folder = checkout / "harness_ext" / "lm_eval" / "backends"
    modules = {}
    for name in ("request_cache", "score_tally", "prompt_trie", "hf_prefix"):
        if not (folder / f"{name}.py").exists():
            continue
        spec = importlib.util.spec_from_file_location(f"baseline_{name}", folder / f"{name}.py")
        module = modules[name] = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (dataclasses look their module up)
        source = Path(spec.origin).read_text().replace('@register_model("biasmonkey-hf")\n', "")
        exec(compile(source, spec.origin, "exec"), module.__dict__)
    modules["hf_prefix"].cache_answers = modules["request_cache"].cache_answers
    if "score_tally" in modules:
        modules["hf_prefix"].Tally = modules["score_tally"].Tally
    for name in ("ROOT", "PromptTrie", "Row", "RowPlanner", "plan_rows", "trie_token_count"):
        if hasattr(modules["hf_prefix"], name):
            setattr(modules["hf_prefix"], name, getattr(modules["prompt_trie"], name))
    return modules["hf_prefix"].PrefixReuseHFLM


def build_model(shape: str, dtype: torch.dtype, device: str, vocabulary: int = VOCABULARY) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=vocabulary, max_position_embeddings=8192, **SHAPES[shape])
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa")
    return model.eval()


def non_embedding_parameters(model: torch.nn.Module) -> int:
    embedded = {id(p) for m in (model.get_input_embeddings(), model.get_output_embeddings()) for p in m.parameters()}
    return sum(p.numel() for p in model.parameters() if id(p) not in embedded)


def matmul_rate(device: str) -> float:
    """The device's bfloat16 matrix-product rate in FLOP/s (8192^3, the mean of ten after three)."""
    if torch.device(device).type != "cuda":
        return float("nan")
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    synchronize(device)
    start = time.perf_counter()
    for _ in range(10):
        a @ a
    synchronize(device)
    return 10 * 2 * 8192**3 / (time.perf_counter() - start)


def timed(device: str, call: Callable[[], Any]) -> tuple[float, Any]:
    synchronize(device)
    start = time.perf_counter()
    out = call()
    synchronize(device)
    return time.perf_counter() - start, out


def breakdown(lm: PrefixReuseHFLM, requests: Requests, device: str) -> dict[str, float]:
    """Seconds of one call in model forwards, kept-cache assembly and the rest (the host), the
    device synchronised around each forward and each assembly."""
    spent = {"model": 0.0, "cache": 0.0}

    def clocked(part: str, method: Callable) -> Callable:
        def run(*args: Any, **kwargs: Any) -> Any:
            seconds, out = timed(device, lambda: method(*args, **kwargs))
            spent[part] += seconds
            return out

        return run

    lm._forward = clocked("model", lm._forward)
    lm._prefix_cache = clocked("cache", lm._prefix_cache)
    try:
        total, _ = timed(device, lambda: lm._loglikelihood_tokens(requests, disable_tqdm=True))
    finally:
        del lm._forward, lm._prefix_cache
    return {"total": total, **spent, "host": total - spent["model"] - spent["cache"]}


def device_waits(lm: PrefixReuseHFLM, requests: Requests, device: str) -> dict[str, Any] | None:
    """How often one call makes the host wait for the device (copies from pageable memory, item(),
    synchronisations: CUDA's sync debug mode), and the Python lines that waited; None off CUDA.
    Each wait leaves the device idle while the host prepares the next forward."""
    if torch.device(device).type != "cuda":
        return None
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            lm._loglikelihood_tokens(requests, disable_tqdm=True)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    waits = [w for w in caught if "synchroniz" in str(w.message)]
    sites: dict[str, int] = {}
    for w in waits:
        site = f"{Path(w.filename).name}:{w.lineno}"
        sites[site] = sites.get(site, 0) + 1
    return {"count": len(waits), "sites": sites}


def kernel_profile(lm: PrefixReuseHFLM, requests: Requests, device: str, top: int = 12) -> dict[str, Any]:
    """One call under torch's profiler: the share of its wall time the device spent in kernels
    (on one stream they do not overlap: the rest is the device idle, waiting for the host), and
    the kernels (on CPU: operators) that took most of it."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.device(device).type == "cuda"
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    with profile(activities=activities) as prof:
        seconds, _ = timed(device, lambda: lm._loglikelihood_tokens(requests, disable_tqdm=True))
    kind = "device" if cuda else "cpu"
    # on CUDA the kernels' own events (an operator's device time is its kernels'); on CPU the operators
    on = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    spent = [
        (event.key, event.count, getattr(event, f"self_{kind}_time_total") / 1e6)
        for event in prof.key_averages()
        if event.device_type == on
    ]
    busy = sum(s for _, _, s in spent)
    spent.sort(key=lambda event: -event[2])
    return {
        "wall_s": round(seconds, 3),
        f"{kind}_busy_s": round(busy, 3),
        f"{kind}_busy_share": round(busy / seconds, 3),
        "top": [{"name": name[:80], "calls": calls, "s": round(s, 4)} for name, calls, s in spent[:top]],
    }


def host_events(device: str, call: Callable[[], Any], top: int = 15) -> tuple[float, dict[str, float]]:
    """One call under torch's profiler: its seconds, and the host-side events' own seconds by name
    (operators and CUDA's runtime calls), largest first."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        seconds, _ = timed(device, call)
    spent = {
        event.key[:60]: event.self_cpu_time_total / 1e6
        for event in prof.key_averages()
        if event.device_type == torch.autograd.DeviceType.CPU
    }
    return seconds, dict(sorted(spent.items(), key=lambda kv: -kv[1])[:top])


def first_calls(args: argparse.Namespace) -> None:
    """`first` (see the module docstring)."""
    from transformers import AutoTokenizer

    device, shape = args.device, args.shapes[0]
    suite = (args.suites or ["yesno_few_shot"])[0]
    tokenizer = AutoTokenizer.from_pretrained(args.bundle / "tokenizer")
    requests = load_bundle(args.bundle)[suite]
    if args.entry == "strings":  # the requests as lm-eval hands them to `loglikelihood`: text
        from lm_eval.api.instance import Instance

        text: dict[int, str] = {}  # a context list's text, decoded once
        pairs = [(text.setdefault(id(c), tokenizer.decode(c)), tokenizer.decode(k)) for _, c, k in requests]
        instances = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]
    model = build_model(shape, torch.bfloat16, device)
    synchronize(device)
    common = {"pretrained": model, "tokenizer": tokenizer, "batch_size": 32, "max_batch_size": 64}
    lm = HFLM(**common) if args.engine == "stock" else PrefixReuseHFLM(**common, warm_up=args.warm_up)
    if args.entry == "strings":
        call = functools.partial(lm.loglikelihood, instances, disable_tqdm=True)
    else:
        call = functools.partial(lm._loglikelihood_tokens, requests, True)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else device,
        "engine": args.engine,
        "shape": shape,
        "suite": suite,
        "entry": args.entry,
        "warm_up": args.warm_up if args.engine == "biasmonkey" else None,
        "module_loading": os.environ.get("CUDA_MODULE_LOADING", "default (lazy)"),
    }
    if args.profile:
        first_s, first = host_events(device, call, top=40)
        later_s, later = host_events(device, call, top=40)
        report.update(first_profiled_s=round(first_s, 3), later_profiled_s=round(later_s, 3))
        report["first_host_events_s"] = {k: round(v, 4) for k, v in list(first.items())[:15]}
        more = {k: v - later.get(k, 0.0) for k, v in first.items()}
        report["first_minus_later_s"] = {k: round(v, 4) for k, v in sorted(more.items(), key=lambda kv: -kv[1])[:15]}
    else:
        report["first_s"] = round(timed(device, call)[0], 3)
        report["later_s"] = [round(timed(device, call)[0], 3) for _ in range(2)]
        report["first_over_later"] = round(report["first_s"] / min(report["later_s"]), 2)
    if device.startswith("cuda"):
        report["device_allocations"] = torch.cuda.memory_stats(device).get("num_device_alloc")
    print(json.dumps(report, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")


def plan_estimates(
    model: torch.nn.Module, tokenizer: Any, suites: dict[str, Requests], rows: dict[str, Any], device: str
) -> dict[str, Any]:
    """`biasmonkey plan --calibrate --device cuda` on this model (saved to a temporary folder): its
    seconds per prompt token, and per suite its estimates (prompt tokens for stock `hf`, trie tokens
    for biasmonkey-hf) beside the measured times."""
    import tempfile

    from biasmonkey.harness_ext.app.calibrate import calibrate

    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        contexts = [c for requests in suites.values() for _, c, _ in requests]
        calibration = calibrate(folder, contexts, device)
    per_token = calibration.seconds_per_token
    out: dict[str, Any] = {"seconds_per_token": per_token, "dtype": calibration.dtype, "suites": {}}
    for suite, requests in suites.items():
        if suite not in rows:
            continue
        prompt_tokens = sum(len(c) for c in {tuple(c) for _, c, _ in requests})
        seconds = rows[suite]["seconds"]
        out["suites"][suite] = {
            "stock_estimate_s": round(prompt_tokens * per_token, 3),
            "stock_measured_s": min((v for k, v in seconds.items() if k.startswith("stock_")), default=None),
            "biasmonkey_estimate_s": round(rows[suite]["trie_tokens"] * per_token, 3),
            "biasmonkey_measured_s": min((v for k, v in seconds.items() if k.startswith("biasmonkey_")), default=None),
        }
    return out


def largest_difference(a: list[tuple[float, bool]], b: list[tuple[float, bool]]) -> float:
    return max(abs(x - y) for (x, _), (y, _) in zip(a, b))


def batch_argument(value: str) -> int | str:
    return value if value.startswith("auto") else int(value)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.perf_counter()
        self.report: dict[str, Any] = {"device": "", "models": {}, "skipped": []}

    def over_budget(self, what: str) -> bool:
        if time.perf_counter() - self.started > self.args.budget:
            self.report["skipped"].append(what)
            print(f"over the time budget: skipping {what}", flush=True)
            return True
        return False

    def save(self) -> None:
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        self.args.out.write_text(json.dumps(self.report, indent=1) + "\n")

    def run(self) -> None:
        args = self.args
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.bundle / "tokenizer")
        suites = load_bundle(args.bundle)
        if args.suites:
            suites = {s: suites[s] for s in args.suites}
        device = args.device
        self.report["device"] = torch.cuda.get_device_name(device) if device.startswith("cuda") else device
        rate = matmul_rate(device)
        self.report["bf16_matmul_tflops"] = round(rate / 1e12, 1)
        print(f"{self.report['device']}: bf16 matrix products at {rate / 1e12:.0f} TFLOP/s", flush=True)
        for n, shape in enumerate(args.shapes):
            if self.over_budget(f"model {shape}"):
                break
            self.model(shape, tokenizer, suites, rate, float32=n == 0 and args.float32_requests > 0)
        self.save()
        print_table(self.report)

    def model(self, shape: str, tokenizer: Any, suites: dict[str, Requests], rate: float, float32: bool) -> None:
        args, device = self.args, self.args.device
        model = build_model(shape, torch.bfloat16, device)
        parameters = non_embedding_parameters(model)
        common = {"pretrained": model, "tokenizer": tokenizer, "max_batch_size": 64}
        stock = {f"stock_{b}": HFLM(batch_size=batch_argument(b), **common) for b in args.stock_batch}
        variants = [
            (b, r, p, f, c)
            for b in args.batch
            for r in args.row_tokens
            for p in args.pack_rows
            for f in args.fuse_norms
            for c in args.attention_chunk
        ]
        # one warm-up thread, the first variant's (whose first call is timed below): several on
        # one model at once would also race to install their fused norms
        ours = {
            f"biasmonkey_{b}"
            + (f"_rows{r}" if len(args.row_tokens) > 1 else "")
            + (f"_pack{p}" if len(args.pack_rows) > 1 else "")
            + (f"_fuse{f}" if len(args.fuse_norms) > 1 else "")
            + (f"_chunk{c}" if len(args.attention_chunk) > 1 else ""): PrefixReuseHFLM(
                batch_size=batch_argument(b),
                row_tokens=r,
                pack_rows=p,
                fuse_norms=f,
                attention_chunk=c,
                warm_up="auto" if n == 0 else False,
                **common,
            )
            for n, (b, r, p, f, c) in enumerate(variants)
        }
        if args.baseline:  # the other checkout's, at the first row_tokens and pack_rows
            baseline = baseline_class(args.baseline)
            for b in args.batch:
                ours[f"baseline_{b}"] = baseline(
                    batch_size=batch_argument(b), row_tokens=args.row_tokens[0], pack_rows=args.pack_rows[0], **common
                )
        first_lm = next(iter(ours.values()))
        floor_lm = next(iter(stock.values())) if stock else HFLM(batch_size=args.floor_batch, **common)
        entry: dict[str, Any] = {"non_embedding_parameters": parameters, "suites": {}}
        self.report["models"][shape] = entry
        # the first call on the fresh model, as a user's run meets it
        first_suite = next(iter(suites))
        first = breakdown(first_lm, suites[first_suite], device)
        entry["first_call_s"], entry["first_call_breakdown_s"] = (
            first["total"],
            {k: round(v, 3) for k, v in first.items()},
        )
        entry["first_call_suite"] = first_suite
        for suite, requests in suites.items():  # warm-up
            part = requests[: max(1, len(requests) // 8)]
            for name, lm in {**stock, **ours}.items():
                if not (name.startswith("stock_auto") or lm is first_lm and suite == first_suite):
                    lm._loglikelihood_tokens(part, disable_tqdm=True)
            if args.floor:
                last_position_forward(floor_lm, list({tuple(c) for _, c, _ in part}), args.floor_batch)

        seconds: dict[str, dict[str, list[float]]] = {s: {} for s in suites}
        answers: dict[str, dict[str, list]] = {s: {} for s in suites}
        for round_ in range(args.rounds):
            for suite, requests in suites.items():
                if self.over_budget(f"{shape} round {round_ + 1} {suite}"):
                    continue
                contexts = list({tuple(c) for _, c, _ in requests})
                times = seconds[suite]
                if args.floor:
                    times.setdefault("floor", []).append(
                        last_position_forward(floor_lm, contexts, args.floor_batch) if contexts else float("nan")
                    )
                for name, lm in {**stock, **ours}.items():
                    if name.startswith("stock_auto") and round_:
                        continue  # its detection dominates; once is enough
                    if hasattr(lm, "reset_counters"):  # (biasmonkey-hf, this checkout's or the baseline's)
                        lm.reset_counters()
                    t, out = timed(device, functools.partial(lm._loglikelihood_tokens, requests, True))
                    times.setdefault(name, []).append(t)
                    answers[suite].setdefault(name, out)
                print(f"{shape} round {round_ + 1} {suite}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in times.items()))
                entry["suites"][suite] = self.summary(suite, requests, times, answers[suite], ours, parameters, rate)
                self.save()
        first_name = next(iter(ours))
        for suite, requests in suites.items():
            if suite in entry["suites"] and not self.over_budget(f"{shape} breakdown {suite}"):
                row, parts = entry["suites"][suite], breakdown(first_lm, requests, device)
                row["breakdown_s"] = {k: round(v, 3) for k, v in parts.items()}
                # the host's time that the device's work did not hide, in the fastest plain call
                if first_name in row["seconds"]:
                    row["host_exposed_s"] = round(row["seconds"][first_name] - parts["model"] - parts["cache"], 3)
                row["host_waits_per_call"] = device_waits(first_lm, requests, device)
                if self.args.profile:
                    row["profile"] = kernel_profile(first_lm, requests, device)
        if float32 and not self.over_budget(f"{shape} calibration"):
            entry["plan_calibration"] = plan_estimates(model, tokenizer, suites, entry["suites"], device)
        if float32 and not self.over_budget(f"{shape} float32"):
            model.float()
            entry["float32_max_abs_difference"] = {
                suite: largest_difference(
                    HFLM(batch_size=32, **common)._loglikelihood_tokens(requests[: args.float32_requests], True),
                    PrefixReuseHFLM(batch_size=32, **common)._loglikelihood_tokens(
                        requests[: args.float32_requests], True
                    ),
                )
                for suite, requests in suites.items()
            }
        self.save()
        del stock, ours, model
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    @staticmethod
    def summary(
        suite: str,
        requests: Requests,
        times: dict[str, list[float]],
        answers: dict[str, list],
        ours: dict[str, PrefixReuseHFLM],
        parameters: int,
        rate: float,
    ) -> dict[str, Any]:
        best = {name: min(values) for name, values in times.items()}
        lm = next(iter(ours.values()))
        counters = {name: getattr(lm, name) for name in COUNTERS}
        tree_tokens = counters["computed_tokens"] + counters["continuation_tokens"]
        limit_s = 2 * parameters * tree_tokens / rate
        out: dict[str, Any] = {
            "requests": len(requests),
            "distinct_contexts": len({tuple(c) for _, c, _ in requests}),
            "seconds": {k: round(v, 4) for k, v in best.items()},
            **counters,
            "compute_limit_s": round(limit_s, 4),
        }
        for name in ours:
            if name in best:
                if "floor" in best:
                    out[f"{name}_over_floor"] = round(best[name] / best["floor"], 3)
                out[f"{name}_forwards_rows"] = [ours[name].forward_passes, ours[name].rows]
                out[f"{name}_fused_norms"] = len(getattr(ours[name], "_norms", None) or [])  # (fuse_norms)
                out[f"{name}_share_of_limit"] = round(limit_s / best[name], 3)
                for stock_name in (k for k in best if k.startswith("stock_")):
                    out[f"{name}_over_{stock_name}"] = round(best[name] / best[stock_name], 3)
        stock_names = [k for k in answers if k.startswith("stock_")]
        our_names = [k for k in answers if k.startswith("biasmonkey_")]
        if stock_names and our_names:
            out["bf16_max_abs_difference_stock_vs_biasmonkey"] = largest_difference(
                answers[stock_names[0]], answers[our_names[0]]
            )
        if len(stock_names) > 1:
            out["bf16_max_abs_difference_stock_across_batch_sizes"] = largest_difference(
                answers[stock_names[0]], answers[stock_names[1]]
            )
        if len(our_names) > 1:
            out["bf16_max_abs_difference_biasmonkey_across_batch_sizes"] = max(
                largest_difference(answers[our_names[0]], answers[k]) for k in our_names[1:]
            )
        return out


def print_table(report: dict[str, Any]) -> None:
    print(f"\n{report['device']}, bf16 matrix products at {report.get('bf16_matmul_tflops')} TFLOP/s")
    for shape, entry in report["models"].items():
        print(f"\n## {shape}: {entry['non_embedding_parameters'] / 1e9:.2f} B non-embedding parameters")
        print(f"first call ({entry.get('first_call_suite')}): {entry.get('first_call_breakdown_s')}")
        for suite, row in entry["suites"].items():
            print(f"\n### {suite}: {row['requests']} requests, {row['distinct_contexts']} contexts")
            print(json.dumps({k: v for k, v in row.items() if k not in ("requests", "distinct_contexts")}, indent=1))
        if "float32_max_abs_difference" in entry:
            print("float32 max |difference| stock vs biasmonkey-hf:", entry["float32_max_abs_difference"])
    if report["skipped"]:
        print("skipped (time budget):", report["skipped"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["build", "run", "first"])
    parser.add_argument("--bundle", type=Path, default=Path("bench_out") / "gpu_bundle")
    parser.add_argument("--shapes", nargs="+", default=["1.7b", "8b"], choices=list(SHAPES))
    parser.add_argument("--suites", nargs="+", choices=GPU_SUITES, help="default: every suite in the bundle")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", nargs="+", default=["32", "64", "auto"], help="biasmonkey-hf batch sizes")
    parser.add_argument(
        "--stock-batch", nargs="*", default=["32", "64", "auto"], help="stock hf batch sizes (none: no stock calls)"
    )
    parser.add_argument(
        "--floor", action=argparse.BooleanOptionalAction, default=True, help="time the floor (--no-floor: not)"
    )
    parser.add_argument("--row-tokens", nargs="+", type=int, default=[512], help="biasmonkey-hf row_tokens")
    parser.add_argument(
        "--pack-rows", nargs="+", default=["auto"], choices=["auto", "true", "false"], help="biasmonkey-hf pack_rows"
    )
    parser.add_argument(
        "--fuse-norms", nargs="+", default=["auto"], choices=["auto", "true", "false"], help="biasmonkey-hf fuse_norms"
    )
    parser.add_argument(
        "--attention-chunk", nargs="+", type=int, default=[0], help="biasmonkey-hf attention_chunk (0: off)"
    )
    parser.add_argument(
        "--no-cudnn-attention", action="store_true", help="keep sdpa off cuDNN's attention (which plans per shape)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="one more call per suite under torch's profiler: device busy share, top kernels",
    )
    parser.add_argument("--baseline", type=Path, help="another checkout: its biasmonkey-hf too, as baseline_<batch>")
    parser.add_argument("--engine", default="biasmonkey", choices=["biasmonkey", "stock"], help="`first`'s")
    parser.add_argument(
        "--entry",
        default="tokens",
        choices=["tokens", "strings"],
        help="`first`: call `_loglikelihood_tokens` on the bundle's tokens, or `loglikelihood` on their text "
        "(tokenising included, as lm-eval calls it: biasmonkey-hf's warm-up runs meanwhile)",
    )
    parser.add_argument("--warm-up", default="auto", choices=["auto", "true", "false"], help="`first`: biasmonkey-hf's")
    parser.add_argument("--floor-batch", type=int, default=64)
    parser.add_argument("--float32-requests", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=480.0, help="seconds; later steps are skipped beyond it")
    parser.add_argument("--out", type=Path, default=Path("bench_out") / "gpu.json")
    args = parser.parse_args()
    if args.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)
    if args.step == "build":
        build(args.bundle)
    elif args.step == "first":
        first_calls(args)
    else:
        Bench(args).run()


if __name__ == "__main__":
    sys.exit(main())
