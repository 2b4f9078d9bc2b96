"""Store protocols and the checks every store shares.

Stores know nothing of fusion: a keyword store ranks by BM25, a dense store by cosine similarity, each
returning its own top ``limit`` :class:`~rrf_retriever.types.Hit` s among the documents the scope allows.

Scope (DESIGN section 5) is applied inside every store BEFORE its top-k is taken:

* ``filter``: ``{"session_id": [1, 2], "lang": "en"}``; each key must match, a list means any-of.
* ``exclude_ids``: ids that must not be returned.

Async twins default to running the sync method in a worker thread (``asyncio.to_thread``); a store with a
native async client overrides them.

Example:
    >>> from rrf_retriever.stores.base import validate_batch
    >>> validate_batch(["a"], ["text"], None)
    (['a'], ['text'], [{}])
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from rrf_retriever.errors import DimensionMismatchError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.types import (
    FilterSpec,
    Hit,
    NormalizedFilter,
    Record,
    check_id,
    check_int,
    normalize_exclude_ids,
    normalize_filter,
    to_float_vectors,
)

__all__ = [
    "AsyncStoreMixin",
    "DenseStore",
    "KeywordStore",
    "check_limit",
    "normalize_scope",
    "validate_batch",
]

#: The largest ``limit`` a store accepts; beyond it a caller has made a mistake (``top_k=10**9``).
MAX_LIMIT = 100_000


@runtime_checkable
class KeywordStore(Protocol):
    """A keyword (BM25) store. ``search`` takes the user's raw query text and analyzes it itself."""

    def add(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def get(self, ids: Sequence[str]) -> list[Record]: ...

    def count(self) -> int: ...

    def search(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...

    async def aadd(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None = None
    ) -> None: ...

    async def adelete(self, ids: Sequence[str]) -> None: ...

    async def asearch(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...


@runtime_checkable
class DenseStore(Protocol):
    """A vector store. It owns its embedding (``self.embedding``) so the engine can embed a query once."""

    embedding: Any

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def get(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Record]: ...

    def count(self) -> int: ...

    def search(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...

    async def aadd(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        vectors: Sequence[Sequence[float]] | None = None,
    ) -> None: ...

    async def adelete(self, ids: Sequence[str]) -> None: ...

    async def asearch(
        self,
        vector: Sequence[float],
        limit: int,
        filter: FilterSpec | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]: ...


async def _in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.to_thread``, with asyncio imported on first use (sync callers never pay its ~30 ms import)."""
    import asyncio

    return await asyncio.to_thread(fn, *args, **kwargs)


class AsyncStoreMixin:
    """Async twins that run the sync methods in a worker thread. Override where a native client exists."""

    async def aadd(self, *args: Any, **kwargs: Any) -> None:
        await _in_thread(self.add, *args, **kwargs)  # type: ignore[attr-defined]

    async def adelete(self, ids: Sequence[str]) -> None:
        await _in_thread(self.delete, ids)  # type: ignore[attr-defined]

    async def aget(self, ids: Sequence[str], **kwargs: Any) -> list[Record]:
        return await _in_thread(self.get, ids, **kwargs)  # type: ignore[attr-defined]

    async def acount(self) -> int:
        return await _in_thread(self.count)  # type: ignore[attr-defined]

    async def asearch(self, *args: Any, **kwargs: Any) -> list[Hit]:
        return await _in_thread(self.search, *args, **kwargs)  # type: ignore[attr-defined]


def check_limit(limit: object) -> int:
    """Validate a store ``limit``: an int from 0 to :data:`MAX_LIMIT` (0 gives an empty result).

    Example:
        >>> check_limit(10)
        10
    """
    return check_int(limit, "limit", 0, MAX_LIMIT)


def normalize_scope(
    filter: FilterSpec | NormalizedFilter | None,
    exclude_ids: Iterable[str] | None,
) -> tuple[NormalizedFilter | None, frozenset[str]]:
    """Validate and normalise a store call's scope (idempotent: normalised input passes through).

    Example:
        >>> normalize_scope({"s": 1}, ["x"])
        ({'s': (1,)}, frozenset({'x'}))
    """
    return normalize_filter(filter), normalize_exclude_ids(exclude_ids)


def _check_metadata(i: int, metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        msg = f"metadatas[{i}] must be a mapping, not {type(metadata).__name__}"
        raise InvalidTypeError(msg)
    out = dict(metadata)
    for key in out:
        if not isinstance(key, str):
            msg = f"metadatas[{i}]: metadata keys must be strings, got {key!r}"
            raise InvalidTypeError(msg)
    try:
        # Stores write the JSON as UTF-8 (SQLite, Qdrant payloads): a lone surrogate must fail here, not there.
        json.dumps(out, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        msg = f"metadatas[{i}] is not valid Unicode (lone surrogate?)"
        raise InvalidArgumentError(msg) from exc
    except (TypeError, ValueError) as exc:
        msg = f"metadatas[{i}] must be JSON-serialisable (no NaN, no objects): {exc}"
        raise InvalidArgumentError(msg) from exc
    return out


def validate_batch(
    ids: Sequence[str],
    texts: Sequence[str],
    metadatas: Sequence[Mapping[str, Any] | None] | None,
) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Check an ``add`` batch before anything is written, so a bad batch changes nothing.

    Ids must be unique non-empty strings, texts strings (valid Unicode), metadata JSON-serialisable
    mappings with string keys; the three sequences have the same length.

    Example:
        >>> validate_batch(["a", "b"], ["x", "y"], [{"n": 1}, None])
        (['a', 'b'], ['x', 'y'], [{'n': 1}, {}])
    """
    for name, seq in (("ids", ids), ("texts", texts)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
            msg = f"{name} must be a list, not {type(seq).__name__}"
            raise InvalidTypeError(msg)
    id_list = [check_id(doc_id, field_name="ids") for doc_id in ids]
    if len(set(id_list)) != len(id_list):
        msg = "ids must be unique within one batch"
        raise InvalidArgumentError(msg)
    if len(texts) != len(id_list):
        msg = f"got {len(id_list)} ids but {len(texts)} texts"
        raise InvalidArgumentError(msg)
    text_list: list[str] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            msg = f"texts[{i}] must be a str, not {type(text).__name__}"
            raise InvalidTypeError(msg)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            msg = f"texts[{i}] is not valid Unicode (lone surrogate?)"
            raise InvalidArgumentError(msg) from exc
        text_list.append(text)
    if metadatas is None:
        meta_list = [{} for _ in id_list]
    else:
        if isinstance(metadatas, (str, bytes, Mapping)) or not isinstance(metadatas, Sequence):
            msg = f"metadatas must be a list of mappings, not {type(metadatas).__name__}"
            raise InvalidTypeError(msg)
        if len(metadatas) != len(id_list):
            msg = f"got {len(id_list)} ids but {len(metadatas)} metadatas"
            raise InvalidArgumentError(msg)
        meta_list = [_check_metadata(i, m) for i, m in enumerate(metadatas)]
    return id_list, text_list, meta_list


def validate_vectors(vectors: object, count: int, dim: int | None = None) -> tuple[list[list[float]], int]:
    """Bring ``count`` vectors (lists, tuples, a numpy array) to lists of finite floats of one dimension.

    Args:
        vectors: The vectors, one per document.
        count: How many documents they belong to.
        dim: The collection's dimension, if it has one.

    Returns:
        The vectors as lists of floats, and their dimension.

    Raises:
        InvalidTypeError: not a sequence of sequences of numbers.
        DimensionMismatchError: wrong count, mixed or wrong dimension, empty vectors, NaN or infinity.

    Example:
        >>> validate_vectors([[0.1, 0.2]], 1)
        ([[0.1, 0.2]], 2)
    """
    out = to_float_vectors(vectors, count, "vectors")
    for i, vec in enumerate(out):
        if dim is None:
            dim = len(vec)
        if len(vec) != dim:
            msg = f"vectors[{i}] has dimension {len(vec)}, expected {dim}"
            raise DimensionMismatchError(msg)
    return out, dim or 0
