"""What `from rrf_retriever import EnsembleRRFRetriever` costs, part by part, and two source trees side by side.

Run: .venv/bin/python benchmarks/speed/bench_import_parts.py [--repeat 7] [--before /path/to/old/tree]

Each run is a fresh interpreter with `python -X importtime`; the self times of the modules it imports are summed by
top-level package (`rrf_retriever`, `llama_index`, `sqlalchemy`, `langsmith`, ...; the standard library's are in
`stdlib`). With `--before`, the same statements run with that tree first on `sys.path` (e.g. a checkout of main),
interleaved run by run with this tree, so both see the same machine load. Prints medians (wall time of the import
statement, and each part's summed self time) and writes benchmarks/results/import_parts.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS, ROOT

HERE = ROOT
CASES = {
    "EnsembleRRFRetriever (both frameworks)": "from rrf_retriever import EnsembleRRFRetriever",
    "LangChainRRFRetriever": "from rrf_retriever.langchain import LangChainRRFRetriever",
    "LlamaIndexRRFRetriever": "from rrf_retriever.llama_index import LlamaIndexRRFRetriever",
    "floor: both frameworks' BaseRetriever only":
        "import langchain_core.retrievers, llama_index.core.base.base_retriever",
}
STDLIB = sys.stdlib_module_names
LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")
PROBE = "import time; t0 = time.perf_counter()\n{stmt}\nprint((time.perf_counter() - t0) * 1000)"


def one_run(stmt: str, tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", PROBE.format(stmt=stmt)], check=True,
                         capture_output=True, text=True, env=env, cwd="/")
    parts: dict[str, float] = {}
    for line in out.stderr.splitlines():
        m = LINE.match(line)
        if m:
            top = m.group(2).split(".")[0]
            part = "stdlib" if top.lstrip("_") in STDLIB or top in STDLIB else top
            parts[part] = parts.get(part, 0.0) + int(m.group(1)) / 1000
    return {"wall_ms": float(out.stdout.strip().splitlines()[-1]), "self_total_ms": sum(parts.values()), **parts}


def median_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for r in rows for k in r}, key=lambda k: -statistics.median(r.get(k, 0.0) for r in rows))
    return {key: round(statistics.median(r.get(key, 0.0) for r in rows), 1) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, default=None, help="another source tree, measured side by side")
    args = parser.parse_args()
    trees = {"after": HERE} if args.before is None else {"before": args.before.resolve(), "after": HERE}
    results: dict[str, dict[str, object]] = {}
    for case, stmt in CASES.items():
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.repeat):
            for name, tree in trees.items():  # interleaved: both trees see the same load
                runs[name].append(one_run(stmt, tree))
        results[case] = {name: median_rows(rows) for name, rows in runs.items()}
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"load average {' '.join(load)}; medians of {args.repeat} fresh interpreters; ms")
    for case, by_tree in results.items():
        print(f"\n{case}")
        for name, row in by_tree.items():
            shown = {k: v for i, (k, v) in enumerate(row.items()) if i < 9 or k == "rrf_retriever"}
            print(f"  {name:<7} " + "  ".join(f"{k} {v:.0f}" for k, v in shown.items()))
    out = RESULTS / "import_parts.json"
    out.write_text(json.dumps({"load_average": load, "repeat": args.repeat,
                               "trees": {k: str(v) for k, v in trees.items()}, "results": results}, indent=2))


if __name__ == "__main__":
    main()
