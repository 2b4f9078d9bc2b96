"""The framework-neutral engine: legs, settings, the read path, the multi-store write unit, the journal.

Re-exports only.
"""

from rrf_retriever.engine.core import (
    DEFAULT_HYBRID_RRF_K,
    DEFAULT_LEG_WEIGHTS,
    MAX_TOP_K,
    DenseLeg,
    FunctionLeg,
    HybridEngine,
    KeywordLeg,
    Leg,
    RetrievalSettings,
    SearchResult,
    check_query,
    check_top_k,
)
from rrf_retriever.engine.journal import Journal, JournalEntry, open_journal

__all__ = [
    "DEFAULT_HYBRID_RRF_K",
    "DEFAULT_LEG_WEIGHTS",
    "MAX_TOP_K",
    "DenseLeg",
    "FunctionLeg",
    "HybridEngine",
    "Journal",
    "JournalEntry",
    "KeywordLeg",
    "Leg",
    "RetrievalSettings",
    "SearchResult",
    "check_query",
    "check_top_k",
    "open_journal",
]
