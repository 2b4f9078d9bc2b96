"""Value types shared by every layer: hits, fused hits, stored records, traces and search results.

All are frozen dataclasses: a hit that leaves a store is never changed in place. No validation and no I/O here:
checks live in :mod:`rrf_retriever.validate`, the filter language in :mod:`rrf_retriever.scope.tree`.

Example:
    >>> from rrf_retriever.types import Hit
    >>> Hit(id="a", text="hello", score=1.5).id
    'a'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FusedHit", "Hit", "LegTrace", "Record", "SearchResult", "Trace"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of one store (a "leg").

    Attributes:
        id: The document id, the same in every store.
        text: The document text.
        metadata: The user's metadata.
        score: The store's own score, higher is better (cosine similarity, BM25 as a positive number).
    """

    id: str
    text: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One result of a fusion.

    Attributes:
        id: The document id.
        text: The document text (taken from the source that ranked it best).
        metadata: The user's metadata (from the same source).
        score: The fused score.
        ranks: ``{source: 1-based rank}`` for every source with weight > 0 that returned the document.
        scores: ``{source: raw score}`` for the same sources.
        normalized_score: ``score`` divided by the best score the query's active weights and ``rrf_k`` allow
            (1.0 = first in every active leg); set by the engine, 0.0 straight out of a fusion function.
        relevance: ``normalized_score`` times how strongly the corpus matches the query at all, in [0, 1]
            (:mod:`rrf_retriever.relevance`): in the fused order, and low for an unrelated query; set by the engine.
    """

    id: str
    text: str
    metadata: Mapping[str, Any]
    score: float
    ranks: Mapping[str, int]
    scores: Mapping[str, float]
    normalized_score: float = 0.0
    relevance: float = 0.0


@dataclass(frozen=True, slots=True)
class Record:
    """A stored document as a store gives it back (``get``), with its vector where the store keeps one.

    Example:
        >>> Record("a", "text", {"k": 1}).vector is None
        True
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vector: Sequence[float] | None = None


@dataclass(frozen=True, slots=True)
class LegTrace:
    """What one leg (one source) did for one query.

    Attributes:
        name: The source name ("dense", "keyword", ...).
        kind: "dense", "keyword" or "retriever" (a LangChain/LlamaIndex retriever used as a source).
        weight: The weight used for this query.
        called: False when the leg sat out (weight 0, no keyword term survived, embedding failed).
        latency_ms: Wall time of the leg's search (0 when not called).
        hits: How many hits it returned.
        error: The error message when it failed or timed out, else None.
        note: Why it sat out, when it did ("weight 0", "no keyword terms", ...), or how a leg that cannot take
            the filter applied it ("post-filtered: ...", a foreign retriever).
    """

    name: str
    kind: str
    weight: float
    called: bool
    latency_ms: float = 0.0
    hits: int = 0
    error: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Trace:
    """How a hybrid query was answered: per-leg traces, timings and the settings used.

    ``stages_ms`` holds each result stage's time (``pinned``, ``diversity``, ``rerank``, ``expand``);
    ``stage_counts`` what they did: ``pinned`` (pinned hits in the pool), ``threshold_dropped``,
    ``diversity_pool`` / ``diversity_vectors`` (candidates, and how many had a stored vector), ``reranked``
    (candidates the reranker saw), ``rerank_failed`` (1: it raised and the fused order was kept), ``expanded``
    (neighbours appended).

    Example:
        >>> Trace(legs=(), weights={}, rrf_k=60.0, top_k=10, fetch_k=20).degraded
        False
    """

    legs: tuple[LegTrace, ...]
    weights: Mapping[str, float]
    rrf_k: float
    top_k: int
    fetch_k: int
    fusion: str = "rrf"
    embed_ms: float = 0.0
    fusion_ms: float = 0.0
    total_ms: float = 0.0
    warnings: tuple[str, ...] = ()
    stages_ms: Mapping[str, float] = field(default_factory=dict)
    stage_counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def degraded(self) -> bool:
        """True when a leg that should have run failed, timed out or lost its embedding, or the reranker failed."""
        return any(leg.error is not None for leg in self.legs) or bool(self.stage_counts.get("rerank_failed"))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (the service, the CLI's ``--json``, LangChain callbacks, LlamaIndex events).

        Example:
            >>> Trace(legs=(), weights={"dense": 1.0}, rrf_k=60.0, top_k=10, fetch_k=20).to_dict()["degraded"]
            False
        """
        out = asdict(self)
        out["weights"] = dict(self.weights)
        out["warnings"] = list(self.warnings)
        out["legs"] = [asdict(leg) for leg in self.legs]
        out["degraded"] = self.degraded
        return out


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer of a hybrid search: fused hits (best first) and the trace.

    Example:
        >>> SearchResult(hits=[], trace=Trace((), {}, 60.0, 10, 20)).ids
        []
    """

    hits: list[FusedHit]
    trace: Trace

    @property
    def ids(self) -> list[str]:
        """The ids of the hits, best first."""
        return [h.id for h in self.hits]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view: hits (id, text, metadata, score, normalized_score, relevance, ranks, scores) and the
        trace.

        Example:
            >>> SearchResult([], Trace((), {}, 60.0, 10, 20)).to_dict()["trace"]["rrf_k"]
            60.0
        """
        hits = [
            {"id": h.id, "text": h.text, "metadata": dict(h.metadata), "score": h.score,
             "normalized_score": h.normalized_score, "relevance": h.relevance, "ranks": dict(h.ranks),
             "scores": dict(h.scores)}
            for h in self.hits
        ]
        return {"hits": hits, "trace": self.trace.to_dict()}
