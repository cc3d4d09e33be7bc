"""Inspect's entry point (`[project.entry-points.inspect_ai]`): importing this module registers
every biasmonkey task as `biasmonkey/<name>`, so `inspect eval biasmonkey/acquiescence` works
from any directory."""

from biasmonkey.harness_ext import inspect_tasks  # noqa: F401  (registers the response-bias tasks)
from biasmonkey.harness_ext import inspect_cognitive  # noqa: F401  (registers the cognitive-bias tasks)
from biasmonkey.harness_ext import inspect_yesno  # noqa: F401  (registers the yes-no tasks)
