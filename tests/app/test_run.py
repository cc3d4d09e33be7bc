"""`biasmonkey run`: backends, suites, the one line it prints, quiet lm-eval logs, resuming from the cache."""

from __future__ import annotations

import gc
import inspect
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import build_parser, main
from biasmonkey.harness_ext.app.run import cache_path, lm_eval_command
from biasmonkey.tasks.families import FAMILIES

REPO = Path(__file__).resolve().parents[2]


def command(*argv: str) -> list[str]:
    return lm_eval_command(build_parser().parse_args(["run", *argv]), "/models/m")


def value(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def lm_eval_results(out: Path) -> list[Path]:
    """lm-eval's results files in an output folder, oldest first (the report's leaderboard copies left out)."""
    return sorted(
        (p for p in out.rglob("results_*.json") if "report" not in p.relative_to(out).parts), key=lambda p: p.name
    )


# ---------------------------------------------------------------------------- command line


def test_backends_run_through_the_launcher() -> None:
    hf = command()
    assert hf[1:3] == ["-m", "biasmonkey.harness_ext.lm_eval"]
    assert value(hf, "--model") == "biasmonkey-hf"
    assert json.loads(value(hf, "--model_args")) == {"pretrained": "/models/m", "dtype": "float32"}
    assert value(hf, "--tasks") == "biasmonkey" and value(hf, "--batch_size") == "16"
    assert value(command("--backend", "stock-hf"), "--model") == "hf"

    server = command(
        "--backend",
        "server",
        "--base-url",
        "http://127.0.0.1:8000/v1",
        "--server-model",
        "smollm2",
        "--tokenizer",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "--num-concurrent",
        "8",
        "--top-logprobs",
        "100",
    )
    assert value(server, "--model") == "biasmonkey-server"
    assert json.loads(value(server, "--model_args")) == {
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "smollm2",
        "tokenizer": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "num_concurrent": 8,
        "top_logprobs": 100,
    }
    assert "--device" not in server and "--batch_size" not in server


def test_results_folder_is_named_after_the_model_as_given(tiny_model: Path) -> None:
    def folder(*argv: str, model_path: str = "/models/m") -> str:
        cmd = lm_eval_command(build_parser().parse_args(["run", *argv]), model_path)
        path = Path(value(cmd, "--output_path"))
        assert path.name == "results.json"  # lm-eval then writes results_<stamp>.json and the samples beside it
        return path.parent.relative_to("results").as_posix()

    # the default model: its name, not lm-eval's "__root__.cache__biasmonkey__models__…" from the path
    assert folder(model_path="/root/.cache/biasmonkey/models/SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"
    assert folder("--model", "HuggingFaceTB/SmolLM2-360M-Instruct") == "HuggingFaceTB__SmolLM2-360M-Instruct"
    assert folder("--model", str(tiny_model), model_path=str(tiny_model)) == tiny_model.name
    server = ["--backend", "server", "--base-url", "http://127.0.0.1:1/v1", "--server-model", "org/served"]
    assert folder(*server, model_path=None) == "org__served"


def test_suite_chooses_the_default_tasks() -> None:
    assert value(command("--suite", "yesno"), "--tasks") == "biasmonkey-yesno"
    assert value(command("--suite", "cognitive"), "--tasks") == "biasmonkey-cognitive"
    # every family's suite, in the registry's order; a family with an open task table (mc_position) has none
    suites = [f.suite for f in FAMILIES.values() if f.suite]
    assert len(suites) == len(FAMILIES) - 1
    assert value(command("--suite", "all"), "--tasks") == ",".join(suites)
    assert value(command("--suite", "all"), "--tasks").startswith("biasmonkey,biasmonkey-yesno,biasmonkey-cognitive")
    assert (
        value(command("--suite", "yesno", "--tasks", "biasmonkey_yesno_comps"), "--tasks") == "biasmonkey_yesno_comps"
    )


def test_cache_path_is_per_backend_model_and_dtype(tiny_model: Path, tmp_path: Path) -> None:
    def path(*argv: str, model: str | None = str(tiny_model)) -> Path:
        return cache_path(build_parser().parse_args(["run", "--output", str(tmp_path), *argv]), model)

    first = path()
    assert first.parent == tmp_path / "cache" and first.name.startswith("biasmonkey-hf-")
    assert path() == first
    assert path("--dtype", "float64") != first
    assert path("--backend", "stock-hf").name.startswith("hf-")
    assert path(model="HuggingFaceTB/SmolLM2-360M-Instruct") != first
    served = path("--backend", "server", "--base-url", "http://h/v1", "--server-model", "a", model=None)
    assert served.name.startswith("biasmonkey-server-")
    assert served != path("--backend", "server", "--base-url", "http://h/v1", "--server-model", "b", model=None)
    cmd = command("--output", str(tmp_path))
    assert value(cmd, "--use_cache").startswith(str(tmp_path / "cache" / "biasmonkey-hf-"))
    assert "--use_cache" not in command("--mode", "sample")  # lm-eval never reads sampled answers back
    assert "--use_cache" not in command("--no-cache")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--backend", "server", "--base-url", "http://h/v1"],
            "--backend server needs --base-url URL and --server-model",
        ),
        (["--base-url", "http://h/v1"], "--base-url: only with --backend server"),
        (["--resume", "--mode", "sample"], "a sample-mode run cannot resume"),
        (["--resume", "--no-cache"], "drop --no-cache"),
    ],
)
def test_backend_flags_are_checked(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    assert main(["run", "--output", str(tmp_path / "out"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_resume_without_a_cache_is_an_error(tiny_model: Path, data_dir: Path, tmp_path: Path, capsys) -> None:
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "1"]
    assert main([*argv, "--output", str(tmp_path / "out"), "--resume"]) == 2
    assert "--resume: no request cache at" in capsys.readouterr().err
    # the cache of another model, dtype or backend is there: named, with the fix
    (tmp_path / "out" / "cache").mkdir(parents=True)
    (tmp_path / "out" / "cache" / "biasmonkey-hf-000000000000_rank0.db").touch()
    assert main([*argv, "--output", str(tmp_path / "out"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "holds the caches of other ones: biasmonkey-hf-000000000000_rank0.db" in err
    assert "resume with the interrupted run's --model, --dtype and --backend" in err


def test_bad_option_fails_before_lm_eval_with_its_message(
    tiny_model: Path, data_dir: Path, tmp_path: Path, capsys
) -> None:
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--template", "extended"]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "option template='extended'" in err and "needs mode=sample" in err
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------- quiet logs


def test_family_tasks_load_without_the_custom_kwargs_warning(data_dir: Path, caplog) -> None:
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import TaskManager

    from biasmonkey.harness_ext.app.run import tasks_dir

    caplog.set_level(logging.WARNING)
    manager = TaskManager(include_path=str(tasks_dir()), include_defaults=False)
    task = manager.load(["biasmonkey_allow_forbid"])["tasks"]["biasmonkey_allow_forbid"]
    assert len(task.eval_docs) == 40
    assert "Custom kwargs" not in caplog.text
    ConfigurableTask.download(task, task.config.dataset_kwargs)  # what our override replaces
    assert "Custom kwargs can be passed to `--metadata`" in caplog.text
    assert len(task.dataset["test"]) == 40


def test_launcher_filter_drops_only_the_chat_template_advice() -> None:
    from lm_eval.utils import wrap_text

    from biasmonkey.harness_ext.lm_eval.__main__ import DropChatTemplateAdvice

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("lm_eval.evaluator", logging.WARNING, "evaluator.py", 1, message, None, None)

    advice = wrap_text(
        """pretrained=/m/SmolLM2-135M-Instruct appears to be an
        instruct or chat variant but chat template is not applied.
        Recommend setting `apply_chat_template` (optionally `fewshot_as_multiturn`)."""
    )
    drop = DropChatTemplateAdvice()
    assert not drop.filter(record(advice))
    assert drop.filter(record("--limit SHOULD ONLY BE USED FOR TESTING."))
    assert drop.filter(record("option template='extended' … needs mode=sample"))


def test_launcher_freezes_what_exists_when_lm_eval_starts_evaluating(monkeypatch: pytest.MonkeyPatch) -> None:
    import lm_eval.evaluator as evaluator

    from biasmonkey.harness_ext.lm_eval.__main__ import freeze_before_evaluating

    # lm-eval's simple_evaluate reaches `evaluate` by the module-level name that the launcher wraps
    assert "evaluate" in inspect.unwrap(evaluator.simple_evaluate).__code__.co_names
    seen = []
    monkeypatch.setattr(evaluator, "evaluate", lambda *a, **k: (seen.append((a, k, gc.get_freeze_count())), "r")[1])
    before = gc.get_freeze_count()
    try:
        freeze_before_evaluating()
        assert gc.get_freeze_count() == before  # nothing frozen until lm-eval evaluates
        assert evaluator.evaluate(1, task_dict=2) == "r"
        ((args, kwargs, frozen),) = seen
        assert (args, kwargs) == ((1,), {"task_dict": 2}) and frozen > before
    finally:
        gc.unfreeze()


def test_launcher_errors_still_surface(tiny_model: Path, data_dir: Path, tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "biasmonkey.harness_ext.lm_eval",
        "--model",
        "hf",
        "--model_args",
        f"pretrained={tiny_model}",
        "--include_path",
        str(REPO / "tasks"),
        "--tasks",
        "biasmonkey_odd_even",
        "--metadata",
        json.dumps({"template": "extended"}),
        "--limit",
        "1",
        "--output_path",
        str(tmp_path / "out"),
    ]
    env = dict(os.environ, BIASMONKEY_RUN="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode != 0
    assert "option template='extended'" in proc.stderr and "needs mode=sample" in proc.stderr


def test_run_prints_one_line_and_none_of_the_repeated_warnings(
    tiny_model: Path, data_dir: Path, tmp_path: Path, capfd
) -> None:
    # A model path with "Instruct" in it: lm-eval advises the chat template for such models.
    instruct = tmp_path / "tiny-Instruct"
    instruct.symlink_to(tiny_model, target_is_directory=True)
    out = tmp_path / "results"
    tasks = "biasmonkey_acquiescence,biasmonkey_odd_even"
    code = main(["run", "--model", str(instruct), "--tasks", tasks, "--limit", "2", "--output", str(out)])
    captured = capfd.readouterr()
    assert code == 0, captured.err[-3000:]
    first = captured.out.splitlines()[0]
    # acquiescence: 2 + 2 options per pair, odd_even 5 + 4; both spellings of each letter
    assert first.startswith(
        f"biasmonkey run: tasks {tasks}: 2 tasks, 4 pairs, {2 * 8 + 2 * 18} requests, 8 distinct prompts; "
        f"backend biasmonkey-hf (one forward per distinct prompt) on tiny-Instruct; cache {out / 'cache'}/"
    )
    cache = Path(first.rsplit(" ", 1)[1])
    assert (
        re.fullmatch(r"biasmonkey-hf-[0-9a-f]{12}", cache.name) and cache.with_name(f"{cache.name}_rank0.db").is_file()
    )
    assert captured.out.splitlines()[1].startswith("biasmonkey-hf (")  # then lm-eval's own output
    assert "Custom kwargs" not in captured.err
    assert "chat template is not applied" not in captured.err
    assert "--limit SHOULD ONLY BE USED FOR TESTING" in captured.err  # other warnings still surface
    (results,) = lm_eval_results(out)
    assert json.loads(results.read_text())["config"]["model"] == "biasmonkey-hf"
    assert (out / "summary.md").is_file() and (out / "report" / "report.md").is_file()


# ---------------------------------------------------------------------------- resume

KILL_HOOK = """
import os, signal
import sqlitedict

_after = int(os.environ["BIASMONKEY_TEST_KILL_AFTER"])
_commit = sqlitedict.SqliteDict.commit


def commit(self, blocking=True):
    _commit(self, blocking)  # the answers are on disk first
    if blocking and len(self) >= _after:
        os.kill(os.getpid(), signal.SIGKILL)


sqlitedict.SqliteDict.commit = commit
"""


def _samples(out: Path) -> list[list[dict]]:
    """Every run's per-document responses in the folder, oldest first."""
    runs = []
    for path in sorted(out.rglob("samples_biasmonkey_odd_even_*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        runs.append(sorted(rows, key=lambda r: r["doc_id"]))
    return runs


def test_an_interrupted_run_resumes_from_the_cache(
    tiny_model: Path, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    out = tmp_path / "results"
    # 4 pairs × 18 requests, 16 distinct prompts, 2 per forward pass (8 passes); float64 for exact comparisons
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "4"]
    argv += ["--batch-size", "2", "--dtype", "float64", "--output", str(out)]

    # 1. Killed (SIGKILL) in the middle of the model's work, at the first commit that leaves 20 answers in the cache.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILL_HOOK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("BIASMONKEY_TEST_KILL_AFTER", "20")
    assert main(argv) != 0
    err = capfd.readouterr().err
    assert "with --resume to continue" in err
    (db,) = (out / "cache").glob("biasmonkey-hf-*_rank0.db")
    with sqlite3.connect(db) as con:
        (rows,) = con.execute("SELECT COUNT(*) FROM unnamed").fetchone()
    assert 20 <= rows < 72
    assert not lm_eval_results(out)

    # 2. Resumed: the cached answers are not recomputed.
    monkeypatch.delenv("PYTHONPATH")
    assert main([*argv, "--resume"]) == 0
    captured = capfd.readouterr()
    assert "resuming from" in captured.out.splitlines()[0]
    cached, remaining = map(int, re.search(r"Cached requests: (\d+), Requests remaining: (\d+)", captured.err).groups())
    assert cached == rows and cached + remaining == 72

    # 3. The same run again without --resume starts afresh (the stale cache is removed) ...
    assert main(argv) == 0
    assert "Cached requests: 0, Requests remaining: 72" in capfd.readouterr().err
    # ... and gives the same answers and results as the resumed run.
    resumed, fresh = _samples(out)
    assert len(resumed) == len(fresh) == 4
    for a, b in zip(resumed, fresh):
        assert a["doc"] == b["doc"]
        assert [float(r[0]) for r in a["filtered_resps"]] == pytest.approx([float(r[0]) for r in b["filtered_resps"]])
    first, second = lm_eval_results(out)
    metrics = [json.loads(p.read_text())["results"]["biasmonkey_odd_even"] for p in (first, second)]
    assert metrics[0]["delta,none"] == pytest.approx(metrics[1]["delta,none"])
    assert metrics[0]["n_pairs,none"] == metrics[1]["n_pairs,none"] == 4


def test_the_two_step_protocol_runs_as_three_lm_eval_steps(tmp_path: Path) -> None:
    """Free answers (an intermediate run) go to their own folder; the follow-up run reads them."""
    from biasmonkey.harness_ext.app.plan import TaskRequests
    from biasmonkey.harness_ext.app.run import Step, lm_eval_steps
    from biasmonkey.tasks.cognitive.options import CognitiveOptions
    from biasmonkey.tasks.yesno.options import YesNoOptions

    args = build_parser().parse_args(["run", "--output", str(tmp_path), "--mode", "generate"])
    yesno = TaskRequests("biasmonkey_yesno_comps", "yesno", YesNoOptions(), [])
    anchoring = TaskRequests("biasmonkey_cognitive_anchoring", "cognitive", CognitiveOptions(mode="generate"), [])
    steps = lm_eval_steps(args, [yesno, anchoring], "T1")
    first = tmp_path / "steps" / "T1"
    assert steps == [
        Step("biasmonkey_yesno_comps", tmp_path),
        Step("biasmonkey_cognitive_anchoring", first),
        Step("biasmonkey_cognitive_anchoring", tmp_path, {"decisions": str(first)}),
    ]
    assert json.loads(value(lm_eval_command(args, "/m", steps[2]), "--metadata")) == {
        "mode": "generate",
        "decisions": str(first),
    }
    # one step: nothing intermediate (one_step protocol, exact mode)
    one = TaskRequests(
        "biasmonkey_cognitive_anchoring", "cognitive", CognitiveOptions(mode="generate", protocol="one_step"), []
    )
    assert lm_eval_steps(args, [yesno, one], "T1") == [Step("biasmonkey", tmp_path)]
