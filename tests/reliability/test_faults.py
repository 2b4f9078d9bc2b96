"""Faults: a failing or hanging embedder, a store failing in search or in the middle of an add, an SQLite file
locked by ANOTHER PROCESS, a Qdrant path already open (qdrant-client and qdrant-edge, across processes).

Each gives the documented degradation or a clear error of our type, and nothing stored before is lost (checked
by reopening the stores). Real stores throughout; failures are injected by subclassing a real store or by a real
second process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.engine import HybridEngine
from rrf_retriever.errors import (
    AllLegsFailedError,
    DimensionMismatchError,
    EmbeddingError,
    RRFRetrieverError,
    StoreError,
    StoreLockedError,
)
from rrf_retriever.retriever import EnsembleRRFRetriever
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore
from rrf_retriever.stores.qdrant.ops import Op
from tests.reliability.workloads import DIM, REPO

DOCS = {
    "pw": ("How to reset your password from the login page", {"session_id": 1}),
    "e401": ("Error E401 unauthorized: the API token expired", {"session_id": 1}),
    "sso": ("Single sign-on with SAML and OIDC providers", {"session_id": 2}),
    "disk": ("File synchronisation halts when the disk is full", {"session_id": 3}),
}


def _add_docs(target: Any) -> None:
    target.add(list(DOCS), [t for t, _ in DOCS.values()], [m for _, m in DOCS.values()])


@contextlib.contextmanager
def _other_process(code: str) -> Iterator[subprocess.Popen[str]]:
    """Run ``code`` in a second Python process; it prints ``ready`` and holds its resources until released."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", code + "\nprint('ready', flush=True)\nimport sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if line != "ready":
            raise RuntimeError(f"helper process failed: {proc.stderr.read() if proc.stderr else ''}")
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


# ---- the embedder -------------------------------------------------------------------------------------


class BrokenQueryEmbedding(HashingEmbedding):
    """Indexes fine; at query time it raises, hangs, or returns garbage, as ``mode`` says."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim)
        self.mode = "ok"
        self.release = threading.Event()
        self.plain = HashingEmbedding(dim)  # what "ok" answers: the same vectors the documents were indexed with

    def _embed_one_query(self, text: str) -> list[float]:
        if self.mode == "raise":
            msg = "model server returned 503"
            raise ConnectionError(msg)
        if self.mode == "hang":
            self.release.wait(10)
        if self.mode == "nan":
            return [float("nan")] * DIM
        if self.mode == "short":
            return [0.5] * (DIM - 1)
        return self.plain.embed_query(text)

    async def aembed_query(self, text: str) -> list[float]:
        if self.mode == "hang":
            await asyncio.sleep(10)
        return self._embed_one_query(text)


@pytest.fixture
def broken() -> Iterator[tuple[EnsembleRRFRetriever, BrokenQueryEmbedding]]:
    embedding = BrokenQueryEmbedding()
    dense = QdrantDenseStore(embedding, location=":memory:")
    retriever = EnsembleRRFRetriever(dense=dense, keyword=FTS5KeywordStore(), leg_timeout=0.3)
    _add_docs(retriever.engine)
    yield retriever, embedding
    embedding.release.set()
    retriever.engine.close()


@pytest.mark.parametrize("mode", ["raise", "nan", "short"])
def test_a_broken_query_embedding_degrades_every_path_to_keyword_results(broken: Any, mode: str) -> None:
    retriever, embedding = broken
    embedding.mode = mode
    for call in (lambda: retriever.invoke("reset password"),
                 lambda: asyncio.run(retriever.ainvoke("reset password")),
                 lambda: retriever.retrieve("reset password"),
                 lambda: asyncio.run(retriever.aretrieve("reset password"))):
        with pytest.warns(RuntimeWarning, match="dense"):
            out = call()
        assert out, mode
    with pytest.warns(RuntimeWarning):
        result = retriever.search("reset password")
    dense = next(t for t in result.trace.legs if t.name == "dense")
    assert dense.error and not dense.called and result.trace.degraded
    assert ("503" if mode == "raise" else "dimension" if mode == "short" else "NaN") in dense.error
    retriever.update_settings(on_error="raise")
    expected = EmbeddingError if mode == "raise" else DimensionMismatchError
    with pytest.raises(expected):
        retriever.invoke("reset password")
    with pytest.raises(RRFRetrieverError):
        asyncio.run(retriever.ainvoke("reset password"))


def test_a_hanging_query_embedding_is_dropped_after_leg_timeout_sync_and_async(broken: Any) -> None:
    retriever, embedding = broken
    embedding.mode = "hang"
    with pytest.warns(RuntimeWarning, match="timed out"):
        docs = retriever.invoke("reset password")
    assert docs and all(set(d.metadata["rrf_ranks"]) == {"keyword"} for d in docs)
    with pytest.warns(RuntimeWarning, match="timed out"):
        nodes = asyncio.run(retriever.aretrieve("reset password"))
    assert [n.node.id_ for n in nodes] == [d.id for d in docs]
    # An all-dense query (keyword weight 0) with a hung embedder: no hits, degraded, never an error.
    with pytest.warns(RuntimeWarning, match="timed out"):
        assert retriever.invoke("reset password", weights={"keyword": 0.0}) == []


def test_an_embedder_failing_during_add_writes_nothing_and_keeps_the_old_content(tmp_path: Path) -> None:
    class FailingDocs(HashingEmbedding):
        fail = False

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            if self.fail:
                msg = "CUDA out of memory"
                raise MemoryError(msg)
            return super().embed_documents(texts)

    embedding = FailingDocs(DIM)
    keyword = FTS5KeywordStore(str(tmp_path / "kw.sqlite3"))
    dense = QdrantEdgeDenseStore(embedding, path=str(tmp_path / "edge"))
    engine = HybridEngine({"keyword": keyword, "dense": dense})
    _add_docs(engine)
    embedding.fail = True
    with pytest.raises(EmbeddingError, match="nothing was written"):
        engine.add(["pw", "new"], ["changed", "new text"])
    keyword.close()
    dense.close()
    _assert_reopened_intact(tmp_path)


# ---- stores -------------------------------------------------------------------------------------------


def test_a_store_failing_in_search_degrades_or_raises_our_error() -> None:
    keyword = FTS5KeywordStore()
    dense = QdrantDenseStore(HashingEmbedding(DIM), location=":memory:")
    engine = HybridEngine({"dense": dense, "keyword": keyword})
    _add_docs(engine)
    keyword.close()  # the keyword store is gone (a closed connection: a real sqlite3.ProgrammingError inside)
    with pytest.warns(RuntimeWarning, match="keyword"):
        result = engine.search("reset password")
    assert result.ids and result.trace.degraded
    assert all(set(h.ranks) == {"dense"} for h in result.hits)
    engine.update_settings(on_error="raise")
    with pytest.raises(StoreError):
        engine.search("reset password")
    with pytest.raises(StoreError):
        asyncio.run(engine.asearch("reset password"))
    dense.close()
    with pytest.raises(AllLegsFailedError):
        engine.update_settings(on_error="degrade")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.search("reset password")


class EdgeFailingMidAdd(QdrantEdgeDenseStore):
    """A real qdrant-edge store that fails on its n-th upsert call, after earlier chunks were written."""

    fail_on_call: int | None = None
    calls = 0

    def _call(self, op: Op, api: Any) -> Any:
        if op.action == "upsert":
            self.calls += 1
            if self.fail_on_call is not None and self.calls == self.fail_on_call:
                msg = "No space left on device"
                raise StoreError(msg)
        return super()._call(op, api)


def _assert_reopened_intact(tmp_path: Path) -> None:
    """Reopen both stores: exactly DOCS, identical in both, as first written."""
    keyword = FTS5KeywordStore(str(tmp_path / "kw.sqlite3"))
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(tmp_path / "edge"))
    try:
        every = [*DOCS, "new", "n0", "n1", "n2", "n3", "n4", "n5"]
        for store in (keyword, dense):
            assert store.count() == len(DOCS)
            assert {r.id: (r.text, dict(r.metadata)) for r in store.get(every)} == {
                i: (t, m) for i, (t, m) in DOCS.items()
            }
    finally:
        keyword.close()
        dense.close()


def test_a_store_failing_in_the_middle_of_an_add_leaves_no_document_in_one_store_only(tmp_path: Path) -> None:
    keyword = FTS5KeywordStore(str(tmp_path / "kw.sqlite3"))
    dense = EdgeFailingMidAdd(HashingEmbedding(DIM), path=str(tmp_path / "edge"), batch_size=2)
    engine = HybridEngine({"keyword": keyword, "dense": dense}, journal=tmp_path / "journal.sqlite3")
    _add_docs(engine)
    # Keyword written in full, then the dense store writes 2 chunks of 2 and fails on the third.
    dense.calls, dense.fail_on_call = 0, 3
    batch = ["pw", "sso", "n0", "n1", "n2", "n3"]
    with pytest.raises(StoreError, match="rolled back"):
        engine.add(batch, [f"replacement {i}" for i in batch], [{"session_id": 9}] * len(batch))
    assert engine.journal is not None and engine.journal.pending() == []
    keyword.close()
    dense.close()
    engine.journal.close()
    _assert_reopened_intact(tmp_path)


# ---- locks held by another process --------------------------------------------------------------------


def test_an_sqlite_file_locked_by_another_process_is_our_error_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite3"
    keyword = FTS5KeywordStore(str(path), timeout=0.3)
    dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(tmp_path / "edge"))
    engine = HybridEngine({"keyword": keyword, "dense": dense})
    _add_docs(engine)
    code = f"import sqlite3\nc = sqlite3.connect({str(path)!r}, isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')"
    with _other_process(code):
        with pytest.raises(StoreLockedError, match="locked"):
            engine.add(["new"], ["a new document about passwords"])
        with pytest.raises(StoreLockedError):
            engine.delete(["pw"])
        # Reads either still work (WAL readers) or degrade to the dense leg; never a raw sqlite3 error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert engine.search("reset password").ids
        with pytest.raises(StoreLockedError):
            FTS5KeywordStore(str(tmp_path / "kw.sqlite3"), timeout=0.2).add(["x"], ["y"])
    engine.close()
    keyword.close()
    dense.close()
    _assert_reopened_intact(tmp_path)


def test_a_qdrant_client_path_open_in_another_process_is_our_error(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    first = QdrantDenseStore(HashingEmbedding(DIM), path=str(path))
    _add_docs(first)
    first.close()
    code = (
        "from rrf_retriever.stores.qdrant import QdrantDenseStore\n"
        "from rrf_retriever.embeddings import HashingEmbedding\n"
        f"s = QdrantDenseStore(HashingEmbedding({DIM}), path={str(path)!r})"
    )
    with _other_process(code):
        with pytest.raises(StoreLockedError):
            QdrantDenseStore(HashingEmbedding(DIM), path=str(path))
        with pytest.raises(StoreLockedError):
            EnsembleRRFRetriever.from_texts([], HashingEmbedding(DIM), path=str(tmp_path), dense="qdrant")  # held
    reopened = QdrantDenseStore(HashingEmbedding(DIM), path=str(path))
    assert reopened.count() == len(DOCS)
    assert {r.id: r.text for r in reopened.get(list(DOCS))} == {i: t for i, (t, _) in DOCS.items()}
    reopened.close()


def test_a_qdrant_edge_path_open_in_another_process_is_our_error(tmp_path: Path) -> None:
    path = tmp_path / "qdrant-edge"  # where from_texts(path=tmp_path) keeps its default dense store
    first = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(path))
    _add_docs(first)
    first.close()
    code = (
        "from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore\n"
        "from rrf_retriever.embeddings import HashingEmbedding\n"
        f"s = QdrantEdgeDenseStore(HashingEmbedding({DIM}), path={str(path)!r})\n"
        "assert s.count() == 4"
    )
    with _other_process(code):
        for _ in range(2):  # a refused open must not break the holder or leave a stale lock behind
            with pytest.raises(StoreLockedError, match="open elsewhere"):
                QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(path))
        with pytest.raises(StoreLockedError):
            EnsembleRRFRetriever.from_texts([], HashingEmbedding(DIM), path=str(tmp_path))
    reopened = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=str(path))
    assert reopened.count() == len(DOCS)
    assert {r.id: r.text for r in reopened.get(list(DOCS))} == {i: t for i, (t, _) in DOCS.items()}
    reopened.close()
