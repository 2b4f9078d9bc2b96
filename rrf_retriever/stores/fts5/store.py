"""SQLite FTS5 keyword store: persistent, incremental, BM25-ranked; the default keyword leg.

One SQLite file (or ``":memory:"``) holds the documents, an FTS5 index of the *normalised* text of each field
(:meth:`Analyzer.normalize`: NFKC, lower case, Latin diacritics folded, CJK runs as bigrams, so index and queries
agree where unicode61 alone would not; a store whose analyzer is not Porter, e.g. ``Analyzer(language="german")``,
indexes the analyzer's own stemmed terms instead), a typed scope side table for filters, and the store's config;
the layout and every SQL statement are built by the pure functions of :mod:`rrf_retriever.stores.fts5.sql`. An
index file of an older schema is migrated when opened (schema 1 -> 2: the scope table rebuilt without numeric
affinity, so ``"042"`` never matches ``"42"``; 2 -> 3: rebuilt with the presence rows of ``$exists``).

By default a document's ``metadata["title"]`` (when it has one) is indexed as its own field with weight 2 beside
the text (measured in ``benchmarks/RESULTS.md``); without a title the ranking is exactly the flat one.

Ranking is FTS5's ``bm25()`` (k1=1.2, b=0.75) with per-field weights; ``Hit.score`` is ``-bm25()``, so higher
is better and always positive. Query terms are the analyzer's terms (stopwords dropped), each double-quoted
and OR-ed: no user character is ever parsed as FTS5 syntax. A query with no surviving term returns ``[]``.

Speed: FTS5 walks the whole doclist of every query term, and a term in at least half of the documents adds
only ~1e-6 to any score (``bm25()`` clamps its IDF). Such terms are left out of a first pass
(:func:`~rrf_retriever.stores.fts5.sql.split_by_idf`); a second pass fills up when the first finds fewer than
``limit`` documents. The result is the plain OR query's top ``limit`` (``skip_common_terms=False`` runs that).

Threads: a file store lends each call a connection from a small pool of idle ones (WAL: readers never block
the writer, nor the reverse), so no thread keeps a connection (and its file descriptors) after its call; writes
are serialised by a lock. ``":memory:"`` has one connection shared under a lock. Another process holding the
write lock makes a write wait up to ``timeout`` seconds, then raise :class:`StoreLockedError`.

Example:
    >>> store = FTS5KeywordStore()
    >>> store.add(["a", "b"], ["Configure the database", "Cooking pasta"], [{"s": 1}, {"s": 2}])
    >>> [h.id for h in store.search("configuring databases", 5)]
    ['a']
    >>> store.search("configuring", 5, filter={"s": 2})
    []
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from rrf_retriever.analysis.analyzer import Analyzer, default_analyzer
from rrf_retriever.analysis.languages import words
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, StoreUnavailableError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import FilterSpec, NormalizedFilter
from rrf_retriever.stores.base import SearchRequest, StoreBase
from rrf_retriever.stores.fts5 import schema, sql
from rrf_retriever.stores.fts5.match import DEFAULT_MAX_TERMS, match_expression
from rrf_retriever.stores.fts5.pool import Connection, SQLiteConnections
from rrf_retriever.stores.fts5.ranking import ranked_hits
from rrf_retriever.stores.fts5.scope import scope_rows, scope_sql, where_sql
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import check_ids, check_limit, check_str, validate_batch

__all__ = ["DEFAULT_FIELDS", "DEFAULT_FIELD_WEIGHTS", "FTS5KeywordStore", "MatchMode"]

#: Fields of a new store when none are given: the metadata's title beside the text.
DEFAULT_FIELDS: tuple[str, ...] = ("title", "text")
#: Their weights in ``bm25()`` (a field not named weighs 1). Title x2 was the best of 1-4 on SciFact train.
DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = MappingProxyType({"title": 2.0})

MatchMode = Literal["or", "and_or"]

# SQLite's default limit on bound parameters is 32766 (>= 3.32); stay well below it.
_CHUNK = 500
class FTS5KeywordStore(StoreBase):
    """A BM25 keyword store on SQLite FTS5 (stdlib ``sqlite3`` only).

    Args:
        path: ``":memory:"`` (default) or a file path; a file is created on first use and reopened as is.
        fields: The indexed fields, in order. ``"text"`` is the document text; any other name is read from the
            document's metadata (a string; a document without it has an empty field). None (default): the
            saved fields when reopening a file, else :data:`DEFAULT_FIELDS` ``("title", "text")``, where a
            title that is missing or not a string is simply empty. Fields given explicitly must be strings.
        field_weights: ``{field: weight}`` for ``bm25()``, e.g. ``{"title": 2.0}``. None (default): the saved
            weights when reopening, :data:`DEFAULT_FIELD_WEIGHTS` (title 2) with the default fields, else 1.0
            each. With equal weights, or an empty title, the ranking equals a flat index of the text.
        analyzer: Stopwords, normalisation, stemming (default: Lucene stopwords, Porter, CJK bigrams). With Porter
            (English) FTS5's porter tokenizer stems the normalised text; with any other stemmer
            (``Analyzer(language="german")``, Snowball English, none) the fields hold the analyzer's own terms
            and queries look up the same terms. When reopening a file, None uses the saved analyzer; a
            different one raises :class:`InvalidArgumentError`.
        table: Prefix of the store's tables, so one file can hold several stores.
        mode: ``"or"`` (default: any query term, ranked by BM25 alone) or ``"and_or"`` (documents holding every
            term first, then fill up with any term). Equal on SciFact train (nDCG@10 0.6979 vs 0.6980).
        timeout: Seconds to wait for another process's write lock before :class:`StoreLockedError`.
        skip_common_terms: Leave terms in at least half of the documents out of a first pass (default True:
            same result, faster); False always runs the plain OR query.

    Raises:
        StoreUnavailableError: SQLite was built without FTS5, or the file cannot be opened.
        StoreError: the file holds a store of an unknown schema, or is not a SQLite database.
        InvalidArgumentError: bad fields, weights, table name, or an analyzer different from the saved one.

    Example:
        >>> store = FTS5KeywordStore(fields=("title", "text"), field_weights={"title": 2.0})
        >>> store.add(["d1"], ["body about sqlite"], [{"title": "FTS5 guide"}])
        >>> store.search("fts5", 3)[0].id
        'd1'
    """

    #: The schema this version writes (and migrates older index files to when opening them).
    SCHEMA_VERSION = sql.SCHEMA_VERSION

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        fields: Sequence[str] | None = None,
        field_weights: Mapping[str, float] | None = None,
        analyzer: Analyzer | None = None,
        table: str = "rrf",
        mode: MatchMode = "or",
        timeout: float = 5.0,
        skip_common_terms: bool = True,
    ) -> None:
        if not sql.fts5_available():
            msg = (
                f"this Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5; "
                "use BM25KeywordStore or a Python whose sqlite3 has FTS5"
            )
            raise StoreUnavailableError(msg)
        self.tables = sql.Tables.of(table)
        self._fields_given = fields is not None
        field_list = list(DEFAULT_FIELDS) if fields is None else sql.check_fields(fields)
        self._requested_weights = None if field_weights is None else sql.check_field_weights(field_weights, field_list)
        weights = self._requested_weights
        if weights is None:
            weights = dict(DEFAULT_FIELD_WEIGHTS) if fields is None else {}
        if mode not in ("or", "and_or"):
            msg = f"mode must be 'or' or 'and_or', got {mode!r}"
            raise InvalidArgumentError(msg)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout < 3600:
            msg = f"timeout must be a number of seconds in [0, 3600), got {timeout!r}"
            raise InvalidArgumentError(msg)
        if not isinstance(skip_common_terms, bool):
            msg = f"skip_common_terms must be a bool, not {type(skip_common_terms).__name__}"
            raise InvalidTypeError(msg)
        self.path = str(path)
        self.table = table
        self._set_fields(field_list, weights)
        self.mode: MatchMode = mode
        self.timeout = float(timeout)
        self.skip_common_terms = skip_common_terms
        self._db = SQLiteConnections(self.path, self.timeout, "FTS5 store")
        self.schema_version = 0
        try:
            self.analyzer = self._init_schema(analyzer)
            self._porter = sql.tokenizer_for(self.analyzer) == sql.TOKENIZER
        except BaseException:
            self.close()  # a refused open keeps no file open
            raise

    def _index_text(self, value: str) -> str:
        """A field's text as FTS5 receives it: normalised (porter stems it), or the analyzer's stemmed terms."""
        return self.analyzer.normalize(value) if self._porter else " ".join(self.analyzer.analyze(value))

    def _query_terms(self, query: str) -> list[str]:
        """The query's terms as the index holds them (unstemmed for porter); pieces of letters and digits only,
        so a custom stemmer's output can never reach FTS5 as syntax."""
        if self._porter:
            return self.analyzer.query_terms(query)
        return [piece for term in self.analyzer.analyze_query(query) for piece in words(term)]

    def _set_fields(self, fields: Sequence[str], weights: Mapping[str, float]) -> None:
        self.fields = tuple(fields)
        self.field_weights = {name: float(weights.get(name, 1.0)) for name in self.fields}
        self._weights = [self.field_weights[f] for f in self.fields]

    def close(self) -> None:
        """Close every connection this store opened; one lent to a call still running is closed when that call
        ends. The store cannot be used afterwards.

        Example:
            >>> FTS5KeywordStore().close()
        """
        self._db.close()

    def __repr__(self) -> str:
        return f"FTS5KeywordStore(path={self.path!r}, table={self.table!r}, fields={self.fields}, mode={self.mode!r})"

    # ------------------------------------------------------------------ schema

    def _init_schema(self, analyzer: Analyzer | None) -> Analyzer:
        sql.check_analyzer(analyzer)
        with self._db.write("create its tables") as conn:
            saved = schema.read_saved(conn, self.tables)
            if saved:
                schema.migrate(conn, self.table, self.tables, self.path, saved)
                self.schema_version = sql.SCHEMA_VERSION
                return self._check_saved(saved, analyzer)
            chosen = analyzer or default_analyzer()
            schema.create(conn, self.table, self.tables, self.fields, self.field_weights, chosen)
            self.schema_version = sql.SCHEMA_VERSION
            return chosen

    def _check_saved(self, saved: dict[str, str], analyzer: Analyzer | None) -> Analyzer:
        fields = self.fields if self._fields_given else None
        saved_fields, saved_weights, chosen = schema.check_saved(
            saved, analyzer, self.path, fields, self._requested_weights
        )
        self._set_fields(saved_fields, saved_weights)
        return chosen

    # ------------------------------------------------------------------ writes

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Insert or replace documents (an id already stored is replaced), in one transaction: if anything
        fails, the store is exactly as before.

        Raises:
            InvalidArgumentError / InvalidTypeError: a bad batch (checked before anything is written).
            StoreLockedError: another process holds the write lock longer than ``timeout``.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a"], ["one"]); s.add(["a"], ["two"]); s.get(["a"])[0].text
            'two'
        """
        id_list, text_list, meta_list = validate_batch(ids, texts, metadatas)
        if not id_list:
            return
        # A default field (the title) indexes only what is text; a field asked for must be text.
        fields = sql.field_values(self.fields, text_list, meta_list, strict=self._fields_given)
        field_values = [[self._index_text(v) for v in row] for row in fields]
        t = self.tables
        with self._db.write("add documents") as conn:
            removed = self._delete_in(conn, id_list)
            first = conn.execute(f"SELECT coalesce(max(rowid), 0) + 1 FROM {t.docs}").fetchone()[0]
            rowids = range(first, first + len(id_list))
            conn.executemany(
                f"INSERT INTO {t.docs} (rowid, id, text, metadata) VALUES (?, ?, ?, ?)",
                [
                    (r, doc_id, text, json.dumps(meta, ensure_ascii=False, allow_nan=False))
                    for r, doc_id, text, meta in zip(rowids, id_list, text_list, meta_list)
                ],
            )
            marks = ", ".join("?" * (len(self.fields) + 1))
            conn.executemany(
                f"INSERT INTO {t.fts} (rowid, {', '.join(self.fields)}) VALUES ({marks})",
                [(r, *vals) for r, vals in zip(rowids, field_values)],
            )
            conn.executemany(
                f"INSERT INTO {t.scope} (doc, key, vtype, value) VALUES (?, ?, ?, ?)",
                [(r, *row) for r, meta in zip(rowids, meta_list) for row in scope_rows(meta)],
            )
            self._bump_count(conn, len(id_list) - removed)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id (unknown ids are ignored), in one transaction.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a", "b"], ["x", "y"]); s.delete(["a", "zz"]); s.count()
            1
        """
        id_list = check_ids(ids)
        if id_list:
            with self._db.write("delete documents") as conn:
                self._bump_count(conn, -self._delete_in(conn, id_list))

    def _delete_in(self, conn: sqlite3.Connection, id_list: list[str]) -> int:
        t = self.tables
        removed = 0
        for start in range(0, len(id_list), _CHUNK):
            chunk = id_list[start : start + _CHUNK]
            rowids = [r for (r,) in conn.execute(f"SELECT rowid FROM {t.docs} WHERE id IN ({_marks(chunk)})", chunk)]
            for table, column in ((t.fts, "rowid"), (t.scope, "doc"), (t.docs, "rowid")):
                if rowids:
                    conn.execute(f"DELETE FROM {table} WHERE {column} IN ({_marks(rowids)})", rowids)
            removed += len(rowids)
        return removed

    def _bump_count(self, conn: sqlite3.Connection, delta: int) -> None:
        if delta:
            conn.execute(
                f"UPDATE {self.tables.meta} SET value = CAST(value AS INTEGER) + ? WHERE key = 'count'", (delta,)
            )

    def optimize(self) -> None:
        """Merge the FTS5 index segments into one (worth it after a bulk load; reads get faster).

        Example:
            >>> FTS5KeywordStore().optimize()
        """
        with self._db.write("optimize") as conn:
            conn.execute(f"INSERT INTO {self.tables.fts} ({self.tables.fts}) VALUES ('optimize')")

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        """Number of stored documents.

        Example:
            >>> FTS5KeywordStore().count()
            0
        """
        with self._db.read("count") as conn:
            return self._count(conn)

    def _count(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute(f"SELECT value FROM {self.tables.meta} WHERE key = 'count'").fetchone()[0])

    def get(self, ids: Sequence[str]) -> list[Record]:
        """The stored documents for ``ids``, in that order; unknown ids are skipped.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a"], ["x"], [{"k": 1}]); s.get(["a", "nope"])
            [Record(id='a', text='x', metadata={'k': 1}, vector=None)]
        """
        id_list = check_ids(ids)
        found: dict[str, Record] = {}
        with self._db.read("get documents") as conn:
            for start in range(0, len(id_list), _CHUNK):
                chunk = id_list[start : start + _CHUNK]
                rows = conn.execute(
                    f"SELECT id, text, metadata FROM {self.tables.docs} WHERE id IN ({_marks(chunk)})", chunk
                ).fetchall()
                found.update((i, Record(i, text, json.loads(meta))) for i, text, meta in rows)
        return [found[i] for i in id_list if i in found]

    def doc_freq(self, term: str) -> int:
        """How many documents hold ``term`` in any field: the token FTS5 makes of it (so ``"configuring"``
        counts ``configur``; in a store of another language, the analyzer's term: ``"Häuser"`` counts ``haus``);
        0 for an unknown term or one that makes several tokens. Cached per connection until this store, or any
        other connection, commits a change.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a", "b"], ["configure it", "configuring"]); s.doc_freq("configured")
            2
        """
        check_str(term, "term")
        if not self._porter:
            terms = self.analyzer.analyze(term)
            if len(terms) != 1:
                return 0
            term = terms[0]
        with self._db.read("count a term's documents") as conn:
            return self._doc_freq(conn, term)

    def _doc_freq(self, conn: Connection, term: str) -> int:
        # A store of analyzer terms holds each term as is; a porter store holds what SQLite's porter makes of it.
        token = sql.fts_token(term) if self._porter else (term if term.isalnum() else None)
        if token is None:
            return 0
        version = (self._db.generation, conn.execute("PRAGMA data_version").fetchone()[0])
        cache = conn.df_cache
        if cache is None or cache[0] != version or len(cache[1]) > 100_000:
            cache = conn.df_cache = (version, {})
        df = cache[1].get(token)
        if df is None:
            row = conn.execute(f"SELECT doc FROM {self.tables.vocab} WHERE term = ?", (token,)).fetchone()
            df = cache[1][token] = int(row[0]) if row else 0
        return df

    def ids_matching(
        self, filter: FilterSpec | NormalizedFilter | None = None, limit: int | None = None
    ) -> list[str]:
        """Every stored id whose metadata matches ``filter`` (None: every id), sorted; at most ``limit``.

        Raises:
            InvalidFilterError: a malformed filter.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["b", "a", "c"], ["x", "y", "z"], [{"n": 1}, {"n": 5}, {}])
            >>> s.ids_matching({"n": {"$gte": 1}}), s.ids_matching({"n": {"$exists": False}}, limit=1)
            (['a', 'b'], ['c'])
        """
        flt = normalize_filter(filter)
        cap = -1 if limit is None else check_limit(limit)
        where, params = ("1", []) if flt is None else where_sql(flt, "d.rowid", self.table)
        with self._db.read("list matching ids") as conn:
            rows = conn.execute(
                f"SELECT d.id FROM {self.tables.docs} d WHERE {where} ORDER BY d.id LIMIT ?", [*params, cap]
            ).fetchall()
        return [doc_id for (doc_id,) in rows]

    def search(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | NormalizedFilter | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]:
        """The top ``limit`` documents by ``bm25()`` among those the scope allows (filtered before the top-k).

        Args:
            query: The user's text, any string. Only the analyzer's terms are used, each as plain text.
            limit: How many hits at most (0 gives []).
            filter: A metadata filter (:mod:`rrf_retriever.scope.tree`: shorthand ``{"key": value | [values]}``,
                ``$`` operators, ``$and`` / ``$or`` / ``$not``), or a normalised node; typed equality.
            exclude_ids: Ids never to return.

        Returns:
            Hits with ``score = -bm25()`` (> 0, higher is better); [] when no query term survives the analyzer.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a"], ["hello world"]); s.search("the world", 1)[0].id
            'a'
        """
        return self.search_request(SearchRequest.checked("keyword", query, None, limit, filter, exclude_ids))

    def search_request(self, request: SearchRequest) -> list[Hit]:
        """:meth:`search` of a validated request (the engine's legs call it; nothing is checked again)."""
        limit = request.limit
        flt, excluded = request.scope
        terms = self._query_terms(request.query)[:DEFAULT_MAX_TERMS]
        if limit == 0 or not terms:
            return []
        scope, params = scope_sql(flt, excluded, self.table)
        with self._db.read("search") as conn:
            if self.mode == "and_or" and len(set(terms)) > 1:
                hits = self._ranked(conn, match_expression(list(dict.fromkeys(terms)), "AND"), limit, scope, params)
                if len(hits) < limit:
                    scope2, params2 = scope_sql(flt, excluded | {h.id for h in hits}, self.table)
                    hits += self._search_or(conn, terms, limit - len(hits), scope2, params2)
                return hits
            return self._search_or(conn, terms, limit, scope, params)

    def _search_or(self, conn: Connection, terms: list[str], limit: int, scope: str, params: list[Any]) -> list[Hit]:
        informative: list[str] = []
        flat: list[str] = []
        if self.skip_common_terms:
            informative, flat = sql.split_by_idf(terms, lambda t: self._doc_freq(conn, t), self._count(conn))
        if not flat or not informative:
            return self._ranked(conn, match_expression(terms), limit, scope, params)
        # Pass 1 without the zero-IDF terms (they add ~1e-6 to a score but cost a visit of most documents).
        hits = self._ranked(conn, match_expression(informative), limit, scope, params)
        if len(hits) >= limit:
            return hits
        # Pass 2: documents that share only zero-IDF terms rank below every pass-1 document.
        if hits:
            scope += " AND d.id NOT IN (SELECT value FROM json_each(?))"
            params = [*params, json.dumps([h.id for h in hits], ensure_ascii=False)]
        return hits + self._ranked(conn, match_expression(terms), limit - len(hits), scope, params)

    def _ranked(self, conn: Connection, match: str | None, limit: int, scope: str, params: list[Any]) -> list[Hit]:
        return ranked_hits(conn, sql.ranked_sql(self.table, self._weights, scope), match, limit, bool(scope), params)


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))
