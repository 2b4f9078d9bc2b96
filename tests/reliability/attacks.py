"""The attacks of "Trust, round 4", as one workload the tests run small and the soak runs long.

Each attack goes through the public API only (the library, both VectorStores, the CLI, and the HTTP service of
``rrf_retriever.apps.service.create_app`` over starlette's TestClient) with fresh random input each round, and
counts a problem whenever the silent wrong answer or the stall of the issue happens: a foreign exception where our
error is promised, a store changed by a refused call, an answer that differs from an exact reference, an answer
where a refusal is promised. No timing is asserted; the seconds of the slow-looking calls are figures only.

The attacks (``ATTACKS``; the number of the issue's item in brackets):

* ``string_ids`` (1): a string where a list of ids or texts belongs, on both VectorStores and the retriever;
* ``language`` (2): code, logs, JSON, CSV and short English sentences are English; real paragraphs are theirs;
* ``duplicate_keys`` (3): a JSON body with a repeated key at a random depth is a 422 on every JSON route;
* ``bad_last_vector`` (4): a batch larger than ``ADD_CHUNK`` whose vector in the last chunk is bad writes nothing;
* ``node_hash`` (5): a LlamaIndex Document / TextNode comes back with its hash and class;
* ``dense_paths`` (6): thousands of ``dense_paths`` are refused (422 / our error);
* ``int_filter`` (7): 8 keys x 10,000 integers: refused by the filter budget, or answered exactly;
* ``links`` (8): a document linking 70,000 ids: refused at write, or expanded exactly;
* ``long_query`` (9): a query of 1-10 MB is refused by every search door;
* ``node_ids`` (10): ``VectorStoreQuery(node_ids=[120,000 ids])`` answers as the stored ones alone do;
* ``symlink`` (11): ``rrf-retriever index FOLDER`` never follows a link out of the folder;
* ``wrong_types`` (12): wrong-typed arguments to the VectorStores' methods: our errors, nothing changed;
* ``dialects`` (13): Qdrant / Elasticsearch / Weaviate / Milvus filters are refused by name, a key named like
  their words is still a field.

``PENDING`` holds the attacks whose fix has not reached this branch yet: ``run_attacks`` skips them unless asked.

Example:
    >>> report = run_attacks(rounds=1, seed=0)  # doctest: +SKIP
    >>> report["problems"]  # doctest: +SKIP
    []
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import string
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from rrf_retriever import EnsembleRRFRetriever, HashingEmbedding, InvalidArgumentError, InvalidFilterError
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches

__all__ = ["ATTACKS", "PENDING", "run_attacks"]

DIM = 8
WORDS = "token deploy backup restore vector index session memory note agent cache queue".split()
ATTACKS = ("string_ids", "language", "duplicate_keys", "bad_last_vector", "node_hash", "dense_paths", "int_filter",
           "links", "long_query", "node_ids", "symlink", "wrong_types", "dialects")
#: Attacks whose fix is not on this branch yet (skipped by default; emptied as the fixes landed).
PENDING: frozenset[str] = frozenset()

Problems = list[str]
#: What the attacks that may either refuse or answer exactly did ("int_filter:refused", "links:answered", ...).
OUTCOMES: Counter[str] = Counter()


def _text(rng: random.Random, n: int | None = None) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n or rng.randint(3, 8)))


def _word(rng: random.Random, size: int = 6) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(size))


def _refused(problems: Problems, what: str, call: Callable[[], Any],
             error: type[BaseException] = RRFRetrieverError) -> BaseException | None:
    """Run ``call``; its error if it raised ``error``, else note the answer or the foreign exception."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except error as exc:
        return exc
    except RRFRetrieverError as exc:
        problems.append(f"{what}: our {type(exc).__name__} where {error.__name__} is promised: {str(exc)[:160]}")
        return None
    except Exception as exc:
        problems.append(f"{what}: a foreign {type(exc).__name__}: {str(exc)[:160]}")
        return None
    problems.append(f"{what}: answered ({repr(result)[:120]}) where a refusal is promised")
    return None


def _retriever(rng: random.Random, ids: list[str], **kwargs: Any) -> Any:
    texts = [_text(rng) for _ in ids]
    return EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(DIM), ids=ids, analyzer="english", **kwargs)


def _present(engine: Any, ids: list[str]) -> list[str]:
    return sorted(r.id for r in engine.get(ids))


def _snapshot(engine: Any, ids: list[str]) -> tuple[list[str], dict[str, int]]:
    """What a refused call must leave as it was: which of ``ids`` are stored, and the count of every store."""
    return _present(engine, ids), engine.count()


def _unchanged(problems: Problems, what: str, engine: Any, ids: list[str],
               before: tuple[list[str], dict[str, int]]) -> None:
    after = _snapshot(engine, ids)
    if after != before:
        problems.append(f"{what}: the store changed: {after[0]} of {before[0]} stored, count {after[1]} (was "
                        f"{before[1]})")


def _client(engine: Any) -> Any:
    from starlette.testclient import TestClient

    from rrf_retriever.apps.service import create_app

    return TestClient(create_app(engine, allowed_hosts=["testserver"]))


def _llama_store(**kwargs: Any) -> Any:
    from rrf_retriever.llama_index import RRFVectorStore

    return RRFVectorStore(analyzer="english", **kwargs)


def _nodes(rng: random.Random, ids: list[str], cls: Any = None) -> list[Any]:
    from llama_index.core.schema import TextNode

    emb = HashingEmbedding(DIM)
    out = []
    for i in ids:
        text = _text(rng)
        out.append((cls or TextNode)(id_=i, text=text, embedding=emb.embed_query(text),
                                     metadata={"n": rng.randrange(5)}))
    return out


# ---- 1: a string where ids are expected ---------------------------------------------------------------------------


def _check_string_ids(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from rrf_retriever.langchain import RRFVectorStore as LangChainStore

    a, b = str(rng.randrange(1, 10)), str(rng.randrange(10))
    joined = a + b if a != b else a + b + a
    ids = sorted({a, b, joined} | {str(rng.randrange(100, 999)) for _ in range(3)})
    checked = 0
    lc: Any = LangChainStore(HashingEmbedding(DIM), analyzer="english")  # Any: it is called with wrong types
    lc.add_texts([_text(rng) for _ in ids], ids=ids)
    calls: list[tuple[str, Callable[[], Any]]] = [
        (f"LangChain delete({joined!r})", lambda: lc.delete(joined)),
        (f"LangChain adelete({joined!r})", lambda: asyncio.run(lc.adelete(joined))),
        (f"LangChain get_by_ids({joined!r})", lambda: lc.get_by_ids(joined)),
        ("LangChain add_texts('hi')", lambda: lc.add_texts(_word(rng, rng.randint(2, 5)))),
    ]
    for what, call in calls:
        before = _snapshot(lc.retriever.engine, ids)
        _refused(problems, what, call)
        _unchanged(problems, what, lc.retriever.engine, ids, before)
        checked += 1
    lc.close()
    li = _llama_store()
    li.add(_nodes(rng, ids))
    for what, call in ((f"LlamaIndex delete_nodes({joined!r})", lambda: li.delete_nodes(joined)),
                       (f"LlamaIndex get_nodes({joined!r})", lambda: li.get_nodes(joined))):
        before = _snapshot(li.client.engine, ids)
        _refused(problems, what, call)
        _unchanged(problems, what, li.client.engine, ids, before)
        checked += 1
    li.close()
    retriever = _retriever(rng, ids)
    for what, call in ((f"retriever delete({joined!r})", lambda: retriever.delete(joined)),
                       ("retriever add_texts('hi')", lambda: retriever.add_texts(_word(rng, rng.randint(2, 5)))),
                       (f"retriever invoke(exclude_ids={joined!r})",
                        lambda: retriever.invoke(_text(rng), exclude_ids=joined))):
        before = _snapshot(retriever.engine, ids)
        _refused(problems, what, call)
        _unchanged(problems, what, retriever.engine, ids, before)
        checked += 1
    retriever.close()
    return checked


# ---- 2: language detection -----------------------------------------------------------------------------------------

_PARAGRAPHS = {
    "italian": ["Il gatto dorme sul tetto della casa e non vuole scendere.",
                "La riunione di domani è stata spostata alle dieci, perché il direttore non c'è.",
                "Questo documento descrive come configurare il server per la prima volta.",
                "Abbiamo deciso di rinviare il lancio del prodotto alla fine del mese."],
    "german": ["Die Katze schläft auf dem Dach und will nicht herunterkommen.",
               "Das Treffen wurde auf morgen verschoben, weil der Leiter nicht da ist.",
               "Dieses Dokument beschreibt, wie man den Server zum ersten Mal einrichtet.",
               "Wir haben beschlossen, die Einführung des Produkts auf das Monatsende zu verschieben."],
    "french": ["Le chat dort sur le toit de la maison et ne veut pas descendre.",
               "La réunion de demain a été déplacée à dix heures, car le directeur est absent.",
               "Ce document décrit comment configurer le serveur pour la première fois."],
}


def _snippet(rng: random.Random) -> str:
    """A random code snippet, JSON object, CSV row or log line (with one-letter names, as real code has)."""
    name, other = rng.choice(["e", "i", "a", "el", "la", "de", "x", "err", "res"]), _word(rng, rng.randint(1, 5))
    n = rng.randrange(1000)
    forms = [
        f"const {name} = require('{other}'); function f({name}) {{ return {name}.target; }}",
        f"def {other}({name}):\n    return [{name} for {name} in range({n}) if {name} % 2]",
        f"SELECT {name}, {other} FROM t WHERE {name} = {n} AND {other} IS NOT NULL;",
        json.dumps({name: n, other: rng.choice(["la", "e", "de", "ok"]), "id": str(n)}),
        f"{n},{name},{other},{rng.randrange(99)},la,e",
        f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} ERROR [{other}] {name}={n} e={rng.randrange(9)} retry",
    ]
    return rng.choice(forms)


def _check_language(rng: random.Random, tmp: Path, problems: Problems) -> int:
    checked = 0
    english = [[_snippet(rng) for _ in range(rng.randint(1, 12))],
               ["Vitamin E is found in nuts"], ["Her name is Ana"],
               [_snippet(rng), "Vitamin E is found in nuts", "Her name is Ana"]]
    cases: list[tuple[list[str], str]] = [(texts, "english") for texts in english]
    for language, pool in _PARAGRAPHS.items():
        cases.append(([" ".join(rng.sample(pool, rng.randint(1, len(pool)))) for _ in range(rng.randint(1, 4))],
                      language))
    for texts, want in cases:
        retriever = EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(DIM))
        got = retriever.corpus_language
        retriever.close()
        checked += 1
        if got != want:
            problems.append(f"language: {texts[:3]!r} indexed as {got} (want {want})")
    return checked


# ---- 3: duplicate JSON keys ----------------------------------------------------------------------------------------


def _pairs(items: Iterable[tuple[str, Any]]) -> str:
    """A JSON object written from (key, value) pairs, so a key may repeat; a value that is a list of pairs is an
    object too (a list is written with ``_raw`` items)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {_raw(v)}" for k, v in items) + "}"


class _Obj(list[Any]):  # a list of (key, value) pairs written as one JSON object
    pass


def _raw(value: Any) -> str:
    if isinstance(value, _Obj):
        return _pairs(value)
    if isinstance(value, list):
        return "[" + ", ".join(_raw(v) for v in value) + "]"
    return json.dumps(value)


def _nested_dup(rng: random.Random, depth: int) -> _Obj:
    """A filter whose innermost object repeats a key, ``depth`` levels of ``$and`` / ``$or`` / ``$not`` down."""
    s, t = rng.sample(range(4), 2)
    node = _Obj([("session_id", [s]), ("session_id", {"$in": [t]})] if rng.random() < 0.5
                else [("session_id", s), ("tag", "x"), ("session_id", t)])
    for _ in range(depth):
        op = rng.choice(["$and", "$or", "$not"])
        node = _Obj([(op, node if op == "$not" else [node])])
    return node


def _check_duplicate_keys(rng: random.Random, tmp: Path, problems: Problems) -> int:
    ids = [f"j{i}" for i in range(20)]
    retriever = EnsembleRRFRetriever.from_texts([_text(rng) for _ in ids], HashingEmbedding(DIM), ids=ids,
                                                metadatas=[{"session_id": i % 4, "tag": "x"} for i in range(20)],
                                                analyzer="english")
    engine = retriever.engine
    settings = engine.settings
    client = _client(engine)
    q = _text(rng, 2)
    key = rng.choice(["query", "q"])
    bodies = {
        "/search top-level filter": _pairs([(key, q), ("filter", _Obj([("session_id", [0])])), ("filter", _Obj())]),
        "/search query twice": _pairs([(key, q), ("filter", _Obj([("session_id", [1])])), (key, _text(rng, 2))]),
        f"/search filter at depth {(d := rng.randint(0, 6))}": _pairs([(key, q), ("filter", _nested_dup(rng, d))]),
        "/search weights twice": _pairs([(key, q), ("weights", _Obj([("dense", 1.0), ("dense", 0.0)]))]),
    }
    checked = 0
    for what, raw in bodies.items():
        response = client.post("/search", content=raw, headers={"content-type": "application/json"})
        checked += 1
        if response.status_code != 422:
            problems.append(f"duplicate keys {what}: HTTP {response.status_code} for {raw[:120]}")
    doc = _Obj([("id", "new"), ("text", _text(rng)), ("metadata", _Obj([("session_id", 1), ("session_id", 2)]))])
    writes = [
        ("POST", "/documents", _pairs([("documents", [doc])])),
        ("POST", "/documents", _pairs([("documents", [_Obj([("id", "a"), ("text", "x"), ("id", "b")])])])),
        ("DELETE", "/documents", _pairs([("ids", [rng.choice(ids)]), ("ids", ["none"])])),
        ("PATCH", "/settings", _pairs([("topK", rng.randint(2, 5)), ("topK", rng.randint(6, 9))])),
    ]
    for method, route, raw in writes:
        before = _snapshot(engine, ids)
        response = client.request(method, route, content=raw, headers={"content-type": "application/json"})
        checked += 1
        if response.status_code != 422:
            problems.append(f"duplicate keys {method} {route}: HTTP {response.status_code} for {raw[:120]}")
        _unchanged(problems, f"duplicate keys {method} {route}", engine, ids, before)
        if engine.settings != settings:
            problems.append(f"duplicate keys {method} {route}: the settings changed")
    client.close()
    retriever.close()
    return checked


# ---- 4: a bad vector in the last chunk -----------------------------------------------------------------------------


def _bad_vector_add(rng: random.Random, where: str, problems: Problems) -> None:
    """An add of more than ``ADD_CHUNK`` documents through ``where`` whose bad vector is in the last chunk."""
    from llama_index.core.schema import TextNode

    from rrf_retriever.engine.writes import ADD_CHUNK

    good = [1.0 / math.sqrt(DIM)] * DIM
    n = ADD_CHUNK + rng.randint(1, 30)
    bad_at = rng.randrange(ADD_CHUNK, n)
    kind = rng.choice(["wrong dimension", "NaN", "10x length", "infinity"])
    bad = {"wrong dimension": good[:-1], "NaN": [math.nan, *good[1:]], "10x length": good * 10,
           "infinity": [*good[:-1], math.inf]}[kind]
    ids = [f"v{i}" for i in range(n)]
    texts = [f"doc {i}" for i in range(n)]
    what = f"{where} add of {n} with a {kind} vector at {bad_at}"
    if where == "engine":
        holder: Any = _retriever(rng, ["seed"])
        engine, vectors = holder.engine, [good] * n
        vectors[bad_at] = bad
        before = _snapshot(engine, ["seed"])
        _refused(problems, what, lambda: engine.add(ids, texts, vectors=vectors), InvalidArgumentError)
    else:
        holder = _llama_store()
        holder.add(_nodes(rng, ["seed"]))
        engine = holder.client.engine
        nodes = [TextNode(id_=i, text=t, embedding=good) for i, t in zip(ids, texts)]
        nodes[bad_at].embedding = bad
        before = _snapshot(engine, ["seed"])
        _refused(problems, what, lambda: holder.add(nodes), InvalidArgumentError)
    _unchanged(problems, what, engine, ["seed"], before)
    holder.close()


def _check_bad_last_vector(rng: random.Random, tmp: Path, problems: Problems) -> int:
    """One add through the engine (``vectors=``), one through LlamaIndex (the nodes' embeddings)."""
    _bad_vector_add(rng, "engine", problems)
    _bad_vector_add(rng, "LlamaIndex", problems)
    return 2


# ---- 5: a LlamaIndex node's hash -----------------------------------------------------------------------------------


def _check_node_hash(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from llama_index.core.schema import Document, TextNode

    store = _llama_store()
    ids = [f"h{rng.randrange(10**6)}-{i}" for i in range(6)]
    nodes = _nodes(rng, ids[:3], Document) + _nodes(rng, ids[3:], TextNode)
    for node in nodes:
        node.metadata[_word(rng, 4)] = _text(rng, 2)
    store.add(nodes)
    back = {n.node_id: n for n in store.get_nodes(ids)}
    checked = 0
    for node in nodes:
        got = back.get(node.node_id)
        checked += 1
        if got is None or type(got) is not type(node) or got.hash != node.hash:
            problems.append(f"node hash: {type(node).__name__} {node.node_id} came back as "
                            f"{type(got).__name__} hash {getattr(got, 'hash', None)} (was {node.hash})")
    store.close()
    return checked


# ---- 6: thousands of dense_paths -----------------------------------------------------------------------------------


def _check_dense_paths(rng: random.Random, tmp: Path, problems: Problems) -> int:
    ids = [f"p{i}" for i in range(10)]
    retriever = _retriever(rng, ids)
    n = rng.randint(2000, 6000)
    paths = {f"path{i}": (None if rng.random() < 0.5 else {"session_id": [i % 3]}) for i in range(n)}
    _refused(problems, f"library dense_paths of {n}",
             lambda: retriever.engine.search(_text(rng, 2), dense_paths=paths))
    client = _client(retriever.engine)
    response = client.post("/search", json={"query": _text(rng, 2), "dense_paths": paths})
    if response.status_code != 422:
        problems.append(f"dense_paths of {n} over HTTP: {response.status_code}")
    client.close()
    retriever.close()
    return 2


# ---- 7: a filter of many integers ----------------------------------------------------------------------------------


def _check_int_filter(rng: random.Random, tmp: Path, problems: Problems) -> int:
    checked = 0
    n_docs = 40
    metas = [{f"k{j}": rng.randrange(30_000) for j in range(8)} for _ in range(n_docs)]
    ids = [f"i{i}" for i in range(n_docs)]
    flt = {f"k{j}": sorted(rng.sample(range(30_000), 10_000)) for j in range(8)}
    if rng.random() < 0.5:  # make some documents match
        for meta in rng.sample(metas, 3):
            for j in range(8):
                flt[f"k{j}"][rng.randrange(10_000)] = meta[f"k{j}"]
    # the reference by hand (the parser may refuse so large a filter): every key's integer is in its list
    allowed = {key: set(values) for key, values in flt.items()}
    reference = {i for i, m in zip(ids, metas) if all(m[key] in allowed[key] for key in allowed)}
    for stack in ("fts5", "default"):
        kwargs: dict[str, Any] = {"keyword": "fts5"} if stack == "fts5" else {}
        retriever = EnsembleRRFRetriever.from_texts(["token deploy note"] * n_docs, HashingEmbedding(DIM), ids=ids,
                                                    metadatas=metas, analyzer="english", **kwargs)
        checked += 1
        try:
            got = set(retriever.engine.search("token deploy", top_k=n_docs, filter=flt).ids)
            OUTCOMES[f"int_filter:{stack}:answered"] += 1
        except InvalidFilterError:
            got = None
            OUTCOMES[f"int_filter:{stack}:refused"] += 1
        except Exception as exc:
            problems.append(f"int filter on {stack}: a foreign {type(exc).__name__}: {str(exc)[:160]}")
            got = None
        if got is not None and got != reference:
            problems.append(f"int filter on {stack}: {sorted(got)} (want {sorted(reference)})")
        retriever.close()
    return checked


# ---- 8: a document linking 70,000 ids ------------------------------------------------------------------------------


def _check_links(rng: random.Random, tmp: Path, problems: Problems) -> int:
    ids = [f"n{i}" for i in range(30)]
    retriever = _retriever(rng, ids, links_key="links")
    engine = retriever.engine
    before = _snapshot(engine, ids)
    real = rng.sample(ids, 4)
    # 70,000 links, or (1 in 3) a few hundred, within any cap; short ids fit the metadata's 1 MB, long ones do not
    n_links = rng.randint(65_000, 75_000) if rng.random() < 2 / 3 else rng.randint(100, 900)
    links = [f"g{i}" if rng.random() < 0.5 else f"ghost-{_word(rng, 8)}" for i in range(n_links)]
    for doc_id in real:
        links.insert(rng.randrange(len(links) + 1), doc_id)
    hub_text = f"hub {_word(rng, 10)}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine.add(["hub"], [hub_text], [{"links": links}])
    except RRFRetrieverError:
        OUTCOMES["links:refused"] += 1
        _unchanged(problems, "links refused", engine, ids, before)
        if _present(engine, ["hub"]):
            problems.append("links: the refused hub was written")
        retriever.close()
        return 1
    except Exception as exc:
        problems.append(f"links of {len(links)}: a foreign {type(exc).__name__}: {str(exc)[:160]}")
        retriever.close()
        return 1
    OUTCOMES["links:answered"] += 1
    result = engine.search(hub_text, top_k=10, expand_limit=len(real), weights={"dense": 0.0})
    expanded = {h.id for h in result.hits if h.metadata.get("rrf_expanded_from")}
    if result.ids[:1] != ["hub"] or not expanded <= set(real) or not set(real) <= set(result.ids):
        problems.append(f"links: expansion of {len(links)} links gave {result.ids} (linked {sorted(real)})")
    retriever.close()
    return 1


# ---- 9: a query of megabytes ---------------------------------------------------------------------------------------


def _check_long_query(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    from rrf_retriever.langchain import RRFVectorStore as LangChainStore

    size = rng.randint(1, 10) * 2**20
    query = (_text(rng, 50) + " ") * (size // 400 + 1)
    query = query[:size]
    ids = [f"q{i}" for i in range(10)]
    retriever = _retriever(rng, ids)
    lc: Any = LangChainStore(HashingEmbedding(DIM), analyzer="english")
    lc.add_texts([_text(rng) for _ in ids], ids=ids)
    li = _llama_store()
    li.add(_nodes(rng, ids))
    vector = HashingEmbedding(DIM).embed_query("token")
    mode = rng.choice([VectorStoreQueryMode.HYBRID, VectorStoreQueryMode.TEXT_SEARCH])
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("retriever invoke", lambda: retriever.invoke(query)),
        ("engine search", lambda: retriever.engine.search(query)),
        ("LangChain similarity_search", lambda: lc.similarity_search(query)),
        ("LlamaIndex query", lambda: li.query(VectorStoreQuery(query_str=query, query_embedding=vector,
                                                               similarity_top_k=3, mode=mode))),
    ]
    for what, call in calls:
        _refused(problems, f"a {size // 2**20} MB query: {what}", call)
    for closing in (retriever, lc, li):
        closing.close()
    return len(calls)


# ---- 10: node_ids of 120,000 ---------------------------------------------------------------------------------------


def _check_node_ids(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    ids = [f"s{i}" for i in range(40)]
    store = _llama_store()
    store.add(_nodes(rng, ids))
    chosen = rng.sample(ids, rng.randint(1, 6))
    node_ids = [f"absent-{i}-{_word(rng, 4)}" for i in range(120_000 - len(chosen))]
    for doc_id in chosen:
        node_ids.insert(rng.randrange(len(node_ids) + 1), doc_id)
    text = _text(rng, 2)
    vector = HashingEmbedding(DIM).embed_query(text)
    checked = 0
    for mode in (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.HYBRID):
        def ask(restrict: list[str], mode: Any = mode) -> list[str]:
            q = VectorStoreQuery(query_str=text, query_embedding=vector, similarity_top_k=10, node_ids=restrict,
                                 mode=mode)
            return list(store.query(q).ids or [])

        checked += 1
        try:
            got = ask(node_ids)
        except Exception as exc:
            problems.append(f"node_ids of 120,000 ({mode.value}): {type(exc).__name__}: {str(exc)[:160]}")
            continue
        want = ask(chosen)
        if got != want or not set(got) <= set(chosen):
            problems.append(f"node_ids of 120,000 ({mode.value}): {got} (want {want})")
    store.close()
    return checked


# ---- 11: a symbolic link out of the indexed folder -----------------------------------------------------------------


def _check_symlink(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from typer.testing import CliRunner

    from rrf_retriever.apps.cli import app

    secret_word = f"secret{_word(rng, 10)}"
    (tmp / "secret").mkdir()
    (tmp / "secret" / "credentials").write_text(f"password {secret_word} hunter2\n", encoding="utf-8")
    folder = tmp / "docs"
    folder.mkdir()
    files = rng.randint(1, 4)
    for i in range(files):
        (folder / f"note{i}.{rng.choice(['txt', 'md'])}").write_text(_text(rng), encoding="utf-8")
    os.symlink("../secret/credentials", folder / rng.choice(["leak.txt", "leak.md", "zz.txt"]))
    if rng.random() < 0.5:
        os.symlink("../secret", folder / "linked_dir")
    index = tmp / "index"
    out = CliRunner().invoke(app, ["index", str(folder), "-d", str(index), "--embedder", f"hashing:{DIM}"])
    if out.exit_code != 0:
        problems.append(f"symlink: index exited {out.exit_code}: {out.output[-300:]}")
        return 1
    retriever = EnsembleRRFRetriever.open(index, HashingEmbedding(DIM))
    try:
        records = retriever.engine.get_where(None, limit=1000)
        if any(secret_word in r.text for r in records) or len(records) != files:
            problems.append(f"symlink: {len(records)} documents indexed for {files} files, the secret among them: "
                            f"{any(secret_word in r.text for r in records)}")
        client = _client(retriever.engine)
        for response in (client.post("/search", json={"query": secret_word, "top_k": 10}),
                         client.get("/search", params={"q": f"password {secret_word}"})):
            served = json.dumps(response.json().get("hits")) if response.status_code == 200 else ""
            if response.status_code != 200 or secret_word in served:  # the answer echoes the query: its hits only
                problems.append(f"symlink: the secret served over HTTP ({response.status_code})")
        client.close()
    finally:
        retriever.close()
    return 1


# ---- 12: wrong-typed arguments to the VectorStores -----------------------------------------------------------------


Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _langchain_calls(rng: random.Random, q: str) -> list[Call]:
    """LangChain ``RRFVectorStore`` methods with one wrong-typed argument each (values drawn per round)."""
    vector = rng.choice(["alpha", None, 5, {"a": 1}, [None] * DIM, ["x"] * DIM, b"ab", [[0.1] * DIM]])

    def count() -> Any:
        return rng.choice(["20", 2.5, [3], {"k": 1}, b"3"])

    return [
        ("similarity_search_by_vector", ("alpha",), {}), ("similarity_search_by_vector", (None,), {}),
        ("similarity_search_by_vector", (vector,), {}), ("max_marginal_relevance_search_by_vector", (vector,), {}),
        ("max_marginal_relevance_search", (q,), {"fetch_k": "20"}),
        ("max_marginal_relevance_search", (q,), {"k": count()}),
        ("delete", (5,), {}), ("delete", ([rng.choice([5, None, b"x", 2.5])],), {}),
        ("adelete", (rng.choice([5, 2.5, b"xy"]),), {}),
        ("get_by_ids", (None,), {}), ("get_by_ids", (rng.choice([5, [5], [None], b"x"]),), {}),
        ("add_texts", (None,), {}), ("add_texts", ([_text(rng)],), {"metadatas": rng.choice(["x", 5, [5], [[1]]])}),
        ("add_texts", ([_text(rng)],), {"ids": [rng.choice([5, b"x", 2.5])]}),
        ("aadd_texts", (rng.choice([None, 5, b"xy"]),), {}),
        ("add_documents", ([_text(rng)],), {}), ("add_documents", (rng.choice([None, 5]),), {}),
        ("similarity_search", (rng.choice([None, 5, b"ab", ["x"]]),), {}),
        ("similarity_search", (q,), {"k": count()}), ("asimilarity_search", (q,), {"k": count()}),
        ("similarity_search_with_score", (q,), {"k": count()}),
        ("similarity_search_with_relevance_scores", (q,), {"k": count()}),
    ]


def _llama_index_calls(rng: random.Random, q: str) -> list[Call]:
    """LlamaIndex ``RRFVectorStore`` methods with one wrong-typed argument each (values drawn per round)."""
    from llama_index.core.vector_stores.types import VectorStoreQuery

    def ids() -> Any:
        return rng.choice([5, 2.5, {"a": 1}, [None], b"x", [5]])

    return [
        ("add", (None,), {}), ("add", (_text(rng),), {}), ("add", ([rng.choice([None, 5, "x", {"a": 1}])],), {}),
        ("async_add", (rng.choice([None, 5]),), {}),
        ("delete", (rng.choice([5, 2.5, [1], b"x"]),), {}),
        ("delete_nodes", (ids(),), {}), ("get_nodes", (ids(),), {}), ("aget_nodes", (ids(),), {}),
        ("query", (None,), {}), ("query", (q,), {}), ("aquery", (rng.choice([None, 5]),), {}),
        ("query", (VectorStoreQuery(query_embedding=[0.1] * DIM, similarity_top_k=rng.choice([-1, 10**9])),), {}),
    ]


def _attack_methods(problems: Problems, where: str, store: Any, engine: Any, ids: list[str],
                    calls: list[Call]) -> int:
    """Call each method with its wrong arguments: our error, and the store as it was."""
    for name, args, kwargs in calls:
        what = f"{where} {name}({', '.join([*map(repr, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})"
        method = getattr(store, name)
        before = _snapshot(engine, ids)
        if asyncio.iscoroutinefunction(method):
            _refused(problems, what, partial(asyncio.run, method(*args, **kwargs)))
        else:
            _refused(problems, what, partial(method, *args, **kwargs))
        _unchanged(problems, what, engine, ids, before)
    return len(calls)


def _check_wrong_types(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from rrf_retriever.langchain import RRFVectorStore as LangChainStore

    ids = [f"w{i}" for i in range(8)]
    q = _text(rng, 2)
    lc = LangChainStore(HashingEmbedding(DIM), analyzer="english")
    lc.add_texts([_text(rng) for _ in ids], ids=ids)
    calls = _langchain_calls(rng, q)
    checked = _attack_methods(problems, "LangChain", lc, lc.retriever.engine, ids, rng.sample(calls, len(calls)))
    lc.close()
    li = _llama_store()
    li.add(_nodes(rng, ids))
    calls = _llama_index_calls(rng, q)
    checked += _attack_methods(problems, "LlamaIndex", li, li.client.engine, ids, rng.sample(calls, len(calls)))
    li.close()
    return checked


# ---- 13: foreign filter dialects -----------------------------------------------------------------------------------


def _dialect_filters(rng: random.Random) -> list[tuple[str, Any]]:
    key, value = _word(rng, rng.randint(1, 6)), rng.randrange(100)
    clause = rng.choice(["must", "should", "must_not"])
    es_clause = rng.choice(["filter", "must", "should"])
    op = rng.choice(["Equal", "NotEqual", "GreaterThan", "LessThan"])
    return [
        ("qdrant", {clause: [{"key": key, "match": {"value": value}}]}),
        ("qdrant", {"must": [{"key": key, "range": {"gte": value}}], "should": []}),
        ("elasticsearch", {"bool": {es_clause: [{"term": {key: value}}]}}),
        ("elasticsearch", {"bool": {"filter": [{"range": {key: {"gte": value}}}]}}),
        ("weaviate", {"path": [key], "operator": op, "valueInt": value}),
        ("weaviate", {"operator": "And", "operands": [{"path": [key], "operator": "Equal", "valueText": "x"}]}),
        ("milvus", rng.choice([f"{key} == {value}", f"{key} > {value} && {key} < {value + 9}",
                               f"{key} in [{value}, {value + 1}]"])),
    ]


def _check_dialects(rng: random.Random, tmp: Path, problems: Problems) -> int:
    from rrf_retriever.langchain import RRFVectorStore as LangChainStore

    ids = [f"f{i}" for i in range(30)]
    metas = [{"must": rng.choice(["a", "b", 1]), "path": rng.choice(["x/y", "z"]), "n": i % 3} for i in range(30)]
    retriever = EnsembleRRFRetriever.from_texts(["token deploy note"] * len(ids), HashingEmbedding(DIM), ids=ids,
                                                metadatas=metas, analyzer="english")
    client = _client(retriever.engine)
    lc = LangChainStore(retriever=retriever)
    checked = 0
    for dialect, flt in _dialect_filters(rng):
        for what, search in (("invoke", retriever.invoke), ("engine search", retriever.engine.search),
                             ("LangChain similarity_search", lc.similarity_search)):
            exc = _refused(problems, f"{dialect} filter {flt!r} ({what})", partial(search, "token", filter=flt),
                           InvalidFilterError)
            checked += 1
            if exc is not None and dialect not in str(exc).lower():
                problems.append(f"{dialect} filter ({what}): the error does not name it: {str(exc)[:160]}")
        response = client.post("/search", json={"query": "token", "filter": flt})
        checked += 1
        if response.status_code != 422 or dialect not in response.text.lower():
            problems.append(f"{dialect} filter over HTTP: {response.status_code} {response.text[:160]}")
    for flt in ({"must": rng.choice(["a", "b", 1])}, {"path": rng.choice(["x/y", "z"])},
                {"must": ["a", 1], "n": rng.randrange(3)}):
        want = {i for i, m in zip(ids, metas) if matches(m, normalize_filter(flt))}
        checked += 1
        try:
            got = set(retriever.engine.search("token deploy", top_k=len(ids), filter=flt).ids)
        except Exception as exc:
            problems.append(f"a field named like a dialect's word {flt}: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        if got != want:
            problems.append(f"a field named like a dialect's word {flt}: {sorted(got)} (want {sorted(want)})")
    client.close()
    retriever.close()
    return checked


_CHECKS: dict[str, Callable[[random.Random, Path, Problems], int]] = {
    "string_ids": _check_string_ids, "language": _check_language, "duplicate_keys": _check_duplicate_keys,
    "bad_last_vector": _check_bad_last_vector, "node_hash": _check_node_hash, "dense_paths": _check_dense_paths,
    "int_filter": _check_int_filter, "links": _check_links, "long_query": _check_long_query,
    "node_ids": _check_node_ids, "symlink": _check_symlink, "wrong_types": _check_wrong_types,
    "dialects": _check_dialects,
}


def run_attacks(rounds: int, seed: int, *, attacks: Iterable[str] | None = None) -> dict[str, Any]:
    """Run each attack ``rounds`` times (fresh random input each round); the problems found, and timings.

    Args:
        rounds: Rounds of every attack.
        seed: The random seed (the same seed runs the same attacks).
        attacks: The attacks to run (default: ``ATTACKS`` but ``PENDING``).

    Returns:
        ``{"rounds", "checks": {attack: count}, "problems": [str], "seconds": float,
        "attack_seconds": {attack: seconds}, "outcomes": {"int_filter:fts5:refused": n, ...}, "skipped": [the
        attacks not run]}``.
    """
    chosen = [a for a in ATTACKS if a not in PENDING] if attacks is None else list(attacks)
    unknown = sorted(set(chosen) - set(ATTACKS))
    if unknown:
        msg = f"unknown attacks {unknown}; known: {ATTACKS}"
        raise ValueError(msg)
    rng = random.Random(seed)
    OUTCOMES.clear()
    problems: Problems = []
    counts = dict.fromkeys(chosen, 0)
    seconds = dict.fromkeys(chosen, 0.0)
    t0 = time.perf_counter()
    for _ in range(rounds):
        for name in chosen:
            with tempfile.TemporaryDirectory() as tmp_dir:
                started = time.perf_counter()
                counts[name] += _CHECKS[name](rng, Path(tmp_dir), problems)
                seconds[name] += time.perf_counter() - started
    return {"rounds": rounds, "checks": counts, "problems": problems, "seconds": round(time.perf_counter() - t0, 1),
            "attack_seconds": {k: round(v, 2) for k, v in seconds.items()},
            "outcomes": dict(OUTCOMES), "skipped": sorted(set(ATTACKS) - set(chosen))}
