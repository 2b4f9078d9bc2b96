"""How a qdrant-edge dense shard indexes its optimized segments: the index kinds, the shard settings of each, and
the HNSW graph an int8 shard grows by itself once it holds :data:`GRAPH_POINTS` points.

* ``"int8"`` (the default): optimized segments keep an int8 copy of the vectors (scalar quantization, quantile
  0.99) and no graph; a search scans the int8 copy for ``limit`` x :data:`INT8_OVERSAMPLING` candidates and
  rescores them with the float vectors. Its cost grows linearly with the points (benchmarks/RESULTS.md, "Scale:
  10k to 1M").
* ``"int8-hnsw"``: the int8 copy AND an HNSW graph (m=16) over it: the search walks the graph, rescoring with the
  float vectors. What an ``"int8"`` shard becomes at :data:`GRAPH_POINTS` (qdrant-edge rewrites a shard's config
  when it is reopened with another, and its next optimize builds the graph over the existing segments).
* ``"hnsw"``: Qdrant's default config (HNSW, no quantization): what a shard written before the setting is.
* ``"plain"``: exact float scan.

A filtered search whose scope holds fewer than ~:data:`FULL_SCAN_KB` kilobytes of vectors scans the scope through
the payload index instead of walking the graph (a graph walk under a narrow filter loses recall).

Filtered search on a shard with a graph (:func:`filtered_plan`, the store's ``filtered_search``): Qdrant's own plan
walks the graph for any scope above that threshold, and a walk confined to a scope that is a region of the space
(a tenant of its own topics) misses the scope's top hits for a query outside the region: recall@10 0.72 mean, 0.25
at the 5th percentile, for a scope of 35% of 100k clustered vectors (benchmarks/scale/bench_filtered_recall.py). ACORN
(Qdrant's search-time walk through neighbours' neighbours, ``AcornSearchParams``) lifts it to 0.90 / 0.70, more
``hnsw_ef`` to 0.97 / 0.90; filterable HNSW (extra links per payload value, built with the graph when the payload
index exists first) links no value held by more than ~4 x N / 21-32 points (Qdrant's build), so no such scope. Hence the
default ``"auto"``: a filtered search whose scope Qdrant estimates (payload index cardinality, ~10 us) below
:data:`GRAPH_TRUST` of the shard's points scores every in-scope float vector (exact, its cost linear in the
scope: ~8-20 ms at 35-95% of 100k here), a larger one walks the graph with ACORN.

Example:
    >>> same_kind("int8", "int8-hnsw"), same_kind("plain", "int8")
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "DEFAULT_INDEX",
    "FILTERED_SEARCH",
    "FULL_SCAN_KB",
    "GRAPH_KIND",
    "GRAPH_POINTS",
    "GRAPH_TRUST",
    "INDEX_KINDS",
    "INT8_OVERSAMPLING",
    "dense_params",
    "filtered_plan",
    "has_graph",
    "index_config",
    "quantization_params",
    "same_kind",
    "scope_share",
]

#: The index kinds a new dense shard may be created with.
INDEX_KINDS = ("int8", "hnsw", "plain", "int8-hnsw")
DEFAULT_INDEX = "int8"
#: int8 search: ``limit`` x this many candidates scored on the int8 vectors, rescored with the float vectors.
INT8_OVERSAMPLING = 2.0
#: What an int8 shard becomes once it holds :data:`GRAPH_POINTS` points (with ``auto_optimize`` on).
GRAPH_KIND = "int8-hnsw"
#: The shard size at which an int8 shard grows its HNSW graph by itself (``graph_points`` of the dense edge store).
#: At 100k points the int8 scan alone takes ~3.8 ms of a query's 5 ms here, the graph's walk ~1.4 ms; growing the
#: graph costs 12-19 s once, later adds 7-44% more (benchmarks/scale/bench_graph_threshold.py; RESULTS.md "Scale").
GRAPH_POINTS = 100_000
#: Qdrant's ``full_scan_threshold`` (kilobytes of vectors) of the graph kinds: a filter scope below it is scanned.
FULL_SCAN_KB = 50_000
#: ``"auto"``: a filtered search walks the graph only for a scope Qdrant estimates at this share of the shard's
#: points or more (with ACORN). A scope that is a region of the space leaves a query outside it the share
#: ``1 - GRAPH_TRUST`` of queries at recall ~0.85 with ACORN (0.5 without): at 0.97, p5 stays 1.0 and the mean
#: >= 0.99; at 0.90 the mean was 0.98 and p5 0.90 (100k clustered vectors; benchmarks/scale/bench_filtered_recall.py).
GRAPH_TRUST = 0.97
#: The store's ``filtered_search`` settings: ``"auto"`` (exact below :data:`GRAPH_TRUST`, else the graph with
#: ACORN), ``"acorn"`` (Qdrant's plan, its graph walks with ACORN) and ``"graph"`` (Qdrant's plan as it is).
FILTERED_SEARCH = ("auto", "acorn", "graph")
_HNSW_M = 16
_EF_CONSTRUCT = 100


def same_kind(asked: str, saved: str) -> bool:
    """Whether a store asked for ``asked`` may open a shard of kind ``saved`` (an int8 shard that grew its graph
    is still the int8 shard its creator asked for)."""
    return asked == saved or (asked == DEFAULT_INDEX and saved == GRAPH_KIND)


def has_graph(kind: str | None) -> bool:
    """Whether a shard of ``kind`` may walk an HNSW graph (None: Qdrant's default config, HNSW)."""
    return kind not in (DEFAULT_INDEX, "plain")


def filtered_plan(setting: str, scope_share: Callable[[], float]) -> str:
    """How a filtered search on a shard with a graph runs: ``"exact"``, ``"acorn"`` or ``"graph"`` (Qdrant's
    plan). ``scope_share`` (the estimated share of the shard's points in scope) is asked for by ``"auto"`` only.

    Example:
        >>> filtered_plan("auto", lambda: 0.35), filtered_plan("auto", lambda: 1.0), filtered_plan("graph", float)
        ('exact', 'acorn', 'graph')
    """
    if setting == "auto":
        return "exact" if scope_share() < GRAPH_TRUST else "acorn"
    return setting


def index_config(qe: Any, kind: str | None) -> dict[str, Any]:
    """The shard settings (``EdgeConfig`` keywords) of an index kind; ``{}`` (Qdrant's defaults) for ``"hnsw"`` and
    None. Every segment is optimizable whatever its size (optimizing is asked for, never automatic)."""
    if kind in (None, "hnsw"):
        return {}
    graph = kind == GRAPH_KIND
    config: dict[str, Any] = {
        "hnsw_config": qe.HnswIndexConfig(m=_HNSW_M if graph else 0, ef_construct=_EF_CONSTRUCT,
                                          full_scan_threshold=FULL_SCAN_KB if graph else 10_000),
        "optimizers": qe.EdgeOptimizersConfig(indexing_threshold=1),
    }
    if kind in (DEFAULT_INDEX, GRAPH_KIND):
        config["quantization_config"] = qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, always_ram=True
        )
    return config


def quantization_params(qe: Any, kind: str | None, exact: bool) -> Any:
    """The search's quantization parameters: rescoring makes the int8 scan's (or walk's) top ``limit`` the float
    vectors' ranking of its candidates. None for the kinds without an int8 copy, and for exact search."""
    if kind not in (DEFAULT_INDEX, GRAPH_KIND) or exact:
        return None
    return qe.QuantizationSearchParams(rescore=True, oversampling=INT8_OVERSAMPLING)


def scope_share(qe: Any, shard: Any, query_filter: Any) -> float:
    """Qdrant's estimate of the share of ``shard``'s points ``query_filter`` lets through: its planner's cardinality
    estimate (exact for one indexed value; half the points for a key without a payload index), ~10 us."""
    total = int(shard.count(qe.CountRequest(exact=False)))
    if total <= 0:
        return 1.0
    return int(shard.count(qe.CountRequest(exact=False, filter=query_filter))) / total


def dense_params(qe: Any, shard: Any, kind: str | None, exact: bool, hnsw_ef: int | None, filtered_search: str,
                 query_filter: Any) -> Any:
    """The ``SearchParams`` of a dense search on ``shard`` (of index ``kind``): exact, or a filtered search on a
    graph as :func:`filtered_plan` says (exact, or ACORN), with int8 rescoring where the shard has an int8 copy."""
    acorn = None
    if query_filter is not None and not exact and has_graph(kind):
        plan = filtered_plan(filtered_search, lambda: scope_share(qe, shard, query_filter))
        exact = plan == "exact"
        acorn = qe.AcornSearchParams(enable=True, max_selectivity=1.0) if plan == "acorn" else None
    return qe.SearchParams(exact=exact, hnsw_ef=hnsw_ef, quantization=quantization_params(qe, kind, exact),
                           acorn=acorn)
