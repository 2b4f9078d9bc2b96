"""The FTS5 store's scope side table and the compiler of a filter tree to SQL over it (pure functions).

``t_scope`` holds rows ``(doc, key, vtype, value)``, primary key ``(key, vtype, value, doc)``, so every condition
below is an index range:

* one row per scalar metadata value (and per scalar element of a list): ``vtype`` is the type tag of
  :func:`rrf_retriever.scope.tree.scope_key` (``b``, ``n``, ``s``) and ``value`` is declared ``BLOB``: BLOB affinity
  converts nothing, so ``"042"`` stays the text ``"042"`` and never equals ``"42"`` or ``42``;
* one presence row ``(key, "e", 1)`` per key whose value is not None and not an empty list (``$exists``: a
  dict, a list of dicts or ``[None]`` is present although no scalar row holds it). Schema 3 added these rows;
* one date row ``(key, "d", microseconds)`` per string that is an ISO 8601 date
  (:func:`rrf_retriever.scope.dates.date_micros`: its instant, UTC), next to its ``s`` row: a
  :class:`DateRange` is an integer range over them, whatever offsets the strings carry. Schema 4 added these rows.

A :class:`Contains` is ``instr`` over the key's ``s`` rows (no ``LIKE``: ``%``, ``_`` and quotes are plain
characters of a bound parameter), case-folded by :func:`fold` (Python's ``str.lower``, registered on every
connection as ``rrf_lower``: SQLite's own ``lower`` folds ASCII only).

:func:`scope_sql` turns a :data:`~rrf_retriever.scope.tree.FilterNode` into a boolean SQL expression on a rowid:
:class:`Match` and :class:`Range` and :class:`Exists` are ``rowid IN (SELECT doc FROM t_scope WHERE ...)``,
logic is ``AND`` / ``OR`` / ``NOT`` over those, so ``NOT`` is the complement over documents (a document without
the key matches ``$ne``). SQLite compares an INTEGER and a REAL exactly, as Python does.

Example:
    >>> from rrf_retriever.scope.parse import normalize_filter
    >>> sql, params = scope_sql(normalize_filter({"n": {"$gte": 2}}), frozenset())
    >>> params
    ['n', 2]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from rrf_retriever.scope.dates import date_micros
from rrf_retriever.scope.tree import (
    AllOf,
    AnyOf,
    Contains,
    DateRange,
    Exists,
    FilterNode,
    Match,
    Not,
    Range,
    date_bounds,
    merged_equalities,
    scope_key,
)

__all__ = [
    "DATE",
    "PRESENT",
    "balanced_join",
    "fold",
    "register_functions",
    "scope_rows",
    "scope_sql",
    "scope_table_sql",
    "scope_value",
    "where_sql",
]

#: The ``vtype`` of a presence row (its value is always 1).
PRESENT = "e"
#: The ``vtype`` of a date row (its value: the instant in microseconds since the epoch, UTC).
DATE = "d"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_OPS = (("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<="))


def _scope_table(table: str) -> str:
    # The same plain-name rule as fts5_sql.check_table (not imported: fts5_sql imports this module).
    if not isinstance(table, str) or not _NAME.match(table):
        msg = f"table must be a plain SQL name (letters, digits, '_'), got {table!r}"
        raise ValueError(msg)
    return f"{table}_scope"


def scope_table_sql(table: str = "rrf") -> list[str]:
    """DDL of the scope side table and its index (``value`` BLOB: no affinity, values stay as bound).

    Example:
        >>> scope_table_sql()[1]
        'CREATE INDEX rrf_scope_doc ON rrf_scope (doc)'
    """
    t = _scope_table(table)
    return [
        f"CREATE TABLE {t} (doc INTEGER NOT NULL, key TEXT NOT NULL, vtype TEXT NOT NULL, "
        "value BLOB NOT NULL, PRIMARY KEY (key, vtype, value, doc)) WITHOUT ROWID",
        f"CREATE INDEX {t}_doc ON {t} (doc)",
    ]


def scope_value(value: object) -> tuple[str, Any] | None:
    """The ``(vtype, value)`` a scalar is stored and compared as: :func:`~rrf_retriever.scope.tree.scope_key`, in a
    form SQLite holds exactly (a bool as 0/1 under its own tag ``b``). None: no filter can match it (NaN, None,
    containers, an integer beyond 64 bits).

    Example:
        >>> scope_value("042"), scope_value(42.0), scope_value(True), scope_value(2**64)
        (('s', '042'), ('n', 42.0), ('b', 1), None)
    """
    key = scope_key(value)
    if key is None:
        return None
    vtype, v = key
    return ("b", int(v)) if vtype == "b" else (vtype, v)


def scope_rows(metadata: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """Every ``(key, vtype, value)`` of the side table for one document: a presence row per key that
    :class:`~rrf_retriever.scope.tree.Exists` accepts, then its scalars and the scalar elements of its lists (and
    tuples, as :func:`~rrf_retriever.scope.tree.matches` reads them), each once (``2`` and ``2.0`` are one number;
    ``"1"`` and ``"1.0"`` two strings).

    Example:
        >>> list(scope_rows({"tags": ["1", "1.0", 1, 1.0, True], "s": None, "e": [], "d": {"x": 1}}))
        [('tags', 'e', 1), ('tags', 's', '1'), ('tags', 's', '1.0'), ('tags', 'n', 1), ('tags', 'b', 1), ('d', 'e', 1)]
    """
    for key, value in metadata.items():
        values = value if isinstance(value, (list, tuple)) else (value,)
        if value is not None and values:
            yield (key, PRESENT, 1)
        seen: set[tuple[str, Any]] = set()
        for v in values:
            row = scope_value(v)
            if row is not None and row not in seen:
                seen.add(row)
                yield (key, *row)
            micros = date_micros(v) if row is not None and row[0] == "s" else None
            if micros is not None and (DATE, micros) not in seen:
                seen.add((DATE, micros))
                yield (key, DATE, micros)


def fold(value: object) -> object:
    """The case folding of ``$icontains`` in SQL (``rrf_lower``): ``str.lower``, as LlamaIndex's
    ``text_match_insensitive`` and :func:`~rrf_retriever.scope.tree.matches` fold; other values unchanged.

    Example:
        >>> fold("ÀB"), fold(3)
        ('àb', 3)
    """
    return value.lower() if isinstance(value, str) else value


def register_functions(conn: Any) -> None:
    """Register :func:`fold` as ``rrf_lower`` on a connection (every connection a store opens)."""
    conn.create_function("rrf_lower", 1, fold, deterministic=True)


def balanced_join(terms: list[str], op: str) -> str:
    """``terms`` joined by ``op`` as a balanced tree of parentheses, ``log2(len(terms))`` deep.

    SQLite parses ``a OR b OR c ...`` into a tree as deep as the list is long and refuses one deeper than 1,000
    ("Expression tree is too large"); the filter language allows 10,000 conditions. The order of the terms (and
    so of the bound parameters) is kept.

    Example:
        >>> balanced_join(["a", "b", "c"], "OR")
        '((a OR b) OR c)'
        >>> balanced_join(["a"], "AND")
        '(a)'
    """
    level = list(terms)
    while len(level) > 1:
        level = [f"({level[i]} {op} {level[i + 1]})" if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0] if len(terms) > 1 else f"({level[0]})"


def where_sql(node: FilterNode, rowid: str, table: str = "rrf") -> tuple[str, list[Any]]:
    """One boolean SQL expression: the filter ``node`` holds for the document whose rowid is ``rowid`` (an SQL
    expression). Keys, values and bounds are bound parameters; a value list travels as one JSON parameter read
    by ``json_each`` (no limit on SQLite's bound-variable count).

    Example:
        >>> sql, params = where_sql(Match("lang", ("en",)), "d.rowid")
        >>> sql[:50], params
        ('d.rowid IN (SELECT doc FROM rrf_scope WHERE key = ', ['lang', 's', '["en"]'])
    """
    t = _scope_table(table)
    params: list[Any] = []

    def compile_(n: FilterNode) -> str:
        if isinstance(n, Match):
            groups: dict[str, list[Any]] = {}
            for value in n.values:
                vtype, v = scope_value(value) or ("s", value)
                groups.setdefault(vtype, []).append(v)
            if not groups:
                return "0"  # an empty any-of list matches nothing
            params.append(n.key)
            ors = []
            for vtype, vals in groups.items():
                ors.append("(vtype = ? AND value IN (SELECT value FROM json_each(?)))")
                params.extend([vtype, json.dumps(vals, ensure_ascii=False)])
            return f"{rowid} IN (SELECT doc FROM {t} WHERE key = ? AND ({' OR '.join(ors)}))"
        if isinstance(n, Range):
            # vtype 'n' holds only INTEGER and REAL values: the comparison is numeric and served by the index.
            params.append(n.key)
            conds = []
            for attr, op in _OPS:
                bound = getattr(n, attr)
                if bound is not None:
                    conds.append(f" AND value {op} ?")
                    params.append(bound)
            return f"{rowid} IN (SELECT doc FROM {t} WHERE key = ? AND vtype = 'n'{''.join(conds)})"
        if isinstance(n, DateRange):
            params.append(n.key)
            conds = []
            bounds = date_bounds(n)
            for attr, op in _OPS:
                if attr in bounds:
                    conds.append(f" AND value {op} ?")
                    params.append(bounds[attr])
            return f"{rowid} IN (SELECT doc FROM {t} WHERE key = ? AND vtype = '{DATE}'{''.join(conds)})"
        if isinstance(n, Contains):
            value = "rrf_lower(value)" if n.ignore_case else "value"
            params.extend([n.key, fold(n.text) if n.ignore_case else n.text])
            return f"{rowid} IN (SELECT doc FROM {t} WHERE key = ? AND vtype = 's' AND instr({value}, ?) > 0)"
        if isinstance(n, Exists):
            params.append(n.key)
            return f"{rowid} IN (SELECT doc FROM {t} WHERE key = ? AND vtype = '{PRESENT}')"
        # Equalities on one key merged first: each part is a subquery over the scope table, and 4,900 ORed
        # equalities on one key took ~7 s where one IN list takes milliseconds.
        if isinstance(n, AllOf):
            return balanced_join([compile_(p) for p in merged_equalities(n)], "AND") if n.parts else "1"
        if isinstance(n, AnyOf):
            return balanced_join([compile_(p) for p in merged_equalities(n)], "OR") if n.parts else "0"
        if isinstance(n, Not):
            return f"NOT ({compile_(n.part)})"
        msg = f"not a filter node: {type(n).__name__}"  # normalize_filter lets nothing else through
        raise TypeError(msg)

    return compile_(node), params


def scope_sql(
    node: FilterNode | None, excluded: frozenset[str], table: str = "rrf", *, rowid: str = "+f.rowid"
) -> tuple[str, list[Any]]:
    """The WHERE conditions (each starting `` AND ``) on ``rowid`` (default ``+f.rowid``, the FTS row) and
    ``d.id`` (the docs row) for a parsed filter (:func:`~rrf_retriever.scope.parse.normalize_filter`: it is
    parsed once, at the store's door) and excluded ids, with every key, value and id a bound parameter.

    The unary ``+`` keeps the filter away from FTS5's xBestIndex: offered a rowid IN list, FTS5 runs the whole
    MATCH once per listed rowid (many times slower: benchmarks/RESULTS.md, "Keyword stores").

    Example:
        >>> scope_sql(AllOf((Match("lang", ("en",)), Match("s", (1, True)))), frozenset())[1]
        ['lang', 's', '["en"]', 's', 'n', '[1]', 'b', '[1]']
    """
    parts: list[str] = []
    params: list[Any] = []
    if node is not None:
        where, params = where_sql(node, rowid, table)
        parts.append(where)
    if excluded:
        parts.append("d.id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(excluded), ensure_ascii=False))
    return ("".join(f" AND {p}" for p in parts), params)
