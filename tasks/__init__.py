"""Task families: data loading, pair construction, prompts and lm-eval YAML, one folder per family.

This folder is also the lm-eval include path (`biasmonkey tasks-dir`).
"""
