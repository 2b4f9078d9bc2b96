"""Arguments other libraries spell differently: a hint that names ours, or an accepted alias.

* ``retrievers=[...]`` (LangChain's ``EnsembleRetriever``) is ``sources={name: retriever}`` here;
* ``embed_model=`` (LlamaIndex's name) is accepted for ``embedding=``; neither given, a framework's default model
  the user set (LlamaIndex's ``Settings.embed_model``) is used;
* ``show_progress=`` belongs to the writes, not the constructor.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rrf_retriever.errors import InvalidArgumentError

if TYPE_CHECKING:
    from rrf_retriever.frameworks.sides import FrameworkSide

__all__ = ["ARGUMENT_HINTS", "resolve_embedding", "unknown_arguments_error"]

logger = logging.getLogger(__name__)

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


def resolve_embedding(embedding: Any, kwargs: dict[str, Any], sides: Sequence[type[FrameworkSide]] = ()) -> Any:
    """``embedding``, or LlamaIndex's ``embed_model`` popped from ``kwargs`` (at most one of them); neither given,
    the first default one of the framework ``sides`` holds (:meth:`FrameworkSide.default_embedding
    <rrf_retriever.frameworks.sides.FrameworkSide.default_embedding>`: LlamaIndex's ``Settings.embed_model`` when the
    user set it), logged at INFO.

    Raises:
        InvalidArgumentError: both given, or no embedding at all.
    """
    embed_model = kwargs.pop("embed_model", None)
    if embedding is not None and embed_model is not None:
        msg = "embedding and embed_model both given: embed_model is an alias of embedding, give one"
        raise InvalidArgumentError(msg)
    if embedding is not None or embed_model is not None:
        return embedding if embedding is not None else embed_model
    for side in sides:
        default = side.default_embedding()
        if default is not None:
            logger.info("no embedding given: using %s (%s)", side.default_embedding_name, type(default).__name__)
            return default
    defaults = "".join(f"; or set {side.default_embedding_name}" for side in sides if side.default_embedding_name)
    msg = f"an embedding is needed: embedding=... (or embed_model=..., LlamaIndex's name for it){defaults}"
    raise InvalidArgumentError(msg)
