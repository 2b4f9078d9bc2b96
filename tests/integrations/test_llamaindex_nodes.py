"""LlamaIndex node fidelity: what a LlamaIndex vector store keeps survives our stores.

Real stores (SQLite FTS5 + qdrant-edge or qdrant-client local mode), the hashing embedder, real LlamaIndex objects
(``RetrieverQueryEngine`` with ``MockLLM``, which echoes the prompt it is given) and the LangChain side of the same
object.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document as LangChainDocument
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, RRFRetrieverError
from rrf_retriever.frameworks.results import RRF_METADATA_KEYS
from rrf_retriever.llama_index.nodes import node_record, stored_node
from rrf_retriever.metadata import public_metadata, public_result_dict
from rrf_retriever.validate import MAX_METADATA_DEPTH

R = NodeRelationship
HIDDEN = ("_node_content", "_node_type", "doc_id", "document_id")


def _chunks(source: str, words: list[str]) -> list[TextNode]:
    """Chunks of one source document, linked as LlamaIndex's node parsers link them (SOURCE, PREVIOUS, NEXT), the
    middle one also with PARENT and CHILD, so every relationship type is stored."""
    ids = [f"{source}-c{i}" for i in range(len(words))]
    nodes = []
    for i, (node_id, word) in enumerate(zip(ids, words)):
        rel: dict[NodeRelationship, Any] = {
            R.SOURCE: RelatedNodeInfo(node_id=source, metadata={"file_name": f"{source}.pdf"}, hash="h-" + source)
        }
        if i > 0:
            rel[R.PREVIOUS] = RelatedNodeInfo(node_id=ids[i - 1])
        if i < len(ids) - 1:
            rel[R.NEXT] = RelatedNodeInfo(node_id=ids[i + 1])
        if i == 1:
            rel[R.PARENT] = RelatedNodeInfo(node_id=f"{source}-section")
            rel[R.CHILD] = [RelatedNodeInfo(node_id=f"{source}-s1"), RelatedNodeInfo(node_id=f"{source}-s2")]
        nodes.append(TextNode(
            id_=node_id,
            text=f"{word} paragraph {i} of the {source} manual",
            metadata={"file_name": f"{source}.pdf", "page": i + 1, "secret_tag": f"internal-{i}", "lang": "en"},
            relationships=rel,
            excluded_embed_metadata_keys=["page"],
            excluded_llm_metadata_keys=["secret_tag"],
            metadata_separator=" | ",
            metadata_template="{key}={value}",
            text_template="META[{metadata_str}] TEXT[{content}]",
            start_char_idx=10 * i,
            end_char_idx=10 * i + 9,
        ))
    return nodes


MANUAL = _chunks("manual", ["zebrafish", "calibration", "oscilloscope"])
OTHER = _chunks("other", ["zebrafish", "harmonica"])
WHOLE = Document(doc_id="D9", text="a whole document about zebrafish", metadata={"kind": "note"})
ALL = [*MANUAL, *OTHER, WHOLE]


@pytest.fixture(params=[("qdrant-edge", "fts5"), ("qdrant", "fts5"), ("qdrant-edge", "bm25")], ids="-".join)
def retriever(request: pytest.FixtureRequest) -> Any:
    dense, keyword = request.param
    r = EnsembleRRFRetriever.from_documents(ALL, HashingEmbedding(64), dense=dense, keyword=keyword, top_k=10)
    yield r
    r.close()


def _by_id(results: list[NodeWithScore]) -> dict[str, BaseNode]:
    return {n.node.node_id: n.node for n in results}


def assert_same_node(got: BaseNode, want: BaseNode) -> None:
    assert got.node_id == want.node_id
    assert got.get_content() == want.get_content()
    assert {k: v for k, v in got.metadata.items() if k not in RRF_METADATA_KEYS} == want.metadata
    assert got.ref_doc_id == want.ref_doc_id
    assert got.relationships == want.relationships
    for name in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
        mine = getattr(got, name)
        assert [k for k in mine if k not in RRF_METADATA_KEYS] == getattr(want, name)
        assert set(RRF_METADATA_KEYS) <= set(mine)  # our keys stay hidden from the LLM and the embedder
    for name in ("metadata_template", "metadata_separator", "text_template", "start_char_idx", "end_char_idx"):
        assert getattr(got, name) == getattr(want, name)
    assert got.get_content(MetadataMode.LLM) == want.get_content(MetadataMode.LLM)
    assert got.get_content(MetadataMode.EMBED) == want.get_content(MetadataMode.EMBED)


def test_retrieve_gives_back_every_node_as_inserted(retriever: Any) -> None:
    got = _by_id(retriever.retrieve("zebrafish calibration oscilloscope harmonica"))
    for node in [*MANUAL, *OTHER]:
        assert_same_node(got[node.node_id], node)
    assert got["D9"].get_content() == WHOLE.text and got["D9"].metadata["kind"] == "note"  # a Document keeps doc_id


def test_aretrieve_gives_back_the_same_nodes(retriever: Any) -> None:
    got = _by_id(asyncio.run(retriever.aretrieve("zebrafish calibration oscilloscope harmonica")))
    for node in [*MANUAL, *OTHER]:
        assert_same_node(got[node.node_id], node)


def test_query_engine_sees_the_nodes_and_the_llm_only_their_llm_metadata(retriever: Any) -> None:
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())  # no max_tokens: the LLM echoes its prompt
    for response in (engine.query("oscilloscope"), asyncio.run(engine.aquery("oscilloscope"))):
        got = _by_id(response.source_nodes)
        assert_same_node(got["manual-c2"], MANUAL[2])
        prompt = str(response)
        assert "META[file_name=manual.pdf | page=3 | lang=en] TEXT[oscilloscope paragraph 2" in prompt
        for absent in ("secret_tag", "internal-2", "rrf_", "_node_content", "ref_doc_id"):
            assert absent not in prompt


def test_langchain_side_shows_user_metadata_and_ref_doc_id_not_llamaindex_internals(retriever: Any) -> None:
    docs = {d.id: d for d in retriever.invoke("zebrafish calibration oscilloscope harmonica", k=10)}
    doc = docs["manual-c1"]
    assert isinstance(doc, LangChainDocument) and doc.page_content == MANUAL[1].text
    user = {k: v for k, v in doc.metadata.items() if not k.startswith("rrf_")}
    assert user == {**MANUAL[1].metadata, "ref_doc_id": "manual"}
    assert not set(HIDDEN) & set(doc.metadata)
    # A Document inserted whole is its own source: stored as its ref_doc_id (delete_ref_doc finds it), not shown.
    assert {k: v for k, v in docs["D9"].metadata.items() if not k.startswith("rrf_")} == WHOLE.metadata


def test_cli_and_service_output_hides_llamaindex_internals(retriever: Any) -> None:
    """The CLI's --json and POST /search print public_result_dict: the user's keys and ref_doc_id, not
    _node_content (the raw engine result keeps it)."""
    result = retriever.engine.search("zebrafish calibration oscilloscope harmonica", top_k=10)
    raw = {h.id: h.metadata for h in result.hits}
    shown = {h["id"]: h["metadata"] for h in public_result_dict(result)["hits"]}
    assert "_node_content" in raw["manual-c1"] and not set(HIDDEN) & set(shown["manual-c1"])
    assert shown["manual-c1"] == {**MANUAL[1].metadata, "ref_doc_id": "manual"}


def test_stored_metadata_is_llamaindex_layout(retriever: Any) -> None:
    """What a LlamaIndex vector store writes: its own helper rebuilds our stored node. ``get_by_ids`` shows the
    metadata as results do."""
    (shown,) = retriever.get_by_ids(["manual-c1"])
    assert shown.metadata == {**MANUAL[1].metadata, "ref_doc_id": "manual"}
    (record,) = retriever.engine.get(["manual-c1"])  # the raw stored metadata
    assert record.metadata["doc_id"] == record.metadata["document_id"] == record.metadata["ref_doc_id"] == "manual"
    assert record.metadata["_node_type"] == "TextNode"
    rebuilt = metadata_dict_to_node(dict(record.metadata), text=record.text)
    assert rebuilt.relationships == MANUAL[1].relationships and rebuilt.metadata == MANUAL[1].metadata
    assert not any(k in record.metadata for k in RRF_METADATA_KEYS)


def test_insert_nodes_upserts_by_node_id(retriever: Any) -> None:
    before = retriever.engine.count()
    changed = MANUAL[0].model_copy(update={"text": "xylophone replaces the first paragraph", "embedding": [1.0] * 7})
    assert retriever.insert_nodes([changed]) == ["manual-c0"]
    assert retriever.insert_nodes([changed]) == ["manual-c0"]
    assert retriever.engine.count() == before  # same id twice: one document, in every store
    for weights in ({"keyword": 0}, {"dense": 0}):
        hits = retriever.search("xylophone", weights=weights, top_k=3).hits
        assert hits[0].id == "manual-c0"  # the dense leg embedded the new text itself (the 7-d vector is ignored)
    got = _by_id(retriever.retrieve("xylophone"))["manual-c0"]
    assert got.get_content() == changed.text and got.relationships == MANUAL[0].relationships


def test_insert_nodes_refuses_what_is_not_a_node_list(retriever: Any) -> None:
    for bad in (MANUAL[0], "text", [LangChainDocument(page_content="x")], [{"text": "x"}]):
        with pytest.raises(InvalidTypeError):
            retriever.insert_nodes(bad)


def test_a_retrieved_node_inserted_again_does_not_store_our_result_keys(retriever: Any) -> None:
    node = _by_id(retriever.retrieve("oscilloscope"))["manual-c2"]
    retriever.insert_nodes([node])
    (record,) = retriever.engine.get(["manual-c2"])
    assert not any(k in record.metadata for k in RRF_METADATA_KEYS)
    assert_same_node(_by_id(retriever.retrieve("oscilloscope"))["manual-c2"], MANUAL[2])


def _ids_per_leg(retriever: Any, query: str) -> list[set[str]]:
    return [{h.id for h in retriever.search(query, weights=w, top_k=50).hits} for w in ({"keyword": 0}, {"dense": 0})]


def test_delete_ref_doc_removes_every_chunk_from_every_store(retriever: Any) -> None:
    before = retriever.engine.count()
    chunk_ids = {n.node_id for n in MANUAL}
    assert all(chunk_ids <= ids for ids in _ids_per_leg(retriever, "zebrafish calibration oscilloscope paragraph"))
    assert retriever.delete_ref_doc("manual") == 3
    assert retriever.engine.count() == {name: n - 3 for name, n in before.items()}
    for ids in _ids_per_leg(retriever, "zebrafish calibration oscilloscope paragraph manual"):
        assert not chunk_ids & ids and {"other-c0", "other-c1", "D9"} <= ids  # the other documents stay
    assert retriever.delete_ref_doc("manual") == 0  # gone: nothing more to delete
    assert retriever.delete_ref_doc("D9") == 1  # a Document inserted whole is its own source


def test_delete_ref_doc_of_unknown_source_deletes_nothing(retriever: Any) -> None:
    before = retriever.engine.count()
    assert retriever.delete_ref_doc("no-such-document") == 0
    assert asyncio.run(retriever.adelete_ref_doc("no-such-document")) == 0
    assert retriever.engine.count() == before


def test_delete_ref_doc_removes_a_half_written_document(retriever: Any) -> None:
    """A chunk that reached only the keyword store (a write from an older version, a store restored from backup) is
    found there and removed too: the ids are the union over the stores."""
    keyword = retriever.engine.legs["keyword"].store
    _, text, metadata = node_record(TextNode(id_="stray", text="stray zebrafish", relationships={
        R.SOURCE: RelatedNodeInfo(node_id="manual")}))
    keyword.add(["stray"], [text], [metadata])
    assert asyncio.run(retriever.adelete_ref_doc("manual")) == 4
    assert keyword.get(["stray"]) == []


@pytest.mark.parametrize("bad", ["", "x" * 5000, "a\x00b", 42, None, b"manual", ["manual"]])
def test_hostile_ref_doc_ids_get_our_error_and_delete_nothing(retriever: Any, bad: Any) -> None:
    before = retriever.engine.count()
    with pytest.raises(RRFRetrieverError):
        retriever.delete_ref_doc(bad)
    with pytest.raises(RRFRetrieverError):
        asyncio.run(retriever.adelete_ref_doc(bad))
    assert retriever.engine.count() == before


@pytest.mark.parametrize("bad", ["", "a\x00b", "x" * 5000])
def test_a_node_whose_source_id_could_never_be_deleted_is_refused(retriever: Any, bad: str) -> None:
    before = retriever.engine.count()
    node = TextNode(id_="n-bad", text="t", relationships={R.SOURCE: RelatedNodeInfo(node_id=bad)})
    with pytest.raises(InvalidArgumentError):
        retriever.insert_nodes([MANUAL[0], node])
    assert retriever.engine.count() == before


def test_a_source_relationship_given_as_a_list_is_refused(retriever: Any) -> None:
    node = TextNode(id_="n-bad", text="t", relationships={R.SOURCE: [RelatedNodeInfo(node_id="manual")]})
    with pytest.raises(InvalidArgumentError, match="n-bad"):
        retriever.insert_nodes([node])


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [object(), b"\xff", "\udc80", _nested(MAX_METADATA_DEPTH + 1)])
def test_a_node_with_metadata_we_cannot_store_gets_our_error_and_writes_nothing(retriever: Any, value: Any) -> None:
    before = retriever.engine.count()
    with pytest.raises(InvalidArgumentError):
        retriever.insert_nodes([MANUAL[0], TextNode(id_="n-bad", text="t", metadata={"x": value})])
    assert retriever.engine.count() == before


def test_metadata_near_the_limits_is_accepted(retriever: Any) -> None:
    """The node's JSON is a string (no extra depth) and holds the metadata a second time: a 400 kB value fits."""
    node = TextNode(id_="big", text="walrus", metadata={"blob": "b" * 400_000, "deep": _nested(MAX_METADATA_DEPTH - 2)},
                    relationships={R.SOURCE: RelatedNodeInfo(node_id="big-doc")})
    retriever.insert_nodes([node])
    assert_same_node(_by_id(retriever.retrieve("walrus"))["big"], node)


def test_engine_delete_where_refuses_an_empty_filter(retriever: Any) -> None:
    before = retriever.engine.count()
    for empty in (None, {}):
        with pytest.raises(InvalidArgumentError):
            retriever.engine.delete_where(empty)
    assert retriever.engine.count() == before


def test_unreadable_node_content_falls_back_to_a_plain_node(retriever: Any) -> None:
    retriever.add_texts(["quokka text"], metadatas=[{"_node_content": "{not json", "lang": "en"}], ids=["q1"])
    (node,) = [n.node for n in retriever.retrieve("quokka") if n.node.node_id == "q1"]
    assert isinstance(node, TextNode) and node.get_content() == "quokka text" and node.metadata["lang"] == "en"
    assert "_node_content" not in retriever.invoke("quokka", k=1)[0].metadata


def test_persistent_index_reopened_keeps_relationships(tmp_path: Path) -> None:
    with EnsembleRRFRetriever.from_documents(ALL, HashingEmbedding(64), path=tmp_path / "idx") as r:
        pass
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(64), path=tmp_path / "idx") as reopened:
        got = _by_id(reopened.retrieve("zebrafish calibration oscilloscope harmonica"))
        for node in [*MANUAL, *OTHER]:
            assert_same_node(got[node.node_id], node)
        assert reopened.delete_ref_doc("other") == 2
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(64), path=tmp_path / "idx") as again:
        assert not {"other-c0", "other-c1"} & set(_by_id(again.retrieve("zebrafish harmonica")))
    assert r.engine.closed


def test_llamaindex_retriever_as_a_source_keeps_its_nodes_whole() -> None:
    from llama_index.retrievers.bm25 import BM25Retriever

    bm25 = BM25Retriever.from_defaults(nodes=MANUAL, similarity_top_k=3)
    with EnsembleRRFRetriever(sources={"bm25": bm25}) as r:
        got = _by_id(r.retrieve("oscilloscope calibration"))
        assert_same_node(got["manual-c2"], MANUAL[2])
        assert not set(HIDDEN) & set(r.invoke("oscilloscope")[0].metadata)


# ---- the conversion alone (no store): an invariant over any metadata and source id -----------------------------

_KEYS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda k: k not in (*RRF_METADATA_KEYS, "_node_content", "_node_type"))  # ours and LlamaIndex's
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(st.characters(blacklist_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(metadata=st.dictionaries(_KEYS, _VALUES, max_size=5),
       source=st.none() | st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40))
def test_node_record_and_stored_node_round_trip(metadata: dict[str, Any], source: str | None) -> None:
    rel = {} if source is None else {R.SOURCE: RelatedNodeInfo(node_id=source)}
    node = TextNode(id_="n1", text="body", metadata=metadata, relationships=rel, excluded_llm_metadata_keys=["k"])
    try:
        node_id, text, stored = node_record(node)
    except InvalidArgumentError:
        assert source is not None and "\x00" in source  # only a source id we could never delete is refused
        return
    back = stored_node(node_id, text, stored)
    assert back is not None and back.metadata == metadata and back.ref_doc_id == source
    assert back.excluded_llm_metadata_keys == ["k"] and back.get_content() == "body"
    # What a LangChain user sees: the user's keys and ref_doc_id; LlamaIndex's copies of ref_doc_id hidden.
    expected = {**metadata, **({} if source is None else dict.fromkeys(("ref_doc_id", "doc_id", "document_id"), source))}
    if "ref_doc_id" in expected:
        expected = {k: v for k, v in expected.items()
                    if not (k in ("doc_id", "document_id") and v == expected["ref_doc_id"])}
    assert public_metadata(stored) == expected
