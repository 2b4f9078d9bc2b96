"""What both framework edges make of our hits and their documents: result metadata, ids, reranker scores.

Framework-free: the LangChain side builds a ``Document`` and the LlamaIndex side a ``NodeWithScore`` from the same
:func:`result_metadata`, so both show the same keys.

The ``rrf_*`` keys say how ONE query scored a document; they are never stored (the prefix is refused on every write,
:data:`~rrf_retriever.validate.RESERVED_METADATA_PREFIX`). So what identifies a result is the rest
(:func:`identity_metadata`): both framework edges compare and hash their results on it, so the same stored document is
the same ``Document`` / has the same node ``hash`` whatever the query (what LangChain's ``MultiQueryRetriever`` and
LlamaIndex's ``QueryFusionRetriever`` deduplicate and fuse by).

Example:
    >>> from rrf_retriever.types import FusedHit
    >>> sorted(result_metadata(FusedHit("a", "text", {"lang": "en"}, 0.5, {"keyword": 1}, {"keyword": 2.0})))
    ['lang', 'rrf_ranks', 'rrf_relevance', 'rrf_score', 'rrf_score_normalized', 'rrf_scores']
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.metadata import public_metadata
from rrf_retriever.types import FusedHit
from rrf_retriever.validate import RESERVED_METADATA_PREFIX, check_list, check_str

__all__ = [
    "RRF_METADATA_KEYS",
    "check_id_key",
    "content_id",
    "content_ids",
    "document_list",
    "identity_metadata",
    "is_scoring_key",
    "reranker_score",
    "result_metadata",
]

#: Metadata keys this retriever adds to every result; excluded from LlamaIndex's LLM and embedding metadata.
RRF_METADATA_KEYS = (
    "rrf_score", "rrf_score_normalized", "rrf_relevance", "rrf_ranks", "rrf_scores", "rrf_expanded_from", "rrf_pinned",
    "rrf_rerank_score",
)


def result_metadata(hit: FusedHit) -> dict[str, Any]:
    """The user's metadata plus how the hit was scored (``rrf_score``, ``rrf_score_normalized``, ``rrf_relevance``,
    ``rrf_ranks``, ``rrf_scores``); LlamaIndex's
    bookkeeping keys of a node-written document hidden (:func:`~rrf_retriever.metadata.public_metadata`:
    ``ref_doc_id`` stays, ``_node_content`` goes)."""
    metadata = public_metadata(hit.metadata, hit.id)
    metadata["rrf_score"] = hit.score
    metadata["rrf_score_normalized"] = hit.normalized_score
    metadata["rrf_relevance"] = hit.relevance
    metadata["rrf_ranks"] = dict(hit.ranks)
    metadata["rrf_scores"] = dict(hit.scores)
    return metadata


def is_scoring_key(key: object) -> bool:
    """Whether a metadata key is one of this retriever's per-query keys (the ``rrf_`` prefix, never stored).

    Example:
        >>> is_scoring_key("rrf_ranks"), is_scoring_key("lang")
        (True, False)
    """
    return isinstance(key, str) and key.startswith(RESERVED_METADATA_PREFIX)


def identity_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A result's metadata without how the query scored it (the ``rrf_*`` keys), in its own order: the metadata
    the document was stored with, what equality and hashing of results use.

    Example:
        >>> identity_metadata({"lang": "en", "rrf_score": 0.03, "rrf_ranks": {"dense": 1}})
        {'lang': 'en'}
    """
    return {key: value for key, value in metadata.items() if not is_scoring_key(key)}


def check_id_key(id_key: object) -> str | None:
    """``id_key`` checked at the door: None or a metadata key name (not empty, not one of our ``rrf_`` keys).

    Example:
        >>> check_id_key("doc_id"), check_id_key(None)
        ('doc_id', None)
    """
    if id_key is None:
        return None
    key = check_str(id_key, "id_key")
    if not key or is_scoring_key(key):
        msg = (f"id_key must name a metadata key (e.g. 'doc_id'), not {key[:80]!r}: "
               f"keys starting with {RESERVED_METADATA_PREFIX!r} are the per-query scoring")
        raise InvalidArgumentError(msg)
    return key


def content_id(text: str) -> str:
    """A stable id from a text (for framework documents that carry none).

    Example:
        >>> content_id("x") == content_id("x") and len(content_id("x"))
        32
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def content_ids(texts: Sequence[str], metadatas: Sequence[Mapping[str, Any] | None] | None) -> list[str]:
    """Stable ids for documents given without ids: a hash of the text and the metadata, so re-running the same
    indexing script upserts instead of duplicating. A repeat within one batch gets the occurrence appended.

    Example:
        >>> a, b = content_ids(["x", "x"], None); a != b and content_ids(["x"], [{}])[0] == a
        True
    """
    metas = list(metadatas) if metadatas is not None and not isinstance(metadatas, (str, Mapping)) else []
    seen: dict[str, int] = {}
    out: list[str] = []
    for i, text in enumerate(texts):
        meta = metas[i] if i < len(metas) and metas[i] is not None else {}
        try:
            meta_json = json.dumps(meta, sort_keys=True, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):  # not JSON: validate_batch refuses the batch with its own message
            meta_json = repr(meta)
        base = content_id(f"{text}\x00{meta_json}" if isinstance(text, str) else repr(text))
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


def reranker_score(value: object, position: int, total: int) -> float:
    """The score a framework reranker gave a document: its own when it is a finite number, else one from the
    document's place in its answer (the first of ``total`` gets ``total``), so the order it chose is kept.

    Example:
        >>> reranker_score(0.25, 0, 3), reranker_score(None, 0, 3), reranker_score(float("nan"), 2, 3)
        (0.25, 3.0, 1.0)
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return float(total - position)


def document_list(documents: object) -> list[Any]:
    """The documents of a write as a list: one ``Document`` or node alone (not in a list) is refused, as are a
    string and a mapping (:func:`~rrf_retriever.validate.check_list`); each element is checked where it is read.

    Example:
        >>> document_list(iter([1, 2]))
        [1, 2]
    """
    if hasattr(documents, "page_content") or hasattr(documents, "node_id"):  # a LangChain Document, a node
        msg = f"documents must be a list of documents, not one {type(documents).__name__}"
        raise InvalidTypeError(msg)
    return check_list(documents, "documents", "documents")


def texts_and_ids(
    texts: Sequence[str], ids: Sequence[str] | None, metadatas: Sequence[Mapping[str, Any] | None] | None
) -> tuple[list[str], list[str]]:
    """The texts of a write as a list and their ids: the ones given, else :func:`content_ids` (a single string,
    bytes or a mapping for either is refused: :func:`~rrf_retriever.validate.check_list`; so are ``metadatas`` that
    are no list, which the ids are derived from).

    Example:
        >>> texts_and_ids(["a"], ["x"], None)
        (['a'], ['x'])
    """
    text_list = check_list(texts, "texts", "strings")
    if ids is not None:
        return text_list, check_list(ids, "ids", "ids")
    metas = None if metadatas is None else check_list(metadatas, "metadatas", "metadata mappings")
    return text_list, content_ids(text_list, metas)
