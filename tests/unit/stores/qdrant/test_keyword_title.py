"""The title as its own field in the BM25 sparse stores (keyword and joint), as FTS5KeywordStore weighs it.

``tf = tf_text + title_weight * tf_title``, ``dl`` = text terms + title terms; ``title_weight=0`` is the flat
index; a store saved before the title field (settings format 1, no ``title_weight``) keeps ranking on the text only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient

from rrf_retriever.analysis.analyzer import default_analyzer
from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import (
    QdrantEdgeHybridStore,
    QdrantEdgeKeywordStore,
    QdrantHybridStore,
    QdrantKeywordStore,
)
from rrf_retriever.stores.qdrant.backend_client import METADATA_PARAMS_KEY
from rrf_retriever.stores.qdrant.sparse_values import DEFAULT_TITLE_WEIGHT, document_vector, term_id

DOCS = {
    "t": ("Effects of statins on the heart", {"title": "Cholesterol trial"}),
    "u": ("Effects of statins on the heart", {}),
    "v": ("Cholesterol and diet in a long trial of many people", {"title": "Nutrition"}),
    "w": ("Heart rate during exercise", {"title": 42}),  # not a string: no title
    "x": ("Unrelated text about pasta", {"title": "Cholesterol cholesterol"}),
}
QUERIES = ["cholesterol", "statins heart", "trial", "nutrition diet", "exercise heart rate", "pasta"]


def _add(store: Any) -> None:
    ids = list(DOCS)
    store.add(ids, [DOCS[i][0] for i in ids], [dict(DOCS[i][1]) for i in ids])


def _keyword(kind: str, path: Path, **kwargs: Any) -> Any:
    if kind == "local":
        return QdrantKeywordStore(path=path, **kwargs)
    if kind == "edge":
        return QdrantEdgeKeywordStore(path, **kwargs)
    emb = HashingEmbedding(dim=8)
    if kind == "hybrid-client":
        return QdrantHybridStore(emb, path=path, **kwargs)
    return QdrantEdgeHybridStore(emb, path=path, **kwargs)


def _search(store: Any, query: str) -> list[tuple[str, float]]:
    hits = store.keyword.search(query, 100) if hasattr(store, "keyword_search") else store.search(query, 100)
    return [(h.id, round(h.score, 5)) for h in hits]


KINDS = ["local", "edge", "hybrid-client", "hybrid-edge"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# ---------------------------------------------------------------- the values, pure


def test_title_terms_count_weighted_and_lengthen_the_document() -> None:
    k1, b, avgdl = 1.2, 0.75, 4.0
    idx, vals = document_vector(["heart"], k1=k1, b=b, avgdl=avgdl, title_terms=["heart", "trial"], title_weight=2.0)
    got = dict(zip(idx, vals))
    norm = k1 * (1 - b + b * 3 / avgdl)  # dl = 1 text term + 2 title terms, unweighted
    assert got[term_id("heart")] == pytest.approx(3 * (k1 + 1) / (3 + norm))  # tf 1 + 2 * 1
    assert got[term_id("trial")] == pytest.approx(2 * (k1 + 1) / (2 + norm))
    # weight 0 is the flat index: the title counts in neither tf nor dl
    assert document_vector(["heart"], k1=k1, b=b, avgdl=avgdl, title_terms=["heart", "trial"], title_weight=0.0) == (
        document_vector(["heart"], k1=k1, b=b, avgdl=avgdl)
    )
    # a title alone is enough to give a document terms
    assert document_vector([], k1=k1, b=b, avgdl=avgdl, title_terms=["x"], title_weight=1.0)[0] == [term_id("x")]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abcdef"), max_size=8),
    st.lists(st.sampled_from("abcxyz"), max_size=5),
    st.floats(0.5, 50.0),
)
def test_title_weight_one_equals_the_title_appended_to_the_text(text: list[str], title: list[str], avgdl: float) -> None:
    # FTS5 with equal weights is exactly the flat index of the concatenation: so are we.
    joint = document_vector(text, k1=1.2, b=0.75, avgdl=avgdl, title_terms=title, title_weight=1.0)
    flat = document_vector(text + title, k1=1.2, b=0.75, avgdl=avgdl)
    assert joint[0] == flat[0]
    assert joint[1] == pytest.approx(flat[1], rel=1e-12)


# ---------------------------------------------------------------- the stores


def test_a_title_word_ranks_the_titled_document_above_the_untitled_twin(kind: str, tmp_path: Path) -> None:
    store = _keyword(kind, tmp_path / "s")
    _add(store)
    assert store.title_weight == DEFAULT_TITLE_WEIGHT and store.params["title_weight"] == DEFAULT_TITLE_WEIGHT
    ranked = [i for i, _ in _search(store, "cholesterol statins")]
    assert ranked.index("t") < ranked.index("u")
    assert "x" in ranked  # a title-only match is found
    store.close()


def test_title_weight_zero_is_the_flat_index(kind: str, tmp_path: Path) -> None:
    titled = _keyword(kind, tmp_path / "a", title_weight=0)
    _add(titled)
    flat = _keyword(kind, tmp_path / "b")
    ids = list(DOCS)
    flat.add(ids, [DOCS[i][0] for i in ids])  # no metadata at all
    for query in QUERIES:
        assert _search(titled, query) == _search(flat, query), query
    titled.close()
    flat.close()


def test_the_ranking_follows_fts5_with_its_default_title_field(tmp_path: Path) -> None:
    # Same field model as FTS5KeywordStore(): on these documents the two rank alike (FTS5 counts stopwords in
    # its lengths, so scores differ, rankings need not in general).
    ours = QdrantEdgeKeywordStore(tmp_path / "e")
    _add(ours)
    fts5 = FTS5KeywordStore()
    _add(fts5)
    for query in ("cholesterol", "statins heart", "nutrition diet"):
        assert [i for i, _ in _search(ours, query)] == [h.id for h in fts5.search(query, 100)], query
    ours.close()


def _make_old(kind: str, path: Path) -> None:
    """Rewrite the saved settings as a store written before the title field saved them (format 1)."""
    def old(params: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in params.items() if k != "title_weight"}
        params["format"] = 1
        return params

    if kind in ("edge", "hybrid-edge"):
        meta_file = path / "rrf_store.json"
        meta = json.loads(meta_file.read_text())
        meta["bm25"] = old(meta["bm25"])
        meta_file.write_text(json.dumps(meta))
        return
    client = QdrantClient(path=str(path))
    name = "rrf_retriever_keyword" if kind == "local" else "rrf_retriever"
    saved = client.get_collection(name).config.metadata[METADATA_PARAMS_KEY]
    client.update_collection(name, metadata={METADATA_PARAMS_KEY: old(saved)})
    client.close()


def test_a_store_saved_before_the_title_field_ranks_as_before(kind: str, tmp_path: Path) -> None:
    # "before": the text-only values, the only ones an old store could hold (written here as title_weight=0).
    old = _keyword(kind, tmp_path / "old", title_weight=0)
    _add(old)
    old.close()
    _make_old(kind, tmp_path / "old")
    reference = _keyword(kind, tmp_path / "ref", title_weight=0)
    _add(reference)
    reopened = _keyword(kind, tmp_path / "old")  # default title_weight: adopts the saved (absent) one, no error
    assert reopened.title_weight == 0.0 and reopened.params["format"] == 1
    for query in QUERIES:
        assert _search(reopened, query) == _search(reference, query), query
    # new documents and a reweight keep the text-only values too
    more = {"y": ("A cholesterol trial", {"title": "Statins statins"})}
    for store in (reopened, reference):
        store.add(list(more), [more["y"][0]], [more["y"][1]])
        store.reweight()
    for query in QUERIES:
        assert _search(reopened, query) == _search(reference, query), query
    assert "title_weight" not in reopened.params or reopened.params["title_weight"] == 0.0
    reopened.close()
    with pytest.raises(InvalidArgumentError, match="title_weight"):
        _keyword(kind, tmp_path / "old", title_weight=2.0)  # the values were written without the title
    reference.close()


def test_the_weight_is_saved_and_checked_on_reopen(kind: str, tmp_path: Path) -> None:
    store = _keyword(kind, tmp_path / "s", title_weight=3.5)
    _add(store)
    before = {q: _search(store, q) for q in QUERIES}
    store.close()
    again = _keyword(kind, tmp_path / "s")
    assert again.title_weight == 3.5
    assert {q: _search(again, q) for q in QUERIES} == before
    again.close()
    with pytest.raises(InvalidArgumentError):
        _keyword(kind, tmp_path / "s", title_weight=2.0)


def test_reweight_counts_the_title_in_avgdl(tmp_path: Path) -> None:
    store = QdrantEdgeKeywordStore(tmp_path / "s")
    _add(store)
    analyze = default_analyzer().analyze
    lengths = [
        len(analyze(text)) + (len(analyze(meta["title"])) if isinstance(meta.get("title"), str) else 0)
        for text, meta in DOCS.values()
    ]
    assert store.avgdl == pytest.approx(sum(lengths) / len(lengths))
    assert store.reweight() == pytest.approx(sum(lengths) / len(lengths))
    store.close()


@pytest.mark.parametrize(("value", "error"), [(-1, InvalidArgumentError), (float("inf"), InvalidArgumentError),
                                              ("2", InvalidTypeError), (True, InvalidTypeError)])
def test_bad_title_weights_are_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        QdrantKeywordStore(title_weight=value)
    with pytest.raises(error):
        QdrantEdgeKeywordStore(title_weight=value)
