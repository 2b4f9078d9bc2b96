"""The engine's settings: one immutable, validated snapshot that a whole query reads.

``HybridEngine.update_settings`` swaps the snapshot atomically (one reference assignment); a query takes the
reference once and keeps it, so it never sees half an update and takes no lock.

Example:
    >>> s = RetrievalSettings(weights={"dense": 1.0, "keyword": 0.5})
    >>> s.effective_fetch_k(10), s.effective_fetch_k(50), s.with_weights({"keyword": 2})["keyword"]
    (40, 100, 2.0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Literal

from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.fusion import FUSIONS
from rrf_retriever.validate import (
    MAX_LEG_TIMEOUT,
    MAX_RRF_K,
    MAX_TOP_K,
    check_mapping,
    check_number,
    check_top_k,
    check_weights,
)

__all__ = ["DEFAULT_HYBRID_RRF_K", "DEFAULT_LEG_WEIGHTS", "MIN_FETCH_K", "OnError", "RetrievalSettings"]

#: The engine's RRF constant unless told otherwise: the textbook 60. Chosen with the defaults below across five
#: collections, leave-one-collection-out (benchmarks/bench_collections.py, benchmarks/RESULTS.md): the k=2 tuned
#: on SciFact alone lost on collections nobody tuned on (worst margin over the best anchor -0.030 vs -0.017).
DEFAULT_HYBRID_RRF_K = 60.0
#: Default weight of a leg by its kind (a kind not listed weighs 1.0); chosen in the same study.
DEFAULT_LEG_WEIGHTS: Mapping[str, float] = MappingProxyType({"dense": 1.0, "keyword": 1.25})
#: Each leg fetches at least this many hits by default: with k=60 a document ranked 21st-40th by one leg still
#: counts, and fetching 40 instead of 20 at top_k=10 was worth +0.01 to +0.03 nDCG@10 on MED, NPL and ArguAna.
MIN_FETCH_K = 40
OnError = Literal["degrade", "raise"]
_WEIGHTS_ARE = "source name to weight"


@dataclass(frozen=True)
class RetrievalSettings:
    """An immutable, validated snapshot of everything a query reads.

    Attributes:
        weights: ``{source: weight >= 0}``; every source of the engine has one.
        rrf_k: The RRF constant (default :data:`DEFAULT_HYBRID_RRF_K`, 60).
        top_k: How many fused results to return (default 10).
        fetch_k: How many hits each leg fetches; None means ``max(2 * top_k, MIN_FETCH_K)`` (headroom for fusion).
        leg_timeout: Seconds a leg (and the query embedding) may take; None waits forever.
        on_error: ``"degrade"`` drops a failing leg from the query; ``"raise"`` re-raises its error.
        fusion: ``"rrf"`` (default), ``"relative_score"`` or ``"dbsf"`` (:data:`rrf_retriever.fusion.FUSIONS`).

    Example:
        >>> RetrievalSettings(weights={"dense": 1.0}).to_dict()["top_k"]
        10
    """

    weights: Mapping[str, float]
    rrf_k: float = DEFAULT_HYBRID_RRF_K
    top_k: int = 10
    fetch_k: int | None = None
    leg_timeout: float | None = None
    on_error: OnError = "degrade"
    fusion: str = "rrf"

    def __post_init__(self) -> None:
        weights = check_mapping(self.weights, "weights", _WEIGHTS_ARE)
        object.__setattr__(self, "weights", MappingProxyType(_not_all_zero(check_weights(list(weights), weights))))
        object.__setattr__(self, "rrf_k", check_number(self.rrf_k, "rrf_k", high=MAX_RRF_K))
        check_top_k(self.top_k)
        if self.fetch_k is not None:
            check_top_k(self.fetch_k, "fetch_k")
        if self.leg_timeout is not None:
            timeout = check_number(self.leg_timeout, "leg_timeout", allow_zero=False, high=MAX_LEG_TIMEOUT)
            object.__setattr__(self, "leg_timeout", timeout)
        if self.on_error not in ("degrade", "raise"):
            msg = f"on_error must be 'degrade' or 'raise', got {self.on_error!r}"
            raise InvalidArgumentError(msg)
        if self.fusion not in FUSIONS:
            msg = f"fusion must be one of {sorted(FUSIONS)}, got {self.fusion!r}"
            raise InvalidArgumentError(msg)

    @classmethod
    def field_names(cls) -> frozenset[str]:
        """The settable fields (what ``update_settings`` accepts)."""
        return frozenset(f.name for f in fields(cls))

    def effective_fetch_k(self, top_k: int) -> int:
        """Hits per leg for a query that asks ``top_k``: ``fetch_k`` if set (never below ``top_k``), else
        ``max(2 * top_k, MIN_FETCH_K)``."""
        if self.fetch_k is None:
            return min(max(2 * top_k, MIN_FETCH_K), MAX_TOP_K)
        return max(self.fetch_k, top_k)

    def with_weights(self, weights: Mapping[str, float] | None) -> dict[str, float]:
        """The snapshot's weights overridden by per-call ``weights`` (validated; unknown sources refused)."""
        if weights is None:
            return dict(self.weights)
        check_mapping(weights, "weights", _WEIGHTS_ARE)
        return _not_all_zero(check_weights(list(self.weights), {**self.weights, **weights}))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (for the settings service and logs)."""
        return {f.name: (dict(self.weights) if f.name == "weights" else getattr(self, f.name)) for f in fields(self)}


def _not_all_zero(weights: dict[str, float]) -> dict[str, float]:
    """One rule for the engine, the retriever, the CLI and the service: weights that are all 0 are a mistake."""
    if weights and not any(weights.values()):
        msg = f"every source's weight is 0 ({sorted(weights)}): nothing would be searched; give one a weight > 0"
        raise InvalidArgumentError(msg)
    return weights
