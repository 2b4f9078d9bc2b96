"""LlamaIndex's ``FilterOperator.TEXT_MATCH`` / ``TEXT_MATCH_INSENSITIVE`` through our retriever give the nodes
LlamaIndex's own ``SimpleVectorStore`` gives on the same nodes (the reference: its ``value in metadata_value`` and
``value.lower() in metadata_value.lower()``), in every stack (FTS5 + Qdrant local mode, BM25 + qdrant-edge, one
Qdrant local-mode collection for both legs), for needles drawn from the stored strings (case changed, unicode,
``%``, ``_``, quotes, backslashes: what a SQL ``LIKE`` would misread) and random ones.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import HashingEmbedding

STACKS = {"fts5+qdrant": ("fts5", "qdrant"), "bm25+edge": ("bm25", "qdrant-edge"), "qdrant-joint": ("qdrant", "qdrant")}
_CHARS = "aAbBzZ%_'\"\\ -.\u00e9\u00c9\u0130i\u0131I\u00df\u1e9e\u03a3\u03c3\u03c2\u2126\u03c9\U0001f600"
_RNG = random.Random(11)
SIZE = 40


def _value(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 7)))


#: Node id -> its metadata: "s" a string (or missing: LlamaIndex raises on a non-string value), "lang" for AND.
CORPUS = {f"n{i}": ({"s": _value(_RNG)} if i % 7 else {}) | {"lang": _RNG.choice(["en", "fr"])} for i in range(SIZE)}
EMBEDDING = HashingEmbedding(32)


@pytest.fixture(scope="module")
def reference() -> SimpleVectorStore:
    store = SimpleVectorStore()
    store.add([TextNode(id_=i, text=f"alpha {i}", metadata=m, embedding=EMBEDDING.embed_query(f"alpha {i}"))
               for i, m in CORPUS.items()])
    return store


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, EnsembleRRFRetriever]]:
    made = {}
    for name, (keyword, dense) in STACKS.items():
        retriever = EnsembleRRFRetriever.from_texts([], EMBEDDING, keyword=keyword, dense=dense, top_k=SIZE)
        retriever.insert_nodes([TextNode(id_=i, text=f"alpha {i}", metadata=m) for i, m in CORPUS.items()])
        made[name] = retriever
    yield made
    for retriever in made.values():
        retriever.close()


def _reference_ids(store: SimpleVectorStore, filters: MetadataFilters) -> list[str]:
    query = VectorStoreQuery(query_embedding=EMBEDDING.embed_query("alpha"), similarity_top_k=SIZE, filters=filters)
    return sorted(store.query(query).ids or [])


def _check(reference: SimpleVectorStore, ours: dict[str, EnsembleRRFRetriever], filters: MetadataFilters) -> None:
    want = _reference_ids(reference, filters)
    for name, retriever in ours.items():
        got = sorted(n.node.node_id for n in retriever.scoped(filter=filters).retrieve("alpha"))
        assert got == want, (name, filters)
        assert sorted(d.id for d in retriever.invoke("alpha", filter=filters)) == want, name


_STORED = [m["s"] for m in CORPUS.values() if "s" in m]


@st.composite
def _needles(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)):
        text = draw(st.sampled_from(_STORED))
        i = draw(st.integers(0, len(text)))
        text = text[i:draw(st.integers(i, len(text)))]
        return draw(st.sampled_from([text, text.upper(), text.lower(), text.swapcase()]))
    return draw(st.text(st.sampled_from(list(_CHARS)), max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(needle=_needles(), insensitive=st.booleans(), with_lang=st.booleans(), negated=st.booleans())
def test_text_match_gives_what_simple_vector_store_gives(
    reference: SimpleVectorStore, ours: dict[str, EnsembleRRFRetriever], needle: str, insensitive: bool,
    with_lang: bool, negated: bool,
) -> None:
    op = FilterOperator.TEXT_MATCH_INSENSITIVE if insensitive else FilterOperator.TEXT_MATCH
    parts: list[Any] = [MetadataFilter(key="s", value=needle, operator=op)]
    if with_lang:
        parts.append(MetadataFilter(key="lang", value="en"))
    condition = FilterCondition.NOT if negated else FilterCondition.AND
    _check(reference, ours, MetadataFilters(filters=parts, condition=condition))


@pytest.mark.parametrize(("needle", "op"), [
    ("%", FilterOperator.TEXT_MATCH), ("_", FilterOperator.TEXT_MATCH), ("'", FilterOperator.TEXT_MATCH),
    ("\\", FilterOperator.TEXT_MATCH), ("", FilterOperator.TEXT_MATCH), ("\u0130", FilterOperator.TEXT_MATCH_INSENSITIVE),
    ("SS", FilterOperator.TEXT_MATCH_INSENSITIVE), ("\u03c3", FilterOperator.TEXT_MATCH_INSENSITIVE),
])
def test_the_characters_sql_like_would_misread_match_as_themselves(
    reference: SimpleVectorStore, ours: dict[str, EnsembleRRFRetriever], needle: str, op: FilterOperator
) -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="s", value=needle, operator=op)])
    _check(reference, ours, filters)
