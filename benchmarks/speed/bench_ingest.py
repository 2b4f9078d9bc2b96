"""Ingest with the default stack: passages per second for the embedding alone and for the whole ``add_texts``
(embedding + both stores), fp32 and int8 MiniLM side by side, and the stores alone (precomputed vectors).

Usage:
    nice .venv/bin/python benchmarks/speed/bench_ingest.py [--short 256] [--scifact 64] [--rounds 3]

Sets (``bench_minilm_throughput.load_passages``): ``short`` = 60-word passages (~90 word pieces: the set behind
">= 100 passages/s"), ``scifact`` = SciFact abstracts as indexed (most cut at 256 word pieces). Per round and
variant, interleaved: ``embed_documents`` on the set; ``EnsembleRRFRetriever.from_texts(texts, model)`` (the
default stack: sparse BM25 + int8 dense on qdrant-edge), i.e. embedding + writes; and the same ``from_texts`` with
a precomputed-vector embedding (the stores' share). Median of the rounds; CPU seconds of the process beside wall
(the load average is recorded: other jobs share the 2 cores). Writes ``benchmarks/results/ingest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

import numpy as np

from benchmarks.common.embedders import PrecomputedEmbedding
from benchmarks.common.paths import RESULTS
from benchmarks.speed.bench_minilm_throughput import load_passages
from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def from_texts(texts: list[str], model: Any) -> None:
    with EnsembleRRFRetriever.from_texts(texts, model, ids=[f"p{i}" for i in range(len(texts))]):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=256)
    parser.add_argument("--scifact", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sets = load_passages(args.scifact, args.short)
    models = {"fp32": MiniLMEmbedding(show_progress=False, precision="fp32"), "int8": MiniLMEmbedding(precision="int8",
                                                                                    show_progress=False)}
    for m in models.values():
        m.embed_documents(sets["short"][:8])  # load the sessions (the int8 graph is built once, then cached)
    tables = {name: PrecomputedEmbedding(texts, np.asarray(models["fp32"].embed_documents(texts), dtype=np.float32))
              for name, texts in sets.items()}
    load0 = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for set_name, texts in sets.items():
            for model_name, model in models.items():
                runs.setdefault(f"{set_name} | {model_name} | embed_documents", []).append(
                    timed(lambda model=model, texts=texts: model.embed_documents(texts)))
                runs.setdefault(f"{set_name} | {model_name} | from_texts (embed + stores)", []).append(
                    timed(lambda model=model, texts=texts: from_texts(texts, model)))
            runs.setdefault(f"{set_name} | stores alone (precomputed vectors)", []).append(
                timed(lambda texts=texts, set_name=set_name: from_texts(texts, tables[set_name])))
    out: dict[str, Any] = {"passages": {k: len(v) for k, v in sets.items()}, "rounds": args.rounds,
                           "load_at_start": load0, "rows": {}}
    for key, xs in runs.items():
        n = len(sets[key.split(" | ")[0]])
        wall = statistics.median(x[0] for x in xs)
        cpu = statistics.median(x[1] for x in xs)
        out["rows"][key] = {"passages_per_s": round(n / wall, 1), "cpu_ms_per_passage": round(cpu * 1000 / n, 2),
                            "wall_s": [round(x[0], 2) for x in xs]}
        print(f"{key:60s} {n / wall:8.1f} passages/s  {cpu * 1000 / n:7.2f} CPU ms/passage", flush=True)
    out["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (RESULTS / "ingest.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
