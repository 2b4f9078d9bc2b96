"""The lazy re-exports of the four packages: a name loads its module once, an unknown name is AttributeError."""

from __future__ import annotations

import pytest

import rrf_retriever
import rrf_retriever.langchain
import rrf_retriever.llama_index
import rrf_retriever.stores
from rrf_retriever.lazy import lazy_attribute


@pytest.mark.parametrize("package", [rrf_retriever, rrf_retriever.stores, rrf_retriever.langchain,
                                     rrf_retriever.llama_index])
def test_every_exported_name_loads_and_an_unknown_one_is_an_attribute_error(package: object) -> None:
    for name in package.__all__:  # type: ignore[attr-defined]  # a module object's __all__
        assert getattr(package, name) == getattr(package, name)  # loads (__version__ is read each time)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = package.not_a_name  # type: ignore[attr-defined]  # the unknown name under test


def test_a_lazy_name_is_cached_in_the_namespace_and_not_looked_up_again() -> None:
    namespace: dict[str, object] = {}
    first = lazy_attribute("pkg", {"sqrt": "math"}, "sqrt", namespace)
    assert namespace == {"sqrt": first}
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'cos'"):
        lazy_attribute("pkg", {"sqrt": "math"}, "cos", namespace)
    assert namespace == {"sqrt": first}  # a failed lookup caches nothing
