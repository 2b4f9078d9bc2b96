"""Multi-path dense retrieval: more dense legs over the main dense store, each with its own filter.

One embedding, several scopes: ``dense_paths={"dense_all": None}`` adds a leg ``dense_all`` that searches the
main dense store UNFILTERED next to the filtered ``dense`` leg, fused with the keyword leg, each tagged in
``rrf_ranks``. A path's filter REPLACES the query's filter for that path only (None: no filter); the query's
``exclude_ids`` always apply. A path is the only way a query reaches outside its filter, and it is explicit: it
must be named in ``dense_paths`` (a setting or a search argument). The query vector is shared: every path has the
main leg's embedding model, and the engine embeds once per model.

Example:
    >>> from rrf_retriever.embeddings import HashingEmbedding
    >>> from rrf_retriever.engine.legs import as_leg
    >>> from rrf_retriever.stores.qdrant import QdrantDenseStore
    >>> legs = {"dense": as_leg("dense", QdrantDenseStore(HashingEmbedding(8)))}
    >>> [name for name, _ in path_legs(legs, {"dense_all": None})]
    ['dense_all']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.engine.legs import DenseLeg, Leg
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.types import Hit

__all__ = ["DensePathLeg", "main_dense_leg", "path_legs"]


class DensePathLeg(Leg):
    """A read-only leg over another dense leg's store, with its own fixed filter (None: unfiltered)."""

    kind = "dense"

    def __init__(self, base: Leg, flt: NormalizedFilter | None) -> None:
        self.base = base
        self.flt = flt
        self.embedding = base.embedding  # the same model object: the query is embedded once for all paths

    @property
    def holds_gil(self) -> bool:  # type: ignore[override]  # a class attribute on Leg, a property here
        return bool(self.base.holds_gil)

    def search(self, query: str, vector: Sequence[float] | None, limit: int, flt: NormalizedFilter | None,
               exclude_ids: frozenset[str]) -> list[Hit]:
        return self.base.search(query, vector, limit, self.flt, exclude_ids)

    async def asearch(self, query: str, vector: Sequence[float] | None, limit: int, flt: NormalizedFilter | None,
                      exclude_ids: frozenset[str]) -> list[Hit]:
        return await self.base.asearch(query, vector, limit, self.flt, exclude_ids)


def main_dense_leg(legs: Mapping[str, Leg]) -> str:
    """The source dense paths search: the dense leg named ``"dense"``, else the only dense store leg.

    Raises:
        InvalidArgumentError: no dense store, or several and none named ``"dense"``.
    """
    dense = [name for name, leg in legs.items() if isinstance(leg, DenseLeg)]
    if "dense" in dense:
        return "dense"
    if len(dense) == 1:
        return dense[0]
    msg = ("dense_paths need the engine's dense store: a dense source named 'dense' or exactly one dense store; "
           f"found {sorted(dense) or 'none'}")
    raise InvalidArgumentError(msg)


def path_legs(legs: Mapping[str, Leg], paths: Mapping[str, FilterSpec | None]) -> list[tuple[str, Leg]]:
    """One :class:`DensePathLeg` per path (``{name: filter or None}``, validated), over :func:`main_dense_leg`.

    Raises:
        InvalidArgumentError: a path named like a source, or no dense store to search.
        InvalidFilterError: a malformed path filter.
    """
    if not paths:
        return []
    clash = sorted(set(paths) & set(legs))
    if clash:
        msg = f"dense_paths names {clash} are already source names; give each path a name of its own"
        raise InvalidArgumentError(msg)
    base = legs[main_dense_leg(legs)]
    out: list[tuple[str, Leg]] = []
    for name, flt in paths.items():
        normalized: Any = normalize_filter(flt)
        out.append((name, DensePathLeg(base, normalized)))
    return out
