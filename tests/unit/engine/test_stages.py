"""Result stages on the engine: paging, query_vector, the normalized score and its threshold, pinned ids."""

from __future__ import annotations

import pytest

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore

DIM = 16
TEXTS = {f"d{i:02d}": (f"rocket note {i} about {'fuel' if i % 3 else 'orbit'} and engines {i % 7}",
                       {"session_id": i % 4}) for i in range(60)}


def _engine(**kwargs: object) -> HybridEngine:
    embedding = HashingEmbedding(DIM)
    engine = HybridEngine({"dense": QdrantDenseStore(embedding), "keyword": FTS5KeywordStore()}, **kwargs)  # type: ignore[arg-type]
    ids = sorted(TEXTS)
    engine.add(ids, [TEXTS[i][0] for i in ids], [TEXTS[i][1] for i in ids])
    return engine


@pytest.mark.parametrize("fetch_k", [None, 200])
def test_pages_are_slices_of_one_fused_list(fetch_k: int | None) -> None:
    engine = _engine(fetch_k=fetch_k)
    whole = engine.search("rocket fuel engines", top_k=30, offset=0).ids
    pages = [engine.search("rocket fuel engines", top_k=10, offset=o).ids for o in (0, 10, 20)]
    if fetch_k is None:  # the default depth is the page size's: the pages slice one list fused for top_k=10
        assert len({i for page in pages for i in page}) == sum(len(page) for page in pages)  # no id twice
        assert [engine.search("rocket fuel engines", top_k=10, offset=o).ids for o in (0, 10, 20)] == pages
    else:  # a fixed depth: every page is a slice of the same list
        assert pages == [whole[0:10], whole[10:20], whole[20:30]]
    assert engine.search("rocket fuel engines", top_k=10, offset=500).ids == []
    with pytest.raises(InvalidArgumentError, match="offset"):
        engine.search("rocket", offset=-1)


def test_a_given_query_vector_skips_the_embedding_and_gives_the_same_answer() -> None:
    engine = _engine()
    vector = HashingEmbedding(DIM).embed_query("orbit engines")
    expected = engine.search("orbit engines")
    calls = []
    dense = engine.legs["dense"]
    original = dense.embedding.embed_query
    dense.embedding.embed_query = lambda text: calls.append(text) or original(text)  # type: ignore[method-assign]
    got = engine.search("orbit engines", query_vector=vector)
    assert calls == [] and got.ids == expected.ids and got.trace.embed_ms == 0.0


def test_every_hit_carries_a_normalized_score_and_the_threshold_applies_to_it() -> None:
    engine = _engine()
    result = engine.search("rocket note 5 about fuel and engines 5", top_k=20)
    scores = [h.normalized_score for h in result.hits]
    assert all(0.0 < s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
    best_possible = 1.0 / 61 + 1.25 / 61
    assert result.hits[0].normalized_score == pytest.approx(result.hits[0].score / best_possible)
    high = engine.search("rocket note 5 about fuel and engines 5", top_k=20, score_threshold=scores[5])
    assert high.ids == result.ids[: len(high.ids)] and all(h.normalized_score >= scores[5] for h in high.hits)
    with pytest.raises(InvalidArgumentError, match="score_threshold"):
        engine.search("rocket", score_threshold=1.5)


def test_pinned_ids_in_scope_are_always_in_the_result_and_out_of_scope_never() -> None:
    engine = _engine()
    plain = engine.search("orbit", top_k=5, filter={"session_id": [0, 1]})
    outside_top = next(i for i in sorted(TEXTS) if TEXTS[i][1]["session_id"] in (0, 1) and i not in plain.ids)
    out_of_scope = next(i for i in sorted(TEXTS) if TEXTS[i][1]["session_id"] == 2)
    result = engine.search("orbit", top_k=5, filter={"session_id": [0, 1]},
                           pinned_ids=[outside_top, out_of_scope, plain.ids[0], "missing"])
    assert len(result.hits) == 5 and outside_top in result.ids and out_of_scope not in result.ids
    pinned = {h.id for h in result.hits if h.metadata.get("rrf_pinned")}
    assert pinned == {outside_top, plain.ids[0]}
    excluded = engine.search("orbit", top_k=5, filter={"session_id": [0, 1]}, pinned_ids=[outside_top],
                             exclude_ids=[outside_top])
    assert outside_top not in excluded.ids  # an excluded id is out of scope too


def test_the_retriever_takes_the_stages_as_search_kwargs() -> None:
    r = EnsembleRRFRetriever.from_texts([TEXTS[i][0] for i in sorted(TEXTS)], HashingEmbedding(DIM),
                                        metadatas=[TEXTS[i][1] for i in sorted(TEXTS)], ids=sorted(TEXTS))
    page2 = r.invoke("rocket fuel", k=5, offset=5)
    assert [d.id for d in page2] == [h.id for h in r.search("rocket fuel", top_k=10).hits][5:10]
    docs = r.invoke("rocket fuel", k=3, pinned_ids=["d59"])
    assert "d59" in [d.id for d in docs] and all("rrf_score_normalized" in d.metadata for d in docs)
    nodes = r.scoped(score_threshold=0.5).retrieve("rocket fuel")
    assert all(n.node.metadata["rrf_score_normalized"] >= 0.5 for n in nodes)
    r.close()


def test_equal_scores_are_ordered_by_id_so_the_same_query_gives_the_same_answer() -> None:
    # Many documents with exactly the same text: every leg scores them equally, and a store may return such ties
    # in any order; the fused list (and so every page) must not change from call to call.
    embedding = HashingEmbedding(DIM)
    engine = HybridEngine({"dense": QdrantDenseStore(embedding), "keyword": FTS5KeywordStore()})
    ids = [f"t{i:02d}" for i in range(40)]
    engine.add(ids, ["certificate tls pin note"] * 40, [{"s": i % 3} for i in range(40)])
    answers = {tuple(engine.search("certificate", top_k=10).ids) for _ in range(8)}
    assert answers == {tuple(ids[:10])}
    assert engine.search("certificate", top_k=5, offset=5).ids == ids[5:10]


def test_each_legs_latency_ends_when_its_own_search_ends() -> None:
    """A leg that finishes first must not be timed until the caller collects the slower leg (the trace used to
    show the slower leg's time on every leg). Checked by instants recorded inside the legs, not by durations."""
    import threading
    import time

    from rrf_retriever.engine.legs import FunctionLeg
    from rrf_retriever.types import Hit

    fast_done = threading.Event()
    begins: dict[str, float] = {}
    ends: dict[str, float] = {}

    def fast(query: str, limit: int) -> list[Hit]:
        begins["fast"] = time.perf_counter()
        ends["fast"] = time.perf_counter()
        fast_done.set()
        return [Hit("a", score=1.0)]

    def slow(query: str, limit: int) -> list[Hit]:
        begins["slow"] = time.perf_counter()
        fast_done.wait(5)
        time.sleep(0.2)  # the slow leg ends well after the fast one
        ends["slow"] = time.perf_counter()
        return [Hit("b", score=1.0)]

    engine = HybridEngine({"slow": FunctionLeg(slow), "fast": FunctionLeg(fast)})  # the slow leg is collected first
    legs = {leg.name: leg for leg in engine.search("anything").trace.legs}
    # A leg is timed from its own start to its own end (the engine's instants bracket the ones the legs record):
    # the fast leg's time stops at its end, not when the caller collects the slower leg 200 ms later.
    assert legs["fast"].latency_ms / 1000 < ends["slow"] - begins["fast"] - 0.1
    assert legs["slow"].latency_ms / 1000 >= ends["slow"] - begins["slow"] - 0.001
    engine.close()
