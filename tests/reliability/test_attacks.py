"""The attacks of "Trust, round 4" (tests/reliability/attacks.py), one round each; the soak (`benchmarks/reliability/soak.py`)
runs the same attacks at length. The attacks in ``PENDING`` (their fix not on this branch yet) are not run."""

from __future__ import annotations

import pytest

from tests.reliability.attacks import ATTACKS, PENDING, run_attacks

READY = [name for name in ATTACKS if name not in PENDING]


@pytest.mark.parametrize("attack", READY)
def test_each_attack_is_refused_or_answered_exactly_and_changes_nothing(attack: str) -> None:
    report = run_attacks(rounds=1, seed=7, attacks=[attack])
    assert report["problems"] == []
    assert report["checks"][attack] > 0, report["checks"]


def test_the_pending_attacks_are_attacks_of_the_workload() -> None:
    assert set(PENDING) <= set(ATTACKS)
