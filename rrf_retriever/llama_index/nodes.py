"""LlamaIndex nodes to stored documents and back, keeping everything a LlamaIndex vector store keeps.

A node is stored in LlamaIndex's own layout (``node_to_metadata_dict``, see
:mod:`rrf_retriever.metadata`): the user's metadata keys, the node as JSON (``_node_content``:
relationships SOURCE / PREVIOUS / NEXT / PARENT / CHILD with their ``RelatedNodeInfo``, excluded embed and LLM
metadata keys, metadata template and separator, text template), its class (``_node_type``) and its source document's
id (``ref_doc_id``, plus LlamaIndex's copies ``doc_id`` and ``document_id``). ``metadata_dict_to_node`` rebuilds it,
so what LlamaIndex writes and what we write read the same way.

Choices:

* The text is the document's text (``get_content(MetadataMode.NONE)``), stored once (not again in the JSON).
* ``node.embedding`` is not used: every dense store embeds the text with its own model, the one that embeds the
  queries. A vector of the right dimension may still come from another model (MiniLM and bge-small are both 384),
  and mixing two models' vectors in one collection ranks silently wrong.
* A ``Document`` comes back a ``Document`` (LlamaIndex's ``metadata_dict_to_node`` reads it as a ``TextNode``,
  whose ``hash`` is computed otherwise), so ``node.hash`` is the inserted ``Document``'s.
* A ``Document`` (no SOURCE relationship) is its own source: ``ref_doc_id`` is stored as its ``doc_id``, so
  ``delete_ref_doc(document.doc_id)`` removes it. A node with no source stores no ``ref_doc_id`` (LlamaIndex writes
  the string ``"None"``, which would make ``delete_ref_doc("None")`` delete every orphan node).
* Our ``rrf_*`` result keys are stripped on the way in (a retrieved node inserted again), added and excluded from
  the LLM and embedding metadata on the way out, and left out of the node's ``hash``
  (:mod:`~rrf_retriever.llama_index.result_nodes`): the same stored node hashes the same whatever the query.
* An ``IndexNode`` is stored as an ``IndexNode`` (its ``index_id`` kept). Its ``obj`` is stored only when it is a
  node (it round-trips through the JSON); any other object (a retriever, a query engine, a dict) is kept in memory
  by whoever stored the node (:func:`index_objects`: LlamaIndex's ``object_map``, keyed by ``index_id``) and stored
  as None, as LlamaIndex's own indexes do: it is not written to disk, and a reopened index has the node without it.

Example:
    >>> from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
    >>> node = TextNode(id_="c1", text="chunk", relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="d1")})
    >>> node_id, text, metadata = node_record(node)
    >>> node_id, text, metadata["ref_doc_id"], stored_node(node_id, text, metadata).ref_doc_id
    ('c1', 'chunk', 'd1', 'd1')
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError, missing_dependency
from rrf_retriever.frameworks.results import RRF_METADATA_KEYS, result_metadata
from rrf_retriever.llama_index.result_nodes import stable_node
from rrf_retriever.metadata import NODE_CONTENT_KEY, NODE_TYPE_KEY, REF_DOC_ID_KEY, SOURCE_ID_COPIES
from rrf_retriever.types import FusedHit
from rrf_retriever.validate import check_id

try:
    from llama_index.core.schema import (
        BaseNode,
        Document,
        ImageDocument,
        IndexNode,
        MetadataMode,
        NodeWithScore,
        TextNode,
    )
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_dependency("llama-index-core", "llama-index", "rrf_retriever.llama_index") from exc

__all__ = ["index_objects", "node_batch", "node_record", "stored_node", "to_node_with_score"]

logger = logging.getLogger("rrf_retriever")
_RRF_KEYS = frozenset(RRF_METADATA_KEYS)
#: The classes ``metadata_dict_to_node`` would read back as a ``TextNode`` (of another ``hash``): read as themselves.
_DOCUMENTS: dict[str, type[Document]] = {cls.class_name(): cls for cls in (Document, ImageDocument)}


def _without_rrf(node: BaseNode) -> BaseNode:
    """The node without our result keys (a retrieved node inserted again); the node itself is not changed."""
    excluded = (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys)
    if not (_RRF_KEYS & node.metadata.keys() or any(_RRF_KEYS.intersection(keys) for keys in excluded)):
        return node
    return node.model_copy(
        update={
            "metadata": {k: v for k, v in node.metadata.items() if k not in _RRF_KEYS},
            "excluded_embed_metadata_keys": [k for k in excluded[0] if k not in _RRF_KEYS],
            "excluded_llm_metadata_keys": [k for k in excluded[1] if k not in _RRF_KEYS],
        }
    )


def _in_memory(node: BaseNode) -> TypeGuard[IndexNode]:
    """Whether the node is an ``IndexNode`` whose ``obj`` is kept in memory, not stored (see the module docstring)."""
    return isinstance(node, IndexNode) and node.obj is not None and not isinstance(node.obj, BaseNode)


def index_objects(nodes: Sequence[Any]) -> dict[str, Any]:
    """``{index_id: obj}`` of the ``IndexNode`` s whose object is not stored (not a node): what an ``object_map``
    must hold for LlamaIndex's recursive retrieval to follow them.

    Example:
        >>> index_objects([IndexNode(id_="p", text="summary", index_id="zoo", obj={"k": 1}), TextNode(text="x")])
        {'zoo': {'k': 1}}
    """
    return {node.index_id: node.obj for node in nodes if isinstance(node, BaseNode) and _in_memory(node)}


def node_record(node: BaseNode) -> tuple[str, str, dict[str, Any]]:
    """``(id, text, metadata)`` to store for a LlamaIndex node (LlamaIndex's layout; see the module docstring).

    Raises:
        InvalidArgumentError: the node's source id (``ref_doc_id``) is empty, longer than 1024 characters or holds
            NUL (it could not be deleted by ``delete_ref_doc``), its metadata is not JSON-serialisable, or its
            SOURCE relationship is a list.

    Example:
        >>> from llama_index.core.schema import Document
        >>> node_record(Document(text="whole", doc_id="D1"))[2]["ref_doc_id"]
        'D1'
    """
    clean = _without_rrf(node)
    if _in_memory(clean):
        clean = clean.model_copy(update={"obj": None})  # kept by the caller's object_map (index_objects)
    try:
        metadata = node_to_metadata_dict(clean, remove_text=True)
    except ValueError as exc:  # metadata pydantic cannot serialise (an object, bytes), a SOURCE given as a list
        msg = f"node {clean.node_id!r:.60} cannot be stored: {exc}"
        raise InvalidArgumentError(msg) from exc
    source = clean.ref_doc_id
    if source is None and isinstance(clean, Document):
        source = clean.doc_id  # a whole Document is its own source document
    if source is not None:
        source = check_id(source, field_name=f"node {clean.node_id!r:.60}: ref_doc_id")
    # node_to_metadata_dict wrote "None" where there is no source, over any user key of the same name: without a
    # source, keep the user's own value (from the JSON, which holds the user's metadata as given) or nothing.
    user = json.loads(metadata[NODE_CONTENT_KEY]).get("metadata", {}) if source is None else {}
    for key in (REF_DOC_ID_KEY, *SOURCE_ID_COPIES):
        if source is not None:
            metadata[key] = source
        elif key in user:
            metadata[key] = user[key]
        else:
            metadata.pop(key, None)
    return clean.node_id, clean.get_content(metadata_mode=MetadataMode.NONE), metadata


def node_batch(nodes: Sequence[BaseNode]) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Ids, texts and metadata of a list of LlamaIndex nodes (only nodes: a LangChain ``Document`` is refused).

    Example:
        >>> from llama_index.core.schema import TextNode
        >>> node_batch([TextNode(id_="a", text="x")])[:2]
        (['a'], ['x'])
    """
    if isinstance(nodes, (str, bytes, BaseNode, Mapping)) or not isinstance(nodes, Sequence):
        msg = f"nodes must be a list of LlamaIndex nodes, not {type(nodes).__name__}"
        raise InvalidTypeError(msg)
    records = []
    for i, node in enumerate(nodes):
        if not isinstance(node, BaseNode):
            msg = f"nodes[{i}] must be a LlamaIndex node (TextNode, Document, ...), not {type(node).__name__}"
            raise InvalidTypeError(msg)
        records.append(node_record(node))
    return [r[0] for r in records], [r[1] for r in records], [r[2] for r in records]


def stored_node(node_id: str, text: str, metadata: Mapping[str, Any]) -> BaseNode | None:
    """The node a stored document was written from (LlamaIndex's ``metadata_dict_to_node``), or None if it was not
    written from a node or its ``_node_content`` cannot be read (it is user data: it never breaks a query).

    A ``Document`` (or ``ImageDocument``) comes back as one, where ``metadata_dict_to_node`` makes it a ``TextNode``:
    LlamaIndex hashes the two classes differently, and ``node.hash`` is to be the inserted node's.

    Example:
        >>> stored_node("a", "text", {"lang": "en"}) is None
        True
        >>> type(stored_node(*node_record(Document(id_="D1", text="whole", metadata={"k": 1})))).__name__
        'Document'
    """
    if NODE_CONTENT_KEY not in metadata:
        return None
    try:
        document = _DOCUMENTS.get(str(metadata.get(NODE_TYPE_KEY)))
        if document is None:
            node = metadata_dict_to_node(dict(metadata), text=text)
        else:
            node = document.from_json(str(metadata[NODE_CONTENT_KEY]))
            if text:  # Document(text="") has no text resource (set_content("") would add one: another hash)
                node.set_content(text)
    except Exception as exc:  # malformed JSON or node fields (user data): fall back to a plain TextNode
        logger.debug("rrf_retriever: document %r has an unreadable _node_content (%s)", node_id, exc)
        return None
    node.id_ = node_id  # the store's id is the truth (the JSON is metadata anyone may have written)
    return node


def _with_rrf(keys: Sequence[str]) -> list[str]:
    return [*keys, *(k for k in RRF_METADATA_KEYS if k not in keys)]


def to_node_with_score(hit: FusedHit) -> NodeWithScore:
    """A fused hit as a LlamaIndex ``NodeWithScore``: the node as it was inserted (relationships, excluded keys,
    templates) when it was written from one, else a ``TextNode``; rrf_* keys added, hidden from the LLM and the
    embedder, and left out of ``node.hash`` (:func:`~rrf_retriever.llama_index.result_nodes.stable_node`).

    Example:
        >>> from rrf_retriever.types import FusedHit
        >>> to_node_with_score(FusedHit("a", "text", {}, 0.5, {"keyword": 1}, {"keyword": 2.0})).node.node_id
        'a'
    """
    metadata = result_metadata(hit)
    node = stored_node(hit.id, hit.text, hit.metadata)
    if node is None:
        node = TextNode(
            id_=hit.id,
            text=hit.text,
            metadata=metadata,
            excluded_llm_metadata_keys=list(RRF_METADATA_KEYS),
            excluded_embed_metadata_keys=list(RRF_METADATA_KEYS),
        )
    else:
        node.metadata.update({k: v for k, v in metadata.items() if k in _RRF_KEYS})
        node.excluded_llm_metadata_keys = _with_rrf(node.excluded_llm_metadata_keys)
        node.excluded_embed_metadata_keys = _with_rrf(node.excluded_embed_metadata_keys)
    return NodeWithScore(node=stable_node(node), score=hit.score)
