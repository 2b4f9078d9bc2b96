"""The LlamaIndex nodes our retriever returns: the stored node, plus how this query scored it.

LlamaIndex identifies a node's content by ``node.hash`` (``QueryFusionRetriever`` fuses by it, a docstore detects
changed nodes by it); for a ``TextNode`` it is a hash of the text and ``str(metadata)``, for a ``Document`` (a
``Node``) one of its metadata string and text resource, so a ``Document`` inserted comes back a ``Document``
(:func:`~rrf_retriever.llama_index.nodes.stored_node`), not a ``TextNode`` of another hash. Our per-query ``rrf_*``
metadata keys (fused score, per-leg ranks and raw scores; excluded from the LLM and embedding metadata as well) would
change it with every query, so a result node is one of these classes, each its LlamaIndex class in every way
(fields, ``isinstance``, ``class_name()``, ``get_type()``) but for ``hash``, computed as LlamaIndex does once the
``rrf_*`` keys are set aside (:func:`~rrf_retriever.frameworks.results.identity_metadata`): the same stored node has
the same hash whatever the query, the hash of the node the user inserted (same text and metadata), so another
member of a ``QueryFusionRetriever`` over the same nodes (e.g. LlamaIndex's ``BM25Retriever``) fuses with ours.

Serialized (``to_dict`` / ``to_json``, a docstore, ``node_to_metadata_dict``) a result node is its LlamaIndex class
(its ``class_name``), read back as that class, ``rrf_*`` keys included; it pickles and copies as itself.

Example:
    >>> from llama_index.core.schema import TextNode
    >>> mine = TextNode(id_="a", text="text", metadata={"lang": "en"})
    >>> found = stable_node(mine.model_copy(update={"metadata": {"lang": "en", "rrf_score": 0.03}}))
    >>> found.hash == mine.hash, found.metadata["rrf_score"], found.class_name()
    (True, 0.03, 'TextNode')
"""

from __future__ import annotations

from typing import TypeVar

from rrf_retriever.errors import missing_dependency
from rrf_retriever.frameworks.results import identity_metadata, is_scoring_key

try:
    from llama_index.core.schema import BaseNode, Document, ImageDocument, ImageNode, IndexNode, Node, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["RRFDocument", "RRFImageDocument", "RRFImageNode", "RRFIndexNode", "RRFNode", "RRFTextNode", "stable_node"]


N = TypeVar("N", bound=BaseNode)


def _unscored(node: N) -> N:
    """A shallow copy without the ``rrf_*`` keys (the node itself when it has none)."""
    if not any(is_scoring_key(key) for key in node.metadata):
        return node
    return node.model_copy(update={"metadata": identity_metadata(node.metadata)})


class RRFTextNode(TextNode):
    """A ``TextNode`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFTextNode, _unscored(self)).hash


class RRFIndexNode(IndexNode):
    """An ``IndexNode`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFIndexNode, _unscored(self)).hash


class RRFImageNode(ImageNode):
    """An ``ImageNode`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFImageNode, _unscored(self)).hash


class RRFNode(Node):
    """A ``Node`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFNode, _unscored(self)).hash


class RRFDocument(Document):
    """A ``Document`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFDocument, _unscored(self)).hash


class RRFImageDocument(ImageDocument):
    """An ``ImageDocument`` whose ``hash`` leaves out the ``rrf_*`` metadata (how one query scored it)."""

    @property
    def hash(self) -> str:
        return super(RRFImageDocument, _unscored(self)).hash


#: The class a result node of each LlamaIndex class (what ``metadata_dict_to_node`` rebuilds) becomes.
_STABLE: dict[type[BaseNode], type[BaseNode]] = {
    TextNode: RRFTextNode, IndexNode: RRFIndexNode, ImageNode: RRFImageNode, Node: RRFNode,
    Document: RRFDocument, ImageDocument: RRFImageDocument,
}


def stable_node(node: BaseNode) -> BaseNode:
    """``node`` as its result class (same fields, not validated again); a node of another class is returned as is.

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> type(stable_node(TextNode(text="x"))).__name__
        'RRFTextNode'
    """
    cls = _STABLE.get(type(node))
    if cls is None:
        return node
    return cls.model_construct(_fields_set=set(node.model_fields_set), **node.__dict__)
