"""The README's promises under attack, as one workload the tests run small and the soak runs long.

Each check builds real stores (FTS5, bm25s, qdrant-edge, qdrant-client local mode), attacks one promise with
random input and counts what broke:

* pages: ``offset`` pages are disjoint slices of one fused list, with and without 1-hop expansion;
* pinning: a stored ``rrf_pinned`` is refused at the door, pinned ids outside the scope never appear, those inside
  are on page one;
* big integers: ``$in`` of many integers near 2**62 answers exactly (the reference semantics), on every store;
* junk keys: searches naming keys no document holds leave the scoped query answering exactly;
* wide logic: a 1,000-part ``$or`` / ``$and`` answers exactly on every store (never a dropped leg);
* ties: identical texts written in a random order come back ordered by id, on every store.

Example:
    >>> report = run_promises(rounds=1, seed=0)  # doctest: +SKIP
    >>> report["problems"]  # doctest: +SKIP
    []
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rrf_retriever import (
    BM25KeywordStore,
    FTS5KeywordStore,
    HashingEmbedding,
    HybridEngine,
    InvalidArgumentError,
    QdrantDenseStore,
    QdrantEdgeDenseStore,
    QdrantEdgeKeywordStore,
    QdrantKeywordStore,
)
from rrf_retriever.scope.parse import normalize_filter
from rrf_retriever.scope.tree import matches

__all__ = ["run_promises"]

DIM = 16
WORDS = "token deploy backup restore vector index session memory note agent cache queue".split()


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))


def _keyword_stores(tmp: Path) -> dict[str, Any]:
    return {"fts5": FTS5KeywordStore(), "bm25s": BM25KeywordStore(), "edge-sparse": QdrantEdgeKeywordStore(tmp / "ks"),
            "local-sparse": QdrantKeywordStore()}


def _dense_stores(tmp: Path) -> dict[str, Any]:
    emb = HashingEmbedding(DIM)
    return {"edge-dense": QdrantEdgeDenseStore(emb, path=tmp / "ds"), "local-dense": QdrantDenseStore(emb)}


def _search(store: Any, query: str, limit: int, **scope: Any) -> list[str]:
    if isinstance(store, (QdrantEdgeDenseStore, QdrantDenseStore)):
        return [h.id for h in store.search(HashingEmbedding(DIM).embed_query(query), limit, **scope)]
    return [h.id for h in store.search(query, limit, **scope)]


def _check_pages(rng: random.Random, tmp: Path, problems: list[str]) -> int:
    ids = [f"d{i:03d}" for i in range(200)]
    metas = [{"session_id": i % 4, "links": [f"d{(i + 7) % 200:03d}"]} for i in range(200)]
    texts = [_text(rng) for _ in ids]
    checked = 0
    for expand in (False, True):
        dense = QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp / f"pages-{expand}")
        engine = HybridEngine({"dense": dense, "keyword": FTS5KeywordStore()},
                              links_key="links" if expand else None)
        engine.add(ids, texts, metas)
        for _ in range(5):
            query, size = _text(rng), rng.choice([3, 5, 10])
            flt = {"session_id": rng.sample(range(4), 2)}
            shown = [h.id for p in range(6) for h in engine.search(query, top_k=size, offset=p * size,
                                                                   filter=flt).hits]
            checked += 1
            if len(shown) != len(set(shown)):
                problems.append(f"pages (expand={expand}): an id on two pages for {query!r}")
            if any(metas[int(i[1:])]["session_id"] not in flt["session_id"] for i in shown):
                problems.append(f"pages (expand={expand}): an id out of scope for {query!r}")
        engine.close()
    return checked


def _check_pinning(rng: random.Random, tmp: Path, problems: list[str]) -> int:
    engine = HybridEngine({"dense": QdrantEdgeDenseStore(HashingEmbedding(DIM), path=tmp / "pin"),
                           "keyword": QdrantEdgeKeywordStore(tmp / "pin-kw")})
    engine.add([f"p{i}" for i in range(60)], [_text(rng) for _ in range(60)], [{"s": i % 3} for i in range(60)])
    checked = 0
    try:
        engine.add(["evil"], ["token deploy"], [{"rrf_pinned": True}])
        problems.append("pinning: a stored rrf_pinned was accepted")
    except InvalidArgumentError:
        pass
    for _ in range(10):
        pinned = rng.sample([f"p{i}" for i in range(60)], 3)
        result = engine.search(_text(rng), top_k=5, filter={"s": 0}, pinned_ids=pinned)
        checked += 1
        in_scope = [p for p in pinned if int(p[1:]) % 3 == 0]
        if any(int(i[1:]) % 3 != 0 for i in result.ids):
            problems.append(f"pinning: an id outside the scope {result.ids}")
        if not set(in_scope) <= set(result.ids):
            problems.append(f"pinning: pinned in-scope ids {in_scope} not on page one {result.ids}")
    engine.close()
    return checked


def _exact(name: str, store: Any, query: str, flt: dict[str, Any], metas: dict[str, dict[str, Any]],
           problems: list[str], what: str) -> None:
    node = normalize_filter(flt)
    got = set(_search(store, query, 500, filter=flt))
    allowed = {i for i, m in metas.items() if matches(m, node)}
    if not got <= allowed:
        problems.append(f"{what} on {name}: {len(got - allowed)} hits outside the filter")
    if not got and allowed and query:
        problems.append(f"{what} on {name}: no hit although {len(allowed)} documents match")


def _check_filters(rng: random.Random, tmp: Path, problems: list[str], values: int) -> tuple[int, dict[str, float]]:
    base = 2**62
    metas = {f"f{i:03d}": {"n": base + rng.randrange(4 * values), "session_id": i % 5, "tag": rng.choice("xyz")}
             for i in range(120)}
    stores = {**_keyword_stores(tmp / "flt"), **_dense_stores(tmp / "flt")}
    seconds: dict[str, float] = {}
    checked = 0
    for name, store in stores.items():
        store.add(list(metas), ["token deploy note"] * len(metas), list(metas.values()))
        big = {"n": {"$in": sorted({base + rng.randrange(4 * values) for _ in range(values)})}}
        wide_or = {"$or": [{"session_id": i % 5, "tag": rng.choice("xyz")} for i in range(1000)]}
        wide_and = {"$and": [{"tag": {"$ne": f"junk{i}"}} for i in range(1000)]}
        t0 = time.perf_counter()
        for flt, what in ((big, "big integers"), (wide_or, "1,000-part $or"), (wide_and, "1,000-part $and")):
            _exact(name, store, "token deploy", flt, metas, problems, what)
            checked += 1
        seconds[name] = round(time.perf_counter() - t0, 3)
        for i in range(10):  # junk keys a read-only search names; the scoped query must still answer exactly
            _search(store, "token", 5, filter={f"junk_key_{i}": 1})
        _exact(name, store, "token deploy", {"session_id": [1, 2]}, metas, problems, "after junk keys")
        checked += 1
        store.close()
    return checked, seconds


def _check_ties(rng: random.Random, tmp: Path, problems: list[str]) -> int:
    checked = 0
    for name, store in {**_keyword_stores(tmp / "tie"), **_dense_stores(tmp / "tie")}.items():
        ids = [f"m{i:02d}" for i in range(25)]
        order = ids[:]
        rng.shuffle(order)
        store.add([f"x{i}" for i in range(30)], [f"pasta recipe {i}" for i in range(30)])
        for doc_id in order:
            store.add([doc_id], ["rotating tokens memory"])
        got = _search(store, "rotating tokens memory", 10)
        checked += 1
        if got != ids[:10]:
            problems.append(f"ties on {name}: {got} (want {ids[:10]})")
        store.close()
    return checked


def run_promises(rounds: int, seed: int, big_values: int = 2000) -> dict[str, Any]:
    """Attack each promise ``rounds`` times (fresh random data each round); the problems found, and timings."""
    rng = random.Random(seed)
    problems: list[str] = []
    counts = {"pages": 0, "pinning": 0, "filters": 0, "ties": 0}
    filter_seconds: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    checks: list[tuple[str, Callable[[random.Random, Path, list[str]], int]]] = [
        ("pages", _check_pages), ("pinning", _check_pinning), ("ties", _check_ties)]
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            for name, check in checks:
                counts[name] += check(rng, tmp, problems)
            n, seconds = _check_filters(rng, tmp, problems, big_values)
            counts["filters"] += n
            for store, s in seconds.items():
                filter_seconds.setdefault(store, []).append(s)
    return {"rounds": rounds, "checks": counts, "problems": problems, "seconds": round(time.perf_counter() - t0, 1),
            "filter_seconds_max": {k: max(v) for k, v in filter_seconds.items()}}
