"""The window vectors of long documents past their first window, from whatever model a dense store holds.

A model that knows its tokenizer implements :class:`WindowEmbedding` (``embed_windows``:
:meth:`MiniLMEmbedding.embed_windows <rrf_retriever.embeddings.MiniLMEmbedding.embed_windows>` cuts word pieces);
any other model's texts are cut into whitespace words (:func:`~rrf_retriever.embeddings.windows.word_windows`, of
:data:`WORD_WINDOW` words: ~256 word pieces of English prose) and each window embedded by ``embed_documents``.
The first window is the caller's: the document's own vector, as the model reads it whole.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> [len(t) for t in tail_windows(HashingEmbedding(dim=8), ["short", "word " * 400], 8, 32)]
    [0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rrf_retriever.embeddings.base import EmbeddingAdapter, check_texts
from rrf_retriever.embeddings.windows import check_window_settings, word_windows
from rrf_retriever.errors import EmbeddingError
from rrf_retriever.vectors import to_float_vectors

__all__ = ["WORD_WINDOW", "WindowEmbedding", "tail_windows"]

#: Words per window for a model without :class:`WindowEmbedding` (English prose: ~1.3 word pieces a word).
WORD_WINDOW = 200


@runtime_checkable
class WindowEmbedding(Protocol):
    """A model that cuts a text into windows of its own tokens and embeds each (rows: windows, in order)."""

    def embed_windows(
        self, texts: Sequence[str], *, max_windows: int, overlap: int, skip_first: bool
    ) -> Sequence[Any]: ...


def tail_windows(
    embedding: EmbeddingAdapter, texts: Sequence[str], max_windows: int, overlap: int
) -> list[list[list[float]]]:
    """Each text's window vectors after its first (none for a text within one window), at most ``max_windows - 1``.

    Raises:
        InvalidArgumentError: bad window settings.
        EmbeddingError: the model failed, or returned something other than vectors.
        DimensionMismatchError: NaN, infinity, or another dimension than the model's.
    """
    items = check_texts(texts)
    check_window_settings(max_windows, overlap)
    if max_windows == 1 or not items:
        return [[] for _ in items]
    if isinstance(embedding, WindowEmbedding):
        raw = embedding.embed_windows(items, max_windows=max_windows, overlap=overlap, skip_first=True)
        if len(raw) != len(items):
            msg = f"embed_windows returned {len(raw)} entries for {len(items)} text(s)"
            raise EmbeddingError(msg)
        out = [to_float_vectors(rows, len(rows), f"the windows of text {i}", type_error=EmbeddingError)
               for i, rows in enumerate(raw)]
    else:
        check_window_settings(max_windows, overlap, WORD_WINDOW)
        cut = [word_windows(text, WORD_WINDOW, overlap, max_windows)[1:] for text in items]
        flat = embedding.embed_documents([w for windows in cut for w in windows])
        out, start = [], 0
        for windows in cut:
            out.append([list(v) for v in flat[start : start + len(windows)]])
            start += len(windows)
    return out
