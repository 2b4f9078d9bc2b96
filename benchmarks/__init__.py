"""The benchmarks: scripts grouped by what they measure, and the helpers they share.

* ``quality/``: nDCG, recall and parity on the BEIR collections and the hand-built sets;
* ``speed/``: latency, throughput, import and start-up time;
* ``scale/``: cost curves from 10k to 1M documents;
* ``reliability/``: the soak and what hostile requests cost;
* ``common/``: the one loader of the collections and cached vectors, the anchors, offline BM25, result paths.

Every script runs from the repository root as a file (``.venv/bin/python benchmarks/quality/bench_x.py``) or as a
module (``.venv/bin/python -m benchmarks.quality.bench_x``); see ``benchmarks/README.md``.
"""
