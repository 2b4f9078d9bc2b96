"""Vectors at the door: lists, tuples or numpy arrays of finite floats, of one dimension, within float32's range.

A batch given as a 2-D float32 or float64 numpy array (MiniLM's ``embed_array``) is checked as a whole and kept
as it is: 384 float32 values are 1.5 KB, the same vector as Python floats ~12 KB. Rows become lists only where a
store builds one upsert request (:func:`rows_as_lists`). numpy is never imported here: an array exists only if the
caller loaded it (``sys.modules``).

Example:
    >>> to_float_vector((1, 2.5), "the query vector")
    [1.0, 2.5]
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from rrf_retriever.errors import DimensionMismatchError, InvalidTypeError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MAX_SQUARED_NORM",
    "VectorRows",
    "float_array",
    "rows_as_lists",
    "to_float_vector",
    "to_float_vectors",
    "validate_vectors",
]

#: Validated vectors of one batch: lists of floats, or a 2-D float32 / float64 numpy array kept as given.
VectorRows: TypeAlias = "list[list[float]] | np.ndarray"
#: Rows squared and summed in float64 this many at a time (a bounded temporary, whatever the batch's size).
_NORM_BLOCK = 1024

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


def float_array(value: object) -> np.ndarray | None:
    """``value`` if it is a 2-D float32 or float64 numpy array (not copied), else None.

    Example:
        >>> float_array([[1.0, 2.0]]) is None
        True
    """
    np_module = sys.modules.get("numpy")  # an array exists only if numpy is loaded: never imported here
    if np_module is None or not isinstance(value, np_module.ndarray):
        return None
    if isinstance(value, np_module.ma.MaskedArray):  # its data hides the masked values: checked value by value
        return None
    if value.ndim != 2 or value.dtype not in (np_module.float32, np_module.float64):
        return None
    return value


def _validate_array(array: np.ndarray, count: int, dim: int | None) -> tuple[np.ndarray, int]:
    """:func:`validate_vectors` on an array: the same checks and messages, numpy-wide (no copy but a block)."""
    import numpy as np  # an array was given: numpy is loaded

    if array.shape[0] != count:
        msg = f"vectors: {array.shape[0]} vectors for {count} texts"
        raise DimensionMismatchError(msg)
    width = int(array.shape[1])
    if width == 0:
        msg = "vectors[0] is empty"
        raise DimensionMismatchError(msg)
    if dim is not None and width != dim:
        msg = f"vectors[0] has dimension {width}, expected {dim}"
        raise DimensionMismatchError(msg)
    for start in range(0, count, _NORM_BLOCK):
        block = array[start : start + _NORM_BLOCK].astype(np.float64)
        squared = np.einsum("ij,ij->i", block, block)  # NaN or inf in a row makes its sum so
        bad = np.flatnonzero(~(squared <= MAX_SQUARED_NORM))
        if bad.size:
            row = start + int(bad[0])
            if not np.isfinite(array[row]).all():
                msg = f"vectors[{row}] holds NaN or infinity"
            else:
                msg = (f"vectors[{row}] is too large (norm {math.sqrt(float(squared[bad[0]])):.3g}): Qdrant "
                       "computes in float32, where its square overflows (NaN scores, or the point silently ignored)")
            raise DimensionMismatchError(msg)
    return array, width


def rows_as_lists(vectors: VectorRows, rows: slice) -> list[list[float]]:
    """The ``rows`` of validated vectors as lists of floats (one upsert request's worth, converted just then).

    Example:
        >>> rows_as_lists([[1.0], [2.0], [3.0]], slice(1, 3))
        [[2.0], [3.0]]
    """
    part = vectors[rows]
    return part if isinstance(part, list) else part.tolist()


def validate_vectors(vectors: object, count: int, dim: int | None = None) -> tuple[VectorRows, int]:
    """Bring ``count`` vectors (lists, tuples, a numpy array) to finite floats of one dimension.

    A 2-D float32 or float64 array (:func:`float_array`) is checked as a whole and returned as it is (exact: its
    rows become the same floats when converted, per upsert, by :func:`rows_as_lists`); anything else is returned
    as lists of floats.

    Args:
        vectors: The vectors, one per document.
        count: How many documents they belong to.
        dim: The collection's dimension, if it has one.

    Returns:
        The vectors (lists of floats, or the array), and their dimension.

    Raises:
        InvalidTypeError: not a sequence of sequences of numbers.
        DimensionMismatchError: wrong count, mixed or wrong dimension, empty vectors, NaN or infinity.

    Example:
        >>> validate_vectors([[0.1, 0.2]], 1)
        ([[0.1, 0.2]], 2)
    """
    array = float_array(vectors)
    if array is not None:
        return _validate_array(array, count, dim)
    out = to_float_vectors(vectors, count, "vectors")
    for i, vec in enumerate(out):
        if dim is None:
            dim = len(vec)
        if len(vec) != dim:
            msg = f"vectors[{i}] has dimension {len(vec)}, expected {dim}"
            raise DimensionMismatchError(msg)
    return out, dim or 0
