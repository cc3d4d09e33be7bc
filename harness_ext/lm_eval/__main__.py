"""`python -m biasmonkey.harness_ext.lm_eval ARGS…`: the stock `lm_eval` command line with biasmonkey's
model backends registered (`--model biasmonkey-hf`, `--model biasmonkey-server`).

lm-eval 0.4.13 has no model plugin discovery (the `lm_eval.models` entry point biasmonkey declares is
merged upstream but not released), and lm-eval creates the model before it loads any task, so a
task file cannot register a backend: this launcher imports the backends first, then hands over to
lm-eval's own CLI, unchanged.

When `biasmonkey run` starts it (environment variable `BIASMONKEY_RUN` set), lm-eval's advice to
apply the chat template to an instruct model is left out: the raw prompt is the paper's protocol and
a deliberate default there. Every other message, warnings and errors included, is lm-eval's own.

A served model's failure (`ServerError`: the URL and what went wrong) is one line, not a traceback.
Stopping keeps what finished (lm-eval's request cache commits each answer as it is stored): SIGINT
and SIGTERM end the run with one line and exit status 130 / 143 instead of a traceback, and
`biasmonkey run --resume` then sends only the rest.
"""

import logging
import os
import signal
import sys
from typing import Any

from lm_eval.__main__ import cli_evaluate

from biasmonkey.harness_ext.lm_eval import backends  # noqa: F401  (registers the model backends)
from biasmonkey.harness_ext.lm_eval.backends.served import ServerError

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


def main() -> None:
    if os.environ.get(QUIET_ENV):
        logging.getLogger("lm_eval.evaluator").addFilter(DropChatTemplateAdvice())
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    try:
        cli_evaluate()
    except ServerError as err:  # the message names the server and what went wrong: no traceback
        print(f"lm-eval stopped: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
