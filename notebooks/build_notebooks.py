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

`EnsembleRRFRetriever` runs a dense search (MiniLM vectors in Qdrant) and a keyword search (BM25 in SQLite FTS5)
concurrently and fuses them with weighted Reciprocal Rank Fusion:
`score(d) = sum_leg weight_leg / (rrf_k + rank_leg(d))`; the defaults (`rrf_k = 2`, keyword weight 1.25, dense 1)
were tuned on SciFact train (see the weight-tuning notebook and `benchmarks/RESULTS.md`).

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
]

TUNING = [
    new_markdown_cell("""# Weight tuning on SciFact (train queries)

Sweep the semantic and keyword weights and the RRF constant `rrf_k`, measure nDCG@10 on SciFact **train** queries
(never tune on the test split you report), and pick defaults.

Each leg runs once per query (top 100); every configuration is then a pure weighted-RRF fusion of those lists,
so the sweep costs only the fusion and the metric. With RRF only the *ratio* of the two weights matters.

`RRF_NOTEBOOK_SMALL=1` uses a tiny subset (300 documents including the relevant ones, 30 queries) so the test
suite runs this notebook in seconds; its figures are then noisy and say nothing about quality."""),
    new_code_cell("""import os
import random
from pathlib import Path

from rrf_retriever.evaluation import doc_text, evaluate, load_beir

SMALL = os.environ.get("RRF_NOTEBOOK_SMALL") == "1"
repo = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "pyproject.toml").is_file())
DATA = repo.parent / "shared" / "data" / "scifact"
if not (DATA / "qrels" / "train.tsv").is_file():
    raise FileNotFoundError(
        f"SciFact is not at {DATA}: put the BEIR SciFact folder (corpus.jsonl, queries.jsonl, qrels/train.tsv) "
        "there to run this notebook."
    )
ds = load_beir(DATA, split="train")
queries = dict(sorted(ds.queries.items()))
corpus = ds.corpus
if SMALL:
    rng = random.Random(0)
    queries = dict(rng.sample(sorted(queries.items()), 30))
    keep = {d for q in queries for d in ds.qrels[q] if d in corpus}
    others = sorted(set(corpus) - keep)
    keep |= set(rng.sample(others, 300 - len(keep)))
    corpus = {d: corpus[d] for d in sorted(keep)}
qrels = {q: ds.qrels[q] for q in queries}
print(f"{len(corpus)} documents, {len(queries)} train queries (small={SMALL})")"""),
    new_code_cell("""from rrf_retriever.embeddings import MiniLMEmbedding, cached_embed_documents, default_cache_dir
from rrf_retriever.stores.fts5 import FTS5KeywordStore
from rrf_retriever.stores.qdrant import QdrantDenseStore

embedding = MiniLMEmbedding()
keyword = FTS5KeywordStore()
dense = QdrantDenseStore(embedding)
ids = list(corpus)
texts = [doc_text(corpus[d]) for d in ids]
# The title goes in the metadata too: the default FTS5 store indexes it as its own field (weight 2).
keyword.add(ids, texts, [{"title": corpus[d].get("title", "")} for d in ids])
# Vectors are cached on disk by content: only the first run pays for embedding the corpus.
vectors = cached_embed_documents(embedding, texts, default_cache_dir() / "notebook-embeddings")
dense.add(ids, texts, vectors=vectors.tolist())

DEPTH = 100
ranked = {}
for qid, text in queries.items():
    ranked[qid] = {
        "dense": dense.search(embedding.embed_query(text), DEPTH),
        "keyword": keyword.search(text, DEPTH),
    }"""),
    new_code_cell("""from ranx import Qrels, Run
from ranx import evaluate as ranx_evaluate

from rrf_retriever.engine import DEFAULT_HYBRID_RRF_K, DEFAULT_LEG_WEIGHTS
from rrf_retriever.fusion import weighted_rrf

WEIGHTS = [0.0, 0.25, 0.5, 1.0, 1.25, 2.0, 4.0]
K_VALUES = sorted({1, DEFAULT_HYBRID_RRF_K, 5, 10, 20, 40, 60, 100, 200})
SHIPPED = (DEFAULT_LEG_WEIGHTS["dense"], DEFAULT_LEG_WEIGHTS["keyword"], DEFAULT_HYBRID_RRF_K)


def sweep(configs):
    \"\"\"nDCG@10 of each (semantic_weight, keyword_weight, rrf_k), in ONE ranx call: each query of each
    configuration is its own run key, so ranx converts and compiles once instead of once per configuration.\"\"\"
    run, qrels_all = {}, {}
    for ws, wk, k in configs:
        for qid, legs in ranked.items():
            fused = weighted_rrf(legs, {"dense": ws, "keyword": wk}, k=k, limit=DEPTH)
            key = f"{ws}|{wk}|{k}|{qid}"
            run[key] = {h.id: h.score for h in fused} or {"__none__": 0.0}
            qrels_all[key] = qrels[qid]
    scored = Run.from_dict(run)
    ranx_evaluate(Qrels.from_dict(qrels_all), scored, "ndcg@10", make_comparable=True)
    per_query = scored.scores["ndcg@10"]
    return {cfg: float(np.mean([per_query[f"{cfg[0]}|{cfg[1]}|{cfg[2]}|{q}"] for q in ranked])) for cfg in configs}


import numpy as np

configs = [(ws, wk, k) for ws in WEIGHTS for wk in WEIGHTS if ws or wk for k in K_VALUES]
results = sweep(configs)
grid = {(ws, wk): results[(ws, wk, SHIPPED[2])] for ws in WEIGHTS for wk in WEIGHTS if ws or wk}
print(f"dense only {grid[(1.0, 0.0)]:.4f}   keyword only {grid[(0.0, 1.0)]:.4f}   "
      f"hybrid 1:1 {grid[(1.0, 1.0)]:.4f}   shipped {grid[SHIPPED[:2]]:.4f}   (rrf_k={SHIPPED[2]:g})")"""),
    new_code_cell("""import matplotlib.pyplot as plt
import numpy as np

heat = np.full((len(WEIGHTS), len(WEIGHTS)), np.nan)
for (ws, wk), value in grid.items():
    heat[WEIGHTS.index(ws), WEIGHTS.index(wk)] = value
fig, ax = plt.subplots(figsize=(6, 5))
im = ax.imshow(heat, origin="lower", cmap="viridis")
ax.set_xticks(range(len(WEIGHTS)), [str(w) for w in WEIGHTS])
ax.set_yticks(range(len(WEIGHTS)), [str(w) for w in WEIGHTS])
ax.set_xlabel("keyword weight")
ax.set_ylabel("semantic (dense) weight")
ax.set_title(f"SciFact train nDCG@10, rrf_k = {SHIPPED[2]:g}")
for (i, j), value in np.ndenumerate(heat):
    if not np.isnan(value):
        ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="white", fontsize=7)
fig.colorbar(im, ax=ax)
plt.show()"""),
    new_code_cell("""best_ws, best_wk = max(grid, key=grid.get)
by_k = {k: results[(best_ws, best_wk, k)] for k in K_VALUES}
equal_by_k = {k: results[(1.0, 1.0, k)] for k in K_VALUES}
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(K_VALUES, [by_k[k] for k in K_VALUES], marker="o",
        label=f"weights {best_ws}:{best_wk} (best at rrf_k={SHIPPED[2]:g})")
ax.plot(K_VALUES, [equal_by_k[k] for k in K_VALUES], marker="s", label="weights 1:1")
ax.set_xscale("log")
ax.set_xlabel("rrf_k")
ax.set_ylabel("nDCG@10")
ax.legend()
plt.show()"""),
    new_markdown_cell("""## Recommended defaults

The cell below prints the best configuration of the sweep next to the shipped defaults
(`semantic_weight=1, keyword_weight=1.25, rrf_k=2`, chosen by `benchmarks/bench_sweep.py` with the
one-standard-error rule). Change the defaults only when the gain holds on the full train
set (not `RRF_NOTEBOOK_SMALL`) and is larger than the spread between neighbouring cells of the heatmap; then
confirm once on the test split."""),
    new_code_cell("""best_ws, best_wk, best_k = max(results, key=results.get)
default = results[SHIPPED]
best = results[(best_ws, best_wk, best_k)]
print(f"shipped defaults  semantic={SHIPPED[0]:g} keyword={SHIPPED[1]:g} rrf_k={SHIPPED[2]:g}  nDCG@10 = {default:.4f}")
print(f"best of the sweep semantic={best_ws} keyword={best_wk} rrf_k={best_k}  nDCG@10 = {best:.4f} "
      f"({best - default:+.4f})")
if SMALL:
    print("small subset: these figures are for a smoke run only")"""),
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
