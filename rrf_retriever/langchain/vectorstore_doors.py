"""The doors :class:`~rrf_retriever.langchain.RRFVectorStore` inherits from LangChain's ``VectorStore``, checked.

LangChain's own ``search``, ``similarity_search_with_relevance_scores``, ``from_documents`` and ``as_retriever``
(and their async twins) call the store's methods, but read some arguments themselves first: a bad one gave a bare
``ValueError``, ``TypeError``, ``AttributeError`` or pydantic ``ValidationError`` from inside LangChain. Here each
is checked first and refused with our error naming it; then LangChain's method runs unchanged.

Example:
    >>> from rrf_retriever import HashingEmbedding
    >>> from rrf_retriever.langchain import RRFVectorStore
    >>> store = RRFVectorStore.from_texts(["hello world"], HashingEmbedding(), ids=["h"])
    >>> store.search("hello", "nearest")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rrf_retriever.errors.InvalidArgumentError: search_type must be one of [...], not 'nearest'
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, missing_dependency
from rrf_retriever.frameworks.results import document_list
from rrf_retriever.validate import check_mapping, check_number, check_str, shown

try:
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["CheckedVectorStore", "check_search_type"]


def check_search_type(search_type: object) -> str:
    """One of LangChain's search types (``VectorStoreRetriever.allowed_search_types``), or our error.

    Example:
        >>> check_search_type("mmr")
        'mmr'
    """
    allowed = list(VectorStoreRetriever.allowed_search_types)
    if check_str(search_type, "search_type") not in allowed:
        msg = f"search_type must be one of {allowed}, not {shown(search_type)}"
        raise InvalidArgumentError(msg)
    return str(search_type)


def _documents(documents: object) -> list[Document]:
    out = document_list(documents)
    for i, doc in enumerate(out):
        if not isinstance(doc, Document):
            msg = f"documents[{i}] must be a LangChain Document, not {type(doc).__name__}"
            raise InvalidTypeError(msg)
    return out


def _threshold(kwargs: dict[str, Any]) -> dict[str, Any]:
    if kwargs.get("score_threshold") is not None:
        check_number(kwargs["score_threshold"], "score_threshold", high=1.0)
    return kwargs


class CheckedVectorStore(VectorStore):
    """LangChain's ``VectorStore`` whose inherited doors check their arguments (see the module docstring)."""

    def search(self, query: str, search_type: str, **kwargs: Any) -> list[Document]:
        """LangChain's ``search``: ``search_type`` checked first."""
        return super().search(query, check_search_type(search_type), **kwargs)

    async def asearch(self, query: str, search_type: str, **kwargs: Any) -> list[Document]:
        """Async twin of :meth:`search`."""
        return await super().asearch(query, check_search_type(search_type), **kwargs)

    def similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """LangChain's: ``score_threshold`` (a relevance in [0, 1]) checked first."""
        return super().similarity_search_with_relevance_scores(query, k, **_threshold(kwargs))

    async def asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async twin of :meth:`similarity_search_with_relevance_scores`."""
        return await super().asimilarity_search_with_relevance_scores(query, k, **_threshold(kwargs))

    @classmethod
    def from_documents(cls, documents: list[Document], embedding: Any, **kwargs: Any) -> Any:
        """LangChain's: ``documents`` checked first (a list of ``Document`` s, not one alone)."""
        return super().from_documents(_documents(documents), embedding, **kwargs)

    @classmethod
    async def afrom_documents(cls, documents: list[Document], embedding: Any, **kwargs: Any) -> Any:
        """Async twin of :meth:`from_documents`."""
        return await super().afrom_documents(_documents(documents), embedding, **kwargs)

    def as_retriever(self, **kwargs: Any) -> VectorStoreRetriever:
        """LangChain's ``VectorStoreRetriever`` over this store: ``search_type`` and ``search_kwargs`` (a mapping;
        ``score_threshold`` in it a relevance in [0, 1]) checked first."""
        if "search_type" in kwargs:
            kwargs["search_type"] = check_search_type(kwargs["search_type"])
        if kwargs.get("search_kwargs") is not None:
            kwargs["search_kwargs"] = _threshold(dict(check_mapping(kwargs["search_kwargs"], "search_kwargs",
                                                                    "search argument to value")))
        return super().as_retriever(**kwargs)
