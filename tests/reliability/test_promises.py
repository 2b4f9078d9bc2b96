"""The README's promises under attack (tests/reliability/promises.py), one round at a small size; the soak
(`benchmarks/reliability/soak.py`) runs the same checks at length."""

from __future__ import annotations

from tests.reliability.promises import run_promises


def test_pages_pinning_filters_junk_keys_wide_logic_and_ties_hold_on_every_store() -> None:
    report = run_promises(rounds=1, seed=7, big_values=200)
    assert report["problems"] == []
    assert all(n > 0 for n in report["checks"].values()), report["checks"]
