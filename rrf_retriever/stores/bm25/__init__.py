"""The in-memory BM25 keyword store (bm25s or rank_bm25): the store (``store``), its filter masks (``scope``) and
its save/load files (``files``)."""
