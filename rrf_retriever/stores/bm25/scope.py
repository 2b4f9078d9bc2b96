"""The in-memory stores' filter compiler: a filter tree -> a numpy boolean mask over document positions.

Built once per index snapshot from the documents' metadata, :class:`ScopeIndex` holds per key: the positions of
each typed scalar value (:func:`~rrf_retriever.scope.tree.scope_key`), the numeric values sorted (a range is two
bisections and one slice), and the positions where the key is present (``$exists``). A query then costs a few
numpy operations per node, never a Python call per document; :func:`rrf_retriever.scope.tree.matches` is the
reference it is tested against.

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

from rrf_retriever.scope.tree import AllOf, AnyOf, Exists, FilterNode, Match, Not, Range, scope_key

__all__ = ["ScopeIndex"]


class ScopeIndex:
    """Per-key value, number and presence indexes over a list of metadata mappings (positions 0..n-1)."""

    def __init__(self, metadatas: Sequence[Mapping[str, Any]]) -> None:
        import numpy as np

        self.size = len(metadatas)
        values: dict[tuple[str, str, Any], list[int]] = {}
        numbers: dict[str, list[tuple[int | float, int]]] = {}
        present: dict[str, list[int]] = {}
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
        self._values = {k: np.asarray(v, dtype=np.int64) for k, v in values.items()}
        self._present = {k: np.asarray(v, dtype=np.int64) for k, v in present.items()}
        # Sorted as Python numbers (ints and floats compare exactly, as in scope.matches and SQLite; a float64
        # array would round integers beyond 2**53).
        self._numbers: dict[str, tuple[list[int | float], Any]] = {}
        for key, pairs in numbers.items():
            pairs.sort(key=lambda p: p[0])
            self._numbers[key] = ([v for v, _ in pairs], np.asarray([p for _, p in pairs], dtype=np.int64))

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
            return self._range(node)
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

    def _range(self, node: Range) -> Any:
        import numpy as np

        out = np.zeros(self.size, dtype=bool)
        found = self._numbers.get(node.key)
        if found is None:
            return out
        values, positions = found
        lo, hi = 0, len(values)
        if node.gt is not None:
            lo = max(lo, bisect_right(values, node.gt))
        if node.gte is not None:
            lo = max(lo, bisect_left(values, node.gte))
        if node.lt is not None:
            hi = min(hi, bisect_left(values, node.lt))
        if node.lte is not None:
            hi = min(hi, bisect_right(values, node.lte))
        if lo < hi:
            out[positions[lo:hi]] = True
        return out
