"""rrf_retriever/vectors.py: a 2-D float array is checked as a whole and kept as it is (no lists of Python floats
for the batch), with the checks and error classes of the list path."""

from __future__ import annotations

import numpy as np
import pytest

from rrf_retriever.errors import DimensionMismatchError, InvalidTypeError
from rrf_retriever.vectors import float_array, rows_as_lists, validate_vectors


def _rows(n: int = 5, dim: int = 4, dtype: type = np.float32) -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.standard_normal((n, dim)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_array_is_kept_as_it_is_and_its_rows_become_the_same_floats_as_lists(dtype: type) -> None:
    array = _rows(dtype=dtype)
    checked, dim = validate_vectors(array, 5)
    assert checked is array and dim == 4  # not copied, not converted
    as_lists, _ = validate_vectors(array.tolist(), 5)
    assert rows_as_lists(checked, slice(1, 4)) == as_lists[1:4]
    assert rows_as_lists(as_lists, slice(1, 4)) == as_lists[1:4]


@pytest.mark.parametrize("value", [[[1.0, 2.0]], np.ones((2, 2), dtype=np.int64), np.ones(3, dtype=np.float32),
                                   np.ones((1, 2), dtype=np.float16)])
def test_only_2d_float32_or_float64_arrays_take_the_array_path(value: object) -> None:
    assert float_array(value) is None


def test_a_masked_array_is_checked_value_by_value_and_a_masked_value_is_refused() -> None:
    # Its data passes every check of the array path while tolist() gives None for the masked value: a Qdrant
    # type error at upsert time. Value by value, the masked value is what it stands for: missing.
    masked = np.ma.masked_array(_rows(), mask=np.zeros((5, 4), dtype=bool))
    assert float_array(masked) is None
    checked, dim = validate_vectors(masked, 5)
    assert isinstance(checked, list) and checked == _rows().tolist() and dim == 4
    masked[2, 1] = np.ma.masked
    with pytest.raises(InvalidTypeError, match=r"vectors\[2\] must hold numbers only"):
        validate_vectors(masked, 5)


def _bad(kind: str) -> np.ndarray:
    array = _rows()
    if kind == "nan":
        array[3, 1] = np.nan
    elif kind == "inf":
        array[3, 0] = -np.inf
    elif kind == "huge":
        array[3] = 3e38  # finite in float32, its squared norm is not
    return array


@pytest.mark.parametrize(("kind", "message"), [("nan", r"vectors\[3\] holds NaN or infinity"),
                                               ("inf", r"vectors\[3\] holds NaN or infinity"),
                                               ("huge", r"vectors\[3\] is too large")])
def test_an_array_is_refused_as_the_same_lists_are(kind: str, message: str) -> None:
    array = _bad(kind)
    for given in (array, array.tolist()):
        with pytest.raises(DimensionMismatchError, match=message):
            validate_vectors(given, 5)


def test_an_array_of_the_wrong_count_or_dimension_is_refused() -> None:
    with pytest.raises(DimensionMismatchError, match="5 vectors for 6 texts"):
        validate_vectors(_rows(), 6)
    with pytest.raises(DimensionMismatchError, match="dimension 4, expected 8"):
        validate_vectors(_rows(), 5, 8)
    with pytest.raises(DimensionMismatchError, match="empty"):
        validate_vectors(np.zeros((2, 0), dtype=np.float32), 2)


def test_a_large_array_is_checked_block_by_block_to_its_last_row() -> None:
    array = _rows(n=10_000)
    array[9_999, 2] = np.nan  # past the first blocks
    with pytest.raises(DimensionMismatchError, match=r"vectors\[9999\]"):
        validate_vectors(array, 10_000)
