"""Cognitive-bias tests (Malberg et al., 2025): 30 biases, control/treatment pairs."""
