"""Names a package re-exports lazily (PEP 562): the module holding a name is imported on its first lookup, so
importing the package stays light. Used by ``rrf_retriever``, ``rrf_retriever.stores``, ``rrf_retriever.langchain``
and ``rrf_retriever.llama_index``.

Example:
    >>> namespace: dict[str, object] = {}
    >>> lazy_attribute("pkg", {"sqrt": "math"}, "sqrt", namespace)(4.0), "sqrt" in namespace
    (2.0, True)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(package: str, lazy: Mapping[str, str], name: str, namespace: MutableMapping[str, Any]) -> Any:
    """``name`` from the module ``lazy`` maps it to, cached in ``namespace`` (the package's globals).

    Raises:
        AttributeError: ``name`` is not one of the package's lazy names.
    """
    module = lazy.get(name)
    if module is None:
        msg = f"module {package!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value  # cache: the next lookup is a plain attribute
    return value
