"""Which int64 integers Qdrant's range reading gets wrong near a bound, in closed form (no integer is tested one by
one), for :mod:`rrf_retriever.stores.qdrant.filters`.

Qdrant reads a range in float64 (no payload index, a float index, a server) or exactly (qdrant-client local mode,
an integer index). Past 2**53 float64 cannot hold every integer: ``float(p)`` rounds (half to even) onto the
nearest float64, so integers near a bound may fall on the wrong side. ``float`` is monotone, so every reading of a
range is one interval of integers, each end computable from the float64 neighbours of a bound
(``math.nextafter``); the integers a reading gets wrong are the differences of intervals: at most two runs a
side, each within about one float64 step (at most 2048 integers in int64) of a bound.

Example:
    >>> rounding_run(2.0**62) == (2**62 - 256, 2**62 + 512)  # steps of 512 below 2**62, 1024 above
    True
    >>> range_errors({"gte": 2**62 + 1}, FilterWork())  # float64 reads the bound as 2**62 + 1024
    ([], [(4611686018427387905, 4611686018427388927)])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rrf_retriever.validate import INT64_MAX, INT64_MIN

__all__ = ["FilterWork", "Run", "float_bounds", "range_errors", "rounding_run", "run_size", "subtract_values"]

#: An inclusive run of integers ``(first, last)``; empty when ``first > last``.
Run = tuple[int, int]
_LOWER = ("gt", "gte")
_EMPTY: Run = (INT64_MAX, INT64_MIN)


@dataclass
class FilterWork:
    """What compiling one filter did: ``examined``, float64 conversions and comparisons made to find the runs;
    ``listed``, integers put in ``MatchAny`` lists. The compiler refuses a filter past its cap on ``listed``."""

    examined: int = 0
    listed: int = 0


def run_size(run: Run) -> int:
    """How many integers ``run`` holds."""
    return max(0, run[1] - run[0] + 1)


def rounding_run(f: float, work: FilterWork | None = None) -> Run:
    """The integers (any size) that float64 rounds to the integral float ``f``: a run around ``f``, ``(f, f)``
    below 2**53. Two float64 checks settle each end (the midpoint to a neighbour rounds half to even)."""
    work = work if work is not None else FilterWork()
    c = int(f)
    lo = (int(math.nextafter(f, -math.inf)) + c) // 2  # the midpoint, rounded down: lo or lo - 1
    hi = -((-(int(math.nextafter(f, math.inf)) + c)) // 2)  # rounded up: hi or hi + 1
    work.examined += 2
    if float(lo) != f:
        lo += 1
    if float(hi) != f:
        hi -= 1
    return lo, hi


def _reading_threshold(op: str, c: float, *, rounded: bool, work: FilterWork) -> int:
    """The first (``gt``/``gte``) or last (``lt``/``lte``) integer ``p`` with ``op(g(p), c)``; ``g`` rounds to
    float64 when ``rounded``, else is exact. Monotone ``g``: one end computes it."""
    if math.isinf(c):
        c = math.copysign(2.0**64, c)  # beyond int64: the same integers as infinity
    if not rounded or c != math.floor(c):  # exact, or a bound no integer's float64 equals: the nearest integers
        return {"gte": math.ceil(c), "gt": math.floor(c) + 1, "lte": math.floor(c), "lt": math.ceil(c) - 1}[op]
    if op == "gt":
        op, c = "gte", math.nextafter(c, math.inf)  # float(p) > c  <=>  float(p) >= the next float64
    elif op == "lt":
        op, c = "lte", math.nextafter(c, -math.inf)
    lo, hi = rounding_run(c, work)
    return lo if op == "gte" else hi


def _interval(bounds: dict[str, float | int], *, rounded: bool, work: FilterWork) -> Run:
    """The int64 integers within every bound, read exactly or rounded to float64."""
    lo, hi = INT64_MIN, INT64_MAX
    for op, b in bounds.items():
        if isinstance(b, int) and not rounded:
            t = {"gte": b, "gt": b + 1, "lte": b, "lt": b - 1}[op]
        else:
            t = _reading_threshold(op, float(b), rounded=rounded, work=work)
        if op in _LOWER:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
    return (lo, hi) if lo <= hi else _EMPTY


def _minus(a: Run, b: Run) -> list[Run]:
    """``a`` without ``b``: at most two runs."""
    if run_size(a) == 0:
        return []
    if run_size(b) == 0:
        return [a]
    return [r for r in ((a[0], min(a[1], b[0] - 1)), (max(a[0], b[1] + 1), a[1])) if run_size(r)]


def _merged(runs: list[Run]) -> list[Run]:
    out: list[Run] = []
    for first, last in sorted(runs):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def float_bounds(bounds: dict[str, float | int]) -> dict[str, float]:
    """Float bounds with ``x op b`` equal to ``x op' b'`` for every float ``x``; the tightest on each side.

    Example:
        >>> float_bounds({"gt": 2**62 + 1, "lte": 2.5})
        {'gte': 4.611686018427389e+18, 'lte': 2.5}
    """
    lower: tuple[float, bool] | None = None  # (value, strict)
    upper: tuple[float, bool] | None = None
    for op, b in bounds.items():
        strict = op in ("gt", "lt")
        f = float(b)
        if isinstance(b, int) and f != b:  # an int float64 cannot hold: floats are beyond it or below it
            below, above = (math.nextafter(f, -math.inf), f) if f > b else (f, math.nextafter(f, math.inf))
            f, strict = (above, False) if op in _LOWER else (below, False)
        if op in _LOWER:
            if lower is None or f > lower[0] or (f == lower[0] and strict):
                lower = (f, strict)
        elif upper is None or f < upper[0] or (f == upper[0] and strict):
            upper = (f, strict)
    out: dict[str, float] = {}
    if lower is not None:
        out["gt" if lower[1] else "gte"] = lower[0]
    if upper is not None:
        out["lt" if upper[1] else "lte"] = upper[0]
    return out


def range_errors(bounds: dict[str, float | int], work: FilterWork) -> tuple[list[Run], list[Run]]:
    """The integers Qdrant's range on :func:`float_bounds` of ``bounds`` gets wrong under either reading, as runs:
    ``(wrong: matched but outside, missed: inside but not matched)``. A few float64 checks a bound, whatever the
    bounds' size; each run lies within about one float64 step of a bound."""
    floats: dict[str, float | int] = dict(float_bounds(bounds))
    exact = _interval(bounds, rounded=False, work=work)
    readings = [_interval(floats, rounded=rounded, work=work) for rounded in (False, True)]
    wrong = _merged([r for reading in readings for r in _minus(reading, exact)])
    missed = _merged([r for reading in readings for r in _minus(exact, reading)])
    return wrong, missed


def subtract_values(runs: list[Run], values: list[int]) -> list[Run]:
    """The int64 integers of ``runs`` (sorted, disjoint) without the sorted ``values``."""
    out: list[Run] = []
    i = 0
    for first, last in runs:
        first, last = max(first, INT64_MIN), min(last, INT64_MAX)  # Qdrant holds no other integer
        while i < len(values) and values[i] < first:
            i += 1
        start = first
        while i < len(values) and values[i] <= last:
            if values[i] > start:
                out.append((start, values[i] - 1))
            start = values[i] + 1
            i += 1
        if start <= last:
            out.append((start, last))
    return out
