"""Dense paths never escape the query's scope: a path's filter narrows within it. Only the UNSCOPED object (which
no JSON request can name) searches the whole store. Real stores (qdrant-edge, FTS5), hashing embeddings."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
from rrf_retriever.engine.paths import UNSCOPED
from rrf_retriever.errors import RRFRetrieverError

TEXTS = [f"memory {i} about the deployment token" for i in range(30)]
METAS = [{"session_id": i % 3, "kind": "note" if i % 2 else "todo"} for i in range(30)]


@pytest.fixture
def retriever(tmp_path: Path) -> EnsembleRRFRetriever:
    return EnsembleRRFRetriever.from_texts(TEXTS, HashingEmbedding(16), metadatas=METAS,
                                           ids=[f"m{i}" for i in range(30)], path=tmp_path / "idx")


def test_the_readme_example_stays_inside_the_callers_scope(retriever: EnsembleRRFRetriever) -> None:
    result = retriever.search("deployment token", top_k=20, filter={"session_id": [0]},
                              dense_paths={"dense_all": None})
    assert result.ids and {METAS[int(i[1:])]["session_id"] for i in result.ids} == {0}
    assert any("dense_all" in h.ranks for h in result.hits)


def test_a_path_filter_narrows_within_the_scope(retriever: EnsembleRRFRetriever) -> None:
    result = retriever.search("deployment token", top_k=20, filter={"session_id": [0, 1]},
                              dense_paths={"notes": {"kind": "note"}})
    via_path = [h.id for h in result.hits if "notes" in h.ranks]
    assert via_path and all(METAS[int(i[1:])]["session_id"] in (0, 1) and METAS[int(i[1:])]["kind"] == "note"
                            for i in via_path)
    # A path filter that contradicts the scope finds nothing outside it.
    other = retriever.search("deployment token", top_k=20, filter={"session_id": [0]},
                             dense_paths={"elsewhere": {"session_id": 2}})
    assert not any("elsewhere" in h.ranks for h in other.hits)
    assert {METAS[int(i[1:])]["session_id"] for i in other.ids} == {0}


def test_only_the_unscoped_object_reaches_outside_and_a_string_cannot(retriever: EnsembleRRFRetriever) -> None:
    wide = retriever.search("deployment token", top_k=30, filter={"session_id": [0]},
                            dense_paths={"dense_all": UNSCOPED})
    assert {METAS[int(h.id[1:])]["session_id"] for h in wide.hits if "dense_all" in h.ranks} == {0, 1, 2}
    with pytest.raises(RRFRetrieverError):
        retriever.search("deployment token", filter={"session_id": [0]}, dense_paths={"dense_all": "unscoped"})
