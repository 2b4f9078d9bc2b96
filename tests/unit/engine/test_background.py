"""The engine's cosine background (rrf_retriever.engine.background): measured on the stored vectors, again after
enough writes; without one (too few vectors) the relevance is the normalized score."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine.background import BackgroundCache
from rrf_retriever.engine.legs import as_leg
from rrf_retriever.relevance import cosine_background, query_level
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

#: Twelve documents in 12-D, each on its own axis with a little of the next one: a query on a document's vector has
#: one strong match, its neighbours share a little (cosine 0.28), the others nothing.
VECTORS = {f"d{i}": [1.0 if j == i else 0.3 if j == (i + 1) % 12 else 0.0 for j in range(12)] for i in range(12)}
IDS = list(VECTORS)


class Table:
    """Embeds a text as the vector stored under it (the texts are the VECTORS keys)."""

    dimension = 12
    model_id = "table"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [VECTORS[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return VECTORS[text]


def test_too_few_vectors_give_the_normalized_score_and_enough_writes_measure_the_background() -> None:
    retriever = EnsembleRRFRetriever.from_texts(IDS[:3], Table(), ids=IDS[:3], weights={"keyword": 0.0})
    try:
        hits = retriever.search("d0", k=3).hits
        assert [h.relevance for h in hits] == [h.normalized_score for h in hits]  # 3 vectors: no background
        retriever.add_texts(IDS[3:], ids=IDS[3:])
        hits = retriever.search("d0", k=3).hits
        scale = cosine_background(list(VECTORS.values()))
        assert scale is not None
        expected = [min(1.0, h.normalized_score * query_level(h.scores["dense"], scale)) for h in hits]
        running = [min(expected[: i + 1]) for i in range(len(expected))]
        assert all(math.isclose(h.relevance, r, rel_tol=1e-5, abs_tol=1e-9) for h, r in zip(hits, running))
        assert hits[0].id == "d0" and hits[0].relevance > 0.99 and hits[1].relevance < 0.3
    finally:
        retriever.close()


def test_no_dense_store_has_no_background() -> None:
    cache = BackgroundCache({}, lambda: 0)
    assert cache.dense_leg() is None and cache.get() is None


def test_keyword_only_with_the_query_vector_reads_the_hits_stored_vectors() -> None:
    retriever = EnsembleRRFRetriever.from_texts(IDS, Table(), ids=IDS)
    try:
        scale = cosine_background(list(VECTORS.values()))
        assert scale is not None
        with_vector = retriever.search("d0", weights={"dense": 0.0}, query_vector=VECTORS["d1"]).hits
        assert [h.id for h in with_vector] == ["d0"] and set(with_vector[0].ranks) == {"keyword"}
        cosine = 0.3 / (1.0 + 0.09)  # d0 against d1's vector: they share d1's axis
        assert math.isclose(with_vector[0].relevance, query_level(cosine, scale), rel_tol=1e-5)
        without = retriever.search("d0", weights={"dense": 0.0}).hits
        assert without[0].relevance == without[0].normalized_score == 1.0  # no vector: rank-based
    finally:
        retriever.close()


class CountingStore(QdrantEdgeDenseStore):
    """A real qdrant-edge dense store that counts how often the background lists its ids (one measure each)."""

    listed = 0

    def some_ids(self, limit: int) -> list[str]:  # what the background lists a Qdrant store's ids with
        type(self).listed += 1
        return super().some_ids(limit)

    def ids_matching(self, *args: Any, **kwargs: Any) -> list[str]:
        msg = "the background lists a store that can give some ids without listing them all through some_ids"
        raise AssertionError(msg)


def test_threads_asking_at_once_measure_once_and_writes_measure_again(tmp_path: Path) -> None:
    store = CountingStore(HashingEmbedding(16), path=tmp_path / "dense")
    texts = [f"note {i} about topic {i % 7}" for i in range(300)]  # past BACKGROUND_SAMPLE: a sample, not all
    store.add([f"d{i}" for i in range(300)], texts, [{} for _ in texts])
    written = [0]
    cache = BackgroundCache({"dense": as_leg("dense", store)}, lambda: written[0])
    start = threading.Barrier(8)

    def ask() -> object:
        start.wait()
        return cache.get()

    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: ask(), range(8)))
    assert CountingStore.listed == 1 and got[0] is not None and all(g is got[0] for g in got)
    written[0] = 30  # 10% of 300: not past the refresh threshold
    assert cache.get() is got[0] and CountingStore.listed == 1
    written[0] = 31  # past it: measured again, once
    assert cache.get() == got[0] and CountingStore.listed == 2
    store.close()
