"""Cold start: a new process that opens an index and answers one query, warm and first-ever (empty graph cache).

Run: .venv/bin/python benchmarks/speed/bench_cold_start.py [--docs 2000] [--repeat 5] [--tree before=/tmp/old after=.]

``--tree NAME=PATH`` (repeatable) runs each measure with ``PYTHONPATH=PATH`` (a checkout of another commit, e.g.
``git worktree add /tmp/old <commit>``), interleaved with the other trees in every round: before/after side by side.

Builds (once, kept under benchmarks/.cache) an index of the first ``--docs`` SciFact abstracts with the CLI's
defaults (int8 MiniLM, qdrant-edge both legs), then times in fresh interpreters, interleaved:

* ``cli search``: ``rrf-retriever search QUERY -d INDEX`` wall time (the CLI imports no framework);
* ``open + first answer``: ``EnsembleRRFRetriever.open(INDEX, MiniLMEmbedding())`` and one ``invoke``, timed
  after the frameworks' own imports (``langchain_core.retrievers``, ``llama_index.core.retrievers``), which are
  timed apart;

each with the MiniLM graph cache warm (the usual case: building the index wrote it) and empty (the first run on
a machine that did not build the index). Prints medians and per-part figures and writes
``benchmarks/results/cold_start.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import CACHE, DATA, RESULTS, ROOT

CORPUS = DATA / "scifact" / "corpus.jsonl"
QUERY = "vitamin d deficiency and bone fractures"
CLI = Path(sys.executable).with_name("rrf-retriever")

PROBE = """
import json, sys, time
t0 = time.perf_counter()
import langchain_core.retrievers, llama_index.core.retrievers
t1 = time.perf_counter()
from rrf_retriever import EnsembleRRFRetriever, MiniLMEmbedding
t2 = time.perf_counter()
retriever = EnsembleRRFRetriever.open(sys.argv[1], MiniLMEmbedding())
t3 = time.perf_counter()
docs = retriever.invoke(sys.argv[2])
t4 = time.perf_counter()
assert docs, "no answer"
print(json.dumps({"frameworks": t1 - t0, "import": t2 - t1, "open": t3 - t2, "first_answer": t4 - t3,
                  "after_frameworks": t4 - t1}))
"""


def build_index(docs: int) -> Path:
    """The index of the first ``docs`` SciFact abstracts, built once by the CLI with its defaults."""
    index = CACHE / f"cold_start_scifact_{docs}"
    if (index / "rrf-index.json").is_file():
        return index
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        with CORPUS.open(encoding="utf-8") as src, corpus.open("w", encoding="utf-8") as dst:
            for _, line in zip(range(docs), src):
                dst.write(line)
        subprocess.run([str(CLI), "index", str(corpus), "-d", str(index)], check=True, capture_output=True)
    return index


def run_cli(index: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([str(CLI), "search", QUERY, "-d", str(index)], check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def run_open(index: Path, env: dict[str, str]) -> dict[str, float]:
    # -P: no current directory on sys.path, so PYTHONPATH (a --tree) decides which code runs, as for the CLI
    done = subprocess.run([sys.executable, "-P", "-c", PROBE, str(index), QUERY], check=True, capture_output=True,
                          text=True, env=env)
    return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


def measure(index: Path, repeat: int, trees: dict[str, str | None]) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Every measure ``repeat`` times per tree, the trees interleaved in each round."""
    base = {**os.environ, "HF_HUB_OFFLINE": "1"}
    envs = {name: base if path is None else {**base, "PYTHONPATH": path} for name, path in trees.items()}
    for env in envs.values():
        run_cli(index, env)  # the warm cache really is warm (and each tree's bytecode compiled)
    rows: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"cli_warm": [], "cli_cold": [], "open_warm": [], "open_cold": []} for name in trees}
    for _ in range(repeat):
        for cache in ("warm", "cold"):
            for name, warm_env in envs.items():
                with tempfile.TemporaryDirectory() as empty:
                    env = warm_env if cache == "warm" else {**warm_env, "RRF_RETRIEVER_CACHE_DIR": empty}
                    rows[name][f"cli_{cache}"].append({"wall": run_cli(index, env)})
                with tempfile.TemporaryDirectory() as empty:
                    env = warm_env if cache == "warm" else {**warm_env, "RRF_RETRIEVER_CACHE_DIR": empty}
                    rows[name][f"open_{cache}"].append(run_open(index, env))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="Measure the code at PATH (as PYTHONPATH) under NAME; repeatable (default: this one).")
    args = parser.parse_args()
    trees: dict[str, str | None] = {}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        trees[name] = str(Path(path).resolve())
    trees = trees or {"this": None}
    index = build_index(args.docs)
    load_before = os.getloadavg()[0]
    rows = measure(index, args.repeat, trees)
    load = os.getloadavg()
    print(f"index: {args.docs} SciFact abstracts ({index}); {args.repeat} runs each, interleaved; "
          f"load average {load_before:.1f} before, {load[0]:.1f} after")
    summaries = {}
    for name, tree_rows in rows.items():
        summary = {kind: {part: round(statistics.median(r[part] for r in runs), 3) for part in runs[0]}
                   for kind, runs in tree_rows.items()}
        summaries[name] = summary
        print(f"[{name}] rrf-retriever search, wall: warm cache {summary['cli_warm']['wall']:.2f} s, "
              f"empty cache {summary['cli_cold']['wall']:.2f} s")
        for cache in ("warm", "cold"):
            s = summary[f"open_{cache}"]
            print(f"[{name}] open + first answer ({cache:>4} cache): {s['after_frameworks']:.2f} s after the "
                  f"frameworks' imports ({s['frameworks']:.2f} s): import {s['import']:.2f}, open {s['open']:.2f}, "
                  f"first answer {s['first_answer']:.2f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "cold_start.json"
    only = next(iter(summaries)) if len(summaries) == 1 else None
    payload: dict[str, object] = {"docs": args.docs, "repeat": args.repeat, "load_average": load[0],
                                  "load_average_before": load_before, "trees": trees}
    if only is not None:
        payload.update({"median_seconds": summaries[only], "runs": rows[only]})
    else:
        payload.update({"median_seconds": summaries, "runs": rows})
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"figures in {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
