"""One suite, every Qdrant backend: the same workload gives the same results on qdrant-client local mode (a
collection per leg, and both legs in one collection), qdrant-edge (a shard per leg, and one joint shard), and a
real Qdrant server when ``QDRANT_URL`` is set (marker ``qdrant_server``, deselected by default: run it with
``QDRANT_URL=http://localhost:6333 pytest -m qdrant_server tests/unit/stores/qdrant/test_backend_congruence.py``; the
compose file in ``deploy/`` starts one).

Each backend is compared with the reference, qdrant-client local mode with a collection per leg: same ids per
leg, scores equal within float32 precision; exactly tied scores may come in any order, so hits are compared as
(score, set of ids) groups. Writes go through the engine (one write unit per backend), searches to the stores.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import InvalidFilterError
from rrf_retriever.stores.qdrant import (
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeHybridStore,
    QdrantEdgeKeywordStore,
    QdrantHybridStore,
    QdrantKeywordStore,
)
from rrf_retriever.types import Hit

DIM = 48
SERVER_URL = os.environ.get("QDRANT_URL")
SERVER_KEY = os.environ.get("QDRANT_API_KEY") or None
_NO_SERVER = "QDRANT_URL is not set: no Qdrant server to test against (see deploy/README.md)"
BACKENDS = [
    "local-separate",
    "local-joint",
    "edge-separate",
    "edge-joint",
    pytest.param("server-separate", marks=pytest.mark.qdrant_server),
    pytest.param("server-joint", marks=pytest.mark.qdrant_server),
]

DOCS: dict[str, tuple[str, dict[str, Any]]] = {
    "d01": ("configure the qdrant collection for hybrid search", {"session_id": 1, "lang": "en", "flag": True}),
    "d02": ("cooking pasta with fresh tomato sauce tonight", {"session_id": 2, "lang": "it", "flag": False}),
    "d03": ("sparse vectors give qdrant a keyword leg", {"session_id": 3, "lang": "en", "flag": 1}),
    "d04": ("reciprocal rank fusion merges ranked lists", {"session_id": 1, "lang": "en", "tags": ["rrf", "ir"]}),
    "d05": ("tomato soup recipe from an old collection", {"session_id": 4, "lang": "de", "flag": 0}),
    "d06": ("a cluster of three qdrant nodes with replication", {"session_id": 2, "lang": "en", "tags": ["ops"]}),
    "d07": ("bm25 saturation and document length normalisation", {"session_id": 5, "lang": "fr"}),
    "d08": ("hybrid retrieval for langchain and llamaindex users", {"session_id": "1", "lang": "en"}),
    "d09": ("write consistency factor and shard numbers explained", {"session_id": 3, "lang": "en", "flag": True}),
    "d10": ("fresh pasta, tomato and basil: a summer collection", {"session_id": [2, 5], "lang": "it"}),
    "d11": ("keyword search finds configure when asked configuring", {"session_id": 6, "lang": "en"}),
    "d12": ("nothing in common here at all", {"lang": "xx"}),
}
QUERIES = ["qdrant collection", "tomato pasta", "configuring hybrid keyword search", "replication of nodes",
           "fusion", "zzz unknown words"]
FILTERS: list[Any] = [
    {"lang": "en"},
    {"session_id": [1, 2]},
    {"session_id": "1"},  # typed: the string never matches the integer
    {"flag": True},  # True never matches 1
    {"flag": 1},
    {"tags": "ops"},  # a metadata list matches when any element does
    {"session_id": []},  # an empty any-of matches nothing
    {"lang": "en", "session_id": [1, 3]},
    {"lang": {"$ne": "en"}},
    {"session_id": {"$in": [2, 5]}},
    {"session_id": {"$gte": 3}},
    {"$or": [{"lang": "it"}, {"flag": True}]},
    {"$not": {"lang": "en"}},
    {"tags": {"$exists": True}},
]


class Backend:
    """Two legs on one Qdrant backend, written through one engine (so both legs always get the same writes)."""

    def __init__(self, kind: str, root: Path) -> None:
        if kind.startswith("server") and not SERVER_URL:
            pytest.skip(_NO_SERVER)
        self.kind, self.root = kind, root
        self.collection = f"rrf_congruence_{uuid.uuid4().hex[:12]}"
        self.embedding = HashingEmbedding(dim=DIM)
        self._open()

    def _open(self) -> None:
        kind, root, emb, name = self.kind, self.root, self.embedding, self.collection
        if kind == "local-separate":
            self.dense = QdrantDenseStore(emb, path=root / "dense")
            self.keyword = QdrantKeywordStore(path=root / "keyword")
        elif kind == "local-joint":
            joint = QdrantHybridStore(emb, path=root / "joint")
            self.dense, self.keyword = joint.dense, joint.keyword
        elif kind == "edge-separate":
            self.dense = QdrantEdgeDenseStore(emb, path=root / "dense")
            self.keyword = QdrantEdgeKeywordStore(path=root / "keyword")
        elif kind == "edge-joint":
            joint = QdrantEdgeHybridStore(emb, path=root / "joint")
            self.dense, self.keyword = joint.dense, joint.keyword
        elif kind == "server-separate":
            self.dense = QdrantDenseStore(emb, url=SERVER_URL, api_key=SERVER_KEY, collection_name=f"{name}_dense")
            self.keyword = QdrantKeywordStore(url=SERVER_URL, api_key=SERVER_KEY, collection_name=f"{name}_keyword")
        else:
            joint = QdrantHybridStore(emb, url=SERVER_URL, api_key=SERVER_KEY, collection_name=name)
            self.dense, self.keyword = joint.dense, joint.keyword
        self.engine = HybridEngine({"dense": self.dense, "keyword": self.keyword})

    def reopen(self) -> None:
        self.engine.close()
        self._open()

    def load(self) -> None:
        """The workload: add, upsert the same ids (new text and metadata), delete."""
        ids = list(DOCS)
        self.engine.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
        self.engine.add(["d05", "d13"], ["tomato soup recipe, now with qdrant", "a thirteenth qdrant document"],
                        [{"session_id": 4, "lang": "en"}, {"session_id": 7, "lang": "en"}])
        self.engine.delete(["d07", "nonexistent"])

    def legs(self, query: str, limit: int = 50, filter: Any = None, exclude_ids: Any = None
             ) -> tuple[list[Hit], list[Hit]]:
        vector = self.embedding.embed_query(query)
        return (self.dense.search(vector, limit, filter, exclude_ids),
                self.keyword.search(query, limit, filter, exclude_ids))

    def close(self) -> None:
        self.engine.close()
        if self.kind.startswith("server"):
            from qdrant_client import QdrantClient

            client = QdrantClient(url=SERVER_URL, api_key=SERVER_KEY)
            for name in (self.collection, f"{self.collection}_dense", f"{self.collection}_keyword"):
                if client.collection_exists(name):
                    client.delete_collection(name)
            client.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A loaded backend of each kind, for a test that writes."""
    b = Backend(request.param, tmp_path / "backend")
    b.load()
    yield b
    b.close()


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[Backend]:
    b = Backend("local-separate", tmp_path / "reference")
    b.load()
    yield b
    b.close()


@pytest.fixture(scope="module", params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """A loaded backend of each kind, shared by the read-only tests (loading is what takes the time)."""
    b = Backend(request.param, tmp_path_factory.mktemp("loaded"))
    b.load()
    yield b
    b.close()


@pytest.fixture(scope="module")
def shared_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    b = Backend("local-separate", tmp_path_factory.mktemp("reference"))
    b.load()
    yield b
    b.close()


def _groups(hits: list[Hit]) -> list[tuple[float, frozenset[str]]]:
    """Hits as (score, ids) groups of equal scores, best first (ties may come in any order)."""
    groups: list[tuple[float, set[str]]] = []
    for hit in sorted(hits, key=lambda h: -h.score):
        if groups and abs(groups[-1][0] - hit.score) <= 1e-5 * max(1.0, abs(hit.score)):
            groups[-1][1].add(hit.id)
        else:
            groups.append((hit.score, {hit.id}))
    return [(score, frozenset(ids)) for score, ids in groups]


def assert_congruent(got: list[Hit], want: list[Hit], *, cut: bool = False) -> None:
    """Same groups of (score, ids); with ``cut`` (a limit below the matches) the last group may be any part of a
    tie that crosses the cut: only its score and the number of hits are compared."""
    got_groups, want_groups = _groups(got), _groups(want)
    if cut and got_groups and want_groups:
        assert len(got) == len(want) and got_groups[-1][0] == pytest.approx(want_groups[-1][0], rel=1e-4)
        got_groups, want_groups = got_groups[:-1], want_groups[:-1]
    assert [ids for _, ids in got_groups] == [ids for _, ids in want_groups]
    assert [score for score, _ in got_groups] == pytest.approx([score for score, _ in want_groups], rel=1e-4)
    by_id = {h.id: h for h in want}
    for hit in got:  # the same document behind each id
        if hit.id in by_id:
            assert (hit.text, hit.metadata) == (by_id[hit.id].text, by_id[hit.id].metadata)


def assert_legs_congruent(backend: Backend, reference: Backend, query: str, **scope: Any) -> None:
    for got, want in zip(backend.legs(query, **scope), reference.legs(query, **scope)):
        assert_congruent(got, want, cut="limit" in scope)


@pytest.mark.parametrize("query", QUERIES)
def test_results(loaded: Backend, shared_reference: Backend, query: str) -> None:
    assert_legs_congruent(loaded, shared_reference, query)
    assert_legs_congruent(loaded, shared_reference, query, limit=3)
    # Fused: the same documents (near-tied cosine scores of 0 may swap ranks between engines, so not the order).
    assert set(loaded.engine.search(query, top_k=20).ids) == set(shared_reference.engine.search(query, top_k=20).ids)


@pytest.mark.parametrize("flt", FILTERS, ids=[str(f) for f in FILTERS])
def test_filters(loaded: Backend, shared_reference: Backend, flt: Any) -> None:
    for query in ("qdrant collection", "tomato pasta"):
        assert_legs_congruent(loaded, shared_reference, query, filter=flt)


def test_filters_hold_their_meaning(loaded: Backend) -> None:
    dense, keyword = loaded.legs("qdrant collection tomato", filter={"session_id": "1"})
    assert {h.id for h in dense} == {"d08"} and keyword == []  # "1" the string: d08 only, and it shares no term
    dense, _ = loaded.legs("qdrant", filter={"flag": True})
    assert {h.id for h in dense} == {"d01", "d09"}
    dense, keyword = loaded.legs("qdrant", filter={"session_id": []})
    assert dense == [] and keyword == []


def test_exclusions(loaded: Backend, shared_reference: Backend) -> None:
    excluded = ["d01", "d03", "unknown", "d13"]
    assert_legs_congruent(loaded, shared_reference, "qdrant collection", exclude_ids=excluded)
    dense, keyword = loaded.legs("qdrant collection", exclude_ids=excluded)
    assert not {h.id for h in dense + keyword} & set(excluded)
    assert_legs_congruent(loaded, shared_reference, "qdrant", filter={"lang": "en"}, exclude_ids=["d06"])


def test_upserts_of_the_same_id(backend: Backend, reference: Backend) -> None:
    _, keyword = backend.legs("soup qdrant")
    [d05] = [h for h in keyword if h.id == "d05"]
    assert d05.text == "tomato soup recipe, now with qdrant" and d05.metadata == {"session_id": 4, "lang": "en"}
    assert "d05" not in {h.id for h in backend.legs("old")[1]}  # the replaced text's own term is gone
    for b in (backend, reference):
        b.engine.add(["d05"], ["tomato soup recipe, now with qdrant"], [{"session_id": 4, "lang": "en"}])
    assert backend.engine.count() == {"dense": 12, "keyword": 12}
    assert_legs_congruent(backend, reference, "tomato soup qdrant")


def test_deletes_and_count(backend: Backend, reference: Backend) -> None:
    assert backend.engine.count() == reference.engine.count() == {"dense": 12, "keyword": 12}
    for b in (backend, reference):
        b.engine.delete(["d01", "d02", "d01"])
    assert backend.engine.count() == {"dense": 10, "keyword": 10}
    dense, keyword = backend.legs("qdrant collection pasta")
    assert not {"d01", "d02", "d07"} & {h.id for h in dense + keyword}
    assert_legs_congruent(backend, reference, "qdrant collection pasta")


def test_reopen_from_path(backend: Backend, reference: Backend) -> None:
    before = backend.legs("qdrant collection tomato", filter={"lang": "en"})
    backend.reopen()
    after = backend.legs("qdrant collection tomato", filter={"lang": "en"})
    for got, want in zip(after, before):
        assert_congruent(got, want)
    assert backend.engine.count() == {"dense": 12, "keyword": 12}
    assert_legs_congruent(backend, reference, "tomato pasta")


HOSTILE_QUERIES = ['" OR 1=1 --', "NEAR(qdrant collection)", "qdrant*", "-tomato ^pasta :collection",
                   "'; DROP TABLE x; --", "\x00qdrant\x00", "qdrant\ud800", "tomato " * 2000, "💥 qdrant 💥", ""]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
def test_hostile_queries(loaded: Backend, shared_reference: Backend, query: str) -> None:
    if not query:
        assert loaded.engine.search(query).ids == []
        return
    assert_legs_congruent(loaded, shared_reference, query)


def test_hostile_documents(backend: Backend, reference: Backend) -> None:
    texts = {"h1": 'qdrant" OR "x', "h2": "NEAR(tomato, 2) \x00 control\x07chars", "h3": "ünïcödé qdrant 💥",
             "h4": "qdrant " * 3000}
    metas = [{"k": 'a"b'}, {"k": "\x00"}, {"k": "ü"}, {"k": "x" * 1000}]
    for b in (backend, reference):
        b.engine.add(list(texts), list(texts.values()), metas)
    records = {r.id: r for r in backend.dense.get(list(texts))}
    assert {i: (records[i].text, records[i].metadata) for i in texts} == {
        i: (texts[i], m) for i, m in zip(texts, metas)}
    assert_legs_congruent(backend, reference, "qdrant tomato")
    assert_legs_congruent(backend, reference, "qdrant", filter={"k": "ü"})
    with pytest.raises(InvalidFilterError):  # a NUL in a filter value is refused, never an unscoped search
        backend.legs("qdrant", filter={"k": "\x00"})
