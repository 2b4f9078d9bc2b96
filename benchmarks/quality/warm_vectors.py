"""Warm the MiniLM vector caches of the BEIR collections once, so the benchmarks that read them start at once.

Usage:
    .venv/bin/python benchmarks/quality/warm_vectors.py collections   # fp32, five collections (bench_collections & co)
    .venv/bin/python benchmarks/quality/warm_vectors.py more          # fp32, the five more (time, lisa, adi, ...)
    .venv/bin/python benchmarks/quality/warm_vectors.py bundles       # fp32, SciFact + ArguAna (hybrid quality/speed)
    .venv/bin/python benchmarks/quality/warm_vectors.py int8          # int8, five collections (bench_relevance)

Each kind is one of the caches of :mod:`benchmarks.common.beir`, under ``benchmarks/.cache/`` (git-ignored); a
benchmark computes missing vectors on first use anyway, this only does it ahead. Slow on 2 cores (NPL's 11k and
ArguAna's 8.7k documents): run one kind at a time, under ``nice`` on a shared machine. Writes no results.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

KINDS = ("collections", "more", "bundles", "int8")


def warm(kind: str) -> None:
    """Compute (or find) the cached vectors of one kind, printing each collection's shapes."""
    from benchmarks.common.beir import (
        INT8_COLLECTIONS,
        MORE_COLLECTIONS,
        load_bundle,
        load_collection,
        load_int8_sample,
    )

    if kind in ("collections", "more"):
        # smallest first, so partial progress is useful
        names = ("med", "cacm", "scifact", "npl", "arguana") if kind == "collections" else MORE_COLLECTIONS
        for name in names:
            c = load_collection(name)
            print(kind, name, c.doc_vectors.shape, c.query_vectors.shape, flush=True)
    elif kind == "bundles":
        for name, split in (("arguana", "test"), ("scifact", "train"), ("scifact", "test")):
            b = load_bundle(name, split)
            print(kind, name, split, b.doc_vectors.shape, b.query_vectors.shape, flush=True)
    else:
        for name in INT8_COLLECTIONS:
            c = load_int8_sample(name)
            print(kind, name, c.doc_vectors.shape, c.query_vectors.shape, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kinds", nargs="+", choices=KINDS, help="which caches to warm")
    for kind in parser.parse_args().kinds:
        warm(kind)


if __name__ == "__main__":
    main()
