"""Benchmark harness: data sets, experiment grid, runners and figures (uses the library, never the reverse)."""
