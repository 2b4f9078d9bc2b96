"""The framework-neutral engine on real stores: SQLite FTS5, in-memory BM25, Qdrant local mode.

Plumbing tests use the deterministic hashing embedder; nothing here speaks about retrieval quality.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import (
    DEFAULT_LEG_WEIGHTS,
    MIN_FETCH_K,
    FunctionLeg,
    HeadStart,
    HybridEngine,
    Leg,
    RetrievalSettings,
)
from rrf_retriever.errors import (
    AllLegsFailedError,
    EmbeddingError,
    FilterError,
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
)
from rrf_retriever.fusion import DEFAULT_RRF_K, weighted_rrf
from rrf_retriever.scope.tree import Match
from rrf_retriever.stores.base import SearchRequest
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore
from rrf_retriever.types import Hit

DOCS = {
    "pw": ("How to reset your password from the login page", {"session_id": 1, "kind": "doc"}),
    "e401": ("Error E401 unauthorized: the API token expired", {"session_id": 1, "kind": "ticket"}),
    "sso": ("Single sign-on with SAML and OIDC providers", {"session_id": 2, "kind": "doc"}),
    "2fa": ("Two-factor authentication codes and recovery keys", {"session_id": 2, "kind": "doc"}),
    "sync": ("File synchronisation halts when the disk is full", {"session_id": 3, "kind": "ticket"}),
    "fts5": ("Configure the FTS5 keyword index and its tokenizer", {"session_id": 3, "kind": "doc"}),
}


class CountingEmbedding(HashingEmbedding):
    """The hashing embedder, counting query embeddings (to prove the query is embedded once)."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim)
        self.query_calls = 0

    def embed_query(self, text: str) -> list[float]:
        self.query_calls += 1
        return super().embed_query(text)


class FailingEmbedding(HashingEmbedding):
    """Embeds documents, fails on queries: the embedding service going down after indexing."""

    def _embed_one_query(self, text: str) -> list[float]:
        msg = "embedding service unavailable"
        raise ConnectionError(msg)


class ExplodingLeg(Leg):
    """A source that fails the test if it is ever called."""

    kind = "retriever"

    def search(self, request):  # type: ignore[no-untyped-def]
        msg = "a zero-weight leg must never be called"
        raise AssertionError(msg)


class RecordingLeg(Leg):
    """Returns fixed hits and records what the engine asked for."""

    kind = "retriever"

    def __init__(self, hits: Sequence[Hit] = ()) -> None:
        self.hits = list(hits)
        self.calls: list[dict[str, Any]] = []

    def search(self, request):  # type: ignore[no-untyped-def]
        self.calls.append({"query": request.query, "limit": request.limit, "filter": request.scope.filter,
                           "exclude_ids": request.scope.exclude_ids})
        return [h for h in self.hits if h.id not in request.scope.exclude_ids][:request.limit]


class RaisingLeg(Leg):
    kind = "retriever"

    def search(self, request):  # type: ignore[no-untyped-def]
        msg = "store is down"
        raise ConnectionError(msg)


class HangingLeg(Leg):
    kind = "retriever"

    def __init__(self) -> None:
        self.release = threading.Event()

    def search(self, request):  # type: ignore[no-untyped-def]
        self.release.wait(10)
        return []


def _stores(embedding: Any = None) -> tuple[QdrantDenseStore, FTS5KeywordStore]:
    return QdrantDenseStore(embedding or HashingEmbedding(32), location=":memory:"), FTS5KeywordStore(":memory:")


def _engine(embedding: Any = None, **kwargs: Any) -> HybridEngine:
    dense, keyword = _stores(embedding)
    engine = HybridEngine({"dense": dense, "keyword": keyword}, **kwargs)
    ids = list(DOCS)
    engine.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
    return engine


# ---- the zero-weight guard and the plan -----------------------------------------------------------------


def test_a_zero_weight_leg_is_never_called_and_cannot_add_documents() -> None:
    engine = _engine()
    engine2 = HybridEngine({**engine.legs, "ghost": ExplodingLeg()}, {"ghost": 0.0})
    result = engine2.search("reset password")
    ghost = next(t for t in result.trace.legs if t.name == "ghost")
    assert not ghost.called and ghost.note == "weight 0"
    assert result.ids == engine.search("reset password").ids


def test_weight_zero_on_the_keyword_leg_hides_documents_only_it_found() -> None:
    dense = RecordingLeg([Hit("a", score=0.9)])
    keyword = RecordingLeg([Hit("k-only", score=5.0), Hit("a", score=1.0)])
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    assert set(engine.search("q").ids) == {"a", "k-only"}
    assert engine.search("q", weights={"keyword": 0}).ids == ["a"]
    assert len(keyword.calls) == 1  # the second query did not call it


def test_a_zero_weight_leg_is_never_called_and_all_zero_weights_are_refused() -> None:
    engine = HybridEngine({"a": ExplodingLeg(), "b": FunctionLeg(lambda query, limit: [])}, {"a": 0})
    result = engine.search("anything")
    assert result.hits == [] and [t.called for t in result.trace.legs] == [False, True]
    with pytest.raises(InvalidArgumentError, match="nothing would be searched"):
        engine.search("anything", weights={"b": 0})


def test_query_is_embedded_once_for_dense_legs_sharing_a_model() -> None:
    embedding = CountingEmbedding()
    d1 = QdrantDenseStore(embedding, location=":memory:", collection_name="one")
    d2 = QdrantDenseStore(embedding, location=":memory:", collection_name="two")
    engine = HybridEngine({"d1": d1, "d2": d2, "kw": FTS5KeywordStore()})
    engine.add(["a", "b"], ["alpha text", "beta text"])
    embedding.query_calls = 0
    result = engine.search("alpha")
    assert embedding.query_calls == 1
    assert {t.name for t in result.trace.legs if t.called} == {"d1", "d2", "kw"}


def test_no_embedding_when_no_dense_leg_is_active() -> None:
    embedding = CountingEmbedding()
    engine = _engine(embedding, weights={"dense": 0.0})
    embedding.query_calls = 0
    engine.search("password")
    assert embedding.query_calls == 0


def test_all_stopword_query_runs_dense_only() -> None:
    result = _engine().search("the of and")
    legs = {t.name: t for t in result.trace.legs}
    assert legs["keyword"].called is False and "no keyword term" in (legs["keyword"].note or "")
    assert legs["dense"].called and result.hits
    assert all(set(h.ranks) == {"dense"} for h in result.hits)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_returns_nothing(query: str) -> None:
    engine = HybridEngine({"x": ExplodingLeg()})
    assert engine.search(query).hits == []
    assert asyncio.run(engine.asearch(query)).hits == []


# ---- headroom, scope, concurrency -----------------------------------------------------------------------


def test_each_leg_fetches_twice_top_k_but_at_least_min_fetch_k_by_default_and_fetch_k_when_set() -> None:
    leg = RecordingLeg([Hit(f"d{i}") for i in range(100)])
    engine = HybridEngine({"a": leg}, top_k=7)
    assert len(engine.search("q").hits) == 7
    assert leg.calls[-1]["limit"] == MIN_FETCH_K
    engine.search("q", top_k=30)
    assert leg.calls[-1]["limit"] == 60
    engine.update_settings(fetch_k=30)
    engine.search("q")
    assert leg.calls[-1]["limit"] == 30


def test_filter_and_exclusions_are_pushed_into_every_leg() -> None:
    leg = RecordingLeg([Hit("a"), Hit("b")])
    engine = HybridEngine({"a": leg})
    engine.search("q", filter={"session_id": [2, 1]}, exclude_ids=["b"])
    call = leg.calls[-1]
    assert call["filter"] == Match("session_id", (2, 1))  # the normalized filter tree (rrf_retriever.scope.tree)
    assert call["exclude_ids"] == frozenset({"b"})


def test_scope_holds_on_real_stores() -> None:
    engine = _engine()
    result = engine.search("password token sign-on authentication", filter={"session_id": [1]}, exclude_ids=["pw"])
    assert result.ids == ["e401"]
    for leg in ("dense", "keyword"):
        only = engine.search("password token", filter={"session_id": 2}, weights={"dense": 1.0, "keyword": 1.0,
                                                                                  leg: 1.0})
        assert all(DOCS[i][1]["session_id"] == 2 for i in only.ids)


def test_sync_legs_run_concurrently() -> None:
    """Two legs that each wait for the other: only concurrent execution lets both finish."""
    barrier = threading.Barrier(2, timeout=5)

    class MeetingLeg(Leg):
        def __init__(self, doc: str) -> None:
            self.doc = doc

        def search(self, request):  # type: ignore[no-untyped-def]
            barrier.wait()
            return [Hit(self.doc)]

    engine = HybridEngine({"a": MeetingLeg("x"), "b": MeetingLeg("y")}, on_error="raise")
    assert sorted(engine.search("q").ids) == ["x", "y"]


def test_async_legs_run_concurrently() -> None:
    class AsyncMeetingLeg(Leg):
        def __init__(self, doc: str, event: asyncio.Event, other: asyncio.Event) -> None:
            self.doc, self.event, self.other = doc, event, other

        async def asearch(self, request):  # type: ignore[no-untyped-def]
            self.event.set()
            await asyncio.wait_for(self.other.wait(), 5)
            return [Hit(self.doc)]

    async def main() -> list[str]:
        e1, e2 = asyncio.Event(), asyncio.Event()
        engine = HybridEngine({"a": AsyncMeetingLeg("x", e1, e2), "b": AsyncMeetingLeg("y", e2, e1)},
                              on_error="raise")
        return (await engine.asearch("q")).ids

    assert sorted(asyncio.run(main())) == ["x", "y"]


def test_async_search_matches_sync_search() -> None:
    engine = _engine()
    for query in ["reset password", "E401 token", "disk full synchronisation", "fts5"]:
        sync = engine.search(query, filter={"session_id": [1, 2, 3]})
        asyn = asyncio.run(engine.asearch(query, filter={"session_id": [1, 2, 3]}))
        assert [(h.id, h.score) for h in sync.hits] == [(h.id, h.score) for h in asyn.hits]


def test_fusion_is_weighted_rrf_of_the_legs() -> None:
    engine = _engine()
    vector = engine.legs["dense"].embedding.embed_query("token expired")
    dense_hits = engine.legs["dense"].search(SearchRequest("dense", "token expired", vector, 20))
    keyword_hits = engine.legs["keyword"].search(SearchRequest("keyword", "token expired", None, 20))
    expected = weighted_rrf({"dense": dense_hits, "keyword": keyword_hits}, {"dense": 1.0, "keyword": 0.5},
                            k=30, limit=10)
    engine.update_settings(weights={"keyword": 0.5}, rrf_k=30)
    got = engine.search("token expired").hits
    assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in expected]


class _MeetingFTS5(FTS5KeywordStore):
    """FTS5 that, once called, waits (bounded) to see the dense leg start: it records whether the legs overlapped."""

    def __init__(self, dense_started: threading.Event) -> None:
        super().__init__(":memory:")
        self.entered = threading.Event()
        self.dense_started = dense_started
        self.saw_dense_while_running = False

    def search_request(self, *args: Any, **kwargs: Any) -> list[Hit]:
        self.entered.set()
        self.saw_dense_while_running = self.dense_started.wait(10)
        return super().search_request(*args, **kwargs)


class _GilHoldingDense(QdrantDenseStore):
    """A dense store that declares it keeps the GIL while searching (as qdrant-edge-py 0.9 does)."""

    holds_gil = True

    def __init__(self, keyword_entered: threading.Event | None = None) -> None:
        super().__init__(HashingEmbedding(32), location=":memory:")
        self.keyword_entered = keyword_entered
        self.started = threading.Event()
        self.keyword_was_called_first: list[bool] = []

    def search_request(self, *args: Any, **kwargs: Any) -> list[Hit]:
        if self.keyword_entered is not None:
            self.keyword_was_called_first.append(self.keyword_entered.is_set())
        self.started.set()
        return super().search_request(*args, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_gil_holding_leg_starts_after_the_others_and_still_overlaps_them(mode: str) -> None:
    dense = _GilHoldingDense()
    keyword = _MeetingFTS5(dense.started)
    dense.keyword_entered = keyword.entered
    # A generous bound on waiting for the pool to pick the keyword leg up, so a slow CI thread start cannot make
    # the engine give up on the head start (which it does, by design, when the pool is saturated).
    engine = HybridEngine({"dense": dense, "keyword": keyword}, head_start=HeadStart(start_wait=5.0))
    ids = list(DOCS)
    engine.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
    result = engine.search("password") if mode == "sync" else asyncio.run(engine.asearch("password"))
    assert result.ids
    if mode == "sync":
        # Started after the keyword leg was called (so it cannot stall that leg's way into SQLite); the async
        # path gives the same head start by time (an asyncio task cannot see its thread start).
        assert dense.keyword_was_called_first == [True]
    # Never waiting for the keyword leg to finish: the keyword leg saw the dense leg start while it was running.
    assert keyword.saw_dense_while_running


def test_default_weights_and_rrf_k_are_the_tuned_ones_and_explicit_values_win() -> None:
    dense, keyword = _stores()
    extra = FunctionLeg(lambda query, limit: [])
    engine = HybridEngine({"dense": dense, "keyword": keyword, "extra": extra})
    assert dict(engine.settings.weights) == {"dense": 1.0, "keyword": DEFAULT_LEG_WEIGHTS["keyword"], "extra": 1.0}
    assert engine.settings.rrf_k == DEFAULT_RRF_K
    explicit = HybridEngine({"dense": dense, "keyword": keyword}, {"keyword": 1.0}, rrf_k=60)
    assert dict(explicit.settings.weights) == {"dense": 1.0, "keyword": 1.0} and explicit.settings.rrf_k == 60


# ---- degrade, don't crash -------------------------------------------------------------------------------


def test_embedding_failure_degrades_to_keyword_results_with_a_warning() -> None:
    engine = _engine(FailingEmbedding(32))
    with pytest.warns(RuntimeWarning, match="embedding failed"):
        result = engine.search("reset password")
    assert result.ids and all(set(h.ranks) == {"keyword"} for h in result.hits)
    dense = next(t for t in result.trace.legs if t.name == "dense")
    assert dense.error and "unavailable" in dense.error and result.trace.degraded
    with pytest.warns(RuntimeWarning):
        assert asyncio.run(engine.asearch("reset password")).ids == result.ids


def test_a_raising_leg_is_dropped_or_reraised() -> None:
    good = RecordingLeg([Hit("a")])
    engine = HybridEngine({"good": good, "bad": RaisingLeg()})
    with pytest.warns(RuntimeWarning, match="bad"):
        result = engine.search("q")
    assert result.ids == ["a"]
    assert next(t for t in result.trace.legs if t.name == "bad").error == "ConnectionError: store is down"
    engine.update_settings(on_error="raise")
    with pytest.raises(ConnectionError):
        engine.search("q")
    with pytest.raises(ConnectionError):
        asyncio.run(engine.asearch("q"))


def test_a_hanging_leg_is_dropped_after_leg_timeout() -> None:
    hanging = HangingLeg()
    engine = HybridEngine({"good": RecordingLeg([Hit("a")]), "slow": hanging}, leg_timeout=0.2)
    try:
        with pytest.warns(RuntimeWarning, match="timed out"):
            assert engine.search("q").ids == ["a"]
        # asyncio.run() joins its worker threads on exit: let the hung thread go shortly after the timeout.
        threading.Timer(0.6, hanging.release.set).start()
        with pytest.warns(RuntimeWarning, match="timed out"):
            assert asyncio.run(engine.asearch("q")).ids == ["a"]
    finally:
        hanging.release.set()


def test_a_hanging_embedding_is_dropped_after_leg_timeout() -> None:
    release = threading.Event()

    class HangingEmbedding(HashingEmbedding):
        def _embed_one_query(self, text: str) -> list[float]:
            release.wait(10)
            return HashingEmbedding(32).embed_query(text)  # never read: the leg timed out

    engine = _engine(HangingEmbedding(32), leg_timeout=0.2)
    try:
        with pytest.warns(RuntimeWarning, match="timed out"):
            result = engine.search("password")
        assert result.ids and all(set(h.ranks) == {"keyword"} for h in result.hits)
    finally:
        release.set()


def test_every_leg_failing_is_an_error() -> None:
    engine = HybridEngine({"a": RaisingLeg(), "b": RaisingLeg()})
    with pytest.raises(AllLegsFailedError, match="store is down"):
        engine.search("q")


# ---- settings -------------------------------------------------------------------------------------------


def test_settings_are_an_immutable_validated_snapshot() -> None:
    engine = HybridEngine({"a": RecordingLeg(), "b": RecordingLeg()})
    before = engine.settings
    with pytest.raises(Exception):  # noqa: B017 - frozen dataclass
        before.top_k = 3  # type: ignore[misc]
    for bad in [{"top_k": 0}, {"top_k": 10**9}, {"rrf_k": -1}, {"rrf_k": float("nan")},
                {"weights": {"a": float("inf")}}, {"weights": {"zzz": 1.0}}, {"on_error": "ignore"},
                {"fusion": "magic"}, {"leg_timeout": 0}, {"nonsense": 1}]:
        with pytest.raises((InvalidArgumentError, InvalidTypeError)):
            engine.update_settings(**bad)
        assert engine.settings is before
    after = engine.update_settings(weights={"b": 0.25}, top_k=3)
    assert dict(after.weights) == {"a": 1.0, "b": 0.25} and after.top_k == 3
    assert engine.settings is after and before.top_k == 10


def test_every_query_sees_one_settings_snapshot_under_concurrent_updates() -> None:
    leg_a = RecordingLeg([Hit(f"a{i}") for i in range(5)])
    leg_b = RecordingLeg([Hit(f"b{i}") for i in range(5)])
    engine = HybridEngine({"a": leg_a, "b": leg_b})
    snapshots = [{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 1.0}, {"a": 0.5, "b": 0.5}]
    stop = threading.Event()
    errors: list[str] = []

    def flip() -> None:
        i = 0
        while not stop.is_set():
            engine.update_settings(weights=snapshots[i % 3], top_k=3 + i % 3)
            i += 1

    def query() -> None:
        for _ in range(300):
            r = engine.search("q")
            w = dict(r.trace.weights)
            if w not in snapshots:
                errors.append(f"mixed weights {w}")
            live = {s for s, x in w.items() if x > 0}
            if any(not set(h.ranks) <= live for h in r.hits):
                errors.append("a hit from a leg outside the snapshot")
            if len(r.hits) != r.trace.top_k and len(r.hits) != 5 * len(live):
                errors.append(f"{len(r.hits)} hits for top_k {r.trace.top_k}")

    flipper = threading.Thread(target=flip)
    flipper.start()
    readers = [threading.Thread(target=query) for _ in range(4)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    flipper.join()
    assert errors == []


def test_retrieval_settings_fetch_k() -> None:
    s = RetrievalSettings(weights={"a": 1.0}, top_k=5)
    assert s.effective_fetch_k(5) == MIN_FETCH_K and s.effective_fetch_k(MIN_FETCH_K) == 2 * MIN_FETCH_K
    with pytest.raises(InvalidArgumentError, match=r"fetch_k \(3\) is below top_k \(5\)"):
        RetrievalSettings(weights={"a": 1.0}, top_k=5, fetch_k=3)  # refused: it would never be used
    s2 = RetrievalSettings(weights={"a": 1.0}, top_k=5, fetch_k=5)
    assert s2.effective_fetch_k(8) == 8  # a query asking more than fetch_k still fetches its top_k


# ---- bad input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"query": None}, InvalidTypeError, "query"),
        ({"query": b"bytes"}, InvalidTypeError, "query"),
        ({"query": 42}, InvalidTypeError, "query"),
        ({"query": "q", "top_k": 0}, InvalidArgumentError, "top_k"),
        ({"query": "q", "top_k": 10**9}, InvalidArgumentError, "top_k"),
        ({"query": "q", "top_k": "3"}, InvalidTypeError, "top_k"),
        ({"query": "q", "weights": {"dense": float("nan")}}, InvalidArgumentError, "dense"),
        ({"query": "q", "weights": {"dense": -1}}, InvalidArgumentError, "dense"),
        ({"query": "q", "weights": {"unknown": 1}}, InvalidArgumentError, "unknown"),
        ({"query": "q", "filter": {"bad key!": 1}}, FilterError, "filter key"),
        ({"query": "q", "filter": {"k": 1.5}}, FilterError, "filter value"),
        ({"query": "q", "exclude_ids": "single-string"}, InvalidTypeError, "exclude_ids"),
    ],
)
def test_bad_search_arguments_raise_our_errors_naming_the_field(kwargs: dict, error: type, field: str) -> None:
    engine = HybridEngine({"dense": RecordingLeg(), "keyword": RecordingLeg()})
    query = kwargs.pop("query")
    with pytest.raises(error, match=field):
        engine.search(query, **kwargs)


def test_bad_engine_construction() -> None:
    with pytest.raises(InvalidArgumentError):
        HybridEngine({})
    with pytest.raises(InvalidTypeError):
        HybridEngine({"x": object()})
    with pytest.raises(InvalidArgumentError, match="unknown source"):
        HybridEngine({"x": RecordingLeg()}, {"y": 1.0})
    # a name that is not a string is one more unknown source, named, not a TypeError of sorting mixed names
    with pytest.raises(InvalidArgumentError, match=r"unknown source\(s\) \[1, 'y'\]; the sources are \['x'\]"):
        HybridEngine({"x": RecordingLeg()}, {1: 1.0, "y": 1.0})  # type: ignore[dict-item]


# ---- writes: all stores or none -------------------------------------------------------------------------


class FlakyFTS5(FTS5KeywordStore):
    """A real FTS5 store whose next add fails once armed (a disk-full or lock error in the middle of a write)."""

    armed = False

    def add(self, ids, texts, metadatas=None):  # type: ignore[no-untyped-def]
        if self.armed:
            msg = "database or disk is full"
            raise OSError(msg)
        return super().add(ids, texts, metadatas)


def test_a_failing_store_rolls_the_others_back() -> None:
    dense = QdrantDenseStore(HashingEmbedding(32), location=":memory:")
    keyword = FlakyFTS5(":memory:")
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    engine.add(["a", "b"], ["old a", "old b"], [{"v": 1}, {"v": 1}])
    keyword.armed = True
    with pytest.raises(StoreError, match="rolled back"):
        engine.add(["b", "c"], ["new b", "new c"], [{"v": 2}, {"v": 2}])
    # Nothing changed anywhere: c is in no store, b is the old b in both.
    for store in (dense, keyword):
        records = {r.id: r for r in store.get(["a", "b", "c"])}
        assert set(records) == {"a", "b"}
        assert records["b"].text == "old b" and records["b"].metadata == {"v": 1}
    assert engine.search("new").ids == [] or "c" not in engine.search("new").ids


def test_a_failing_embedding_writes_nothing() -> None:
    class BrokenDocs(HashingEmbedding):
        def _embed_batch(self, texts):  # type: ignore[no-untyped-def]
            msg = "model crashed"
            raise RuntimeError(msg)

    dense = QdrantDenseStore(BrokenDocs(32), location=":memory:")
    keyword = FTS5KeywordStore(":memory:")
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    with pytest.raises(EmbeddingError, match="nothing was written"):
        engine.add(["a"], ["text"])
    assert keyword.count() == 0


def test_delete_reaches_every_store() -> None:
    engine = _engine()
    engine.delete(["pw", "missing-id"])
    assert engine.count() == {"dense": len(DOCS) - 1, "keyword": len(DOCS) - 1}
    assert "pw" not in engine.search("reset password").ids


def test_upsert_keeps_stores_in_step() -> None:
    engine = _engine()
    engine.add(["pw"], ["Reset a forgotten passphrase"], [{"session_id": 9}])
    assert engine.count() == {"dense": len(DOCS), "keyword": len(DOCS)}
    assert engine.search("passphrase", filter={"session_id": 9}).ids == ["pw"]


# ---- 1-hop expansion ------------------------------------------------------------------------------------


def test_links_expansion_appends_neighbours_in_scope_and_marks_them() -> None:
    dense, keyword = _stores()
    engine = HybridEngine({"dense": dense, "keyword": keyword}, links_key="links", top_k=2)
    engine.add(
        ["seed", "n1", "n2", "n3"],
        ["quantum flux capacitor", "unrelated one", "unrelated two", "unrelated three"],
        [{"links": ["n1", "n2", "n3"], "s": 1}, {"s": 1}, {"s": 2}, {"s": 1}],
    )
    result = engine.search("quantum flux capacitor", weights={"dense": 0}, filter={"s": 1}, exclude_ids=["n3"])
    assert result.ids == ["seed", "n1"]  # n2 is out of scope, n3 excluded
    assert result.hits[1].metadata["rrf_expanded_from"] == "seed"
    # top_k=1: no room for a neighbour once the seed has its place (expansion stays within top_k)
    assert engine.search("quantum flux capacitor", weights={"dense": 0}, filter={"s": 1}, top_k=1).ids == ["seed"]


@settings(max_examples=40, deadline=None)
@given(top_k=st.integers(1, 8), limit=st.integers(1, 8), links=st.lists(st.lists(st.integers(0, 11), max_size=3),
                                                                         min_size=12, max_size=12))
def test_expansion_never_exceeds_top_k_and_keeps_every_seed(top_k: int, limit: int, links: list[list[int]]) -> None:
    dense, keyword = _stores()
    engine = HybridEngine({"dense": dense, "keyword": keyword}, links_key="links", top_k=top_k)
    ids = [f"d{i}" for i in range(12)]
    engine.add(ids, [f"alpha doc {i}" for i in range(12)], [{"links": [f"d{j}" for j in ls]} for ls in links])
    plain = engine.search("alpha", expand_limit=1, weights={"dense": 0}, top_k=12).ids
    hits = engine.search("alpha", expand_limit=limit, weights={"dense": 0}).hits
    seeds = [h.id for h in hits if "rrf_expanded_from" not in h.metadata]
    neighbours = [h for h in hits if "rrf_expanded_from" in h.metadata]
    assert len(hits) <= top_k and len(neighbours) <= limit and len({h.id for h in hits}) == len(hits)
    assert all(n.metadata["rrf_expanded_from"] in seeds for n in neighbours)
    assert seeds == [i for i in plain if i in seeds][: len(seeds)]  # the fused part is a prefix of the fused order


@pytest.mark.parametrize("links", [5, 2.5, {"n1": 1}, None, True])
def test_a_malformed_links_value_names_no_neighbour_instead_of_a_raw_type_error(links: Any) -> None:
    dense, keyword = _stores()
    engine = HybridEngine({"dense": dense, "keyword": keyword}, links_key="links", top_k=1)
    engine.add(["seed", "n1"], ["quantum flux capacitor", "unrelated one"], [{"links": links}, {}])
    assert engine.search("quantum flux capacitor", weights={"dense": 0}).ids == ["seed"]


# ---- property: scope never leaks on the fused result ----------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sessions=st.lists(st.integers(1, 4), min_size=1, max_size=25),
    scope=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    excluded=st.sets(st.integers(0, 24), max_size=5),
    query=st.sampled_from(["alpha beta", "gamma", "delta alpha", "the", "beta gamma delta"]),
)
def test_fused_results_never_leave_the_scope(sessions: list[int], scope: list[int], excluded: set[int],
                                             query: str) -> None:
    words = ["alpha", "beta", "gamma", "delta"]
    engine = HybridEngine({"dense": QdrantDenseStore(HashingEmbedding(16), location=":memory:"),
                           "keyword": BM25KeywordStore(), "fts": FTS5KeywordStore()})
    ids = [f"d{i}" for i in range(len(sessions))]
    texts = [f"{words[i % 4]} {words[(i * 3) % 4]} note {i}" for i in range(len(sessions))]
    engine.add(ids, texts, [{"session_id": s} for s in sessions])
    excl = [f"d{i}" for i in excluded]
    result = engine.search(query, filter={"session_id": scope}, exclude_ids=excl, top_k=50)
    by_id = dict(zip(ids, sessions))
    for hit in result.hits:
        assert by_id[hit.id] in scope and hit.id not in excl
    allowed = [i for i in ids if by_id[i] in scope and i not in excl]
    # The dense leg ranks every allowed document, so the fused result holds all of them (fetch_k >= corpus).
    assert set(result.ids) == set(allowed)


def test_function_leg_applies_scope_to_what_it_returns() -> None:
    def search(query: str, limit: int) -> list[Hit]:
        return [Hit("a", metadata={"s": 1}), Hit("b", metadata={"s": 2}), Hit("c", metadata={"s": 1})]

    engine = HybridEngine({"f": FunctionLeg(search)})
    assert engine.search("q", filter={"s": 1}, exclude_ids=["c"]).ids == ["a"]


def test_warnings_are_not_emitted_on_healthy_queries() -> None:
    engine = _engine()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.search("password")


def test_concurrent_updates_of_different_fields_all_land() -> None:
    engine = HybridEngine({"a": RecordingLeg(), "b": RecordingLeg()})
    barrier = threading.Barrier(8)

    def set_top_k(n: int) -> None:
        barrier.wait()
        for _ in range(50):
            engine.update_settings(top_k=n)

    def set_weight(w: float) -> None:
        barrier.wait()
        for _ in range(50):
            engine.update_settings(weights={"b": w})

    threads = [threading.Thread(target=set_top_k, args=(7,)) for _ in range(4)]
    threads += [threading.Thread(target=set_weight, args=(0.25,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert engine.settings.top_k == 7 and engine.settings.weights["b"] == 0.25


# ---- bounds on numbers that overflow downstream (found by attacking the engine) -----------------------------


def test_a_huge_leg_timeout_is_refused_at_the_door_not_an_overflow_inside_every_query() -> None:
    dense, keyword = _stores()
    with pytest.raises(InvalidArgumentError, match="leg_timeout"):
        HybridEngine({"dense": dense, "keyword": keyword}, leg_timeout=1e10)
    engine = HybridEngine({"dense": dense, "keyword": keyword}, leg_timeout=3600)
    with pytest.raises(InvalidArgumentError, match="leg_timeout"):
        engine.update_settings(leg_timeout=1e300)
    assert engine.settings.leg_timeout == 3600


@pytest.mark.parametrize("weight", [1.7e308, 1e12, float("inf")])
def test_huge_weights_are_refused_so_fused_scores_stay_finite(weight: float) -> None:
    dense, keyword = _stores()
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    with pytest.raises(InvalidArgumentError, match="weight"):
        engine.update_settings(weights={"keyword": weight})
    with pytest.raises(InvalidArgumentError, match="weight"):
        engine.search("password", weights={"dense": weight})
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        engine.update_settings(rrf_k=weight)


def test_all_zero_weights_are_one_rule_everywhere_refused_with_our_error() -> None:
    # The CLI and the service refused them while Python silently searched nothing: now the engine refuses them.
    dense, keyword = _stores()
    with pytest.raises(InvalidArgumentError, match="nothing would be searched"):
        HybridEngine({"dense": dense, "keyword": keyword}, {"dense": 0, "keyword": 0})
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    with pytest.raises(InvalidArgumentError, match="nothing would be searched"):
        engine.update_settings(weights={"dense": 0, "keyword": 0.0})
    with pytest.raises(InvalidArgumentError, match="nothing would be searched"):
        engine.search("password", weights={"dense": 0, "keyword": 0})
    assert dict(engine.settings.weights) == {"dense": 1.0, "keyword": DEFAULT_LEG_WEIGHTS["keyword"]}
    assert engine.search("password", weights={"dense": 0}).trace.legs[0].note == "weight 0"  # one leg at 0 is fine
