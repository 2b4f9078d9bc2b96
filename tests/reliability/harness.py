"""Workloads shared by the reliability tests (fast profile) and ``benchmarks/soak.py`` (the long one).

Each ``run_*`` function does real work on real stores and returns a small dict of figures; the caller (a test
or the soak) asserts on them. Nothing here mocks a store: FTS5, bm25s, Qdrant local mode and qdrant-edge run for
real; the hashing embedder stands in for a model because these are plumbing properties, not quality.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rrf_retriever.embeddings import HashingEmbedding
from rrf_retriever.ensemble import HybridEngine
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.journal import Journal
from rrf_retriever.stores.bm25 import BM25KeywordStore
from rrf_retriever.stores.fts5 import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

DIM = 32
REPO = Path(__file__).resolve().parents[2]
WORDS = (
    "alpha beta gamma delta error token login password deploy index search vector keyword session memory "
    "cache disk network timeout retry queue server client config tokenizer database backup restore sync"
).split()


def random_text(rng: random.Random, n: int = 8) -> str:
    """A short text over a small vocabulary, so random queries often match."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


# ---- scope isolation ------------------------------------------------------------------------------------

STORE_KINDS = ("fts5", "bm25", "qdrant", "edge")


@contextlib.contextmanager
def scope_engine(kind_keyword: str, kind_dense: str, corpus: list[tuple[str, str, dict[str, Any]]],
                 tmp: Path) -> Iterator[HybridEngine]:
    """An engine over a real keyword store and a real dense store holding ``corpus`` (id, text, metadata)."""
    embedding = HashingEmbedding(DIM)
    keyword = FTS5KeywordStore(":memory:") if kind_keyword == "fts5" else BM25KeywordStore()
    if kind_dense == "qdrant":
        dense: Any = QdrantDenseStore(embedding, location=":memory:", collection_name="scope")
    else:
        dense = QdrantEdgeDenseStore(embedding, path=str(tmp / f"edge-{kind_keyword}"))
    engine = HybridEngine({"dense": dense, "keyword": keyword}, top_k=10)
    for start in range(0, len(corpus), 500):
        chunk = corpus[start:start + 500]
        engine.add([c[0] for c in chunk], [c[1] for c in chunk], [c[2] for c in chunk])
    try:
        yield engine
    finally:
        engine.close()
        dense.close()
        if hasattr(keyword, "close"):
            keyword.close()


def scope_corpus(rng: random.Random, size: int, sessions: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Documents tagged with a session id (int, sometimes also a str tenant and a list of tags)."""
    corpus = []
    for i in range(size):
        meta: dict[str, Any] = {"session_id": rng.randrange(sessions), "tenant": rng.choice(["acme", "globex"])}
        if rng.random() < 0.3:
            meta["tags"] = rng.sample(["red", "green", "blue"], rng.randint(1, 2))
        corpus.append((f"d{i}", random_text(rng, rng.randint(3, 12)), meta))
    return corpus


def _allowed(meta: dict[str, Any], sessions: list[int], tenant: str | None) -> bool:
    if meta.get("session_id") not in sessions or isinstance(meta.get("session_id"), bool):
        return False
    return tenant is None or meta.get("tenant") == tenant


def run_scope_isolation(n_queries: int, seed: int, corpus_size: int = 300, sessions: int = 12) -> dict[str, Any]:
    """Random scoped queries on every leg alone and fused, through the engine, LangChain and LlamaIndex.

    Every store pairing (FTS5 or BM25 with Qdrant local or qdrant-edge) is exercised. Counts a leak for every
    document returned outside the filter or inside ``exclude_ids``.

    Returns:
        ``{"queries": int, "hits_checked": int, "leaks": [descriptions], "nonempty": int}``.
    """
    from rrf_retriever.retriever import EnsembleRRFRetriever

    rng = random.Random(seed)
    corpus = scope_corpus(rng, corpus_size, sessions)
    meta_by_id = {c[0]: c[2] for c in corpus}
    queries = hits_checked = nonempty = 0
    leaks: list[str] = []
    pairings = [("fts5", "qdrant"), ("bm25", "edge"), ("fts5", "edge"), ("bm25", "qdrant")]
    per_pairing = max(1, n_queries // len(pairings))
    weight_sets = [{"dense": 1.0, "keyword": 0.0}, {"dense": 0.0, "keyword": 1.0}, {"dense": 1.0, "keyword": 1.0},
                   {"dense": 0.3, "keyword": 2.0}]
    with tempfile.TemporaryDirectory() as tmp:
        for kw, dn in pairings:
            with scope_engine(kw, dn, corpus, Path(tmp)) as engine:
                retriever = EnsembleRRFRetriever(engine=engine)
                for q in range(per_pairing):
                    scope_sessions = rng.sample(range(sessions), rng.randint(1, 3))
                    tenant = rng.choice([None, "acme", "globex"])
                    flt: dict[str, Any] = {"session_id": scope_sessions}
                    if tenant is not None:
                        flt["tenant"] = tenant
                    in_scope = [i for i, m in meta_by_id.items() if _allowed(m, scope_sessions, tenant)]
                    excluded = rng.sample(in_scope, min(len(in_scope), rng.randint(0, 8)))
                    excluded += rng.sample(list(meta_by_id), 2)  # out-of-scope and unknown exclusions too
                    excluded.append(f"unknown-{q}")
                    weights = weight_sets[q % len(weight_sets)]
                    query = random_text(rng, rng.randint(1, 4))
                    top_k = rng.randint(1, 30)
                    path = q % 4
                    if path == 0:
                        ids = engine.search(query, top_k=top_k, filter=flt, exclude_ids=excluded, weights=weights).ids
                    elif path == 1:
                        ids = [d.id for d in retriever.invoke(query, filter=flt, exclude_ids=excluded,
                                                              weights=weights, k=top_k)]
                    elif path == 2:
                        scoped = retriever.scoped(filter=flt, exclude_ids=excluded, weights=weights, top_k=top_k)
                        ids = [n.node.id_ for n in scoped.retrieve(query)]
                    else:
                        # The stores alone, below the engine: the scope must hold inside each store too.
                        leg = engine.legs["keyword" if q % 8 < 4 else "dense"]
                        store: Any = leg.store  # type: ignore[attr-defined]
                        if leg.kind == "dense":
                            hits = store.search(HashingEmbedding(DIM).embed_query(query), top_k, flt, excluded)
                        else:
                            hits = store.search(query, top_k, flt, excluded)
                        ids = [h.id for h in hits]
                    queries += 1
                    nonempty += bool(ids)
                    hits_checked += len(ids)
                    excl = set(excluded)
                    for doc_id in ids:
                        meta = meta_by_id.get(doc_id)
                        if meta is None or not _allowed(meta, scope_sessions, tenant) or doc_id in excl:
                            leaks.append(f"{kw}+{dn} path {path}: {doc_id} {meta} for filter {flt} excl {excluded}")
    return {"queries": queries, "hits_checked": hits_checked, "nonempty": nonempty, "leaks": leaks}


# ---- crash safety ---------------------------------------------------------------------------------------


def crash_doc(doc_id: str, version: int) -> tuple[str, dict[str, Any]]:
    """The text and metadata of ``doc_id`` at ``version`` (deterministic, so a reader can check completeness)."""
    rng = random.Random(f"{doc_id}/{version}")
    text = f"document {doc_id} version {version} " + random_text(rng, 12)
    return text, {"doc": doc_id, "version": version, "session_id": rng.randrange(8)}


def open_crash_stack(directory: Path) -> HybridEngine:
    """A persistent FTS5 file + a persistent qdrant-edge store + a journal; recovery runs on construction."""
    embedding = HashingEmbedding(DIM)
    keyword = FTS5KeywordStore(str(directory / "keyword.sqlite3"))
    dense = QdrantEdgeDenseStore(embedding, path=str(directory / "edge"))
    return HybridEngine({"dense": dense, "keyword": keyword}, journal=Journal(directory / "journal.sqlite3"))


def close_engine(engine: HybridEngine) -> None:
    """Close the engine's stores and journal (releases the edge directory lock)."""
    engine.close()
    for leg in engine.legs.values():
        store = getattr(leg, "store", None)
        if store is not None and hasattr(store, "close"):
            store.close()
    if engine.journal is not None:
        engine.journal.close()


def verify_crash_dir(directory: Path, candidate_ids: list[str]) -> dict[str, Any]:
    """Reopen (which redoes any pending batch) and check both stores hold the same, complete documents."""
    engine = open_crash_stack(directory)
    try:
        problems: list[str] = []
        keyword: Any = engine.legs["keyword"].store  # type: ignore[attr-defined]
        dense: Any = engine.legs["dense"].store  # type: ignore[attr-defined]
        kw = {r.id: r for r in keyword.get(candidate_ids)}
        dn = {r.id: r for r in dense.get(candidate_ids, with_vectors=True)}
        counts = engine.count()
        if counts["keyword"] != counts["dense"] or counts["keyword"] != len(kw) or len(dn) != len(kw):
            problems.append(f"counts differ: {counts}, found {len(kw)} keyword / {len(dn)} dense")
        if set(kw) != set(dn):
            problems.append(f"id sets differ: only keyword {sorted(set(kw) - set(dn))[:5]}, "
                            f"only dense {sorted(set(dn) - set(kw))[:5]}")
        embedding = HashingEmbedding(DIM)
        for doc_id in set(kw) & set(dn):
            k, d = kw[doc_id], dn[doc_id]
            version = k.metadata.get("version")
            text, meta = crash_doc(doc_id, version) if isinstance(version, int) else ("?", {})
            if k.text != text or dict(k.metadata) != meta:
                problems.append(f"{doc_id}: keyword record incomplete or torn: {k}")
            if d.text != k.text or dict(d.metadata) != dict(k.metadata):
                problems.append(f"{doc_id}: dense and keyword hold different versions")
            expected = embedding.embed_query(text)
            if d.vector is None or len(d.vector) != DIM or max(abs(a - b) for a, b in zip(d.vector, expected)) > 1e-5:
                problems.append(f"{doc_id}: vector missing or not the text's")
        pending = len(engine.journal.pending()) if engine.journal is not None else 0
        return {"documents": len(kw), "problems": problems, "pending_after_open": pending}
    finally:
        close_engine(engine)


def run_crash_safety(kills: int, seed: int, directory: Path | None = None, max_docs: int = 4000,
                     max_delay: float = 3.0, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Start a writer child, SIGKILL it at a random moment, reopen and verify; ``kills`` times, one directory.

    Returns:
        ``{"kills", "killed_while_writing", "documents", "problems", "recoveries", "seconds"}``.
    """
    rng = random.Random(seed)
    started = time.perf_counter()
    owned = directory is None
    directory = Path(tempfile.mkdtemp(prefix="rrf-crash-")) if directory is None else directory
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    problems: list[str] = []
    killed_while_writing = finished = 0
    documents = 0
    recovered_batches = 0
    try:
        for round_no in range(kills):
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.crash_child", str(directory), str(round_no),
                 str(rng.randrange(2**31)), str(max_docs)],
                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            assert proc.stdout is not None
            ready = proc.stdout.readline().strip()  # recovery of the previous round happens before "ready"
            if ready != "ready":
                proc.wait(timeout=30)
                problems.append(f"round {round_no}: child failed to open: {ready!r} {proc.stderr.read()[-2000:]}")
                break
            time.sleep(rng.uniform(0.0, max_delay))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed_while_writing += 1
            else:
                finished += 1
            proc.wait(timeout=30)
            if proc.returncode not in (0, -signal.SIGKILL):
                problems.append(f"round {round_no}: child exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
            proc.stdout.close()
            proc.stderr.close()
            with Journal(directory / "journal.sqlite3") as journal:
                recovered_batches += len(journal.pending())
            candidates = [f"r{r}-{i}" for r in range(round_no + 1) for i in range(max_docs)]
            result = verify_crash_dir(directory, candidates)
            documents = result["documents"]
            problems += [f"round {round_no}: {p}" for p in result["problems"][:20]]
            if result["pending_after_open"]:
                problems.append(f"round {round_no}: {result['pending_after_open']} journal entries left after open")
            if log is not None:
                log(f"  round {round_no}: {documents} documents, {len(result['problems'])} problems")
    finally:
        if owned:
            import shutil

            shutil.rmtree(directory, ignore_errors=True)
    return {"kills": kills, "killed_while_writing": killed_while_writing, "finished_before_kill": finished,
            "documents": documents, "pending_batches_redone": recovered_batches, "problems": problems,
            "seconds": time.perf_counter() - started}


# ---- load -----------------------------------------------------------------------------------------------


def run_load(threads: int, queries_per_thread: int, seed: int, corpus_size: int = 400) -> dict[str, Any]:
    """``threads`` readers x ``queries_per_thread`` mixed queries while a writer changes weights, adds, deletes.

    Each response must match ONE settings snapshot the writer set: its trace weights equal one of them, no
    hit comes from a zero-weight leg, and it has at most that snapshot's ``top_k`` hits.

    Returns:
        ``{"queries", "errors", "inconsistent", "updates", "writes", "seconds"}``.
    """
    rng = random.Random(seed)
    corpus = scope_corpus(rng, corpus_size, 6)
    snapshots: list[tuple[dict[str, float], int]] = [
        ({"dense": 1.0, "keyword": 1.0}, 10), ({"dense": 0.0, "keyword": 1.0}, 3), ({"dense": 1.0, "keyword": 0.0}, 7),
        ({"dense": 0.5, "keyword": 2.0}, 5), ({"dense": 2.0, "keyword": 0.25}, 12),
    ]
    allowed = {tuple(sorted(w.items())): k for w, k in snapshots}
    errors: list[str] = []
    inconsistent: list[str] = []
    counts = Counter[str]()
    stop = threading.Event()
    lock = threading.Lock()
    embedding = HashingEmbedding(DIM)
    dense = QdrantDenseStore(embedding, location=":memory:", collection_name="load")
    keyword = FTS5KeywordStore(":memory:")
    weights0, top0 = snapshots[0]
    engine = HybridEngine({"dense": dense, "keyword": keyword}, weights0, top_k=top0)
    engine.add([c[0] for c in corpus], [c[1] for c in corpus], [c[2] for c in corpus])

    def writer() -> None:
        wrng = random.Random(seed + 1)
        extra = 0
        while not stop.is_set():
            try:
                weights, top_k = wrng.choice(snapshots)
                engine.update_settings(weights=weights, top_k=top_k)
                counts["updates"] += 1
                if wrng.random() < 0.5:
                    ids = [f"x{extra + i}" for i in range(wrng.randint(1, 8))]
                    extra += len(ids)
                    engine.add(ids, [random_text(wrng) for _ in ids], [{"session_id": 1} for _ in ids])
                else:
                    engine.delete([f"x{wrng.randrange(max(extra, 1))}", f"d{wrng.randrange(corpus_size)}"])
                counts["writes"] += 1
            except Exception as exc:  # noqa: BLE001 - counted, asserted by the caller
                with lock:
                    errors.append(f"writer: {type(exc).__name__}: {exc}")
            time.sleep(0.001)

    def reader(index: int) -> None:
        rrng = random.Random(seed * 100 + index)
        for q in range(queries_per_thread):
            query = random_text(rrng, rrng.randint(1, 4))
            kind = q % 3
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # a degraded query is an error here
                    if kind == 0:
                        result = engine.search(query)
                    elif kind == 1:
                        result = engine.search(query, filter={"session_id": [1, 2, 3]}, exclude_ids=["d1"])
                    else:
                        import asyncio

                        result = asyncio.run(engine.asearch(query))
            except Exception as exc:  # noqa: BLE001
                with lock:
                    errors.append(f"reader {index}: {type(exc).__name__}: {exc}")
                continue
            key = tuple(sorted(result.trace.weights.items()))
            problem = None
            if key not in allowed:
                problem = f"weights {result.trace.weights} are no snapshot"
            elif result.trace.top_k != allowed[key] or len(result.hits) > allowed[key]:
                problem = f"top_k {result.trace.top_k} / {len(result.hits)} hits for snapshot {dict(key)}"
            else:
                zero = {name for name, w in result.trace.weights.items() if w == 0}
                for hit in result.hits:
                    if zero & set(hit.ranks):
                        problem = f"hit {hit.id} ranked by zero-weight leg(s) {zero & set(hit.ranks)}"
                for leg in result.trace.legs:
                    if leg.name in zero and leg.called:
                        problem = f"zero-weight leg {leg.name} was called"
            with lock:
                counts["queries"] += 1
                if problem is not None:
                    inconsistent.append(problem)

    started = time.perf_counter()
    writer_thread = threading.Thread(target=writer)
    writer_thread.start()
    readers = [threading.Thread(target=reader, args=(i,)) for i in range(threads)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    writer_thread.join()
    seconds = time.perf_counter() - started
    engine.close()
    dense.close()
    keyword.close()
    return {"queries": counts["queries"], "errors": errors, "inconsistent": inconsistent,
            "updates": counts["updates"], "writes": counts["writes"], "seconds": seconds,
            "qps": counts["queries"] / seconds if seconds else 0.0}


def is_our_error(exc: BaseException) -> bool:
    """True for an error of our documented hierarchy."""
    return isinstance(exc, RRFRetrieverError)
