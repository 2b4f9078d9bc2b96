"""The SQLite FTS5 keyword store: the store (``store``), its SQL built by pure functions (``sql``, ``scope``), the
schema and its migrations (``schema``) and the connection pool (``pool``)."""
