"""Result stages that run after fusion (DESIGN 7b). Each is a small object the engine calls with the fused list.

Example:
    >>> stage = NeighbourExpansion(links_key="links")
    >>> stage.wanted([])
    []
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rrf_retriever.errors import InvalidTypeError
from rrf_retriever.scope import NormalizedFilter, matches
from rrf_retriever.types import FusedHit, Record
from rrf_retriever.validate import check_top_k

__all__ = ["Expand", "NeighbourExpansion"]

#: A function that names a result's neighbours: ``FusedHit -> [neighbour ids]``.
Expand = Callable[[FusedHit], Sequence[str]]


class NeighbourExpansion:
    """1-hop expansion: append the fused results' neighbours (in seed order, within the same scope).

    Neighbours come from ``expand(hit)`` or from the metadata key ``links_key``; each is appended once, marked
    ``rrf_expanded_from`` (the seed's id) with score 0, at most ``limit`` of them (default: ``top_k``).

    Args:
        expand: A callable ``FusedHit -> [neighbour ids]``, or None to read ``links_key``.
        links_key: The metadata key holding neighbour ids (default ``"links"``).
        limit: At most this many neighbours; None: the query's ``top_k``.
    """

    def __init__(self, expand: Expand | None = None, links_key: str | None = None, limit: int | None = None) -> None:
        if expand is not None and not callable(expand):
            msg = "expand must be a callable FusedHit -> list of neighbour ids"
            raise InvalidTypeError(msg)
        self.expand = expand
        self.links_key = links_key or "links"
        self.limit = None if limit is None else check_top_k(limit, "expand_limit")

    def wanted(self, hits: Sequence[FusedHit], excl: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """``(neighbour id, seed id)`` pairs in seed order, each neighbour once, none already a result."""
        present = {h.id for h in hits}
        out: list[tuple[str, str]] = []
        for hit in hits:
            ids: Any = self.expand(hit) if self.expand is not None else hit.metadata.get(self.links_key) or []
            if isinstance(ids, str):
                ids = [ids]
            elif not isinstance(ids, (Sequence, set, frozenset)):
                continue  # a malformed links value (a number, a mapping) names no neighbour
            for nid in ids:
                if isinstance(nid, str) and nid not in present and nid not in excl:
                    present.add(nid)
                    out.append((nid, hit.id))
        return out

    def neighbours(
        self,
        hits: Sequence[FusedHit],
        top_k: int,
        flt: NormalizedFilter | None,
        excl: frozenset[str],
        lookup: Callable[[list[str]], list[Record]],
    ) -> list[FusedHit]:
        """The neighbours of ``hits`` as results, looked up by ``lookup`` (ids -> stored records)."""
        wanted = self.wanted(hits, excl)
        if not wanted:
            return []
        records = {r.id: r for r in lookup([nid for nid, _ in wanted])}
        limit = self.limit or top_k
        out: list[FusedHit] = []
        for nid, seed in wanted:
            record = records.get(nid)
            if record is None or not matches(record.metadata, flt):
                continue  # the scope holds for neighbours too: nothing outside the filter leaks
            out.append(FusedHit(nid, record.text, {**record.metadata, "rrf_expanded_from": seed}, 0.0, {}, {}))
            if len(out) >= limit:
                break
        return out
