"""HashingEmbedding: the deterministic plumbing embedder."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError


def test_hashing_embedding_is_deterministic_unit_vectors() -> None:
    a, b = HashingEmbedding(dim=64), HashingEmbedding(dim=64)
    texts = ["Hybrid retrieval", "hybrid RETRIEVAL", "", "???"]
    va, vb = a.embed_documents(texts), b.embed_documents(texts)
    assert va == vb
    assert va[0] == va[1]  # case-insensitive tokens
    for v in va:
        assert math.isclose(float(np.linalg.norm(v)), 1.0, rel_tol=1e-9)
    assert a.embed_query("Hybrid retrieval") == va[0]
    assert a.dimension == 64 and a.model_id == "hashing-64"


@pytest.mark.parametrize("dim", [0, -1, True, 2.0])
def test_hashing_embedding_rejects_bad_dim(dim: object) -> None:
    with pytest.raises(InvalidArgumentError):
        HashingEmbedding(dim=dim)  # type: ignore[arg-type]
