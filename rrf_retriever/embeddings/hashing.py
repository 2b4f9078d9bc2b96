"""A deterministic token-hashing embedder, for plumbing tests (no semantics).

Example:
    >>> len(HashingEmbedding(dim=8).embed_query("hello world"))
    8
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import Any

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter
from rrf_retriever.errors import InvalidArgumentError

__all__ = ["HashingEmbedding"]

_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedding(BaseEmbeddingAdapter):
    """Deterministic token-hashing embedder: each lower-cased token adds +-1 to one of ``dim`` buckets.

    The vector is L2-normalised; a text without tokens maps to a fixed unit vector. Same text, same vector,
    in every process (blake2b, not Python's salted ``hash``). No semantics: for plumbing tests only.

    Example:
        >>> e = HashingEmbedding(dim=16)
        >>> e.embed_query("a b") == e.embed_documents(["a b"])[0]
        True
    """

    model_id = "hashing"

    def __init__(self, dim: int = 64) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            msg = f"dim must be a positive integer, got {dim!r}"
            raise InvalidArgumentError(msg)
        super().__init__(batch_size=4096)
        self.dimension = dim
        self.model_id = f"hashing-{dim}"

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * int(self.dimension or 0)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % len(vec)] += 1.0 if (h >> 63) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def _embed_batch(self, texts: list[str]) -> Sequence[Any]:
        return [self._vector(t) for t in texts]
