"""BM25KeywordStore specifics: engine parity, lazy rebuild, no leak of filtered documents, JSON/numpy persistence."""

from __future__ import annotations

import json
from pathlib import Path

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreError
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore

TEXTS = [
    "Hybrid retrieval fuses dense vectors and keyword search",
    "BM25 ranks documents by term frequency and inverse document frequency",
    "SQLite FTS5 offers full text search with bm25 ranking",
    "Reciprocal rank fusion combines ranked lists without score calibration",
    "Dense retrieval embeds queries and documents into vectors",
    "Keyword search matches exact terms, dense search matches meaning",
    "Configuring an index: configure the tokenizer, then configure stemming",
    "Pasta with tomato sauce",
]
IDS = [f"d{i}" for i in range(len(TEXTS))]


def ids_of(hits: list) -> list[str]:
    return [h.id for h in hits]


@pytest.mark.parametrize("query", ["dense vectors search", "ranking documents frequency", "configuring fusion"])
def test_rank_bm25_engine_scores_equal_bm25okapi_on_the_same_tokens(query: str) -> None:
    store = BM25KeywordStore(engine="rank_bm25")
    store.add(IDS, TEXTS)
    analyzer = default_analyzer()
    reference = BM25Okapi(analyzer.analyze_many(TEXTS)).get_scores(analyzer.analyze(query))
    hits = store.search(query, len(TEXTS))
    assert hits
    expected = {IDS[i]: s for i, s in enumerate(reference) if s > 0}
    assert {h.id: h.score for h in hits} == pytest.approx(expected)
    assert [h.id for h in hits] == sorted(expected, key=lambda i: (-expected[i], IDS.index(i)))


def test_bm25s_engine_scores_equal_bm25s_on_the_same_tokens() -> None:
    store = BM25KeywordStore(k1=1.2, b=0.75)
    store.add(IDS, TEXTS)
    analyzer = default_analyzer()
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index(analyzer.analyze_many(TEXTS), show_progress=False)
    query = "dense keyword search vectors"
    reference = model.get_scores(analyzer.analyze(query))
    hits = store.search(query, 10)
    assert {h.id: h.score for h in hits} == pytest.approx({IDS[i]: s for i, s in enumerate(reference) if s > 0})


def test_both_keyword_stores_agree_on_what_matches() -> None:
    bm25 = BM25KeywordStore()
    fts5 = FTS5KeywordStore()
    for store in (bm25, fts5):
        store.add(IDS, TEXTS)
    for query in ["configuring", "configured stemming", "ranked", "tomatoes", "frequencies", "the of and"]:
        assert set(ids_of(bm25.search(query, 10))) == set(ids_of(fts5.search(query, 10))), query
    assert ids_of(bm25.search("configuring", 10)) == ["d6"]


def test_index_is_rebuilt_lazily_once_per_burst_of_writes() -> None:
    store = BM25KeywordStore()
    for i in range(5):
        store.add([f"a{i}"], [f"document number {i}"])
        assert not store.index_is_current, "a write only marks the index stale"
    assert store.index_version == 0
    store.search("document", 3)
    assert store.index_is_current and store.index_version == 1
    store.search("number", 3)
    assert store.index_version == 1, "no rebuild without a write"
    store.delete(["unknown"])
    assert store.index_is_current and store.index_version == 1, "deleting nothing keeps the index"
    store.delete(["a0"])
    assert not store.index_is_current
    assert "a0" not in ids_of(store.search("document", 10))


def test_filtered_documents_never_leak_even_when_few_match() -> None:
    # LlamaIndex's BM25Retriever takes its top-k first and filters after, returning filtered-out documents
    # with score 0 when fewer than k match (run-llama/llama_index#22897). Here the mask comes first.
    for engine in ("bm25s", "rank_bm25"):
        store = BM25KeywordStore(engine=engine)
        store.add(IDS, TEXTS, [{"session_id": i % 4} for i in range(len(IDS))])
        hits = store.search("pasta tomato", 10, filter={"session_id": 3})
        assert ids_of(hits) == ["d7"]
        hits = store.search("dense", 10, filter={"session_id": 3})
        assert hits == [], engine
        hits = store.search("search", 10, filter={"session_id": [0, 1]}, exclude_ids=["d0"])
        assert set(ids_of(hits)) == {"d5"}
        assert all(h.score > 0 for h in hits)


def test_save_and_load_use_json_and_numpy_only(tmp_path: Path) -> None:
    store = BM25KeywordStore(engine="rank_bm25", analyzer=Analyzer(stopwords=["pasta"]), k1=1.3, b=0.6)
    store.add(IDS, TEXTS, [{"i": i, "tags": ["x", str(i)]} for i in range(len(IDS))])
    store.save(tmp_path / "s")
    files = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert files == ["documents.jsonl", "offsets.npy", "store.json", "tokens.npy"]
    # Every array loads without pickle.
    for name in ("offsets.npy", "tokens.npy"):
        np.load(tmp_path / "s" / name, allow_pickle=False)
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    assert (meta["engine"], meta["k1"], meta["b"]) == ("rank_bm25", 1.3, 0.6)
    loaded = BM25KeywordStore.load(tmp_path / "s")
    assert (loaded.engine, loaded.k1, loaded.b, loaded.analyzer) == ("rank_bm25", 1.3, 0.6, store.analyzer)
    for query in ["dense vectors", "configuring fusion", "pasta tomato"]:
        assert [(h.id, h.score) for h in loaded.search(query, 5, filter={"tags": "x"})] == [
            (h.id, h.score) for h in store.search(query, 5, filter={"tags": "x"})
        ]
    with pytest.raises(InvalidArgumentError, match="another analyzer"):
        BM25KeywordStore.load(tmp_path / "s", analyzer=Analyzer())


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        BM25KeywordStore.load(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "store.json").write_text('{"format": "something else", "version": 1}')
    with pytest.raises(StoreError, match="does not hold"):
        BM25KeywordStore.load(tmp_path / "bad")
    store = BM25KeywordStore()
    store.add(["a"], ["text"])
    store.save(tmp_path / "ok")
    (tmp_path / "ok" / "offsets.npy").write_bytes(b"garbage")
    with pytest.raises(StoreError):
        BM25KeywordStore.load(tmp_path / "ok")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"engine": "bm25okapi"}, InvalidArgumentError),
        ({"k1": -1}, InvalidArgumentError),
        ({"b": 1.5}, InvalidArgumentError),
        ({"b": True}, InvalidArgumentError),
        ({"analyzer": "porter"}, InvalidTypeError),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, error: type[Exception]) -> None:
    with pytest.raises(error):
        BM25KeywordStore(**kwargs)


def test_returned_metadata_is_a_copy() -> None:
    store = BM25KeywordStore()
    store.add(["a", "b", "c"], ["alpha", "beta", "gamma"], [{"tags": ["x"]}, {}, {}])
    hit = store.search("alpha", 1)[0]
    hit.metadata["tags"].append("mutated")
    assert store.get(["a"])[0].metadata == {"tags": ["x"]}


# ---- a store given a directory persists every write ------------------------------------------------------------


def test_a_store_with_a_path_saves_each_write_and_reloads_on_open(tmp_path: Path) -> None:
    store = BM25KeywordStore(path=tmp_path / "kw")
    store.add(IDS, TEXTS, [{"i": i} for i in range(len(IDS))])
    store.delete(["d7"])
    expected = [(h.id, h.score) for h in store.search("dense search vectors", 5)]
    store.close()
    reopened = BM25KeywordStore(path=tmp_path / "kw")
    assert reopened.count() == len(IDS) - 1
    assert [(h.id, h.score) for h in reopened.search("dense search vectors", 5)] == expected
    assert reopened.get(["d0"])[0].metadata == {"i": 0}
    reopened.close()


def test_a_persistent_store_is_held_by_one_opener(tmp_path: Path) -> None:
    from rrf_retriever.errors import StoreLockedError

    first = BM25KeywordStore(path=tmp_path / "kw")
    with pytest.raises(StoreLockedError):
        BM25KeywordStore(path=tmp_path / "kw")
    first.close()
    BM25KeywordStore(path=tmp_path / "kw").close()  # released on close


def test_a_failed_save_keeps_the_previous_snapshot_and_the_memory_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = BM25KeywordStore(path=tmp_path / "kw")
    store.add(["a"], ["first document"])

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(np, "save", broken)  # dies half way through writing the new snapshot
    with pytest.raises(StoreError, match="disk full"):
        store.add(["b"], ["second document"])
    monkeypatch.undo()
    assert store.count() == 1  # memory equals disk: the engine rolls the other legs back on this error
    store.close()
    reopened = BM25KeywordStore(path=tmp_path / "kw")
    assert [r.id for r in reopened.get(["a", "b"])] == ["a"]
    reopened.add(["c"], ["third"])
    reopened.close()
    # Only the current snapshot is left behind (no half-written one).
    assert len([p for p in (tmp_path / "kw").iterdir() if p.is_dir()]) == 1


def test_a_persistent_store_refuses_other_settings_than_its_files(tmp_path: Path) -> None:
    BM25KeywordStore(path=tmp_path / "kw", engine="rank_bm25").close()
    with pytest.raises(InvalidArgumentError, match="rank_bm25"):
        BM25KeywordStore(path=tmp_path / "kw", engine="bm25s")
