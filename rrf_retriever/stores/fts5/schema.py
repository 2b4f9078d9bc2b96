"""The FTS5 store's schema on open: a new file's tables and saved config, an older schema's migration, and the
saved config read back and checked against what the caller asked for.

:class:`~rrf_retriever.stores.fts5.store.FTS5KeywordStore` calls these inside its "create its tables" write
transaction; the DDL itself comes from :mod:`rrf_retriever.stores.fts5.sql`. Migration: schema 1 -> 2 rebuilt the
scope table without numeric affinity (``"042"`` never matches ``"42"``), 2 -> 3 rebuilt it with the presence rows
of ``$exists``, 3 -> 4 with the date rows of date ranges.

Example:
    >>> import sqlite3
    >>> from rrf_retriever.analysis.analyzer import default_analyzer
    >>> conn = sqlite3.connect(":memory:")
    >>> tables = sql.Tables.of("rrf")
    >>> read_saved(conn, tables)
    {}
    >>> create(conn, "rrf", tables, ("text",), {"text": 1.0}, default_analyzer())
    >>> fields, weights, analyzer = check_saved(read_saved(conn, tables), None, ":memory:", None, None)
    >>> fields, weights
    (('text',), {'text': 1.0})
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import InvalidArgumentError, StoreError
from rrf_retriever.stores.fts5 import sql
from rrf_retriever.stores.fts5.scope import scope_rows, scope_table_sql

__all__ = ["check_saved", "create", "migrate", "parse_saved", "read_saved"]


def read_saved(conn: sqlite3.Connection, tables: sql.Tables) -> dict[str, str]:
    """Create the meta table if missing and return its ``{key: value}`` rows (empty: a new store).

    Example:
        >>> read_saved(sqlite3.connect(":memory:"), sql.Tables.of("rrf"))
        {}
    """
    meta = tables.meta
    conn.execute(f"CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    return dict(conn.execute(f"SELECT key, value FROM {meta}").fetchall())


def create(
    conn: sqlite3.Connection,
    table: str,
    tables: sql.Tables,
    fields: Sequence[str],
    field_weights: Mapping[str, float],
    chosen: Analyzer,
) -> None:
    """Create a new store's tables and save its config (schema version, analyzer, fields, weights, count 0).

    Example:
        >>> from rrf_retriever.analysis.analyzer import default_analyzer
        >>> conn, tables = sqlite3.connect(":memory:"), sql.Tables.of("rrf")
        >>> _ = read_saved(conn, tables); create(conn, "rrf", tables, ("text",), {"text": 1.0}, default_analyzer())
        >>> read_saved(conn, tables)["count"]
        '0'
    """
    for statement in sql.schema_sql(table, fields, sql.tokenizer_for(chosen)):
        conn.execute(statement)
    conn.executemany(
        f"INSERT INTO {tables.meta} (key, value) VALUES (?, ?)",
        [
            ("schema_version", str(sql.SCHEMA_VERSION)),
            ("analyzer", json.dumps(chosen.config(), sort_keys=True)),
            ("fields", json.dumps(list(fields))),
            ("field_weights", json.dumps(field_weights, sort_keys=True)),
            ("count", "0"),
        ],
    )


def migrate(conn: sqlite3.Connection, table: str, tables: sql.Tables, path: str, saved: dict[str, str]) -> None:
    """Bring an index of an older schema to :data:`SCHEMA_VERSION`, inside the open transaction.

    ``saved`` (the meta rows) is updated in place. ``path`` only names the file in errors.

    Raises:
        StoreError: a stored metadata is not a JSON object, or the schema is unknown.

    Example:
        >>> migrate(sqlite3.connect(":memory:"), "rrf", sql.Tables.of("rrf"), ":memory:", {"schema_version": "4"})
    """
    t = tables
    if saved.get("schema_version") in ("1", "2", "3"):
        # Schema 1's scope table had NUMERIC affinity ("042" was stored as 42), schema 2's lacked the presence
        # rows of $exists, schema 3's the date rows of date ranges: rebuild it from the JSON (the documents
        # themselves are untouched).
        conn.execute(f"DROP TABLE {t.scope}")
        for statement in scope_table_sql(table):
            conn.execute(statement)
        last = 0
        while rows := conn.execute(
            f"SELECT rowid, metadata FROM {t.docs} WHERE rowid > ? ORDER BY rowid LIMIT 1000", (last,)
        ).fetchall():
            try:
                scope = [(r, *row) for r, meta in rows for row in scope_rows(json.loads(meta))]
            except (ValueError, TypeError, AttributeError) as exc:
                msg = f"cannot migrate {path!r}: a stored metadata is not a JSON object ({exc})"
                raise StoreError(msg) from exc
            conn.executemany(f"INSERT INTO {t.scope} (doc, key, vtype, value) VALUES (?, ?, ?, ?)", scope)
            last = rows[-1][0]
        saved["schema_version"] = str(sql.SCHEMA_VERSION)
        conn.execute(f"UPDATE {t.meta} SET value = ? WHERE key = 'schema_version'", (saved["schema_version"],))
    if saved.get("schema_version") != str(sql.SCHEMA_VERSION):
        msg = f"{path!r} holds an FTS5 store of schema {saved.get('schema_version')}, not {sql.SCHEMA_VERSION}"
        raise StoreError(msg)


def parse_saved(saved: dict[str, str], path: str) -> tuple[tuple[str, ...], dict[str, float], Analyzer]:
    """The saved fields, field weights and analyzer; a row that is not what this store wrote is reported.

    Raises:
        StoreError: a saved row is missing or unreadable (``path`` names the file).

    Example:
        >>> from rrf_retriever.analysis.analyzer import default_analyzer
        >>> config = json.dumps(default_analyzer().config())
        >>> parse_saved({"fields": '["text"]', "analyzer": config, "count": "0"}, ":memory:")[:2]
        (('text',), {})
    """
    key = "fields"
    try:
        fields = tuple(sql.check_fields(json.loads(saved["fields"])))
        # Stores written before weights were saved ranked with 1.0 per field unless told otherwise.
        key = "field_weights"
        weights = sql.check_field_weights(json.loads(saved.get("field_weights", "{}")), list(fields))
        key = "analyzer"
        config = json.loads(saved["analyzer"])
        if not isinstance(config, dict):
            msg = "not a JSON object"
            raise TypeError(msg)
        saved_analyzer = Analyzer.from_config(config)
        key = "count"
        int(saved["count"])
    except (KeyError, TypeError, ValueError) as exc:  # our InvalidArgumentError / InvalidTypeError are these too
        msg = f"{path!r} is corrupt: its saved {key!r} is unreadable ({exc}); rebuild the index"
        raise StoreError(msg) from exc
    return fields, weights, saved_analyzer


def check_saved(
    saved: dict[str, str],
    analyzer: Analyzer | None,
    path: str,
    fields: tuple[str, ...] | None,
    requested_weights: Mapping[str, float] | None,
) -> tuple[tuple[str, ...], dict[str, float], Analyzer]:
    """The fields, weights and analyzer a reopened store uses: the saved ones, checked against those asked for.

    Args:
        saved: The meta rows.
        analyzer: The analyzer asked for (None: the saved one).
        path: The file, named in errors.
        fields: The fields asked for explicitly (None: the saved ones).
        requested_weights: The weights asked for (None: the saved ones).

    Raises:
        InvalidArgumentError: fields or an analyzer different from the saved ones, or bad weights.
        StoreError: the saved config is unreadable.

    Example:
        >>> from rrf_retriever.analysis.analyzer import default_analyzer
        >>> saved = {"fields": '["text"]', "analyzer": json.dumps(default_analyzer().config()), "count": "0"}
        >>> check_saved(saved, None, ":memory:", None, {"text": 2})[:2]
        (('text',), {'text': 2.0})
    """
    saved_fields, saved_weights, saved_analyzer = parse_saved(saved, path)
    if fields is not None and saved_fields != fields:
        msg = f"{path!r} was built with fields {list(saved_fields)}, not {list(fields)}"
        raise InvalidArgumentError(msg)
    if requested_weights is not None:
        saved_weights = sql.check_field_weights(requested_weights, list(saved_fields))
    config = saved_analyzer.config()
    if analyzer is None:
        return saved_fields, saved_weights, saved_analyzer
    if analyzer.config() != config:
        msg = (
            f"{path!r} was indexed with another analyzer ({config}); open it with analyzer=None "
            "to use the saved one, or rebuild the index"
        )
        raise InvalidArgumentError(msg)
    return saved_fields, saved_weights, analyzer
