"""Inspect's entry point: importing this module registers every biasmonkey task."""
