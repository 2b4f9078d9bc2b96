"""The embeddings package: its public names, and an import that pulls in no framework or heavy library."""

from __future__ import annotations

import subprocess
import sys

import rrf_retriever.embeddings as embeddings


def test_public_names() -> None:
    assert sorted(embeddings.__all__) == sorted([
        "BaseEmbeddingAdapter", "CallableEmbedding", "EmbeddingAdapter", "HashingEmbedding",
        "LangChainEmbeddingAdapter", "LlamaIndexEmbeddingAdapter", "MiniLMEmbedding", "as_embedding",
        "cached_embed_documents", "default_cache_dir",
    ])
    for name in embeddings.__all__:
        assert getattr(embeddings, name) is not None


def test_import_pulls_no_framework_or_heavy_library() -> None:
    code = (
        "import sys, rrf_retriever.embeddings\n"
        "heavy = [m for m in ('langchain_core', 'llama_index', 'numpy', 'onnxruntime', 'tokenizers', 'torch',"
        " 'tqdm') if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
