"""Result stages on the engine (real FTS5 + qdrant-edge, hashing embedder): diversity
(MMR over stored vectors), the reranker, their order with pinned ids and paging, multi-path dense, the embedding
outage with only dense legs, and expand_limit."""

from __future__ import annotations

import asyncio
import tempfile
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever import HashingEmbedding
from rrf_retriever.engine import HybridEngine, RetrievalSettings
from rrf_retriever.engine.paths import UNSCOPED
from rrf_retriever.errors import EmbeddingError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore

DIM = 16
# Near-duplicates on purpose: five copies of each of six notes (the copies differ by one token).
TEXTS = {f"d{i:02d}": (f"rocket note {i // 5} about {'fuel' if (i // 5) % 2 else 'orbit'} engines copy{i % 5}",
                       {"session_id": i % 4, "links": [f"d{(i + 7) % 30:02d}"]}) for i in range(30)}
QUERY = "rocket fuel engines"


class CountingEmbedding(HashingEmbedding):
    """A real hashing embedder that counts its query calls and can be switched off (an outage)."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.query_calls = 0
        self.down = False

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        if self.down:
            msg = "embedding service unreachable"
            raise ConnectionError(msg)
        return super().embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


_ROOT = tempfile.TemporaryDirectory(prefix="rrf-stages-")  # removed when the test process ends


def _dense(embedding: Any = None) -> QdrantEdgeDenseStore:
    # qdrant-edge: its scores are the same from call to call (qdrant-client local mode's vary in the last bits,
    # which reorders equal-score ties between two calls and would make "page == slice" flaky).
    return QdrantEdgeDenseStore(embedding or HashingEmbedding(DIM), path=tempfile.mkdtemp(dir=_ROOT.name))


def _engine(embedding: Any = None, **kwargs: Any) -> HybridEngine:
    engine = HybridEngine({"dense": _dense(embedding), "keyword": FTS5KeywordStore()}, **kwargs)
    ids = sorted(TEXTS)
    engine.add(ids, [TEXTS[i][0] for i in ids], [TEXTS[i][1] for i in ids])
    return engine


@pytest.fixture(scope="module")
def engine() -> HybridEngine:
    return _engine(fetch_k=30)


def by_length(query: str, texts: list[str]) -> list[float]:
    """A plain reranker: longer text first (deterministic, easy to check)."""
    return [float(len(t)) for t in texts]


# ---- diversity -------------------------------------------------------------------------------------------------


def test_diversity_spreads_near_duplicates_and_lambda_one_is_the_fused_order(engine: HybridEngine) -> None:
    fused = engine.search(QUERY, top_k=8)
    groups = lambda ids: len({int(i[1:]) // 5 for i in ids})  # noqa: E731 - which note each copy is of
    diverse = engine.search(QUERY, top_k=8, diversity=0.3)
    assert groups(diverse.ids) > groups(fused.ids)
    assert diverse.trace.stage_counts["diversity_vectors"] == diverse.trace.stage_counts["diversity_pool"] > 8
    assert "diversity" in diverse.trace.stages_ms
    assert diverse.ids[0] == fused.ids[0]  # the first pick is the most relevant
    assert [h.score for h in diverse.hits] != sorted((h.score for h in diverse.hits), reverse=True)
    assert engine.search(QUERY, top_k=8, diversity=1.0).ids == fused.ids
    with pytest.raises(InvalidArgumentError, match="diversity"):
        engine.search(QUERY, diversity=1.5)
    with pytest.raises(InvalidTypeError, match="diversity"):
        engine.search(QUERY, diversity="high")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lam=st.floats(0, 1), top_k=st.integers(1, 12), offset=st.integers(0, 12),
       query=st.sampled_from([QUERY, "orbit note", "copy3 engines", "note 4"]))
def test_diversity_pages_are_slices_of_one_list_drawn_from_the_fused_pool(
        engine: HybridEngine, lam: float, top_k: int, offset: int, query: str) -> None:
    whole = engine.search(query, top_k=offset + top_k, diversity=lam)
    page = engine.search(query, top_k=top_k, offset=offset, diversity=lam)
    assert page.ids == whole.ids[offset:offset + top_k]
    pool = set(engine.search(query, top_k=30).ids)  # fetch_k=30: the fused pool
    assert set(page.ids) <= pool and len(set(page.ids)) == len(page.ids)


def test_a_candidate_without_a_stored_vector_is_kept_and_never_judged_redundant() -> None:
    from rrf_retriever.engine import FunctionLeg
    from rrf_retriever.types import Hit

    foreign = FunctionLeg(lambda q, n: [Hit("ext-1", "rocket fuel engines external", {}, 1.0)])
    engine = HybridEngine({"dense": _dense(), "keyword": FTS5KeywordStore(), "web": foreign})
    ids = sorted(TEXTS)
    engine.add(ids, [TEXTS[i][0] for i in ids], [TEXTS[i][1] for i in ids])
    result = engine.search(QUERY, top_k=30, diversity=0.2)
    assert "ext-1" in result.ids
    assert result.trace.stage_counts["diversity_vectors"] == result.trace.stage_counts["diversity_pool"] - 1


# ---- reranker --------------------------------------------------------------------------------------------------


def test_a_plain_reranker_reorders_rerank_k_candidates_and_keeps_the_fused_score(engine: HybridEngine) -> None:
    fused = engine.search(QUERY, top_k=30)
    result = engine.search(QUERY, top_k=5, reranker=by_length, rerank_k=12)
    head = fused.hits[:12]
    expected = sorted(head, key=lambda h: -len(h.text))[:5]  # stable: ties keep the fused order
    assert result.ids == [h.id for h in expected]
    assert [h.metadata["rrf_rerank_score"] for h in result.hits] == [float(len(h.text)) for h in expected]
    scores = {h.id: h.score for h in fused.hits}
    assert all(h.score == scores[h.id] and h.ranks for h in result.hits)  # fused score and ranks stay
    assert result.trace.stage_counts["reranked"] == 12 and "rerank" in result.trace.stages_ms


def test_rerank_k_default_and_pages_past_the_reranked_head_follow_the_fused_order(engine: HybridEngine) -> None:
    seen: list[int] = []

    def spy(query: str, texts: list[str]) -> list[float]:
        seen.append(len(texts))
        return by_length(query, texts)

    engine.search(QUERY, top_k=5, reranker=spy)
    assert seen == [20]  # max(2 * top_k, 20)
    fused = engine.search(QUERY, top_k=30).ids
    whole = engine.search(QUERY, top_k=30, reranker=by_length, rerank_k=6).ids
    assert sorted(whole[:6]) == sorted(fused[:6]) and whole[6:] == fused[6:]
    assert engine.search(QUERY, top_k=5, offset=5, reranker=by_length, rerank_k=6).ids == whole[5:10]


def test_a_reranker_that_raises_degrades_to_the_fused_order_or_raises() -> None:
    def broken(query: str, texts: list[str]) -> list[float]:
        msg = "reranker model not loaded"
        raise RuntimeError(msg)

    engine = _engine()
    fused = engine.search(QUERY, top_k=5)
    with pytest.warns(RuntimeWarning, match="reranker failed"):
        result = engine.search(QUERY, top_k=5, reranker=broken)
    assert result.ids == fused.ids and result.trace.degraded
    assert any("reranker model not loaded" in w for w in result.trace.warnings)
    with pytest.warns(RuntimeWarning, match="returned 1 score"):
        bad = engine.search(QUERY, top_k=5, reranker=lambda q, texts: [1.0])
    assert bad.ids == fused.ids
    engine.update_settings(on_error="raise")
    with pytest.raises(RuntimeError, match="not loaded"):
        engine.search(QUERY, reranker=broken)
    with pytest.raises(RuntimeError, match="not loaded"):
        asyncio.run(engine.asearch(QUERY, reranker=broken))
    with pytest.raises(InvalidTypeError, match="reranker"):
        engine.search(QUERY, reranker="cross-encoder")


def test_a_hit_reranker_may_drop_candidates_but_never_a_pinned_one(engine: HybridEngine) -> None:
    class KeepOdd:
        def rerank_hits(self, query: str, hits: list[Any]) -> list[tuple[str, float]]:
            return [(h.id, 1.0) for h in reversed(hits) if int(h.id[1:]) % 2]

    fused = engine.search(QUERY, top_k=30)
    pinned = next(i for i in fused.ids[:4] if int(i[1:]) % 2 == 0)
    result = engine.search(QUERY, top_k=6, reranker=KeepOdd(), rerank_k=10, pinned_ids=[pinned])
    assert pinned in result.ids and result.hits[result.ids.index(pinned)].metadata["rrf_pinned"]
    kept = [i for i in result.ids if i != pinned]
    assert all(int(i[1:]) % 2 for i in kept)
    assert kept[:5] == [i for i in reversed(fused.ids[:10]) if int(i[1:]) % 2][:5]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top_k=st.integers(1, 8), lam=st.one_of(st.none(), st.floats(0, 1)), rerank=st.booleans(),
       pinned=st.lists(st.sampled_from(sorted(TEXTS)), min_size=1, max_size=3, unique=True))
def test_pinned_ids_stay_on_the_first_page_through_diversity_and_the_reranker(
        engine: HybridEngine, top_k: int, lam: float | None, rerank: bool, pinned: list[str]) -> None:
    result = engine.search(QUERY, top_k=top_k, diversity=lam, reranker=by_length if rerank else None,
                           rerank_k=5, pinned_ids=pinned)
    assert set(pinned[:top_k]) <= set(result.ids) or len(pinned) > top_k
    assert len(result.ids) <= top_k and len(set(result.ids)) == len(result.ids)


def test_async_stages_match_sync(engine: HybridEngine) -> None:
    kwargs: dict[str, Any] = {"top_k": 6, "diversity": 0.4, "reranker": by_length, "rerank_k": 8}
    assert asyncio.run(engine.asearch(QUERY, **kwargs)).ids == engine.search(QUERY, **kwargs).ids


# ---- settings --------------------------------------------------------------------------------------------------


def test_the_stages_are_settings_too_and_to_dict_stays_json() -> None:
    import json

    engine = _engine()
    per_call = engine.search(QUERY, top_k=5, diversity=0.3, reranker=by_length, rerank_k=8).ids
    new = engine.update_settings(diversity=0.3, reranker=by_length, rerank_k=8)
    assert engine.search(QUERY, top_k=5).ids == per_call
    view = new.to_dict()
    assert view["reranker"].endswith(":by_length") and json.loads(json.dumps(view))["rerank_k"] == 8
    assert engine.search(QUERY, top_k=5, reranker=False, diversity=1.0).ids == engine.search(
        QUERY, top_k=5, reranker=False, diversity=1.0).ids
    for bad in ({"diversity": -1}, {"rerank_k": 0}, {"reranker": 42}, {"expand_limit": 0},
                {"dense_paths": {"all": {"$bogus": 1}}}, {"dense_paths": ["all"]}):
        with pytest.raises((InvalidArgumentError, InvalidTypeError)):
            engine.update_settings(**bad)
    assert engine.settings.diversity == 0.3  # a refused change leaves the settings as they were
    assert RetrievalSettings(weights={"dense": 1.0}).to_dict()["dense_paths"] == {}


# ---- seed gaps -------------------------------------------------------------------------------------------------


def test_an_embedding_outage_with_only_dense_legs_answers_no_hits_degraded() -> None:
    embedding = CountingEmbedding(DIM)
    engine = _engine(embedding)
    embedding.down = True
    with pytest.warns(RuntimeWarning, match="embedding"):
        result = engine.search(QUERY, weights={"keyword": 0.0})
    assert result.hits == [] and result.trace.degraded
    with pytest.warns(RuntimeWarning, match="embedding"):
        assert asyncio.run(engine.asearch(QUERY, weights={"keyword": 0.0})).hits == []
    with pytest.warns(RuntimeWarning, match="embedding"):  # with the keyword leg on, it answers alone
        assert engine.search(QUERY).ids
    engine.update_settings(on_error="raise")
    with pytest.raises((ConnectionError, EmbeddingError)):
        engine.search(QUERY, weights={"keyword": 0.0})


def test_dense_paths_embed_once_and_tag_each_path_in_the_ranks() -> None:
    embedding = CountingEmbedding(DIM)
    engine = _engine(embedding)
    embedding.query_calls = 0
    result = engine.search(QUERY, top_k=30, filter={"session_id": 1}, dense_paths={"dense_all": UNSCOPED})
    assert embedding.query_calls == 1
    sources = {s for h in result.hits for s in h.ranks}
    assert sources == {"dense", "dense_all", "keyword"}
    outside = [h for h in result.hits if h.metadata["session_id"] != 1]
    assert outside and all(set(h.ranks) == {"dense_all"} for h in outside)  # only the UNSCOPED path reaches them
    assert result.trace.weights["dense_all"] == 1.0
    within = engine.search(QUERY, top_k=30, filter={"session_id": 1}, dense_paths={"dense_all": None})
    assert {h.metadata["session_id"] for h in within.hits} == {1}  # None: the query's scope alone
    scoped = engine.search(QUERY, top_k=30, filter={"session_id": 1}, dense_paths={"s2": {"session_id": 2}},
                           weights={"s2": 0.5}, exclude_ids=["d02"])
    assert {h.metadata["session_id"] for h in scoped.hits} == {1} and "d02" not in scoped.ids  # s2 narrows to none
    assert "s2" not in {s for h in scoped.hits for s in h.ranks}
    assert scoped.trace.weights["s2"] == 0.5
    plain = engine.search(QUERY, top_k=30, filter={"session_id": 1})
    assert {h.metadata["session_id"] for h in plain.hits} == {1}  # no path named: the filter holds
    with pytest.raises(InvalidArgumentError, match="source names"):
        engine.search(QUERY, dense_paths={"keyword": None})
    engine.update_settings(dense_paths={"dense_all": None}, weights={"dense_all": 0.25})
    assert engine.search(QUERY, filter={"session_id": 1}).trace.weights["dense_all"] == 0.25


def test_expand_limit_caps_the_neighbours_and_is_traced() -> None:
    engine = _engine(links_key="links", top_k=4)
    result = engine.search(QUERY)
    neighbours = [h for h in result.hits if "rrf_expanded_from" in h.metadata]
    assert len(result.hits) == 4 and "expand" in result.trace.stages_ms  # neighbours take slots within top_k
    assert result.trace.stage_counts["expanded"] == len(neighbours) >= 1
    assert engine.search(QUERY, expand_limit=1).trace.stage_counts["expanded"] == 1
    engine.update_settings(expand_limit=1)
    assert len(engine.search(QUERY).hits) == 4 and engine.search(QUERY).trace.stage_counts["expanded"] == 1
    with pytest.raises(InvalidArgumentError, match="expand_limit"):
        engine.search(QUERY, expand_limit=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert engine.search(QUERY).trace.degraded is False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scores=st.lists(st.floats(-5, 5, allow_nan=False), min_size=30, max_size=30),
       keep=st.lists(st.booleans(), min_size=30, max_size=30), rerank_k=st.integers(1, 30),
       top_k=st.integers(1, 10), lam=st.one_of(st.none(), st.floats(0, 1)))
def test_the_result_is_always_drawn_from_the_fused_pool(engine: HybridEngine, scores: list[float], keep: list[bool],
                                                       rerank_k: int, top_k: int, lam: float | None) -> None:
    class Arbitrary:
        """Any order, any drops, and ids that are not candidates (ignored)."""

        def rerank_hits(self, query: str, hits: list[Any]) -> list[tuple[str, float]]:
            ranked = sorted(((h.id, scores[i]) for i, h in enumerate(hits) if keep[i]), key=lambda p: -p[1])
            return [("not-a-candidate", 9.0), *ranked, ranked[0] if ranked else ("x", 0.0)]

    pool = engine.search(QUERY, top_k=30).ids
    result = engine.search(QUERY, top_k=top_k, diversity=lam, reranker=Arbitrary(), rerank_k=rerank_k)
    assert set(result.ids) <= set(pool) and len(set(result.ids)) == len(result.ids) <= top_k
    dropped = {h for i, h in enumerate(pool[:rerank_k]) if not keep[i]} if lam is None else set()
    assert not set(result.ids) & dropped


def test_an_outage_of_a_plain_embedding_callable_with_the_keyword_weight_at_zero() -> None:
    hashing = HashingEmbedding(DIM)
    state = {"down": False}

    def embed(texts: list[str]) -> list[list[float]]:
        if state["down"]:
            msg = "HTTP 503 from the embedding API"
            raise ConnectionError(msg)
        return hashing.embed_documents(texts)

    engine = _engine(embed, weights={"keyword": 0.0})
    assert engine.search(QUERY).ids
    state["down"] = True
    with pytest.warns(RuntimeWarning, match="503"):
        result = engine.search(QUERY)
    assert result.hits == [] and result.trace.degraded
    assert [leg.note for leg in result.trace.legs if leg.name == "dense"] == ["no embedding"]
