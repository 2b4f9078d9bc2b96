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

Example:
    >>> same_kind("int8", "int8-hnsw"), same_kind("plain", "int8")
    (True, False)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_INDEX",
    "FULL_SCAN_KB",
    "GRAPH_KIND",
    "GRAPH_POINTS",
    "INDEX_KINDS",
    "INT8_OVERSAMPLING",
    "index_config",
    "quantization_params",
    "same_kind",
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
_HNSW_M = 16
_EF_CONSTRUCT = 100


def same_kind(asked: str, saved: str) -> bool:
    """Whether a store asked for ``asked`` may open a shard of kind ``saved`` (an int8 shard that grew its graph
    is still the int8 shard its creator asked for)."""
    return asked == saved or (asked == DEFAULT_INDEX and saved == GRAPH_KIND)


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
