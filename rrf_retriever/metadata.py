"""How a LlamaIndex node is laid out in stored metadata, and what users (of either framework, of the CLI and the
service) see of it.

Framework-neutral (no framework import), so the LangChain side, the command line and the HTTP service can hide
LlamaIndex's bookkeeping without importing LlamaIndex. The layout is LlamaIndex's own
(``llama_index.core.vector_stores.utils.node_to_metadata_dict``, the one every LlamaIndex vector store writes,
Qdrant's included): the user's metadata keys, plus

* ``_node_content``: the node as JSON (id, metadata, relationships, excluded keys, templates; text and embedding
  left out: the text is stored as the document's text, the embedding as its vector);
* ``_node_type``: the node class (``TextNode``, ``Document``, ``IndexNode``, ...);
* ``ref_doc_id``, ``doc_id``, ``document_id``: the id of the source document, three copies LlamaIndex keeps for the
  filters of different vector stores (``doc_id`` is the one LlamaIndex's Qdrant store deletes by).

A LangChain ``Document.metadata`` (and the metadata of a LlamaIndex node rebuilt without its JSON) shows the user's
keys and ``ref_doc_id``; ``_node_content``, ``_node_type`` and the two extra copies of the source id are hidden, and
so is ``ref_doc_id`` when it is the document's own id (a LlamaIndex ``Document`` inserted whole is its own source).

Example:
    >>> public_metadata({"lang": "en", "_node_content": "{...}", "_node_type": "TextNode",
    ...                  "ref_doc_id": "d1", "doc_id": "d1", "document_id": "d1"})
    {'lang': 'en', 'ref_doc_id': 'd1'}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "NODE_CONTENT_KEY",
    "NODE_TYPE_KEY",
    "REF_DOC_ID_KEY",
    "SOURCE_ID_COPIES",
    "public_metadata",
    "public_result_dict",
]

#: The node as JSON (LlamaIndex's key).
NODE_CONTENT_KEY = "_node_content"
#: The node's class name (LlamaIndex's key).
NODE_TYPE_KEY = "_node_type"
#: The source document's id: the key ``delete_ref_doc`` matches, shown to LangChain users too.
REF_DOC_ID_KEY = "ref_doc_id"
#: The other copies of the source document's id LlamaIndex writes (hidden when they equal ``ref_doc_id``).
SOURCE_ID_COPIES = ("doc_id", "document_id")


def public_metadata(metadata: Mapping[str, Any], doc_id: str | None = None) -> dict[str, Any]:
    """Stored metadata as a user sees it: LlamaIndex's bookkeeping keys hidden on node-written documents.

    A document written from a LangChain ``Document`` or plain texts (no ``_node_content``) is returned unchanged,
    so a user's own ``doc_id`` key is never hidden; on a node-written document ``doc_id`` / ``document_id`` are
    hidden only while they are LlamaIndex's copies of ``ref_doc_id``, and ``ref_doc_id`` itself when it equals
    ``doc_id``, the document's own id (a whole ``Document``: the id says it already).

    Example:
        >>> public_metadata({"doc_id": "mine"})
        {'doc_id': 'mine'}
        >>> public_metadata({"k": 1, "_node_content": "{}", "ref_doc_id": "D", "doc_id": "D"}, doc_id="D")
        {'k': 1}
    """
    if NODE_CONTENT_KEY not in metadata:
        return dict(metadata)
    hidden = {NODE_CONTENT_KEY, NODE_TYPE_KEY}
    if REF_DOC_ID_KEY in metadata:
        source = metadata[REF_DOC_ID_KEY]
        hidden.update(key for key in SOURCE_ID_COPIES if key in metadata and metadata[key] == source)
        if doc_id is not None and source == doc_id:
            hidden.add(REF_DOC_ID_KEY)
    return {key: value for key, value in metadata.items() if key not in hidden}


def public_result_dict(result: Any) -> dict[str, Any]:
    """``result.to_dict()`` (a :class:`~rrf_retriever.types.SearchResult`) with every hit's metadata as a user sees
    it (:func:`public_metadata`): what the CLI and the service print.

    Example:
        >>> from rrf_retriever.types import SearchResult, Trace
        >>> public_result_dict(SearchResult([], Trace((), {}, 60.0, 10, 20)))["hits"]
        []
    """
    out: dict[str, Any] = result.to_dict()
    for hit in out["hits"]:
        hit["metadata"] = public_metadata(hit["metadata"], hit["id"])
    return out
