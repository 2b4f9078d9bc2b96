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
