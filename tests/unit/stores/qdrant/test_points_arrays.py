"""Dense vectors given as a 2-D float array (what ``embed_array`` returns) reach every Qdrant store kind as the
array and are written exactly as the same vectors given as lists would be; the array's checks refuse the same
batches, before anything is written. Real stores (qdrant-client local mode and qdrant-edge)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import DimensionMismatchError, InvalidTypeError
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeHybridStore,
    QdrantHybridStore,
)

DIM = 16
IDS = [f"d{i}" for i in range(7)]
TEXTS = [f"document number {i} about topic {i % 3}" for i in range(7)]

Factory = Callable[[str], Any]


@pytest.fixture(params=["client-dense", "edge-dense", "client-hybrid", "edge-hybrid"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    opened: list[Any] = []

    def factory(name: str) -> Any:
        emb = HashingEmbedding(DIM)
        kind = request.param
        # batch_size=3: several upsert requests, each converting its own rows
        if kind == "client-dense":
            store: Any = QdrantDenseStore(emb, batch_size=3)
        elif kind == "edge-dense":
            store = QdrantEdgeDenseStore(emb, tmp_path / name, batch_size=3)
        elif kind == "client-hybrid":
            store = QdrantHybridStore(emb, batch_size=3)
        else:
            store = QdrantEdgeHybridStore(emb, tmp_path / name, batch_size=3)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def _array(dtype: type = np.float32) -> np.ndarray:
    rows = np.random.default_rng(5).standard_normal((len(IDS), DIM)).astype(dtype)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _vectors(store: Any) -> list[tuple[str, str, list[float] | None]]:
    return [(r.id, r.text, r.vector) for r in store.get(IDS, with_vectors=True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_array_is_written_exactly_as_the_same_vectors_as_lists(make_store: Factory, dtype: type) -> None:
    array = _array(dtype)
    from_array, from_lists = make_store("array"), make_store("lists")
    from_array.add(IDS, TEXTS, vectors=array)
    from_lists.add(IDS, TEXTS, vectors=array.tolist())
    assert from_array.count() == len(IDS)
    assert _vectors(from_array) == _vectors(from_lists)
    query = array[2].tolist()
    assert [h.id for h in from_array.search(query, 3)] == [h.id for h in from_lists.search(query, 3)]
    assert from_array.search(query, 1)[0].id == "d2"


def test_an_array_holding_nan_writes_nothing(make_store: Factory) -> None:
    store = make_store("nan")
    array = _array()
    array[4, 0] = np.nan
    with pytest.raises(DimensionMismatchError, match=r"vectors\[4\] holds NaN"):
        store.add(IDS, TEXTS, vectors=array)
    assert store.count() == 0


def test_a_masked_array_with_a_masked_value_writes_nothing(make_store: Factory) -> None:
    # It looks like a float array (an ndarray of float32) but its rows' masked value is None as a list: refused at
    # the door, our error, not a Qdrant type error at upsert time.
    store = make_store("masked")
    masked = np.ma.masked_array(_array(), mask=np.zeros(_array().shape, dtype=bool))
    masked[1, 3] = np.ma.masked
    with pytest.raises(InvalidTypeError, match=r"vectors\[1\] must hold numbers only"):
        store.add(IDS, TEXTS, vectors=masked)
    assert store.count() == 0


def test_an_array_of_another_dimension_than_the_collection_writes_nothing(make_store: Factory) -> None:
    store = make_store("dim")
    store.add(IDS[:2], TEXTS[:2], vectors=_array()[:2])
    wider = np.ones((2, DIM + 1), dtype=np.float32)
    with pytest.raises(DimensionMismatchError, match="dimension"):
        store.add(IDS[2:4], TEXTS[2:4], vectors=wider)
    assert store.count() == 2


def test_an_array_is_turned_into_python_floats_one_upsert_request_at_a_time(tmp_path: Path) -> None:
    # 5,000 x 384 float32 is 7.7 MB; the same vectors as lists of Python floats ~60 MB. Only a request's rows
    # (256 points, ~3 MB) may exist as lists at any time.
    import tracemalloc

    n, dim = 5_000, 384
    rng = np.random.default_rng(9)
    array = rng.standard_normal((n, dim)).astype(np.float32)
    ids, texts = [f"p{i}" for i in range(n)], [f"text {i}" for i in range(n)]
    store = QdrantEdgeDenseStore(HashingEmbedding(dim), tmp_path / "big")
    try:
        tracemalloc.start()
        store.add(ids, texts, vectors=array)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert store.count() == n
        assert peak < 25 * 2**20, f"peak {peak / 2**20:.0f} MB of Python allocations"
    finally:
        tracemalloc.stop()
        store.close()
