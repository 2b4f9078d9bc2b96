"""``IndexNode(obj=...)`` round trips as in LlamaIndex's own index: the object is kept in memory (the retriever's
``object_map``, keyed by ``index_id``), the node is stored without it and comes back an ``IndexNode`` with its id
and ``index_id``, and LlamaIndex's recursive retrieval follows the object. Real LlamaIndex objects throughout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.retrievers import RecursiveRetriever
from llama_index.core.schema import IndexNode, NodeWithScore, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore, HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.llama_index import LlamaIndexRRFRetriever, RRFVectorStore, vector_store


def _inner() -> LlamaIndexRRFRetriever:
    inner = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=2)
    inner.add_texts(["the inner page about zebras and their stripes"], ids=["inner-1"])
    return inner


def _pointer(obj: Any) -> IndexNode:
    return IndexNode(id_="pointer", text="summary: where the zebras live", index_id="zoo", obj=obj)


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_insert_nodes_keeps_the_object_and_retrieve_follows_it() -> None:
    inner = _inner()
    pointer = _pointer(inner)
    outer = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=3)
    assert outer.insert_nodes([pointer, TextNode(id_="plain", text="a plain note on zebras")]) == ["pointer", "plain"]
    assert pointer.obj is inner  # the user's node is not changed
    assert outer.object_map["zoo"] is inner
    # retrieve() follows the IndexNode into the inner retriever (LlamaIndex's _handle_recursive_retrieval)
    assert set(_ids(outer.retrieve("zebras"))) == {"inner-1", "plain"}
    assert "zoo" not in str(outer.get_by_ids(["pointer"])[0].metadata)  # the object is not stored in the node


def test_the_stored_node_is_an_index_node_with_its_id_and_index_id() -> None:
    outer = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=3)
    outer.insert_nodes([_pointer(_inner())])
    outer.object_map.clear()  # as after a reopen: the object is not on disk
    (got,) = outer.retrieve("zebras")
    assert isinstance(got.node, IndexNode)
    assert (got.node.node_id, got.node.index_id, got.node.obj) == ("pointer", "zoo", None)
    assert got.node.get_content() == "summary: where the zebras live"


def test_a_serialisable_object_comes_back_as_itself_not_a_junk_text_node() -> None:
    target = TextNode(id_="target", text="the zebra page itself")
    outer = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=3)
    outer.insert_nodes([_pointer(target)])
    assert _ids(outer.retrieve("zebras")) == ["target"]  # followed: the node object itself is the answer


def test_recursive_retriever_follows_our_index_node() -> None:
    inner = _inner()
    outer = EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), keyword="fts5", dense="qdrant", top_k=3)
    outer.insert_nodes([_pointer(inner)])
    outer.object_map.clear()  # RecursiveRetriever holds the object map itself
    recursive = RecursiveRetriever("root", retriever_dict={"root": outer, "zoo": inner})
    assert _ids(recursive.retrieve("zebras")) == ["inner-1"]
    outer.close()


def test_add_documents_and_ainsert_nodes_keep_the_object_too() -> None:
    inner = _inner()
    outer = EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), keyword="fts5", dense="qdrant", top_k=3)
    outer.add_documents([_pointer(inner)])
    assert outer.object_map["zoo"] is inner
    other = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=3)
    asyncio.run(other.ainsert_nodes([_pointer(inner)]))
    assert _ids(asyncio.run(other.aretrieve("zebras"))) == ["inner-1"]
    outer.close()


def test_scoped_copies_share_the_object_map() -> None:
    outer = LlamaIndexRRFRetriever(keyword=FTS5KeywordStore(), top_k=3)
    scoped = outer.scoped(top_k=2)
    outer.insert_nodes([_pointer(_inner())])
    assert _ids(scoped.retrieve("zebras")) == ["inner-1"]


def test_vector_store_index_over_our_store_follows_the_object() -> None:
    inner = _inner()
    index = VectorStoreIndex([], storage_context=StorageContext.from_defaults(vector_store=RRFVectorStore()),
                             embed_model=MockEmbedding(embed_dim=8))
    index.insert_nodes([_pointer(inner)])
    assert _ids(index.as_retriever(similarity_top_k=2).retrieve("zebras")) == ["inner-1"]


def test_our_store_gives_back_the_index_node_and_keeps_an_object_it_was_given() -> None:
    inner = _inner()
    store = RRFVectorStore()
    store.add([_pointer(inner).model_copy(update={"embedding": [1.0, 0.0]})])
    result = store.query(VectorStoreQuery(query_str="zebras", mode="text_search", similarity_top_k=1))
    (node,) = result.nodes or []
    assert isinstance(node, IndexNode)
    assert (node.node_id, node.index_id) == ("pointer", "zoo")
    assert node.obj is inner  # an IngestionPipeline user gets the object back: the recursive retrieval follows it


def _store_with(nodes: list[TextNode]) -> RRFVectorStore:
    store = RRFVectorStore()
    store.add([n.model_copy(update={"embedding": [1.0, float(i)]}) for i, n in enumerate(nodes)])
    return store


def test_node_ids_restrict_a_query_to_those_nodes() -> None:
    store = _store_with([TextNode(id_=f"t{i}", text=f"zebras note {i}") for i in range(4)])
    query = VectorStoreQuery(query_str="zebras", mode="text_search", similarity_top_k=4, node_ids=["t2", "t0"])
    assert sorted(store.query(query).ids or []) == ["t0", "t2"]


def test_node_ids_with_too_many_other_nodes_is_refused_naming_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_store, "NODE_IDS_MAX_OTHERS", 2)
    store = _store_with([TextNode(id_=f"t{i}", text=f"zebras note {i}") for i in range(4)])
    query = VectorStoreQuery(query_str="zebras", mode="text_search", similarity_top_k=4, node_ids=["t0"])
    with pytest.raises(InvalidArgumentError, match="store_nodes_override=True"):
        store.query(query)


def test_a_reopened_store_gives_the_index_node_without_its_object(tmp_path: Any) -> None:
    store = RRFVectorStore(path=tmp_path / "idx")
    store.add([_pointer(_inner()).model_copy(update={"embedding": [1.0, 0.0]})])
    store.close()
    reopened = RRFVectorStore(path=tmp_path / "idx")
    (node,) = reopened.query(VectorStoreQuery(query_str="zebras", mode="text_search", similarity_top_k=1)).nodes or []
    assert isinstance(node, IndexNode) and (node.node_id, node.index_id, node.obj) == ("pointer", "zoo", None)
    reopened.close()
