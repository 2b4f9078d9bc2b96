"""Result nodes hash like the node the user inserted, whatever the query's ``rrf_*`` metadata; everything else is
their LlamaIndex class's (class_name, serialization, docstore round trip, pickling)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core.schema import (
    BaseNode,
    Document,
    ImageNode,
    IndexNode,
    Node,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.storage.docstore import SimpleDocumentStore

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.llama_index.result_nodes import RRFTextNode, stable_node

scoring = st.dictionaries(st.sampled_from(["rrf_score", "rrf_ranks", "rrf_scores", "rrf_pinned"]),
                          st.one_of(st.floats(allow_nan=False), st.dictionaries(st.text(max_size=5), st.integers())),
                          min_size=1)
user = st.dictionaries(st.text(max_size=8).filter(lambda k: not k.startswith("rrf_")),
                       st.one_of(st.integers(), st.text(max_size=8)), max_size=4)


def _scored(node: BaseNode, extra: dict[str, Any]) -> BaseNode:
    return stable_node(node.model_copy(update={"metadata": {**node.metadata, **extra}}))


NODES = [
    TextNode(id_="t", text="text", metadata={"lang": "en"},
             relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc")}),
    IndexNode(id_="i", text="summary", index_id="sub", metadata={"lang": "en"}),
    ImageNode(id_="m", text="caption", image_url="http://x/img.png", metadata={"lang": "en"}),
    Node(id_="n", metadata={"lang": "en"}),
    Document(id_="d", text="a whole document", metadata={"lang": "en"}),
]


@pytest.mark.parametrize("node", NODES, ids=lambda n: type(n).__name__)
def test_every_result_class_hashes_like_the_inserted_node(node: BaseNode) -> None:
    a, b = _scored(node, {"rrf_score": 0.03}), _scored(node, {"rrf_score": 0.01, "rrf_ranks": {"dense": 2}})
    assert a.hash == b.hash == node.hash
    assert isinstance(a, type(node)) and a.class_name() == node.class_name() and a.get_type() == node.get_type()
    assert a.metadata["rrf_score"] == 0.03 and a.node_id == node.node_id
    if not isinstance(node, ImageNode):  # LlamaIndex hashes an image node without its metadata
        assert _scored(node, {"lang": "de"}).hash != node.hash  # the user's metadata still counts


@given(user, scoring, st.text(max_size=20))
def test_hash_ignores_only_the_scoring(meta: dict[str, Any], extra: dict[str, Any], text: str) -> None:
    mine = TextNode(text=text, metadata=meta)
    assert _scored(mine, extra).hash == mine.hash
    assert _scored(mine.model_copy(update={"text": text + "!"}), extra).hash != mine.hash


def test_serialized_it_is_its_llama_index_class() -> None:
    node = _scored(NODES[0], {"rrf_score": 0.03})
    assert type(node) is RRFTextNode and node.to_dict()["class_name"] == "TextNode"
    back = TextNode.from_json(node.to_json())
    assert type(back) is TextNode and back.metadata["rrf_score"] == 0.03
    store = SimpleDocumentStore()
    store.add_documents([node])
    assert type(store.get_node("t")) is TextNode and store.get_document_hash("t") == NODES[0].hash
    assert type(pickle.loads(pickle.dumps(node))) is RRFTextNode and pickle.loads(pickle.dumps(node)).hash == node.hash
    assert copy.deepcopy(node).hash == NODES[0].hash


def test_another_class_is_left_as_it_is() -> None:
    class Mine(TextNode):
        pass

    node = Mine(text="x")
    assert stable_node(node) is node


def test_two_queries_give_the_same_hash_with_their_own_scoring() -> None:
    with EnsembleRRFRetriever.from_documents(
        [TextNode(id_="a", text="error E42 in the indexer", metadata={"k": 1}),
         TextNode(id_="b", text="the indexer restarts", metadata={"k": 2})],
        HashingEmbedding(32), keyword="bm25", dense="qdrant",
    ) as r:
        first = {n.node.node_id: n.node for n in r.retrieve("error E42")}
        second = {n.node.node_id: n.node for n in r.retrieve("indexer restarts")}
        assert {i: n.hash for i, n in first.items()} == {i: n.hash for i, n in second.items()}
        assert first["a"].hash == TextNode(id_="a", text="error E42 in the indexer", metadata={"k": 1}).hash
        assert first["a"].metadata["rrf_ranks"] != second["a"].metadata["rrf_ranks"]
