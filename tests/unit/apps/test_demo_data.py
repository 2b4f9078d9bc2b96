"""The shipped demo data (``rrf_retriever/data``): well-formed, and its keyword claims hold on real FTS5.

The dense claims of ``demo_queries.json`` need MiniLM and are checked where the demo runs; here every
claim about the keyword leg is checked against a real SQLite FTS5 table built the way the keyword store
builds one (porter + unicode61 over the analyzer's normalised text, ``build_match_query``, ``ORDER BY rank``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from importlib.resources import files
from typing import Any

import pytest

from rrf_retriever.analysis.languages import normalize
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches
from rrf_retriever.stores.fts5.match import build_match_query

DATA = files("rrf_retriever").joinpath("data")
METADATA_KEYS = {"kind", "product_area", "version", "session_id"}
KINDS = {"doc", "ticket", "changelog", "faq"}
QUERY_KINDS = {"exact", "paraphrase", "hybrid", "filter"}
# How deep a leg's list goes in the demo's verification (top 20 per leg, then RRF).
LEG_DEPTH = 20


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    lines = DATA.joinpath("demo_corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def queries() -> list[dict[str, Any]]:
    return json.loads(DATA.joinpath("demo_queries.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def fts5(corpus: list[dict[str, Any]]) -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    con.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, session_id UNINDEXED, body, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    con.executemany(
        "INSERT INTO docs(doc_id, session_id, body) VALUES (?, ?, ?)",
        [(d["id"], d["metadata"]["session_id"], normalize(d["text"])) for d in corpus],
    )
    yield con
    con.close()


def keyword_ranking(
    con: sqlite3.Connection, query: str, session_ids: Sequence[int] | None = None
) -> list[str]:
    """Document ids in FTS5 bm25 order for ``query``, optionally restricted to some sessions before top-k."""
    match = build_match_query(query)
    if match is None:
        return []
    sql = "SELECT doc_id FROM docs WHERE docs MATCH ?"
    params: list[object] = [match]
    if session_ids is not None:
        sql += f" AND session_id IN ({', '.join('?' * len(session_ids))})"
        params.extend(session_ids)
    rows = con.execute(sql + " ORDER BY rank LIMIT ?", [*params, LEG_DEPTH]).fetchall()
    return [row[0] for row in rows]


def test_corpus_lines_are_well_formed(corpus: list[dict[str, Any]]) -> None:
    assert 150 <= len(corpus) <= 300
    for doc in corpus:
        assert set(doc) == {"id", "text", "metadata"}, doc.get("id")
        assert isinstance(doc["id"], str) and doc["id"] and doc["id"] == doc["id"].strip()
        assert isinstance(doc["text"], str)
        assert 30 <= len(doc["text"].split()) <= 120, doc["id"]
        meta = doc["metadata"]
        assert set(meta) == METADATA_KEYS, doc["id"]
        assert meta["kind"] in KINDS, doc["id"]
        assert isinstance(meta["product_area"], str) and meta["product_area"], doc["id"]
        assert isinstance(meta["version"], str), doc["id"]
        assert re.fullmatch(r"\d+\.\d+\.\d+(-[a-z]+\.\d+)?", meta["version"]), doc["id"]
        # bool is an int in Python, and the filter language keeps them apart: a session id is a real int.
        assert type(meta["session_id"]) is int and 1 <= meta["session_id"] <= 5, doc["id"]


def test_corpus_ids_are_unique_and_every_kind_and_session_is_present(corpus: list[dict[str, Any]]) -> None:
    ids = [doc["id"] for doc in corpus]
    assert len(ids) == len(set(ids))
    assert {doc["metadata"]["kind"] for doc in corpus} == KINDS
    assert {doc["metadata"]["session_id"] for doc in corpus} == {1, 2, 3, 4, 5}


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        ("error code", r"\bE\d{4}\b"),
        ("subsystem code", r"\b[A-Z]+-0x[0-9A-F]{2}\b"),
        ("version number", r"\bv\d+\.\d+\.\d+\b"),
        ("config key", r"\b[a-z0-9]+(?:_[a-z0-9]+){2,}\b"),
        ("CLI flag", r"\btw [a-z]+.* --[a-z][a-z-]+"),
    ],
)
def test_corpus_holds_the_exact_terms_a_keyword_leg_is_for(
    corpus: list[dict[str, Any]], what: str, pattern: str
) -> None:
    hits = sum(1 for doc in corpus if re.search(pattern, doc["text"]))
    assert hits >= 10, f"only {hits} documents contain a {what}"


def test_queries_are_well_formed_and_point_at_real_documents(
    queries: list[dict[str, Any]], corpus: list[dict[str, Any]]
) -> None:
    by_id: Mapping[str, dict[str, Any]] = {doc["id"]: doc for doc in corpus}
    assert 6 <= len(queries) <= 10
    for q in queries:
        assert {"query", "relevant", "why", "kind"} <= set(q)
        assert set(q) <= {"query", "relevant", "why", "kind", "filter", "keyword_weight"}
        assert isinstance(q["query"], str) and q["query"].strip()
        assert isinstance(q["why"], str) and q["why"].strip() and "\n" not in q["why"]
        assert q["kind"] in QUERY_KINDS
        assert q["relevant"] and len(set(q["relevant"])) == len(q["relevant"])
        for doc_id in q["relevant"]:
            assert doc_id in by_id, f"{q['query']!r}: unknown relevant id {doc_id!r}"
        if "filter" in q:
            scope = normalize_filter(q["filter"])
            assert scope is not None and set(q["filter"]) <= METADATA_KEYS
            for doc_id in q["relevant"]:
                assert matches(by_id[doc_id]["metadata"], scope), doc_id
    assert {q["kind"] for q in queries} == QUERY_KINDS
    assert any(q.get("keyword_weight") == 0 for q in queries), "no query shows what weight 0 does"


def test_each_exact_term_query_is_won_by_the_keyword_leg(
    queries: list[dict[str, Any]], fts5: sqlite3.Connection
) -> None:
    exact = [q for q in queries if q["kind"] == "exact"]
    assert len(exact) >= 2
    for q in exact:
        ranking = keyword_ranking(fts5, q["query"])
        assert ranking, q["query"]
        assert ranking[0] == q["relevant"][0], (q["query"], ranking[:5])


def test_each_paraphrase_answer_is_missed_by_the_keyword_leg(
    queries: list[dict[str, Any]], fts5: sqlite3.Connection
) -> None:
    paraphrases = [q for q in queries if q["kind"] == "paraphrase"]
    assert paraphrases
    for q in paraphrases:
        ranking = keyword_ranking(fts5, q["query"])
        assert not set(ranking) & set(q["relevant"]), (q["query"], ranking)


def test_hybrid_answers_are_in_the_keyword_leg_but_not_first(
    queries: list[dict[str, Any]], fts5: sqlite3.Connection
) -> None:
    for q in (q for q in queries if q["kind"] == "hybrid"):
        ranking = keyword_ranking(fts5, q["query"])
        assert q["relevant"][0] in ranking[1:], (q["query"], ranking[:10])


def test_the_session_filter_query_needs_its_filter(
    queries: list[dict[str, Any]], fts5: sqlite3.Connection
) -> None:
    filtered = [q for q in queries if q["kind"] == "filter"]
    assert filtered
    for q in filtered:
        sessions = q["filter"]["session_id"]
        sessions = sessions if isinstance(sessions, list) else [sessions]
        unfiltered = keyword_ranking(fts5, q["query"])
        scoped = keyword_ranking(fts5, q["query"], sessions)
        assert scoped[0] == q["relevant"][0], (q["query"], scoped[:5])
        assert unfiltered[0] != q["relevant"][0], (q["query"], unfiltered[:5])
