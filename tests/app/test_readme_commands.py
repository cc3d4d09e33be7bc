"""Every command of README.md's "Running it on your models" block and of docs/cli.md runs as written.

The commands are read from the pages' fenced code blocks (every line that starts with `biasmonkey`,
`lm_eval` or `inspect`, backslash continuations joined, comments dropped), so a new or changed line
is tested without a change here. They run in page order in one working folder (a later command
reads what an earlier one wrote), offline, with local stand-ins:

- a Hub model id (`--model`, `--server-model`, `--tokenizer`, `pretrained=`, `hf/<id>`), an API
  model (`openai/…`) and the bundled default model: the tiny random model of tests/tiny_model.py;
- `--base-url`: a local fake OpenAI-compatible server (tests/fault_server.py);
- a run of a harness: `--limit 2`;
- `../shared/datasets` and `configs/`: the real data folder (with the cognitive tests of
  tests/fixtures, as the Hub dataset is out of reach offline) and the checkout's configs;
  `human_shares.csv`: the representativeness fixture;
- the cache: a fresh folder holding every pinned data file (as after `biasmonkey data fetch`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.default_model import DEFAULT_MODEL_HUB_ID, DEFAULT_MODEL_NAME
from biasmonkey.tasks.fetch import fill_cache, pinned_files

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CLI_PAGE = ROOT / "docs" / "cli.md"
README_SECTION = "Running it on your models"
PROGRAMS = ("biasmonkey", "lm_eval", "inspect")
FENCE = re.compile(r"^ {0,3}(```|~~~)[^\n]*\n(.*?)^ {0,3}\1", re.M | re.S)
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
MODEL_FLAGS = ("--model", "--server-model", "--tokenizer")
LIMIT = "2"
# Commands (their first words) whose runs get `--limit 2`, and those where `--model` is an Inspect model.
LIMITED = ("biasmonkey run", "biasmonkey plan", "biasmonkey inspect-eval-set", "lm_eval", "inspect eval")
INSPECT_MODELS = ("inspect eval", "biasmonkey inspect-eval-set", "biasmonkey generate")
# Commands run with the bundled default model where they name none: they get the tiny model instead.
DEFAULT_MODEL = ("biasmonkey run", "biasmonkey plan")
# Commands not run: (does the rule apply to argv, why not).
SKIPPED: tuple[tuple[Callable[[list[str]], bool], str], ...] = (
    (
        lambda argv: argv[:2] == ["biasmonkey", "task-files"] and "--check" not in argv,
        "it rewrites the checkout's task files (`biasmonkey task-files --check` runs)",
    ),
    (
        lambda argv: argv[:2] == ["biasmonkey", "generate"],
        "it needs a model that writes tests (an API model); tests/cognitive runs it scripted",
    ),
    (
        lambda argv: "--push-to-hub" in argv,
        "the stand-in model has no Hub id to publish under (tests/app/test_hub_push.py runs --dry-run)",
    ),
    (
        lambda argv: "--device" in argv[:-1] and argv[argv.index("--device") + 1].startswith("cuda") and not cuda(),
        "no CUDA device here (tests/app/test_robustness.py checks the error it gives instead)",
    ),
)


def cuda() -> bool:
    from biasmonkey.harness_ext.app.run_checks import device_count

    return device_count("cuda") > 0


TIMEOUT = 600


# ---------------------------------------------------------------------------- reading the pages


def section(text: str, heading: str) -> str:
    """The text under a `## heading`, up to the next heading of that level."""
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {heading}'"
    return match.group(1)


def shell_lines(block: str) -> Iterator[str]:
    """The lines of a code block, backslash continuations joined."""
    pending = ""
    for line in block.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def page_commands(text: str) -> list[str]:
    """Every command of the page's fenced code blocks that starts with one of PROGRAMS."""
    return [
        line.strip()
        for match in FENCE.finditer(text)
        for line in shell_lines(match.group(2))
        if line.strip().split(" ", 1)[0] in PROGRAMS
    ]


def readme_commands() -> list[str]:
    return page_commands(section(README.read_text(encoding="utf-8"), README_SECTION))


def cli_page_commands() -> list[str]:
    return page_commands(CLI_PAGE.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------- stand-ins


@dataclass
class Workspace:
    """Where the commands run and what stands in for what they name."""

    cwd: Path
    model: Path
    base_url: str
    env: dict[str, str] = field(default_factory=dict)


def _starts(argv: list[str], prefixes: tuple[str, ...]) -> bool:
    return any(argv[: len(p.split())] == p.split() for p in prefixes)


def skip_reason(argv: list[str]) -> str | None:
    return next((reason for applies, reason in SKIPPED if applies(argv)), None)


def _model(value: str, ws: Workspace, inspect_model: bool) -> str:
    """The stand-in for a model value: Hub ids and API models become the tiny model."""
    if inspect_model:
        provider, _, name = value.partition("/")
        return f"hf/{_model(name, ws, False)}" if provider == "hf" else f"hf/{ws.model}"
    return str(ws.model) if HUB_ID.fullmatch(value) and not Path(value).exists() else value


def _options_end(argv: list[str]) -> int:
    """Where flags may be added: before a `--` that starts forwarded arguments, else at the end."""
    return argv.index("--") if "--" in argv else len(argv)


def _set_flag(argv: list[str], flag: str, value: str) -> list[str]:
    end = _options_end(argv)
    if flag in argv[:end]:
        i = argv.index(flag)
        return [*argv[: i + 1], value, *argv[i + 2 :]]
    return [*argv[:end], flag, value, *argv[end:]]


def stand_ins(argv: list[str], ws: Workspace) -> list[str]:
    """The command with its local stand-ins (see the module docstring)."""
    inspect_model = _starts(argv, INSPECT_MODELS)
    out = list(argv)
    for i, token in enumerate(argv[:-1]):
        if token in MODEL_FLAGS:
            out[i + 1] = _model(argv[i + 1], ws, inspect_model and token == "--model")
        elif token == "--base-url":
            out[i + 1] = ws.base_url
        elif token == "--model_args":
            out[i + 1] = re.sub(r"(?<=pretrained=)[^,\s]+", lambda m: _model(m.group(0), ws, False), argv[i + 1])
    # the default model's results folder (results/SmolLM2-135M-Instruct) is the stand-in's
    out = [
        t if t.endswith(DEFAULT_MODEL_HUB_ID) else t.replace(f"/{DEFAULT_MODEL_NAME}", f"/{ws.model.name}") for t in out
    ]
    if _starts(out, DEFAULT_MODEL) and "--model" not in out and "server" not in out:
        out = _set_flag(out, "--model", str(ws.model))
    if _starts(out, LIMITED):
        out = _set_flag(out, "--limit", LIMIT)
    return out


def executable(name: str) -> str:
    """A program of this environment (the `.venv/bin` of the running Python)."""
    found = Path(sys.executable).with_name(name)
    return str(found) if found.exists() else name


def expand(line: str, ws: Workspace) -> list[str]:
    """The command's words, each `$(command)` replaced by that command's output (run the same way)."""

    def output(match: re.Match) -> str:
        return run(match.group(1), ws).stdout.strip()

    return [SUBSTITUTION.sub(output, word) for word in shlex.split(line, comments=True)]


def run(line: str, ws: Workspace) -> subprocess.CompletedProcess:
    argv = stand_ins(expand(line, ws), ws)
    return subprocess.run(
        [executable(argv[0]), *argv[1:]],
        cwd=ws.cwd,
        env=ws.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def run_all(lines: list[str], ws: Workspace) -> None:
    """Run the commands in order; fail with every command that failed and the end of its error output."""
    failed, skipped = [], []
    for line in lines:
        if reason := skip_reason(shlex.split(line, comments=True)):
            skipped.append(f"{line}: {reason}")
            continue
        start = time.monotonic()
        proc = run(line, ws)
        print(f"{time.monotonic() - start:6.1f} s  exit {proc.returncode}  {line}")
        if proc.returncode != 0:
            failed.append(f"$ {line}\nexit {proc.returncode}\n{(proc.stderr or proc.stdout)[-2000:]}")
    print("not run:\n" + "\n".join(skipped) if skipped else "every command ran")
    assert not failed, "\n\n".join(failed)


# ---------------------------------------------------------------------------- fast: the reading


def test_the_pages_commands_are_found_whole() -> None:
    readme = readme_commands()
    programs = {line.split()[0] for line in readme}
    assert programs >= {"biasmonkey", "lm_eval", "inspect"}
    lm_eval = next(line for line in readme if line.startswith("lm_eval"))
    assert "--include_path" in lm_eval and "\\" not in lm_eval  # the continuation line is joined
    cli = cli_page_commands()
    assert len(cli) > 20 and all(line.split()[0] in PROGRAMS for line in cli)
    assert all(shlex.split(line, comments=True) for line in readme + cli)  # every line parses


def test_stand_ins_replace_hub_ids_api_models_and_the_server(tmp_path: Path) -> None:
    ws = Workspace(cwd=tmp_path, model=tmp_path / "tiny", base_url="http://127.0.0.1:1/v1")
    tiny = str(ws.model)
    assert stand_ins(["biasmonkey", "run", "--model", "Org/Model-1B", "--", "--seed", "1"], ws) == [
        "biasmonkey", "run", "--model", tiny, "--limit", "2", "--", "--seed", "1"
    ]  # fmt: skip
    limited = stand_ins(["biasmonkey", "run", "--limit", "10"], ws)
    assert limited == ["biasmonkey", "run", "--limit", "2", "--model", tiny]
    assert stand_ins(["inspect", "eval", "biasmonkey/acquiescence", "--model", "openai/gpt-4o-mini"], ws) == [
        "inspect", "eval", "biasmonkey/acquiescence", "--model", f"hf/{tiny}", "--limit", "2"
    ]  # fmt: skip
    assert stand_ins(["inspect", "eval", "t", "--model", "hf/Org/M"], ws)[4] == f"hf/{tiny}"
    lm_eval = stand_ins(["lm_eval", "--model", "hf", "--model_args", "pretrained=Org/M,dtype=float32"], ws)
    assert lm_eval[2] == "hf" and lm_eval[4] == f"pretrained={tiny},dtype=float32"
    served = stand_ins(["biasmonkey", "run", "--backend", "server", "--base-url", "http://x:8000/v1"], ws)
    assert served[5] == ws.base_url and "--model" not in served
    assert stand_ins(["biasmonkey", "tasks", "list"], ws) == ["biasmonkey", "tasks", "list"]
    # the default model's results folder is the stand-in model's
    assert stand_ins(["biasmonkey", "summarize", "results/SmolLM2-135M-Instruct"], ws)[2] == f"results/{ws.model.name}"
    assert skip_reason(["biasmonkey", "task-files"]) and not skip_reason(["biasmonkey", "task-files", "--check"])
    assert skip_reason(["biasmonkey", "report", "r", "--push-to-hub", "o/m", "--dry-run"])
    assert bool(skip_reason(["biasmonkey", "plan", "--calibrate", "--device", "cuda"])) != cuda()
    assert not skip_reason(["biasmonkey", "plan", "--calibrate", "--device", "cpu"])


@pytest.mark.parametrize("line", [c for c in readme_commands() + cli_page_commands() if c.startswith("biasmonkey ")])
def test_every_biasmonkey_command_parses(line: str, tmp_path: Path) -> None:
    """A quick guard for the slow tests below: the page's flags and values exist (no placeholders)."""
    from biasmonkey.harness_ext.app.cli import build_parser

    argv = shlex.split(line, comments=True)
    ws = Workspace(cwd=tmp_path, model=tmp_path, base_url="http://127.0.0.1:1/v1")
    build_parser().parse_args(stand_ins(argv, ws)[1:])


# ---------------------------------------------------------------------------- slow: running them


@pytest.fixture
def workspace(
    tiny_model: Path, data_dir: Path, data_dir_with_cognitive_fixture: Path, tmp_path: Path
) -> Iterator[Workspace]:
    """A working folder beside a `shared/datasets` link to the data (the cognitive tests: the small
    fixture, as the Hub dataset is not there offline), with `configs/`, the human shares of
    representativeness, a filled cache and a fake server; no network."""
    from fault_server import FaultServer

    cwd = tmp_path / "work" / "main"
    cwd.mkdir(parents=True)
    (tmp_path / "work" / "shared").mkdir()
    (tmp_path / "work" / "shared" / "datasets").symlink_to(data_dir_with_cognitive_fixture)
    (cwd / "configs").symlink_to(ROOT / "configs")
    shutil.copy(ROOT / "tests" / "fixtures" / "representativeness" / "human.csv", cwd / "human_shares.csv")
    env = {
        **os.environ,
        "BIASMONKEY_DATA_DIR": str(data_dir_with_cognitive_fixture),
        "BIASMONKEY_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "INSPECT_DISPLAY": "none",
    }
    old_cache = os.environ.get("BIASMONKEY_CACHE_DIR")
    os.environ["BIASMONKEY_CACHE_DIR"] = env["BIASMONKEY_CACHE_DIR"]
    try:
        assert not fill_cache(pinned_files(), source=data_dir)
    finally:
        if old_cache is None:
            os.environ.pop("BIASMONKEY_CACHE_DIR")
        else:
            os.environ["BIASMONKEY_CACHE_DIR"] = old_cache
    with FaultServer() as server:
        yield Workspace(cwd=cwd, model=tiny_model, base_url=server.url, env=env)


@pytest.mark.slow
def test_the_readme_commands_run_as_written(workspace: Workspace) -> None:
    run_all(readme_commands(), workspace)


@pytest.mark.slow
def test_the_cli_page_commands_run_as_written(workspace: Workspace) -> None:
    run_all(cli_page_commands(), workspace)
