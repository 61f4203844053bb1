"""Benchmarks of mneme; each module is runnable with `python -m benchmarks.<name>`."""
