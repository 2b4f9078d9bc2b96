"""Reliability and security: bad input, faults, crashes, load, scope isolation (fast profile; soak in benchmarks/reliability/soak.py)."""
