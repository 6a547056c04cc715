"""Benchmark harness: experiments, data sets and benchmarks that use the library."""
