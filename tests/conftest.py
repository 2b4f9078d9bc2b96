"""Shared fixtures. Keep each fixture small and documented; other test modules rely on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real all-MiniLM-L6-v2 embedder in exact fp32 (onnxruntime), built once per test session.

    The ONNX graph is cached under the user cache dir (or $RRF_RETRIEVER_CACHE_DIR) like in normal use, so
    only the first session on a machine pays the ~1 s build.
    """
    from rrf_retriever.embeddings import MiniLMEmbedding

    return MiniLMEmbedding(precision="fp32")  # the exact model: parity and path tests compare with fp32


@pytest.fixture(scope="session")
def minilm_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh, session-wide cache directory for tests that check the graph cache itself."""
    return tmp_path_factory.mktemp("minilm-cache")
