"""What one framework contributes to the retriever: the hooks :class:`~rrf_retriever.frameworks.core.RetrieverCore`
calls, and nothing else of the framework.

A framework package (``rrf_retriever.langchain``, ``rrf_retriever.llama_index``) subclasses :class:`FrameworkSide`
and overrides the hooks for its own types; the core asks every side of its class in turn, so it never imports a
framework and a new framework adds a side without editing the core.

Example:
    >>> FrameworkSide.leg_for(object(), None) is None and FrameworkSide.reranker_for(len) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from rrf_retriever.engine import HybridEngine, Leg
    from rrf_retriever.engine.rerank import HitReranker
    from rrf_retriever.scope.tree import FilterNode

__all__ = ["FrameworkSide"]


class FrameworkSide:
    """One framework's half of the retriever: converts the framework's objects into ours, initialises its base.

    Each conversion hook returns None for an object that is not the framework's, so the next side is asked.
    """

    #: Constructor keywords the framework's base class takes (``tags`` for LangChain, ``verbose`` for LlamaIndex).
    framework_kwargs: ClassVar[frozenset[str]] = frozenset()
    #: Where :meth:`default_embedding` reads the framework's default model (for the log and the error), or None.
    default_embedding_name: ClassVar[str | None] = None

    @staticmethod
    def leg_for(source: Any, id_key: str | None) -> Leg | None:
        """A read-only leg over this framework's retriever ``source``, or None if it is not one."""
        return None

    @staticmethod
    def document_parts(doc: Any) -> tuple[str | None, str, dict[str, Any]] | None:
        """``(id, text, metadata)`` of this framework's document, or None if it is not one."""
        return None

    @staticmethod
    def reranker_for(reranker: Any) -> HitReranker | None:
        """An engine reranker over this framework's reranker (a compressor, a postprocessor), or None."""
        return None

    @staticmethod
    def default_embedding() -> Any | None:
        """The embedding model the user set as this framework's default (LlamaIndex's ``Settings.embed_model``),
        used when ``from_texts`` / ``from_documents`` get none; None when there is none (never a model the
        framework would build by itself)."""
        return None

    @staticmethod
    def filter_for(flt: Any) -> FilterNode | None:
        """Our filter tree for this framework's filter object (LlamaIndex ``MetadataFilters``), or None."""
        return None

    def _keep_objects(self, documents: Sequence[Any]) -> None:
        """Keep in memory what written documents hold that is not stored (LlamaIndex's ``IndexNode`` objects)."""

    def _init_side(self, engine: HybridEngine, search_kwargs: dict[str, Any], kwargs: dict[str, Any]) -> None:
        raise NotImplementedError

    def _side_kwargs(self) -> dict[str, Any]:
        """The framework keywords a copy (``scoped``) must be built with."""
        return {}
