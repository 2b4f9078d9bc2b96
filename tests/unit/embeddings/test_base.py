"""BaseEmbeddingAdapter and CallableEmbedding: batching, input and output checks, model errors, progress, async."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from rrf_retriever.embeddings import (
    BaseEmbeddingAdapter,
    CallableEmbedding,
    HashingEmbedding,
    as_embedding,
)
from rrf_retriever.embeddings.base import embedding_error
from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
)
from rrf_retriever.progress import PROGRESS_THRESHOLD, progress_shown


def test_callable_adapter_batches_and_accepts_numpy() -> None:
    calls: list[int] = []

    def model(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.ones((len(texts), 4), dtype=np.float32)

    adapter = CallableEmbedding(model, batch_size=2)
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
    for call in (
        lambda: adapter.embed_documents(["a"]),
        lambda: adapter.embed_query("a"),
        lambda: asyncio.run(adapter.aembed_documents(["a"])),
        lambda: asyncio.run(adapter.aembed_query("a")),
    ):
        with pytest.raises(EmbeddingError, match=r"the embedding model .* failed: ConnectionError: quota exceeded") as info:
            call()
        assert isinstance(info.value.__cause__, ConnectionError)


def test_our_own_errors_pass_through_the_model_wrapper() -> None:
    def refuses(texts: list[str]) -> list[list[float]]:
        raise StoreError("a store error raised inside the model")

    adapter = as_embedding(refuses)
    with pytest.raises(StoreError):
        adapter.embed_documents(["a"])
    with pytest.raises(StoreError):
        asyncio.run(adapter.aembed_query("a"))


def test_embedding_error_wording_and_chain() -> None:
    cause = TimeoutError("slow")
    err = embedding_error(cause, "embedding 3 document(s)")
    assert isinstance(err, EmbeddingError)
    assert str(err) == "embedding 3 document(s) failed: TimeoutError: slow"
    assert err.__cause__ is cause
    ours = InvalidArgumentError("bad")
    assert embedding_error(ours, "anything") is ours


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
        CallableEmbedding(lambda t: t, batch_size=0)


def test_progress_bar_for_large_batches(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = HashingEmbedding(dim=4)
    adapter.embed_documents([f"text {i}" for i in range(PROGRESS_THRESHOLD + 1)])
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar by default
    adapter.show_progress = True
    adapter.embed_documents(["small batch"])
    assert "embedding (hashing-4)" in capsys.readouterr().err
    with progress_shown(False):  # a call's switch wins over the model's
        adapter.embed_documents([f"text {i}" for i in range(PROGRESS_THRESHOLD + 1)])
    assert capsys.readouterr().err == ""


def test_base_adapter_subclass_contract() -> None:
    # _embed_batch is the documented hook a subclass implements (see BaseEmbeddingAdapter).
    class Fixed(BaseEmbeddingAdapter):
        def _embed_batch(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    assert Fixed().embed_documents(["a"]) == [[1.0, 0.0]]
    assert Fixed().embed_query("a") == [1.0, 0.0]
    assert asyncio.run(Fixed().aembed_documents(["a", "b"])) == [[1.0, 0.0], [1.0, 0.0]]


def test_callable_may_be_a_coroutine_function_for_the_async_path() -> None:
    calls: list[int] = []

    async def model(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return [[float(len(t)), 1.0] for t in texts]

    adapter = CallableEmbedding(model, batch_size=2)
    assert asyncio.run(adapter.aembed_documents(["a", "bb", "ccc"])) == [[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]
    assert asyncio.run(adapter.aembed_query("abcd")) == [4.0, 1.0]
    assert calls == [2, 1, 1]
    with pytest.raises(InvalidTypeError, match="coroutine function"):
        adapter.embed_documents(["a"])
