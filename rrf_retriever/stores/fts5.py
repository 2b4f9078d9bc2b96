"""SQLite FTS5 keyword store: persistent, incremental, BM25-ranked; the default keyword leg.

Layout inside one SQLite file (``table`` is a prefix, default ``rrf``):

* ``{table}_docs``: ``rowid``, ``id`` (unique), the original ``text``, the ``metadata`` as JSON.
* ``{table}_fts``: an FTS5 table (``porter unicode61 remove_diacritics 2``) over the *normalised* text of each
  field (:meth:`Analyzer.normalize`: NFKC, lower case, Latin diacritics folded). FTS5's unicode61 neither
  NFKC-normalises nor folds ``ﬁ`` or full-width letters, so indexing the analyzer's form keeps the index and the
  queries (built from the same analyzer) in agreement.
* ``{table}_scope``: one row per scalar metadata value (``doc``, ``key``, ``vtype``, ``value``) with an index, so a
  filter is an indexed ``rowid IN (...)`` instead of a ``json_extract`` per candidate row.
* ``{table}_meta``: the analyzer config, the fields, their weights and the document count, so a reopen uses the
  same analyzer and fields (or fails clearly when different ones are passed).

By default a document's ``metadata["title"]`` (when it has one) is indexed as its own field with weight 2 beside
the text: measured on SciFact train and reported on SciFact / ArguAna test in ``benchmarks/RESULTS.md``; without
a title the ranking is exactly the flat one.

Ranking is FTS5's ``bm25()`` (k1=1.2, b=0.75, hard-coded in SQLite), with per-field weights; ``Hit.score`` is
``-bm25()``, so higher is better and always positive. Query terms are the analyzer's terms (stopwords dropped),
each double-quoted and OR-ed: no user character is ever parsed as FTS5 syntax. A query with no surviving term
(``"the of a"``, ``""``, punctuation) returns ``[]``: the keyword leg sits out and the dense leg carries it.

Speed (figures in ``benchmarks/RESULTS.md``): FTS5's ``bm25()`` counts each query term's documents by walking
its whole doclist, then scores every matching row, so a query's cost grows with the document frequency of its
terms. A term that occurs in at least half of the documents has ``bm25()`` IDF clamped to ~1e-6 (it adds
nothing to any score) yet makes FTS5 visit and score every document that holds it. Such terms are left out of
the first pass; if that pass finds fewer than ``limit`` documents, a second pass fills up with the documents that
only share those terms. The result is the plain OR query's top ``limit`` (scores differ by at most the ~1e-6
per term that FTS5's IDF floor would have added).

Threads: a file store opens one connection per thread (WAL: readers never block the writer, nor the reverse);
writes are serialised by a lock. ``":memory:"`` has one connection shared under a lock. Another process holding
the write lock makes a write wait up to ``timeout`` seconds, then raise :class:`StoreLockedError`; nothing stored
is lost.

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
import math
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from rrf_retriever.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    StoreError,
    StoreLockedError,
    StoreUnavailableError,
)
from rrf_retriever.scope import FilterSpec, NormalizedFilter, normalize_scope, scope_key
from rrf_retriever.stores.base import StoreBase
from rrf_retriever.text import DEFAULT_MAX_TERMS, Analyzer, default_analyzer, match_expression
from rrf_retriever.types import Hit, Record
from rrf_retriever.validate import check_ids, check_limit, check_str, validate_batch

__all__ = ["DEFAULT_FIELDS", "DEFAULT_FIELD_WEIGHTS", "FTS5KeywordStore", "MatchMode"]

#: Fields of a new store when none are given: the metadata's title beside the text.
DEFAULT_FIELDS: tuple[str, ...] = ("title", "text")
#: Their weights in ``bm25()`` (a field not named weighs 1). Title x2 was the best of 1-4 on SciFact train.
DEFAULT_FIELD_WEIGHTS: Mapping[str, float] = MappingProxyType({"title": 2.0})

MatchMode = Literal["or", "and_or"]

_TABLE_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_SCHEMA_VERSION = 1
# SQLite's default limit on bound parameters is 32766 (>= 3.32); stay well below it.
_CHUNK = 500
# Terms whose document frequency is at least this share of the corpus get bm25() IDF <= 0, clamped to 1e-6.
_ZERO_IDF_SHARE = 0.5


def _check_fields(fields: object) -> list[str]:
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
        msg = "fields must be a non-empty list of field names, e.g. ('text',) or ('title', 'text')"
        raise InvalidArgumentError(msg)
    field_list = list(fields)
    for name in field_list:
        if not isinstance(name, str) or not _FIELD_PATTERN.match(name) or name in ("rank", "rowid"):
            msg = f"field name {name!r} is not a plain name (letters, digits, '_')"
            raise InvalidArgumentError(msg)
    if len(set(field_list)) != len(field_list) or "text" not in field_list:
        msg = f"fields must be unique and include 'text', got {field_list}"
        raise InvalidArgumentError(msg)
    return field_list


def _check_field_weights(weights: object, fields: list[str]) -> dict[str, float]:
    if not isinstance(weights, Mapping):
        msg = f"field_weights must be a mapping of field name to weight, not {type(weights).__name__}"
        raise InvalidTypeError(msg)
    for name, w in weights.items():
        if name not in fields:
            msg = f"field_weights names {name!r}, which is not one of the fields {fields}"
            raise InvalidArgumentError(msg)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
            msg = f"field weight for {name!r} must be a finite number >= 0, got {w!r}"
            raise InvalidArgumentError(msg)
    return {name: float(w) for name, w in weights.items()}


def _fts5_available() -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _scope_value(value: object) -> tuple[str, Any] | None:
    """The (vtype, value) row of a scalar metadata value: :func:`~rrf_retriever.types.scope_key`, stored as SQLite
    can hold it (a bool as 0/1 under its own vtype; an integer beyond 64 bits has no row)."""
    key = scope_key(value)
    if key is None:
        return None
    vtype, v = key
    if vtype == "b":
        return ("b", int(v))
    if isinstance(v, int) and not -(2**63) <= v < 2**63:
        return None
    return key


def _scope_rows(metadata: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """Every (key, vtype, value) a filter can match: scalars, and the scalar elements of a list."""
    for key, value in metadata.items():
        values = value if isinstance(value, list) else (value,)
        seen: set[tuple[str, Any]] = set()
        for v in values:
            row = _scope_value(v)
            if row is not None and row not in seen:
                seen.add(row)
                yield (key, *row)


_STEM_LOCK = threading.Lock()
_STEM_CONN: sqlite3.Connection | None = None
_STEM_CACHE: dict[str, str | None] = {}
_STEM_CACHE_MAX = 100_000


def _fts_token(term: str) -> str | None:
    """Ask FTS5's own tokenizer (``porter unicode61 remove_diacritics 2``) what it stores for ``term``.

    A scratch table in a private in-memory database does it, so the answer is exactly SQLite's, whatever its
    Porter variant does with digits or long tokens. Cached: a term's token never changes.
    """
    if len(term) > 256:
        return None
    cached = _STEM_CACHE.get(term, "")
    if cached != "":
        return cached
    global _STEM_CONN
    with _STEM_LOCK:
        if _STEM_CONN is None:
            _STEM_CONN = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            _STEM_CONN.execute(
                "CREATE VIRTUAL TABLE s USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            _STEM_CONN.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'row')")
        conn = _STEM_CONN
        conn.execute("INSERT INTO s (rowid, x) VALUES (1, ?)", (term,))
        tokens = [t for (t,) in conn.execute("SELECT term FROM v")]
        conn.execute("DELETE FROM s")
        token = tokens[0] if len(tokens) == 1 else None
        if len(_STEM_CACHE) >= _STEM_CACHE_MAX:
            _STEM_CACHE.clear()
        _STEM_CACHE[term] = token
    return token


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
        analyzer: The analyzer for stopwords and normalisation (default: Lucene stopwords, Porter). FTS5's porter
            tokenizer stems, so the analyzer's ``stem`` must be ``"porter"`` (anything else raises
            :class:`InvalidArgumentError` rather than being ignored); the analyzer drops stopwords from the query.
            When reopening a file, None uses the saved analyzer; a different one raises
            :class:`InvalidArgumentError`.
        table: Prefix of the store's tables, so one file can hold several stores.
        mode: ``"or"`` (default: any query term, ranked by BM25 alone) or ``"and_or"`` (documents holding every
            term first, then fill up with any term). Measured on SciFact train: nDCG@10 0.6979 (or) vs 0.6980
            (and_or), equal within noise, and "or" is faster and keeps the exact BM25 order.
        timeout: Seconds to wait for another process's write lock before :class:`StoreLockedError`.

    Raises:
        StoreUnavailableError: SQLite was built without FTS5, or the file cannot be opened.
        InvalidArgumentError: bad fields, weights, table name, or an analyzer different from the saved one.

    Example:
        >>> store = FTS5KeywordStore(fields=("title", "text"), field_weights={"title": 2.0})
        >>> store.add(["d1"], ["body about sqlite"], [{"title": "FTS5 guide"}])
        >>> store.search("fts5", 3)[0].id
        'd1'
    """

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
    ) -> None:
        if not _fts5_available():
            msg = (
                f"this Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5; "
                "use BM25KeywordStore or a Python whose sqlite3 has FTS5"
            )
            raise StoreUnavailableError(msg)
        if not isinstance(table, str) or not _TABLE_PATTERN.match(table):
            msg = f"table must be a plain SQL name (letters, digits, '_'), got {table!r}"
            raise InvalidArgumentError(msg)
        self._fields_given = fields is not None
        field_list = list(DEFAULT_FIELDS) if fields is None else _check_fields(fields)
        self._requested_weights = None if field_weights is None else _check_field_weights(field_weights, field_list)
        if self._requested_weights is not None:
            weights = self._requested_weights
        else:
            weights = dict(DEFAULT_FIELD_WEIGHTS) if fields is None else {}
        if mode not in ("or", "and_or"):
            msg = f"mode must be 'or' or 'and_or', got {mode!r}"
            raise InvalidArgumentError(msg)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout < 3600:
            msg = f"timeout must be a number of seconds in [0, 3600), got {timeout!r}"
            raise InvalidArgumentError(msg)
        self.path = str(path)
        self.table = table
        self._set_fields(field_list, weights)
        self.mode: MatchMode = mode
        self.timeout = float(timeout)
        self._memory = self.path == ":memory:"
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._shared: sqlite3.Connection | None = None
        # Document-frequency cache per connection id: ((generation, data_version), {fts token: df}).
        self._generation = 0
        self._df_cache: dict[int, tuple[tuple[int, int], dict[str, int]]] = {}
        t = table
        self._docs, self._fts, self._scope, self._meta, self._vocab = (
            f"{t}_docs", f"{t}_fts", f"{t}_scope", f"{t}_meta", f"{t}_vocab"
        )
        self.analyzer = self._init_schema(analyzer)

    def _set_fields(self, fields: Sequence[str], weights: Mapping[str, float]) -> None:
        self.fields = tuple(fields)
        self.field_weights = {name: float(weights.get(name, 1.0)) for name in self.fields}
        self._bm25_args = ", ".join(repr(self.field_weights[f]) for f in self.fields)

    # ------------------------------------------------------------------ connections and transactions

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=not self._memory
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if not self._memory:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.OperationalError as exc:
            raise self._translate(exc, "open") from exc
        except sqlite3.Error as exc:
            msg = f"cannot open the FTS5 store at {self.path!r}: {exc}"
            raise StoreUnavailableError(msg) from exc
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            msg = "this FTS5 store is closed"
            raise StoreError(msg)
        if self._memory:
            if self._shared is None:
                self._shared = self._connect()
            return self._shared
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            msg = f"the FTS5 store {self.path!r} is locked by another writer (waited {self.timeout:g} s to {action})"
            return StoreLockedError(msg)
        if isinstance(exc, sqlite3.OperationalError) and "unable to open" in text:
            return StoreUnavailableError(f"cannot open the FTS5 store at {self.path!r}: {exc}")
        return StoreError(f"FTS5 store {self.path!r} failed to {action}: {exc}")

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction (the write lock is taken up front); rolled back whole on any error."""
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._translate(exc, action) from exc
            try:
                yield conn
                conn.execute("COMMIT")
                self._generation += 1
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the transaction is already gone; the error below says why
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc, action) from exc
                raise

    @contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        # ":memory:" shares one connection: reads take the lock too. Files: WAL readers run concurrently.
        lock = self._write_lock if self._memory else None
        if lock is not None:
            lock.acquire()
        try:
            conn = self._conn()
            try:
                yield conn
            except sqlite3.Error as exc:
                raise self._translate(exc, action) from exc
        finally:
            if lock is not None:
                lock.release()

    def close(self) -> None:
        """Close every connection this store opened (from any thread). The store cannot be used afterwards.

        Example:
            >>> FTS5KeywordStore().close()
        """
        self._closed = True
        with self._connections_lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            try:
                conn.close()
            except sqlite3.Error:
                pass  # another thread's connection; closing is best effort

    def __enter__(self) -> FTS5KeywordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FTS5KeywordStore(path={self.path!r}, table={self.table!r}, fields={self.fields}, mode={self.mode!r})"

    # ------------------------------------------------------------------ schema

    def _init_schema(self, analyzer: Analyzer | None) -> Analyzer:
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            msg = f"analyzer must be an rrf_retriever.text.Analyzer, not {type(analyzer).__name__}"
            raise InvalidTypeError(msg)
        if analyzer is not None and not (isinstance(analyzer.stem, str) and analyzer.stem.lower() == "porter"):
            # The index is stemmed by FTS5's own porter tokenizer: any other choice would be silently ignored.
            msg = (
                f"FTS5KeywordStore stems with SQLite's porter tokenizer, so the analyzer's stem must be 'porter', "
                f"not {analyzer.stem!r}; BM25KeywordStore takes any stemmer (or none)"
            )
            raise InvalidArgumentError(msg)
        columns = ", ".join(self.fields)
        with self._write("create its tables") as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self._meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            saved = dict(conn.execute(f"SELECT key, value FROM {self._meta}").fetchall())
            if saved:
                return self._check_saved(saved, analyzer)
            chosen = analyzer or default_analyzer()
            conn.execute(
                f"CREATE TABLE {self._docs} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
                "text TEXT NOT NULL, metadata TEXT NOT NULL)"
            )
            conn.execute(
                f"CREATE VIRTUAL TABLE {self._fts} USING fts5({columns}, "
                "tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            conn.execute(f"CREATE VIRTUAL TABLE {self._vocab} USING fts5vocab({self._fts}, 'row')")
            conn.execute(
                f"CREATE TABLE {self._scope} (doc INTEGER NOT NULL, key TEXT NOT NULL, vtype TEXT NOT NULL, "
                "value ANY, PRIMARY KEY (key, vtype, value, doc)) WITHOUT ROWID"
            )
            conn.execute(f"CREATE INDEX {self._scope}_doc ON {self._scope} (doc)")
            conn.executemany(
                f"INSERT INTO {self._meta} (key, value) VALUES (?, ?)",
                [
                    ("schema_version", str(_SCHEMA_VERSION)),
                    ("analyzer", json.dumps(chosen.config(), sort_keys=True)),
                    ("fields", json.dumps(list(self.fields))),
                    ("field_weights", json.dumps(self.field_weights, sort_keys=True)),
                    ("count", "0"),
                ],
            )
            return chosen

    def _check_saved(self, saved: dict[str, str], analyzer: Analyzer | None) -> Analyzer:
        if saved.get("schema_version") != str(_SCHEMA_VERSION):
            msg = f"{self.path!r} holds an FTS5 store of schema {saved.get('schema_version')}, not {_SCHEMA_VERSION}"
            raise StoreError(msg)
        saved_fields = tuple(json.loads(saved["fields"]))
        if self._fields_given and saved_fields != self.fields:
            msg = f"{self.path!r} was built with fields {list(saved_fields)}, not {list(self.fields)}"
            raise InvalidArgumentError(msg)
        # Stores written before weights were saved ranked with 1.0 per field unless told otherwise.
        saved_weights = json.loads(saved.get("field_weights", "{}"))
        if self._requested_weights is not None:
            saved_weights = _check_field_weights(self._requested_weights, list(saved_fields))
        self._set_fields(saved_fields, saved_weights)
        config = json.loads(saved["analyzer"])
        if analyzer is None:
            return Analyzer.from_config(config)
        if analyzer.config() != config:
            msg = (
                f"{self.path!r} was indexed with another analyzer ({config}); open it with analyzer=None "
                "to use the saved one, or rebuild the index"
            )
            raise InvalidArgumentError(msg)
        return analyzer

    # ------------------------------------------------------------------ writes

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Insert or replace documents (an id already stored is replaced in the table and the index).

        The whole batch is one transaction: if anything fails, the store is exactly as before.

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
        field_values: list[list[str]] = []
        for i, (text, meta) in enumerate(zip(text_list, meta_list)):
            row = []
            for name in self.fields:
                value = text if name == "text" else meta.get(name, "")
                if not isinstance(value, str):
                    if not self._fields_given:
                        value = ""  # a default field (the title) only indexes what is text
                    else:
                        msg = f"metadatas[{i}][{name!r}] is an indexed field and must be a string"
                        raise InvalidTypeError(msg)
                row.append(self.analyzer.normalize(value))
            field_values.append(row)
        with self._write("add documents") as conn:
            removed = self._delete_in(conn, id_list)
            doc_rows = [
                (doc_id, text, json.dumps(meta, ensure_ascii=False, allow_nan=False))
                for doc_id, text, meta in zip(id_list, text_list, meta_list)
            ]
            first = conn.execute(f"SELECT coalesce(max(rowid), 0) + 1 FROM {self._docs}").fetchone()[0]
            rowids = range(first, first + len(id_list))
            conn.executemany(
                f"INSERT INTO {self._docs} (rowid, id, text, metadata) VALUES (?, ?, ?, ?)",
                [(r, *row) for r, row in zip(rowids, doc_rows)],
            )
            placeholders = ", ".join("?" * (len(self.fields) + 1))
            conn.executemany(
                f"INSERT INTO {self._fts} (rowid, {', '.join(self.fields)}) VALUES ({placeholders})",
                [(r, *vals) for r, vals in zip(rowids, field_values)],
            )
            conn.executemany(
                f"INSERT INTO {self._scope} (doc, key, vtype, value) VALUES (?, ?, ?, ?)",
                [(r, *row) for r, meta in zip(rowids, meta_list) for row in _scope_rows(meta)],
            )
            self._bump_count(conn, len(id_list) - removed)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id (unknown ids are ignored), in one transaction.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a", "b"], ["x", "y"]); s.delete(["a", "zz"]); s.count()
            1
        """
        id_list = check_ids(ids)
        if not id_list:
            return
        with self._write("delete documents") as conn:
            removed = self._delete_in(conn, id_list)
            self._bump_count(conn, -removed)

    def _delete_in(self, conn: sqlite3.Connection, id_list: list[str]) -> int:
        removed = 0
        for start in range(0, len(id_list), _CHUNK):
            chunk = id_list[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            rowids = [r for (r,) in conn.execute(f"SELECT rowid FROM {self._docs} WHERE id IN ({marks})", chunk)]
            if not rowids:
                continue
            rmarks = ", ".join("?" * len(rowids))
            conn.execute(f"DELETE FROM {self._fts} WHERE rowid IN ({rmarks})", rowids)
            conn.execute(f"DELETE FROM {self._scope} WHERE doc IN ({rmarks})", rowids)
            conn.execute(f"DELETE FROM {self._docs} WHERE rowid IN ({rmarks})", rowids)
            removed += len(rowids)
        return removed

    def _bump_count(self, conn: sqlite3.Connection, delta: int) -> None:
        if delta:
            conn.execute(
                f"UPDATE {self._meta} SET value = CAST(value AS INTEGER) + ? WHERE key = 'count'", (delta,)
            )

    def optimize(self) -> None:
        """Merge the FTS5 index segments into one (worth it after a bulk load; reads get faster).

        Example:
            >>> FTS5KeywordStore().optimize()
        """
        with self._write("optimize") as conn:
            conn.execute(f"INSERT INTO {self._fts} ({self._fts}) VALUES ('optimize')")

    # ------------------------------------------------------------------ reads

    def count(self) -> int:
        """Number of stored documents.

        Example:
            >>> FTS5KeywordStore().count()
            0
        """
        with self._read("count") as conn:
            return int(conn.execute(f"SELECT value FROM {self._meta} WHERE key = 'count'").fetchone()[0])

    def get(self, ids: Sequence[str]) -> list[Record]:
        """The stored documents for ``ids``, in that order; unknown ids are skipped.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a"], ["x"], [{"k": 1}]); s.get(["a", "nope"])
            [Record(id='a', text='x', metadata={'k': 1}, vector=None)]
        """
        id_list = check_ids(ids)
        found: dict[str, Record] = {}
        with self._read("get documents") as conn:
            for start in range(0, len(id_list), _CHUNK):
                chunk = id_list[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                for doc_id, text, meta in conn.execute(
                    f"SELECT id, text, metadata FROM {self._docs} WHERE id IN ({marks})", chunk
                ):
                    found[doc_id] = Record(doc_id, text, json.loads(meta))
        return [found[i] for i in id_list if i in found]

    def search(
        self,
        query: str,
        limit: int,
        filter: FilterSpec | NormalizedFilter | None = None,
        exclude_ids: Iterable[str] | None = None,
    ) -> list[Hit]:
        """The top ``limit`` documents by ``bm25()`` among those the scope allows.

        Args:
            query: The user's text, any string. Only the analyzer's terms are used, each as plain text.
            limit: How many hits at most (0 gives []).
            filter: ``{"key": value | [values]}`` on metadata (raw or already normalised).
            exclude_ids: Ids never to return.

        Returns:
            Hits with ``score = -bm25()`` (> 0, higher is better); [] when no query term survives the analyzer.

        Example:
            >>> s = FTS5KeywordStore(); s.add(["a"], ["hello world"]); s.search("the world", 1)[0].id
            'a'
        """
        check_str(query, "query")
        limit = check_limit(limit)
        flt, excluded = normalize_scope(filter, exclude_ids)
        if limit == 0:
            return []
        terms = self.analyzer.terms(query)[:DEFAULT_MAX_TERMS]
        if not terms:
            return []
        scope_sql, scope_params = self._scope_sql(flt, excluded)
        with self._read("search") as conn:
            if self.mode == "and_or" and len(set(terms)) > 1:
                first = match_expression(list(dict.fromkeys(terms)), "AND")
                hits = self._ranked(conn, first, limit, scope_sql, scope_params)
                if len(hits) < limit:
                    seen = excluded | {h.id for h in hits}
                    sql2, params2 = self._scope_sql(flt, seen)
                    hits += self._search_or(conn, terms, limit - len(hits), sql2, params2)
                return hits
            return self._search_or(conn, terms, limit, scope_sql, scope_params)

    def _search_or(
        self, conn: sqlite3.Connection, terms: list[str], limit: int, scope_sql: str, scope_params: list[Any]
    ) -> list[Hit]:
        informative, flat = self._split_by_idf(conn, terms)
        if not flat or not informative:
            return self._ranked(conn, match_expression(terms), limit, scope_sql, scope_params)
        # Pass 1 without the zero-IDF terms (they add ~1e-6 to a score but cost a visit of most documents).
        hits = self._ranked(conn, match_expression(informative), limit, scope_sql, scope_params)
        if len(hits) >= limit:
            return hits
        # Pass 2: documents that share only zero-IDF terms rank below every pass-1 document.
        extra_sql = " AND d.id NOT IN (SELECT value FROM json_each(?))" if hits else ""
        extra_params = [json.dumps([h.id for h in hits], ensure_ascii=False)] if hits else []
        more = self._ranked(
            conn,
            match_expression(terms),
            limit - len(hits),
            scope_sql + extra_sql,
            [*scope_params, *extra_params],
        )
        return hits + more

    def _split_by_idf(self, conn: sqlite3.Connection, terms: list[str]) -> tuple[list[str], list[str]]:
        """Split terms into those with a useful IDF and those in >= half the documents (bm25 IDF ~ 0)."""
        total = int(conn.execute(f"SELECT value FROM {self._meta} WHERE key = 'count'").fetchone()[0])
        if total < 8:
            return terms, []
        informative: list[str] = []
        flat: list[str] = []
        cache: dict[str, bool] = {}
        for term in terms:
            if term not in cache:
                # Looked up in fts5vocab by the exact token FTS5 stores; an unknown token counts as rare.
                cache[term] = self._doc_freq(conn, term) >= _ZERO_IDF_SHARE * total
            (flat if cache[term] else informative).append(term)
        return informative, flat

    def _doc_freq(self, conn: sqlite3.Connection, term: str) -> int:
        """Document frequency of ``term`` in the index, cached until the data changes.

        fts5vocab counts a term's documents by walking its whole doclist (several ms for a term in most of
        100k documents), and the frequent terms are the ones queries repeat: the cache is per connection and
        is dropped when this store writes (``_generation``) or another connection commits (``data_version``).
        """
        stem = self._fts_stem(term)
        if stem is None:
            return 0
        version = (self._generation, conn.execute("PRAGMA data_version").fetchone()[0])
        cache = self._df_cache.get(id(conn))
        if cache is None or cache[0] != version or len(cache[1]) > 100_000:
            cache = (version, {})
            self._df_cache[id(conn)] = cache
        df = cache[1].get(stem)
        if df is None:
            row = conn.execute(f"SELECT doc FROM {self._vocab} WHERE term = ?", (stem,)).fetchone()
            df = int(row[0]) if row else 0
            cache[1][stem] = df
        return df

    @staticmethod
    def _fts_stem(term: str) -> str | None:
        """The single token FTS5's tokenizer stores for ``term``; None if it makes several (never dropped)."""
        return _fts_token(term)

    def _scope_sql(self, flt: NormalizedFilter | None, excluded: frozenset[str]) -> tuple[str, list[Any]]:
        """SQL conditions on ``f.rowid`` / ``d.id`` for a filter and exclusions, with bound parameters only."""
        parts: list[str] = []
        params: list[Any] = []
        for key, values in (flt or {}).items():
            if not values:
                parts.append("0")  # an empty any-of list matches nothing
                continue
            groups: dict[str, list[Any]] = {}
            for value in values:
                vtype, v = _scope_value(value) or ("s", value)
                groups.setdefault(vtype, []).append(v)
            ors = []
            for vtype, vals in groups.items():
                # One JSON parameter per value list: no limit on SQLite's bound-variable count.
                ors.append("(key = ? AND vtype = ? AND value IN (SELECT value FROM json_each(?)))")
                params.extend([key, vtype, json.dumps(vals, ensure_ascii=False)])
            # The unary '+' keeps this constraint away from FTS5's xBestIndex: offered a rowid IN list, FTS5
            # runs the whole MATCH once per listed rowid (measured 60x slower at 10k documents).
            parts.append(f"+f.rowid IN (SELECT doc FROM {self._scope} WHERE {' OR '.join(ors)})")
        if excluded:
            parts.append("d.id NOT IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(sorted(excluded), ensure_ascii=False))
        return ("".join(f" AND {p}" for p in parts), params)

    def _ranked(
        self, conn: sqlite3.Connection, match: str, limit: int, scope_sql: str, scope_params: list[Any]
    ) -> list[Hit]:
        if scope_sql:
            # The join to the docs table is needed by the exclusions and the scope only.
            sql = (
                f"SELECT d.id, d.text, d.metadata, bm25({self._fts}, {self._bm25_args}) AS s "
                f"FROM {self._fts} f JOIN {self._docs} d ON d.rowid = f.rowid "
                f"WHERE {self._fts} MATCH ?{scope_sql} ORDER BY s, f.rowid LIMIT ?"
            )
            rows = conn.execute(sql, [match, *scope_params, limit]).fetchall()
        else:
            # Unscoped: rank inside FTS5 first, then fetch text and metadata for the top rows only.
            sql = (
                f"SELECT d.id, d.text, d.metadata, r.s FROM (SELECT rowid, bm25({self._fts}, {self._bm25_args}) "
                f"AS s FROM {self._fts} WHERE {self._fts} MATCH ? ORDER BY s, rowid LIMIT ?) r "
                f"JOIN {self._docs} d ON d.rowid = r.rowid ORDER BY r.s, r.rowid"
            )
            rows = conn.execute(sql, [match, limit]).fetchall()
        return [Hit(doc_id, text, json.loads(meta), -float(s)) for doc_id, text, meta, s in rows]
