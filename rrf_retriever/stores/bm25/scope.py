"""The in-memory stores' filter compiler: a filter tree -> a numpy boolean mask over document positions.

Built once per index snapshot from the documents' metadata, :class:`ScopeIndex` holds per key: the positions of
each typed scalar value (:func:`~rrf_retriever.scope.tree.scope_key`), the numeric values sorted (a range is two
bisections and one slice), the instants of its date strings sorted likewise (a :class:`DateRange`), and the
positions where the key is present (``$exists``). A query then costs a few numpy operations per node, never a
Python call per document; a :class:`Contains` costs one substring test per distinct string of its key.
:func:`rrf_retriever.scope.tree.matches` is the reference it is tested against.

Example:
    >>> from rrf_retriever.scope.parse import normalize_filter
    >>> idx = ScopeIndex([{"n": 1}, {"n": [2, 7]}, {"n": "7"}, {}])
    >>> idx.mask(normalize_filter({"n": {"$gt": 1.5}})).tolist()
    [False, True, False, False]
    >>> idx.mask(normalize_filter({"n": {"$ne": 1}})).tolist()
    [False, True, True, True]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.scope.dates import date_micros
from rrf_retriever.scope.tree import (
    AllOf,
    AnyOf,
    Contains,
    DateRange,
    Exists,
    FilterNode,
    Match,
    Not,
    Range,
    date_bounds,
    scope_key,
    text_test,
)

__all__ = ["ScopeIndex"]


class ScopeIndex:
    """Per-key value, number and presence indexes over a list of metadata mappings (positions 0..n-1)."""

    def __init__(self, metadatas: Sequence[Mapping[str, Any]]) -> None:
        import numpy as np

        self.size = len(metadatas)
        values: dict[tuple[str, str, Any], list[int]] = {}
        numbers: dict[str, list[tuple[int | float, int]]] = {}
        present: dict[str, list[int]] = {}
        dates: dict[str, list[tuple[int | float, int]]] = {}
        for pos, meta in enumerate(metadatas):
            for key, value in meta.items():
                elements = value if isinstance(value, (list, tuple)) else (value,)
                if value is not None and elements:
                    present.setdefault(key, []).append(pos)
                for v in elements:
                    tagged = scope_key(v)
                    if tagged is None:
                        continue
                    bucket = values.setdefault((key, *tagged), [])
                    if not bucket or bucket[-1] != pos:
                        bucket.append(pos)
                    if tagged[0] == "n":
                        numbers.setdefault(key, []).append((tagged[1], pos))
                    elif tagged[0] == "s" and (micros := date_micros(tagged[1])) is not None:
                        dates.setdefault(key, []).append((micros, pos))
        self._values = {k: np.asarray(v, dtype=np.int64) for k, v in values.items()}
        self._present = {k: np.asarray(v, dtype=np.int64) for k, v in present.items()}
        # Sorted as Python numbers (ints and floats compare exactly, as in scope.matches and SQLite; a float64
        # array would round integers beyond 2**53).
        self._numbers = _sorted_runs(numbers)
        self._dates = _sorted_runs(dates)
        #: Per key, each distinct string and its positions (what a Contains tests).
        self._strings: dict[str, list[tuple[str, Any]]] = {}
        for (key, tag, value), array in self._values.items():
            if tag == "s":
                self._strings.setdefault(key, []).append((value, array))

    def mask(self, node: FilterNode) -> Any:
        """A boolean array: True where the document matches ``node`` (a normalized filter tree).

        Example:
            >>> ScopeIndex([{"a": True}, {"a": 1}]).mask(Match("a", (1,))).tolist()
            [False, True]
        """
        import numpy as np

        if isinstance(node, Match):
            out = np.zeros(self.size, dtype=bool)
            for value in node.values:
                tagged = scope_key(value)
                positions = self._values.get((node.key, *tagged)) if tagged is not None else None
                if positions is not None:
                    out[positions] = True
            return out
        if isinstance(node, Range):
            return self._span(self._numbers.get(node.key), node.gt, node.gte, node.lt, node.lte)
        if isinstance(node, DateRange):
            bounds = date_bounds(node)
            return self._span(self._dates.get(node.key), *(bounds.get(op) for op in ("gt", "gte", "lt", "lte")))
        if isinstance(node, Contains):
            out = np.zeros(self.size, dtype=bool)
            test = text_test(node)
            for value, positions in self._strings.get(node.key, ()):
                if test(value):
                    out[positions] = True
            return out
        if isinstance(node, Exists):
            out = np.zeros(self.size, dtype=bool)
            positions = self._present.get(node.key)
            if positions is not None:
                out[positions] = True
            return out
        if isinstance(node, AllOf):
            out = np.ones(self.size, dtype=bool)
            for part in node.parts:
                out &= self.mask(part)
            return out
        if isinstance(node, AnyOf):
            out = np.zeros(self.size, dtype=bool)
            for part in node.parts:
                out |= self.mask(part)
            return out
        if isinstance(node, Not):
            return ~self.mask(node.part)
        msg = f"not a filter node: {type(node).__name__}"  # normalize_filter lets nothing else through
        raise TypeError(msg)

    def _span(self, found: tuple[list[int | float], Any] | None, gt: float | None, gte: float | None,
              lt: float | None, lte: float | None) -> Any:
        """The positions whose sorted value (a number, or a date's instant) is within every given bound."""
        import numpy as np

        out = np.zeros(self.size, dtype=bool)
        if found is None:
            return out
        values, positions = found
        lo, hi = 0, len(values)
        if gt is not None:
            lo = max(lo, bisect_right(values, gt))
        if gte is not None:
            lo = max(lo, bisect_left(values, gte))
        if lt is not None:
            hi = min(hi, bisect_left(values, lt))
        if lte is not None:
            hi = min(hi, bisect_right(values, lte))
        if lo < hi:
            out[positions[lo:hi]] = True
        return out


def _sorted_runs(pairs_by_key: dict[str, list[tuple[int | float, int]]]) -> dict[str, tuple[list[int | float], Any]]:
    """Per key, its ``(value, position)`` pairs sorted by value, as ``(values, positions array)``."""
    import numpy as np

    out: dict[str, tuple[list[int | float], Any]] = {}
    for key, pairs in pairs_by_key.items():
        pairs.sort(key=lambda p: p[0])
        out[key] = ([v for v, _ in pairs], np.asarray([p for _, p in pairs], dtype=np.int64))
    return out
