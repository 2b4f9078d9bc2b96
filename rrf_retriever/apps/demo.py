"""The main job, ``make demo`` (= ``rrf-retriever demo``): hybrid retrieval on a shipped corpus, offline.

It indexes the demo corpus (an invented product, Tidewell: docs, FAQs and support tickets) on the embedded
defaults (MiniLM on onnxruntime, qdrant-edge for both legs: dense and BM25 sparse vectors) into a cache
directory, runs the demo queries and shows, per result, its dense rank, keyword rank and fused score, with the
relevant ids marked. Then it shows what a weight of 0 does (a document only the keyword leg found disappears) and a
session-scoped query, and ends with one line: hits@1 for dense only, keyword only and hybrid.

A second run reuses the index when the corpus (sha256) and the document count match.

Example:
    >>> from rrf_retriever.apps.demo import run_demo
    >>> report = run_demo()  # doctest: +SKIP
    >>> report.hits_at_1["hybrid"] >= report.hits_at_1["dense"]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rrf_retriever import strict_json
from rrf_retriever.engine import DEFAULT_LEG_WEIGHTS
from rrf_retriever.errors import InvalidArgumentError
from rrf_retriever.fusion import DEFAULT_RRF_K

__all__ = ["DemoQuery", "DemoReport", "default_demo_index_dir", "load_demo_queries", "main", "run_demo"]

#: The exact fp32 model, not the int8 default of new indexes: the queries' "why" texts quote its ranks (int8 moves
#: the stolen-laptop page from dense 1st to 2nd, and keyword_weight=0 would no longer restore it to 1st).
EMBEDDER = "minilm"
TOP_K = 5
#: The three ways of answering each demo query, as engine weights.
MODES: dict[str, dict[str, float]] = {
    "dense": {"dense": 1.0, "keyword": 0.0},
    "keyword": {"dense": 0.0, "keyword": 1.0},
    "hybrid": dict(DEFAULT_LEG_WEIGHTS),  # the shipped defaults
}


@dataclass(frozen=True)
class DemoQuery:
    """One demo query: its text, the relevant ids, why it is interesting, an optional filter, its kind
    (``exact``, ``paraphrase``, ``hybrid``, ``filter``) and, for the weight-0 showcase, the keyword weight."""

    query: str
    relevant: frozenset[str]
    why: str = ""
    filter: dict[str, Any] | None = None
    kind: str = ""
    keyword_weight: float | None = None


@dataclass
class DemoReport:
    """What a demo run measured (returned for tests and scripts)."""

    index_dir: Path
    reused_index: bool
    doc_count: int
    queries: int
    hits_at_1: dict[str, float]
    index_seconds: float
    query_seconds: float
    total_seconds: float
    weight_zero_example: dict[str, Any] | None = None
    session_example: dict[str, Any] | None = None
    top1: dict[str, list[str]] = field(default_factory=dict)


def _data_file(name: str) -> Path:
    return Path(str(resources.files("rrf_retriever") / "data" / name))


def default_demo_index_dir() -> Path:
    """``$RRF_RETRIEVER_CACHE_DIR/demo-index``, else ``~/.cache/rrf-retriever/demo-index``."""
    from rrf_retriever.embeddings import default_cache_dir

    return default_cache_dir() / "demo-index"


def load_demo_queries(path: Path | None = None) -> list[DemoQuery]:
    """Read ``demo_queries.json``: a list (or ``{"queries": [...]}``) of ``{query, relevant, why[, filter]}``."""
    path = path or _data_file("demo_queries.json")
    if not path.is_file():
        msg = f"the demo queries file {path} is missing (a broken install?)"
        raise InvalidArgumentError(msg)
    raw = strict_json.loads(path.read_text(encoding="utf-8"), what=str(path))
    rows = raw.get("queries", []) if isinstance(raw, dict) else raw
    out = []
    for row in rows:
        text = row.get("query") or row.get("text")
        relevant = row.get("relevant") or []
        if isinstance(relevant, str):
            relevant = [relevant]
        out.append(DemoQuery(text, frozenset(relevant), row.get("why", ""), row.get("filter"), row.get("kind", ""),
                             row.get("keyword_weight")))
    return out


def _corpus_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [strict_json.loads(line, what=f"{path}:{n}") for n, line in enumerate(fh, 1) if line.strip()]


def _open_demo_index(index_dir: Path, corpus: Path, rebuild: bool, console: Any) -> tuple[Any, bool, float]:
    """Open the cached demo index if it matches the corpus; else (re)build it. Returns (engine, reused, seconds)."""
    from rrf_retriever.apps.console import index_documents, iter_documents
    from rrf_retriever.index.directory import create_index, open_index
    from rrf_retriever.index.manifest import MANIFEST_FILE, read_manifest, save_manifest

    corpus_hash = hashlib.sha256(corpus.read_bytes()).hexdigest()
    expected_count = len(_corpus_rows(corpus))
    if (index_dir / MANIFEST_FILE).is_file() and not rebuild:
        try:
            manifest = read_manifest(index_dir)
        except InvalidArgumentError:
            manifest = {}
        except Exception:
            manifest = {}
        if (manifest.get("corpus_sha256") == corpus_hash and manifest.get("doc_count") == expected_count
                and manifest.get("embedder") == EMBEDDER):
            engine = open_index(index_dir, top_k=TOP_K)
            counts = engine.count()
            if set(counts.values()) == {expected_count}:
                return engine, True, 0.0
            engine.close()
    if index_dir.exists():
        if (index_dir / MANIFEST_FILE).is_file() or not any(index_dir.iterdir()):
            shutil.rmtree(index_dir)  # only ever a directory that holds an index (ours) or nothing
        else:
            msg = f"{index_dir} exists and is not an rrf-retriever index; choose another --index-dir"
            raise InvalidArgumentError(msg)
    console.print(f"Building the demo index in {index_dir} (first run; later runs reuse it) ...")
    t0 = time.perf_counter()
    engine = create_index(index_dir, embedder=EMBEDDER, top_k=TOP_K)
    total, docs = iter_documents(corpus)
    index_documents(engine, total, docs, "embedding + indexing")
    save_manifest(index_dir, engine, corpus_sha256=corpus_hash, demo=True)
    return engine, False, time.perf_counter() - t0


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _missing_relevant(engine: Any, q: DemoQuery, shown: list[str]) -> list[str]:
    """Where each relevant document the hybrid table leaves out stands in the fused list (so a 'why' that names
    its rank can be checked against the screen)."""
    missing = sorted(q.relevant - set(shown))
    if not missing:
        return []
    # The same fusion as the table (each leg fetches as deep as for top_k=TOP_K), listed further down.
    before = engine.settings.fetch_k
    depth = engine.settings.effective_fetch_k(TOP_K)
    engine.update_settings(fetch_k=depth)
    try:
        deeper = engine.search(q.query, top_k=depth, filter=q.filter, weights=MODES["hybrid"])
    finally:
        engine.update_settings(fetch_k=before)
    lines = []
    for doc_id in missing:
        if doc_id in deeper.ids:
            hit = deeper.hits[deeper.ids.index(doc_id)]
            legs = ", ".join(f"{leg} rank {rank}" for leg, rank in sorted(hit.ranks.items()))
            lines.append(f"not shown: {doc_id} is {_ordinal(deeper.ids.index(doc_id) + 1)} in the fused list "
                         f"({legs})")
        else:
            lines.append(f"not shown: {doc_id} is not in the fused list (neither leg's top {depth})")
    return lines


def _weight_zero_example(engine: Any, queries: list[DemoQuery]) -> tuple[DemoQuery, Any, Any, str] | None:
    """A query whose hybrid top results hold a document only the keyword leg found (a relevant one first)."""
    best = None
    showcase = [q for q in queries if q.keyword_weight == 0.0]
    for q in showcase + [q for q in queries if q not in showcase]:
        hybrid = engine.search(q.query, top_k=TOP_K, filter=q.filter, weights=MODES["hybrid"])
        only_keyword = [h.id for h in hybrid.hits if "keyword" in h.ranks and "dense" not in h.ranks]
        if not only_keyword:
            continue
        relevant = [i for i in only_keyword if i in q.relevant]
        candidate = (q, hybrid, relevant[0] if relevant else only_keyword[0])
        if relevant:
            best = candidate
            break
        best = best or candidate
    if best is None:
        return None
    q, hybrid, doc_id = best
    dense_only = engine.search(q.query, top_k=TOP_K, filter=q.filter, weights={"keyword": 0.0})
    return q, hybrid, dense_only, doc_id


def _session_example(engine: Any, queries: list[DemoQuery]) -> tuple[DemoQuery, dict[str, Any], Any, Any]:
    """A session-scoped query: the demo's filter query if there is one, else the first query scoped to the
    sessions of its first relevant document. Returns (query, filter, unscoped result, scoped result)."""
    q = next((q for q in queries if q.filter and "session_id" in q.filter), queries[0])
    flt = q.filter
    if not flt or "session_id" not in flt:
        docs = engine.get(sorted(q.relevant))
        session = next((d.metadata.get("session_id") for d in docs if "session_id" in d.metadata), 1)
        flt = {"session_id": [session]}
    return q, flt, engine.search(q.query, top_k=TOP_K), engine.search(q.query, top_k=TOP_K, filter=flt)


def run_demo(index_dir: Path | str | None = None, *, rebuild: bool = False, console: Any = None) -> DemoReport:
    """Run the whole demo and print it with rich. Returns what it measured.

    Args:
        index_dir: Where the demo index is cached (default :func:`default_demo_index_dir`).
        rebuild: Rebuild the index even if it is up to date.
        console: A ``rich.console.Console`` (default: a new one on stdout).
    """
    from rich.console import Console
    from rich.markup import escape

    from rrf_retriever.apps.console import hits_table
    
    started = time.perf_counter()
    console = console or Console()
    index_dir = Path(index_dir) if index_dir is not None else default_demo_index_dir()
    corpus = _data_file("demo_corpus.jsonl")
    queries = load_demo_queries()
    console.rule("[bold]rrf-retriever demo[/bold]: dense (MiniLM + Qdrant) + keyword (BM25 sparse vectors), "
                 "weighted RRF")
    console.print(f"score(d) = Σ_leg weight_leg / (k + rank_leg(d)), k = {DEFAULT_RRF_K:g}, weights "
                  f"dense {MODES['hybrid']['dense']:g} / keyword {MODES['hybrid']['keyword']:g} (the defaults). "
                  "Columns: dense rank and keyword rank "
                  "(1-based, '-' = that leg did not return it), fused score. ✔ marks a relevant document.\n",
                  highlight=False)
    engine, reused, index_seconds = _open_demo_index(index_dir, corpus, rebuild, console)
    try:
        doc_count = engine.count()["keyword"]
        console.print(f"Index: {index_dir} ({doc_count} documents, "
                      f"{'reused' if reused else f'built in {index_seconds:.1f} s'})\n", highlight=False)

        t0 = time.perf_counter()
        top1: dict[str, list[str]] = {mode: [] for mode in MODES}
        wins = dict.fromkeys(MODES, 0)
        for n, q in enumerate(queries, 1):
            results = {mode: engine.search(q.query, top_k=TOP_K, filter=q.filter, weights=w)
                       for mode, w in MODES.items()}
            for mode, result in results.items():
                first = result.ids[0] if result.ids else ""
                top1[mode].append(first)
                wins[mode] += first in q.relevant
            marks = "  ".join(f"{mode} {'✔' if top1[mode][-1] in q.relevant else '✘'}" for mode in MODES)
            scope = f"   filter={escape(str(q.filter))}" if q.filter else ""
            title = f"[bold]{n}. {escape(q.query)}[/bold]{scope}   top-1: {marks}"
            console.print(hits_table(results["hybrid"].hits, explain=False, relevant=q.relevant, title=title))
            for line in _missing_relevant(engine, q, results["hybrid"].ids):
                console.print(f"   [dim]{escape(line)}[/dim]", highlight=False)
            if q.why:
                console.print(f"   [dim]why: {escape(q.why)}[/dim]")
            console.print()
        query_seconds = time.perf_counter() - t0

        console.rule("What a weight of 0 does")
        zero = _weight_zero_example(engine, queries)
        zero_info = None
        if zero is None:
            console.print("(no demo query has a result found by the keyword leg alone)")
        else:
            q, hybrid, dense_only, doc_id = zero
            console.print(f"Query {q.query!r}: {doc_id} was found by the keyword leg only.", highlight=False)
            console.print(hits_table(hybrid.hits, explain=True, relevant=q.relevant,
                                     title=f"weights dense={MODES['hybrid']['dense']:g}, "
                                           f"keyword={MODES['hybrid']['keyword']:g}"))
            console.print(hits_table(dense_only.hits, explain=True, relevant=q.relevant,
                                     title="weights dense=1, keyword=0: the keyword leg is not even called"))
            gone = doc_id not in dense_only.ids
            console.print(f"→ {doc_id} {'disappears' if gone else 'is still there'}: a leg with weight 0 "
                          "contributes nothing and cannot introduce a document.\n", highlight=False)
            zero_info = {"query": q.query, "doc_id": doc_id, "disappeared": gone}

        console.rule("Scoped to sessions (filter applied inside both stores, before their top-k)")
        q, flt, unscoped, scoped = _session_example(engine, queries)
        console.print(hits_table(unscoped.hits, explain=False, relevant=q.relevant, metadata_keys=("session_id",),
                                 title=f"{q.query!r}, every session"))
        console.print(hits_table(scoped.hits, explain=False, relevant=q.relevant, metadata_keys=("session_id",),
                                 title=f"{q.query!r}, filter={flt}"))
        sessions = sorted({h.metadata.get("session_id") for h in scoped.hits}, key=str)
        console.print(f"→ sessions in the scoped results: {sessions} (asked: {flt['session_id']}); nothing "
                      "outside the filter can leak, on either leg.\n", highlight=False)
        session_info = {"query": q.query, "filter": flt, "sessions": sessions}

        total = len(queries)
        rates = {mode: wins[mode] / total if total else 0.0 for mode in MODES}
        elapsed = time.perf_counter() - started
        console.rule("Summary")
        console.print(
            f"hits@1 over {total} demo queries: dense-only {wins['dense']}/{total} ({rates['dense']:.0%}), "
            f"keyword-only {wins['keyword']}/{total} ({rates['keyword']:.0%}), "
            f"hybrid {wins['hybrid']}/{total} ({rates['hybrid']:.0%})   [{elapsed:.1f} s]",
            highlight=False,
        )
    finally:
        engine.close()
    return DemoReport(index_dir, reused, doc_count, total, rates, index_seconds, query_seconds,
                      time.perf_counter() - started, zero_info, session_info, top1)


def main() -> None:
    """``python -m rrf_retriever.apps.demo`` (what ``make demo`` runs); ``--rebuild`` rebuilds the cached index."""
    import sys

    from rrf_retriever.errors import RRFRetrieverError

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        run_demo(rebuild="--rebuild" in sys.argv[1:])
    except RRFRetrieverError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
