"""Vectors at the door: lists, tuples or numpy arrays of finite floats, of one dimension, within float32's range.

Example:
    >>> to_float_vector((1, 2.5), "the query vector")
    [1.0, 2.5]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rrf_retriever.errors import DimensionMismatchError, InvalidTypeError

__all__ = ["MAX_SQUARED_NORM", "to_float_vector", "to_float_vectors", "validate_vectors"]

#: The largest squared norm of a vector: float32's range (Qdrant normalises and scores in float32). Embeddings
#: have norms near 1; 1e20-sized components made scores NaN or the point silently unsearchable.
MAX_SQUARED_NORM = 3.0e38


def to_float_vector(value: object, name: str, *, type_error: type[Exception] = InvalidTypeError) -> list[float]:
    """One vector (list, tuple, numpy array, tensor) as a list of finite floats.

    Args:
        value: The vector.
        name: What it is, for messages ("the query vector", "vectors[3]").
        type_error: The error for a value that is not a sequence of numbers (``EmbeddingError`` when a model
            returned it, ``InvalidTypeError`` when a caller passed it).

    Raises:
        DimensionMismatchError: an empty vector, NaN or infinity.

    Example:
        >>> to_float_vector((1, 2.5), "v")
        [1.0, 2.5]
    """
    if hasattr(value, "tolist"):  # numpy arrays, torch tensors: one C-level conversion
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a sequence of floats, not {type(value).__name__}"
        raise type_error(msg)
    try:
        out = [float(x) for x in value]
    except (TypeError, ValueError) as exc:
        msg = f"{name} must hold numbers only"
        raise type_error(msg) from exc
    if not out:
        msg = f"{name} is empty"
        raise DimensionMismatchError(msg)
    if not all(math.isfinite(x) for x in out):
        msg = f"{name} holds NaN or infinity"
        raise DimensionMismatchError(msg)
    squared = math.fsum(x * x for x in out)
    if not squared <= MAX_SQUARED_NORM:
        msg = (f"{name} is too large (norm {math.sqrt(squared) if math.isfinite(squared) else float('inf'):.3g}): "
               "Qdrant computes in float32, where its square overflows (NaN scores, or the point silently ignored)")
        raise DimensionMismatchError(msg)
    return out


def to_float_vectors(
    value: object,
    count: int,
    name: str,
    *,
    type_error: type[Exception] = InvalidTypeError,
    count_error: type[Exception] = DimensionMismatchError,
) -> list[list[float]]:
    """``count`` vectors (a list of vectors or a 2-D array) as lists of finite floats; see :func:`to_float_vector`.

    Example:
        >>> to_float_vectors([[1, 2], (3, 4)], 2, "vectors")
        [[1.0, 2.0], [3.0, 4.0]]
    """
    if hasattr(value, "tolist") and not isinstance(value, Sequence):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a list of vectors, not {type(value).__name__}"
        raise type_error(msg)
    if len(value) != count:
        msg = f"{name}: {len(value)} vectors for {count} texts"
        raise count_error(msg)
    return [to_float_vector(v, f"{name}[{i}]", type_error=type_error) for i, v in enumerate(value)]


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
