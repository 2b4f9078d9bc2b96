"""cached_embed_documents: vectors kept on disk, keyed by model and content."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rrf_retriever.embeddings import CallableEmbedding, cached_embed_documents


def test_cached_embed_documents(tmp_path: Path) -> None:
    calls: list[int] = []

    def model(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    adapter = CallableEmbedding(model, model_id="len-model")
    first = cached_embed_documents(adapter, ["a", "bb"], tmp_path)
    second = cached_embed_documents(adapter, ["a", "bb"], tmp_path)
    assert calls == [2]
    assert np.array_equal(first, second) and first.dtype == np.float32
    cached_embed_documents(adapter, ["a", "bbb"], tmp_path)  # changed content: a new entry
    assert calls == [2, 2]
    cached_embed_documents(adapter, ["a", "bbb"], tmp_path, model_key="other")  # another model: a new entry
    assert calls == [2, 2, 2]
    assert len(list(tmp_path.glob("*.npy"))) == 3
    assert not list(tmp_path.glob("*.tmp*"))
