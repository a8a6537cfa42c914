"""A cold filing's first query: what the retriever and the graph stage cost, and how often the store is read.

In a fresh process: QueryRunner + warm_up, then one dev question per filing with ``filing_ids=[that filing]`` (its
first touch: nothing of it cached). Per query: wall ms, the retriever's and the graph stage's seconds from their
traces, and the number of ``filter_documents`` calls on the shared store. Run it once per code version on the same
store (a copy per process: an embedded store admits one) to compare them in one run.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/bench_cold_filing.py --store /tmp/idx-copy --out a.json
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_QUESTIONS = "/work/shared/data/financebench-dev/questions.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=Path(DEFAULT_QUESTIONS))
    parser.add_argument("--backend", default="edge", choices=("edge", "local"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not args.store.is_dir():
        print(f"error: {args.store}: no such store folder", file=sys.stderr)
        return 2

    from haystack_fin.core.evaluation import load_questions
    from haystack_fin.pipeline_loader import BACKEND_ENV
    from haystack_fin.store_registry import shared_store

    os.environ[BACKEND_ENV] = args.backend
    from haystack_fin.query_runner import QueryRunner

    runner = QueryRunner(str(args.store))
    runner.pipe.warm_up()
    store = shared_store(runner.pipe.get_component("retriever").document_store)
    calls: list[Any] = []
    original = store.filter_documents

    def counting(filters: Any = None) -> Any:
        calls.append(filters)
        return original(filters=filters)

    store.filter_documents = counting
    first: dict[str, Any] = {}
    for q in load_questions(args.questions):
        first.setdefault(q.doc_name, q)
    rows = []
    try:
        for fid, q in sorted(first.items()):
            before = len(calls)
            t = time.perf_counter()
            result = runner.run(q.question, filing_ids=[fid], k=5)
            wall = 1000 * (time.perf_counter() - t)
            retrieval = result.trace.get("retrieval") or {}
            graph = result.trace.get("graph") or {}
            filings = graph.get("filings") or []
            rows.append(
                {
                    "filing_id": fid,
                    "wall_ms": round(wall, 1),
                    "retriever_ms": round(1000 * float(retrieval.get("seconds") or 0), 1),
                    "load_ms": round(1000 * float((retrieval.get("cache") or {}).get("load_seconds") or 0), 1),
                    "graph_ms": round(1000 * float(graph.get("seconds") or 0), 1),
                    # The graph's build inside the graph stage (0 when the filing was not expanded), and whether it
                    # came from graph meta stored at indexing.
                    "graph_build_ms": round(1000 * sum(float(f.get("build_seconds") or 0) for f in filings), 1),
                    "graph_from_meta": all(bool(f.get("from_meta")) for f in filings) if filings else None,
                    "store_reads": len(calls) - before,
                }
            )
    finally:
        runner.close()
    summary = {
        key: round(statistics.median(r[key] for r in rows), 1)
        for key in ("wall_ms", "retriever_ms", "load_ms", "graph_ms", "graph_build_ms", "store_reads")
    }
    summary["graph_build_ms_total"] = round(sum(r["graph_build_ms"] for r in rows), 1)
    summary["graphs_from_meta"] = sum(r["graph_from_meta"] is True for r in rows)
    summary["n_filings"] = len(rows)
    summary["load_avg"] = round(os.getloadavg()[0], 2)
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
