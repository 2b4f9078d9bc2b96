"""Reliability benchmarks: the long soak and what hostile requests that pass every limit cost."""
