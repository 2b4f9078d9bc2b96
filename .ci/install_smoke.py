"""Smoke test of a single-framework install: `python install_smoke.py langchain|llama-index`.

Run by `make check-installs` in a throwaway venv that has ONLY the built wheel with `[<framework>]` (which brings
the default stack) and the MiniLM weights: the retriever must be that framework's retriever, must not need the
other framework, and must work end to end on the DEFAULT stack (BM25 sparse + dense, both on qdrant-edge, the real
MiniLM), in memory and in an index directory that is reopened; the stdlib FTS5 store must work too.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

framework = sys.argv[1]
other = {"langchain": "llama_index", "llama-index": "langchain_core"}[framework]
if importlib.util.find_spec(other) is not None:
    raise SystemExit(f"this venv should not have {other}: it is not a {framework}-only install")

from rrf_retriever import EnsembleRRFRetriever, FTS5KeywordStore, MiniLMEmbedding  # noqa: E402

TEXTS = ["error E42 in the FTS5 index", "vector search finds paraphrases", "uploads pause when the disk is full"]
IDS = ["e42", "vec", "disk"]


def top_ids(retriever: EnsembleRRFRetriever, query: str) -> list[str]:
    if framework == "langchain":
        return [d.id for d in retriever.invoke(query)]
    return [n.node.node_id for n in retriever.retrieve(query)]


if framework == "langchain":
    from langchain_core.retrievers import BaseRetriever
else:
    from llama_index.core.base.base_retriever import BaseRetriever

# The default stack, in memory: both legs answer.
embedding = MiniLMEmbedding()
retriever = EnsembleRRFRetriever.from_texts(TEXTS, embedding, ids=IDS, top_k=2)
assert isinstance(retriever, BaseRetriever), type(retriever).__mro__
result = retriever.search("E42")
assert result.ids[0] == "e42", result.ids
legs = {leg.name: leg for leg in result.trace.legs}
assert set(legs) == {"dense", "keyword"}, result.trace
assert all(leg.called and leg.error is None and leg.hits for leg in legs.values()), result.trace
# The default stack in an index directory, closed and reopened.
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "idx"
    first = EnsembleRRFRetriever.from_texts(TEXTS, embedding, ids=IDS, path=path)
    first.close()
    again = EnsembleRRFRetriever.from_texts([], embedding, path=path)
    assert top_ids(again, "E42")[0] == "e42"
    again.close()
# The stdlib keyword store alone.
keyword_only = EnsembleRRFRetriever(keyword=FTS5KeywordStore(), top_k=2)
keyword_only.add_texts(TEXTS[:2], ids=IDS[:2])
assert top_ids(keyword_only, "E42") == ["e42"]
print(f"{framework}-only install: {type(retriever).__name__} is a {BaseRetriever.__module__}.BaseRetriever; "
      f"default stack {sorted(legs)} answered {result.ids}")
