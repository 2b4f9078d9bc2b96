"""Filtered search on a shard that walks an HNSW graph: recall@10 against exact numpy search on the same vectors
(``filtered_search``, :func:`rrf_retriever.stores.qdrant.edge_index.filtered_plan`;
benchmarks/scale/bench_filtered_recall.py measures every selectivity and the latency)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore
from rrf_retriever.stores.qdrant.edge_index import (
    FILTERED_SEARCH,
    FULL_SCAN_KB,
    GRAPH_KIND,
    GRAPH_POINTS,
    GRAPH_TRUST,
    SCAN_POINTS,
    filtered_plan,
    full_scan_kb,
    scan_points,
)

DIM = 384
TOP = 10
CLUSTERS = 1000


def _clustered(n: int, seed: int, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of a Gaussian mixture (the benchmark's corpus) and each one's cluster."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(centers), n)
    block = centers[labels] + 0.8 * rng.normal(size=(n, centers.shape[1])).astype(np.float32)
    return (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float32), labels


def _scopes(labels: np.ndarray) -> dict[str, np.ndarray]:
    """``region_<pct>``: whole clusters (a tenant of its own topics); ``spread_<pct>``: documents at random."""
    rng = np.random.default_rng(7)
    by_cluster = np.concatenate([np.flatnonzero(labels == c) for c in rng.permutation(CLUSTERS)])
    order = rng.permutation(len(labels))
    out = {}
    for pct in (35, 45, 70):
        for name, rows in (("region", by_cluster), ("spread", order)):
            mask = np.zeros(len(labels), dtype=bool)
            mask[rows[: len(labels) * pct // 100]] = True
            out[f"{name}_{pct}"] = mask
    return out


def _exact_top(vectors: np.ndarray, mask: np.ndarray, query: np.ndarray) -> set[int]:
    rows = np.flatnonzero(mask)
    scores = vectors[rows] @ query
    return set(rows[np.argpartition(-scores, TOP)[:TOP]].tolist())


def _recalls(store: QdrantEdgeDenseStore, vectors: np.ndarray, mask: np.ndarray, key: str,
             queries: np.ndarray) -> np.ndarray:
    out = []
    for q in queries:
        hits = store.search(q.tolist(), TOP, filter={key: "in"})
        out.append(len(_exact_top(vectors, mask, q) & {int(h.id[1:]) for h in hits}) / TOP)
    return np.array(out)


GROWN_AT = GRAPH_POINTS // 2  # the graph grows over half the corpus; the other half is added to it afterwards


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[QdrantEdgeDenseStore, np.ndarray, dict[
        str, np.ndarray], np.ndarray]]:
    """100k clustered 384-d vectors on the default dense store, the filter keys declared (their payload indexes
    exist before the graph), written in chunks as the engine writes an add: the first 50k grow the graph
    (``graph_points``), so its scan reach is 97% of 50k and the scopes of 70% are beyond it (the graph's case)."""
    centers = np.random.default_rng(99).normal(size=(CLUSTERS, DIM)).astype(np.float32)
    vectors, labels = _clustered(GRAPH_POINTS, 0, centers)
    queries, _ = _clustered(50, 5, centers)
    masks = _scopes(labels)
    keys = sorted(masks)
    path: Path = tmp_path_factory.mktemp("graph") / "dense"
    store = QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path, index_keys=keys, graph_points=GROWN_AT)
    for half in (range(0, GROWN_AT), range(GROWN_AT, GRAPH_POINTS)):
        with store.deferred_maintenance():
            for start in range(half.start, half.stop, 10_000):
                rows = range(start, start + 10_000)
                metas = [{k: "in" if masks[k][r] else "out" for k in keys} for r in rows]
                store.add([f"d{r}" for r in rows], [""] * len(rows), metas, vectors[start:start + 10_000])
    yield store, vectors, masks, queries
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("key", ["region_35", "region_45", "region_70", "spread_35", "spread_45"])
def test_filtered_recall_on_the_graph_matches_exact_search(graph_store, key: str) -> None:  # type: ignore[no-untyped-def]
    """35-45% scopes are in the int8 scan's reach (Qdrant scans them), 70% beyond it (the rule scores it exactly)."""
    store, vectors, masks, queries = graph_store
    assert store.index == GRAPH_KIND  # the shard walks a graph: what the filters below are about
    assert store.filtered_search == "auto"
    meta = json.loads((store.path / "rrf_store.json").read_text(encoding="utf-8"))
    assert meta["full_scan_kb"] == full_scan_kb(GRAPH_KIND, DIM, GROWN_AT)  # fixed when the graph grew
    recalls = _recalls(store, vectors, masks[key], key, queries)
    assert recalls.mean() >= 0.99
    assert np.percentile(recalls, 5) >= 0.99


@pytest.mark.slow
def test_the_graph_walk_alone_misses_a_region_scope(graph_store) -> None:  # type: ignore[no-untyped-def]
    """The fixture reaches the case the rule is for: Qdrant's plan alone walks the graph under a filter beyond its
    scan reach (70% of the points, a region) and misses in-scope hits for queries outside the region (a test that
    can fail above)."""
    store, vectors, masks, queries = graph_store
    store.filtered_search = "graph"
    try:
        recalls = _recalls(store, vectors, masks["region_70"], "region_70", queries)
    finally:
        store.filtered_search = "auto"
    assert np.percentile(recalls, 5) < 0.9


def test_filtered_search_is_checked_and_small_graph_shards_answer_exactly(tmp_path: Path) -> None:
    centers = np.random.default_rng(1).normal(size=(20, 32)).astype(np.float32)
    vectors, labels = _clustered(3000, 2, centers)
    queries, _ = _clustered(20, 3, centers)
    mask = labels < 7  # a region: 7 of 20 clusters
    with QdrantEdgeDenseStore(HashingEmbedding(dim=32), path=tmp_path / "d", index=GRAPH_KIND,
                              index_keys=["t"]) as store:
        with pytest.raises(InvalidArgumentError, match="filtered_search"):
            store.filtered_search = "fast"
        store.add([f"d{i}" for i in range(len(vectors))], [""] * len(vectors),
                  [{"t": "in" if m else "out"} for m in mask], vectors)
        store.optimize()
        assert store.unoptimized_points() == 0  # the graph is built over every point
        for setting in FILTERED_SEARCH:
            store.filtered_search = setting
            assert all(r == 1.0 for r in _recalls(store, vectors, mask, "t", queries)) or setting != "auto"


def test_filtered_plan() -> None:
    assert filtered_plan("auto", lambda: (50, 100)) == "exact"
    assert filtered_plan("auto", lambda: (99, 100)) == "acorn"
    assert filtered_plan("auto", lambda: (0, 0)) == "acorn"  # an empty shard: nothing to scan either way
    assert filtered_plan("acorn", lambda: (10, 100)) == "acorn"
    assert filtered_plan("graph", lambda: (10, 100)) == "graph"
    # Below the shard's scan reach Qdrant's own plan scans the int8 copy; at or above it the rule is as before.
    assert filtered_plan("auto", lambda: (96_999, 100_000), scan_reach=97_000) == "scan"
    assert filtered_plan("auto", lambda: (97_000, 1_000_000), scan_reach=97_000) == "exact"
    assert filtered_plan("auto", lambda: (990_000, 1_000_000), scan_reach=97_000) == "acorn"
    assert filtered_plan("graph", lambda: (1, 100), scan_reach=97_000) == "graph"  # the explicit settings stay


def test_the_scan_reach_is_what_qdrant_converts_the_threshold_to() -> None:
    # Qdrant turns full_scan_threshold (KB) into points as KB x 1024 / the bytes of one float vector.
    assert full_scan_kb(GRAPH_KIND, 384) * 1024 // (4 * 384) == SCAN_POINTS == round(GRAPH_TRUST * GRAPH_POINTS)
    for dim in (8, 33, 384, 768, 1536):  # whole KB, rounded up: at most one KB of vectors more
        reach = scan_points(GRAPH_KIND, dim, full_scan_kb(GRAPH_KIND, dim), False)
        assert reach is not None and 0 <= reach - SCAN_POINTS <= 256 // dim
    assert scan_points(GRAPH_KIND, 384, None, False) == FULL_SCAN_KB * 1024 // (4 * 384)  # grown before: 33,333
    assert scan_points(GRAPH_KIND, 384, 145_500, True) is None  # windows: Qdrant's per-point size is not known
    assert scan_points("int8", 384, 145_500, False) is None  # no graph: every search scans already
    assert scan_points(None, 384, None, False) is None  # Qdrant's default HNSW, no int8 copy: exact as before


@pytest.mark.parametrize("damaged", ["145500", True, -1, 0, 10**9, 1.5, [1]])
def test_a_damaged_recorded_scan_reach_turns_the_scan_off_and_answers_stay_exact(tmp_path: Path, damaged: object) -> None:
    """The meta file's ``full_scan_kb`` is read back only as a value the store could have written: anything else
    opens the shard with no scan reach (exact below 97%), never a scan the shard's Qdrant config does not make."""
    centers = np.random.default_rng(4).normal(size=(20, 32)).astype(np.float32)
    vectors, labels = _clustered(2000, 5, centers)
    queries, _ = _clustered(10, 6, centers)
    mask = labels < 7
    path = tmp_path / "d"
    with QdrantEdgeDenseStore(HashingEmbedding(dim=32), path=path, index=GRAPH_KIND, index_keys=["t"]) as store:
        store.add([f"d{i}" for i in range(len(vectors))], [""] * len(vectors),
                  [{"t": "in" if m else "out"} for m in mask], vectors)
        store.optimize()
    meta_file = path / "rrf_store.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    assert meta["full_scan_kb"] == full_scan_kb(GRAPH_KIND, 32)  # what the store wrote
    meta["full_scan_kb"] = damaged
    meta_file.write_text(json.dumps(meta), encoding="utf-8")
    with QdrantEdgeDenseStore(HashingEmbedding(dim=32), path=path) as store:
        assert store.count() == len(vectors)
        assert all(r == 1.0 for r in _recalls(store, vectors, mask, "t", queries))
