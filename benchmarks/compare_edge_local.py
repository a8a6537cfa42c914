"""Same passages on Qdrant Edge as on qdrant-client local mode? (Edge is the default store)

Indexes the same filings with the same code into an Edge store and a local-mode store, runs each filing's
FinanceBench dev questions through ``QueryRunner`` on both (single setting: ``filing_ids=[doc_name]``) and compares
the passage ids in order. For a question whose passages differ it prints where the two lists first part and the
retriever's candidate ids, so the cause (vector search, ties, ...) can be read off.

Usage (from the repository root):
    nice -n 10 .venv/bin/python benchmarks/compare_edge_local.py --pdfs DIR --questions Q.jsonl \
        --docs BESTBUY_2023_10K BESTBUY_2024Q2_10Q MGMRESORTS_2022Q4_EARNINGS --out /tmp/edge-vs-local.json
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from haystack_fin.indexing_runner import index_filings
from haystack_fin.pipeline_loader import BACKEND_ENV, pipeline_dict
from haystack_fin.query_runner import QueryRunner

BACKENDS = ("edge", "local")


def _index(backend: str, store: Path, pdfs: list[Path]) -> float:
    t0 = time.perf_counter()
    data = pipeline_dict("indexing", str(store), backend=backend)
    # The questions name filings by file stem (doc_name): indexed under those ids.
    metas = [{"filing_id": p.stem} for p in pdfs]
    report = index_filings([str(p) for p in pdfs], data, metas, quiet=True, timeout_s=None)
    if report.n_failed:
        sys.exit(f"error: indexing into {backend} failed: {report.failures}")
    return time.perf_counter() - t0


def _run(backend: str, store: Path, questions: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    os.environ[BACKEND_ENV] = backend  # QueryRunner reads the backend through pipeline_dict
    runner = QueryRunner(str(store))
    try:
        out = []
        for q in questions:
            t0 = time.perf_counter()
            result = runner.run(q["question"], filing_ids=[q["doc_name"]], k=k)
            retrieval = result.trace.get("retrieval") or {}
            out.append(
                {
                    "ids": [d.id for d in result.passages],
                    "scores": [d.score for d in result.passages],
                    "ms": round((time.perf_counter() - t0) * 1000),
                    "retrieval": retrieval,
                }
            )
        return out
    finally:
        runner.close()
        os.environ.pop(BACKEND_ENV, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", required=True, type=Path)
    parser.add_argument("--questions", required=True, type=Path)
    parser.add_argument("--docs", nargs="+", required=True, help="PDF stems (doc_name) to index and ask about")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    pdfs = [args.pdfs / f"{d}.pdf" for d in args.docs]
    questions = [q for q in map(json.loads, args.questions.read_text().splitlines()) if q["doc_name"] in args.docs]
    root = Path(tempfile.mkdtemp(prefix="edge-vs-local-"))
    runs: dict[str, list[dict[str, Any]]] = {}
    for backend in BACKENDS:
        store = root / backend
        seconds = _index(backend, store, pdfs)
        print(f"{backend}: indexed {len(pdfs)} filing(s) in {seconds:.1f} s into {store}")
        runs[backend] = _run(backend, store, questions, args.k)

    rows = []
    for q, edge, local in zip(questions, runs["edge"], runs["local"], strict=True):
        same = edge["ids"] == local["ids"]
        same_set = set(edge["ids"]) == set(local["ids"])
        first_diff = next((i for i, (a, b) in enumerate(zip(edge["ids"], local["ids"], strict=False)) if a != b), None)
        rows.append(
            {
                "financebench_id": q["financebench_id"],
                "doc_name": q["doc_name"],
                "equal": same,
                "same_set": same_set,
                "first_difference_at": first_diff,
                "edge": edge,
                "local": local,
            }
        )
        status = "equal" if same else ("same set, other order" if same_set else f"differ from #{first_diff}")
        print(
            f"{q['financebench_id']} {q['doc_name']}: {status} ({len(edge['ids'])} passages; "
            f"edge {edge['ms']} ms, local {local['ms']} ms)"
        )
    n_equal = sum(r["equal"] for r in rows)
    print(f"equal passage ids and order: {n_equal} of {len(rows)} questions")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2, default=str))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
