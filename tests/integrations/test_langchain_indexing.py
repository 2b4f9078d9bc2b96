"""LangChain's indexing API (``langchain_core.indexing.index`` / ``aindex``) writes through our ``RRFVectorStore``
with the same stats and contents as through ``langchain_qdrant.QdrantVectorStore`` (qdrant-client ":memory:"),
run side by side: a re-index is a no-op, ``full`` deletes what is gone, ``incremental`` replaces a changed document.
``index()`` passes ``batch_size`` to ``add_documents``: accepted, and it bounds each all-or-nothing write (before,
refused as an unknown argument, so no ``index()`` call ran)."""

from __future__ import annotations

import hashlib
import json
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.indexing import InMemoryRecordManager, aindex, index

from rrf_retriever.errors import EmbeddingError, InvalidArgumentError, InvalidTypeError
from rrf_retriever.langchain import RRFVectorStore

qdrant_client = pytest.importorskip("qdrant_client")
langchain_qdrant = pytest.importorskip("langchain_qdrant")

DIM = 16


def _uuid_key(doc: Document) -> str:
    """A content key Qdrant takes as a point id (a UUID): sha256 of the text and metadata, as a UUID5."""
    digest = hashlib.sha256((doc.page_content + json.dumps(doc.metadata, sort_keys=True)).encode()).hexdigest()
    return str(uuid.uuid5(uuid.NAMESPACE_URL, digest))


def _docs(version: int = 0, sources: range = range(4)) -> list[Document]:
    """Two chunks per source file; ``version`` changes the text of source 1 only."""
    return [Document(page_content=f"chunk {c} of file {s}" + (f" revised {version}" if s == 1 and version else ""),
                     metadata={"source": f"file{s}.txt", "chunk": c}) for s in sources for c in range(2)]


class _Pair:
    """Our store and langchain-qdrant's, each with its own record manager, fed the same index() calls."""

    def __init__(self) -> None:
        embedding = DeterministicFakeEmbedding(size=DIM)
        self.ours = RRFVectorStore(embedding)
        client = qdrant_client.QdrantClient(":memory:")
        models = qdrant_client.models
        client.create_collection("docs", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE))
        self.theirs = langchain_qdrant.QdrantVectorStore(client, "docs", embedding)
        self.managers = [InMemoryRecordManager("ours"), InMemoryRecordManager("theirs")]
        for manager in self.managers:
            manager.create_schema()

    def index(self, docs: list[Document], cleanup: Any) -> dict[str, int]:
        stats = [index(docs, m, s, cleanup=cleanup, source_id_key="source", key_encoder=_uuid_key)
                 for m, s in zip(self.managers, (self.ours, self.theirs))]
        assert stats[0] == stats[1]
        return dict(stats[0])

    async def aindex(self, docs: list[Document], cleanup: Any) -> dict[str, int]:
        stats = [await aindex(docs, m, s, cleanup=cleanup, source_id_key="source", key_encoder=_uuid_key)
                 for m, s in zip(self.managers, (self.ours, self.theirs))]
        assert stats[0] == stats[1]
        return dict(stats[0])

    def contents(self) -> set[tuple[str, str, str]]:
        """What both stores hold (equal), as (id, text, source)."""
        held = []
        for manager, store in zip(self.managers, (self.ours, self.theirs)):
            keys = manager.list_keys()
            docs = store.get_by_ids(keys)  # langchain-qdrant gives the id as metadata["_id"], not Document.id
            held.append({(str(d.id or d.metadata["_id"]), d.page_content, d.metadata["source"]) for d in docs})
            assert len(held[-1]) == len(keys)
        assert held[0] == held[1]
        counts = self.ours.retriever.engine.count()
        assert counts == {"dense": len(held[0]), "keyword": len(held[0])}  # nothing left behind in either leg
        return held[0]


@pytest.fixture
def pair() -> Iterator[_Pair]:
    p = _Pair()
    yield p
    p.ours.close()


def _texts(held: set[tuple[str, str, str]]) -> set[str]:
    return {text for _, text, _ in held}


@pytest.mark.parametrize("cleanup", ["full", "incremental", "scoped_full"])
def test_index_matches_langchain_qdrant_and_reindexing_is_a_no_op(pair: _Pair, cleanup: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning either (our keys: no SHA-1)
        assert pair.index(_docs(), cleanup) == {"num_added": 8, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    first = pair.contents()
    assert _texts(first) == {d.page_content for d in _docs()}
    assert pair.index(_docs(), cleanup) == {"num_added": 0, "num_updated": 0, "num_skipped": 8, "num_deleted": 0}
    assert pair.contents() == first  # a no-op: same ids, same texts


def test_full_deletes_what_is_gone(pair: _Pair) -> None:
    pair.index(_docs(), "full")
    stats = pair.index(_docs(sources=range(2)), "full")  # files 2 and 3 are gone
    assert stats == {"num_added": 0, "num_updated": 0, "num_skipped": 4, "num_deleted": 4}
    assert _texts(pair.contents()) == {d.page_content for d in _docs(sources=range(2))}


def test_incremental_replaces_a_changed_document_and_keeps_the_others(pair: _Pair) -> None:
    pair.index(_docs(), "incremental")
    stats = pair.index(_docs(version=1), "incremental")  # file 1's two chunks changed
    assert stats == {"num_added": 2, "num_updated": 0, "num_skipped": 6, "num_deleted": 2}
    held = pair.contents()
    assert _texts(held) == {d.page_content for d in _docs(version=1)}
    assert not any("file 1" in t and "revised" not in t for t in _texts(held))  # the old version is gone
    stats = pair.index(_docs(version=1, sources=range(1, 2)), "incremental")  # incremental deletes no other file
    assert stats == {"num_added": 0, "num_updated": 0, "num_skipped": 2, "num_deleted": 0}
    assert len(pair.contents()) == 8


async def test_aindex_matches_langchain_qdrant(pair: _Pair) -> None:
    assert await pair.aindex(_docs(), "full") == {"num_added": 8, "num_updated": 0, "num_skipped": 0,
                                                  "num_deleted": 0}
    assert await pair.aindex(_docs(), "full") == {"num_added": 0, "num_updated": 0, "num_skipped": 8,
                                                  "num_deleted": 0}
    stats = await pair.aindex(_docs(version=2), "incremental")
    assert stats == {"num_added": 2, "num_updated": 0, "num_skipped": 6, "num_deleted": 2}
    stats = await pair.aindex(_docs(version=2, sources=range(3)), "full")
    assert stats == {"num_added": 0, "num_updated": 0, "num_skipped": 6, "num_deleted": 2}
    assert _texts(pair.contents()) == {d.page_content for d in _docs(version=2, sources=range(3))}


def test_index_with_a_small_batch_size_and_force_update(pair: _Pair) -> None:
    docs = _docs()
    assert pair.index(docs, None) == {"num_added": 8, "num_updated": 0, "num_skipped": 0, "num_deleted": 0}
    stats = [index(docs, m, s, cleanup="full", source_id_key="source", key_encoder=_uuid_key, batch_size=3,
                   force_update=True) for m, s in zip(pair.managers, (pair.ours, pair.theirs))]
    assert stats[0] == stats[1] == {"num_added": 0, "num_updated": 8, "num_skipped": 0, "num_deleted": 0}
    assert _texts(pair.contents()) == {d.page_content for d in docs}


class _Counting(DeterministicFakeEmbedding):
    """A LangChain embedding that records the size of every batch it embeds, and can fail on one call."""

    sizes: list[int] = []
    fail_at: int | None = None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.sizes.append(len(texts))
        if self.fail_at is not None and len(self.sizes) == self.fail_at:
            msg = "embedding service down"
            raise RuntimeError(msg)
        return super().embed_documents(texts)


@pytest.mark.parametrize("method", ["add_texts", "add_documents", "aadd_texts", "aadd_documents"])
async def test_batch_size_bounds_each_write(method: str) -> None:
    embedding = _Counting(size=DIM)
    with RRFVectorStore(embedding) as store:
        texts = [f"note {i}" for i in range(7)]
        docs = [Document(page_content=t, id=f"n{i}") for i, t in enumerate(texts)]

        async def write(**kwargs: Any) -> list[str]:
            ids = [f"n{i}" for i in range(7)]
            call = getattr(store, method)
            args = (texts,) if "texts" in method else (docs,)
            out = call(*args, ids=ids, **kwargs)
            return list(await out) if method.startswith("aadd") else list(out)

        embedding.sizes = []
        assert await write(batch_size=3) == [f"n{i}" for i in range(7)]
        assert embedding.sizes == [3, 3, 1]  # three all-or-nothing writes of at most 3
        embedding.sizes = []
        await write()
        assert embedding.sizes == [7]  # default: one write
        store.delete([f"n{i}" for i in range(7)])
        embedding.sizes, embedding.fail_at = [], 2
        with pytest.raises(EmbeddingError, match="documents 3 to 5"):
            await write(batch_size=3)
        assert [d.id for d in store.get_by_ids([f"n{i}" for i in range(7)])] == ["n0", "n1", "n2"]  # the first write


@pytest.mark.parametrize(("value", "error"), [(0, InvalidArgumentError), (-2, InvalidArgumentError),
                                               ("64", InvalidTypeError), (True, InvalidTypeError),
                                               (2.5, InvalidTypeError)])
def test_a_bad_batch_size_is_refused_by_name_and_nothing_is_written(value: Any, error: type[Exception]) -> None:
    with RRFVectorStore(DeterministicFakeEmbedding(size=DIM)) as store:
        with pytest.raises(error, match="batch_size"):
            store.add_texts(["a"], ids=["a"], batch_size=value)
        with pytest.raises(error, match="batch_size"):
            store.add_documents([Document(page_content="a", id="a")], batch_size=value)
        assert store.get_by_ids(["a"]) == []
