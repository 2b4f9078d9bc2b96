"""Listing stored documents by filter, bounded, for the frameworks' doors: LlamaIndex's ``get_nodes(filters=...)``
without node ids and LangChain's ``get_by_filter``, both over :meth:`HybridEngine.get_where
<rrf_retriever.engine.HybridEngine.get_where>` (the engine's listing, as ``delete_where`` finds what it deletes).

A listing holds every matching document in memory, so it is bounded: without ``limit`` at most :data:`LIST_MAX`
documents may match (more is refused, never cut silently); ``limit`` (0 to :data:`LIST_MAX`) asks for the first
``limit`` by id.

Example:
    >>> from rrf_retriever.engine import HybridEngine
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> engine = HybridEngine({"keyword": FTS5KeywordStore()})
    >>> engine.add(["b", "a", "c"], ["x", "y", "z"], [{"n": 1}, {"n": 2}, {}])
    ['b', 'a', 'c']
    >>> [r.id for r in listed(engine, {"n": {"$exists": True}})], [r.id for r in listed(engine, None, limit=1)]
    (['a', 'b'], ['a'])
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.types import Record
from rrf_retriever.validate import check_int

__all__ = ["LIST_MAX", "listed"]

#: At most this many documents in one listing by filter (a ``limit`` up to it; more matching without one: refused).
LIST_MAX = 10_000


def listed(engine: HybridEngine, flt: Any, limit: int | None = None) -> list[Record]:
    """The stored documents matching ``flt`` (our filter, already translated; None: every document), sorted by id.

    Raises:
        InvalidArgumentError: no ``limit`` and more than :data:`LIST_MAX` documents match, or ``limit`` is out of
            0 to :data:`LIST_MAX`; InvalidTypeError: ``limit`` is not an int. InvalidFilterError: a malformed filter.
    """
    if limit is not None:
        return engine.get_where(flt, limit=check_int(limit, "limit", 0, LIST_MAX))
    records = engine.get_where(flt, limit=LIST_MAX + 1)
    if len(records) > LIST_MAX:
        msg = (f"more than {LIST_MAX} stored documents match: narrow the filter, or pass limit= (at most {LIST_MAX}) "
               "for the first ones by id")
        raise InvalidArgumentError(msg)
    return records
