"""The MMLU answer-position family (Bhatt & Ivanova, 2025)."""
