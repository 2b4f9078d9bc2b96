"""Every docstring example in the package runs and shows what it says (the examples are documentation users copy)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rrf_retriever

# Every module, the apps and framework edges included (`make install-test` installs what they import).
MODULES = sorted(info.name for info in pkgutil.walk_packages(rrf_retriever.__path__, "rrf_retriever."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
