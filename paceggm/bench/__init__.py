"""Benchmark harness: experiment grid, runner, results store and the figures stage."""
