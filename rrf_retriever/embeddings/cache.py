"""An on-disk cache of document vectors, for benchmarks and notebooks that embed the same corpus again and again.

Example:
    >>> vecs = cached_embed_documents(MiniLMEmbedding(), texts, "benchmarks/.cache")  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rrf_retriever.embeddings.adapters import as_embedding
from rrf_retriever.embeddings.base import check_texts

if TYPE_CHECKING:
    import numpy as np

__all__ = ["cached_embed_documents"]


def cached_embed_documents(
    embedding: Any, texts: Sequence[str], cache_dir: str | Path, *, model_key: str | None = None
) -> np.ndarray:
    """Embed ``texts`` once and keep the vectors in ``cache_dir`` (a ``.npy`` keyed by model and content).

    ``embedding`` is anything :func:`~rrf_retriever.embeddings.as_embedding` accepts; a model with an
    ``embed_array`` fast path (:class:`~rrf_retriever.embeddings.MiniLMEmbedding`) uses it. The key is the model's
    ``model_id`` (or ``model_key``) and a SHA-256 over every text, so a changed corpus or model never reuses stale
    vectors. The write is atomic.

    Returns:
        A ``float32`` array ``[len(texts), dimension]``.

    Example:
        >>> vecs = cached_embed_documents(MiniLMEmbedding(), texts, "benchmarks/.cache")  # doctest: +SKIP
    """
    import numpy as np

    adapter = as_embedding(embedding)
    items = check_texts(texts)
    digest = hashlib.sha256()
    for text in items:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_key or adapter.model_id)
    target = Path(cache_dir) / f"emb-{name}-{len(items)}-{digest.hexdigest()[:20]}.npy"
    if target.is_file():
        return np.load(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    embed_array = getattr(adapter, "embed_array", None)
    if callable(embed_array):
        vectors = np.asarray(embed_array(items), dtype=np.float32)
    else:
        vectors = np.asarray(adapter.embed_documents(items), dtype=np.float32)
    tmp = target.with_suffix(f".{os.getpid()}.tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, target)
    return vectors
