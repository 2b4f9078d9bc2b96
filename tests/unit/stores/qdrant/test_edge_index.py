"""qdrant-edge search speed settings: the dense shard's index kind and automatic optimize, and the keyword shard's
live IDF asked for only while deleted points await a vacuum (benchmarks/speed/bench_public_path.py measures both)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore
from rrf_retriever.stores.qdrant.edge_index import DEFAULT_INDEX, GRAPH_POINTS, INDEX_KINDS
from rrf_retriever.stores.qdrant.edge_stores import AUTO_OPTIMIZE_POINTS

DIM = 32


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _store(path, **kwargs) -> QdrantEdgeDenseStore:  # type: ignore[no-untyped-def]
    return QdrantEdgeDenseStore(HashingEmbedding(dim=DIM), path=path, **kwargs)


def test_a_new_store_is_int8_and_optimizes_by_itself(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with _store(tmp_path / "d") as store:
        assert store.index == DEFAULT_INDEX == "int8"
        assert store.auto_optimize_points == AUTO_OPTIMIZE_POINTS
    with _store(tmp_path / "h", index="hnsw") as store:
        assert store.auto_optimize_points is None  # an HNSW build (minutes at 100k) is never started by an add
    with _store(tmp_path / "n", auto_optimize=False) as store:
        assert store.auto_optimize_points is None


def test_auto_optimize_after_the_threshold_and_search_stays_exact(tmp_path) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(400)
    ids = [f"d{i}" for i in range(400)]
    metas = [{"session_id": i % 10} for i in range(400)]
    with _store(tmp_path / "e", auto_optimize=150) as store:
        store.add(ids[:100], ["t"] * 100, metas[:100], vectors=vectors[:100])
        assert store.unoptimized_points() == 100  # below the threshold: nothing optimized yet
        store.add(ids[100:], ["t"] * 300, metas[100:], vectors=vectors[100:])
        assert store.unoptimized_points() == 0
        queries = _vectors(20, seed=1)
        overlap = []
        for q in queries:
            hits = store.search(q, 10)
            # Rescored: every score is the float cosine, not the int8 estimate.
            for h in hits:
                assert h.score == pytest.approx(float(vectors[int(h.id[1:])] @ q), abs=1e-5)
            store.exact = True
            truth = {h.id for h in store.search(q, 10)}
            store.exact = False
            overlap.append(len(truth & {h.id for h in hits}) / 10)
        assert np.mean(overlap) >= 0.95
        scoped = store.search(queries[0], 10, filter={"session_id": [3]})
        assert scoped and all(int(h.id[1:]) % 10 == 3 for h in scoped)


def test_a_shard_keeps_its_index_kind(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "k"
    with _store(path, index="plain") as store:
        store.add(["a", "b"], ["x", "y"], vectors=_vectors(2))
    with _store(path) as store:
        assert store.index == "plain"
    with pytest.raises(InvalidArgumentError, match="index='plain'"):
        _store(path, index="int8")
    with _store(path) as store:  # the refused open lost nothing and released the lock
        assert store.count() == 2


def test_a_shard_from_before_the_setting_is_hnsw_and_never_builds_by_itself(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "old"
    with _store(path, index="hnsw") as store:
        store.add(["a"], ["x"], vectors=_vectors(1))
    meta_file = path / "rrf_store.json"
    meta = json.loads(meta_file.read_text())
    del meta["index"]  # what the store wrote before the setting existed
    meta_file.write_text(json.dumps(meta))
    with _store(path) as store:
        assert store.index == "hnsw"
        assert store.auto_optimize_points is None
        assert [h.id for h in store.search(_vectors(1)[0], 1)] == ["a"]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"index": "ivf"}, InvalidArgumentError), ({"index": ""}, InvalidArgumentError),
     ({"auto_optimize": 0}, InvalidArgumentError), ({"auto_optimize": -5}, InvalidArgumentError),
     ({"auto_optimize": "10"}, InvalidTypeError), ({"auto_optimize": 2.5}, InvalidTypeError),
     ({"graph_points": 0}, InvalidArgumentError), ({"graph_points": True}, InvalidTypeError),
     ({"graph_points": 1.5}, InvalidTypeError)],
)
def test_bad_index_settings_are_our_errors(tmp_path, kwargs, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        _store(tmp_path / "bad", **kwargs)
    assert set(INDEX_KINDS) == {"int8", "hnsw", "plain", "int8-hnsw"}


# ---- the graph an int8 shard grows at graph_points ------------------------------------------------------


def _recall(store: QdrantEdgeDenseStore, queries: np.ndarray, flt: dict | None = None) -> float:  # type: ignore[type-arg]
    got = [{h.id for h in store.search(q, 10, filter=flt)} for q in queries]
    store.exact = True
    try:
        truth = [{h.id for h in store.search(q, 10, filter=flt)} for q in queries]
    finally:
        store.exact = False
    return float(np.mean([len(a & b) / 10 for a, b in zip(got, truth)]))


def test_an_int8_shard_grows_its_graph_at_graph_points_and_keeps_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(900)
    ids = [f"d{i}" for i in range(900)]
    metas = [{"session_id": i % 10} for i in range(900)]
    path = tmp_path / "g"
    with _store(path, auto_optimize=100, graph_points=600) as store:
        assert GRAPH_POINTS >= AUTO_OPTIMIZE_POINTS
        store.add(ids[:500], ["t"] * 500, metas[:500], vectors=vectors[:500])
        assert store.index == "int8"  # 500 < 600: the int8 scan
        store.add(ids[500:700], ["t"] * 200, metas[500:700], vectors=vectors[500:700])
        assert store.index == "int8-hnsw"
        assert store.unoptimized_points() == 0
        queries = _vectors(20, seed=2)
        assert _recall(store, queries) >= 0.9
        scoped = store.search(queries[0], 10, filter={"session_id": [4]})
        assert len(scoped) == 10 and all(int(h.id[1:]) % 10 == 4 for h in scoped)
        for h in scoped:  # rescored with the float vectors
            assert h.score == pytest.approx(float(vectors[int(h.id[1:])] @ queries[0]), abs=1e-5)
        store.add(ids[700:], ["t"] * 200, metas[700:], vectors=vectors[700:])  # later adds join the graph shard
        assert store.count() == 900 and store.unoptimized_points() == 0
        assert not store.grow_graph()  # already grown: nothing to do
    with _store(path) as store:  # reopened: the kind is kept, and so are the documents
        assert store.index == "int8-hnsw" and store.count() == 900
        assert _recall(store, _vectors(20, seed=3)) >= 0.9
    with _store(path, index="int8") as store:  # what its creator asked for: still the same shard
        assert store.index == "int8-hnsw"
    with pytest.raises(InvalidArgumentError, match="int8-hnsw"):
        _store(path, index="plain")


def test_no_graph_without_auto_optimize_or_below_graph_points(tmp_path) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(300)
    ids = [f"d{i}" for i in range(300)]
    with _store(tmp_path / "a", auto_optimize=False, graph_points=100) as store:
        store.add(ids, ["t"] * 300, vectors=vectors)
        assert store.index == "int8" and store.unoptimized_points() == 300
    with _store(tmp_path / "b", auto_optimize=50, graph_points=None) as store:
        store.add(ids, ["t"] * 300, vectors=vectors)
        assert store.index == "int8" and store.unoptimized_points() == 0
        assert store.grow_graph()  # on request
        assert store.index == "int8-hnsw"
    with _store(tmp_path / "c", index="plain", auto_optimize=50, graph_points=100) as store:
        store.add(ids, ["t"] * 300, vectors=vectors)
        assert store.index == "plain"  # only int8 shards grow a graph
        assert not store.grow_graph()


# ---- the keyword shard: global IDF statistics unless deleted points await a vacuum --------------------------

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma"]


def _texts(n: int) -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 9)))) for _ in range(n)]


def _ranking(store: QdrantEdgeKeywordStore, queries: list[str]) -> list[list[tuple[str, float]]]:
    # Every matching document (a cut at 10 would fall inside ties, which Qdrant breaks by its internal order).
    return [[(h.id, round(h.score, 4)) for h in store.search(q, 400)] for q in queries]


def _fresh(ids: list[str], texts: list[str], queries: list[str]) -> list[list[tuple[str, float]]]:
    with QdrantEdgeKeywordStore(avgdl=6.0) as fresh:
        fresh.add(ids, texts)
        return _ranking(fresh, queries)


def test_keyword_scores_are_those_of_the_live_documents_through_deletes_and_upserts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ids = [f"k{i}" for i in range(300)]
    texts = _texts(300)
    queries = ["alpha beta", "sigma", "gamma delta kappa", "zeta theta lambda epsilon"]
    with QdrantEdgeKeywordStore(path=tmp_path / "kw", avgdl=6.0) as store:
        store.add(ids, texts)
        assert _ranking(store, queries) == _fresh(ids, texts, queries)
        store.delete(ids[:90])  # the index still counts them: the store must ask for the live statistics
        live_ids, live_texts = ids[90:], texts[90:]
        assert _ranking(store, queries) == _fresh(live_ids, live_texts, queries)
        store.optimize()
        assert _ranking(store, queries) == _fresh(live_ids, live_texts, queries)
        changed = ["sigma sigma alpha"] * 40  # replaced documents
        store.add(live_ids[:40], changed)
        assert _ranking(store, queries) == _fresh(live_ids, changed + live_texts[40:], queries)
    with QdrantEdgeKeywordStore(path=tmp_path / "kw") as reopened:  # a reopened store knows nothing cached
        assert _ranking(reopened, queries) == _fresh(live_ids, changed + live_texts[40:], queries)


def test_deferred_maintenance_optimizes_once_at_the_end_and_not_after_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    vectors = _vectors(450)
    ids = [f"d{i}" for i in range(450)]
    with _store(tmp_path / "m", auto_optimize=150) as store:
        with store.deferred_maintenance():
            store.add(ids[:200], ["t"] * 200, vectors=vectors[:200])
            store.add(ids[200:300], ["t"] * 100, vectors=vectors[200:300])
            assert store.unoptimized_points() == 300  # each add past the threshold: left to the end
        assert store.unoptimized_points() == 0  # optimized once the block ended
        with pytest.raises(RuntimeError), store.deferred_maintenance():
            store.add(ids[300:400], ["t"] * 100, vectors=vectors[300:400])
            raise RuntimeError
        assert store.unoptimized_points() == 100  # an error ended the block: the next add optimizes
        store.add(ids[400:], ["t"] * 50, vectors=vectors[400:])
        assert store.unoptimized_points() == 0
