"""The application: the `biasmonkey` command line, run, plan, summary and report, built on the
harness adapters (`harness_ext/lm_eval/`, `harness_ext/inspect/`) and the families (`tasks/`)."""
