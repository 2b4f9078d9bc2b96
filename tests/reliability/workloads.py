"""Workloads shared by the reliability tests (fast profile) and ``benchmarks/reliability/soak.py`` (the long one).

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
from rrf_retriever.engine import HybridEngine
from rrf_retriever.engine.journal import Journal
from rrf_retriever.errors import RRFRetrieverError
from rrf_retriever.stores.bm25.store import BM25KeywordStore
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore, QdrantEdgeDenseStore

DIM = 32
REPO = Path(__file__).resolve().parents[2]  # tests/reliability/ -> the repository root
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


def numeric_looking(rng: random.Random, n: int) -> str:
    """A string that SQLite's affinity or a sloppy parser would take for the number ``n``."""
    return rng.choice([f"{n}", f"0{n}", f"{n}.0", f" {n}", f"+{n}", f"{n}e0", f"{n}.00"])


def scope_corpus(rng: random.Random, size: int, sessions: int) -> list[tuple[str, str, dict[str, Any]]]:
    """Documents tagged with a session id: an int, or (1 in 4) a string that looks like one ("042", "4.0", " 4",
    "+4"), which must never match the number nor another spelling; a str tenant, sometimes a list of tags."""
    corpus = []
    for i in range(size):
        n = rng.randrange(sessions)
        session: int | str = numeric_looking(rng, n) if rng.random() < 0.25 else n
        meta: dict[str, Any] = {"session_id": session, "tenant": rng.choice(["acme", "globex"])}
        if rng.random() < 0.3:
            meta["tags"] = rng.sample(["red", "green", "blue"], rng.randint(1, 2))
        corpus.append((f"d{i}", random_text(rng, rng.randint(3, 12)), meta))
    return corpus


def _allowed(meta: dict[str, Any], flt: dict[str, Any]) -> bool:
    """The reference semantics (``scope.matches``): typed equality, "42" is never 42 nor "042"."""
    from rrf_retriever.scope.parse import normalize_filter
    from rrf_retriever.scope.tree import matches

    return matches(meta, normalize_filter(flt))


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
                    scope_sessions: list[int | str] = list(rng.sample(range(sessions), rng.randint(1, 3)))
                    if rng.random() < 0.3:  # ask for numeric-looking strings: only that exact string may match
                        scope_sessions = [numeric_looking(rng, int(s)) for s in scope_sessions]
                    tenant = rng.choice([None, "acme", "globex"])
                    flt: dict[str, Any] = {"session_id": scope_sessions}
                    if tenant is not None:
                        flt["tenant"] = tenant
                    in_scope = [i for i, m in meta_by_id.items() if _allowed(m, flt)]
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
                        if meta is None or not _allowed(meta, flt) or doc_id in excl:
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
        engine.close()


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
            except Exception as exc:
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
            except Exception as exc:
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


# ---- fuzz -----------------------------------------------------------------------------------------------

FUZZ_TARGETS = ("match_query", "fts5", "bm25", "search", "invoke", "retrieve")


class FuzzState:
    """The real stores and retriever the fuzz targets hit (built once), and the tally of outcomes."""

    def __init__(self) -> None:
        from rrf_retriever.retriever import EnsembleRRFRetriever

        rng = random.Random(0)
        corpus = scope_corpus(rng, 60, 4)
        ids, texts, metas = [c[0] for c in corpus], [c[1] for c in corpus], [c[2] for c in corpus]
        self.fts5 = FTS5KeywordStore(":memory:")
        self.fts5.add(ids, texts, metas)
        self.bm25 = BM25KeywordStore()
        self.bm25.add(ids, texts, metas)
        self.retriever = EnsembleRRFRetriever.from_texts(texts, HashingEmbedding(DIM), metadatas=metas, ids=ids,
                                                         keyword="fts5")
        self.outcomes: Counter[str] = Counter()
        self.unexpected: list[str] = []

    def record(self, target: str, call: Callable[[], Any], args: Any) -> None:
        """Run one call; tally ok / our error; remember any other exception (the property's failure)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call()
            self.outcomes[f"{target}:ok"] += 1
        except RRFRetrieverError as exc:
            self.outcomes[f"{target}:{type(exc).__name__}"] += 1
        except Exception as exc:
            self.unexpected.append(f"{target}: {type(exc).__name__}: {str(exc)[:200]} for {repr(args)[:300]}")

    def close(self) -> None:
        self.fts5.close()
        self.retriever.engine.close()


def fuzz_strategies() -> dict[str, Any]:
    """Hypothesis strategies: hostile strings (NUL, lone surrogates, control chars, huge), junk filters, ids."""
    from hypothesis import strategies as st

    from tests.reliability.hostile import HOSTILE_QUERIES

    any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
    huge = st.builds(lambda word, n: (word + " ") * n, st.sampled_from([*WORDS, "x", "\x00", "\ud83d"]),
                     st.sampled_from([1000, 20_000, 500_000]))
    hostile_text = st.integers(0, 19).flatmap(lambda i: huge if i == 0 else st.one_of(
        st.text(any_char, max_size=60),
        st.sampled_from(HOSTILE_QUERIES),
        st.lists(st.sampled_from([*WORDS, "\x00", "\ud800", "\udfff", "OR", "NEAR(", '"', "*", "\x1b[2J", "é"]),
                 max_size=12).map(" ".join),
    ))
    junk = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.binary(max_size=8),
                     st.text(any_char, max_size=10), st.lists(st.integers(), max_size=3), st.just(object()))
    scalar = st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.booleans(), st.text(any_char, max_size=12),
                       st.none(), st.binary(max_size=4))
    sane_value = st.one_of(st.integers(0, 4), st.sampled_from(["acme", "globex", "red"]), st.booleans())
    sane_filter = st.dictionaries(st.sampled_from(["session_id", "tenant", "tags"]),
                                  st.one_of(sane_value, st.lists(sane_value, max_size=4)), max_size=2)
    wild_filter = st.dictionaries(
        st.one_of(st.sampled_from(["session_id", "tenant", "tags", "x-y", "_k"]), st.text(any_char, max_size=12),
                  st.integers()),
        st.one_of(scalar, st.lists(scalar, max_size=4), st.dictionaries(st.text(max_size=3), scalar, max_size=2)),
        max_size=3,
    )
    # Mostly sane arguments with one hostile part, so that calls get deep into the stores, not only the checks.
    # (A plain one_of would not do: hypothesis flattens and de-duplicates its branches, so junk's eight
    # branches would outvote everything else.)
    def mostly(sane: Any, hostile: Any, sane_in_ten: int = 8) -> Any:
        return st.integers(0, 9).flatmap(lambda i: sane if i < sane_in_ten else hostile)

    filters = mostly(st.one_of(st.none(), sane_filter), st.one_of(wild_filter, junk), 7)
    sane_ids = st.lists(st.sampled_from(["d1", "d2", "d3", "nope"]), max_size=4)
    ids = mostly(st.one_of(st.none(), sane_ids),
                 st.one_of(st.lists(st.one_of(st.text(any_char, max_size=12), st.integers(), st.none()), max_size=5),
                           junk))
    sane_weights = st.fixed_dictionaries({}, optional={"dense": st.floats(0, 3), "keyword": st.floats(0, 3)})
    weights = mostly(st.one_of(st.none(), sane_weights), st.one_of(
        st.dictionaries(st.one_of(st.sampled_from(["dense", "keyword", "bogus"]), st.text(max_size=4)),
                        st.one_of(st.floats(), st.integers(-5, 10**12), st.booleans(), st.none(), st.text(max_size=3)),
                        max_size=3),
        junk,
    ))
    sane_k = st.integers(1, 30)
    top_k = mostly(st.one_of(st.none(), sane_k),
                   st.one_of(st.integers(-3, 0), st.sampled_from([10**4, 10**4 + 1, 10**9, 2**64]), junk))
    query = mostly(hostile_text, junk, 9)
    limit = mostly(sane_k, st.one_of(st.integers(-2, 0), st.sampled_from([10**5, 10**5 + 1, 10**9]), junk))
    return {"text": hostile_text, "query": query, "filter": filters, "ids": ids, "weights": weights, "top_k": top_k,
            "limit": limit}


def run_fuzz(examples_per_target: int, seed: int = 0) -> dict[str, Any]:
    """Run hypothesis over every fuzz target with ``examples_per_target`` examples each.

    Returns:
        ``{"inputs": total calls, "outcomes": {target:result: count}, "unexpected": [descriptions]}``.
    """
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from rrf_retriever.stores.fts5.match import build_match_query

    state = FuzzState()
    s = fuzz_strategies()
    opts = settings(max_examples=examples_per_target, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

    @hseed(seed)
    @opts
    @given(text=s["query"])
    def match_query(text: Any) -> None:
        state.record("match_query", lambda: build_match_query(text, state.fts5.analyzer), text)

    @hseed(seed)
    @opts
    @given(text=s["query"], limit=s["limit"], flt=s["filter"], excl=s["ids"])
    def fts5(text: Any, limit: Any, flt: Any, excl: Any) -> None:
        state.record("fts5", lambda: state.fts5.search(text, limit, flt, excl), (text, limit, flt, excl))

    @hseed(seed)
    @opts
    @given(text=s["query"], limit=s["limit"], flt=s["filter"], excl=s["ids"])
    def bm25(text: Any, limit: Any, flt: Any, excl: Any) -> None:
        state.record("bm25", lambda: state.bm25.search(text, limit, flt, excl), (text, limit, flt, excl))

    @hseed(seed)
    @opts
    @given(text=s["query"], top_k=s["top_k"], flt=s["filter"], excl=s["ids"], weights=s["weights"])
    def search(text: Any, top_k: Any, flt: Any, excl: Any, weights: Any) -> None:
        args = (text, top_k, flt, excl, weights)
        state.record("search", lambda: state.retriever.search(text, top_k=top_k, filter=flt, exclude_ids=excl,
                                                              weights=weights), args)

    @hseed(seed)
    @opts
    @given(text=s["query"], top_k=s["top_k"], flt=s["filter"], excl=s["ids"], weights=s["weights"],
           extra=st.integers(0, 9).flatmap(lambda i: st.just({}) if i < 8 else st.dictionaries(
               st.sampled_from(["rrf_k", "fetch_k", "nonsense", "k"]), s["top_k"], min_size=1, max_size=1)))
    def invoke(text: Any, top_k: Any, flt: Any, excl: Any, weights: Any, extra: Any) -> None:
        args = (text, top_k, flt, excl, weights, extra)
        state.record("invoke", lambda: state.retriever.invoke(text, top_k=top_k, filter=flt, exclude_ids=excl,
                                                              weights=weights, **extra), args)

    @hseed(seed)
    @opts
    @given(text=s["text"], top_k=s["top_k"], flt=s["filter"], excl=s["ids"], weights=s["weights"])
    def retrieve(text: Any, top_k: Any, flt: Any, excl: Any, weights: Any) -> None:
        def call() -> Any:
            return state.retriever.scoped(top_k=top_k, filter=flt, exclude_ids=excl, weights=weights).retrieve(text)

        state.record("retrieve", call, (text, top_k, flt, excl, weights))

    try:
        for target in (match_query, fts5, bm25, search, invoke, retrieve):
            target()
    finally:
        state.close()
    return {"inputs": sum(state.outcomes.values()) + len(state.unexpected), "outcomes": dict(state.outcomes),
            "unexpected": state.unexpected}


# ---- lifecycle: interrupts, fork, close under load, short-lived threads ----------------------------------


class _InterruptingFTS5(FTS5KeywordStore):
    """A real FTS5 store whose next write, once ``armed``, is interrupted (KeyboardInterrupt) after it wrote: the
    Ctrl-C of the issue. One interrupt per arming, so the rollback itself runs (a fault during the rollback leaves
    the journal entry pending by design; the unit tests cover that double fault)."""

    armed = False

    def _maybe_interrupt(self) -> None:
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt

    def add(self, *args: Any, **kwargs: Any) -> None:
        super().add(*args, **kwargs)
        self._maybe_interrupt()

    def delete(self, *args: Any, **kwargs: Any) -> None:
        super().delete(*args, **kwargs)
        self._maybe_interrupt()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def run_lifecycle(rounds: int, seed: int, threads: int = 8) -> dict[str, Any]:
    """The lifecycle attacks of the trust issue, on the on-disk default stack (FTS5 + qdrant-edge + journal).

    * ``rounds`` writes (adds and deletes) of which ~30 % are interrupted by KeyboardInterrupt inside the keyword
      store: after each, both stores must hold the same ids, and after a reopen no deleted document may be back;
    * a fork after open: the child's calls must be refused at once (no hang), the parent untouched;
    * close() while ``threads`` threads query: only results or EngineClosedError, and the path opens again;
    * 500 short-lived threads each searching once: open file descriptors must not grow with them.

    Returns:
        figures and a list of ``problems`` (empty when every property held).
    """
    from rrf_retriever.errors import EngineClosedError

    rng = random.Random(seed)
    problems: list[str] = []
    figures: dict[str, Any] = {"interrupted": 0, "writes": 0}
    embedding = HashingEmbedding(DIM)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def open_stack() -> HybridEngine:
            keyword = _InterruptingFTS5(str(root / "keyword.sqlite3"))
            dense = QdrantEdgeDenseStore(embedding, path=str(root / "edge"))
            return HybridEngine({"dense": dense, "keyword": keyword}, journal=root / "journal.sqlite3")

        engine = open_stack()
        alive: set[str] = set()
        deleted: set[str] = set()
        for r in range(rounds):
            ids = [f"d{rng.randrange(rounds)}" for _ in range(rng.randint(1, 4))]
            ids = list(dict.fromkeys(ids))
            figures["writes"] += 1
            engine.legs["keyword"].store.armed = rng.random() < 0.3  # type: ignore[attr-defined]
            try:
                if rng.random() < 0.6 or not alive:
                    engine.add(ids, [random_text(rng) for _ in ids], [{"session_id": rng.randrange(5)} for _ in ids])
                    alive |= set(ids)
                    deleted -= set(ids)
                else:
                    gone = rng.sample(sorted(alive), min(len(alive), rng.randint(1, 3)))
                    engine.delete(gone)
                    alive -= set(gone)
                    deleted |= set(gone)
            except KeyboardInterrupt:
                figures["interrupted"] += 1  # rolled back: the model above is unchanged
            dense_ids = {rec.id for rec in engine.legs["dense"].store.get(sorted(alive | deleted))}  # type: ignore[attr-defined]
            keyword_ids = {rec.id for rec in engine.legs["keyword"].store.get(sorted(alive | deleted))}  # type: ignore[attr-defined]
            if dense_ids != keyword_ids or dense_ids != alive:
                problems.append(f"round {r}: dense {len(dense_ids)} keyword {len(keyword_ids)} expected {len(alive)}")
                break
        engine.close()
        engine = open_stack()
        back = {rec.id for rec in engine.get(sorted(deleted))}
        if back:
            problems.append(f"{len(back)} deleted document(s) came back on reopen: {sorted(back)[:5]}")
        if set(engine.count().values()) != {len(alive)}:
            problems.append(f"after reopen: counts {engine.count()} for {len(alive)} documents")
        figures["documents"] = len(alive)

        # fork after open (gunicorn --preload): the child must refuse at once
        if hasattr(os, "fork"):
            engine.search("document")
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    engine.search("document")
                except EngineClosedError:
                    code = 0
                except BaseException:
                    code = 2
                os._exit(code)
            deadline = time.monotonic() + 30
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    problems.append("fork: the child hung")
                    break
                time.sleep(0.02)
            if set(engine.count().values()) != {len(alive)}:
                problems.append("fork: the parent's stores changed")
            figures["fork_checked"] = True

        # many short-lived threads
        before = _open_fds()
        errors: list[str] = []

        def once() -> None:
            try:
                engine.search(random_text(rng, 2))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")

        for _ in range(10):
            batch = [threading.Thread(target=once) for _ in range(50)]
            for t in batch:
                t.start()
            for t in batch:
                t.join()
        figures["short_lived_threads"] = 500
        figures["fd_growth"] = _open_fds() - before
        if figures["fd_growth"] > 40 or errors:
            problems.append(f"short-lived threads: fd growth {figures['fd_growth']}, errors {errors[:3]}")

        # close() under load
        outcomes: Counter[str] = Counter()
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        engine.search(random_text(rng, 2))
                    outcomes["answered"] += 1
                except EngineClosedError:
                    outcomes["engine_closed"] += 1
                    return
                except BaseException as exc:
                    outcomes[f"foreign {type(exc).__name__}"] += 1
                    return

        readers = [threading.Thread(target=reader) for _ in range(threads)]
        for t in readers:
            t.start()
        time.sleep(0.3)
        engine.close()
        stop.set()
        for t in readers:
            t.join(30)
        figures["close_under_load"] = dict(outcomes)
        foreign = {k: v for k, v in outcomes.items() if k.startswith("foreign")}
        if foreign:
            problems.append(f"close under load: {foreign}")
        reopened = open_stack()
        if set(reopened.count().values()) != {len(alive)}:
            problems.append("close under load: the reopened index differs")
        reopened.close()
    figures["problems"] = problems
    return figures
