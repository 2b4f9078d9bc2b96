"""What one point of ours holds, whatever the store kind or backend: payload keys, vector names, point ids, and
the hit or record a stored point reads back as.

Layout (langchain-qdrant's ``QdrantVectorStore`` defaults, so either can read what the other wrote):

* payload ``{"page_content": text, "metadata": {...}, "doc_id": id}``;
* vectors: a dense store's one unnamed vector; a keyword store's sparse vector ``"bm25"``; a joint collection's
  ``"dense"`` and ``"bm25"`` on the same point;
* point id: :func:`point_id`, one point per distinct id string. A point reports the id in its ``doc_id`` payload,
  else (written by langchain-qdrant) ``str(point.id)``; a point is a document's only if it reports that id, which
  get, delete and ``exclude_ids`` check wherever a point could be another document's.

Example:
    >>> hit_of("3f2b...", {"page_content": "hi", "metadata": {"n": 1}, "doc_id": "a"}, 0.5)
    Hit(id='a', text='hi', metadata={'n': 1}, score=0.5)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from rrf_retriever.types import Hit, Record

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CONTENT_KEY",
    "DENSE_VECTOR_NAME",
    "DOC_ID_KEY",
    "ID_NAMESPACE",
    "MAX_AUTO_INDEXES",
    "METADATA_KEY",
    "SCROLL_PAGE",
    "SPARSE_VECTOR_NAME",
    "UPSERT_BATCH",
    "ExcludeIds",
    "Metadatas",
    "Point",
    "SparseValues",
    "Vectors",
    "doc_id_of",
    "fallback_point_id",
    "hit_of",
    "make_payload",
    "point_id",
    "record_of",
]

#: Namespace of the UUIDv5 point ids (fixed forever: changing it would orphan every stored point).
ID_NAMESPACE = uuid.UUID("6f1c3c5e-2a4b-5d8e-9f10-7a2b3c4d5e6f")
CONTENT_KEY = "page_content"  # langchain-qdrant's defaults
METADATA_KEY = "metadata"
#: Payload key holding our document id.
DOC_ID_KEY = "doc_id"
#: The named dense vector of a joint collection (a dense store's vector is the unnamed default one).
DENSE_VECTOR_NAME = "dense"
#: The named sparse vector holding BM25 (keyword stores and joint collections).
SPARSE_VECTOR_NAME = "bm25"
#: Points per upsert request, unless a store is given ``batch_size``.
UPSERT_BATCH = 256
#: Points per scroll page (``ids_matching``, ``reweight``).
SCROLL_PAGE = 512
#: Payload indexes a store builds by itself, on the first filtered query on a key (each a persistent index that
#: stalls the queries meanwhile); more keys are filtered without an index (correct, slower) unless declared.
MAX_AUTO_INDEXES = 8

Metadatas = Sequence[Mapping[str, Any]] | None
#: One vector per document (lists, or a 2-D float array kept as it is until each upsert request), or None.
Vectors: TypeAlias = "Sequence[Sequence[float]] | np.ndarray | None"
ExcludeIds = Iterable[str] | None
#: A sparse vector: term indices (sorted) and their values.
SparseValues = tuple[list[int], list[float]]


class Point(NamedTuple):
    """One point to write, in no engine's types (each backend builds its own models from it).

    ``dense`` is the dense vector (a list of window vectors in a collection of windows; None: the point has none,
    or a rewrite keeps the stored one), ``sparse`` the BM25 values, ``payload`` None only for a vector update.
    """

    pid: str
    dense: list[float] | list[list[float]] | None
    sparse: SparseValues | None
    payload: dict[str, Any] | None


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
    wrote (LangChain's indexing API makes such ids) is still found: see :func:`fallback_point_id`.

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


def fallback_point_id(doc_id: str) -> str | None:
    """The second point a version-5 canonical UUID id may be at: that UUID (a point langchain-qdrant wrote).

    It is the document's only if it reports the id (no ``doc_id`` payload, or that id): the same point may be
    another document's hashed point id.

    Example:
        >>> fallback_point_id("doc-1") is None
        True
    """
    parsed = _canonical_uuid(doc_id)
    return doc_id if parsed is not None and parsed.version == 5 else None


def make_payload(doc_id: str, text: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A document's payload."""
    return {CONTENT_KEY: text, METADATA_KEY: metadata, DOC_ID_KEY: doc_id}


def doc_id_of(pid: Any, payload: Mapping[str, Any] | None) -> str:
    """The id a point reports: its ``doc_id`` payload, else (langchain-qdrant's points) ``str(point.id)``."""
    stored = (payload or {}).get(DOC_ID_KEY)
    return stored if isinstance(stored, str) else str(pid)


def hit_of(pid: Any, payload: Mapping[str, Any] | None, score: float) -> Hit:
    """A stored point as a search hit."""
    payload = payload or {}
    meta = payload.get(METADATA_KEY)
    text = payload.get(CONTENT_KEY)
    return Hit(
        id=doc_id_of(pid, payload),
        text=text if isinstance(text, str) else "",
        metadata=dict(meta) if isinstance(meta, Mapping) else {},
        score=float(score),
    )


def record_of(pid: Any, payload: Mapping[str, Any] | None, vector: Any, dense_name: str | None) -> Record:
    """A stored point as a record; ``vector`` as the engine returned it, ``dense_name`` the dense vector's name
    ("" the unnamed one; None: the store has no dense vector, the record has none)."""
    hit = hit_of(pid, payload, 0.0)
    if isinstance(vector, Mapping):  # named vectors came back: take the dense one
        vector = vector.get(dense_name) if dense_name is not None else None
    if isinstance(vector, Sequence) and vector and isinstance(vector[0], Sequence):
        vector = vector[0]  # a document's windows: its first, the vector of the document as the model reads it
    vec = [float(x) for x in vector] if vector is not None and dense_name is not None else None
    return Record(id=hit.id, text=hit.text, metadata=hit.metadata, vector=vec)
