"""Helpers the benchmark scripts share (public modules only; each script imports what it needs).

* :mod:`benchmarks.common.paths`: the repository, the BEIR data, the vector cache and the results folder;
* :mod:`benchmarks.common.beir`: the one loader of the BEIR collections and their cached MiniLM vectors;
* :mod:`benchmarks.common.embedders`: embedders that answer from the cached vectors;
* :mod:`benchmarks.common.anchors`: the LangChain and LlamaIndex hybrid recipes;
* :mod:`benchmarks.common.bm25_offline`: an offline BM25 scorer with every factor as a switch;
* :mod:`benchmarks.common.collection_fusion` and :mod:`benchmarks.common.collections_report`: the offline fusion,
  scoring and report of ``quality/bench_collections.py``.
"""
