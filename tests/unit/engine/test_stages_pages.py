"""Pages are slices of ONE fused list (the legs fetch ``fetch_k`` whatever the offset), with and without 1-hop
expansion, and the same corpus built twice gives the same list. Real stores (qdrant-edge both legs, FTS5)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rrf_retriever import FTS5KeywordStore, HashingEmbedding, HybridEngine, QdrantEdgeDenseStore, weighted_rrf
from rrf_retriever.stores.qdrant import QdrantEdgeKeywordStore

DIM = 16
WORDS = "rocket fuel engine orbit launch booster thrust nozzle stage payload tank valve".split()


def _corpus(n: int, seed: int = 3) -> tuple[list[str], list[str], list[dict[str, object]]]:
    rng = random.Random(seed)
    ids = [f"d{i:03d}" for i in range(n)]
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(n)]
    return ids, texts, [{"session_id": i % 5} for i in range(n)]


def _engine(tmp_path: Path, keyword: str = "edge", n: int = 300, order_seed: int | None = None) -> HybridEngine:
    embedding = HashingEmbedding(DIM)
    kw = QdrantEdgeKeywordStore(tmp_path / "kw") if keyword == "edge" else FTS5KeywordStore()
    engine = HybridEngine({"dense": QdrantEdgeDenseStore(embedding, path=tmp_path / "dense"), "keyword": kw})
    ids, texts, metas = _corpus(n)
    rows = list(zip(ids, texts, metas))
    if order_seed is not None:
        random.Random(order_seed).shuffle(rows)
    for start in range(0, n, 50):
        chunk = rows[start:start + 50]
        engine.add([r[0] for r in chunk], [r[1] for r in chunk], [r[2] for r in chunk])
    return engine


@pytest.mark.parametrize("keyword", ["edge", "fts5"])
def test_pages_are_disjoint_slices_of_the_list_fused_at_one_depth(tmp_path: Path, keyword: str) -> None:
    engine = _engine(tmp_path, keyword)
    query = "rocket fuel orbit"
    pages = [engine.search(query, top_k=10, offset=10 * p) for p in range(5)]
    fetch_k = pages[0].trace.fetch_k
    assert all(page.trace.fetch_k == fetch_k for page in pages)  # the depth does not grow with the offset
    seen = [i for page in pages for i in page.ids]
    assert len(seen) == len(set(seen)), "an id on two pages"
    # The list those pages slice: each leg's store asked for fetch_k, fused with the engine's weights and rrf_k.
    vector = HashingEmbedding(DIM).embed_query(query)
    ranked = {"dense": engine.legs["dense"].store.search(vector, fetch_k),
              "keyword": engine.legs["keyword"].store.search(query, fetch_k)}
    settings = engine.settings
    fused = weighted_rrf(ranked, {"dense": settings.weights["dense"], "keyword": settings.weights["keyword"]},
                         k=settings.rrf_k)
    assert seen == [h.id for h in fused][:50]
    engine.close()


def test_the_same_corpus_built_twice_gives_the_same_pages(tmp_path: Path) -> None:
    lists = []
    for run, order_seed in enumerate((1, 2)):
        engine = _engine(tmp_path / str(run), n=120, order_seed=order_seed)
        lists.append([engine.search("rocket fuel", top_k=10, offset=o).ids for o in (0, 10, 20)])
        engine.close()
    assert lists[0] == lists[1]


def test_pages_with_expansion_lose_no_fused_result(tmp_path: Path) -> None:
    # Neighbours take the last slots of a page; the fused results they push out open the next page.
    embedding = HashingEmbedding(DIM)
    engine = HybridEngine({"dense": QdrantEdgeDenseStore(embedding, path=tmp_path / "d"), "keyword": FTS5KeywordStore()},
                          links_key="links")
    ids, texts, _ = _corpus(60)
    metas = [{"links": [f"n{i:03d}"]} if i % 2 == 0 else {} for i in range(60)]
    engine.add(ids, texts, metas)
    engine.add([f"n{i:03d}" for i in range(0, 60, 2)], ["unrelated words here"] * 30)
    plain = HybridEngine({"dense": engine.legs["dense"].store, "keyword": engine.legs["keyword"].store})
    fused = [i for i in plain.search("rocket fuel orbit", top_k=40).ids if i.startswith("d")]
    pages = [engine.search("rocket fuel orbit", top_k=4, offset=4 * p).hits for p in range(6)]
    shown = [h.id for page in pages for h in page]
    assert len(shown) == len(set(shown)), "an id on two pages"
    seeds = [i for i in shown if i.startswith("d")]
    assert seeds == fused[: len(seeds)], "a fused result skipped between pages"
    assert any("rrf_expanded_from" in h.metadata for page in pages for h in page)
    assert all(len(page) <= 4 for page in pages)
