"""A LlamaIndex query engine over EnsembleRRFRetriever (offline: local MiniLM, MockLLM).

Run: ``.venv/bin/python -m integrations.llamaindex_query_engine``

``RetrieverQueryEngine.from_args(retriever, llm=MockLLM())``: the same retriever object that LangChain uses,
answering LlamaIndex's ``retrieve`` / ``aretrieve``; ``scoped(filter=...)`` gives per-call scope, since
LlamaIndex's ``retrieve`` takes only the query.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import Document as LlamaDocument

from integrations.corpus import NOTES
from rrf_retriever import EnsembleRRFRetriever


def build_retriever(embedding: Any = None, **kwargs: Any) -> EnsembleRRFRetriever:
    """Index LlamaIndex Documents into the embedded default stack."""
    if embedding is None:
        from rrf_retriever.embeddings import MiniLMEmbedding

        embedding = MiniLMEmbedding()
    documents = [LlamaDocument(id_=doc_id, text=text, metadata=meta) for doc_id, text, meta in NOTES]
    return EnsembleRRFRetriever.from_documents(documents, embedding, **{"top_k": 3, **kwargs})


def main() -> dict[str, Any]:
    retriever = build_retriever()
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=16))
    response = engine.query("How do I cap the retry wait?")
    for node in response.source_nodes:
        meta = node.node.metadata
        print(f"{node.node.node_id} score={node.score:.4f} ranks={meta['rrf_ranks']}: {node.node.get_content()[:60]}")
    async_response = asyncio.run(engine.aquery("uploads stopped syncing"))
    scoped_nodes = retriever.scoped(filter={"session_id": [3]}).retrieve("security settings")
    print("session 3 only:", [n.node.node_id for n in scoped_nodes])
    return {"response": response, "async_response": async_response, "scoped": scoped_nodes}


if __name__ == "__main__":
    main()
