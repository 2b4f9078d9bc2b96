"""The engine's settings: one immutable, validated snapshot that a whole query reads.

``HybridEngine.update_settings`` swaps the snapshot atomically (one reference assignment); a query takes the
reference once and keeps it, so it never sees half an update and takes no lock.

Example:
    >>> s = RetrievalSettings(weights={"dense": 1.0, "keyword": 0.5})
    >>> s.effective_fetch_k(10), s.effective_fetch_k(50), s.with_weights({"keyword": 2})["keyword"]
    (40, 100, 2.0)
    >>> RetrievalSettings(weights={"keyword": 1.0}, top_k=10, fetch_k=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.InvalidArgumentError: fetch_k (3) is below top_k (10): ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from rrf_retriever.engine.paths import UNSCOPED, DensePaths, Unscoped
from rrf_retriever.engine.rerank import check_reranker, reranker_name
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.fusion import DEFAULT_RRF_K, FUSIONS
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import AllOf, FilterNode, FilterSpec
from rrf_retriever.validate import (
    MAX_LEG_TIMEOUT,
    MAX_RRF_K,
    MAX_TOP_K,
    check_mapping,
    check_number,
    check_str,
    check_top_k,
    check_weight_values,
)

__all__ = [
    "DEFAULT_LEG_WEIGHTS",
    "MAX_DENSE_PATHS",
    "MIN_FETCH_K",
    "OnError",
    "RetrievalSettings",
    "check_dense_paths",
    "check_diversity",
    "check_known_sources",
    "refuse_all_zero",
]

#: Default weight of a leg by its kind (a kind not listed weighs 1.0); chosen with the RRF constant
#: (:data:`~rrf_retriever.fusion.DEFAULT_RRF_K`) across five collections (benchmarks/quality/bench_collections.py).
DEFAULT_LEG_WEIGHTS: Mapping[str, float] = MappingProxyType({"dense": 1.0, "keyword": 1.25})
#: Each leg fetches at least this many hits by default: with k=60 a document ranked 21st-40th by one leg still
#: counts, and fetching 40 instead of 20 at top_k=10 was worth +0.01 to +0.03 nDCG@10 on MED, NPL and ArguAna.
MIN_FETCH_K = 40
#: At most this many ``dense_paths`` (each one more dense leg a query runs): 5,000 of them, 150 KB of JSON, ran
#: 5,002 legs in 10-18 s.
MAX_DENSE_PATHS = 8
OnError = Literal["degrade", "raise"]
_NO_PATHS = DensePaths({}, {})


@dataclass(frozen=True)
class RetrievalSettings:
    """An immutable, validated snapshot of everything a query reads.

    Attributes:
        weights: ``{source: weight >= 0}``; every source of the engine has one. Validated when the snapshot is
            built: a query reads them as they are.
        rrf_k: The RRF constant (default :data:`~rrf_retriever.fusion.DEFAULT_RRF_K`, 60).
        top_k: How many fused results to return (default 10).
        fetch_k: How many hits each leg fetches, at least ``top_k``; None means ``max(2 * top_k, MIN_FETCH_K)``
            (headroom for fusion).
        leg_timeout: Seconds a leg (and the query embedding) may take; None waits forever.
        on_error: ``"degrade"`` drops a failing leg from the query; ``"raise"`` re-raises its error.
        fusion: ``"rrf"`` (default), ``"relative_score"``, ``"dbsf"`` or ``"calibrated"``
            (:data:`rrf_retriever.fusion.FUSIONS`).
        diversity: The MMR lambda in [0, 1] of the diversity stage (1 = the fused order); None (default): off.
        reranker: A reranker (:mod:`rrf_retriever.engine.rerank`: a callable ``(query, texts) -> scores`` or an
            object with ``rerank_hits``); None (default): no reranking. ``to_dict`` shows its name only.
        rerank_k: How many fused candidates the reranker sees; None: ``max(2 * top_k, 20)``.
        dense_paths: Extra dense legs over the main dense store, ``{name: filter or None}``: each searches with
            the query's filter AND its own (None: the query's alone; :data:`~rrf_retriever.engine.paths.UNSCOPED`:
            the whole store, single-tenant only), with the query's ``exclude_ids``; its weight is
            ``weights[name]`` (default: the main dense leg's). Empty (default): none.
        expand_limit: At most this many neighbours from 1-hop expansion; None: ``top_k``.
        weak_legs: The weak-leg rule (default on): a leg that cannot help this corpus or query (its embedder does
            not speak the corpus language, reads only the start of long documents, or its top scores are all
            equal) is weighted down before fusion (:mod:`rrf_retriever.engine.weak_legs`); a call's own
            ``weights=`` are taken as given. False: the weights always hold.

    Example:
        >>> RetrievalSettings(weights={"dense": 1.0}).to_dict()["top_k"]
        10
    """

    weights: Mapping[str, float]
    rrf_k: float = DEFAULT_RRF_K
    top_k: int = 10
    fetch_k: int | None = None
    leg_timeout: float | None = None
    on_error: OnError = "degrade"
    fusion: str = "rrf"
    diversity: float | None = None
    reranker: Any = None
    rerank_k: int | None = None
    dense_paths: Mapping[str, FilterSpec | Unscoped | None] = field(default_factory=lambda: MappingProxyType({}))
    expand_limit: int | None = None
    weak_legs: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", MappingProxyType(refuse_all_zero(check_weight_values(self.weights))))
        object.__setattr__(self, "rrf_k", check_number(self.rrf_k, "rrf_k", high=MAX_RRF_K))
        check_top_k(self.top_k)
        if self.fetch_k is not None:
            check_top_k(self.fetch_k, "fetch_k")
            if self.fetch_k < self.top_k:  # the one check: the engine, the retrievers and PATCH /settings pass here
                msg = (f"fetch_k ({self.fetch_k}) is below top_k ({self.top_k}): each leg must fetch at least top_k "
                       "hits; raise fetch_k or set it to None (max(2 * top_k, 40))")
                raise InvalidArgumentError(msg)
        if self.leg_timeout is not None:
            timeout = check_number(self.leg_timeout, "leg_timeout", allow_zero=False, high=MAX_LEG_TIMEOUT)
            object.__setattr__(self, "leg_timeout", timeout)
        if self.on_error not in ("degrade", "raise"):
            msg = f"on_error must be 'degrade' or 'raise', got {self.on_error!r}"
            raise InvalidArgumentError(msg)
        if self.fusion not in FUSIONS:
            msg = f"fusion must be one of {sorted(FUSIONS)}, got {self.fusion!r}"
            raise InvalidArgumentError(msg)
        if self.diversity is not None:
            object.__setattr__(self, "diversity", check_diversity(self.diversity))
        check_reranker(self.reranker)
        if self.rerank_k is not None:
            check_top_k(self.rerank_k, "rerank_k")
        if self.expand_limit is not None:
            check_top_k(self.expand_limit, "expand_limit")
        object.__setattr__(self, "dense_paths", check_dense_paths(self.dense_paths) or _NO_PATHS)
        if not isinstance(self.weak_legs, bool):
            msg = f"weak_legs must be True or False, got {self.weak_legs!r}"
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
        """The snapshot's weights overridden by raw ``weights`` (``update_settings``' door: their values checked,
        unknown sources refused, all zero refused)."""
        if weights is None:
            return dict(self.weights)
        return refuse_all_zero(self.merged_weights(check_weight_values(weights)))

    def merged_weights(self, weights: Mapping[str, float], names: Sequence[str] | None = None) -> dict[str, float]:
        """Validated ``weights`` (their values checked where they entered: the options) over the snapshot's, for
        ``names`` (None: the snapshot's sources and dense paths); a name without a weight weighs 1.0. Only the
        names are checked: a weight for another name is refused.

        Raises:
            InvalidArgumentError: a weight for a name not among ``names``.

        Example:
            >>> RetrievalSettings(weights={"dense": 1.0, "keyword": 0.5}).merged_weights({"dense": 2.0})
            {'dense': 2.0, 'keyword': 0.5}
        """
        known = [*self.weights, *(p for p in self.dense_paths if p not in self.weights)] if names is None else names
        check_known_sources(known, weights)
        merged = {**self.weights, **weights}
        return {name: merged.get(name, 1.0) for name in known}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (for the settings service and logs); the reranker shows as its name."""
        out = dict(vars(self))  # the fields, in order (a frozen dataclass holds nothing else)
        out["weights"] = dict(self.weights)
        out["dense_paths"] = {k: "UNSCOPED" if v is UNSCOPED else v for k, v in self.dense_paths.items()}
        out["reranker"] = reranker_name(self.reranker)
        return out


def check_diversity(value: object) -> float:
    """The MMR lambda of the diversity stage: a number in [0, 1].

    Example:
        >>> check_diversity(0.5)
        0.5
    """
    return check_number(value, "diversity (the MMR lambda)", high=1.0)


def check_dense_paths(paths: object) -> DensePaths | None:
    """Validate ``dense_paths`` (``{name: filter, None or UNSCOPED}``): at most :data:`MAX_DENSE_PATHS` of them,
    names are non-empty strings, filters parse.

    The filters are kept as given (JSON-able for ``to_dict``) and parsed (:class:`~rrf_retriever.engine.paths.
    DensePaths`: a query searches with the parsed trees); validated paths pass through.

    Example:
        >>> check_dense_paths({"dense_all": None})
        {'dense_all': None}
    """
    if paths is None or isinstance(paths, DensePaths):
        return paths
    given = check_mapping(paths, "dense_paths", "path name to its filter (or None: the query's scope alone)")
    if len(given) > MAX_DENSE_PATHS:  # refused before any of its filters is parsed
        msg = f"dense_paths names {len(given)} paths; at most {MAX_DENSE_PATHS} are allowed (each is one more leg)"
        raise InvalidArgumentError(msg)
    out: dict[str, FilterSpec | Unscoped | None] = {}
    parsed: dict[str, FilterNode | Unscoped | None] = {}
    nodes: list[FilterNode] = []
    for name, flt in given.items():
        if not check_str(name, "a dense_paths name"):
            msg = "dense_paths names must be non-empty strings"
            raise InvalidArgumentError(msg)
        if flt is UNSCOPED:  # the single-tenant opt-out, a Python object: no JSON request can name it
            out[name] = parsed[name] = flt
            continue
        node = normalize_filter(flt)  # a malformed filter is refused here, never run unscoped
        out[name] = None if flt is None else dict(check_mapping(flt, f"dense_paths[{name!r}]", "a filter"))
        parsed[name] = node
        nodes.extend([] if node is None else [node])
    if len(nodes) > 1:  # one budget for the paths' filters together (MAX_FILTER_VALUES_TOTAL values in all)
        normalize_filter(AllOf(tuple(nodes)))
    return DensePaths(out, parsed)


def check_known_sources(sources: Iterable[str], weights: Mapping[Any, Any]) -> None:
    """Refuse weights for names not among ``sources``: the engine's one check of them (its constructor, per-call
    and per-update weights); a name that is not a string is named too, never a ``TypeError`` of sorting.

    Example:
        >>> check_known_sources(["dense", "keyword"], {"keyword": 0.5})
    """
    known = set(sources)
    unknown = sorted((name for name in weights if name not in known), key=str)
    if unknown:
        msg = f"weights given for unknown source(s) {unknown}; the sources are {sorted(known, key=str)}"
        raise InvalidArgumentError(msg)


def refuse_all_zero(weights: dict[str, float]) -> dict[str, float]:
    """One rule for the engine, the retriever, the CLI and the service: weights that are all 0 are a mistake.

    Example:
        >>> refuse_all_zero({"dense": 0.0, "keyword": 1.0})
        {'dense': 0.0, 'keyword': 1.0}
    """
    if weights and not any(weights.values()):
        msg = f"every source's weight is 0 ({sorted(weights)}): nothing would be searched; give one a weight > 0"
        raise InvalidArgumentError(msg)
    return weights
