"""The paired bootstrap that decides whether a tuned setting's gain is real.

Example:
    >>> paired_bootstrap_ci([0.2, 0.0, 0.1] * 10)[0] > 0
    True
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from rrf_retriever.errors import InvalidArgumentError

__all__ = ["paired_bootstrap_ci"]


def paired_bootstrap_ci(
    differences: Sequence[float], *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired per-query differences (queries resampled with
    replacement; seeded, so the same input gives the same interval).

    Example:
        >>> paired_bootstrap_ci([0.1] * 20)
        (0.1, 0.1)
        >>> lo, hi = paired_bootstrap_ci([0.5, -0.5] * 10); lo < 0 < hi
        True
    """
    values = [float(d) for d in differences]
    if not values:
        msg = "the bootstrap needs at least one per-query difference"
        raise InvalidArgumentError(msg)
    if resamples < 1 or not 0 < level < 1:
        msg = f"resamples must be >= 1 and level in (0, 1), got {resamples} and {level}"
        raise InvalidArgumentError(msg)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2.0

    def at(q: float) -> float:  # linear interpolation between order statistics (numpy's default percentile)
        pos = q * (len(means) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(means) - 1)
        return round(means[lo] + (means[hi] - means[lo]) * (pos - lo), 12)

    return at(tail), at(1.0 - tail)
