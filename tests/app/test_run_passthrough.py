"""`biasmonkey run … -- <lm_eval arguments>`: forwarded in order; the flags biasmonkey sets are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasmonkey.harness_ext.app.cli import build_parser, main
from biasmonkey.harness_ext.app.run import lm_eval_command
from biasmonkey.harness_ext.app.run_checks import LM_EVAL_FLAGS_SET_BY_RUN, check_lm_eval_args


def command(*argv: str) -> list[str]:
    """The lm_eval command line `biasmonkey run ARGV` builds, after its checks of the forwarded arguments."""
    args = build_parser().parse_args(["run", *argv])
    check_lm_eval_args(args.lm_eval_args)
    return lm_eval_command(args, "/models/m")


def test_forwarded_arguments_come_last_and_in_order() -> None:
    forwarded = [
        "--seed",
        "1,2,3,4",
        "--gen_kwargs",
        "temperature=0,max_gen_toks=8",
        "--wandb_args",
        "project=bias,name=run 1",
        "--hf_hub_log_args=hub_results_org=me",
        "--num_fewshot",
        "0",
        "-v",
        "DEBUG",
        "--write_out",
    ]
    plain = command("--limit", "3")
    cmd = command("--limit", "3", "--", *forwarded)
    assert cmd == plain + forwarded
    assert cmd[cmd.index("--limit") + 1] == "3"  # biasmonkey's own arguments are untouched


def test_without_forwarded_arguments_nothing_is_added() -> None:
    assert build_parser().parse_args(["run"]).lm_eval_args == []
    assert command() == command("--")


# (forwarded arguments, the biasmonkey option the message names)
REFUSED = [
    (["--model", "hf"], "--backend"),
    (["--model_args", "pretrained=gpt2"], "--model and --dtype"),
    (["-a", "pretrained=gpt2"], "--model and --dtype"),
    (["--tasks", "hellaswag"], "--suite or --tasks"),
    (["-t", "hellaswag"], "--suite or --tasks"),
    (["--output_path", "out"], "--output"),
    (["-o", "out"], "--output"),
    (["--log_samples"], "always logs the samples"),
    (["-s"], "always logs the samples"),
    (["--use_cache", "c"], "--no-cache or --resume"),
    (["--include_path", "x"], "biasmonkey tasks-dir"),
    (["--limit", "5"], "--limit"),
    (["-L", "5"], "--limit"),
    (["--batch_size", "8"], "--batch-size"),
    (["-b", "8"], "--batch-size"),
    (["--device", "cuda"], "--device"),
    (["--metadata", '{"mode": "sample"}'], "--mode"),
    (["--apply_chat_template"], "--apply-chat-template"),
    (["--config", "c.yaml"], "one by one"),
    (["--help"], "python -m lm_eval run --help"),
]


@pytest.mark.parametrize(("forwarded", "advice"), REFUSED, ids=[f[0] for f, _ in REFUSED])
def test_flags_biasmonkey_sets_are_refused(forwarded: list[str], advice: str, tmp_path: Path, capsys) -> None:
    argv = ["run", "--output", str(tmp_path / "out"), "--", "--seed", "1", *forwarded]
    assert main(argv) == 2  # from the checks, before the plan and any model
    err = capsys.readouterr().err
    assert f"lm-eval argument {forwarded[0]}" in err and "biasmonkey run sets it itself" in err and advice in err
    assert not (tmp_path / "out").exists()


def test_every_flag_biasmonkey_sets_is_in_the_table() -> None:
    """Each flag in the command line run builds (every option turned on) is refused after --."""
    cmd = command("--limit", "2", "--apply-chat-template")
    set_flags = {t for t in cmd if t.startswith("--")}
    refused = {s for strings, _ in LM_EVAL_FLAGS_SET_BY_RUN.values() for s in strings}
    assert set_flags <= refused, set_flags - refused


@pytest.mark.parametrize(
    ("token", "read_as"),
    [
        ("--output_path=out", "--output_path"),
        ("--limit=5", "--limit"),
        ("--model_args={}", "--model_args"),
        ("--out=x", "--output_path"),  # an abbreviation lm-eval's argparse accepts
        ("--tas", "--tasks"),
        ("--mod", "--model"),  # ambiguous for lm-eval; both candidates are ours
        ("-sL5", "--log_samples"),  # a cluster of short flags
        ("-L5", "--limit"),
        ("-wb8", "--batch_size"),  # -w takes no value, -b does
    ],
)
def test_joined_and_abbreviated_forms_are_detected(token: str, read_as: str) -> None:
    with pytest.raises(ValueError, match="biasmonkey run sets it itself") as err:
        check_lm_eval_args(["--seed", "1", token])
    assert read_as in str(err.value)


@pytest.mark.parametrize(
    "forwarded",
    [
        ["--seed", "-1"],  # a negative number is a value
        ["--gen_kwargs=temperature=0"],
        ["--system_instruction", "be brief", "--fewshot_as_multiturn"],
        ["--wandb_args", "project=x", "--", "--limit"],  # after lm-eval's own --: positional
        ["-w", "-x"],
    ],
)
def test_other_lm_eval_flags_pass(forwarded: list[str]) -> None:
    assert check_lm_eval_args(forwarded) == forwarded


def test_a_stray_argument_is_an_error(capsys) -> None:
    assert main(["run", "stray"]) == 2
    err = capsys.readouterr().err
    assert "'stray'" in err and "lm-eval arguments go after --" in err


def test_run_help_documents_the_pass_through(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "[LM_EVAL_ARG ...]" in out and "everything after -- goes to the lm_eval command line" in out
    assert "--output_path" in out and "--model_args" in out


def test_a_real_run_passes_seed_and_gen_kwargs_through(tiny_model: Path, data_dir: Path, tmp_path: Path, capfd) -> None:
    out = tmp_path / "results"
    argv = ["run", "--model", str(tiny_model), "--tasks", "biasmonkey_odd_even", "--limit", "1", "--output", str(out)]
    argv += ["--", "--seed", "1,2,3,4", "--gen_kwargs", "max_gen_toks=7"]
    code = main(argv)
    captured = capfd.readouterr()
    assert code == 0, captured.err[-3000:]
    assert captured.out.splitlines()[0].endswith("; lm-eval arguments --seed 1,2,3,4 --gen_kwargs max_gen_toks=7")
    (results,) = (p for p in out.rglob("results_*.json") if "report" not in p.relative_to(out).parts)
    config = json.loads(results.read_text())["config"]
    seeds = [config[k] for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")]
    assert seeds == [1, 2, 3, 4]
    assert "max_gen_toks" in json.dumps(config["gen_kwargs"])
