"""Arguments other libraries spell differently: a hint that names ours, or an accepted alias.

* ``retrievers=[...]`` (LangChain's ``EnsembleRetriever``) is ``sources={name: retriever}`` here;
* ``embed_model=`` (LlamaIndex's name) is accepted for ``embedding=``;
* ``show_progress=`` belongs to the writes, not the constructor.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rrf_retriever.errors import InvalidArgumentError

__all__ = ["ARGUMENT_HINTS", "resolve_embedding", "unknown_arguments_error"]

#: Another library's argument name -> what to write here.
ARGUMENT_HINTS = {
    "retrievers": "sources={'dense': retriever_a, 'keyword': retriever_b} (a dict: names key the weights, e.g. "
                  "weights={'dense': 1.0, 'keyword': 1.25}), not LangChain EnsembleRetriever's retrievers=[...]",
    "embed_model": "embedding=... (embed_model= is accepted by from_texts and from_documents only)",
    "c": "rrf_k=... (the RRF constant; LangChain EnsembleRetriever calls it c)",
    "show_progress": "show_progress=... on the writes: from_texts, from_documents, add_texts, add_documents, "
                     "insert_nodes (the constructor writes nothing)",
}


def unknown_arguments_error(owner: str, unknown: Iterable[str]) -> InvalidArgumentError:
    """The error for unknown keyword arguments, with a hint for the ones another library spells that way."""
    names = sorted(unknown)
    hints = "; ".join(f"{name}: use {ARGUMENT_HINTS[name]}" for name in names if name in ARGUMENT_HINTS)
    msg = f"unknown argument(s) {names} for {owner}; " + (hints or "see its docstring for the accepted ones")
    return InvalidArgumentError(msg)


def resolve_embedding(embedding: Any, kwargs: dict[str, Any]) -> Any:
    """``embedding``, or LlamaIndex's ``embed_model`` popped from ``kwargs``; exactly one must be given."""
    embed_model = kwargs.pop("embed_model", None)
    if embedding is not None and embed_model is not None:
        msg = "embedding and embed_model both given: embed_model is an alias of embedding, give one"
        raise InvalidArgumentError(msg)
    if embedding is None and embed_model is None:
        msg = "an embedding is needed: embedding=... (or embed_model=..., LlamaIndex's name for it)"
        raise InvalidArgumentError(msg)
    return embedding if embedding is not None else embed_model
