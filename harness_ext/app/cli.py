"""The `biasmonkey` command line: tasks-dir, tasks list, run, plan, summarize, report, inspect-eval-set, data,
task-files, and each family's own commands (`tasks/<family>/commands.py`: `add_commands`, and the
options it adds to summarize and report). `biasmonkey --help` lists every command with its help line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from biasmonkey.harness_ext.app.compare import add_subcommand as add_compare
from biasmonkey.harness_ext.app.data_command import add_subcommand as add_data
from biasmonkey.harness_ext.app.plan import add_subcommand as add_plan
from biasmonkey.harness_ext.app.run import add_subcommand as add_run
from biasmonkey.harness_ext.app.run import tasks_dir
from biasmonkey.harness_ext.app.run_checks import positive_int
from biasmonkey.harness_ext.app.task_files_command import add_subcommand as add_task_files
from biasmonkey.harness_ext.app.tasks_command import add_subcommand as add_tasks
from biasmonkey.tasks.families import FAMILIES, family_module

DESCRIPTION = """\
Measure the response biases of language models (survey response biases, yes-no bias, cognitive
biases, MMLU answer position) with lm-eval or Inspect, and report them side by side."""
# The harnesses whose versions `--version` prints where they are installed (distribution names).
HARNESS_DISTRIBUTIONS = ("lm-eval", "inspect-ai")
EPIPE_EXIT = 141  # 128 + SIGPIPE, as a shell reports a command whose reader went away


def family_hooks(name: str) -> Iterator[Callable[..., Any]]:
    """Each family's `name` hook, from its `tasks/<family>/commands.py` where it has one."""
    for family in FAMILIES:
        if (module := family_module(family, "commands")) is not None and hasattr(module, name):
            yield getattr(module, name)


def family_options(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments that the families' `<kind>_options` hooks read from the parsed options."""
    return {key: value for hook in family_hooks(f"{kind}_options") for key, value in hook(args).items()}


def add_family_options(kind: str, parser: argparse.ArgumentParser) -> None:
    for hook in family_hooks(f"add_{kind}_options"):
        hook(parser)


def cmd_tasks_dir(args: argparse.Namespace) -> int:
    print(tasks_dir())
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.app.summary import write_summary

    md, csv_path = write_summary(args.results, args.out, model=args.model, **family_options("summary", args))
    print(md.read_text())
    print(f"Summary written to {md} and {csv_path}")
    return 0


def hub_dataset_id(text: str) -> str:
    from biasmonkey.harness_ext.app.report.hub import check_dataset_id

    try:
        return check_dataset_id(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def hub_model_id(text: str) -> str:
    from biasmonkey.harness_ext.app.report.hub import check_repo_id

    try:
        return check_repo_id(text, "--push-to-hub", "model")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def cmd_report(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.app.report import write_report
    from biasmonkey.harness_ext.app.report.hub import configured_dataset, push_eval_results, require_registered
    from biasmonkey.harness_ext.app.report.inputs import parse_names

    if args.push_to_hub is None:
        needs = [name for name, given in (("--dry-run", args.dry_run), ("--no-pr", args.no_pr)) if given]
        needs += ["--push-model"] if args.push_model is not None else []
        if needs:
            raise ValueError(f"{', '.join(needs)}: only with --push-to-hub ORG/MODEL")
    hub, where = configured_dataset(args.hub_dataset)
    if args.push_to_hub is not None:
        require_registered(hub, where)  # before the report is written: nothing to upload under a placeholder
    md = write_report(
        args.results,
        args.out,
        parse_names(args.name),
        hub_dataset=hub,
        baseline=args.baseline,
        **family_options("report", args),
    )
    print(f"Report written to {md} and {md.with_suffix('.html')} (tables, figures and leaderboard files in {args.out})")
    if args.push_to_hub is not None:
        push_eval_results(
            args.out / "leaderboard",
            args.push_to_hub,
            hub,
            model=args.push_model,
            create_pr=not args.no_pr,
            dry_run=args.dry_run,
        )
    return 0


def cmd_inspect_eval_set(args: argparse.Namespace) -> int:
    from biasmonkey.harness_ext.inspect.eval_set import parse_task_args, run_eval_set

    ok = run_eval_set(args.config, args.model, args.log_dir, parse_task_args(args.task_arg), args.limit)
    return 0 if ok else 1


def versions() -> str:
    """biasmonkey's version and, where installed, the harnesses', one per line."""
    from importlib.metadata import PackageNotFoundError, version

    lines = []
    for name in ("biasmonkey", *HARNESS_DISTRIBUTIONS):
        try:
            lines.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            lines.append(f"{name} not installed")
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """`--version`: print `versions()` and exit (looked up only when asked for)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(versions())
        parser.exit()


def leaf_commands(sub: argparse._SubParsersAction, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(command, help line) of every runnable command under `sub`, e.g. ("data fetch", "download …")."""
    for choice in sub._choices_actions:
        name = f"{prefix}{choice.dest}"
        nested = [a for a in sub.choices[choice.dest]._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            yield from leaf_commands(nested[0], f"{name} ")
        else:
            yield name, choice.help or ""


def command_listing(sections: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """The top-level help's list of commands: one line each, under a heading per section."""
    width = max(len(name) for _, commands in sections for name, _ in commands) + 2
    lines = []
    for title, commands in sections:
        lines += ["", f"{title}:", *(f"  {name.ljust(width)}{text}" for name, text in commands)]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="biasmonkey",
        usage="%(prog)s [-h] [--version] COMMAND ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="`biasmonkey COMMAND --help` describes a command's options; docs/cli.md has an example of each.",
    )
    parser.add_argument("--version", action=VersionAction, help="print the versions of biasmonkey, lm-eval and Inspect")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, help=argparse.SUPPRESS, prog="biasmonkey"
    )

    p = sub.add_parser("tasks-dir", help="print the folder of biasmonkey's lm-eval tasks, for lm_eval --include_path")
    p.set_defaults(func=cmd_tasks_dir)
    add_tasks(sub)

    add_run(sub)
    add_plan(sub)

    p = sub.add_parser(
        "summarize", help="print and save the summary table of an lm-eval output folder or an Inspect log folder"
    )
    p.add_argument("results", type=Path, help="the folder given to lm_eval --output_path, or an Inspect log dir")
    p.add_argument("--out", type=Path, help="where to write summary.md/.csv (default: the results folder)")
    p.add_argument(
        "--model",
        metavar="NAME",
        help="summarize this model's runs only (its full or short name, or a run's title as the summary shows it); "
        "default: every run in the folder, each model and each setting of a model in its own table",
    )
    add_family_options("summary", p)
    p.set_defaults(func=cmd_summarize)

    p = sub.add_parser("report", help="write the report (markdown, HTML, tables, figures) comparing one or many models")
    p.add_argument(
        "results", type=Path, nargs="+", help="lm-eval --output_path folders, Inspect log folders or log files"
    )
    p.add_argument("--out", type=Path, required=True, help="folder to write the report into")
    p.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="MODEL=NAME",
        help="show MODEL (its full or short name) as NAME (repeatable)",
    )
    p.add_argument(
        "--baseline",
        metavar="RUN",
        help="where the results hold several runs (models, settings) of the same tasks: the run the comparison "
        "section compares the others with (a run's label, its model's full or short name, or its folder; default: "
        "the report's first run)",
    )
    p.add_argument(
        "--hub-dataset",
        type=hub_dataset_id,
        metavar="OWNER/NAME",
        help="the Hub Benchmark dataset that the .eval_results entries name (register it once: configs/hub/README.md; "
        "default: $BIASMONKEY_HUB_DATASET, else `dataset:` in configs/hub/publish.yaml, else the placeholder "
        "REPLACE-ME/biasmonkey)",
    )
    p.add_argument(
        "--push-to-hub",
        type=hub_model_id,
        metavar="ORG/MODEL",
        help="after writing the report, upload one model's .eval_results files to this model repo on the Hugging Face "
        "Hub, as a pull request (needs a token: `hf auth login` or HF_TOKEN; refused while the dataset id is the "
        "placeholder; docs/exports.md)",
    )
    p.add_argument(
        "--push-model",
        metavar="NAME",
        help="with --push-to-hub: the report's model to publish, as the report names it (default: the model whose "
        "Hub id is ORG/MODEL, or the report's only model)",
    )
    p.add_argument(
        "--no-pr",
        action="store_true",
        help="with --push-to-hub: commit to the repo's main branch instead of opening a pull request (needs write access)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="with --push-to-hub: print the repo, the files and their contents that would be uploaded; upload nothing",
    )
    add_family_options("report", p)
    p.set_defaults(func=cmd_report)
    add_compare(sub)

    p = sub.add_parser("inspect-eval-set", help="run a suite with Inspect, as the eval set of a YAML file in configs/")
    p.add_argument("config", type=Path, help="e.g. configs/inspect_response_bias.yaml")
    p.add_argument("--model", help="Inspect model, e.g. openai/gpt-4o-mini or hf/<folder> (overrides the file)")
    p.add_argument("--log-dir", help="log folder (overrides the file)")
    p.add_argument("--limit", type=positive_int, help="pairs per task (for a quick look)")
    p.add_argument(
        "-T",
        dest="task_arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="task argument, e.g. -T mode=sample (repeatable; overrides the file)",
    )
    p.set_defaults(func=cmd_inspect_eval_set)

    generic = list(leaf_commands(sub))
    for add_commands in family_hooks("add_commands"):
        add_commands(sub)
    families = list(leaf_commands(sub))[len(generic) :]
    add_data(sub)
    add_task_files(sub)
    maintenance = list(leaf_commands(sub))[len(generic) + len(families) :]
    listing = command_listing(
        [("commands", generic), ("the families' commands", families), ("maintenance", maintenance)]
    )
    parser.description = DESCRIPTION + "\n" + listing
    return parser


def run_command(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="biasmonkey: %(message)s")  # e.g. download progress
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"biasmonkey: error: {err}", file=sys.stderr)
        return 2


SIGINT_EXIT = 130  # 128 + SIGINT, as shells report it


def quiet_stdout() -> None:
    """Point stdout at the null device, so that nothing more (not even the flush at exit) meets the
    closed pipe."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (e.g. captured by a test)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Where stdout's reader goes away (`biasmonkey tasks list | head`), stop quietly with
    status 141, as other command-line tools do, instead of a BrokenPipeError traceback."""
    try:
        try:
            return run_command(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except BrokenPipeError:
        quiet_stdout()
        return EPIPE_EXIT
    except KeyboardInterrupt:  # Ctrl-C outside a running lm-eval (which `run` stops and reports itself)
        print("biasmonkey: stopped by SIGINT", file=sys.stderr)
        return SIGINT_EXIT


if __name__ == "__main__":
    sys.exit(main())
