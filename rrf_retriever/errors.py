"""Errors raised by rrf-retriever.

Every error we raise on purpose derives from :class:`RRFRetrieverError`, so one ``except`` catches them all.
Input errors also derive from the builtin a caller would expect (``ValueError``, ``TypeError``,
``ImportError``), so code written against plain Python keeps working.

Example:
    >>> from rrf_retriever.errors import RRFRetrieverError, InvalidArgumentError
    >>> issubclass(InvalidArgumentError, ValueError) and issubclass(InvalidArgumentError, RRFRetrieverError)
    True
"""

from __future__ import annotations

__all__ = [
    "AllLegsFailedError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EngineClosedError",
    "FilterError",
    "IndexDirectoryError",
    "InvalidArgumentError",
    "InvalidFilterError",
    "InvalidTypeError",
    "InvalidVectorError",
    "MissingDependencyError",
    "RRFRetrieverError",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
]


class RRFRetrieverError(Exception):
    """Base class of every error rrf-retriever raises on purpose."""


class InvalidArgumentError(RRFRetrieverError, ValueError):
    """An argument has the right type but a bad value (NaN weight, negative ``top_k``, ...)."""


class InvalidTypeError(RRFRetrieverError, TypeError):
    """An argument has the wrong type (a query that is not a string, ...)."""


class InvalidFilterError(InvalidArgumentError):
    """A metadata filter or an ``exclude_ids`` list is malformed (an unknown ``$`` operator, a range bound that is
    not a number, ...): the search is refused, never run unscoped."""


#: The former name of :class:`InvalidFilterError`: the same class, so ``except FilterError`` keeps working.
FilterError = InvalidFilterError


class MissingDependencyError(RRFRetrieverError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class StoreError(RRFRetrieverError):
    """A store failed to read or write. The store's previous content is left intact."""


class StoreLockedError(StoreError):
    """The store's file or directory is held by another process or client."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached or opened (a server down, a missing path, ...)."""


class EngineClosedError(StoreUnavailableError):
    """The engine (or retriever) was closed, or is used in a process forked after it was opened."""


class IndexDirectoryError(StoreUnavailableError):
    """An index directory is missing, incomplete, corrupt or does not match what was asked (another store kind,
    another embedder); the message says which and what to do."""


class EmbeddingError(RRFRetrieverError):
    """The embedding model failed or returned something unusable."""


class DimensionMismatchError(EmbeddingError, ValueError):
    """A vector's dimension differs from the collection's, or a vector holds NaN or infinity."""


class InvalidVectorError(DimensionMismatchError, InvalidArgumentError):
    """A vector given with documents is unusable (another dimension than the index's or its siblings', NaN,
    infinity, beyond float32's range): the write is refused at the door, before anything is written, and the
    message names its position. Both a :class:`DimensionMismatchError` and an :class:`InvalidArgumentError`."""


class AllLegsFailedError(RRFRetrieverError):
    """Every leg of a hybrid query failed, so there is nothing to degrade to."""


def missing_dependency(package: str, extra: str, feature: str) -> MissingDependencyError:
    """Build the error for a missing optional package, naming the extra that brings it.

    Example:
        >>> str(missing_dependency("bm25s", "bm25", "BM25KeywordStore"))[:40]
        'BM25KeywordStore needs the package bm25s'
    """
    msg = f"{feature} needs the package {package}: pip install 'rrf-retriever[{extra}]'"
    return MissingDependencyError(msg)
