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
index exists first) links no value held by more than ~4 x N / 21-32 points (Qdrant's build), so no such scope. Hence
the default ``"auto"``, by the scope Qdrant estimates (payload index cardinality, ~10 us):

* below the shard's scan reach (:func:`scan_points`: its ``full_scan_threshold`` in points, :data:`SCAN_POINTS` for a
  graph grown by this version, ~33k for an older one): Qdrant's own plan, which scans the scope on the int8 copy and
  rescores its top candidates with the float vectors (recall 1.0 at every scope measured, 2-2.5x faster than the
  exact float scan);
* else below :data:`GRAPH_TRUST` of the shard's points: every in-scope float vector scored (exact, its cost linear
  in the scope);
* else the graph with ACORN.

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
    "SCAN_POINTS",
    "dense_params",
    "filtered_plan",
    "full_scan_kb",
    "has_graph",
    "index_config",
    "quantization_params",
    "recorded_scan_kb",
    "same_kind",
    "scan_points",
    "scope_size",
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
#: Qdrant's ``full_scan_threshold`` (kilobytes of vectors) of a graph shard grown before :data:`SCAN_POINTS` (and
#: of a shard whose dimension is not known): a filter scope below it is scanned.
FULL_SCAN_KB = 50_000
#: ``"auto"``: a filtered search walks the graph only for a scope Qdrant estimates at this share of the shard's
#: points or more (with ACORN). A scope that is a region of the space leaves a query outside it the share
#: ``1 - GRAPH_TRUST`` of queries at recall ~0.85 with ACORN (0.5 without): at 0.97, p5 stays 1.0 and the mean
#: >= 0.99; at 0.90 the mean was 0.98 and p5 0.90 (100k clustered vectors; benchmarks/scale/bench_filtered_recall.py).
GRAPH_TRUST = 0.97
#: A graph shard's largest scan reach in points, fixed in its ``full_scan_threshold`` when the graph is built
#: (:func:`full_scan_kb`: :data:`GRAPH_TRUST` of the points it grows over, at most this): Qdrant scans a filtered
#: scope it estimates below it (the int8 copy, then rescoring), and walks the graph of a segment holding at least
#: this many points when unfiltered. The segment a graph grows over holds more, so an unfiltered search keeps its
#: walk (a smaller segment, left by deletes or later adds, is scanned: exact, its cost bounded by this size), and at
#: 100k every scope ``"auto"`` would score exactly is scanned instead: recall@10 1.000 at every selectivity, 2.0-2.5x
#: faster than the exact float scan at 35-95% (benchmarks/scale/probe_filtered_scan.py, RESULTS.md). Capped: one
#: size for 100k and 1M shards (a bulk add grows its graph over everything at once), whose segments hold more.
SCAN_POINTS = round(GRAPH_TRUST * GRAPH_POINTS)
#: The store's ``filtered_search`` settings: ``"auto"`` (the int8 scan below the shard's scan reach, exact below
#: :data:`GRAPH_TRUST`, else the graph with ACORN), ``"acorn"`` (Qdrant's plan, its graph walks with ACORN) and
#: ``"graph"`` (Qdrant's plan as it is).
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


def filtered_plan(setting: str, scope: Callable[[], tuple[int, int]], scan_reach: int | None = None) -> str:
    """How a filtered search on a shard with a graph runs: ``"scan"`` (Qdrant's plan for a scope it scans),
    ``"exact"``, ``"acorn"`` or ``"graph"`` (Qdrant's plan). ``scope`` (the estimated points in scope, and the
    shard's points) is asked for by ``"auto"`` only; ``scan_reach`` is :func:`scan_points` (None: no scan).

    Example:
        >>> filtered_plan("auto", lambda: (35, 100)), filtered_plan("auto", lambda: (100, 100))
        ('exact', 'acorn')
        >>> filtered_plan("auto", lambda: (35, 100), scan_reach=97), filtered_plan("graph", lambda: (1, 1))
        ('scan', 'graph')
    """
    if setting != "auto":
        return setting
    in_scope, total = scope()
    if scan_reach is not None and in_scope < scan_reach:
        return "scan"
    return "exact" if total > 0 and in_scope < GRAPH_TRUST * total else "acorn"


def full_scan_kb(kind: str | None, dimension: int | None, points: int | None = None) -> int:
    """The ``full_scan_threshold`` (KB of float vectors) a graph shard of ``dimension`` is configured with when its
    graph grows over ``points`` points: a reach of :data:`GRAPH_TRUST` of them, at most :data:`SCAN_POINTS` (None:
    a new shard created with its graph, :data:`SCAN_POINTS`). :data:`FULL_SCAN_KB` when the dimension is not known.

    Example:
        >>> full_scan_kb("int8-hnsw", 384), full_scan_kb("int8-hnsw", 384, 1_000_000), full_scan_kb("int8", 384)
        (145500, 145500, 10000)
        >>> full_scan_kb("int8-hnsw", 384, 30_000), full_scan_kb("int8-hnsw", None)
        (43650, 50000)
    """
    if kind != GRAPH_KIND:
        return 10_000
    if not dimension:
        return FULL_SCAN_KB
    reach = SCAN_POINTS if points is None else min(SCAN_POINTS, int(GRAPH_TRUST * points))
    return max(1, -(-reach * 4 * dimension // 1024))


def recorded_scan_kb(value: object, dimension: int | None) -> int | None:
    """A meta file's ``full_scan_kb`` read back: None when absent (a graph grown before it was recorded); 0 (no
    scan reach: every scope the exact path or the graph's) for anything :func:`full_scan_kb` cannot have written
    for ``dimension``, so a damaged or edited file never sends a scope to a graph walk it believes is a scan.

    Example:
        >>> recorded_scan_kb(145500, 384), recorded_scan_kb(None, 384)
        (145500, None)
        >>> [recorded_scan_kb(v, 384) for v in ("145500", True, -1, 10**9, 1.5)]
        [0, 0, 0, 0, 0]
    """
    if value is None:
        return None
    ceiling = full_scan_kb(GRAPH_KIND, dimension) if dimension else FULL_SCAN_KB
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= max(ceiling, FULL_SCAN_KB):
        return 0
    return value


def scan_points(kind: str | None, dimension: int | None, saved_kb: int | None, windows: bool) -> int | None:
    """A graph shard's scan reach in points: its ``full_scan_threshold`` (``saved_kb``, from its meta file; None:
    grown before it was recorded, :data:`FULL_SCAN_KB`) over the bytes of one float vector, as Qdrant converts it.
    None where the plan must not rely on it: no int8 graph, no dimension, or windows (several vectors a point, so
    Qdrant's per-point size is their mean, not known here).

    Example:
        >>> scan_points("int8-hnsw", 384, 145500, False), scan_points("int8-hnsw", 384, None, False)
        (97000, 33333)
        >>> scan_points("int8-hnsw", 384, None, True), scan_points("hnsw", 384, None, False)
        (None, None)
    """
    if kind != GRAPH_KIND or not dimension or windows:
        return None
    return (FULL_SCAN_KB if saved_kb is None else saved_kb) * 1024 // (4 * dimension)


def index_config(qe: Any, kind: str | None, scan_kb: int | None = None) -> dict[str, Any]:
    """The shard settings (``EdgeConfig`` keywords) of an index kind; ``{}`` (Qdrant's defaults) for ``"hnsw"`` and
    None. Every segment is optimizable whatever its size (optimizing is asked for, never automatic); a graph's
    full-scan threshold is ``scan_kb`` (:func:`full_scan_kb`; None: :data:`FULL_SCAN_KB`)."""
    if kind in (None, "hnsw"):
        return {}
    graph = kind == GRAPH_KIND
    config: dict[str, Any] = {
        "hnsw_config": qe.HnswIndexConfig(m=_HNSW_M if graph else 0, ef_construct=_EF_CONSTRUCT,
                                          full_scan_threshold=(scan_kb or FULL_SCAN_KB) if graph else 10_000),
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


def scope_size(qe: Any, shard: Any, query_filter: Any) -> tuple[int, int]:
    """Qdrant's estimate of the points of ``shard`` ``query_filter`` lets through, and the shard's points: its
    planner's cardinality estimate (exact for one indexed value; half the points for a key without a payload index),
    ~10 us."""
    total = int(shard.count(qe.CountRequest(exact=False)))
    if total <= 0:
        return 0, 0
    return int(shard.count(qe.CountRequest(exact=False, filter=query_filter))), total


def dense_params(qe: Any, shard: Any, kind: str | None, exact: bool, hnsw_ef: int | None, filtered_search: str,
                 query_filter: Any, scan_reach: int | None = None) -> Any:
    """The ``SearchParams`` of a dense search on ``shard`` (of index ``kind``): exact, or a filtered search on a
    graph as :func:`filtered_plan` says (the int8 scan, exact, or ACORN), with int8 rescoring where the shard has an
    int8 copy. A scan keeps ACORN on: should Qdrant's per-segment estimate walk a segment's graph after all, the walk
    goes through neighbours' neighbours."""
    acorn = None
    if query_filter is not None and not exact and has_graph(kind):
        plan = filtered_plan(filtered_search, lambda: scope_size(qe, shard, query_filter), scan_reach)
        exact = plan == "exact"
        acorn = qe.AcornSearchParams(enable=True, max_selectivity=1.0) if plan in ("acorn", "scan") else None
    return qe.SearchParams(exact=exact, hnsw_ef=hnsw_ef, quantization=quantization_params(qe, kind, exact),
                           acorn=acorn)
