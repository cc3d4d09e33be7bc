"""Inspect adapter: per family a solver, a scorer and the registered tasks `biasmonkey/<task>`;
the task parameters (`-T`), the metrics and the records come from the family's contract."""
