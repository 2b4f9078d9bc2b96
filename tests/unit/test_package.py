"""Packaging promises: a light import, lazy re-exports, a version, py.typed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import rrf_retriever

HEAVY = ("langchain", "langchain_core", "llama_index", "qdrant_client", "qdrant_edge", "numpy", "onnxruntime",
         "bm25s", "rank_bm25", "ranx", "fastapi", "typer", "pydantic")


def _modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_import_rrf_retriever_pulls_no_framework_and_no_qdrant() -> None:
    assert _heavy(_modules_after("import rrf_retriever")) == []


def test_the_engine_imports_without_frameworks() -> None:
    """The CLI and the service use the engine directly: it must not drag LangChain, LlamaIndex or Qdrant in."""
    assert _heavy(_modules_after("import rrf_retriever.engine")) == []


def test_fusion_and_text_stay_light() -> None:
    code = "from rrf_retriever import weighted_rrf, Analyzer, build_match_query, Hit"
    assert _heavy(_modules_after(code)) == []


def test_lazy_names_resolve_and_unknown_names_raise_attribute_error() -> None:
    from rrf_retriever.fusion import weighted_rrf

    assert rrf_retriever.weighted_rrf is weighted_rrf
    with pytest.raises(AttributeError):
        rrf_retriever.does_not_exist  # noqa: B018
    assert "EnsembleRRFRetriever" in dir(rrf_retriever)


def test_version_comes_from_package_metadata() -> None:
    from importlib.metadata import version

    assert rrf_retriever.__version__ == version("rrf-retriever")


def test_py_typed_marker_is_shipped() -> None:
    assert (Path(rrf_retriever.__file__).parent / "py.typed").is_file()


def test_every_lazy_name_exists_in_its_module() -> None:
    import importlib

    for name, module in rrf_retriever._LAZY.items():
        assert hasattr(importlib.import_module(module), name), f"{module} has no {name}"
        assert getattr(rrf_retriever, name) is getattr(importlib.import_module(module), name)
