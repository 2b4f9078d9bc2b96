"""Every public method of both VectorStores (LangChain's and LlamaIndex's ``RRFVectorStore``) called with
wrong-typed arguments: each refuses at its door with our error (``InvalidTypeError`` / ``InvalidArgumentError``, one
line, naming the argument), and nothing stored changes.

The sharpest case is a string, bytes or a dict where a list of ids or texts is expected: ``list(...)`` split it
(``delete("10")`` deleted "1" and "0", kept "10" and returned True; ``add_texts("hi")`` wrote two one-letter
documents). Other calls raised a bare ``TypeError`` / ``ValueError`` / ``AttributeError`` from Python, LangChain or
pydantic. A test below also checks that the tables name every public method, so a new door cannot be left out.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.engine import StoreLeg
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.langchain import RRFVectorStore as LangChainStore
from rrf_retriever.llama_index import RRFVectorStore as LlamaIndexStore

EMBED = HashingEmbedding(dim=16)
IDS = ["1", "0", "10"]
TEXTS = ["alpha one", "beta zero", "gamma ten"]
VECTOR = EMBED.embed_query("alpha")

Call = Callable[[Any], Any]
Row = tuple[str, Call, str]  # (label: the method first, the call, a word the message must hold)


def _q(**fields: Any) -> VectorStoreQuery:
    return VectorStoreQuery(**{"query_embedding": VECTOR, "query_str": "alpha", **fields})


LANGCHAIN: list[Row] = [
    ("add_texts a str", lambda s: s.add_texts("hi"), "texts"),
    ("add_texts bytes", lambda s: s.add_texts(b"hi"), "texts"),
    ("add_texts a dict", lambda s: s.add_texts({"hi": 1}), "texts"),
    ("add_texts None", lambda s: s.add_texts(None), "texts"),
    ("add_texts ids a str", lambda s: s.add_texts(["x", "y"], ids="ab"), "ids"),
    ("add_texts ids bytes", lambda s: s.add_texts(["x"], ids=b"a"), "ids"),
    ("add_texts ids of ints", lambda s: s.add_texts(["x"], ids=[5]), "ids"),
    ("add_texts metadatas a dict", lambda s: s.add_texts(["x"], metadatas={"n": 1}), "metadatas"),
    ("add_texts metadatas an int", lambda s: s.add_texts(["x"], metadatas=5), "metadatas"),
    ("add_texts metadatas an int, with ids", lambda s: s.add_texts(["x"], metadatas=5, ids=["x"]), "metadatas"),
    ("aadd_texts metadatas a float", lambda s: s.aadd_texts(["x"], metadatas=2.5), "metadatas"),
    ("aadd_texts a str", lambda s: s.aadd_texts("hi"), "texts"),
    ("aadd_texts ids a str", lambda s: s.aadd_texts(["x", "y"], ids="ab"), "ids"),
    ("add_documents a str", lambda s: s.add_documents("hi"), "documents"),
    ("add_documents one Document", lambda s: s.add_documents(Document(page_content="x")), "documents"),
    ("add_documents strings", lambda s: s.add_documents(["x"]), "Document"),
    ("add_documents ids a str", lambda s: s.add_documents([Document(page_content="x")], ids="a"), "ids"),
    ("aadd_documents a str", lambda s: s.aadd_documents("hi"), "documents"),
    ("delete a str", lambda s: s.delete("10"), "ids"),
    ("delete bytes", lambda s: s.delete(b"10"), "ids"),
    ("delete a dict", lambda s: s.delete({"10": 1}), "ids"),
    ("delete an int", lambda s: s.delete(5), "ids"),
    ("adelete a str", lambda s: s.adelete("10"), "ids"),
    ("get_by_ids a str", lambda s: s.get_by_ids("10"), "ids"),
    ("get_by_ids a dict", lambda s: s.get_by_ids({"1": 1}), "ids"),
    ("get_by_ids None", lambda s: s.get_by_ids(None), "ids"),
    ("aget_by_ids a str", lambda s: s.aget_by_ids("10"), "ids"),
    ("similarity_search None", lambda s: s.similarity_search(None), "query"),
    ("similarity_search k a str", lambda s: s.similarity_search("alpha", k="2"), "k"),
    ("similarity_search filter an int", lambda s: s.similarity_search("alpha", filter=5), "filter"),
    ("asimilarity_search bytes", lambda s: s.asimilarity_search(b"alpha"), "query"),
    ("similarity_search_with_score k None", lambda s: s.similarity_search_with_score("alpha", k=None), "k"),
    ("asimilarity_search_with_score k a float", lambda s: s.asimilarity_search_with_score("alpha", k=2.5), "k"),
    ("similarity_search_with_relevance_scores threshold a str",
     lambda s: s.similarity_search_with_relevance_scores("alpha", score_threshold="0.5"), "score_threshold"),
    ("asimilarity_search_with_relevance_scores threshold above 1",
     lambda s: s.asimilarity_search_with_relevance_scores("alpha", score_threshold=2), "score_threshold"),
    ("similarity_search_by_vector a str", lambda s: s.similarity_search_by_vector("alpha"), "embedding"),
    ("similarity_search_by_vector None", lambda s: s.similarity_search_by_vector(None), "embedding"),
    ("similarity_search_by_vector k a str", lambda s: s.similarity_search_by_vector(VECTOR, k="2"), "k"),
    ("similarity_search_by_vector filter an int", lambda s: s.similarity_search_by_vector(VECTOR, filter=5), "filter"),
    ("asimilarity_search_by_vector a str", lambda s: s.asimilarity_search_by_vector("alpha"), "embedding"),
    ("max_marginal_relevance_search fetch_k a str",
     lambda s: s.max_marginal_relevance_search("alpha", fetch_k="20"), "fetch_k"),
    ("max_marginal_relevance_search k a str", lambda s: s.max_marginal_relevance_search("alpha", k="x"), "k"),
    ("max_marginal_relevance_search lambda_mult a str",
     lambda s: s.max_marginal_relevance_search("alpha", lambda_mult="x"), "lambda_mult"),
    ("amax_marginal_relevance_search fetch_k a list",
     lambda s: s.amax_marginal_relevance_search("alpha", fetch_k=[20]), "fetch_k"),
    ("max_marginal_relevance_search_by_vector a str",
     lambda s: s.max_marginal_relevance_search_by_vector("alpha"), "embedding"),
    ("max_marginal_relevance_search_by_vector None",
     lambda s: s.max_marginal_relevance_search_by_vector(None), "embedding"),
    ("max_marginal_relevance_search_by_vector fetch_k a str",
     lambda s: s.max_marginal_relevance_search_by_vector(VECTOR, fetch_k="20"), "fetch_k"),
    ("amax_marginal_relevance_search_by_vector lambda_mult a str",
     lambda s: s.amax_marginal_relevance_search_by_vector(VECTOR, lambda_mult="x"), "lambda_mult"),
    ("get_by_filter filter an int", lambda s: s.get_by_filter(5), "filter"),
    ("get_by_filter limit a str", lambda s: s.get_by_filter({"team": "infra"}, limit="3"), "limit"),
    ("aget_by_filter filter a list", lambda s: s.aget_by_filter(["team"]), "filter"),
    ("search an unknown search_type", lambda s: s.search("alpha", "nearest"), "search_type"),
    ("search search_type an int", lambda s: s.search("alpha", 5), "search_type"),
    ("asearch search_type None", lambda s: s.asearch("alpha", None), "search_type"),
    ("as_retriever an unknown search_type", lambda s: s.as_retriever(search_type="nearest"), "search_type"),
    ("as_retriever search_kwargs a str", lambda s: s.as_retriever(search_kwargs="k=2"), "search_kwargs"),
    ("as_hybrid_retriever k a str", lambda s: s.as_hybrid_retriever(k="2"), "top_k"),
    ("as_hybrid_retriever filter an int", lambda s: s.as_hybrid_retriever(filter=5), "filter"),
    ("from_texts a str", lambda s: type(s).from_texts("hi", EMBED), "texts"),
    ("afrom_texts a str", lambda s: type(s).afrom_texts("hi", EMBED), "texts"),
    ("from_documents a str", lambda s: type(s).from_documents("hi", EMBED), "documents"),
    ("from_documents one Document", lambda s: type(s).from_documents(Document(page_content="x"), EMBED), "documents"),
    ("afrom_documents strings", lambda s: type(s).afrom_documents(["hi"], EMBED), "documents[0]"),
]
LLAMA_INDEX: list[Row] = [
    ("add a str", lambda s: s.add("hi"), "nodes"),
    ("add one node", lambda s: s.add(TextNode(id_="x", text="x", embedding=VECTOR)), "nodes"),
    ("add strings", lambda s: s.add(["x"]), "nodes[0]"),
    ("add show_progress a str", lambda s: s.add([], show_progress="yes"), "show_progress"),
    ("async_add a str", lambda s: s.async_add("hi"), "nodes"),
    ("delete an int", lambda s: s.delete(5), "ref_doc_id"),
    ("delete None", lambda s: s.delete(None), "ref_doc_id"),
    ("adelete a list", lambda s: s.adelete(["d"]), "ref_doc_id"),
    ("delete_nodes a str", lambda s: s.delete_nodes("10"), "node_ids"),
    ("delete_nodes bytes", lambda s: s.delete_nodes(b"10"), "node_ids"),
    ("delete_nodes a dict", lambda s: s.delete_nodes({"1": 1}), "node_ids"),
    ("delete_nodes filters a dict", lambda s: s.delete_nodes(filters={"n": 1}), "filters"),
    ("delete_nodes filters a str", lambda s: s.delete_nodes(["1"], filters="n=1"), "filters"),
    ("adelete_nodes a str", lambda s: s.adelete_nodes("10"), "node_ids"),
    ("get_nodes a str", lambda s: s.get_nodes("10"), "node_ids"),
    ("get_nodes a dict", lambda s: s.get_nodes({"1": 1}), "node_ids"),
    ("get_nodes filters an int", lambda s: s.get_nodes(["1"], filters=5), "filters"),
    ("aget_nodes a str", lambda s: s.aget_nodes("10"), "node_ids"),
    ("query a str", lambda s: s.query("alpha"), "query"),
    ("query None", lambda s: s.query(None), "query"),
    ("query query_embedding a str", lambda s: s.query(_q(query_embedding="ab")), "query_embedding"),
    ("query similarity_top_k a str", lambda s: s.query(_q(similarity_top_k="2")), "similarity_top_k"),
    ("query node_ids a str", lambda s: s.query(_q(node_ids="10")), "node_ids"),
    ("query node_ids a dict", lambda s: s.query(_q(node_ids={"1": 1})), "node_ids"),
    ("query doc_ids a str", lambda s: s.query(_q(doc_ids="d1")), "doc_ids"),
    ("query an unknown mode", lambda s: s.query(_q(mode="nearest")), "mode"),
    ("query query_str an int", lambda s: s.query(_q(query_str=5, mode="text_search")), "query_str"),
    ("query filters a str", lambda s: s.query(_q(filters="n=1")), "filters"),
    ("query alpha a str", lambda s: s.query(_q(mode="hybrid", alpha="x")), "alpha"),
    ("query hybrid_top_k a str", lambda s: s.query(_q(mode="hybrid", hybrid_top_k="x")), "hybrid_top_k"),
    ("aquery a str", lambda s: s.aquery("alpha"), "query"),
]
#: Public methods with no argument a caller can get wrong (or none that reaches the store), and why.
LANGCHAIN_EXEMPT = {
    "close": "takes no argument",
}
LLAMA_INDEX_EXEMPT = {
    "close": "takes no argument",
    "clear": "takes no argument",
    "aclear": "takes no argument",
    "persist": "LlamaIndex's no-op: the store writes through on every change, persist_path is not read",
    "class_name": "takes no argument",
    "model_post_init": "pydantic's hook, not a vector store method",
}


def _run(result: Any) -> Any:
    return asyncio.run(result) if inspect.iscoroutine(result) else result


def _stored(engine: Any) -> list[list[str]]:
    return [leg.store.ids_matching(None) for leg in engine.legs.values() if isinstance(leg, StoreLeg)]


@pytest.fixture(scope="module")
def langchain_store() -> LangChainStore:
    return LangChainStore.from_texts(TEXTS, EMBED, metadatas=[{"n": i} for i in range(3)], ids=IDS)


@pytest.fixture(scope="module")
def llama_index_store() -> LlamaIndexStore:
    store = LlamaIndexStore()
    store.add([TextNode(id_=i, text=t, metadata={"n": n}, embedding=EMBED.embed_query(t))
               for n, (i, t) in enumerate(zip(IDS, TEXTS))])
    return store


def _refused(store: Any, call: Call, word: str, state: Callable[[], Any]) -> None:
    before = state()
    with pytest.raises((InvalidTypeError, InvalidArgumentError)) as info:
        _run(call(store))
    message = str(info.value)
    assert word in message and "\n" not in message, message
    assert state() == before


@pytest.mark.parametrize(("call", "word"), [r[1:] for r in LANGCHAIN], ids=[r[0] for r in LANGCHAIN])
def test_langchain_vectorstore_refuses_wrong_types_at_its_door(langchain_store: LangChainStore, call: Call,
                                                                word: str) -> None:
    def state() -> Any:
        docs = langchain_store.get_by_ids(IDS)
        return _stored(langchain_store.retriever.engine), [(d.id, d.page_content, d.metadata) for d in docs]

    _refused(langchain_store, call, word, state)


@pytest.mark.parametrize(("call", "word"), [r[1:] for r in LLAMA_INDEX], ids=[r[0] for r in LLAMA_INDEX])
def test_llama_index_vector_store_refuses_wrong_types_at_its_door(llama_index_store: LlamaIndexStore, call: Call,
                                                                  word: str) -> None:
    def state() -> Any:
        nodes = llama_index_store.get_nodes(IDS)
        return _stored(llama_index_store.client.engine), [(n.node_id, n.get_content(), n.metadata) for n in nodes]

    _refused(llama_index_store, call, word, state)


def _public_methods(cls: type, owners: tuple[type, ...]) -> set[str]:
    names = set()
    for name in dir(cls):
        owner = next(k for k in cls.__mro__ if name in k.__dict__)
        if not name.startswith("_") and issubclass(owner, owners) and callable(getattr(cls, name)):
            names.add(name)
    return names


def test_the_tables_name_every_public_method() -> None:
    from langchain_core.vectorstores import VectorStore
    from llama_index.core.vector_stores.types import BasePydanticVectorStore

    for cls, owners, rows, exempt in (
        (LangChainStore, (VectorStore,), LANGCHAIN, LANGCHAIN_EXEMPT),
        (LlamaIndexStore, (BasePydanticVectorStore,), LLAMA_INDEX, LLAMA_INDEX_EXEMPT),
    ):
        covered = {label.split()[0] for label, *_ in rows}
        properties = {n for n in dir(cls) if isinstance(inspect.getattr_static(cls, n), property)}
        assert _public_methods(cls, owners) - properties - set(exempt) == covered, cls


def test_the_retriever_refuses_a_string_for_ids_too() -> None:
    retriever = EnsembleRRFRetriever.from_texts(TEXTS, EMBED, ids=IDS)
    for call, word in ((lambda: retriever.add_texts(["x", "y"], ids="xy"), "ids"),
                       (lambda: retriever.add_texts({"x": 1}), "texts"),
                       (lambda: retriever.add_documents([Document(page_content="x")], ids="x"), "ids"),
                       (lambda: retriever.delete({"10": 1}), "ids"),
                       (lambda: retriever.get_by_ids({"10": 1}), "ids"),
                       (lambda: retriever.invoke("ten", exclude_ids={"10": 1}), "exclude_ids"),
                       (lambda: retriever.invoke("ten", pinned_ids={"10": 1}), "pinned_ids"),
                       (lambda: retriever.add_texts(["x"], metadatas=5), "metadatas")):
        with pytest.raises(InvalidTypeError, match=word):
            call()
    assert sorted(r.id for r in retriever.get_by_ids([*IDS, "x", "y"])) == sorted(IDS)
    retriever.close()


def test_from_texts_and_from_documents_read_a_generator_once() -> None:
    # Before: from_texts detected the language on the generator, then indexed what was left of it (nothing), and
    # from_documents asked a generator for its len() (a bare TypeError).
    texts = ["Der Hund ist nicht im Haus.", "Die Katze ist auch nicht im Garten."]
    by_texts = EnsembleRRFRetriever.from_texts((t for t in texts), EMBED, ids=iter(["a", "b"]))
    by_documents = EnsembleRRFRetriever.from_documents((Document(id=i, page_content=t) for i, t in zip("ab", texts)),
                                                       EMBED)
    for retriever in (by_texts, by_documents):
        assert [(r.id, r.text) for r in retriever.get_by_ids(["a", "b"])] == list(zip("ab", texts))
        assert retriever.corpus_language == "german"
        retriever.close()


#: One value where a list belongs: a string, bytes, or a mapping (whose iteration gives letters, byte values, keys).
ONE_VALUE = st.one_of(st.text(min_size=1, max_size=12), st.binary(min_size=1, max_size=12),
                      st.dictionaries(st.text(min_size=1, max_size=4), st.integers(), min_size=1, max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=ONE_VALUE)
def test_one_value_where_a_list_belongs_is_refused_by_every_list_door(
    langchain_store: LangChainStore, llama_index_store: LlamaIndexStore, value: Any
) -> None:
    lc, li = langchain_store, llama_index_store
    lc_state, li_state = _stored(lc.retriever.engine), _stored(li.client.engine)
    doors: list[Callable[[], Any]] = [
        lambda: lc.delete(value), lambda: lc.get_by_ids(value), lambda: lc.add_texts(value),
        lambda: lc.add_texts(["x"] * 12, ids=value), lambda: li.delete_nodes(value), lambda: li.get_nodes(value),
        lambda: li.query(_q(node_ids=value)), lambda: li.query(_q(doc_ids=value)),
    ]
    for door in doors:
        with pytest.raises(InvalidTypeError):
            door()
    assert _stored(lc.retriever.engine) == lc_state
    assert _stored(li.client.engine) == li_state
