"""A node comes back with the ``hash`` of the node inserted, whatever its LlamaIndex class: ``TextNode``,
``Document`` (hashed another way by LlamaIndex 0.14) and ``ImageDocument``, with metadata, relationships, excluded
keys and templates, through every door: ``EnsembleRRFRetriever.from_documents``, ``RRFVectorStore.add`` /
``query`` / ``get_nodes`` and ``VectorStoreIndex`` over the store (LlamaIndex's own ``SimpleVectorStore`` index as
the reference). Equal too, our ``rrf_*`` keys set aside.

Real LlamaIndex objects, real stores, the hashing embedder (as a LlamaIndex ``BaseEmbedding`` for the index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import (
    BaseNode,
    Document,
    ImageDocument,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import VectorStoreQuery

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.frameworks.results import RRF_METADATA_KEYS
from rrf_retriever.llama_index import RRFVectorStore
from rrf_retriever.llama_index.embeddings import RRFLlamaIndexEmbedding
from rrf_retriever.llama_index.nodes import node_record, stored_node, to_node_with_score
from rrf_retriever.types import FusedHit

R = NodeRelationship
QUERY = "zebrafish calibration manual note picture"
EXCLUDED = ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys")


def _nodes(image: Path) -> list[BaseNode]:
    """One node of each class, each with what LlamaIndex keeps of a node besides its text."""
    chunk = TextNode(
        id_="c1", text="zebrafish calibration, chunk one of the manual",
        metadata={"file_name": "manual.pdf", "page": 3, "tags": ["lab", "fish"]},
        relationships={R.SOURCE: RelatedNodeInfo(node_id="manual", hash="h-manual"),
                       R.NEXT: RelatedNodeInfo(node_id="c2")},
        excluded_embed_metadata_keys=["page"], excluded_llm_metadata_keys=["file_name"],
        metadata_template="{key}={value}", metadata_separator=" | ", start_char_idx=0, end_char_idx=44,
    )
    whole = Document(
        id_="D9", text="a whole note about zebrafish calibration",
        metadata={"kind": "note", "author": "ann", "n": 2},
        relationships={R.NEXT: RelatedNodeInfo(node_id="D10", metadata={"order": 2})},
        excluded_embed_metadata_keys=["author"], excluded_llm_metadata_keys=["n"],
        metadata_template="{key}::{value}", text_template="[{metadata_str}] {content}",
    )
    plain = Document(id_="D10", text="a note without metadata")
    empty = Document(id_="D11", text="", metadata={"kind": "placeholder"})
    picture = ImageDocument(id_="P1", text="a picture of zebrafish", image_path=str(image), metadata={"kind": "img"})
    return [chunk, whole, plain, empty, picture]


@pytest.fixture
def nodes(tmp_path: Path) -> list[BaseNode]:
    from PIL import Image

    image = tmp_path / "fish.png"
    Image.new("RGB", (2, 2), (10, 20, 30)).save(image)
    return _nodes(image)


def _fields(node: BaseNode) -> dict[str, Any]:
    """The node's fields with our ``rrf_*`` keys set aside (the embedding too: the store embeds, it keeps none)."""
    data = node.model_dump()
    data["metadata"] = {k: v for k, v in data["metadata"].items() if k not in RRF_METADATA_KEYS}
    for name in EXCLUDED:
        data[name] = [k for k in data[name] if k not in RRF_METADATA_KEYS]
    data["embedding"] = None
    return data


def assert_as_inserted(got: list[BaseNode], inserted: list[BaseNode]) -> None:
    by_id = {n.node_id: n for n in got}
    assert sorted(by_id) == sorted(n.node_id for n in inserted)
    for want in inserted:
        node = by_id[want.node_id]
        assert node.hash == want.hash, type(want).__name__
        assert isinstance(node, type(want)) and node.class_name() == want.class_name()
        assert _fields(node) == _fields(want)


@pytest.mark.parametrize(("dense", "keyword"), [("qdrant-edge", "fts5"), ("qdrant", "qdrant"), ("qdrant", "bm25")])
def test_from_documents_gives_back_each_node_with_its_hash(nodes: list[BaseNode], dense: str, keyword: str) -> None:
    with EnsembleRRFRetriever.from_documents(nodes, HashingEmbedding(64), dense=dense, keyword=keyword,
                                             top_k=len(nodes)) as retriever:
        first = [n.node for n in retriever.retrieve(QUERY)]
        again = [n.node for n in retriever.retrieve("note")]  # another query scores them otherwise: same hashes
        assert_as_inserted(first, nodes)
        assert_as_inserted(again, nodes)
        assert {n.node_id: n.hash for n in first} == {n.node_id: n.hash for n in again}


def test_vector_store_add_query_and_get_nodes_keep_each_hash(nodes: list[BaseNode]) -> None:
    model = HashingEmbedding(64)
    embedded = [n.model_copy(update={"embedding": model.embed_query(n.get_content())}) for n in nodes]
    store = RRFVectorStore(keyword="fts5")
    try:
        store.add(embedded)
        result = store.query(VectorStoreQuery(query_embedding=model.embed_query(QUERY), query_str=QUERY,
                                              similarity_top_k=len(nodes), mode="hybrid"))
        assert result.nodes is not None
        assert_as_inserted(result.nodes, nodes)
        assert_as_inserted(store.get_nodes([n.node_id for n in nodes]), nodes)
    finally:
        store.close()


def test_vector_store_index_gives_back_what_llamaindex_own_index_does(nodes: list[BaseNode]) -> None:
    embed_model = RRFLlamaIndexEmbedding(HashingEmbedding(64))
    # An index embeds images with its own model and skips a node without text ("missing content").
    text_nodes = [n for n in nodes if n.get_content() and not isinstance(n, ImageDocument)]
    reference = VectorStoreIndex(text_nodes, embed_model=embed_model)  # LlamaIndex's SimpleVectorStore + docstore
    store = RRFVectorStore(keyword="fts5")
    try:
        ours = VectorStoreIndex(text_nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                                embed_model=embed_model)
        for index in (reference, ours):
            got = [n.node for n in index.as_retriever(similarity_top_k=len(text_nodes)).retrieve(QUERY)]
            assert_as_inserted(got, text_nodes)
    finally:
        store.close()


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
# What a store accepts: metadata must be JSON (NaN and infinities are refused at the door, tested elsewhere).
_numbers = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_values = st.recursive(st.none() | st.booleans() | _numbers | _text,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                       max_leaves=6)


@settings(max_examples=80, deadline=None)
@given(cls=st.sampled_from([TextNode, Document]), text=_text,
       metadata=st.dictionaries(_text.filter(lambda k: not k.startswith("rrf_")), _values, max_size=4),
       template=st.sampled_from(["{key}: {value}", "{key}={value}"]))
def test_any_node_stored_and_found_hashes_as_inserted(cls: type[BaseNode], text: str, metadata: dict[str, Any],
                                                      template: str) -> None:
    mine = cls(id_="n1", text=text, metadata=metadata, metadata_template=template,
               excluded_llm_metadata_keys=list(metadata)[:1])
    node_id, stored_text, stored = node_record(mine)
    back = stored_node(node_id, stored_text, stored)
    found = to_node_with_score(FusedHit(node_id, stored_text, stored, 0.5, {"keyword": 1}, {"keyword": 2.0})).node
    for node in (back, found):
        assert node is not None and node.hash == mine.hash and isinstance(node, cls)
        assert _fields(node) == _fields(mine)
