"""The reranker the command line and the service run, named by an import path (``--reranker module:attribute``).

The apps use the engine without a framework, so they take what the engine takes
(:mod:`rrf_retriever.engine.rerank`): a callable ``(query, texts) -> scores`` or an object with ``rerank_hits``.
A LangChain compressor or a LlamaIndex postprocessor is named through its wrapper, e.g. a module holding
``reranker = CompressorReranker(CohereRerank())`` (:class:`rrf_retriever.langchain.CompressorReranker`,
:class:`rrf_retriever.llama_index.PostprocessorReranker`).

Example:
    >>> load_reranker("builtins:len") is len
    True
"""

from __future__ import annotations

import importlib
from typing import Any

from rrf_retriever.engine.rerank import check_reranker
from rrf_retriever.errors import InvalidArgumentError

__all__ = ["load_reranker"]


def load_reranker(path: str) -> Any:
    """A reranker named by an import path ``module:attribute`` (the CLI's ``--reranker``, the service's
    ``serve --reranker``): the attribute is the reranker, or a class built with no arguments.

    Raises:
        InvalidArgumentError: not ``module:attribute``, or the module or attribute does not exist.
        InvalidTypeError: what it names is not a reranker the engine can call.

    Example:
        >>> load_reranker("no_colon")
        Traceback (most recent call last):
        ...
        rrf_retriever.errors.InvalidArgumentError: a reranker is given as module:attribute ... got 'no_colon'
    """
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        msg = f"a reranker is given as module:attribute (e.g. mypkg.rerank:score), got {path!r}"
        raise InvalidArgumentError(msg)
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        msg = f"cannot load the reranker {path!r}: {type(exc).__name__}: {exc}"
        raise InvalidArgumentError(msg) from None
    if isinstance(target, type):
        target = target()
    return check_reranker(target)
