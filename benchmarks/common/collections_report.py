"""Phase 2 of ``quality/bench_collections.py``: offline grid, margins over the best anchor, LOCO, bootstrap CIs, tables."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.common.beir import Collection
from benchmarks.common.collection_fusion import (
    ANALYZER,
    ANCHOR_HYBRIDS,
    CONV_LARGE,
    CONV_SMALL,
    TOP_K,
    Offline,
    Scorer,
    all_settings,
    bootstrap_ci,
    q_conv,
    ranx_metrics,
    run_setting,
    setting_name,
)
from benchmarks.common.paths import RESULTS
from rrf_retriever import Hit, weighted_rrf

#: The shipped fusion (``DEFAULT_RRF_K`` 60, keyword weight 1.25, ``fetch_k`` max(2 top_k, 40): 4x at top_k=10) over
#: the cached FTS5 leg: the offline analogue; the shipped keyword store itself (qdrant-edge sparse BM25) is measured
#: through the API (``ours: shipped defaults``).
SHIPPED = {"mode": "rrf", "kw": "fts5", "k": 60, "w": 1.25, "mult": 4}
TEXTBOOK = {"mode": "rrf", "kw": "fts5", "k": 60, "w": 1.0, "mult": 2}


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(f"{x:.4f}" if isinstance(x, float) else str(x) for x in r) + " |")
    return "\n".join(out)


def fmt_margin(m: float) -> str:
    return f"{m:+.4f}"


def analyze(data: dict[str, tuple[Collection, dict[str, Any]]]) -> None:
    names = list(data)
    result: dict[str, Any] = {"collections": {}, "notes": {}}
    offs: dict[str, Offline] = {}
    scorers: dict[str, Scorer] = {}
    best_anchor: dict[str, tuple[str, np.ndarray]] = {}
    system_rows: dict[str, dict[str, Any]] = {}

    # ---------------------------------------------------------------- fixed systems (ranx) + per-query nDCG
    for name in names:
        c, p1 = data[name]
        off = Offline(c, p1["legs"])
        offs[name] = off
        sc = Scorer(c)
        scorers[name] = sc
        pos = {d: i for i, d in enumerate(c.doc_ids)}
        everything = list(range(len(c.query_ids)))
        subset = p1["subset"]
        sub_q = [c.query_ids[i] for i in subset]
        systems: dict[str, dict[str, list[str]]] = {}
        for leg in ("dense", "fts5", "bm25s", "bm25s_snowball_dedup", "fts5_title"):
            if leg in off.lists:
                systems[f"leg: {leg}"] = {q: [c.doc_ids[d] for d in off.lists[leg][i][:100]]
                                          for i, q in enumerate(c.query_ids)}
        systems.update(p1["anchors"])
        systems.update(p1["ours_api"])
        rows: dict[str, Any] = {}
        per_query: dict[str, np.ndarray] = {}
        for sname, run in systems.items():
            full = len(run) == len(c.query_ids)
            row: dict[str, Any] = {}
            if full:
                row["all"] = ranx_metrics(c, run, c.query_ids)
                nd = np.array([sc.ndcg10(i, [pos[d] for d in run[q]]) for i, q in enumerate(c.query_ids)])
                per_query[sname] = nd
                assert abs(nd.mean() - row["all"]["ndcg@10"]) < 6e-5, (name, sname, nd.mean(), row["all"])
            if len(subset) != len(everything):
                row["subset"] = ranx_metrics(c, run, sub_q)
            rows[sname] = row
        system_rows[name] = rows
        # best anchor hybrid: by nDCG@10 over all queries (ArguAna: LangChain only on the subset; it is checked
        # there against the others and reported)
        candidates = {a: per_query[a].mean() for a in ANCHOR_HYBRIDS if a in per_query}
        best = max(candidates, key=lambda a: candidates[a])
        best_anchor[name] = (best, per_query[best])
        note = None
        if "LangChain EnsembleRetriever" not in per_query:
            lc = rows["LangChain EnsembleRetriever"]["subset"]["ndcg@10"]
            b_sub = rows[best]["subset"]["ndcg@10"]
            note = f"LangChain on the 300-query subset {lc:.4f} vs best other anchor there ({best}) {b_sub:.4f}"
            assert lc < b_sub
        result["collections"][name] = {
            "queries": len(c.query_ids), "docs": len(c.doc_ids), "has_titles": c.has_titles,
            "subset": "random.Random(0).sample(range(1406), 300) (ArguAna: every system on this subset)" if name == "arguana" else "all",
            "systems": rows, "best_anchor": best, "best_anchor_ndcg@10": round(float(per_query[best].mean()), 4),
            "langchain_note": note,
        }
        # ------------------------------------------------------------ offline fusion == invoke() check
        api = p1["ours_api"]["ours: shipped defaults (texts only)"]
        same = 0
        same_lib = 0
        for i, q in enumerate(c.query_ids):
            mine = [c.doc_ids[d] for d in off.rrf(i, [("dense", 1.0, 200), ("fts5", 1.25, 200)], 60, 100)]
            lib = [h.id for h in weighted_rrf(
                {"dense": [Hit(c.doc_ids[d]) for d in off.lists["dense"][i][:200]],
                 "keyword": [Hit(c.doc_ids[d]) for d in off.lists["fts5"][i][:200]]},
                {"dense": 1.0, "keyword": 1.25}, k=60, limit=100)]
            same += mine == api[q]
            same_lib += lib == api[q]
        result["collections"][name]["offline_equals_invoke"] = {
            "queries": len(c.query_ids), "offline_fast_identical": same, "weighted_rrf_identical": same_lib}
        print(f"{name}: offline fusion reproduces invoke() on {same}/{len(c.query_ids)} queries "
              f"(weighted_rrf on cached legs: {same_lib}); best anchor {best} {per_query[best].mean():.4f}"
              + (f"; {note}" if note else ""), flush=True)

    # ---------------------------------------------------------------- systems x collections table
    sys_names: list[str] = []
    for name in names:
        for s in system_rows[name]:
            if s not in sys_names:
                sys_names.append(s)
    table_rows = []
    for s in sys_names:
        row = [s]
        for name in names:
            r = system_rows[name].get(s)
            if not r:
                row.append("-")
                continue
            cell = f"{r['all']['ndcg@10']:.4f}" if "all" in r else ""
            if "subset" in r:
                cell += f" (sub {r['subset']['ndcg@10']:.4f})"
            row.append(cell.strip())
        table_rows.append(row)
    systems_md = md_table(["system (nDCG@10)", *names], table_rows)
    print("\n## Systems x collections, nDCG@10 (ArguAna: every system on the fixed 300-query subset, random.Random(0))\n")
    print(systems_md)
    r100_rows = []
    for s in sys_names:
        row = [s]
        for name in names:
            r = system_rows[name].get(s)
            key = "all" if r and "all" in r else "subset"
            row.append(f"{r[key]['recall@100']:.4f} / {r[key]['mrr@10']:.4f}" + (" (sub)" if key == "subset" else "")
                       if r else "-")
        r100_rows.append(row)
    r100_md = md_table(["system (R@100 / MRR@10)", *names], r100_rows)
    print("\n" + r100_md)

    # ---------------------------------------------------------------- grid
    t0 = time.perf_counter()
    kw_variants = [k for k in offs[names[0]].lists if k != "dense" and not k.startswith("fts5_title")
                   and not k.startswith("__")]
    settings = all_settings(kw_variants)
    means: dict[str, dict[str, float]] = {}
    pq: dict[str, dict[str, np.ndarray]] = {}
    for s in settings:
        key = setting_name(s)
        means[key] = {}
        pq[key] = {}
        for name in names:
            off, sc = offs[name], scorers[name]
            nd = np.array([sc.ndcg10(i, run_setting(off, s, i, TOP_K)) for i in range(len(off.c.query_ids))])
            pq[key][name] = nd
            means[key][name] = float(nd.mean())
    print(f"\ngrid: {len(settings)} settings x {len(names)} collections in {time.perf_counter() - t0:.0f}s",
          flush=True)
    by_key = {setting_name(s): s for s in settings}
    anchor_mean = {n: float(best_anchor[n][1].mean()) for n in names}
    margin = {k: {n: means[k][n] - anchor_mean[n] for n in names} for k in means}

    def shippable(k: str, space: str) -> bool:
        s = by_key[k]
        if space == "all":
            return True
        if space == "rrf":
            return s["mode"] in ("rrf", "crossleg", "qdw", "sparselite2", "sparselite3")
        if space == "fts5_rrf":
            return s["mode"] == "rrf" and s["kw"].startswith("fts5")
        raise ValueError(space)

    loco: dict[str, Any] = {}
    loco_md = {}
    for space in ("fts5_rrf", "rrf"):
        for crit in ("worst", "mean"):
            rows = []
            picks = {}
            for left in names:
                others = [n for n in names if n != left]
                keys = [k for k in means if shippable(k, space)]
                agg = (lambda k, others=others: min(margin[k][n] for n in others)) if crit == "worst" else \
                      (lambda k, others=others: statistics.fmean(margin[k][n] for n in others))
                pick = max(keys, key=agg)
                picks[left] = pick
                rows.append([left, pick, fmt_margin(agg(pick)), f"{means[pick][left]:.4f}",
                             f"{anchor_mean[left]:.4f} ({best_anchor[left][0]})", fmt_margin(margin[pick][left])])
            loco[f"{space}|{crit}"] = {"picks": picks, "left_out_margin": {n: margin[picks[n]][n] for n in names}}
            loco_md[f"{space}|{crit}"] = md_table(
                ["left out", f"setting tuned on the other {len(names) - 1}", f"{crit} margin on the {len(names) - 1}",
                 "left-out nDCG@10",
                 "best anchor", "left-out margin"], rows)
            print(f"\n## LOCO, space={space}, criterion={crit} margin over the best anchor\n")
            print(loco_md[f"{space}|{crit}"])

    # proposed default: among the LOCO picks of the fts5_rrf/worst run (+ rrf/worst), the one whose worst margin
    # over all collections is largest
    candidates = set(loco["fts5_rrf|worst"]["picks"].values())
    proposed = max(candidates, key=lambda k: min(margin[k].values()))
    in_sample_best = max((k for k in means if shippable(k, "fts5_rrf")), key=lambda k: min(margin[k].values()))
    in_sample_all = max(means, key=lambda k: min(margin[k].values()))

    def margins_block(key: str) -> tuple[str, dict[str, Any]]:
        s = by_key[key]
        rows = []
        out = {}
        for n in names:
            d = pq[key][n] - best_anchor[n][1]
            lo, hi = bootstrap_ci(d)
            out[n] = {"ndcg@10": round(means[key][n], 4), "best_anchor": best_anchor[n][0],
                      "best_anchor_ndcg@10": round(anchor_mean[n], 4), "margin": round(float(d.mean()), 4),
                      "ci95": [round(lo, 4), round(hi, 4)]}
            rows.append([n, f"{means[key][n]:.4f}", f"{anchor_mean[n]:.4f} ({best_anchor[n][0]})",
                         fmt_margin(float(d.mean())), f"[{lo:+.4f}, {hi:+.4f}]"])
        avg = statistics.fmean(margin[key].values())
        rows.append(["mean", f"{statistics.fmean(means[key].values()):.4f}",
                     f"{statistics.fmean(anchor_mean.values()):.4f}", fmt_margin(avg), ""])
        out["mean_margin"] = round(avg, 4)
        out["setting"] = s
        return md_table(["collection", "nDCG@10", "best anchor", "margin", "95% CI (paired bootstrap)"], rows), out

    blocks = {}
    for label, key in (("proposed", proposed), ("in-sample best worst-margin (FTS5 RRF)", in_sample_best),
                       ("in-sample best worst-margin (any idea)", in_sample_all),
                       ("shipped defaults (offline)", setting_name(SHIPPED)),
                       ("textbook k=60 1/1 fetch 2x (offline)", setting_name(TEXTBOOK))):
        md, out = margins_block(key)
        blocks[label] = {"key": key, "table": md, **out}
        print(f"\n## {label}: {key}\n")
        print(md)

    # R@100 / MRR@10 of the proposed setting at top_k=100 (fetch_k = mult * 100)
    s = by_key[proposed]
    r100 = {}
    for n in names:
        off, sc = offs[n], scorers[n]
        runs = [run_setting(off, s, i, 100) for i in range(len(off.c.query_ids))]
        r100[n] = {"recall@100": round(statistics.fmean(sc.recall100(i, r) for i, r in enumerate(runs)), 4),
                   "mrr@10": round(statistics.fmean(sc.mrr10(i, r) for i, r in enumerate(runs)), 4),
                   "ndcg@10_at_top_k_100": round(statistics.fmean(sc.ndcg10(i, r) for i, r in enumerate(runs)), 4)}
    print("\nproposed at top_k=100:", json.dumps(r100))
    blocks["proposed"]["top_k_100"] = r100

    # ---------------------------------------------------------------- ideas: best worst-margin per family
    families: dict[str, list[str]] = {}
    for k, s in by_key.items():
        fam = s["mode"] + ":" + s["kw"] + (f":a{s['alpha']:g}" if s.get("alpha") else "")
        families.setdefault(fam, []).append(k)
    idea_rows = []
    ideas = {}
    for fam, keys in families.items():
        b = max(keys, key=lambda k: min(margin[k].values()))
        bm = max(keys, key=lambda k: statistics.fmean(margin[k].values()))
        ideas[fam] = {"best_worst": b, "worst_margin": min(margin[b].values()),
                      "margins": margin[b], "best_mean": bm, "mean_margin": statistics.fmean(margin[bm].values())}
        idea_rows.append([fam, b.split("|", 2)[2], fmt_margin(min(margin[b].values())),
                          " ".join(f"{n[:3]}{margin[b][n]:+.3f}" for n in names),
                          fmt_margin(statistics.fmean(margin[bm].values()))])
    idea_rows.sort(key=lambda r: -float(r[2]))
    ideas_md = md_table(["family (mode:keyword leg)", "best (k,w,fetch) by worst margin", "worst margin",
                         "margins at it", "best mean margin (any k,w,fetch)"], idea_rows)
    print("\n## Ideas: each family's best setting by worst-collection margin over the best anchor\n")
    print(ideas_md)

    # toggles at the proposed (k, w, mult)
    ps = by_key[proposed]
    toggle_rows = []
    toggles = {}
    for fam in families:
        mode, kw = fam.split(":")[:2]
        cand = {**ps, "mode": mode, "kw": kw}
        if mode == "qdw":
            cand["alpha"] = float(fam.split(":a")[1])
        if mode == "sparselite3":
            for wsl in (0.5, 1.0):
                cand2 = {**cand, "wsl": wsl}
                k2 = setting_name(cand2)
                if k2 in margin:
                    toggles[k2] = margin[k2]
                    toggle_rows.append([k2, *[fmt_margin(margin[k2][n]) for n in names],
                                        fmt_margin(statistics.fmean(margin[k2].values()))])
            continue
        if mode in ("dbsf", "relative"):
            cand.pop("k", None)
        k2 = setting_name(cand)
        if k2 in margin:
            toggles[k2] = margin[k2]
            toggle_rows.append([k2, *[fmt_margin(margin[k2][n]) for n in names],
                                fmt_margin(statistics.fmean(margin[k2].values()))])
    toggles_md = md_table(["setting (proposed k, w, fetch; leg/idea swapped)", *names, "mean"], toggle_rows)
    print("\n## Each idea at the proposed k / weight / fetch (margin over the best anchor)\n")
    print(toggles_md)

    # conversational stopwords: how many queries change, and the effect at the proposed setting
    conv = {}
    for n in names:
        c = offs[n].c
        base_terms = [" ".join(ANALYZER.terms(t)) for t in c.query_texts]
        cs = sum(q_conv(CONV_SMALL)(t) != b for t, b in zip(c.query_texts, base_terms))
        cl = sum(q_conv(CONV_LARGE)(t) != b for t, b in zip(c.query_texts, base_terms))
        conv[n] = {"queries": len(c.query_texts), "changed_small": cs, "changed_large": cl}
    print("\nconversational stopwords: queries whose keyword query changes:", json.dumps(conv))

    result["systems_md"] = systems_md
    result["r100_mrr_md"] = r100_md
    result["loco_md"] = loco_md
    result["ideas_md"] = ideas_md
    result["toggles_md"] = toggles_md
    result["conv_changed"] = conv
    result["best_anchor"] = {n: best_anchor[n][0] for n in names}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "collections.json").write_text(json.dumps(result, indent=1))
    loco_out = {
        "grid": {"rrf_k": [1, 2, 5, 10, 20, 40, 60, 100], "keyword_weight": [0.5, 0.75, 1, 1.25, 1.5, 2],
                 "fetch_mult": [1, 2, 4], "top_k": TOP_K, "settings": len(settings)},
        "loco": loco, "proposed": blocks["proposed"], "blocks": blocks, "ideas": ideas, "toggles": toggles,
        "means": {k: {n: round(v, 4) for n, v in m.items()} for k, m in means.items()},
    }
    (RESULTS / "loco.json").write_text(json.dumps(loco_out, indent=1))
    print(f"\nwrote {RESULTS / 'collections.json'} and {RESULTS / 'loco.json'}")
