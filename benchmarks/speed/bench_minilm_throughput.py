"""MiniLM indexing throughput: passages/s of each variant of the local embedder, side by side in one run.

Two passage sets, each embedded by every variant once per round, rounds interleaved (median of ``--rounds``):

* ``scifact``: SciFact corpus passages as indexing sees them (``title + "\\n" + text``; mean ~240 word pieces,
  72 % of them cut at 256);
* ``short``: the 60-word passages of ``bench_minilm_speed.py`` (~90 word pieces), the issue's ">= 100/s" set.

Variants (``fp32 char bs4`` is the baseline: the previous ``embed_array``, batches of 4 in character order):

* ``fp32 token bs{1,2,4,8}``: today's ``MiniLMEmbedding().embed_array`` (token-count order) at that batch size;
* ``fp32 workers2 bs{2,4}``: ``MiniLMEmbedding(workers=2)``, two batches at once on one onnxruntime thread each;
* ``fp32 spin`` / ``fp32 no-mempattern`` / ``fp32 extended`` / ``fp32 iobinding``: our own onnxruntime session
  over the same cached graph (``MiniLMEmbedding.onnx_path``) and the same batches, with one session option
  changed (busy-wait threads on; memory pattern off; ``ORT_ENABLE_EXTENDED`` instead of ``ORT_ENABLE_ALL``;
  ``run_with_iobinding``);
* ``int8 bs1`` (its default), ``int8 bs4``, ``int8 workers2 bs1``: ``MiniLMEmbedding(precision="int8")``.

For each: passages/s (wall clock), CPU ms per passage (process time, all threads: less sensitive to other
processes on a shared machine), both as ratios to the baseline of the same run; the largest absolute difference and
the smallest cosine to today's fp32 ``embed_array``. Also the padded share of the tokens fed to the model with
character vs token ordering (deterministic). The load average is recorded at each round.

Usage::

    .venv/bin/python benchmarks/speed/bench_minilm_throughput.py [--scifact 64] [--short 192] [--rounds 3]
        [--variants "fp32 char bs4" "int8 bs4" ...]

With the defaults it took 337 s at load average 3.4-6.8 and 598 s at ~10 (other processes on the 2 cores). Writes ``benchmarks/results/minilm_throughput.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np

from benchmarks.common.beir import read_beir
from benchmarks.common.paths import RESULTS
from rrf_retriever import MiniLMEmbedding
from rrf_retriever.evaluation import doc_text

BASELINE = "fp32 char bs4"


def load_passages(n_scifact: int, n_short: int) -> dict[str, list[str]]:
    ds = read_beir("scifact", split="test")
    ids = list(ds.corpus)
    short = []
    for i in ids:
        words = str(ds.corpus[i]["text"]).split()
        if len(words) >= 60:
            short.append(" ".join(words[:60]))
        if len(short) >= n_short:
            break
    return {"scifact": [doc_text(ds.corpus[i]) for i in ids[:n_scifact]], "short": short}


def padding_share(model: MiniLMEmbedding, texts: list[str], key: str, batch: int = 4) -> float:
    """Share of padding among the tokens fed to the model, batches of ``batch`` in character or token order."""
    lengths = [len(e.ids) for e in model.tokenizer.encode_batch(texts)]
    order = sorted(range(len(texts)), key=(lambda i: len(texts[i])) if key == "char" else (lambda i: lengths[i]))
    fed = real = 0
    for start in range(0, len(order), batch):
        part = [lengths[i] for i in order[start : start + batch]]
        fed += max(part) * len(part)
        real += sum(part)
    return round(1 - real / fed, 4)


class RawSession:
    """Our own onnxruntime session over the cached graph, batches as ``embed_array`` makes them."""

    def __init__(self, model: MiniLMEmbedding, *, spin: bool = False, mem_pattern: bool = True,
                 extended: bool = False, iobinding: bool = False) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED if extended
                                            else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        options.enable_mem_pattern = mem_pattern
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        self.session = ort.InferenceSession(str(model.onnx_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = model.tokenizer
        self.iobinding = iobinding
        self.batch_size = model.batch_size

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if not self.iobinding:
            return self.session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]
        binding = self.session.io_binding()
        binding.bind_cpu_input("input_ids", ids)
        binding.bind_cpu_input("attention_mask", mask)
        binding.bind_output("sentence_embedding")
        self.session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0]

    def embed_array(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[idx] = self._run(ids, mask)
        return out


def char_order_bs4(model: MiniLMEmbedding) -> Callable[[list[str]], np.ndarray]:
    """The previous ``embed_array``: batches of 4 in character order (each batch one call)."""

    def embed(texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), 4):
            idx = order[start : start + 4]
            out[idx] = model.embed_array([texts[i] for i in idx])
        return out

    return embed


def make_variants(base: MiniLMEmbedding, wanted: set[str] | None) -> dict[str, Callable[[list[str]], np.ndarray]]:
    makers: dict[str, Callable[[], Callable[[list[str]], np.ndarray]]] = {
        BASELINE: lambda: char_order_bs4(base),
        "fp32 token bs4": lambda: base.embed_array,
        "fp32 token bs1": lambda: MiniLMEmbedding(batch_size=1, show_progress=False, precision="fp32").embed_array,
        "fp32 token bs2": lambda: MiniLMEmbedding(batch_size=2, show_progress=False, precision="fp32").embed_array,
        "fp32 token bs8": lambda: MiniLMEmbedding(batch_size=8, show_progress=False, precision="fp32").embed_array,
        "fp32 workers2 bs4": lambda: MiniLMEmbedding(workers=2, show_progress=False, precision="fp32").embed_array,
        "fp32 workers2 bs2": lambda: MiniLMEmbedding(workers=2, batch_size=2, show_progress=False, precision="fp32").embed_array,
        "fp32 spin": lambda: RawSession(base, spin=True).embed_array,
        "fp32 no-mempattern": lambda: RawSession(base, mem_pattern=False).embed_array,
        "fp32 extended": lambda: RawSession(base, extended=True).embed_array,
        "fp32 iobinding": lambda: RawSession(base, iobinding=True).embed_array,
        "int8 bs1": lambda: MiniLMEmbedding(precision="int8", show_progress=False).embed_array,
        "int8 bs4": lambda: MiniLMEmbedding(precision="int8", batch_size=4, show_progress=False).embed_array,
        "int8 workers2 bs1": lambda: MiniLMEmbedding(precision="int8", workers=2, show_progress=False).embed_array,
    }
    names = [n for n in makers if wanted is None or n in wanted or n == BASELINE]
    return {n: makers[n]() for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=int, default=64, help="SciFact corpus passages (title + text)")
    parser.add_argument("--short", type=int, default=192, help="60-word passages")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", nargs="+", default=None, help="subset of variant names (baseline always)")
    parser.add_argument("--out", default=str(RESULTS / "minilm_throughput.json"))
    args = parser.parse_args()
    started = time.perf_counter()
    base = MiniLMEmbedding(show_progress=False, precision="fp32")
    sets = {k: v for k, v in load_passages(args.scifact, args.short).items() if v}
    variants = make_variants(base, set(args.variants) if args.variants else None)
    result: dict[str, Any] = {"rounds": args.rounds, "cpu_count": os.cpu_count(), "load_avg": [], "sets": {}}
    reference = {}
    for set_name, texts in sets.items():
        reference[set_name] = base.embed_array(texts)
        block: dict[str, Any] = {
            "passages": len(texts),
            "mean_tokens": round(float(np.mean([len(e.ids) for e in base.tokenizer.encode_batch(texts)])), 1),
            "padding_share_bs4": {"char order": padding_share(base, texts, "char"),
                                  "token order": padding_share(base, texts, "token")},
            "variants": {},
        }
        for name, embed in variants.items():
            out = embed(texts[:16])  # warm-up, and exactness on the whole set below
            out = embed(texts)
            cos = np.sum(out * reference[set_name], axis=1)
            block["variants"][name] = {"max_abs_diff": float(np.abs(out - reference[set_name]).max()),
                                       "min_cosine": round(float(cos.min()), 7), "rate": [], "cpu_ms": []}
        result["sets"][set_name] = block
    for rnd in range(args.rounds):
        for set_name, texts in sets.items():
            for name, embed in variants.items():
                t0, c0 = time.perf_counter(), time.process_time()
                embed(texts)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                entry = result["sets"][set_name]["variants"][name]
                entry["rate"].append(round(len(texts) / wall, 2))
                entry["cpu_ms"].append(round(1000 * cpu / len(texts), 2))
        result["load_avg"].append([round(x, 2) for x in os.getloadavg()])
        print(f"round {rnd + 1}/{args.rounds} done, load {result['load_avg'][-1]}", flush=True)
    lines = []
    for set_name, block in result["sets"].items():
        b = block["variants"][BASELINE]
        b_rate, b_cpu = statistics.median(b["rate"]), statistics.median(b["cpu_ms"])
        lines.append(f"\n{set_name}: {block['passages']} passages, {block['mean_tokens']} tokens on average, padding "
                     f"{block['padding_share_bs4']['char order']:.1%} (char order) vs "
                     f"{block['padding_share_bs4']['token order']:.1%} (token order) at bs 4")
        lines.append("| variant | passages/s | x baseline | CPU ms/passage | x baseline (CPU) | max abs diff | min cos |")
        lines.append("|---|---|---|---|---|---|---|")
        for name, v in block["variants"].items():
            v["passages_per_s"] = statistics.median(v["rate"])
            v["cpu_ms_per_passage"] = statistics.median(v["cpu_ms"])
            v["speedup"] = round(v["passages_per_s"] / b_rate, 3)
            v["cpu_speedup"] = round(b_cpu / v["cpu_ms_per_passage"], 3)
            lines.append(f"| {name} | {v['passages_per_s']:.1f} | {v['speedup']:.2f} | {v['cpu_ms_per_passage']:.1f} | "
                         f"{v['cpu_speedup']:.2f} | {v['max_abs_diff']:.1e} | {v['min_cosine']:.5f} |")
    result["seconds"] = round(time.perf_counter() - started, 1)
    lines.append(f"\nload average per round: {result['load_avg']}; {result['seconds']} s in all")
    result["table"] = "\n".join(lines)
    print(result["table"])
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
