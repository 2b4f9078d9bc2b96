"""The filter leaves Qdrant cannot express exactly, resolved to point ids before the search: a
:class:`~rrf_retriever.scope.tree.DateRange` and a :class:`~rrf_retriever.scope.tree.Contains`.

Qdrant's ``DatetimeRange`` reads its own set of date strings (and qdrant-client's local mode another, through
``strptime``); ``MatchText`` matches tokens, not substrings. So the points holding the key are scrolled (only that
payload path, :data:`RESOLVE_PAGE` points per request), the reference semantics
(:func:`rrf_retriever.scope.tree.matches` of the leaf) runs on each point's metadata, and the leaf becomes ``HasId``
of the points it accepts: exact on every engine, and applied inside the engine's search, before its top-k, like any
other condition. The cost is one scroll over the points holding the key per such key and query (the whole collection
when every point holds it), and a ``HasId`` as long as the matching points; leaves on one key share the scroll.

Example:
    >>> from rrf_retriever.scope.parse import normalize_filter
    >>> from rrf_retriever.stores.qdrant.filters import resolved_leaves
    >>> sorted(by_key(resolved_leaves(normalize_filter({"a": {"$contains": "x"}, "b": {"$gte": "2024-01-01"}}))))
    ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rrf_retriever.scope.tree import Contains, DateRange, FilterNode, matches
from rrf_retriever.stores.qdrant.backend import Backend
from rrf_retriever.stores.qdrant.filters import IS_EMPTY, field_key, resolved_leaves
from rrf_retriever.stores.qdrant.ops import Op, Steps

__all__ = ["RESOLVE_PAGE", "by_key", "resolve_steps"]

#: Points per scroll page of a resolution (only the key's payload path travels). Larger than ``ids_matching``'s
#: pages: qdrant-client's local mode walks the collection again for each page (512: 7.6 s for 10k points, 4096:
#: 1.6 s; benchmarks/speed/bench_filter_resolve.py).
RESOLVE_PAGE = 4096


def by_key(leaves: Sequence[DateRange | Contains]) -> dict[str, list[DateRange | Contains]]:
    """The leaves grouped by the metadata key they test (one scroll per key)."""
    out: dict[str, list[DateRange | Contains]] = {}
    for leaf in leaves:
        out.setdefault(leaf.key, []).append(leaf)
    return out


def resolve_steps(backend: Backend, flt: FilterNode) -> Steps[dict[FilterNode, frozenset[str]]]:
    """The point ids each ``DateRange`` / ``Contains`` leaf of ``flt`` accepts, for
    :func:`~rrf_retriever.stores.qdrant.filters.compile_filter`'s ``resolved``."""
    resolved: dict[FilterNode, frozenset[str]] = {}
    for key, leaves in sorted(by_key(resolved_leaves(flt)).items()):
        path = field_key(key)
        held = backend.filter(must_not=[backend.condition(path, IS_EMPTY)])
        tests = [(leaf, set[str]()) for leaf in leaves]
        offset = None
        while True:
            points, offset = yield Op(backend.scroll, (offset, RESOLVE_PAGE, held, False, [path]),
                                      "resolving a filter")
            for point in points:
                meta = point.payload.get("metadata") if isinstance(point.payload, Mapping) else None
                if not isinstance(meta, Mapping) or key not in meta:
                    continue
                for leaf, pids in tests:
                    if matches(meta, leaf):  # the reference semantics itself, not a copy of its leaf test
                        pids.add(str(point.id))
            if offset is None:
                break
        resolved.update((leaf, frozenset(pids)) for leaf, (_, pids) in zip(leaves, tests))
    return resolved
