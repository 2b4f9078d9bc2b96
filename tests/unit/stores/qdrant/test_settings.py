"""The public Qdrant store classes take their settings as keyword groups (rrf_retriever/stores/qdrant/settings.py):
every keyword users call keeps its name and default, reaches the store, and an unknown one is a TypeError."""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from pathlib import Path
from typing import Any

import pytest

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.errors import InvalidArgumentError, InvalidTypeError
from rrf_retriever.stores import qdrant
from rrf_retriever.stores.qdrant.backend_client import ClientConnection, ClientOptions
from rrf_retriever.stores.qdrant.bm25_params import Bm25Options, Bm25Settings
from rrf_retriever.stores.qdrant.edge_stores import EdgeSearch, EdgeSearchOptions
from rrf_retriever.stores.qdrant.settings import StoreOptions, StoreSettings

# The keywords and defaults users call (README, the classes' docstrings), written out here, not read from the code.
CLIENT = {"client": None, "location": ":memory:", "path": None, "url": None, "api_key": None,
          "collection_name": "rrf_retriever", "async_client": None}
BM25 = {"analyzer": None, "k1": None, "b": None, "avgdl": None, "title_weight": None, "live_idf": True,
        "auto_reweight": True, "k3": math.inf, "short_query_terms": 20}
STORE = {"batch_size": 256, "index_keys": (), "max_auto_indexes": 8}
WINDOWS = {"max_windows": None, "window_overlap": None}
EDGE_SEARCH = {"exact": False, "hnsw_ef": None}
CLUSTER = {"shard_number": None, "replication_factor": None, "write_consistency_factor": None}
EXPECTED: dict[type, tuple[list[str], dict[str, Any]]] = {
    qdrant.QdrantDenseStore: (["embedding"], {**CLIENT, **STORE, **WINDOWS}),
    qdrant.QdrantKeywordStore: ([], {**CLIENT, "collection_name": "rrf_retriever_keyword", **BM25, **STORE}),
    qdrant.QdrantHybridStore: (["embedding"], {**CLIENT, **CLUSTER, **BM25, **STORE}),
    qdrant.QdrantEdgeDenseStore: (["embedding", "path"], {**EDGE_SEARCH, **STORE, **WINDOWS, "index": None,
                                                          "auto_optimize": True, "graph_points": 100_000}),
    qdrant.QdrantEdgeKeywordStore: (["path"], {**BM25, **STORE}),
    qdrant.QdrantEdgeHybridStore: (["embedding", "path"], {**EDGE_SEARCH, **BM25, **STORE}),
}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_each_class_shows_every_keyword_with_its_default(cls: type) -> None:
    positional, keywords = EXPECTED[cls]
    params = inspect.signature(cls).parameters
    assert [n for n, p in params.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD] == positional
    shown = {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert shown == keywords


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_an_unknown_keyword_is_a_type_error_naming_the_class(cls: type) -> None:
    args = [HashingEmbedding(dim=8)] if "embedding" in EXPECTED[cls][0] else []
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected keyword argument 'k_1'$"):
        cls(*args, k_1=1.2)


def test_the_defaults_reach_the_store() -> None:
    with qdrant.QdrantKeywordStore() as store:
        assert store.collection_name == "rrf_retriever_keyword"
        assert (store.k1, store.b, store.k3, store.short_query_terms, store.live_idf) == (1.2, 0.75, math.inf, 20, True)
        assert (store.batch_size, store.index_keys, store.max_auto_indexes) == (256, frozenset(), 8)
    with qdrant.QdrantHybridStore(HashingEmbedding(dim=8)) as hybrid:
        assert hybrid.collection_name == "rrf_retriever" and hybrid.auto_reweight


def test_every_group_of_keywords_reaches_an_edge_hybrid_store(tmp_path: Path) -> None:
    with qdrant.QdrantEdgeHybridStore(HashingEmbedding(dim=8), tmp_path / "h", exact=True, hnsw_ef=40, k1=1.5,
                                      title_weight=0, short_query_terms=0, batch_size=7, index_keys=["lang"],
                                      max_auto_indexes=2) as store:
        assert (store.exact, store.hnsw_ef, store.k1, store.title_weight, store.short_query_terms) == (
            True, 40, 1.5, 0.0, 0)
        assert (store.batch_size, store.index_keys, store.max_auto_indexes) == (7, frozenset({"lang"}), 2)
        assert store.path == tmp_path / "h"


def test_a_bad_setting_raises_before_the_directory_is_made(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        qdrant.QdrantEdgeKeywordStore(tmp_path / "k", batch_size=0)
    with pytest.raises(InvalidTypeError, match="analyzer"):
        qdrant.QdrantEdgeHybridStore(HashingEmbedding(dim=8), tmp_path / "h", analyzer="porter")  # type: ignore[arg-type]
    assert not (tmp_path / "k").exists() and not (tmp_path / "h").exists()


def test_settings_are_frozen_and_checked_once_built() -> None:
    settings = StoreSettings(index_keys=["b", "a"])
    assert settings.index_keys == ("a", "b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.batch_size = 1  # type: ignore[misc]
    assert Bm25Settings(k1=2, b=1).k1 == 2.0 and isinstance(Bm25Settings(k1=2).k1, float)
    with pytest.raises(InvalidArgumentError, match="k1"):
        Bm25Settings(k1=-1.0)
    with pytest.raises(InvalidArgumentError, match="max_auto_indexes"):
        StoreSettings(max_auto_indexes=1001)


@pytest.mark.parametrize("value", [3, None, b"lang", {"lang": 1}], ids=["int", "None", "bytes", "mapping"])
def test_index_keys_that_are_not_a_list_of_keys_are_our_type_error(value: Any) -> None:
    # bytes would iterate as byte values and a mapping as its keys; an int or None is not iterable at all.
    with pytest.raises(InvalidTypeError, match=r"^index_keys must be a list of metadata keys"):
        StoreSettings(index_keys=value)
    with pytest.raises(InvalidTypeError, match="index_keys"):
        qdrant.QdrantKeywordStore(index_keys=value)


def test_one_index_key_as_a_str_is_that_key_not_its_characters() -> None:
    assert StoreSettings(index_keys="lang").index_keys == ("lang",)
    assert StoreSettings(index_keys=iter(["b", "a", "b"])).index_keys == ("a", "b")
    with qdrant.QdrantKeywordStore(index_keys="lang") as store:
        assert store.index_keys == frozenset({"lang"})


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"batch_size": True}, InvalidTypeError), ({"batch_size": "64"}, InvalidTypeError),
     ({"batch_size": 2.0}, InvalidTypeError), ({"batch_size": -1}, InvalidArgumentError),
     ({"max_auto_indexes": -1}, InvalidArgumentError), ({"max_auto_indexes": False}, InvalidTypeError)],
    ids=str,
)
def test_a_hostile_number_is_refused_by_name_as_every_layer_refuses_it(kwargs: dict[str, Any], error: type) -> None:
    # The same errors as RRFVectorStore's batch_size (validate.check_int): a bool is not a count.
    (name,) = kwargs
    with pytest.raises(error, match=name):
        qdrant.QdrantKeywordStore(**kwargs)
    with pytest.raises(error, match=name):
        qdrant.QdrantDenseStore(HashingEmbedding(dim=8), **kwargs)


@pytest.mark.parametrize(("value", "error"), [("64", InvalidTypeError), (True, InvalidTypeError),
                                               (-1, InvalidArgumentError)], ids=str)
def test_a_bad_hnsw_ef_is_refused_when_given_not_at_each_search(tmp_path: Path, value: Any, error: type) -> None:
    # qdrant-edge took these and failed every later search with a StoreError (or read True as 1).
    with pytest.raises(error, match="hnsw_ef"):
        qdrant.QdrantEdgeDenseStore(HashingEmbedding(dim=8), tmp_path / "d", hnsw_ef=value)
    with pytest.raises(error, match="hnsw_ef"):
        qdrant.QdrantEdgeHybridStore(HashingEmbedding(dim=8), tmp_path / "h", hnsw_ef=value)
    assert not (tmp_path / "d").exists() and not (tmp_path / "h").exists()
    with qdrant.QdrantEdgeDenseStore(HashingEmbedding(dim=8), tmp_path / "d", hnsw_ef=64) as store:
        with pytest.raises(error, match="hnsw_ef"):
            store.hnsw_ef = value
        assert store.hnsw_ef == 64
        store.hnsw_ef = None
        assert store.hnsw_ef is None


@pytest.mark.parametrize(
    ("group", "keywords"),
    [(StoreSettings, StoreOptions), (Bm25Settings, Bm25Options), (ClientConnection, ClientOptions),
     (EdgeSearch, EdgeSearchOptions)],
    ids=lambda c: c.__name__,
)
def test_each_keywords_typeddict_is_its_settings_group_field_for_field(group: type, keywords: type) -> None:
    # The TypedDict restates the dataclass for type checkers; a field added to one only would be shown by
    # help() yet refused by mypy (or the reverse), so the two are held equal: names, types, all optional.
    assert typing.get_type_hints(keywords) == typing.get_type_hints(group)
    assert keywords.__optional_keys__ == frozenset(f.name for f in dataclasses.fields(group))  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kwargs", "error"), [({"location": 5}, InvalidTypeError), ({"url": b"http://q"}, InvalidTypeError),
                                               ({"api_key": 1}, InvalidTypeError), ({"path": 3}, InvalidTypeError),
                                               ({"collection_name": ""}, InvalidArgumentError)], ids=str)
def test_a_hostile_connection_is_refused_by_name_before_a_client_opens(kwargs: dict[str, Any], error: type) -> None:
    # location=5 reached QdrantClient and came back as "StoreError: opening Qdrant (5) failed: AttributeError".
    (name,) = kwargs
    with pytest.raises(error, match=name):
        ClientConnection(**kwargs)
    with pytest.raises(error, match=name):
        qdrant.QdrantHybridStore(HashingEmbedding(dim=8), **kwargs)
