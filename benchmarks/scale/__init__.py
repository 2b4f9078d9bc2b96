"""Scale benchmarks: latency, build time, memory and recall from 10k to 1M documents."""
