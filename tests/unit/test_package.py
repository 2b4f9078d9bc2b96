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


def test_the_cli_starts_without_the_tuner() -> None:
    """``rrf-retriever search`` pays for no command it does not run: the tuner loads with ``tune``."""
    modules = _modules_after("import rrf_retriever.apps.cli")
    assert [m for m in modules if m.startswith("rrf_retriever.tuning")] == []
    assert "rrf_retriever.apps.tune_command" in modules  # the command is registered, its imports wait for it


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


def test_every_exported_name_is_the_object_its_home_module_defines() -> None:
    import importlib

    for name in (n for n in rrf_retriever.__all__ if n != "__version__"):
        obj = getattr(rrf_retriever, name)
        home = importlib.import_module(obj.__module__)
        assert getattr(home, obj.__name__) is obj, f"rrf_retriever.{name} is not {obj.__module__}.{obj.__name__}"


#: What the retriever class never needs at import: store backends, model runtimes, apps, the vector stores.
NOT_FOR_THE_RETRIEVER = ("qdrant_client", "qdrant_edge", "onnxruntime", "tokenizers", "bm25s", "rank_bm25", "ranx",
                         "fastapi", "typer", "rich", "Stemmer")  # tqdm: LlamaIndex imports it itself


def test_the_retriever_class_pulls_its_frameworks_base_classes_and_nothing_heavy_besides() -> None:
    modules = _modules_after("from rrf_retriever import EnsembleRRFRetriever")
    assert [m for m in modules if m.split(".")[0] in NOT_FOR_THE_RETRIEVER] == []
    ours = {"rrf_retriever.langchain.vectorstore", "rrf_retriever.langchain.structured_query",
            "rrf_retriever.llama_index.vector_store", "rrf_retriever.apps", "rrf_retriever.tuning"}
    assert ours.isdisjoint(modules)  # loaded on first use of their names (the framework packages are lazy)
    assert {"langchain_core", "llama_index.core"} <= set(modules)  # the dual class subclasses both


@pytest.mark.parametrize(("code", "other"), [
    ("from rrf_retriever.langchain import LangChainRRFRetriever", "llama_index"),
    ("from rrf_retriever.llama_index import LlamaIndexRRFRetriever", "langchain_core"),
])
def test_one_frameworks_retriever_does_not_import_the_other_framework(code: str, other: str) -> None:
    assert [m for m in _modules_after(code) if m.split(".")[0] == other] == []


def test_the_framework_packages_resolve_their_names_lazily() -> None:
    code = "import rrf_retriever.langchain as lc, rrf_retriever.llama_index as li"
    modules = _modules_after(code)
    assert "rrf_retriever.langchain.vectorstore" not in modules
    assert "rrf_retriever.llama_index.vector_store" not in modules
    import rrf_retriever.langchain as lc
    from rrf_retriever.langchain.vectorstore import RRFVectorStore

    assert lc.RRFVectorStore is RRFVectorStore
    with pytest.raises(AttributeError):
        lc.does_not_exist  # noqa: B018
