"""Lifecycle attacks on the on-disk default stack (fast profile of benchmarks/reliability/soak.py's lifecycle workload):
KeyboardInterrupt mid-write, fork after open, close() under load, many short-lived threads."""

from __future__ import annotations

from tests.reliability.workloads import run_lifecycle


def test_interrupts_fork_close_under_load_and_short_lived_threads_keep_every_property() -> None:
    figures = run_lifecycle(150, seed=7)
    assert figures["problems"] == []
    assert figures["interrupted"] > 10  # the attack really happened
    assert figures["close_under_load"].get("engine_closed", 0) > 0
