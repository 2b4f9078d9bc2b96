"""The two leg views of a joint Qdrant collection (:mod:`rrf_retriever.stores.qdrant.joint`): the dense view
writes both vectors in one upsert and searches the dense leg; the keyword view searches the BM25 leg and its writes
are no-ops carried by the dense view (``writes_through``). Both share ``batch_group`` (the store), so the engine
runs them as one request (``search_batch``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import SearchRequest, StoreBase
from rrf_retriever.stores.qdrant.points import ExcludeIds, Metadatas, Vectors
from rrf_retriever.types import Hit, Record

if TYPE_CHECKING:  # the joint store creates its views: importing it here at run time would be a cycle
    from rrf_retriever.stores.qdrant.joint import BatchResult, JointKind

__all__ = ["HybridDenseView", "HybridKeywordView"]


class _JointView(StoreBase):
    """What both views share: the joint store behind them, its GIL and batch group, count, listing and closing."""

    def __init__(self, store: JointKind) -> None:
        self.store = store
        self.holds_gil = store.holds_gil

    @property
    def batch_group(self) -> JointKind:
        """Legs whose stores share this object run as one request (:meth:`JointKind.search_batch`)."""
        return self.store

    def count(self) -> int:
        return self.store.count()

    def ids_matching(self, filter: FilterSpec | None = None, limit: int | None = None) -> list[str]:
        """Every stored id the filter matches, sorted (``delete_where``, LlamaIndex ``delete_ref_doc``)."""
        return self.store.ids_matching(filter, limit)

    def some_ids(self, limit: int) -> list[str]:
        """Up to ``limit`` stored ids without listing the rest (:class:`~rrf_retriever.stores.base.SomeIds`: the
        engine's cosine background samples them)."""
        return self.store.some_ids(limit)

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """The typed entry (:class:`~rrf_retriever.stores.base.RequestSearch`): the request's ``kind`` names the leg."""
        return self.store.search_request(request)

    async def asearch_request(self, request: SearchRequest) -> list[Hit]:
        return await self.store.asearch_request(request)

    def search_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        return self.store.search_batch(requests)

    async def asearch_batch(self, requests: Sequence[SearchRequest]) -> BatchResult:
        return await self.store.asearch_batch(requests)

    def close(self) -> None:
        self.store.close()


class HybridDenseView(_JointView):
    """The dense leg of a joint collection (a :class:`~rrf_retriever.stores.base.DenseStore`): its writes write
    both vectors in one upsert, its searches are the dense leg's."""

    def __init__(self, store: JointKind) -> None:
        super().__init__(store)
        self.embedding = store.embedding

    @property
    def dimension(self) -> int | None:
        return self.store.dimension

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None,
            vectors: Vectors = None) -> None:
        self.store.add(ids, texts, metadatas, vectors)

    async def aadd(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None,
                   vectors: Vectors = None) -> None:
        await self.store.aadd(ids, texts, metadatas, vectors)

    def delete(self, ids: Sequence[str]) -> None:
        self.store.delete(ids)

    async def adelete(self, ids: Sequence[str]) -> None:
        await self.store.adelete(ids)

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        return self.store.get(ids, with_vectors=with_vectors)

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored dense vectors of ``ids`` (``{id: vector}``, unknown ids absent), for the diversity stage."""
        return {r.id: list(r.vector) for r in self.store.get(ids, with_vectors=True) if r.vector is not None}

    def search(self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None,
               exclude_ids: ExcludeIds = None) -> list[Hit]:
        return self.store.search(vector, limit, filter, exclude_ids)

    async def asearch(self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None,
                      exclude_ids: ExcludeIds = None) -> list[Hit]:
        return await self.store.asearch(vector, limit, filter, exclude_ids)

    def __repr__(self) -> str:
        return f"{self.store!r}.dense"


class HybridKeywordView(_JointView):
    """The keyword leg of a joint collection (a :class:`~rrf_retriever.stores.base.KeywordStore`). Its ``add`` and
    ``delete`` do nothing: the dense view writes both vectors (``writes_through``), and an engine refuses this view
    without it."""

    def __init__(self, store: JointKind) -> None:
        super().__init__(store)
        #: The store that carries this view's writes; the engine requires it among the sources.
        self.writes_through = store.dense

    @property
    def analyzer(self) -> Analyzer:
        return self.store.analyzer  # read each time: reopening a collection adopts its saved analyzer

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None) -> None:
        """Nothing: the dense view's write wrote this leg too (one upsert)."""

    async def aadd(self, *args: Any, **kwargs: Any) -> None:
        """Nothing (see :meth:`add`)."""

    def delete(self, ids: Sequence[str]) -> None:
        """Nothing: the dense view's delete removed the points."""

    async def adelete(self, ids: Sequence[str]) -> None:
        """Nothing (see :meth:`delete`)."""

    def get(self, ids: Sequence[str]) -> list[Record]:
        return self.store.get(ids)

    def search(self, query: str, limit: int, filter: FilterSpec | None = None,
               exclude_ids: ExcludeIds = None) -> list[Hit]:
        return self.store.keyword_search(query, limit, filter, exclude_ids)

    async def asearch(self, query: str, limit: int, filter: FilterSpec | None = None,
                      exclude_ids: ExcludeIds = None) -> list[Hit]:
        return await self.store.akeyword_search(query, limit, filter, exclude_ids)

    def __repr__(self) -> str:
        return f"{self.store!r}.keyword"
