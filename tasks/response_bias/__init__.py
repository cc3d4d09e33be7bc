"""Survey response biases (Tjuatja et al., TACL 2024): data, pairs, perturbations, prompts, scoring."""
