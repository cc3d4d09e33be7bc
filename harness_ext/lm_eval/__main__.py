"""`python -m biasmonkey.harness_ext.lm_eval ARGS…`: the stock `lm_eval` command line with biasmonkey's
model backends registered (`--model biasmonkey-hf`, `--model biasmonkey-server`).

lm-eval 0.4.13 has no model plugin discovery (the `lm_eval.models` entry point biasmonkey declares is
merged upstream but not released), and lm-eval creates the model before it loads any task, so a
task file cannot register a backend: this launcher imports the backends first, then hands over to
lm-eval's own CLI, unchanged.

When `biasmonkey run` starts it (environment variable `BIASMONKEY_RUN` set), lm-eval's advice to
apply the chat template to an instruct model is left out: the raw prompt is the paper's protocol and
a deliberate default there. Every other message, warnings and errors included, is lm-eval's own.
"""

import logging
import os

from lm_eval.__main__ import cli_evaluate

from biasmonkey.harness_ext.lm_eval import backends  # noqa: F401  (registers the model backends)

QUIET_ENV = "BIASMONKEY_RUN"


class DropChatTemplateAdvice(logging.Filter):
    """Drops lm-eval's "appears to be an instruct or chat variant but chat template is not applied" warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = " ".join(record.getMessage().split())  # lm-eval wraps it over several lines
        return "chat variant but chat template is not applied" not in message


def main() -> None:
    if os.environ.get(QUIET_ENV):
        logging.getLogger("lm_eval.evaluator").addFilter(DropChatTemplateAdvice())
    cli_evaluate()


if __name__ == "__main__":
    main()
