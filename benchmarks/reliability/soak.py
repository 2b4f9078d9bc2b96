"""Reliability soak: promises, attacks, fuzz, scope isolation, SIGKILL crash safety, load and lifecycle.

Runs the same workloads as tests/reliability (tests/reliability/workloads.py, promises.py, attacks.py) with more
inputs, prints figures and writes benchmarks/results/soak_<profile>.json.

    .venv/bin/python benchmarks/reliability/soak.py --quick   # a few minutes
    .venv/bin/python benchmarks/reliability/soak.py --full    # >= 10,000 fuzz inputs, 4,000 scoped queries, 20 kills, 8x500 load
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.common.paths import RESULTS
from tests.reliability.attacks import ATTACKS, run_attacks
from tests.reliability.promises import run_promises
from tests.reliability.workloads import run_crash_safety, run_fuzz, run_lifecycle, run_load, run_scope_isolation

PROFILES = {
    "quick": {"fuzz_per_target": 300, "scope_queries": 800, "kills": 8, "threads": 8, "queries_per_thread": 100,
              "lifecycle_writes": 300, "promise_rounds": 1, "attack_rounds": 1},
    "full": {"fuzz_per_target": 1700, "scope_queries": 4000, "kills": 20, "threads": 8, "queries_per_thread": 500,
             "lifecycle_writes": 2000, "promise_rounds": 5, "attack_rounds": 5},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="the short profile (default)")
    group.add_argument("--full", action="store_true", help="the long profile")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--only", choices=["promises", "attacks"], help="run one section only")
    parser.add_argument("--all-attacks", action="store_true",
                        help="run the attacks whose fix is pending too (attacks.PENDING)")
    args = parser.parse_args()
    profile = "full" if args.full else "quick"
    p = PROFILES[profile]
    figures: dict[str, object] = {"profile": profile, "seed": args.seed, **p}
    failed = False

    if args.only == "attacks":
        failed = _attacks(figures, p["attack_rounds"], args.seed, args.all_attacks)
        return _write(figures, f"{profile}_attacks", failed)

    promises = run_promises(p["promise_rounds"], seed=args.seed)
    print(f"promises: {promises['rounds']} rounds, checks {promises['checks']} (pages, pinning, big-integer $in of "
          f"2,000 values, junk filter keys, 1,000-part $or/$and, tie order), {len(promises['problems'])} problems; "
          f"slowest filter set per store {promises['filter_seconds_max']} s ({promises['seconds']:.0f} s)")
    for line in promises["problems"][:10]:
        print("   ", line)
    figures["promises"] = {k: (len(v) if k == "problems" else v) for k, v in promises.items()}
    failed |= bool(promises["problems"])
    if args.only == "promises":
        return _write(figures, f"{profile}_promises", failed)
    failed |= _attacks(figures, p["attack_rounds"], args.seed, args.all_attacks)

    t0 = time.perf_counter()
    fuzz = run_fuzz(p["fuzz_per_target"], seed=args.seed)
    ok = sum(v for k, v in fuzz["outcomes"].items() if k.endswith(":ok"))
    print(f"fuzz: {fuzz['inputs']} inputs over 6 targets, {ok} answered, {fuzz['inputs'] - ok - len(fuzz['unexpected'])}"
          f" refused with our errors, {len(fuzz['unexpected'])} foreign exceptions ({time.perf_counter() - t0:.0f} s)")
    for line in fuzz["unexpected"][:10]:
        print("   ", line)
    figures["fuzz"] = {"inputs": fuzz["inputs"], "answered": ok, "foreign_exceptions": len(fuzz["unexpected"]),
                       "outcomes": fuzz["outcomes"], "examples": fuzz["unexpected"][:20],
                       "seconds": round(time.perf_counter() - t0, 1)}
    failed |= bool(fuzz["unexpected"])

    t0 = time.perf_counter()
    scope = run_scope_isolation(p["scope_queries"], seed=args.seed)
    print(f"scope isolation: {scope['queries']} scoped queries, {scope['hits_checked']} hits checked, "
          f"{scope['nonempty']} non-empty, {len(scope['leaks'])} leaks ({time.perf_counter() - t0:.0f} s)")
    for line in scope["leaks"][:10]:
        print("   ", line)
    figures["scope"] = {k: (len(v) if k == "leaks" else v) for k, v in scope.items()}
    figures["scope"]["seconds"] = round(time.perf_counter() - t0, 1)  # type: ignore[index]
    failed |= bool(scope["leaks"])

    crash = run_crash_safety(p["kills"], seed=args.seed, max_docs=5000, max_delay=3.0)
    print(f"crash safety: {crash['kills']} SIGKILLs ({crash['killed_while_writing']} while writing), "
          f"{crash['pending_batches_redone']} interrupted batches redone by the journal, {crash['documents']} documents"
          f" at the end, {len(crash['problems'])} problems ({crash['seconds']:.0f} s)")
    for line in crash["problems"][:10]:
        print("   ", line)
    figures["crash"] = {k: (len(v) if k == "problems" else v) for k, v in crash.items()}
    failed |= bool(crash["problems"])

    load = run_load(p["threads"], p["queries_per_thread"], seed=args.seed)
    print(f"load: {load['threads'] if 'threads' in load else p['threads']} threads x {p['queries_per_thread']} = "
          f"{load['queries']} queries with {load['updates']} settings swaps and {load['writes']} writes alongside: "
          f"{len(load['errors'])} errors, {len(load['inconsistent'])} inconsistent responses, "
          f"{load['qps']:.0f} queries/s ({load['seconds']:.1f} s)")
    for line in (load["errors"] + load["inconsistent"])[:10]:
        print("   ", line)
    figures["load"] = {k: (len(v) if isinstance(v, list) else v) for k, v in load.items()}
    failed |= bool(load["errors"] or load["inconsistent"])

    t0 = time.perf_counter()
    life = run_lifecycle(p["lifecycle_writes"], seed=args.seed)
    print(f"lifecycle: {life['writes']} writes, {life['interrupted']} interrupted by KeyboardInterrupt and rolled back, "
          f"{life['documents']} documents, fork refused in the child: {life.get('fork_checked', False)}, "
          f"500 short-lived threads: fd growth {life['fd_growth']}, close() under {p['threads']} readers: "
          f"{life['close_under_load']}; {len(life['problems'])} problems ({time.perf_counter() - t0:.0f} s)")
    for line in life["problems"][:10]:
        print("   ", line)
    figures["lifecycle"] = {k: (len(v) if k == "problems" else v) for k, v in life.items()}
    failed |= bool(life["problems"])

    return _write(figures, profile, failed)


def _attacks(figures: dict[str, object], rounds: int, seed: int, everything: bool) -> bool:
    """The attacks of trust round 4 (tests/reliability/attacks.py): one line of figures; True if any problem."""
    report = run_attacks(rounds, seed=seed, attacks=ATTACKS if everything else None)
    slowest = sorted(report["attack_seconds"].items(), key=lambda kv: -kv[1])[:3]
    print(f"attacks: {report['rounds']} rounds, checks {report['checks']}, {len(report['problems'])} problems; "
          f"refused or answered {report['outcomes']}; pending, not run: {report['skipped'] or 'none'}; slowest "
          f"{dict(slowest)} s ({report['seconds']:.0f} s)")
    for line in report["problems"][:10]:
        print("   ", line)
    figures["attacks"] = {**{k: (len(v) if k == "problems" else v) for k, v in report.items()},
                          "examples": report["problems"][:20]}
    return bool(report["problems"])


def _write(figures: dict[str, object], profile: str, failed: bool) -> int:
    out = RESULTS / f"soak_{profile}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"{'FAILED' if failed else 'OK'}; figures in {out.relative_to(REPO)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
