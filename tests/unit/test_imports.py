"""The public names, pinned: what ``rrf_retriever``, ``rrf_retriever.langchain`` and ``rrf_retriever.llama_index``
export, exactly (a name added or dropped is a decision, made here), and that every one of them imports."""

from __future__ import annotations

import importlib

import pytest

EXPECTED_ALL = {
    "rrf_retriever": [
        "AllLegsFailedError",
        "Analyzer",
        "BM25KeywordStore",
        "DimensionMismatchError",
        "EmbeddingAdapter",
        "EmbeddingError",
        "EngineClosedError",
        "EnsembleRRFRetriever",
        "FTS5KeywordStore",
        "FilterError",
        "FusedHit",
        "HashingEmbedding",
        "Hit",
        "HybridEngine",
        "InvalidArgumentError",
        "InvalidFilterError",
        "InvalidTypeError",
        "InvalidVectorError",
        "Journal",
        "MiniLMEmbedding",
        "MissingDependencyError",
        "QdrantDenseStore",
        "QdrantEdgeDenseStore",
        "QdrantEdgeKeywordStore",
        "QdrantKeywordStore",
        "RRFRetrieverError",
        "Record",
        "RetrievalSettings",
        "SearchOptions",
        "SearchResult",
        "StoreError",
        "StoreLockedError",
        "StoreUnavailableError",
        "__version__",
        "as_embedding",
        "build_match_query",
        "calibrated_score_fusion",
        "distribution_based_score_fusion",
        "normalize_scores",
        "relative_score_fusion",
        "tokenize",
        "weighted_rrf",
    ],
    "rrf_retriever.langchain": [
        "CompressorReranker",
        "LangChainRRFRetriever",
        "RRFDocument",
        "RRFLangChainEmbeddings",
        "RRFTranslator",
        "RRFVectorStore",
        "TRACE_EVENT",
        "to_langchain_document",
    ],
    "rrf_retriever.llama_index": [
        "LlamaIndexRRFRetriever",
        "PostprocessorReranker",
        "RRFLlamaIndexEmbedding",
        "RRFRetrievalTraceEvent",
        "RRFTextNode",
        "RRFVectorStore",
        "from_llama_index",
        "to_node_with_score",
    ],
}


@pytest.mark.parametrize("module", sorted(EXPECTED_ALL))
def test_all_is_exactly_the_expected_names(module: str) -> None:
    assert EXPECTED_ALL[module] == sorted(EXPECTED_ALL[module])  # kept sorted, so a diff reads as a list
    assert sorted(importlib.import_module(module).__all__) == EXPECTED_ALL[module]


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in sorted(EXPECTED_ALL.items()) for n in names])
def test_every_public_name_imports(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is not None  # what `from module import name` does
