"""What both Qdrant dense stores share: payload layout, point ids, the filter translation, and every operation.

Layout (langchain-qdrant's ``QdrantVectorStore`` defaults, so either can read what the other wrote):

* one unnamed dense vector, cosine distance, created on the first ``add`` with the vectors' dimension;
* payload ``{"page_content": text, "metadata": {...}, "doc_id": id}``;
* point id: :func:`point_id`, one point per distinct id string. A point reports the id in its ``doc_id`` payload,
  else (written by langchain-qdrant) ``str(point.id)``; a point is a document's only if it reports that id, which
  get, delete and ``exclude_ids`` check wherever a point could be another document's.

Filters: the scope's tree compiled exactly (as :func:`rrf_retriever.scope.tree.matches`) for both engines by
:mod:`rrf_retriever.stores.qdrant.filters`; payload indexes and ``ids_matching`` are
:class:`~rrf_retriever.stores.qdrant.scoping.QdrantScoping`'s.

Every operation (add, get, delete, count, search) is written once, here, as steps
(:mod:`rrf_retriever.stores.qdrant.steps`) over engine primitives: the same body serves the sync method and its
async twin on an async client. An engine (``client.py``, ``edge.py``) supplies only its primitives.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rrf_retriever.embeddings import BaseEmbeddingAdapter, as_embedding
from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, StoreError
from rrf_retriever.progress import progress_bar
from rrf_retriever.scope.parse import normalize_scope
from rrf_retriever.scope.tree import FilterSpec
from rrf_retriever.stores.base import StoreBase
from rrf_retriever.stores.qdrant.filters import NOTHING
from rrf_retriever.stores.qdrant.scoping import QdrantScoping, check_index_keys, check_payload_ints
from rrf_retriever.stores.qdrant.steps import StepRunner, Steps
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import (
    check_ids,
    check_int,
    check_limit,
    to_float_vector,
    validate_batch,
    validate_vectors,
)

__all__ = [
    "CONTENT_KEY",
    "DOC_ID_KEY",
    "ID_NAMESPACE",
    "MAX_AUTO_INDEXES",
    "METADATA_KEY",
    "QdrantStoreBase",
    "point_id",
]

#: Namespace of the UUIDv5 point ids (fixed forever: changing it would orphan every stored point).
ID_NAMESPACE = uuid.UUID("6f1c3c5e-2a4b-5d8e-9f10-7a2b3c4d5e6f")
CONTENT_KEY = "page_content"  # langchain-qdrant's defaults
METADATA_KEY = "metadata"
#: Payload key holding our document id.
DOC_ID_KEY = "doc_id"
UPSERT_BATCH = 256
Metadatas = Sequence[Mapping[str, Any]] | None
Vectors = Sequence[Sequence[float]] | None
ExcludeIds = Iterable[str] | None

#: Payload indexes a store builds by itself, on the first filtered query on a key (each a persistent index that
#: stalls the queries meanwhile); more keys are filtered without an index (correct, slower) unless declared.
MAX_AUTO_INDEXES = 8


def _canonical_uuid(text: str) -> uuid.UUID | None:
    """The UUID ``text`` spells in canonical form (36 characters, lowercase, hyphenated), else None."""
    if len(text) != 36:
        return None
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return None
    return parsed if str(parsed) == text else None


def point_id(doc_id: str) -> str:
    """The Qdrant point id of a document id; distinct id strings get distinct points.

    A canonical UUID string (what Qdrant and langchain-qdrant report as a point id) is its own point id, so a
    collection langchain-qdrant wrote is read, scoped and edited by the ids its hits carry. Every other string,
    other spellings of a UUID included (32-digit hex, upper case, braces), is hashed: ``uuid5(ID_NAMESPACE, id)``.
    So is a canonical UUID of version 5. Why: hashed point ids are all version 5 and the namespace is public, so
    an id used verbatim could otherwise be chosen to equal another id's hashed point; excluding version 5 from
    the verbatim ids keeps the two sets apart by construction (what is left is a SHA-1 collision between two
    hashed ids, and get still checks the ``doc_id`` a point carries). A version-5 point that langchain-qdrant
    wrote (LangChain's indexing API makes such ids) is still found: see :func:`_fallback_point_id`.

    Example:
        >>> point_id("550e8400-e29b-41d4-a716-446655440000")
        '550e8400-e29b-41d4-a716-446655440000'
        >>> point_id("550e8400e29b41d4a716446655440000")  # another string: another point
        '41a737b8-beda-599c-8a5e-0593de0a2d1a'
        >>> point_id("doc-1") == str(uuid.uuid5(ID_NAMESPACE, "doc-1")) != point_id("doc-2")
        True
        >>> crafted = point_id("doc-1")  # "doc-1"'s point id, used as an id: hashed in turn
        >>> point_id(crafted) != crafted
        True
    """
    parsed = _canonical_uuid(doc_id)
    if parsed is not None and parsed.version != 5:
        return doc_id
    return str(uuid.uuid5(ID_NAMESPACE, doc_id))


def _fallback_point_id(doc_id: str) -> str | None:
    """The second point a version-5 canonical UUID id may be at: that UUID (a point langchain-qdrant wrote).

    It is the document's only if it reports the id (no ``doc_id`` payload, or that id): the same point may be
    another document's hashed point id.
    """
    parsed = _canonical_uuid(doc_id)
    return doc_id if parsed is not None and parsed.version == 5 else None


def check_batch_size(batch_size: object) -> int:
    """A positive ``batch_size`` (points per upsert request)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        msg = f"batch_size must be a positive integer, got {batch_size!r}"
        raise InvalidArgumentError(msg)
    return batch_size


class QdrantStoreBase(QdrantScoping, StepRunner, StoreBase):
    """Every check, conversion and operation of the Qdrant dense stores; an engine supplies the primitives
    (``_exists``, ``_vector_size``, ``_create``, ``_upsert``, ``_delete``, ``_retrieve``, ``_count``, ``_nearest``,
    ``_scroll``, ``_create_index``, each taking the engine ``api`` first) and the filter model hooks
    (``_condition``, ``_filter``, ``_has_ids``, ``_bool``; see
    :class:`~rrf_retriever.stores.qdrant.scoping.QdrantScoping`)."""

    embedding: BaseEmbeddingAdapter
    #: False where the engine ignores payload indexes (qdrant-client local mode).
    indexes_payload = True

    def __init__(
        self,
        embedding: Any,
        batch_size: int,
        *,
        index_keys: Sequence[str] = (),
        max_auto_indexes: int = MAX_AUTO_INDEXES,
    ) -> None:
        self.embedding = as_embedding(embedding)
        self.batch_size = check_batch_size(batch_size)
        #: Metadata keys indexed on the WRITE path (by the values a batch brings), never waiting for a query.
        self.index_keys = check_index_keys(index_keys)
        self.max_auto_indexes = check_int(max_auto_indexes, "max_auto_indexes", 0, 1000)
        self._dimension: int | None = None
        self._lock = threading.RLock()
        self._indexed: dict[str, str] = {}  # metadata key -> payload index kind, asked for once

    @property
    def dimension(self) -> int | None:
        """The collection's vector dimension, None while the store has never been written."""
        return self._dimension

    # -- public operations ---------------------------------------------------------------------------
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
        self._check_usable()
        self._run(self._add_steps(*self._prepare_add(ids, texts, metadatas, vectors)))

    async def aadd(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas = None, vectors: Vectors = None
    ) -> None:
        """Async :meth:`add` (native with an async client, texts embedded by ``aembed_documents``)."""
        if self._api(asynchronous=True) is None:
            return await super().aadd(ids, texts, metadatas, vectors)
        if vectors is None:
            _, text_list, _ = validate_batch(ids, texts, metadatas)
            vectors = await self.embedding.aembed_documents(text_list) if text_list else []
        return await self._arun(self._add_steps(*self._prepare_add(ids, texts, metadatas, vectors)))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        self._run(self._delete_steps(ids))

    async def adelete(self, ids: Sequence[str]) -> None:
        """Async :meth:`delete`."""
        await self._arun_or_thread(self._delete_steps(ids), super().adelete, ids)

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """The stored documents among ``ids``, in the order asked; unknown ids are skipped."""
        return self._run(self._get_steps(ids, with_vectors))

    def get_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of ``ids`` (``{id: vector}``; unknown ids absent), for the diversity stage
        (:class:`~rrf_retriever.stores.base.VectorSource`): read back, never embedded again."""
        return {r.id: list(r.vector) for r in self.get(ids, with_vectors=True) if r.vector is not None}

    async def aget(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]:
        """Async :meth:`get`."""
        return await self._arun_or_thread(
            self._get_steps(ids, with_vectors), super().aget, ids, with_vectors=with_vectors
        )

    def count(self) -> int:
        """Number of documents."""
        return self._run(self._count_steps())

    async def acount(self) -> int:
        """Async :meth:`count`."""
        return await self._arun_or_thread(self._count_steps(), super().acount)

    def search(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """The ``limit`` nearest documents (cosine similarity) among those the scope allows.

        Raises:
            DimensionMismatchError: the vector's dimension differs from the collection's, or it holds NaN.
            FilterError: a malformed filter or ``exclude_ids``.
            StoreError: Qdrant failed, or the store is closed.
        """
        return self._run(self._search_steps(vector, limit, filter, exclude_ids))

    async def asearch(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None = None, exclude_ids: ExcludeIds = None
    ) -> list[Hit]:
        """Async :meth:`search`."""
        steps = self._search_steps(vector, limit, filter, exclude_ids)
        return await self._arun_or_thread(steps, super().asearch, vector, limit, filter, exclude_ids)

    # -- the operations, as steps ----------------------------------------------------------------------
    def _prepare_add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Metadatas, vectors: Vectors
    ) -> tuple[list[str], list[dict[str, Any]], list[list[float]], int]:
        """Validate a batch and its vectors (embedding the texts if needed) before anything is written."""
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        check_payload_ints(meta_list)
        if vectors is None:
            vectors = self.embedding.embed_documents(text_list) if text_list else []
        vector_list: list[list[float]] = []
        dim = self._dimension or 0
        if id_list:
            vector_list, dim = validate_vectors(vectors, len(id_list), self._dimension)
        payloads = [
            {CONTENT_KEY: text, METADATA_KEY: meta, DOC_ID_KEY: doc_id}
            for doc_id, text, meta in zip(id_list, text_list, meta_list)
        ]
        return id_list, payloads, vector_list, dim

    def _ready_steps(self) -> Steps[bool]:
        """Whether the collection exists (its dimension read from the engine the first time)."""
        if self._dimension is None and (yield ("exists", ())):
            self._dimension = yield ("vector_size", ())
        return self._dimension is not None

    def _add_steps(
        self, ids: list[str], payloads: list[dict[str, Any]], vectors: list[list[float]], dim: int
    ) -> Steps[None]:
        if not ids:
            return
        if not (yield from self._ready_steps()):
            try:
                yield ("create", (dim,))
                self._dimension = dim
            except StoreError:
                if not (yield from self._ready_steps()):  # else another writer created it meanwhile
                    raise
        if dim != self._dimension:
            msg = f"vectors have dimension {dim}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)
        if self.index_keys and self.indexes_payload:  # before the points: see QdrantScoping._declared_index_steps
            yield from self._declared_index_steps(payloads)
        pids = [point_id(i) for i in ids]
        with progress_bar(len(pids), f"upserting into {self.engine_name}", unit="doc") as bar:
            for start in range(0, len(pids), self.batch_size):
                chunk = slice(start, start + self.batch_size)
                yield ("upsert", (list(zip(pids[chunk], vectors[chunk], payloads[chunk])),))
                bar.update(len(pids[chunk]))
        superseded = yield from self._fallback_points_steps(ids)  # now at their own point ids
        if superseded:
            yield ("delete", (superseded,))

    def _delete_steps(self, ids: Sequence[str]) -> Steps[None]:
        id_list = check_ids(ids)
        if id_list and (yield from self._ready_steps()):
            fallback = yield from self._fallback_points_steps(id_list)
            yield ("delete", ([point_id(i) for i in id_list] + fallback,))

    def _get_steps(self, ids: Sequence[str], with_vectors: bool) -> Steps[list[Record]]:
        id_list = check_ids(ids)
        if not id_list or not (yield from self._ready_steps()):
            return []
        candidates = {i: [p for p in (point_id(i), _fallback_point_id(i)) if p] for i in id_list}
        unique = list(dict.fromkeys(p for pids in candidates.values() for p in pids))
        by_pid = {str(p.id): p for p in (yield ("retrieve", (unique, bool(with_vectors))))}
        out = []
        for doc_id in id_list:
            points = [by_pid[p] for p in candidates[doc_id] if p in by_pid]
            owned = [p for p in points if self._doc_id(p.id, p.payload) == doc_id]  # never another's point
            if owned:
                out.append(self._record(owned[0].id, owned[0].payload, owned[0].vector if with_vectors else None))
        return out

    def _fallback_points_steps(self, ids: Iterable[str]) -> Steps[list[str]]:
        """The fallback points (:func:`_fallback_point_id`) of ``ids`` that these documents own."""
        fallback = [p for p in map(_fallback_point_id, ids) if p]
        if not fallback:
            return []
        points = yield ("retrieve", (fallback, False))
        return [str(p.id) for p in points if self._doc_id(p.id, p.payload) == str(p.id)]

    def _count_steps(self) -> Steps[int]:
        if not (yield from self._ready_steps()):
            return 0
        return int((yield ("count", ())))

    def _search_steps(
        self, vector: Sequence[float], limit: int, filter: FilterSpec | None, exclude_ids: ExcludeIds
    ) -> Steps[list[Hit]]:
        limit = check_limit(limit)
        flt, excluded = normalize_scope(filter, exclude_ids)
        ready = yield from self._ready_steps()
        query = to_float_vector(vector, "the query vector")
        if self._dimension is not None and len(query) != self._dimension:
            msg = f"the query vector has dimension {len(query)}, the collection {self._dimension}"
            raise DimensionMismatchError(msg)
        if limit == 0 or not ready:
            return []
        query_filter = yield from self._scope_steps(flt, excluded)
        if query_filter is NOTHING:
            return []  # e.g. an empty any-of: nothing can match
        points = yield ("nearest", (query, limit, query_filter))
        return [self._hit(p.id, p.payload, p.score) for p in points]

    def _excluded_pids_steps(self, excluded: frozenset[str]) -> Steps[frozenset[str]]:
        """The point ids of excluded documents (their fallback points included)."""
        if not excluded:
            return frozenset()
        fallback = yield from self._fallback_points_steps(sorted(excluded))
        return frozenset(point_id(i) for i in excluded) | frozenset(fallback)

    # -- conversions ---------------------------------------------------------------------------------
    @staticmethod
    def _doc_id(pid: Any, payload: Mapping[str, Any] | None) -> str:
        """The id a point reports: its ``doc_id`` payload, else (langchain-qdrant's points) ``str(point.id)``."""
        stored = (payload or {}).get(DOC_ID_KEY)
        return stored if isinstance(stored, str) else str(pid)

    @classmethod
    def _hit(cls, pid: Any, payload: Mapping[str, Any] | None, score: float) -> Hit:
        payload = payload or {}
        meta = payload.get(METADATA_KEY)
        text = payload.get(CONTENT_KEY)
        return Hit(
            id=cls._doc_id(pid, payload),
            text=text if isinstance(text, str) else "",
            metadata=dict(meta) if isinstance(meta, Mapping) else {},
            score=float(score),
        )

    @classmethod
    def _record(cls, pid: Any, payload: Mapping[str, Any] | None, vector: Any) -> Record:
        hit = cls._hit(pid, payload, 0.0)
        if isinstance(vector, Mapping):  # named vectors: take the default (unnamed) one
            vector = vector.get("", None)
        vec = [float(x) for x in vector] if vector is not None else None
        return Record(id=hit.id, text=hit.text, metadata=hit.metadata, vector=vec)

    # -- what an engine supplies -----------------------------------------------------------------------
    def _check_usable(self) -> None:
        """Raise if the store cannot serve a call (the edge store once closed)."""
