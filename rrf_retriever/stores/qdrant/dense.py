""":class:`DenseKind`: the dense store kind, on any backend (one unnamed cosine vector per point).

It implements :class:`~rrf_retriever.stores.base.DenseStore`: cosine similarity (higher is better), the scope
(filter + ``exclude_ids``) applied inside Qdrant's search, before its top-k. The collection is created on the
first ``add`` with the vectors' dimension.

Long documents (``max_windows`` >= 2): the unnamed vector is a multivector of each document's windows
(:mod:`~rrf_retriever.embeddings.windows`; the first is the document's own vector, as the model reads it whole,
the others from :func:`~rrf_retriever.embeddings.window_vectors.tail_windows`), compared by Qdrant's ``MAX_SIM``
with a one-row query: a document scores as its best window (MaxP). Still one point per document, so filters,
``exclude_ids``, deletes, replacement, ``get`` and ``top_k`` count documents as before. Public classes:
:class:`~rrf_retriever.stores.qdrant.QdrantDenseStore` (qdrant-client) and
:class:`~rrf_retriever.stores.qdrant.QdrantEdgeDenseStore` (qdrant-edge).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from rrf_retriever.embeddings import BaseEmbeddingAdapter, as_embedding
from rrf_retriever.embeddings.window_vectors import tail_windows
from rrf_retriever.embeddings.windows import DEFAULT_OVERLAP, WindowSettings, check_window_settings
from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import SearchRequest, in_thread
from rrf_retriever.stores.qdrant.backend import Saved
from rrf_retriever.stores.qdrant.common import B, QdrantStore
from rrf_retriever.stores.qdrant.ops import Steps
from rrf_retriever.stores.qdrant.points import (
    CONTENT_KEY,
    ExcludeIds,
    Metadatas,
    Point,
    Vectors,
    make_payload,
    point_id,
)
from rrf_retriever.stores.qdrant.settings import StoreSettings
from rrf_retriever.types import Hit
from rrf_retriever.validate import validate_batch
from rrf_retriever.vectors import VectorRows, rows_as_lists, validate_vectors

__all__ = ["DenseBatch", "DenseKind", "prepare_dense_batch", "window_settings", "with_windows"]


class DenseBatch(NamedTuple):
    """A validated batch with its dense vectors, ready to write: lists of floats or a float array (one row a
    document; rows become lists one upsert request at a time), or in a store of windows each document's list of
    window vectors."""

    ids: list[str]
    payloads: list[dict[str, Any]]
    vectors: VectorRows | list[list[list[float]]]
    dimension: int


def window_settings(max_windows: object, window_overlap: object) -> WindowSettings | None:
    """The settings a store was asked for: None for ``max_windows`` None (the collection's own, else one vector),
    :class:`~rrf_retriever.embeddings.windows.WindowSettings` with ``max_windows=1`` for one vector a document.

    Example:
        >>> window_settings(4, None)
        WindowSettings(max_windows=4, overlap=32)

    Raises:
        InvalidArgumentError: ``max_windows`` < 1 or a negative ``window_overlap``.
    """
    if max_windows is None and window_overlap is None:
        return None
    windows, overlap = check_window_settings(1 if max_windows is None else max_windows,
                                             DEFAULT_OVERLAP if window_overlap is None else window_overlap)
    return WindowSettings(windows, overlap)


def with_windows(embedding: BaseEmbeddingAdapter, batch: DenseBatch, settings: WindowSettings) -> DenseBatch:
    """``batch`` with each document's vector followed by its other windows' (embedded from its text now).

    Raises:
        EmbeddingError: the model failed.
        DimensionMismatchError: a window vector of another dimension than the batch's.
    """
    texts = [str(p[CONTENT_KEY]) for p in batch.payloads]
    tails = tail_windows(embedding, texts, settings.max_windows, settings.overlap)
    for rows in tails:
        for row in rows:
            if len(row) != batch.dimension:
                msg = f"a window vector has dimension {len(row)}, the documents' {batch.dimension}"
                raise DimensionMismatchError(msg)
    firsts = rows_as_lists(batch.vectors, slice(None))  # type: ignore[arg-type]  # one vector a document here
    return batch._replace(vectors=[[first, *rows] for first, rows in zip(firsts, tails)])


def prepare_dense_batch(
    embedding: BaseEmbeddingAdapter,
    dimension: int | None,
    ids: Sequence[str],
    texts: Sequence[str],
    metadatas: Metadatas,
    vectors: Vectors,
) -> DenseBatch:
    """Validate a batch and its vectors (embedding the texts when ``vectors`` is None) before anything is written.

    Raises:
        DimensionMismatchError: a vector of another dimension than ``dimension`` (or its siblings), NaN, infinity.
        EmbeddingError: the embedding model failed.
    """
    id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
    if vectors is None:
        vectors = embedding.embed_documents(text_list) if text_list else []
    vector_list: VectorRows = []
    dim = dimension or 0
    if id_list:
        vector_list, dim = validate_vectors(vectors, len(id_list), dimension)
    payloads = [make_payload(doc_id, text, meta) for doc_id, text, meta in zip(id_list, text_list, meta_list)]
    return DenseBatch(id_list, payloads, vector_list, dim)


async def embed_if_needed(
    embedding: BaseEmbeddingAdapter, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas, vectors: Vectors
) -> Vectors:
    """``vectors``, or the texts embedded by ``aembed_documents`` (the async twins' way to embed)."""
    if vectors is not None:
        return vectors
    _, text_list, _ = validate_batch(ids, texts, metadatas)
    return await embedding.aembed_documents(text_list) if text_list else []


class DenseKind(QdrantStore[B]):
    """The dense store kind: every check, conversion and operation, on the backend a public class picks.

    Args:
        embedding: A LangChain ``Embeddings``, a LlamaIndex ``BaseEmbedding``, a callable or an adapter
            (kept as ``self.embedding``, an :class:`~rrf_retriever.embeddings.EmbeddingAdapter`).
        windows: The windows asked for (:func:`window_settings`: None, the existing collection's, else one vector
            a document; ``max_windows`` >= 2: a collection of windows, scored by the best). Another value than an
            existing collection's is an error.
        settings: What every Qdrant store has (:class:`~rrf_retriever.stores.qdrant.settings.StoreSettings`).
    """

    embedding: BaseEmbeddingAdapter

    def __init__(self, embedding: Any, windows: WindowSettings | None, settings: StoreSettings) -> None:
        self.embedding = as_embedding(embedding)
        self._asked_windows = windows
        super().__init__(settings)

    @property
    def max_windows(self) -> int:
        """Windows a document is embedded in, at most (1: one vector a document)."""
        windows = self.backend.windows
        if windows is None and not self._known() and self._asked_windows is not None:
            return self._asked_windows.max_windows  # before the first add
        return 1 if windows is None else windows.max_windows

    @property
    def window_overlap(self) -> int:
        """Tokens neighbouring windows share (the default where the store keeps one vector a document)."""
        windows = self.backend.windows or self._asked_windows
        return DEFAULT_OVERLAP if windows is None else windows.overlap

    # -- public operations -------------------------------------------------------------------------------
    def add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Upsert documents (an existing id is replaced); texts are embedded when ``vectors`` is None.

        Everything is validated first: a bad id, metadata or vector raises and nothing is written.

        Raises:
            DimensionMismatchError: a vector of the wrong dimension, or holding NaN or infinity.
            EmbeddingError: the embedding model failed.
            StoreError: Qdrant failed.
        """
        self.backend.check_open()
        batch = prepare_dense_batch(self.embedding, self._dimension, ids, texts, metadatas, vectors)
        windows = self._windows_for_writes()
        if windows is not None and batch.ids:
            batch = with_windows(self.embedding, batch, windows)
        self._run(self._add_steps(batch))

    async def aadd(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Async :meth:`add` (native with an async client, texts embedded by ``aembed_documents``; a store of
        windows runs :meth:`add` in a worker thread)."""
        if self._windows_for_writes() is not None:
            return await in_thread(self.add, ids, texts, metadatas, vectors)
        if self.backend.async_api is None:
            return await super().aadd(ids, texts, metadatas, vectors)
        vectors = await embed_if_needed(self.embedding, ids, texts, metadatas, vectors)
        batch = prepare_dense_batch(self.embedding, self._dimension, ids, texts, metadatas, vectors)
        return await self._arun(self._add_steps(batch))

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids`` (``{id: vector}``; unknown ids absent), for the diversity stage
        (:class:`~rrf_retriever.stores.base.VectorSource`): read back, never embedded again."""
        return {r.id: list(r.vector) for r in self.get(ids, with_vectors=True) if r.vector is not None}

    def search(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The ``limit`` nearest documents (cosine similarity) among those the scope allows.

        Raises:
            DimensionMismatchError: the vector's dimension differs from the collection's, or it holds NaN.
            FilterError: a malformed filter or ``exclude_ids``.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self.search_request(SearchRequest.checked("dense", "", vector, limit, filter, exclude_ids))

    async def asearch(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        return await self._arun_or_thread(
            lambda: self._nearest_steps(SearchRequest.checked("dense", "", vector, limit, filter, exclude_ids)),
            self.search, vector, limit, filter, exclude_ids)

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """:meth:`search` of a validated request (the engine's legs call it; nothing is checked again)."""
        return self._run(self._nearest_steps(request))

    async def asearch_request(self, request: SearchRequest) -> list[Hit]:
        """Async :meth:`search_request`."""
        return await self._arun_or_thread(lambda: self._nearest_steps(request), self.search_request, request)

    # -- the kind's hooks and steps ----------------------------------------------------------------------
    def _windows_for_writes(self) -> WindowSettings | None:
        """The windows an add writes: the collection's, else (not created yet) those asked for."""
        if self._known() or (self._run(self._ready_steps())):
            return self.backend.windows
        asked = self._asked_windows
        return asked if asked is not None and asked.max_windows > 1 else None

    def _known(self) -> bool:
        return self._dimension is not None

    def _take(self, saved: Saved) -> None:
        asked = self._asked_windows
        if asked is not None and (asked.max_windows > 1 or saved.windows is not None) and asked != saved.windows:
            have = "one vector a document" if saved.windows is None else saved.windows
            msg = f"{self.backend.where} holds {have}, not the windows asked ({asked}); open it without max_windows"
            raise InvalidArgumentError(msg)
        self.backend.windows = saved.windows
        self._dimension = saved.dimension

    def _created(self, dimension: int | None, params: dict[str, Any] | None) -> None:
        self._dimension = dimension

    def _add_steps(self, batch: DenseBatch) -> Steps[None]:
        ids, payloads, vectors, dim = batch
        if not ids:
            return
        if not (yield from self._ready_steps()):
            asked = self._asked_windows
            self.backend.windows = asked if asked is not None and asked.max_windows > 1 else None
            yield from self._create_steps(dim, None)
        self._check_dimension(dim)
        if self.index_keys and self.backend.indexes_payload:  # before the points: see PayloadIndexes.write_steps
            yield from self.indexes.write_steps(self.backend, payloads)
        pids = [point_id(i) for i in ids]

        if (self.backend.windows is not None) != bool(len(vectors) and isinstance(vectors[0][0], list)):
            msg = "another writer changed the collection's layout (windows or not) during this add; add again"
            raise InvalidArgumentError(msg)

        def chunk_points(chunk: slice) -> list[Point]:
            rows = rows_as_lists(vectors, chunk)  # type: ignore[arg-type]  # windows: already lists of lists
            return [Point(p, v, None, pl) for p, v, pl in zip(pids[chunk], rows, payloads[chunk])]

        yield from self._upsert_steps(pids, chunk_points)
        yield from self._replace_fallback_steps(ids)
