"""Speed benchmarks: query latency, ingest and embedding throughput, import and start-up time."""
