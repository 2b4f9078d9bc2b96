"""How long `import rrf_retriever` (and the engine) takes, and what it pulls in.

Run: .venv/bin/python benchmarks/speed/bench_import.py [--repeat 15]

Each measurement is a fresh interpreter (python -X importtime is not needed: we time the import statement itself and
subtract an empty interpreter's start-up). Prints medians and writes benchmarks/results/import_time.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS

CASES = {
    "import rrf_retriever": "import rrf_retriever",
    "fusion + analyzer": "from rrf_retriever import weighted_rrf, Analyzer, build_match_query",
    "engine (ensemble.py)": "import rrf_retriever.engine",
    "EnsembleRRFRetriever (LangChain + LlamaIndex)": "from rrf_retriever import EnsembleRRFRetriever",
}
HEAVY = ("langchain_core", "llama_index", "qdrant_client", "numpy", "onnxruntime", "pydantic")

PROBE = """
import sys, time, json
t0 = time.perf_counter()
{stmt}
dt = (time.perf_counter() - t0) * 1000
heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps({{"ms": dt, "heavy": heavy}}))
"""


def measure(stmt: str, repeat: int) -> dict[str, object]:
    times, heavy = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", PROBE.format(stmt=stmt, heavy=HEAVY)], check=True,
                             capture_output=True, text=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(row["ms"])
        heavy = row["heavy"]
    return {"median_ms": statistics.median(times), "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))],
            "heavy_modules": heavy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    results = {name: measure(stmt, args.repeat) for name, stmt in CASES.items()}
    print(f"{'what':<48} {'median ms':>10} {'p95 ms':>8}  heavy modules loaded")
    for name, row in results.items():
        print(f"{name:<48} {row['median_ms']:>10.1f} {row['p95_ms']:>8.1f}  {', '.join(row['heavy_modules']) or '-'}")
    out = RESULTS / "import_time.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
