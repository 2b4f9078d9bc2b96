"""``show_progress=`` from the constructors and writes users call, in both frameworks: True draws the bars of that
write (embedding, upsert), False silences every bar (even a model's own), the default draws none here (stderr is
captured, not a terminal)."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.documents import Document
from llama_index.core.schema import TextNode

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.langchain import RRFVectorStore as LangChainStore
from rrf_retriever.llama_index import RRFVectorStore as LlamaIndexStore

TEXTS = ["first note about sync", "second note about backups", "third note about quotas"]


def _bars(capfd: pytest.CaptureFixture[str]) -> str:
    return capfd.readouterr().err


def test_from_texts_and_add_texts(capfd: pytest.CaptureFixture[str]) -> None:
    r = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), keyword="fts5", dense="qdrant",
                                        show_progress=True)
    err = _bars(capfd)
    assert "embedding (hashing-16)" in err and "upserting" in err
    r.add_texts(["a fourth note"], ids=["n4"])
    assert _bars(capfd) == ""  # the default: a short job, and stderr is not a terminal
    r.add_texts(["a fifth note"], ids=["n5"], show_progress=True)
    assert "upserting" in _bars(capfd)
    asyncio.run(r.aadd_texts(["a sixth note"], ids=["n6"], show_progress=True))
    assert "upserting" in _bars(capfd)
    r.close()


def test_false_silences_even_the_models_own_bar(capfd: pytest.CaptureFixture[str]) -> None:
    model = HashingEmbedding(16)
    model.show_progress = True
    r = EnsembleRRFRetriever.from_texts([], model, keyword="fts5", dense="qdrant")
    _bars(capfd)
    r.add_texts(TEXTS, show_progress=False)
    r.add_documents([Document(page_content="doc", id="d1"), TextNode(id_="n1", text="node")], show_progress=False)
    r.insert_nodes([TextNode(id_="n2", text="node two")], show_progress=False)
    assert _bars(capfd) == ""
    r.insert_nodes([TextNode(id_="n3", text="node three")])
    assert "embedding (hashing-16)" in _bars(capfd)  # the model's own setting, the call saying nothing
    r.close()


def test_from_documents_and_add_documents(capfd: pytest.CaptureFixture[str]) -> None:
    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    r = EnsembleRRFRetriever.from_documents(docs, HashingEmbedding(16), keyword="fts5", dense="qdrant",
                                            show_progress=True)
    assert "upserting" in _bars(capfd)
    asyncio.run(r.aadd_documents([Document(page_content="more", id="m")], show_progress=True))
    assert "upserting" in _bars(capfd)
    r.close()


def test_langchain_vector_store(capfd: pytest.CaptureFixture[str]) -> None:
    store = LangChainStore.from_texts(TEXTS, HashingEmbedding(16), keyword="fts5", dense="qdrant",
                                      show_progress=True)
    assert "upserting" in _bars(capfd)
    store.add_texts(["quiet"], show_progress=False)
    store.add_documents([Document(page_content="quiet too")], show_progress=False)
    assert _bars(capfd) == ""
    store.add_documents([Document(page_content="loud")])  # the store's own setting
    assert "upserting" in _bars(capfd)
    store.close()


def test_llama_index_vector_store(capfd: pytest.CaptureFixture[str]) -> None:
    store = LlamaIndexStore(show_progress=True)
    store.add([TextNode(id_="a", text="x", embedding=[1.0, 0.0])])
    assert "upserting" in _bars(capfd)
    store.add([TextNode(id_="b", text="y", embedding=[0.0, 1.0])], show_progress=False)
    assert _bars(capfd) == ""
    quiet = LlamaIndexStore()
    quiet.add([TextNode(id_="a", text="x", embedding=[1.0, 0.0])])
    assert _bars(capfd) == ""
    store.close()
    quiet.close()


def test_a_switch_that_is_not_a_bool_is_refused_at_the_door() -> None:
    with pytest.raises(InvalidTypeError, match="show_progress"):
        LlamaIndexStore(show_progress="yes")  # type: ignore[arg-type]  # the wrong type is the point
    r = EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), keyword="fts5", dense="qdrant")
    with pytest.raises(InvalidTypeError, match="show_progress"):
        r.add_texts(["x"], show_progress="no")
    assert r.get_by_ids([r.add_texts(["y"])[0]])  # a refused call wrote nothing, the next works
    r.close()


def test_the_constructor_names_where_show_progress_goes() -> None:
    from rrf_retriever import FTS5KeywordStore
    from rrf_retriever.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="from_texts, from_documents, add_texts"):
        EnsembleRRFRetriever(keyword=FTS5KeywordStore(), show_progress=True)
