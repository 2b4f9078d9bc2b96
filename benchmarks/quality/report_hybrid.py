"""Render the hybrid benchmark JSON results as Markdown tables (for RESULTS.md and README.md).

Usage:
    .venv/bin/python benchmarks/quality/report_hybrid.py > /tmp/hybrid_tables.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a file: the repo root, for benchmarks.common

from benchmarks.common.paths import RESULTS


def _load(name: str) -> Any:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def quality() -> list[str]:
    data = _load("hybrid_quality.json")
    if not data:
        return []
    lines = []
    for name, d in data["datasets"].items():
        sub = d["subset_queries"] != d["queries"]
        lines.append(f"\n**{name}** ({d['queries']} test queries" + (
            f"; anchors on a fixed subset of {d['subset_queries']}: `{d['subset']}`)" if sub else ")") + "\n")
        head = "| system | nDCG@10 | R@100 | MRR@10 |"
        if sub:
            head += " nDCG@10 (subset) | R@100 (subset) | MRR@10 (subset) |"
        lines += [head, "|" + "---|" * (head.count("|") - 1)]
        for row in d["rows"]:
            full = row.get("all") or {}
            cells = [f"{full[m]:.4f}" if m in full else "–" for m in ("ndcg@10", "recall@100", "mrr@10")]
            if sub:
                s = row.get("subset") or {}
                cells += [f"{s[m]:.4f}" if m in s else "–" for m in ("ndcg@10", "recall@100", "mrr@10")]
            lines.append(f"| {row['system']} | " + " | ".join(cells) + " |")
    return lines


def ablation() -> list[str]:
    data = _load("sweep.json")
    if not data:
        return []
    best, chosen = data["best"], data["chosen"]
    lines = [f"\nGrid best on SciFact train: title weight {best['title_weight']:g}, keyword weight "
             f"{best['keyword_weight']:g} (dense 1.0), rrf_k {best['rrf_k']:g}: nDCG@10 {best['ndcg@10']:.4f}; "
             f"chosen by the one-standard-error rule: title {chosen['title_weight']:g}, keyword "
             f"{chosen['keyword_weight']:g}, rrf_k {chosen['rrf_k']:g}: nDCG@10 {chosen['ndcg@10']:.4f}\n"]
    labels = list(data["ablation"])
    lines.append("| step | " + " | ".join(f"{lab} nDCG@10 | {lab} R@100" for lab in labels) + " |")
    lines.append("|---|" + "---|---|" * len(labels))
    steps = [r["step"] for r in data["ablation"][labels[0]]]
    for i, step in enumerate(steps):
        cells = []
        for lab in labels:
            r = data["ablation"][lab][i]
            cells += [f"{r['ndcg@10']:.4f}", f"{r['recall@100']:.4f}"]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    return lines


def speed() -> list[str]:
    data = _load("hybrid_speed.json")
    if not data:
        return []
    lines = [f"\nFusion (weighted_rrf, 2 x 100 hits): {data['fusion']['weighted_rrf_2x100_ms_median']} ms per call."]
    if "minilm" in data:
        lines.append(f"MiniLM query embedding (excluded above): p50 {data['minilm'].get('minilm_query_p50_ms')} ms, "
                     f"p95 {data['minilm'].get('minilm_query_p95_ms')} ms.")
    for r in data["sizes"]:
        lines.append(f"\n**{r['corpus']}** ({r['docs']:,} docs; {r['queries']} queries, slow systems "
                     f"{r['slow_queries']}; top_k=10)\n")
        lines.append("| system | p50 ms | p95 ms | filtered p50 | filtered p95 | build s | peak MB |")
        lines.append("|---|---|---|---|---|---|---|")
        for name, s in r["systems"].items():
            lines.append(
                f"| {name} | {s['unfiltered_p50_ms']:.2f} | {s['unfiltered_p95_ms']:.2f} | {s['filtered_p50_ms']:.2f} "
                f"| {s['filtered_p95_ms']:.2f} | {s.get('build_s', s.get('build_s_in_process', '–'))} "
                f"| {s.get('peak_mb', '–')} |"
            )
        if r.get("ratios"):
            lines.append("")
            lines += [f"- {k}: **{v}**" for k, v in r["ratios"].items()]
    return lines


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # --help; no options
    print("\n".join(["### Quality", *quality(), "", "### Ablation", *ablation(), "", "### Speed", *speed()]))


if __name__ == "__main__":
    main()
