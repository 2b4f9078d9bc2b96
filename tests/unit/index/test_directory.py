"""One index layout for ``from_texts(path=)`` and the CLI: the manifest decides the stores and the embedder.

Plumbing only: the hashing embedder stands in for MiniLM; the stores are real (FTS5 file, qdrant-edge, BM25 files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.apps.cli import app
from rrf_retriever.embeddings import CallableEmbedding, HashingEmbedding
from rrf_retriever.errors import IndexDirectoryError, StoreError
from rrf_retriever.index.directory import open_index
from rrf_retriever.index.manifest import MANIFEST_FILE, read_manifest

TEXTS = ["alpha rockets launch at dawn", "beta gardens grow tomatoes", "gamma rays from distant stars"]
META = [{"s": 1}, {"s": 2}, {"s": 3}]
runner = CliRunner()


def build(path: Path, texts: list[str] = TEXTS, dim: int = 16, **kwargs: Any) -> Any:
    return EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(dim), metadatas=META[: len(texts)], path=path,
                                           **kwargs)


def test_from_texts_writes_the_cli_manifest_and_the_cli_can_search_it(tmp_path: Path) -> None:
    with build(tmp_path / "idx", ids=["a", "b", "c"]) as r:
        assert r.invoke("rockets")[0].id == "a"
    manifest = read_manifest(tmp_path / "idx")
    assert manifest["embedder"] == "hashing:16"
    assert manifest["dimension"] == 16
    assert manifest["keyword_store"] == "qdrant-edge" and manifest["dense_store"] == "qdrant-edge"  # the defaults
    assert manifest["doc_count"] == 3
    assert manifest["analyzer"]["stem"] == "porter"
    result = runner.invoke(app, ["search", "rockets", "-d", str(tmp_path / "idx"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hits"][0]["id"] == "a"


def test_bm25_keyword_leg_is_saved_and_reopened_with_the_same_counts_and_results(tmp_path: Path) -> None:
    with build(tmp_path, keyword="bm25", ids=["a", "b", "c"]) as r:
        before = [(d.id, d.metadata["rrf_ranks"]) for d in r.invoke("rockets gardens")]
        assert r.engine.count() == {"dense": 3, "keyword": 3}
    assert read_manifest(tmp_path)["keyword_store"] == "bm25"
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path, keyword="bm25") as again:
        assert again.engine.count() == {"dense": 3, "keyword": 3}
        assert [(d.id, d.metadata["rrf_ranks"]) for d in again.invoke("rockets gardens")] == before
    # The manifest decides: a reopen that names no kind gets the index's own.
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path) as implicit:
        assert implicit.engine.count() == {"dense": 3, "keyword": 3}
    engine = open_index(tmp_path)  # and the CLI's opener builds the BM25 leg too
    try:
        assert engine.count() == {"dense": 3, "keyword": 3}
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ({"dense": "qdrant-edge"}, {"dense": "qdrant"}, "dense"),
        ({"keyword": "fts5"}, {"keyword": "bm25"}, "keyword"),
        ({"keyword": "bm25"}, {"keyword": "fts5"}, "keyword"),
    ],
)
def test_a_reopen_with_another_store_kind_is_an_error(tmp_path: Path, first: dict, second: dict,
                                                      message: str) -> None:
    with build(tmp_path, **first):
        pass
    with pytest.raises(IndexDirectoryError, match=message) as info:
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path, **second)
    assert isinstance(info.value, StoreError)


def test_a_second_opener_with_another_dense_kind_is_refused_while_the_first_is_open(tmp_path: Path) -> None:
    with build(tmp_path, dense="qdrant-edge"), pytest.raises(IndexDirectoryError, match="qdrant-edge"):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path, dense="qdrant")
    assert not (tmp_path / "qdrant").exists()  # nothing of the refused kind was written


def test_an_embedder_that_does_not_match_the_index_is_an_error(tmp_path: Path) -> None:
    with build(tmp_path):
        pass
    with pytest.raises(IndexDirectoryError, match="dimension"):
        EnsembleRRFRetriever.from_texts([], HashingEmbedding(32), path=tmp_path)
    # An embedding that does not announce its dimension is probed once.
    custom = CallableEmbedding(lambda texts: [[1.0] * 8 for _ in texts], model_id="eight")
    with pytest.raises(IndexDirectoryError, match="dimension"):
        EnsembleRRFRetriever.from_texts([], custom, path=tmp_path)


def test_a_custom_embedding_is_recorded_and_the_cli_names_what_it_needs(tmp_path: Path) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return HashingEmbedding(12).embed_documents(texts)

    with EnsembleRRFRetriever.from_texts(TEXTS, CallableEmbedding(embed, model_id="my-model"), path=tmp_path,
                                         ids=["a", "b", "c"]):
        pass
    manifest = read_manifest(tmp_path)
    assert manifest["embedder"] is None
    assert manifest["embedder_model"] == "my-model" and manifest["embedder_class"] == "CallableEmbedding"
    assert manifest["dimension"] == 12
    result = runner.invoke(app, ["search", "rockets", "-d", str(tmp_path)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "my-model" in out and "12" in out and "Traceback" not in out
    # Python reopens it with the same embedding.
    with EnsembleRRFRetriever.from_texts([], CallableEmbedding(embed, model_id="my-model"), path=tmp_path) as r:
        assert r.invoke("rockets")[0].id == "a"


def test_rerunning_a_quickstart_does_not_duplicate_documents(tmp_path: Path) -> None:
    with build(tmp_path):
        pass
    with build(tmp_path) as again:  # the same texts, no ids: the same content-derived ids
        assert again.engine.count() == {"dense": 3, "keyword": 3}
    assert read_manifest(tmp_path)["doc_count"] == 3


def test_doc_count_is_refreshed_from_the_stores_on_open(tmp_path: Path) -> None:
    with build(tmp_path) as r:
        r.add_texts(["delta more documents"], ids=["d"])  # a write the manifest does not see
    engine = open_index(tmp_path)
    engine.close()
    assert read_manifest(tmp_path)["doc_count"] == 4


def test_from_texts_refuses_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(IndexDirectoryError, match="not empty"):
        build(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_an_index_written_before_the_manifest_existed_is_adopted(tmp_path: Path) -> None:
    with build(tmp_path, ids=["a", "b", "c"], keyword="fts5"):  # FTS5: the default of those days
        pass
    (tmp_path / MANIFEST_FILE).unlink()  # what from_texts(path=) wrote before it kept a manifest
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path) as r:
        assert r.engine.count() == {"dense": 3, "keyword": 3}
    assert read_manifest(tmp_path)["doc_count"] == 3 and read_manifest(tmp_path)["keyword_store"] == "fts5"


def test_another_process_with_another_dense_kind_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "from rrf_retriever import EnsembleRRFRetriever\n"
        "from rrf_retriever.embeddings import HashingEmbedding\n"
        "from rrf_retriever.errors import IndexDirectoryError\n"
        "try:\n"
        f"    EnsembleRRFRetriever.from_texts(['x'], HashingEmbedding(16), path={str(tmp_path)!r}, dense='qdrant')\n"
        "except IndexDirectoryError as exc:\n"
        "    print('refused:', exc)\n"
    )
    with build(tmp_path, dense="qdrant-edge"):  # held open by this process while the other one tries
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused:") and "qdrant-edge" in out.stdout
    assert not (tmp_path / "qdrant").exists()



def test_settings_saved_in_the_manifest_are_used_by_the_next_open_and_explicit_ones_win(tmp_path: Path) -> None:
    from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding
    from rrf_retriever.index.directory import open_index
    from rrf_retriever.index.manifest import save_manifest

    with EnsembleRRFRetriever.from_texts(["alpha note", "beta note"], HashingEmbedding(16), path=tmp_path) as r:
        save_manifest(tmp_path, r.engine, settings={"rrf_k": 20.0, "weights": {"keyword": 0.5}, "fetch_k": 30})
    engine = open_index(tmp_path)
    assert (engine.settings.rrf_k, engine.settings.weights["keyword"], engine.settings.fetch_k) == (20.0, 0.5, 30)
    engine.close()
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path, rrf_k=5) as again:
        assert again.settings.rrf_k == 5 and again.settings.weights["keyword"] == 0.5


@pytest.mark.parametrize("keyword", ["qdrant-edge", "qdrant"])
def test_both_legs_on_qdrant_through_from_texts_persist_and_reopen(tmp_path: Path, keyword: str) -> None:
    from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding

    texts = ["error E4012 means the sync token expired", "uploads pause when the disk is full"]
    with EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(16), ids=["e", "u"], keyword=keyword,
                                         path=tmp_path) as r:
        assert type(r.engine.legs["keyword"].store).__name__.startswith("Qdrant")
        assert [d.id for d in r.invoke("E4012", k=1, weights={"dense": 0})] == ["e"]
    with EnsembleRRFRetriever.from_texts([], HashingEmbedding(16), path=tmp_path) as again:  # the manifest decides
        assert again.engine.count() == {"dense": 2, "keyword": 2}
        assert [d.id for d in again.invoke("disk full", k=1, weights={"dense": 0})] == ["u"]


@pytest.mark.parametrize("hostile", [[1, "a"], [None], ["a.b."], [""], {"session_id": 1}])
def test_hostile_index_keys_are_our_error_and_the_index_keeps_its_documents(tmp_path: Path, hostile: Any) -> None:
    from rrf_retriever.errors import RRFRetrieverError

    with EnsembleRRFRetriever.from_texts(["alpha one", "beta two"], HashingEmbedding(16), path=tmp_path / "idx",
                                         ids=["a", "b"], index_keys=["session_id"]):
        pass
    with pytest.raises(RRFRetrieverError):  # ours, never a raw TypeError from sorting an int beside a str
        open_index(tmp_path / "idx", index_keys=hostile)
    engine = open_index(tmp_path / "idx")  # nothing stored was lost, the declared key still declared
    try:
        assert engine.count() == {"dense": 2, "keyword": 2}
        assert engine.legs["dense"].store.index_keys == {"session_id"}
    finally:
        engine.close()
    assert read_manifest(tmp_path / "idx")["index_keys"] == ["session_id"]
