"""The framework-neutral engine: legs, settings, the search options, the read path, the multi-store write unit,
the journal.

Re-exports only.
"""

from rrf_retriever.engine.core import HybridEngine
from rrf_retriever.engine.journal import Journal, JournalEntry, open_journal
from rrf_retriever.engine.legs import DenseLeg, FunctionLeg, KeywordLeg, Leg, StoreLeg, as_leg
from rrf_retriever.engine.options import SearchOptions
from rrf_retriever.engine.run import HeadStart
from rrf_retriever.engine.settings import DEFAULT_LEG_WEIGHTS, MIN_FETCH_K, RetrievalSettings
from rrf_retriever.engine.writes import WriteUnit
from rrf_retriever.types import SearchResult
from rrf_retriever.validate import MAX_TOP_K, check_query, check_top_k

__all__ = [
    "DEFAULT_LEG_WEIGHTS",
    "MAX_TOP_K",
    "MIN_FETCH_K",
    "DenseLeg",
    "FunctionLeg",
    "HeadStart",
    "HybridEngine",
    "Journal",
    "JournalEntry",
    "KeywordLeg",
    "Leg",
    "RetrievalSettings",
    "SearchOptions",
    "SearchResult",
    "StoreLeg",
    "WriteUnit",
    "as_leg",
    "check_query",
    "check_top_k",
    "open_journal",
]
