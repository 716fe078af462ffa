"""Benchmarks. Each prints its figures side by side from one run; docs/benchmarks.md keeps them."""
