"""SQLite connections for a store: one shared connection for ``":memory:"``, a bounded pool for a file (WAL), and
the transaction helpers (one IMMEDIATE transaction per write, rolled back whole on any error).

A file store lends each call a connection, idle ones kept up to :data:`POOL_SIZE`, so a thread that dies holds nothing
open (one connection per thread leaked file descriptors). SQLite's errors become our ``StoreError`` subclasses.

Example:
    >>> db = SQLiteConnections(":memory:", 5.0)
    >>> with db.write("create") as conn:
    ...     _ = conn.execute("CREATE TABLE t (x)")
    >>> with db.read("count") as conn:
    ...     conn.execute("SELECT count(*) FROM t").fetchone()[0]
    0
    >>> db.close()
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rrf_retriever.errors import StoreError, StoreUnavailableError
from rrf_retriever.stores.fts5.scope import register_functions
from rrf_retriever.stores.fts5.sql import store_error

__all__ = ["POOL_SIZE", "Connection", "SQLiteConnections"]

# Idle connections a file store keeps for the next calls; more concurrent calls open more, closed on return.
POOL_SIZE = 8


class Connection(sqlite3.Connection):
    """A pooled connection with its document-frequency cache: ``((generation, data_version), {token: df})``."""

    df_cache: tuple[tuple[int, int], dict[str, int]] | None = None


class SQLiteConnections:
    """The connections of one SQLite file (or ``":memory:"``) and its transactions.

    Args:
        path: The file, or ``":memory:"``.
        timeout: Seconds to wait for a lock held by another writer.
        what: How errors name the store ("FTS5 store").
    """

    def __init__(self, path: str, timeout: float, what: str = "SQLite store") -> None:
        self.path = path
        self.timeout = timeout
        self.what = what
        self.memory = path == ":memory:"
        self.write_lock = threading.RLock()
        self._pool_lock = threading.Lock()
        self._idle: list[Connection] = []
        self._shared: Connection | None = None
        self.closed = False
        self.generation = 0  # bumped by every commit: caches keyed by it are dropped


    def connect(self) -> Connection:
        conn: Any = None
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False, factory=Connection
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            register_functions(conn)  # $icontains folds case as Python does
            if not self.memory:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            return conn
        except (sqlite3.Error, ValueError) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.OperationalError):
                raise self._translate(exc, "open") from exc
            msg = f"cannot open the {self.what} at {self.path!r}: {exc}"
            raise StoreUnavailableError(msg) from exc

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection for one call. ``":memory:"``: the shared one (the caller holds the lock). A file: an
        idle pooled one or a new one, given back afterwards (closed if the pool is full or the store closed),
        so a thread that dies holds nothing open."""
        if self.closed:
            msg = f"this {self.what} is closed"
            raise StoreError(msg)
        if self.memory:
            if self._shared is None:
                self._shared = self.connect()
            yield self._shared
            return
        with self._pool_lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self.connect()
        try:
            yield conn
        finally:
            with self._pool_lock:
                keep = not self.closed and len(self._idle) < POOL_SIZE and not conn.in_transaction
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        return store_error(exc, f"the {self.what} {self.path!r}", action, self.timeout)

    @contextmanager
    def write(self, action: str) -> Iterator[Connection]:
        """One IMMEDIATE transaction (the write lock is taken up front); rolled back whole on any error."""
        with self.write_lock, self.connection() as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._translate(exc, action) from exc
            try:
                yield conn
                conn.execute("COMMIT")
                self.generation += 1
            except BaseException as exc:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the transaction is already gone; the error below says why
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc, action) from exc
                raise

    @contextmanager
    def read(self, action: str) -> Iterator[Connection]:
        # ":memory:" shares one connection: reads take the lock too. Files: WAL readers run concurrently.
        lock = self.write_lock if self.memory else None
        if lock is not None:
            lock.acquire()
        try:
            with self.connection() as conn:
                try:
                    yield conn
                except sqlite3.Error as exc:
                    raise self._translate(exc, action) from exc
        finally:
            if lock is not None:
                lock.release()

    def close(self) -> None:
        """Close every connection this store opened; one lent to a call still running is closed when that call
        ends. The store cannot be used afterwards.

        Example:
            >>> SQLiteConnections(":memory:", 5.0).close()
        """
        with self._pool_lock:
            self.closed = True
            idle, self._idle = self._idle, []
        with self.write_lock:  # ":memory:" calls hold it while they use the shared connection
            shared, self._shared = self._shared, None
        for conn in [*idle, *([shared] if shared is not None else [])]:
            try:
                conn.close()
            except sqlite3.Error:
                pass  # closing is best effort
