"""Running the FTS5 ranking query so that equal scores come ordered by id, the cut at the limit included.

Example:
    >>> from rrf_retriever.stores.fts5.store import FTS5KeywordStore
    >>> s = FTS5KeywordStore(); s.add(["b", "a", "c"], ["same words", "same words", "other"])
    >>> [h.id for h in s.search("same words", 1)]
    ['a']
"""

from __future__ import annotations

import json
from typing import Any

from rrf_retriever.stores.fts5.pool import Connection
from rrf_retriever.types import Hit

__all__ = ["ranked_hits"]


def ranked_hits(
    conn: Connection, query: str, match: str | None, limit: int, scoped: bool, params: list[Any]
) -> list[Hit]:
    """The hits of :func:`~rrf_retriever.stores.fts5.sql.ranked_sql`'s ``query``, best first, ties by id.

    Scoped, the query orders by ``(score, id)`` before its limit. Unscoped, its inner cut orders equal scores by
    rowid: fetch past the limit until the limit-th score differs from the last one fetched (or every match is in),
    so the rows kept are the smallest ids of a tie at the cut.
    """
    if scoped:
        rows = conn.execute(query, [match, *params, limit]).fetchall()
    else:
        fetch = limit + 1
        while True:
            rows = conn.execute(query, [match, *params, fetch]).fetchall()
            if len(rows) < fetch or rows[-1][3] != rows[limit - 1][3]:  # rows: by score, then id
                break
            fetch *= 2
        rows = rows[:limit]
    return [Hit(doc_id, text, json.loads(meta), -float(s)) for doc_id, text, meta, s in rows]
