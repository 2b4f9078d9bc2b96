"""Smoke test of a single-framework install: `python install_smoke.py langchain|llama-index`.

Run by `make check-installs` in a throwaway venv that has ONLY `rrf-retriever[<framework>]`: the retriever must be
that framework's retriever, work end to end on the stdlib FTS5 store, and must not need the other framework.
"""

from __future__ import annotations

import importlib.util
import sys

framework = sys.argv[1]
other = {"langchain": "llama_index", "llama-index": "langchain_core"}[framework]
if importlib.util.find_spec(other) is not None:
    raise SystemExit(f"this venv should not have {other}: it is not a {framework}-only install")

from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore  # noqa: E402

keyword = FTS5KeywordStore()
retriever = EnsembleRRFRetriever(keyword=keyword, top_k=2)
retriever.add_texts(["error E42 in the FTS5 index", "vector search finds paraphrases"], ids=["e42", "vec"])
if framework == "langchain":
    from langchain_core.retrievers import BaseRetriever

    docs = retriever.invoke("E42")
    got = [d.id for d in docs]
else:
    from llama_index.core.base.base_retriever import BaseRetriever

    got = [n.node.node_id for n in retriever.retrieve("E42")]
assert isinstance(retriever, BaseRetriever), type(retriever).__mro__
assert got == ["e42"], got
print(f"{framework}-only install: {type(retriever).__name__} is a {BaseRetriever.__module__}.BaseRetriever; {got}")
