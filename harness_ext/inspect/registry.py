"""Inspect's entry point (`[project.entry-points.inspect_ai]`): importing this module registers
every biasmonkey task as `biasmonkey/<name>` (each family module registers its tasks with
Inspect's `@task` when imported), so `inspect eval biasmonkey/acquiescence` works from any
directory."""

from biasmonkey.harness_ext.inspect import cognitive, response_bias, yesno

REGISTERED = {**response_bias.TASKS, **response_bias.VARIANT_TASKS, **yesno.TASKS, **cognitive.TASKS}
