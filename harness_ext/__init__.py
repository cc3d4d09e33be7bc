"""Thin harness adapters (lm-eval) and the `biasmonkey` command line."""
