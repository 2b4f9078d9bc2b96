"""EnsembleRRFRetriever.open(path, embedding): reopen an index; a path open in this process says what to do."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import IndexDirectoryError, StoreLockedError

TEXTS = ["error E42 in the index", "a recipe for bread"]


def test_open_reopens_an_index_and_refuses_a_path_without_one(tmp_path: Path) -> None:
    EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), path=tmp_path / "idx").close()
    with EnsembleRRFRetriever.open(tmp_path / "idx", HashingEmbedding(16), k=1) as r:
        assert r.invoke("E42")[0].page_content == "error E42 in the index"
    with pytest.raises(IndexDirectoryError, match="no index"):
        EnsembleRRFRetriever.open(tmp_path / "missing", HashingEmbedding(16))
    assert not (tmp_path / "missing").exists()  # open creates nothing
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexDirectoryError, match="no index"):
        EnsembleRRFRetriever.open(tmp_path / "empty", HashingEmbedding(16))


def test_reopening_a_path_open_in_this_process_says_close_it_first(tmp_path: Path) -> None:
    first = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), path=tmp_path / "idx")
    with pytest.raises(StoreLockedError, match=r"already open in this process.*\.close\(\)"):
        EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), path=tmp_path / "idx")
    with pytest.raises(StoreLockedError, match=r"already open in this process"):
        EnsembleRRFRetriever.open(tmp_path / "idx", HashingEmbedding(16))
    first.search("E42")  # the first one is untouched
    first.close()
    EnsembleRRFRetriever.open(tmp_path / "idx", HashingEmbedding(16)).close()


def test_a_garbage_first_retriever_does_not_block_the_reopen(tmp_path: Path) -> None:
    first = EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), path=tmp_path / "idx")
    cycle = [first]
    cycle.append(cycle)  # garbage only the cycle collector frees
    del first, cycle
    with EnsembleRRFRetriever.open(tmp_path / "idx", HashingEmbedding(16)) as r:
        assert r.engine.count()
    gc.collect()


def test_index_keys_are_indexed_before_the_first_point_and_kept_on_reopen(tmp_path: Path) -> None:
    metas = [{"session_id": "s1"}, {"session_id": "s2"}]
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), metadatas=metas, path=tmp_path / "idx",
                                         index_keys=["session_id"]) as r:
        for leg in ("dense", "keyword"):
            store = r.engine.legs[leg].store
            assert store.index_keys == {"session_id"}
            assert ("session_id", "keyword") in store.indexes.known  # created by the write, not by a search
    with EnsembleRRFRetriever.open(tmp_path / "idx", HashingEmbedding(16)) as r:  # the manifest declares them
        assert r.engine.legs["dense"].store.index_keys == {"session_id"}
        assert r.invoke("E42", filter={"session_id": "s1"})[0].page_content == TEXTS[0]
    with EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), index_keys="session_id") as r:  # in memory
        assert r.engine.legs["dense"].store.index_keys == {"session_id"}
