"""The budget of automatic payload indexes (``max_auto_indexes``) is spent on keys documents hold, never on a key
a search names that no stored document holds; a budget an older version spent on such keys is reclaimed when the
store is opened again. Asserted on the shard's own index list (``payload_schema``), never on latency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import qdrant_edge as qe

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore, QdrantEdgeKeywordStore

DIM = 8
JUNK = {f"junk{n}": n for n in range(10)}  # one search naming 10 keys no document holds


def _shard_indexes(path: Path) -> set[str]:
    """The metadata keys the shard at ``path`` (closed) has payload indexes on."""
    shard = qe.EdgeShard.load(str(path / "shard"))  # the documented layout: path/shard holds Qdrant's shard
    try:
        return {k.removeprefix("metadata.") for k in shard.info().payload_schema}
    finally:
        shard.close()


def _add(store: Any) -> None:
    store.add([f"d{i}" for i in range(30)], [f"alpha {i}" for i in range(30)],
              [{"session_id": f"s{i % 5}", "lang": "en"} for i in range(30)])


def test_searches_on_keys_no_document_holds_leave_the_budget_to_session_id(tmp_path: Path) -> None:
    with QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path) as store:  # the default budget: 8
        _add(store)
        query = store.embedding.embed_query("alpha")
        assert store.search(query, 5, filter=JUNK) == []
        for key in JUNK:
            assert store.search(query, 5, filter={key: {"$exists": True}}) == []
        assert {h.id for h in store.search(query, 30, filter={"session_id": "s1"})} == {f"d{i}" for i in
                                                                                          range(1, 30, 5)}
        assert ("session_id", "keyword") in store.indexed_keys
    assert _shard_indexes(tmp_path) == {"session_id"}
    with QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp_path) as reopened:
        assert reopened.indexed_keys == {("session_id", "keyword")}
        assert reopened.search(reopened.embedding.embed_query("alpha"), 5, filter=JUNK) == []
        assert len(reopened.search(reopened.embedding.embed_query("alpha"), 30, filter={"lang": "en"})) == 30
        assert reopened.indexed_keys == {("session_id", "keyword"), ("lang", "keyword")}
    assert _shard_indexes(tmp_path) == {"session_id", "lang"}


def test_a_key_written_after_a_search_named_it_is_indexed(tmp_path: Path) -> None:
    with QdrantEdgeKeywordStore(path=tmp_path) as store:
        _add(store)
        assert store.search("alpha", 5, filter={"tenant": "t1"}) == []  # nobody holds it yet: no index
        assert ("tenant", "keyword") not in store.indexed_keys
        store.add(["t"], ["alpha"], [{"tenant": "t1"}])
        assert [h.id for h in store.search("alpha", 5, filter={"tenant": "t1"})] == ["t"]
        assert ("tenant", "keyword") in store.indexed_keys


def test_a_budget_spent_on_keys_no_document_holds_is_reclaimed_on_open(tmp_path: Path) -> None:
    with QdrantEdgeKeywordStore(path=tmp_path) as store:
        _add(store)
    shard = qe.EdgeShard.load(str(tmp_path / "shard"))  # as an older version left it: 8 indexes on junk keys
    for n in range(8):
        shard.update(qe.UpdateOperation.create_field_index(f"metadata.junk{n}", qe.PayloadSchemaType.Float))
    shard.close()
    with QdrantEdgeKeywordStore(path=tmp_path) as reopened:
        assert len(reopened.search("alpha", 30, filter={"session_id": "s1"})) == 6
        assert ("session_id", "keyword") in reopened.indexed_keys
    assert _shard_indexes(tmp_path) == {"session_id"}
