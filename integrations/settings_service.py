"""The settings service as a memory service runs it: live weights over HTTP, session-scoped search, writes.

Run: ``.venv/bin/python -m integrations.settings_service`` (serves http://127.0.0.1:8000, docs at /docs; set
``RRF_RETRIEVER_API_KEY`` to require ``Authorization: Bearer <key>`` on every route but /health), then::

    curl localhost:8000/settings
    curl -X PATCH localhost:8000/settings -H 'content-type: application/json' -d '{"keywordWeight": 0.5, "topK": 3}'
    curl 'localhost:8000/search?q=E4012&session_ids=1,2'
    curl -X POST localhost:8000/search -H 'content-type: application/json' \\
         -d '{"q": "disk space", "filter": {"session_id": [1, 2], "kind": "kb"}}'
    curl -X POST localhost:8000/documents -H 'content-type: application/json' \\
         -d '{"documents": [{"id": "kb-7", "text": "E5001: the vault is read-only", "metadata": {"session_id": 4}}]}'

In this API ``k`` is the RRF constant and ``topK`` the number of results (the names the seed services use).
Unknown parameters or fields are a 422, and so is an empty ``session_ids=`` (it never means "every session").
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import FastAPI

from integrations.corpus import NOTES
from rrf_retriever.apps.service import API_KEY_ENV, create_app
from rrf_retriever.engine import HybridEngine
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantEdgeDenseStore


def build_engine(embedding: Any = None) -> HybridEngine:
    """The embedded default stack (qdrant-edge in a temporary folder + SQLite FTS5) over the example notes."""
    if embedding is None:
        from rrf_retriever.embeddings import MiniLMEmbedding

        embedding = MiniLMEmbedding()
    engine = HybridEngine({"dense": QdrantEdgeDenseStore(embedding), "keyword": FTS5KeywordStore()})
    engine.add([i for i, *_ in NOTES], [t for _, t, _ in NOTES], [m for *_, m in NOTES])
    return engine


def build_app(embedding: Any = None, **options: Any) -> FastAPI:
    """The FastAPI app: /settings, /search (GET, POST), /documents (POST, DELETE), /health.

    ``options`` go to :func:`~rrf_retriever.apps.service.create_app` (``api_key``, ``allowed_hosts``, ``max_body``).
    """
    return create_app(build_engine(embedding), **options)


def main(host: str = "127.0.0.1", port: int = 8000) -> None:
    import uvicorn

    uvicorn.run(build_app(api_key=os.environ.get(API_KEY_ENV) or None), host=host, port=port)


if __name__ == "__main__":
    main()
