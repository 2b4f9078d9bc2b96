"""The anchors, set up as their users set them up, over the SAME cached MiniLM vectors as our retriever.

* LangChain: ``EnsembleRetriever([BM25Retriever, QdrantVectorStore(...).as_retriever()], weights=[0.5, 0.5])``
  (``langchain_classic``; ``langchain_community`` BM25Retriever with its default whitespace preprocess;
  ``langchain_qdrant`` over qdrant-client ``:memory:``), each member fetching ``depth``.
* LlamaIndex: ``QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1)`` over
  ``llama-index-retrievers-bm25``'s ``BM25Retriever`` and a ``VectorStoreIndex`` retriever, each member fetching
  ``depth``; ``llm=MockLLM()`` (``num_queries=1`` never calls it). Nodes carry the cached vectors, so nothing is
  re-embedded.

The query side of both goes through our embedder's framework views (``RRFLangChainEmbeddings`` /
``RRFLlamaIndexEmbedding``) over :class:`benchmarks._data.PrecomputedEmbedding`, which answers with the cached
MiniLM query vectors (so query-embedding time is excluded from retrieval timings, and identical for all).

Each anchor is an object with ``search(query, filter_session=None) -> list[doc_id]`` (best first).

Example:
    >>> lc = LangChainAnchor(ids, texts, embedding, depth=100)  # doctest: +SKIP
    >>> lc.search("what is rrf")[:3]  # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_NS = uuid.UUID("0b6e1b1e-7d0a-4b6c-9a57-3c4e1f2a9d10")


def _uuid(doc_id: str) -> str:
    return str(uuid.uuid5(_NS, doc_id))


class LangChainAnchor:
    """LangChain's hybrid recipe: BM25Retriever + QdrantVectorStore retriever in an EnsembleRetriever (RRF, c=60)."""

    name = "LangChain EnsembleRetriever"

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        embedding: Any,
        *,
        depth: int = 100,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient, models

        from rrf_retriever.langchain import RRFLangChainEmbeddings

        metas = [{**(metadatas[i] if metadatas else {}), "doc_id": ids[i]} for i in range(len(ids))]
        self.client = QdrantClient(location=":memory:")
        dim = int(embedding.dimension)
        self.client.create_collection(
            "lc", vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE)
        )
        self.store = QdrantVectorStore(
            client=self.client, collection_name="lc", embedding=RRFLangChainEmbeddings(embedding)
        )
        self.store.add_texts(list(texts), metadatas=metas, ids=[_uuid(i) for i in ids], batch_size=256)
        self.bm25 = BM25Retriever.from_texts(list(texts), metadatas=metas, k=depth)
        self.depth = depth
        self.dense = self.store.as_retriever(search_kwargs={"k": depth})
        self.ensemble = EnsembleRetriever(retrievers=[self.bm25, self.dense], weights=[0.5, 0.5])

    def search(self, query: str, filter_session: Sequence[int] | None = None) -> list[str]:
        if filter_session is None:
            docs = self.ensemble.invoke(query)
        else:
            # BM25Retriever has no filter: the LangChain user post-filters its hits; Qdrant filters natively.
            from langchain_classic.retrievers import EnsembleRetriever
            from qdrant_client import models

            flt = models.Filter(
                must=[models.FieldCondition(key="metadata.session_id", match=models.MatchAny(any=list(filter_session)))]
            )
            dense = self.store.as_retriever(search_kwargs={"k": self.depth, "filter": flt})
            allowed = set(filter_session)
            bm25 = _PostFiltered(self.bm25, allowed)
            docs = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5]).invoke(query)
        return [d.metadata["doc_id"] for d in docs]


def _PostFiltered(bm25: Any, allowed: set[int]) -> Any:
    from langchain_core.runnables import RunnableLambda

    def run(query: str) -> list[Any]:
        return [d for d in bm25.invoke(query) if d.metadata.get("session_id") in allowed]

    return RunnableLambda(run)


class LlamaIndexAnchor:
    """LlamaIndex's hybrid recipe: QueryFusionRetriever(reciprocal_rerank) over BM25Retriever + vector retriever."""

    name = "LlamaIndex QueryFusionRetriever"

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: np.ndarray,
        embedding: Any,
        *,
        depth: int = 100,
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        from llama_index.core import VectorStoreIndex
        from llama_index.core.llms import MockLLM
        from llama_index.core.retrievers import QueryFusionRetriever
        from llama_index.core.schema import TextNode
        from llama_index.retrievers.bm25 import BM25Retriever

        from rrf_retriever.llama_index import RRFLlamaIndexEmbedding

        nodes = [
            TextNode(
                id_=ids[i], text=texts[i], embedding=vectors[i].tolist(),
                metadata=dict(metadatas[i]) if metadatas else {},
            )
            for i in range(len(ids))
        ]
        self.embed_model = RRFLlamaIndexEmbedding(embedding)
        self.index = VectorStoreIndex(nodes=nodes, embed_model=self.embed_model, show_progress=False)
        self.nodes = nodes
        self.depth = depth
        self.vector = self.index.as_retriever(similarity_top_k=depth)
        self.bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=depth)
        self.fusion = QueryFusionRetriever(
            [self.vector, self.bm25],
            mode="reciprocal_rerank",
            num_queries=1,
            similarity_top_k=depth,
            llm=MockLLM(),
        )
        self._filtered: dict[tuple[int, ...], Any] = {}

    def _filtered_fusion(self, sessions: tuple[int, ...]) -> Any:
        # LlamaIndex filters at retriever construction: MetadataFilters on both members.
        if sessions not in self._filtered:
            from llama_index.core.llms import MockLLM
            from llama_index.core.retrievers import QueryFusionRetriever
            from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
            from llama_index.retrievers.bm25 import BM25Retriever

            filters = MetadataFilters(
                filters=[MetadataFilter(key="session_id", value=list(sessions), operator=FilterOperator.IN)]
            )
            vector = self.index.as_retriever(similarity_top_k=self.depth, filters=filters)
            bm25 = BM25Retriever.from_defaults(nodes=self.nodes, similarity_top_k=self.depth, filters=filters)
            self._filtered[sessions] = QueryFusionRetriever(
                [vector, bm25], mode="reciprocal_rerank", num_queries=1, similarity_top_k=self.depth, llm=MockLLM()
            )
        return self._filtered[sessions]

    def search(self, query: str, filter_session: Sequence[int] | None = None) -> list[str]:
        retriever = self.fusion if filter_session is None else self._filtered_fusion(tuple(filter_session))
        return [n.node.node_id for n in retriever.retrieve(query)]
