"""Warm single-filing query latency of two code versions, alternated in one run.

Each round starts one process per version (its code first on PYTHONPATH), which opens the store, preloads the
filings and the graphs (what a server does at start-up), runs every question once to warm up, then times every
question again in the single setting (retrieval only, k = 10, as ``eval`` runs it) and reports the p50 and p95.
Versions alternate round by round, so a busy machine slows both alike; the ratio of the versions' medians over the
rounds is the comparison.

    python benchmarks/bench_query_latency.py --questions Q.jsonl --store STORE \\
        --version before=/tmp/old-checkout --version after=. --rounds 3 --out latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

CHILD = r"""
import json, sys, time
from haystack_fin.core.evaluation import load_questions, percentile
from haystack_fin.evaluation_runner import HaystackFinRetrieval
questions = load_questions(sys.argv[1])
fin = HaystackFinRetrieval(sys.argv[2], None, set(), fragments=[f for f in sys.argv[3:] if f])
for q in questions:
    fin.retrieve(q.question, [q.doc_name])
times = []
for q in questions:
    t0 = time.perf_counter()
    fin.retrieve(q.question, [q.doc_name])
    times.append(1000 * (time.perf_counter() - t0))
fin.close()
print(json.dumps({"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "n": len(times)}))
"""


def run_version(code: str, questions: str, store: str, fragments: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(code).resolve()), "HF_HUB_OFFLINE": "1"}
    env.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, questions, store, *fragments],
        env=env,
        cwd=str(Path(code).resolve()),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--version", action="append", required=True, metavar="NAME=CODE_DIR[:FRAGMENT]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    versions = []
    for spec in args.version:
        name, _, rest = spec.partition("=")
        code, _, fragment = rest.partition(":")
        versions.append((name, code, [fragment] if fragment else []))
    rounds: list[dict[str, dict[str, float]]] = []
    for i in range(args.rounds):
        row = {}
        for name, code, fragments in versions if i % 2 == 0 else list(reversed(versions)):
            t0 = time.perf_counter()
            row[name] = run_version(code, args.questions, args.store, fragments)
            print(
                f"round {i + 1} {name}: p50 {row[name]['p50_ms']:.1f} ms ({time.perf_counter() - t0:.0f} s)", flush=True
            )
        rounds.append(row)
    summary = {name: median(r[name]["p50_ms"] for r in rounds) for name, _, _ in versions}
    first = versions[0][0]
    ratios = {name: summary[name] / summary[first] for name in summary}
    Path(args.out).write_text(
        json.dumps({"rounds": rounds, "median_p50_ms": summary, "ratio_to_" + first: ratios}, indent=1)
    )
    print(json.dumps({"median_p50_ms": summary, "ratios": ratios}))


if __name__ == "__main__":
    main()
