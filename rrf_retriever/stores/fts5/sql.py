"""Pure builders of the FTS5 store's SQL: schema, scope (filter + exclusions), ranking, and the zero-IDF plan.

Every function here is pure (or asks only a private in-memory SQLite for a fact of its build), so tests and
tools can inspect exactly what :class:`~rrf_retriever.stores.fts5.store.FTS5KeywordStore` runs. User values are never
spliced into SQL: keys, values and ids always travel as bound parameters; the only names in the SQL text are
the table prefix and the field names, both checked against a plain-name pattern first.

Layout inside one SQLite file (``t`` is the table prefix, default ``rrf``; :data:`SCHEMA_VERSION` 4):

* ``t_docs``: ``rowid``, ``id`` (unique), the original ``text``, the ``metadata`` as JSON.
* ``t_fts``: an FTS5 table (``porter unicode61 remove_diacritics 2``) over the analyzer-normalised text of
  each field (CJK runs as bigrams); ``t_vocab`` its ``fts5vocab`` (document frequencies). A store whose analyzer
  does not stem with Porter (``Analyzer(language="german")``) holds the analyzer's terms under
  ``unicode61 remove_diacritics 0`` instead (:func:`tokenizer_for`).
* ``t_scope``: one row per scalar metadata value (``doc``, ``key``, ``vtype``, ``value``), indexed, so a filter
  is an indexed ``rowid IN (...)``. ``vtype`` is the type tag of :func:`rrf_retriever.scope.tree.scope_key` (``b``,
  ``n``, ``s``) and ``value`` is declared ``BLOB``: BLOB affinity converts nothing, so ``"042"`` stays the text
  ``"042"`` and never equals ``"42"`` or ``42``. (Schema 1 declared it ``ANY``, which in an ordinary table is
  NUMERIC affinity: SQLite stored ``"042"``, ``" 42"`` and ``"4.2e1"`` as the integer 42. Schema 3 added a
  presence row per key for ``$exists``, schema 4 a date row per ISO 8601 date string (``d``: its instant in
  microseconds). An index of schema 1, 2 or 3 is migrated when opened: the table of
  :func:`~rrf_retriever.stores.fts5.scope.scope_table_sql` is rebuilt from the stored metadata JSON.) The filter
  compiler and the rows are in :mod:`rrf_retriever.stores.fts5.scope`.
* ``t_meta``: schema version, analyzer config, fields, field weights and the document count.

Example:
    >>> schema_sql("rrf", ["text"])[0].split("(")[0]
    'CREATE TABLE rrf_docs '
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from rrf_retriever.analysis.analyzer import Analyzer
from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.stores.fts5.scope import scope_table_sql

__all__ = [
    "SCHEMA_VERSION",
    "TERMS_TOKENIZER",
    "TOKENIZER",
    "ZERO_IDF_SHARE",
    "Tables",
    "check_analyzer",
    "check_field_weights",
    "check_fields",
    "check_table",
    "field_values",
    "fts5_available",
    "fts_token",
    "ranked_sql",
    "schema_sql",
    "split_by_idf",
    "store_error",
    "tokenizer_for",
]

#: The schema written by this version. 1 -> 2: the scope table's ``value`` column lost its NUMERIC affinity.
#: 2 -> 3: the scope table gained presence rows (``$exists``). Both migrate by rebuilding it from the JSON.
SCHEMA_VERSION = 4
#: FTS5's tokenizer for every field of an English (Porter) store; queries are built from the analyzer that matches it.
TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The tokenizer of a store whose analyzer stems otherwise (another language, Snowball English, none): the fields
#: hold the analyzer's own terms (stemmed, stopwords dropped) and FTS5 only splits them on the spaces.
TERMS_TOKENIZER = "unicode61 remove_diacritics 0"
#: A term in at least this share of the documents has ``bm25()`` IDF <= 0, which FTS5 clamps to ~1e-6.
ZERO_IDF_SHARE = 0.5

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class Tables(NamedTuple):
    """The table names of a store with prefix ``t``: ``Tables.of("rrf").docs == "rrf_docs"``."""

    docs: str
    fts: str
    scope: str
    meta: str
    vocab: str

    @classmethod
    def of(cls, table: str) -> Tables:
        t = check_table(table)
        return cls(f"{t}_docs", f"{t}_fts", f"{t}_scope", f"{t}_meta", f"{t}_vocab")


def check_table(table: object) -> str:
    """A table prefix: a plain SQL name (letters, digits, '_'), or :class:`InvalidArgumentError`."""
    if not isinstance(table, str) or not _NAME.match(table):
        msg = f"table must be a plain SQL name (letters, digits, '_'), got {table!r}"
        raise InvalidArgumentError(msg)
    return table


def check_fields(fields: object) -> list[str]:
    """Indexed field names: unique plain names including ``"text"``, or :class:`InvalidArgumentError`."""
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
        msg = "fields must be a non-empty list of field names, e.g. ('text',) or ('title', 'text')"
        raise InvalidArgumentError(msg)
    field_list = list(fields)
    for name in field_list:
        if not isinstance(name, str) or not _NAME.match(name) or name in ("rank", "rowid"):
            msg = f"field name {name!r} is not a plain name (letters, digits, '_')"
            raise InvalidArgumentError(msg)
    if len(set(field_list)) != len(field_list) or "text" not in field_list:
        msg = f"fields must be unique and include 'text', got {field_list}"
        raise InvalidArgumentError(msg)
    return field_list


def check_field_weights(weights: object, fields: Sequence[str]) -> dict[str, float]:
    """``{field: weight}`` with known fields and finite weights >= 0, as floats."""
    if not isinstance(weights, Mapping):
        msg = f"field_weights must be a mapping of field name to weight, not {type(weights).__name__}"
        raise InvalidTypeError(msg)
    for name, w in weights.items():
        if name not in fields:
            msg = f"field_weights names {name!r}, which is not one of the fields {list(fields)}"
            raise InvalidArgumentError(msg)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            msg = f"field weight for {name!r} must be a finite number >= 0, got {w!r}"
            raise InvalidArgumentError(msg)
    return {name: float(w) for name, w in weights.items()}


def check_analyzer(analyzer: object) -> None:
    """None or an :class:`~rrf_retriever.analysis.analyzer.Analyzer` (any stemmer: see :func:`tokenizer_for`)."""
    if analyzer is not None and not isinstance(analyzer, Analyzer):
        msg = f"analyzer must be an rrf_retriever.analysis.analyzer.Analyzer, not {type(analyzer).__name__}"
        raise InvalidTypeError(msg)


def tokenizer_for(analyzer: Analyzer) -> str:
    """The FTS5 tokenizer of a store with this analyzer: :data:`TOKENIZER` (SQLite's porter over the analyzer's
    normalised text, the English default and every store written before languages existed) when it stems with
    Porter, else :data:`TERMS_TOKENIZER` over the analyzer's own terms (a Snowball language, no stemming, a
    custom stemmer). Derived from the saved analyzer, so a reopened file always gets the tokenizer it was built with.

    Example:
        >>> tokenizer_for(Analyzer()), tokenizer_for(Analyzer(language="german"))
        ('porter unicode61 remove_diacritics 2', 'unicode61 remove_diacritics 0')
    """
    return TOKENIZER if analyzer.stems_like_porter else TERMS_TOKENIZER


def field_values(
    fields: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]], *, strict: bool
) -> list[list[str]]:
    """Each document's value per indexed field: ``"text"`` is its text, another field its metadata value.
    A missing field is empty; a value that is not a string is empty too, or with ``strict`` (fields the user
    named) an :class:`InvalidTypeError`.

    Example:
        >>> field_values(["title", "text"], ["body"], [{"title": 3}], strict=False)
        [['', 'body']]
    """
    rows: list[list[str]] = []
    for i, (text, meta) in enumerate(zip(texts, metadatas)):
        row = []
        for name in fields:
            value = text if name == "text" else meta.get(name, "")
            if not isinstance(value, str):
                if strict:
                    msg = f"metadatas[{i}][{name!r}] is an indexed field and must be a string"
                    raise InvalidTypeError(msg)
                value = ""
            row.append(value)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------- schema


def schema_sql(table: str, fields: Sequence[str], tokenizer: str = TOKENIZER) -> list[str]:
    """DDL of a new store (the meta table excepted: it exists first, to tell a new file from an old one);
    ``tokenizer`` is :data:`TOKENIZER` or :data:`TERMS_TOKENIZER` (see :func:`tokenizer_for`).

    Example:
        >>> schema_sql("rrf", ["title", "text"])[1]
        "CREATE VIRTUAL TABLE rrf_fts USING fts5(title, text, tokenize = 'porter unicode61 remove_diacritics 2')"
    """
    t = Tables.of(table)
    columns = ", ".join(check_fields(fields))
    return [
        f"CREATE TABLE {t.docs} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
        "text TEXT NOT NULL, metadata TEXT NOT NULL)",
        f"CREATE VIRTUAL TABLE {t.fts} USING fts5({columns}, tokenize = '{_tokenizer(tokenizer)}')",
        f"CREATE VIRTUAL TABLE {t.vocab} USING fts5vocab({t.fts}, 'row')",
        *scope_table_sql(table),
    ]


def _tokenizer(tokenizer: str) -> str:
    if tokenizer not in (TOKENIZER, TERMS_TOKENIZER):  # spliced into DDL: only our two
        msg = f"tokenizer must be {TOKENIZER!r} or {TERMS_TOKENIZER!r}, got {tokenizer!r}"
        raise InvalidArgumentError(msg)
    return tokenizer


# ---------------------------------------------------------------------------------------------- ranking


def ranked_sql(table: str, weights: Sequence[float], scope: str = "") -> str:
    """The ranking query: ``(id, text, metadata, bm25)`` rows, best first (``bm25()`` is negative), ties by id.
    Parameters in order: the MATCH expression, the scope's parameters, the limit.

    Unscoped, FTS5 ranks alone and only the top rows are joined to their text: the inner cut is by rowid among
    equal scores, so the caller asks for more rows than it keeps until the cut falls between two scores (see
    :meth:`~rrf_retriever.stores.fts5.store.FTS5KeywordStore.search`); scoped (``scope`` from
    :func:`~rrf_retriever.stores.fts5.scope.scope_sql`), the join comes first because the exclusions and the filter
    need it.

    Example:
        >>> "bm25(rrf_fts, 2.0, 1.0)" in ranked_sql("rrf", [2.0, 1.0])
        True
    """
    t = Tables.of(table)
    bm25 = f"bm25({t.fts}, {', '.join(repr(float(w)) for w in weights)})"
    if scope:
        return (
            f"SELECT d.id, d.text, d.metadata, {bm25} AS s FROM {t.fts} f JOIN {t.docs} d ON d.rowid = f.rowid "
            f"WHERE {t.fts} MATCH ?{scope} ORDER BY s, d.id LIMIT ?"
        )
    return (
        f"SELECT d.id, d.text, d.metadata, r.s FROM (SELECT rowid, {bm25} AS s FROM {t.fts} "
        f"WHERE {t.fts} MATCH ? ORDER BY s, rowid LIMIT ?) r JOIN {t.docs} d ON d.rowid = r.rowid ORDER BY r.s, d.id"
    )


def split_by_idf(
    terms: Sequence[str], doc_freq: Callable[[str], int], total: int, share: float = ZERO_IDF_SHARE
) -> tuple[list[str], list[str]]:
    """Split query terms into ``(informative, flat)``: flat ones occur in at least ``share`` of the ``total``
    documents, so ``bm25()`` gives them IDF ~1e-6 while FTS5 still visits every document holding them. The
    store runs the informative terms first and fills up with the full OR query only when that is short.
    Below 8 documents nothing is split (a plan is not worth it).

    Example:
        >>> split_by_idf(["common", "rare"], {"common": 9, "rare": 1}.get, 10)
        (['rare'], ['common'])
    """
    if total < 8:
        return list(terms), []
    informative: list[str] = []
    flat: list[str] = []
    cache: dict[str, bool] = {}
    for term in terms:
        if term not in cache:
            cache[term] = doc_freq(term) >= share * total
        (flat if cache[term] else informative).append(term)
    return informative, flat


# ---------------------------------------------------------------------------------------------- SQLite facts


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (the store checks it when built; tests may monkeypatch it here).

    Example:
        >>> fts5_available()
        True
    """
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def store_error(exc: sqlite3.Error, what: str, action: str, timeout: float) -> StoreError:
    """Our error for a sqlite3 error met while ``what`` tried to ``action``: locked or busy is
    :class:`StoreLockedError`, a file that cannot be opened :class:`StoreUnavailableError`, else StoreError.

    Example:
        >>> store_error(sqlite3.OperationalError("database is locked"), "the store", "add", 5.0)
        StoreLockedError('the store is locked by another writer (waited 5 s to add)')
    """
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return StoreLockedError(f"{what} is locked by another writer (waited {timeout:g} s to {action})")
    if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
        return StoreUnavailableError(f"cannot open {what}: {exc}")
    return StoreError(f"{what} failed to {action}: {exc}")


_TOKEN_LOCK = threading.Lock()
_TOKEN_CONN: sqlite3.Connection | None = None
_TOKEN_CACHE: dict[str, str | None] = {}
_TOKEN_CACHE_MAX = 100_000


def fts_token(term: str) -> str | None:
    """The single token FTS5's tokenizer stores for ``term`` (None if it makes several, none, or the term is
    longer than 256 characters): asked of SQLite itself through a scratch table in a private in-memory
    database, so it is exactly what the index holds. Cached: a term's token never changes.

    Example:
        >>> fts_token("configuring"), fts_token("db"), fts_token("two words")
        ('configur', 'db', None)
    """
    if len(term) > 256:
        return None
    try:
        term.encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate: never in the index (and SQLite cannot even receive it)
    cached = _TOKEN_CACHE.get(term, "")
    if cached != "":
        return cached
    global _TOKEN_CONN
    with _TOKEN_LOCK:
        if _TOKEN_CONN is None:
            _TOKEN_CONN = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            _TOKEN_CONN.execute(f"CREATE VIRTUAL TABLE s USING fts5(x, tokenize = '{TOKENIZER}')")
            _TOKEN_CONN.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'row')")
        conn = _TOKEN_CONN
        conn.execute("INSERT INTO s (rowid, x) VALUES (1, ?)", (term,))
        tokens = [t for (t,) in conn.execute("SELECT term FROM v")]
        conn.execute("DELETE FROM s")
        token = tokens[0] if len(tokens) == 1 else None
        if len(_TOKEN_CACHE) >= _TOKEN_CACHE_MAX:
            _TOKEN_CACHE.clear()
        _TOKEN_CACHE[term] = token
    return token
