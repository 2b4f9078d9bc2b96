"""The reranker stage's contract: what the engine accepts as a reranker, and how it calls one.

The engine knows two shapes, nothing of any framework:

* a plain callable ``(query: str, texts: list[str]) -> Sequence[float]``: one finite score per text, higher is
  better (a cross-encoder's ``predict`` over ``(query, text)`` pairs, an API call, ...). The engine sorts the
  candidates by it (ties keep the fused order); it cannot drop a candidate.
* an object with ``rerank_hits(query: str, hits: Sequence[FusedHit]) -> Sequence[tuple[str, float]]``
  (:class:`HitReranker`): the ids it keeps, best first, with a score each; an id it leaves out is dropped.
  LangChain ``BaseDocumentCompressor`` s and LlamaIndex ``BaseNodePostprocessor`` s become one of these at the edge
  (:class:`rrf_retriever.langchain.CompressorReranker`, :class:`rrf_retriever.llama_index.PostprocessorReranker`).

Example:
    >>> from rrf_retriever.types import FusedHit
    >>> hits = [FusedHit("a", "short", {}, 0.2, {}, {}), FusedHit("b", "a longer text", {}, 0.1, {}, {})]
    >>> call_reranker(lambda q, texts: [len(t) for t in texts], "q", hits)
    [('b', 13.0), ('a', 5.0)]
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.types import FusedHit

__all__ = ["DEFAULT_MIN_RERANK_K", "HitReranker", "Named", "ScoreReranker", "call_reranker", "check_reranker",
           "default_rerank_k", "reranker_name"]

#: A plain reranker: ``(query, texts) -> one score per text`` (higher is better).
ScoreReranker = Callable[[str, list[str]], Sequence[float]]
#: ``rerank_k`` when none is given is ``max(2 * top_k, DEFAULT_MIN_RERANK_K)``: enough headroom for a reranker to
#: lift a document from below the first page, without paying it on the whole fetched pool.
DEFAULT_MIN_RERANK_K = 20


@runtime_checkable
class HitReranker(Protocol):
    """A reranker that sees the candidates whole: returns ``[(id, score), ...]`` best first; ids left out are
    dropped."""

    def rerank_hits(self, query: str, hits: Sequence[FusedHit]) -> Sequence[tuple[str, float]]: ...


@runtime_checkable
class Named(Protocol):
    """A reranker that names itself (``name``): settings views and logs show that name."""

    name: str


def check_reranker(reranker: object) -> Any:
    """``reranker`` if the engine can call it (None passes), else our error naming the accepted shapes.

    Example:
        >>> check_reranker(None) is None
        True
    """
    if reranker is None or isinstance(reranker, HitReranker) or callable(reranker):
        return reranker
    msg = (
        f"reranker must be a callable (query, texts) -> scores or an object with rerank_hits(query, hits), not "
        f"{type(reranker).__name__}; a LangChain BaseDocumentCompressor or a LlamaIndex BaseNodePostprocessor is "
        "accepted by the retriever, or wrap it in rrf_retriever.langchain.CompressorReranker / "
        "rrf_retriever.llama_index.PostprocessorReranker"
    )
    raise InvalidTypeError(msg)


def reranker_name(reranker: object) -> str | None:
    """A JSON-able name for a reranker (settings views and logs): its own ``name`` (:class:`Named`), else
    ``module:qualname`` of it (a function, method or class) or of its class.

    Example:
        >>> reranker_name(len), reranker_name(None)
        ('builtins:len', None)
    """
    if reranker is None:
        return None
    if isinstance(reranker, Named) and isinstance(reranker.name, str) and reranker.name:
        return reranker.name
    target: Any = reranker if inspect.isroutine(reranker) or inspect.isclass(reranker) else type(reranker)
    return f"{target.__module__}:{target.__qualname__}"


def default_rerank_k(top_k: int, rerank_k: int | None) -> int:
    """The number of candidates the reranker sees: ``rerank_k``, else ``max(2 * top_k, 20)``.

    Example:
        >>> default_rerank_k(5, None), default_rerank_k(50, None), default_rerank_k(5, 7)
        (20, 100, 7)
    """
    return rerank_k if rerank_k is not None else max(2 * top_k, DEFAULT_MIN_RERANK_K)


def call_reranker(reranker: Any, query: str, hits: Sequence[FusedHit]) -> list[tuple[str, float]]:
    """Run ``reranker`` over ``hits``: ``[(id, score), ...]`` best first (ids it drops are absent).

    A plain callable's scores are sorted (stable: ties keep the fused order). A :class:`HitReranker`'s order is
    kept as it gave it; ids that are not candidates, and repeats, are ignored.

    Raises:
        InvalidArgumentError: the reranker answered something unusable (a count that differs from the texts', a
            score that is not a finite number). Whatever the reranker itself raises propagates.
    """
    if isinstance(reranker, HitReranker):
        wanted = {h.id for h in hits}
        seen: set[str] = set()
        out: list[tuple[str, float]] = []
        for item in reranker.rerank_hits(query, list(hits)):
            doc_id, score = item
            if doc_id in wanted and doc_id not in seen:
                seen.add(doc_id)
                out.append((doc_id, _score(score)))
        return out
    scores = list(reranker(query, [h.text for h in hits]))
    if len(scores) != len(hits):
        msg = f"the reranker returned {len(scores)} score(s) for {len(hits)} text(s)"
        raise InvalidArgumentError(msg)
    values = [_score(s) for s in scores]
    order = sorted(range(len(hits)), key=lambda i: -values[i])
    return [(hits[i].id, values[i]) for i in order]


def _score(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]  # any object a reranker returns; TypeError caught
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        msg = f"the reranker returned a score that is not a finite number: {value!r}"
        raise InvalidArgumentError(msg)
    return number
