"""Write the numbered notebooks with nbformat, outputs stripped (run: .venv/bin/python notebooks/build_notebooks.py).

The notebooks are the source of truth once written; this script keeps them reproducible and diff-friendly.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

QUICKSTART = [
    new_markdown_cell("""# rrf-retriever quickstart: one retriever, both frameworks

`EnsembleRRFRetriever` runs a dense search (MiniLM vectors in Qdrant) and a keyword search (BM25 as Qdrant sparse
vectors; SQLite FTS5 with `keyword="fts5"`)
concurrently and fuses them with weighted Reciprocal Rank Fusion:
`score(d) = sum_leg weight_leg / (rrf_k + rank_leg(d))`; the defaults (`rrf_k = 60`, keyword weight 1.25, dense 1)
were chosen across five collections (`benchmarks/RESULTS.md`); the weight-tuning notebook fits them to your own
judged queries with `retriever.tune(...)`.

The same object is a LangChain retriever (`invoke`) and a LlamaIndex retriever (`retrieve`). Everything here runs
offline and in memory."""),
    new_code_cell("""from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import MiniLMEmbedding

texts = [
    "Error E42 means the sync token expired; sign in again to refresh it.",
    "To restore a deleted file, open the trash in the web console and click Restore.",
    "Snapshots are kept for 90 days by default; change retention in the vault settings.",
    "The agent uses little battery: it pauses uploads when the laptop is unplugged.",
    "If a laptop is stolen, revoke the device from the console so it can no longer sync.",
    "Error E42 was fixed for mobile clients in version 2.4.1.",
]
metadatas = [{"session_id": 1}, {"session_id": 1}, {"session_id": 2}, {"session_id": 2}, {"session_id": 3},
             {"session_id": 3}]
ids = [f"doc-{i}" for i in range(len(texts))]

retriever = EnsembleRRFRetriever.from_texts(texts, MiniLMEmbedding(), metadatas=metadatas, ids=ids, top_k=3)
retriever"""),
    new_markdown_cell("""## LangChain: `invoke`, with a filter

Each `Document` says how it was scored: `rrf_score` (fused), `rrf_ranks` and `rrf_scores` per leg.
A filter is applied inside both stores before their top-k (a list means any-of)."""),
    new_code_cell("""docs = retriever.invoke("E42 error")
for d in docs:
    print(d.id, round(d.metadata["rrf_score"], 5), d.metadata["rrf_ranks"], d.page_content[:50])

scoped_docs = retriever.invoke("E42 error", filter={"session_id": [3]})
print("session 3 only:", [(d.id, d.metadata["session_id"]) for d in scoped_docs])
assert all(d.metadata["session_id"] == 3 for d in scoped_docs)"""),
    new_markdown_cell("""## LlamaIndex: `retrieve`, and `scoped(...)` for filters

LlamaIndex's `retrieve(query)` takes no keywords, so `scoped(filter=..., exclude_ids=...)` returns a copy with
those defaults (it shares the same stores)."""),
    new_code_cell("""nodes = retriever.retrieve("my computer was stolen")
for n in nodes:
    print(n.node.node_id, round(n.score, 5), n.node.metadata["rrf_ranks"], n.node.get_content()[:50])

session_two = retriever.scoped(filter={"session_id": [2]}, exclude_ids=["doc-2"])
print("scoped:", [(n.node.node_id, n.node.metadata["session_id"]) for n in session_two.retrieve("battery")])"""),
    new_markdown_cell("""## Weights at runtime

`update_settings` swaps an immutable settings snapshot; the next query uses it. A leg with weight 0 is not
called and cannot add documents."""),
    new_code_cell("""retriever.update_settings(keyword_weight=0.0)
print("dense only:", [d.metadata["rrf_ranks"] for d in retriever.invoke("E42 error")])
retriever.update_settings(keyword_weight=1.0)
print(retriever.settings)"""),
    new_markdown_cell("""## Filter operators

Besides the shorthand (`{"session_id": [1, 2]}`: a list is any-of), filters take the operators LangChain vector
stores use: `$eq $ne $in $nin $gt $gte $lt $lte $exists` and `$and $or $not`. They run inside both stores before
their top-k. (LlamaIndex users can pass a `MetadataFilters` object instead.)"""),
    new_code_cell("""late = retriever.invoke("error", k=6, filter={"$or": [{"session_id": {"$gte": 3}}, {"session_id": 1}]})
print("sessions 1 or >= 3:", sorted({d.metadata["session_id"] for d in late}))
assert all(d.metadata["session_id"] != 2 for d in late)"""),
    new_markdown_cell("""## Pinned ids and pages

`pinned_ids` are always in the first page when they pass the filter (`rrf_pinned` in the metadata): the safety net
for a memory that must be seen. `offset` pages over ONE fused list: page 2 at `k=2` is results 3-4 of `k=4`."""),
    new_code_cell("""pinned = retriever.invoke("E42 error", k=3, pinned_ids=["doc-3"])
print("pinned:", [(d.id, d.metadata.get("rrf_pinned", False)) for d in pinned])
assert "doc-3" in [d.id for d in pinned]

first_four = [d.id for d in retriever.invoke("laptop files", k=4)]
page_two = [d.id for d in retriever.invoke("laptop files", k=2, offset=2)]
print("top 4:", first_four, " page 2 at k=2:", page_two)
assert page_two == first_four[2:]"""),
    new_markdown_cell("""## Diversity (MMR) and a reranker

`diversity=` is the MMR lambda (1.0 = the fused order, lower = less redundancy), computed on the candidates' stored
dense vectors, so nothing is re-embedded. `reranker=` takes a callable `(query, texts) -> scores`, a LangChain
`BaseDocumentCompressor` (e.g. a cross-encoder reranker) or a LlamaIndex `BaseNodePostprocessor`; it sees
`rerank_k` fused candidates, and the fused score and ranks stay in the metadata next to `rrf_rerank_score`."""),
    new_code_cell("""print("fused:  ", [d.id for d in retriever.invoke("E42 error", k=4)])
print("MMR 0.3:", [d.id for d in retriever.invoke("E42 error", k=4, diversity=0.3)])


def shortest_first(query, texts):  # a toy reranker: any cross-encoder has this shape
    return [-len(t) for t in texts]


reranked = retriever.invoke("E42 error", k=3, reranker=shortest_first, rerank_k=6)
for d in reranked:
    print(d.id, d.metadata["rrf_rerank_score"], d.metadata["rrf_ranks"], round(d.metadata["rrf_score"], 5))
lengths = [len(d.page_content) for d in reranked]
assert lengths == sorted(lengths)"""),
]

TUNING = [
    new_markdown_cell("""# Tuning the fusion on your own judged queries

The defaults (`rrf_k = 60`, keyword weight 1.25, dense 1, weighted RRF, each leg fetching `max(2 * top_k, 40)`)
were chosen across five public collections. Your documents and your users' questions are not those collections:
`retriever.tune(queries, qrels)` fits `rrf_k`, the weights, the fusion method and the fetch depth to **your**
judged queries, by k-fold cross-validation, and changes the settings only when the gain is real (a paired-bootstrap
95% interval above 0).

This notebook runs offline on the evaluation set shipped with the package: the demo corpus (227 documents about an
invented product, Tidewell: docs, FAQs, tickets, changelogs) and 53 judged queries of four kinds: *keyword*
(error codes, config keys, names), *paraphrase* (the answer uses other words), *hybrid*, and *session*-scoped
(a filter on `session_id`). It is a BEIR folder, so the same steps work on any BEIR folder of yours, and from the
shell: `rrf-retriever tune -d INDEX_DIR BEIR_DIR`."""),
    new_code_cell("""import json
from collections import Counter

from rrf_retriever.evaluation import doc_text, load_beir
from rrf_retriever.tuning import demo_eval_dir, load_judged_queries

ds = load_beir(demo_eval_dir())
queries, qrels = load_judged_queries()  # {qid: {"text", "filter"?}}, {qid: {doc_id: grade}}
rows = [json.loads(line) for line in (demo_eval_dir() / "queries.jsonl").read_text().splitlines()]
kinds = {row["_id"]: row["metadata"]["kind"] for row in rows}
print(f"{len(ds.corpus)} documents, {len(queries)} judged queries {dict(Counter(kinds.values()))}")
for qid in ("q01", "q17", "q39", "q48"):
    print(f"  {qid} [{kinds[qid]}] {queries[qid]['text']!r} filter={queries[qid].get('filter')} -> {qrels[qid]}")"""),
    new_code_cell("""from rrf_retriever import EnsembleRRFRetriever
from rrf_retriever.embeddings import MiniLMEmbedding, cached_embed_documents, default_cache_dir
from rrf_retriever.stores.fts5.store import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore

embedding = MiniLMEmbedding()
ids = list(ds.corpus)
texts = [doc_text(ds.corpus[d]) for d in ids]
metadatas = [ds.corpus[d]["metadata"] for d in ids]
keyword = FTS5KeywordStore()
dense = QdrantDenseStore(embedding)
keyword.add(ids, texts, metadatas)
# Vectors are cached on disk by content: only the first run pays for embedding the corpus (~15 s on 2 cores).
vectors = cached_embed_documents(embedding, texts, default_cache_dir() / "notebook-embeddings")
dense.add(ids, texts, metadatas, vectors=vectors.tolist())
retriever = EnsembleRRFRetriever(dense=dense, keyword=keyword, top_k=10)
print(retriever.settings)"""),
    new_markdown_cell("""## Why hybrid: each leg alone, by kind of query

nDCG@10 per query kind for the dense leg alone, the keyword leg alone and the default hybrid. The metric is
computed in pure Python (`rrf_retriever.tuning.metric_value`, equal to ranx's; no numba start-up)."""),
    new_code_cell("""import matplotlib.pyplot as plt
import numpy as np

from rrf_retriever.tuning import metric_value

MODES = {"dense only": {"dense": 1.0, "keyword": 0.0}, "keyword only": {"dense": 0.0, "keyword": 1.0},
         "hybrid (defaults)": None}


def ndcg_by_kind(weights):
    per_kind = {}
    for qid, spec in queries.items():
        hits = retriever.search(spec["text"], top_k=10, filter=spec.get("filter"), weights=weights).hits
        per_kind.setdefault(kinds[qid], []).append(metric_value("ndcg", [h.id for h in hits], qrels[qid], 10))
    return {kind: float(np.mean(v)) for kind, v in sorted(per_kind.items())}


by_mode = {mode: ndcg_by_kind(w) for mode, w in MODES.items()}
kind_names = list(next(iter(by_mode.values())))
fig, ax = plt.subplots(figsize=(7, 3.5))
for i, (mode, values) in enumerate(by_mode.items()):
    ax.bar(np.arange(len(kind_names)) + (i - 1) * 0.27, [values[k] for k in kind_names], width=0.27, label=mode)
ax.set_xticks(range(len(kind_names)), kind_names)
ax.set_ylabel("nDCG@10")
ax.set_ylim(0, 1)
ax.legend(fontsize=8)
plt.show()
for mode, values in by_mode.items():
    print(f"{mode:18s} " + "  ".join(f"{k} {v:.3f}" for k, v in values.items()))"""),
    new_markdown_cell("""## `tune()`: cross-validated, with a significance test

Each leg is searched **once** per query, through the engine (so each query's filter applies inside the stores),
at the deepest fetch depth of the grid; each of the 97 settings (`rrf_k` {5, 10, 20, 40, 60, 100} x keyword
weight {0.5 ... 2} x fusion {rrf, dbsf, relative_score} x fetch {20, 40}, plus the current one) is then a pure
fusion of those lists. On each of 5 folds the best setting is chosen on the other 4 and scored on the held-out
queries next to the current settings. The per-query differences give the cross-validated gain and its
paired-bootstrap 95% interval (2000 resamples, seeded). Only if the interval lies above 0 is the best setting
applied (`update_settings`; for an index directory also saved in its manifest)."""),
    new_code_cell("""import time

t0 = time.perf_counter()
report = retriever.tune(queries, qrels, metric="ndcg@10", folds=5)
print(f"tune() took {time.perf_counter() - t0:.1f} s")
report"""),
    new_code_cell("""fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4), gridspec_kw={"wspace": 0.75})
report.plot(ax=left)  # the grid: nDCG@10 against rrf_k per keyword weight (in-sample, all queries)
diffs = np.array([tuned - current for current, tuned in report.per_query.values()])
right.hist(diffs, bins=np.linspace(-1.05, 1.05, 22), color="tab:blue")  # 0 is the middle bin
right.axvline(report.cv_gain, color="black", label=f"mean {report.cv_gain:+.3f}")
lo, hi = report.ci95
right.axvspan(lo, hi, color="tab:orange", alpha=0.3, label=f"95% CI [{lo:+.3f}, {hi:+.3f}]")
right.set_xlabel("per-query nDCG@10, cross-validated tuned minus current")
right.set_ylabel("queries")
right.legend(fontsize=8)
plt.show()"""),
    new_markdown_cell("""## Reading the verdict

`report.cv_gain` is what tuning is expected to give on queries it did not see; `report.chosen_score` (the best
setting's in-sample mean) is optimistic by construction. With ~50 queries a few hundredths of nDCG is within the
noise, and then `tune()` keeps the current settings: that is the point of the interval. `report.to_dict()` is
JSON; `apply=False` only reports; `grid=TuneGrid(...)` changes what is tried."""),
    new_code_cell("""verdict = "applied" if report.applied else "kept the current settings"
print(f"{verdict}: cv gain {report.cv_gain:+.4f}, 95% CI [{report.ci95[0]:+.4f}, {report.ci95[1]:+.4f}]")
print(f"chosen over all queries: {report.chosen.label()}")
print(f"retriever now uses: {retriever.settings}")"""),
]

def write(name: str, cells: list) -> None:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    write("1_quickstart.ipynb", QUICKSTART)
    write("2_weight_tuning.ipynb", TUNING)
