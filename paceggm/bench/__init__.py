"""Benchmark harness: Hydra experiment recipes expanded into keyed cells, run in parallel, stored resumably."""
