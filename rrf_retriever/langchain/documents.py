"""The LangChain ``Document`` our retriever returns: the stored document, plus how this query scored it.

:class:`RRFDocument` is a ``langchain_core.documents.Document`` in every way (fields, ``isinstance``, prompts,
``str``) but one: equality ignores the per-query ``rrf_*`` metadata keys (fused score, per-leg ranks and raw
scores, markers; :func:`~rrf_retriever.frameworks.results.identity_metadata`). The same stored document is then
equal to itself whatever the query, and to the ``Document`` the user wrote (same ``id``, text and metadata), which is
what LangChain's wrappers rely on: ``MultiQueryRetriever`` drops ``doc`` when ``doc in documents[:i]``.

Serialized (``langchain_core.load.dumpd`` / ``dumps``) it is a plain LangChain ``Document`` (the same ``lc`` id), so
``loads`` needs no extra namespace and gives back a ``Document``, ``rrf_*`` keys included; it pickles and copies as
itself.

Example:
    >>> from langchain_core.documents import Document
    >>> a = RRFDocument(id="d1", page_content="text", metadata={"lang": "en", "rrf_score": 0.03})
    >>> b = RRFDocument(id="d1", page_content="text", metadata={"lang": "en", "rrf_score": 0.02})
    >>> a == b, a == Document(id="d1", page_content="text", metadata={"lang": "en"}), a.metadata["rrf_score"]
    (True, True, 0.03)
"""

from __future__ import annotations

from typing import Any

from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.results import identity_metadata

try:
    from langchain_core.documents import Document
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("langchain-core", "langchain", "rrf_retriever.langchain") from exc

__all__ = ["RRFDocument"]


def _identity(doc: Document) -> dict[str, Any]:
    return {**doc.__dict__, "metadata": identity_metadata(doc.metadata)}


class RRFDocument(Document):
    """A ``Document`` whose ``rrf_*`` metadata (how one query scored it) is not part of its identity.

    Equal to any LangChain ``Document`` with the same fields once ``rrf_*`` keys are set aside on both sides; still
    unhashable, as ``Document`` is.
    """

    @classmethod
    def lc_id(cls) -> list[str]:
        """LangChain's id of ``Document``: serialized, this is a plain ``Document``."""
        return Document.lc_id()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return _identity(self) == _identity(other)

    __hash__ = None  # type: ignore[assignment]  # as Document: a mutable pydantic model is unhashable
