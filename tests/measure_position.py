"""Measure answer-position bias (the mc_position family) on three lettered multiple-choice tasks, offline,
with the bundled SmolLM2-135M-Instruct on CPU (not part of the tests).

The three tasks, each asked lettered in its original and cyclic orders with the family's default options
(`letter_spellings=task`: each letter scored as " A", …, the same rule for all three so they compare):

- (a) `mmlu_anatomy_authors`: the shipped example (the answer_position family's MMLU anatomy items with
  Bhatt & Ivanova's zero-shot prompt), run through lm-eval. Its own family reproduces the authors with
  `letter_spellings=both`; here it keeps the default `task`, as (b) and (c);
- (b) `mmlu_hs_geography_cloze`: an lm-eval YAML task over a local JSON file written here (MMLU high school
  geography of the answer_position data, in cloze form: "Question: …\\nAnswer:", the option texts as
  choices), which the wrapper renders lettered;
- (c) `college_biology_mc`: an Inspect task file written here (`@task`, a `MemoryDataset` of MMLU college
  biology, `Sample(input=question, choices=[...], target=letter)`), run through
  `inspect eval biasmonkey/position -T task=<file>@college_biology_mc`.

For each: `biasmonkey plan` with the run's flags (its cost; an Inspect task cannot be costed by the plan,
its samples are counted instead), the run timed (wall seconds), then its records read back and
summarized with the family's own table (`harness_ext.app.summary.family_table`). Prints one markdown
table (one row per task and condition) and the setting.

    python tests/measure_position.py                        # all three, into a temp folder
    python tests/measure_position.py --out /tmp/pos --permutations 2
    python tests/measure_position.py --out /tmp/pos --only a,b --limit 40   # a quick look
    python tests/measure_position.py --out /tmp/pos --table-only            # the table of an earlier run
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
os.environ.setdefault("BIASMONKEY_DATA_DIR", str((REPO / ".." / "shared" / "datasets").resolve()))

from biasmonkey.harness_ext.app.summary import family_table, latest_outputs  # noqa: E402
from biasmonkey.tasks.answer_position import data  # noqa: E402
from biasmonkey.tasks.answer_position.prompts import LETTERS  # noqa: E402
from biasmonkey.tasks.families import FAMILIES  # noqa: E402

FAMILY = FAMILIES["mc_position"]
CONDITIONS = (("raw", "raw"), ("pride", "PriDe"), ("contextual", "contextual"), ("specific", "Specific"))
GEO_TASK = "mmlu_hs_geography_cloze"
BIO_TASK = "college_biology_mc"

GEO_YAML = """\
# MMLU high school geography (the answer_position family's data) as a cloze task: the option texts are
# the choices; biasmonkey's mc_position wrapper renders it lettered. Written by tests/measure_position.py.
task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
target_delimiter: " "
metric_list:
  - {{metric: acc, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1.0}}
"""

BIO_TASK_FILE = '''\
"""MMLU college biology (the answer_position family's data) as an Inspect multiple-choice task.
Written by tests/measure_position.py; its samples are read by biasmonkey/position."""

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

DATA = Path(__file__).with_name("{data}")


@task
def {task}() -> Task:
    rows = json.loads(DATA.read_text(encoding="utf-8"))
    samples = [
        Sample(id=r["id"], input=r["question"], choices=r["choices"], target=r["target"]) for r in rows
    ]
    return Task(dataset=MemoryDataset(samples, name="{task}"))
'''


def bare_options(item) -> list[str]:
    """An item's option texts without their "(A) " labels."""
    return [option.removeprefix(f"({x}) ") for x, option in zip(LETTERS, item.options)]


def prepare(out: Path) -> dict[str, dict]:
    """Write the local tasks (b) and (c); each task's spec."""
    tasks_dir = out / "tasks"
    tasks_dir.mkdir(parents=True, exist_ok=True)
    geo = [
        {"id": item.id, "question": item.question, "choices": bare_options(item), "answer": LETTERS.index(item.gold)}
        for item in data.load_mmlu("high_school_geography")
    ]
    geo_data = tasks_dir / f"{GEO_TASK}.json"
    geo_data.write_text(json.dumps(geo, ensure_ascii=False), encoding="utf-8")
    (tasks_dir / f"{GEO_TASK}.yaml").write_text(GEO_YAML.format(task=GEO_TASK, data=geo_data.resolve()))
    bio = [
        {"id": item.id, "question": item.question, "choices": bare_options(item), "target": item.gold}
        for item in data.load_mmlu("college_biology")
    ]
    bio_data = tasks_dir / f"{BIO_TASK}.json"
    bio_data.write_text(json.dumps(bio, ensure_ascii=False), encoding="utf-8")
    bio_file = tasks_dir / f"{BIO_TASK}.py"
    bio_file.write_text(BIO_TASK_FILE.format(task=BIO_TASK, data=bio_data.name))
    return {
        "a": {"task": "mmlu_anatomy_authors", "harness": "lm-eval", "include": []},
        "b": {"task": GEO_TASK, "harness": "lm-eval", "include": [tasks_dir], "items": len(geo)},
        "c": {"task": BIO_TASK, "harness": "inspect", "spec": f"{bio_file.resolve()}@{BIO_TASK}", "items": len(bio)},
    }


def run_logged(cmd: list[str], log: Path, cwd: Path = REPO) -> tuple[int, float]:
    """Run `cmd` (niced) with its output into `log`; its exit status and wall seconds."""
    print("$ " + " ".join(str(c) for c in cmd), flush=True)
    start = time.monotonic()
    with log.open("w") as f:
        rc = subprocess.call(["nice", *map(str, cmd)], stdout=f, stderr=subprocess.STDOUT, cwd=cwd)
    wall = time.monotonic() - start
    if rc:
        tail = log.read_text(errors="replace").splitlines()[-30:]
        print(f"  exit {rc} after {wall:.0f} s; the last lines of {log}:\n    " + "\n    ".join(tail), flush=True)
    return rc, wall


def option_flags(args: argparse.Namespace) -> list[str]:
    return ["--permutations", str(args.permutations)] if args.permutations else []


def lm_eval_plan(spec: dict, args: argparse.Namespace, log: Path) -> dict:
    cmd = [BIN / "biasmonkey", "plan", "--position-of", spec["task"], *option_flags(args)]
    cmd += [x for d in spec["include"] for x in ("--include-path", d)]
    cmd += ["--backend", "biasmonkey-hf", "--json"] + (["--limit", str(args.limit)] if args.limit else [])
    print("$ " + " ".join(map(str, cmd)), flush=True)
    done = subprocess.run(["nice", *map(str, cmd)], capture_output=True, text=True, cwd=REPO)
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        return {"error": f"plan exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"}
    row = next(r for r in json.loads(done.stdout)["rows"] if r["task"] != "total")
    return {k: row[k] for k in ("documents", "requests", "distinct_prompts", "prompt_tokens")}


def inspect_plan(spec: dict, args: argparse.Namespace) -> dict:
    """The plan cannot cost an Inspect task: count the samples biasmonkey/position asks instead."""
    from biasmonkey.tasks.mc_position.inspect_task import position_task
    from biasmonkey.tasks.mc_position.options import PositionOptions

    n = len(position_task(PositionOptions(permutations=args.permutations), spec["spec"]).dataset)
    return {"samples": min(n, args.limit) if args.limit else n}


def run_task(key: str, spec: dict, args: argparse.Namespace, out: Path) -> dict:
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    folder = out / "runs" / key
    if spec["harness"] == "lm-eval":
        plan = lm_eval_plan(spec, args, logs / f"{key}_plan.json")
        cmd = [BIN / "biasmonkey", "run", "--position-of", spec["task"], *option_flags(args), "--output", folder]
        cmd += [x for d in spec["include"] for x in ("--include-path", d)]
        cmd += ["--limit", str(args.limit)] if args.limit else []
    else:
        plan = inspect_plan(spec, args)
        model = default_model()
        cmd = [BIN / "inspect", "eval", "biasmonkey/position", "-T", f"task={spec['spec']}", "-T", "top_logprobs=100"]
        cmd += ["-T", f"permutations={args.permutations}"] if args.permutations else []
        cmd += ["--model", f"hf/{model}", "--model-config", REPO / "configs" / "inspect_hf_raw_prompt.yaml"]
        cmd += ["-M", "device=cpu", "--log-dir", folder, "--display", "plain", "--no-score-display"]
        cmd += ["--limit", str(args.limit)] if args.limit else []
    print(f"[{key}] {spec['task']} ({spec['harness']}): plan {plan}", flush=True)
    rc, wall = run_logged(cmd, logs / f"{key}_run.log")
    result = {"key": key, **spec, "plan": plan, "rc": rc, "wall_s": round(wall, 1), "folder": str(folder)}
    result.pop("include", None)
    (out / f"{key}_meta.json").write_text(json.dumps(result, default=str, indent=1))
    return result


def default_model() -> Path:
    from biasmonkey.harness_ext.app.default_model import ensure_default_model

    return ensure_default_model(log=lambda line: print(line, file=sys.stderr))


# ---------------------------------------------------------------------------- the table


def ci(row: dict, measure: str, digits: int = 3) -> str:
    value, low, high = row[measure], row[f"{measure}_ci_low"], row[f"{measure}_ci_high"]
    if value is None or math.isnan(value):
        return "–"
    bounds = "" if math.isnan(low) else f" [{low:.{digits}f}, {high:.{digits}f}]"
    return f"{value:.{digits}f}{bounds}"


def cost_text(plan: dict) -> str:
    if "error" in plan:
        return plan["error"]
    if "samples" in plan:
        return f"n/a (plan cannot cost Inspect); {plan['samples']} samples"
    return f"{plan['documents']} docs / {plan['requests']} req / {plan['distinct_prompts']} prompts / {plan['prompt_tokens']} tok"


def task_rows(meta: dict) -> tuple[list[str], list[str]]:
    """The table's lines of one task (one per condition) and its notes."""
    head = f"| {meta['key']}: {meta['task']} | {meta['harness']} |"
    if meta["rc"]:
        return [f"{head} run failed (exit {meta['rc']}, logs/{meta['key']}_run.log) |" + " |" * 9], []
    outputs = latest_outputs(Path(meta["folder"]), FAMILY)
    if len(outputs) != 1:
        return [f"{head} {len(outputs)} outputs found in {meta['folder']} |" + " |" * 9], []
    records = outputs[0].read_records()
    items = {r.id: 0 for r in records if r.kind == "item"}
    for r in records:
        if r.kind == "item":
            items[r.id] += 1
    orders = sorted(set(items.values()))
    table = family_table(FAMILY, outputs)
    lines = []
    for condition, label in CONDITIONS:
        row = next(r for r in table.rows if r["condition"] == condition)
        lines.append(
            f"{head} {label} | {row['n_items']} | {'/'.join(map(str, orders))} | {ci(row, 'accuracy')} | "
            f"{ci(row, 'accuracy_permuted')} | {ci(row, 'rstd')} | {ci(row, 'rstd_original')} | "
            f"{ci(row, 'changed')} | {cost_text(meta['plan'])} | {meta['wall_s']:.0f} |"
        )
    notes = [n for n in table.notes if not n.startswith("One row per wrapped task")]
    return lines, notes


def print_table(metas: list[dict], args: argparse.Namespace) -> None:
    print()
    print(
        "| task | harness | condition | items | orders/item | accuracy (original order) [95% CI] | "
        "accuracy over orders [CI] | RStd all orders [CI] | RStd original order [CI] | changed share [CI] | "
        "plan cost (biasmonkey-hf) | wall s |"
    )
    print("|" + "---|" * 12)
    notes: list[str] = []
    for meta in metas:
        lines, task_notes = task_rows(meta)
        print("\n".join(lines))
        notes += task_notes
    print()
    for note in notes:
        print(f"- {note}")
    print(
        "- items: the condition's scored items (PriDe: without its calibration items); CIs: 95% percentile bootstrap "
        "over items (1,000 resamples); every task with the family's default options (letter_spellings=task, "
        f"permutations={args.permutations or 'all'}); mmlu_anatomy_authors's own rule for the authors' numbers is "
        "letter_spellings=both, not used here so that the three tasks compare."
    )
    print(
        "- plan cost: documents / requests / distinct prompts / prompt tokens from `biasmonkey plan --json`; the plan "
        "cannot cost an Inspect task, so (c) counts the samples biasmonkey/position asks (content-free ones included)."
    )
    versions = ", ".join(f"{p} {version(p)}" for p in ("lm_eval", "inspect_ai", "transformers", "torch"))
    print(f"- date: {datetime.date.today().isoformat()}; machine: {platform.machine()}, {os.cpu_count()} CPU cores")
    print(
        "- model: SmolLM2-135M-Instruct (bundled, float32, CPU); lm-eval: biasmonkey run (biasmonkey-hf); Inspect: "
        "hf/<bundled folder> with configs/inspect_hf_raw_prompt.yaml, -T top_logprobs=100"
    )
    print(f"- versions: {versions}; python {platform.python_version()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="output folder (default: a new temporary folder)")
    parser.add_argument("--permutations", type=int, default=0, help="orders per item (0: all; 2 for a quick run)")
    parser.add_argument("--limit", type=int, help="documents (lm-eval) / samples (Inspect) per task, for a quick look")
    parser.add_argument("--only", default="a,b,c", help="which tasks: a,b,c (default all)")
    parser.add_argument("--table-only", action="store_true", help="print the table of an earlier run in --out")
    args = parser.parse_args()
    out = (args.out or Path(tempfile.mkdtemp(prefix="measure_position-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"output folder: {out}", flush=True)
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    if args.table_only:
        metas = [json.loads((out / f"{k}_meta.json").read_text()) for k in keys if (out / f"{k}_meta.json").exists()]
    else:
        specs = prepare(out)
        metas = [run_task(k, specs[k], args, out) for k in keys]
    print_table(metas, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
