"""`python -m biasmonkey.harness_ext.lm_eval ARGS…`: the stock `lm_eval` command line with biasmonkey's
model backends registered (`--model biasmonkey-hf`, `--model biasmonkey-server`).

lm-eval 0.4.13 has no model plugin discovery (the `lm_eval.models` entry point biasmonkey declares is
merged upstream but not released), and lm-eval creates the model before it loads any task, so a
task file cannot register a backend: this launcher imports the backends first, then hands over to
lm-eval's own CLI, unchanged.

When `biasmonkey run` starts it (environment variable `BIASMONKEY_RUN` set), lm-eval's advice to
apply the chat template to an instruct model is left out: the raw prompt is the paper's protocol and
a deliberate default there. Every other message, warnings and errors included, is lm-eval's own.

lm-eval indexes only the `--include_path` folders when the run's tasks all resolve there
(`task_index.py`: its ~15,000 built-in task files take 10-20 s to index on 2 cores). Before lm-eval
creates the model, biasmonkey's tasks among `--tasks` read their options (`--metadata`) and, with
`--num_fewshot`, build one document with the shots (`preflight.py`): a bad option value or a
few-shot setting a task refuses is one line and exit status 2, before any
weights load. A prompt longer than the model's context is an error from the backends
(`backends/context.py`), one line too.

Python's cyclic garbage collector leaves alone what exists when lm-eval starts evaluating
(`freeze_before_evaluating`).

A model argument biasmonkey's backends refuse (`ModelArgumentError`: `row_tokens=0`, `batch_size=0`,
`pack_rows=maybe`, a server's `timeout=0`, …) is one line and exit status 2, before any weights load.
A served model's failure (`ServerError`: the URL and what went wrong) is one line, not a traceback.
Stopping keeps what finished (lm-eval's request cache commits each answer as it is stored): SIGINT
and SIGTERM end the run with one line and exit status 130 / 143 instead of a traceback, and
`biasmonkey run --resume` then sends only the rest. Started by `biasmonkey run`, the launcher dies with
it even when it is killed with SIGKILL (`parent_watch.die_with_parent`).
"""

import argparse
import contextlib
import functools
import gc
import logging
import os
import signal
import sys
from typing import Any

from lm_eval._cli import HarnessCLI
from lm_eval.utils import setup_logging

from biasmonkey.harness_ext.lm_eval import backends  # noqa: F401  (registers the model backends)
from biasmonkey.harness_ext.lm_eval.backends.context import ContextTooLong, ModelArgumentError
from biasmonkey.harness_ext.lm_eval.backends.served import ServerError
from biasmonkey.harness_ext.lm_eval.parent_watch import die_with_parent
from biasmonkey.harness_ext.lm_eval.preflight import check_run
from biasmonkey.harness_ext.lm_eval.task_index import index_only_what_runs
from biasmonkey.metrics.top_logprobs import InvalidLogprobs

QUIET_ENV = "BIASMONKEY_RUN"


class DropChatTemplateAdvice(logging.Filter):
    """Drops lm-eval's "appears to be an instruct or chat variant but chat template is not applied" warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = " ".join(record.getMessage().split())  # lm-eval wraps it over several lines
        return "chat variant but chat template is not applied" not in message


def _stop(signum: int, _frame: Any) -> None:
    """End at once, without a traceback: every finished answer is already committed to the cache."""
    print(f"lm-eval stopped ({signal.Signals(signum).name}); finished requests are in its cache", file=sys.stderr)
    sys.stderr.flush()
    os._exit(128 + signum)


def preflight(args: argparse.Namespace) -> None:
    """biasmonkey's checks of an lm-eval run (`preflight.check_run`), before the model loads; a
    configuration lm-eval itself refuses is left to lm-eval's own message. Then lm-eval indexes only
    the include path when the run's tasks are all there (`task_index.index_only_what_runs`)."""
    if getattr(args, "command", None) != "run":
        return
    from lm_eval.config.evaluate_config import EvaluatorConfig

    lm_eval_logger = logging.getLogger("lm_eval")
    level = lm_eval_logger.level
    lm_eval_logger.setLevel(logging.ERROR)  # lm-eval logs its own warnings when it reads them again
    try:
        with contextlib.redirect_stdout(None):  # the printout of --config, printed again later
            config = EvaluatorConfig.from_cli(argparse.Namespace(**vars(args)))
    except Exception:
        return
    finally:
        lm_eval_logger.setLevel(level)
    try:
        # under `biasmonkey run`, the options were read before the launcher started
        check_run(config, options_checked=bool(os.environ.get(QUIET_ENV)))
    except ValueError as err:
        print(f"lm-eval not started: {err}", file=sys.stderr)
        sys.exit(2)
    index_only_what_runs(config.tasks or [])


def freeze_before_evaluating() -> None:
    """Python's cyclic garbage collector leaves alone what exists when lm-eval's `evaluate` starts:
    the imports, the model, the tasks and their documents, all kept to the end of the run. lm-eval
    then builds every request (some 30 objects each), enough to set off full collections that scan
    everything in the process again: 0.2 s of a 3.3 s few-shot yes-no run on 2 cores (the tiny
    model), where freezing after the imports alone saved under 0.07 s."""
    import lm_eval.evaluator as evaluator

    evaluate = evaluator.evaluate

    @functools.wraps(evaluate)
    def frozen_first(*args: Any, **kwargs: Any) -> Any:
        gc.freeze()
        return evaluate(*args, **kwargs)

    evaluator.evaluate = frozen_first  # simple_evaluate calls it by this module-level name


def main() -> None:
    die_with_parent()  # started by `biasmonkey run`: never outlive it, even after its SIGKILL
    if os.environ.get(QUIET_ENV):
        logging.getLogger("lm_eval.evaluator").addFilter(DropChatTemplateAdvice())
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    try:
        setup_logging()  # as lm-eval's own `cli_evaluate`, with biasmonkey's checks before the run
        parser = HarnessCLI()
        args = parser.parse_args()
        preflight(args)
        freeze_before_evaluating()
        parser.execute(args)
    # each message names what went wrong and the fix: no traceback
    except ModelArgumentError as err:  # (raised before the weights load)
        print(f"lm-eval not started: {err}", file=sys.stderr)
        sys.exit(2)
    except (ServerError, ContextTooLong, InvalidLogprobs) as err:
        print(f"lm-eval stopped: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
