"""A store without the typed entry (``search_request``: a third party's, written to the protocol's ``search``
alone) is searched through its ``search`` door, with the query's validated scope in the filter slot, and gives
what a store of this package gives (:class:`~rrf_retriever.engine.legs.StoreLeg`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.legs import KeywordLeg
from rrf_retriever.scope.parse import Scope
from rrf_retriever.stores.base import KeywordStore, RequestSearch
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.types import Hit, Record

TEXTS = {"a": "hybrid search engines", "b": "search with filters", "c": "keyword search", "d": "dense vectors"}
METAS = {"a": {"n": 1}, "b": {"n": 2}, "c": {"n": 2}, "d": {"n": 2}}


class DoorOnlyStore:
    """A keyword store with the protocol's methods only (no ``search_request``), over a real FTS5 store."""

    holds_gil = False

    def __init__(self) -> None:
        self.inner = FTS5KeywordStore()
        self.analyzer = self.inner.analyzer
        self.filters: list[Any] = []

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Any = None) -> None:
        self.inner.add(ids, texts, metadatas)

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def get(self, ids: Sequence[str]) -> list[Record]:
        return self.inner.get(ids)

    def count(self) -> int:
        return self.inner.count()

    def search(self, query: str, limit: int, filter: Any = None, exclude_ids: Iterable[str] | None = None) -> list[Hit]:
        self.filters.append(filter)
        return self.inner.search(query, limit, filter, exclude_ids)

    def close(self) -> None:
        self.inner.close()

    async def aadd(self, ids: Sequence[str], texts: Sequence[str], metadatas: Any = None) -> None:
        self.add(ids, texts, metadatas)

    async def adelete(self, ids: Sequence[str]) -> None:
        self.delete(ids)

    async def asearch(self, query: str, limit: int, filter: Any = None,
                      exclude_ids: Iterable[str] | None = None) -> list[Hit]:
        return self.search(query, limit, filter, exclude_ids)


def _engine(store: Any) -> HybridEngine:
    engine = HybridEngine({"keyword": store})
    engine.add(list(TEXTS), list(TEXTS.values()), [METAS[i] for i in TEXTS])
    return engine


def test_a_door_only_store_is_searched_through_its_door_with_the_validated_scope() -> None:
    door = DoorOnlyStore()
    assert isinstance(door, KeywordStore) and not isinstance(door, RequestSearch)
    engine, reference = _engine(door), _engine(FTS5KeywordStore())
    leg = engine.legs["keyword"]
    assert isinstance(leg, KeywordLeg) and leg.typed_store is None
    assert reference.legs["keyword"].typed_store is not None  # type: ignore[attr-defined]  # a StoreLeg
    kwargs: dict[str, Any] = {"filter": {"n": 2}, "exclude_ids": ["c"]}
    got = [(h.id, h.score) for h in engine.search("search", **kwargs).hits]
    assert got == [(h.id, h.score) for h in reference.search("search", **kwargs).hits]
    assert [i for i, _ in got] == ["b"]
    scope = door.filters[-1]  # what the door received: the query's scope, parsed once, passed through
    assert isinstance(scope, Scope) and scope.exclude_ids == frozenset({"c"}) and scope.filter is not None
    async_got = asyncio.run(engine.asearch("search", **kwargs))
    assert [(h.id, h.score) for h in async_got.hits] == got
    assert len(door.filters) == 2
