"""MiniLMEmbedding's fast paths: token-ordered batches, concurrent batches (``workers``) and the int8 option.

The fp32 changes must be exact: every vector equals the text embedded alone (one text per call, no padding: the
computation before any batching) within 1e-5, whatever the batch size, worker count or order of the input.
int8 is another model: close to fp32, never mixed with it in an index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import MiniLMEmbedding
from rrf_retriever.errors import IndexDirectoryError, InvalidArgumentError
from rrf_retriever.index.directory import create_index, open_index
from rrf_retriever.index.manifest import read_manifest
from rrf_retriever.index.registry import describe_embedding, embedder_spec, make_embedding

HOSTILE_TEXTS = [
    "",
    " ",
    "\n\t\r",
    ".",
    "hello world",
    "The cat sits on the mat.",
    "日本語のテキストと emoji 🚀🔥 mixed",
    "x" * 3000,  # one 3000-character token
    " ".join(f"word{i % 50}" for i in range(600)),  # cut at 256 word pieces
    "Protein folding " * 200,
    "a",
    "\u200b\u200b",  # zero-width spaces only
]


@pytest.fixture(scope="module")
def alone(minilm: MiniLMEmbedding) -> dict[str, np.ndarray]:
    """Each hostile text embedded alone (``embed_query``: one text, no padding)."""
    return {t: np.asarray(minilm.embed_query(t), dtype=np.float32) for t in HOSTILE_TEXTS}


@pytest.fixture(scope="module")
def int8_model() -> MiniLMEmbedding:
    """The int8 model, cached like the fp32 graph (quantised once per machine, ~5 s)."""
    return MiniLMEmbedding(precision="int8")


def _check_exact(got: np.ndarray, texts: list[str], alone: dict[str, np.ndarray]) -> None:
    want = np.stack([alone[t] for t in texts])
    assert got.dtype == np.float32 and got.shape == (len(texts), 384)
    assert float(np.abs(got - want).max()) <= 1e-5
    assert float(np.sum(got * want, axis=1).min()) >= 1 - 1e-5


@pytest.mark.parametrize(("batch_size", "workers"), [(1, 1), (4, 1), (8, 1), (4, 2), (3, 3)])
def test_fp32_batches_equal_each_text_alone(
    minilm: MiniLMEmbedding, alone: dict[str, np.ndarray], batch_size: int, workers: int
) -> None:
    model = minilm if (batch_size, workers) == (4, 1) else MiniLMEmbedding(batch_size=batch_size, workers=workers,
                                                                                     precision="fp32")
    texts = HOSTILE_TEXTS + HOSTILE_TEXTS[::-1]  # duplicates, in both orders
    _check_exact(model.embed_array(texts), texts, alone)
    assert np.allclose(model.embed_documents(texts), model.embed_array(texts), atol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(HOSTILE_TEXTS), min_size=0, max_size=14), st.integers(1, 5))
def test_order_restored_after_length_sorting(
    minilm: MiniLMEmbedding, alone: dict[str, np.ndarray], texts: list[str], batch_size: int
) -> None:
    minilm_batch = minilm.batch_size
    try:
        minilm.batch_size = batch_size
        got = minilm.embed_array(texts)
    finally:
        minilm.batch_size = minilm_batch
    if not texts:
        assert got.shape == (0, 384)
        return
    _check_exact(got, texts, alone)


@pytest.mark.slow  # ~1,100 texts: more than one tokenization window
def test_order_restored_across_windows(minilm: MiniLMEmbedding) -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
    texts = [" ".join(words[: 1 + i % len(words)]) + f" {i}" for i in range(1100)]
    forward = MiniLMEmbedding(batch_size=32, workers=2, precision="fp32").embed_array(texts)
    backward = minilm.embed_array(texts[::-1])[::-1]
    assert float(np.abs(forward - backward).max()) <= 1e-5
    for i in (0, 517, 1023, 1024, 1099):
        assert np.allclose(forward[i], minilm.embed_query(texts[i]), atol=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"precision": "fp16"},
        {"precision": "INT8"},
        {"precision": None},
        {"precision": 8},
        {"workers": 0},
        {"workers": True},
        {"workers": "2"},
        {"workers": 1000},
    ],
)
def test_bad_options_are_our_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        MiniLMEmbedding(**kwargs)


def test_bad_embedder_spec_is_our_error() -> None:
    for spec in ("minilm-int4", "minilm:int8", "MINILM-INT8"):
        with pytest.raises(InvalidArgumentError, match="minilm-int8"):
            make_embedding(spec)


@pytest.mark.slow  # quantises the graph once per machine (~5 s)
def test_int8_is_close_to_fp32_but_another_model(minilm: MiniLMEmbedding, int8_model: MiniLMEmbedding) -> None:
    assert int8_model.precision == "int8" and minilm.precision == "fp32"
    assert int8_model.model_id == "all-MiniLM-L6-v2-int8" and minilm.model_id == "all-MiniLM-L6-v2"
    assert int8_model.onnx_path != minilm.onnx_path and int8_model.onnx_path.parent == minilm.onnx_path.parent
    texts = HOSTILE_TEXTS
    q, f = int8_model.embed_array(texts), minilm.embed_array(texts)
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    cos = np.sum(q * f, axis=1)
    assert cos.min() > 0.95 and cos.mean() > 0.98
    assert not np.allclose(q, f, atol=1e-4)  # really quantised
    # Still the same semantics: a paraphrase is closer than an unrelated sentence.
    a, b, c = int8_model.embed_array(["How do I reset my password?", "Steps to change a forgotten password",
                                      "The stock market fell sharply on Tuesday."])
    assert float(a @ b) > float(a @ c) + 0.3
    # One text per call by default: a text's int8 vector does not depend on the texts embedded with it (the
    # activations are quantised per call, with one scale).
    assert int8_model.batch_size == 1 and minilm.batch_size == 4
    alone = np.stack([int8_model.embed_query(t) for t in texts])
    assert float(np.abs(alone - q).max()) <= 1e-5
    shuffled = int8_model.embed_array(texts[::-1])[::-1]
    assert float(np.abs(shuffled - q).max()) <= 1e-5


@pytest.mark.slow  # quantises into a fresh cache directory
def test_int8_graph_is_built_once_and_cached(int8_model: MiniLMEmbedding, tmp_path: Path) -> None:
    first = MiniLMEmbedding(precision="int8", cache_dir=tmp_path)
    path = first.onnx_path
    assert path.parent == tmp_path and "int8" in path.name
    mtime = path.stat().st_mtime_ns
    second = MiniLMEmbedding(precision="int8", cache_dir=tmp_path)
    assert second.onnx_path == path and path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    graphs = [p.name for p in tmp_path.iterdir() if p.suffix != ".json"]  # beside the weights-hash memo
    assert graphs == [path.name]  # no temporary file, no fp32 graph needed
    assert np.allclose(second.embed_query("cache"), int8_model.embed_query("cache"), atol=1e-6)


@pytest.mark.slow  # two quantisations at once into a fresh cache directory
def test_two_first_uses_at_once_build_one_whole_int8_graph(int8_model: MiniLMEmbedding, tmp_path: Path) -> None:
    """Two threads that both find no cached int8 graph: each quantises into its own temporary file and renames it
    over the target, so both end with a whole graph, one file is left, and no temporary file."""
    import threading

    models: list[MiniLMEmbedding] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def first_use() -> None:
        start.wait()
        try:
            models.append(MiniLMEmbedding(precision="int8", cache_dir=tmp_path))
        except BaseException as exc:  # collected: the assertion below names it
            errors.append(exc)

    threads = [threading.Thread(target=first_use) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(models) == 2
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".onnx"]  # one graph, one weights-hash memo
    for model in models:
        assert np.allclose(model.embed_query("race"), int8_model.embed_query("race"), atol=1e-6)


@pytest.mark.slow  # the int8 model and two index opens
def test_int8_identity_in_the_manifest(int8_model: MiniLMEmbedding, minilm: MiniLMEmbedding, tmp_path: Path) -> None:
    assert embedder_spec(int8_model) == "minilm-int8" and embedder_spec(minilm) == "minilm"
    assert describe_embedding(int8_model)["embedder_model"] == "all-MiniLM-L6-v2-int8"
    texts = ["rockets reach orbit", "gardens need water", "the cat sat on the mat"]
    int8_dir, fp32_dir = tmp_path / "int8", tmp_path / "fp32"
    with EnsembleRRFRetriever.from_texts(texts, int8_model, ids=["a", "b", "c"], path=int8_dir) as r:
        assert r.invoke("space launch")[0].id == "a"
    manifest = read_manifest(int8_dir)
    assert manifest["embedder"] == "minilm-int8"
    assert manifest["embedder_model"] == "all-MiniLM-L6-v2-int8"
    # An fp32 model on an int8 index (or the other way round) is refused, not mixed silently.
    with pytest.raises(IndexDirectoryError, match="minilm-int8"):
        EnsembleRRFRetriever.from_texts([], minilm, path=int8_dir)
    with pytest.raises(IndexDirectoryError, match="minilm-int8"):
        create_index(int8_dir, embedder="minilm")
    engine = open_index(int8_dir)  # rebuilds the int8 embedder from the manifest
    try:
        assert engine.count()["dense"] == 3
    finally:
        engine.close()
    with EnsembleRRFRetriever.from_texts(texts, minilm, ids=["a", "b", "c"], path=fp32_dir):
        pass
    # The default model is int8 now: an index built in fp32 says which Python to pass.
    with pytest.raises(IndexDirectoryError, match="minilm") as info:
        EnsembleRRFRetriever.from_texts([], int8_model, path=fp32_dir)
    assert 'MiniLMEmbedding(precision="fp32")' in str(info.value)
    with pytest.raises(IndexDirectoryError, match="--embedder minilm"):
        create_index(fp32_dir, embedder="minilm-int8")


def test_the_default_model_is_int8_and_fp32_is_one_argument_away(int8_model: MiniLMEmbedding,
                                                                 minilm: MiniLMEmbedding) -> None:
    default = MiniLMEmbedding()
    assert (default.precision, default.model_id, default.batch_size) == ("int8", "all-MiniLM-L6-v2-int8", 1)
    assert default.onnx_path == int8_model.onnx_path
    assert np.allclose(default.embed_query("orbit"), int8_model.embed_query("orbit"), atol=1e-6)
    exact = MiniLMEmbedding(precision="fp32")
    assert (exact.model_id, exact.onnx_path) == ("all-MiniLM-L6-v2", minilm.onnx_path)
    assert embedder_spec(default) == "minilm-int8" and embedder_spec(exact) == "minilm"
    assert make_embedding("minilm").precision == "fp32"  # the name older indexes record keeps its meaning
    assert make_embedding("minilm-int8").precision == "int8"


@pytest.mark.slow  # builds a MiniLM index
def test_a_new_cli_index_defaults_to_int8(tmp_path: Path) -> None:
    engine = create_index(tmp_path / "idx")
    try:
        engine.add(["a"], ["rockets reach orbit"])
    finally:
        engine.close()
    assert read_manifest(tmp_path / "idx")["embedder"] == "minilm-int8"
