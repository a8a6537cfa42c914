"""QdrantEdgeDocumentStore vs QdrantDocumentStore(path=...) (qdrant-client local mode) on the same random data.

For each store: one process writes N random unit vectors with small meta (filing_id, node_type, item, modality,
chunk_index; N / filings documents per filing) through the Haystack store API; then a *fresh* process opens the
store, fetches one filing's documents with ``filter_documents`` (embeddings included, as the query pipeline does)
and runs a k-NN filtered to that filing, twice. Times and RSS of the fresh process are reported, and the two stores'
answers are compared (same filing documents, same top-k ids).

    .venv/bin/python benchmarks/bench_edge_store.py                      # 50,000 x 384, 50 filings
    .venv/bin/python benchmarks/bench_edge_store.py --n 5000 --stores edge --optimize
"""

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

INDEX = "haystack_fin"


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as fp:
        for line in fp:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _make_store(kind: str, folder: Path, dim: int) -> Any:
    if kind == "edge":
        from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore

        return QdrantEdgeDocumentStore(path=str(folder), index=INDEX, embedding_dim=dim, return_embedding=True)
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return QdrantDocumentStore(
        path=str(folder), index=INDEX, embedding_dim=dim, return_embedding=True, progress_bar=False
    )


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    vecs = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _query_vector(args: argparse.Namespace) -> list[float]:
    # Near one document of the target filing, so the filtered k-NN has a clear nearest neighbour.
    target = args.target_filing * (args.n // args.filings)
    vec = _vectors(args.n, args.dim, args.seed)[target] + 0.05 * _vectors(1, args.dim, args.seed + 1)[0]
    return (vec / np.linalg.norm(vec)).tolist()


def phase_write(args: argparse.Namespace) -> dict[str, Any]:
    from haystack import Document
    from haystack.document_stores.types import DuplicatePolicy

    vecs = _vectors(args.n, args.dim, args.seed)
    per_filing = args.n // args.filings
    modalities = ("text", "table", "text", "text", "image")
    docs = [
        Document(
            id=f"doc-{i}",
            content=f"chunk {i} of filing {i // per_filing}",
            meta={
                "filing_id": f"F{i // per_filing:04d}",
                "node_type": "chunk",
                "item": str(1 + i % 16),
                "modality": modalities[i % len(modalities)],
                "chunk_index": i % per_filing,
            },
            embedding=vecs[i].tolist(),
        )
        for i in range(args.n)
    ]
    store = _make_store(args.store, Path(args.dir), args.dim)
    start = time.perf_counter()
    for b in range(0, len(docs), args.batch):  # one call per batch, as FilingWriter writes one filing per call
        store.write_documents(docs[b : b + args.batch], policy=DuplicatePolicy.OVERWRITE)
    write_s = time.perf_counter() - start
    out: dict[str, Any] = {"write_s": write_s}
    if args.optimize and args.store == "edge":
        start = time.perf_counter()
        store.optimize()
        out["optimize_s"] = time.perf_counter() - start
    start = time.perf_counter()
    store.close()
    out["close_s"] = time.perf_counter() - start
    # Allocated blocks, as du counts them: Edge preallocates sparse WAL and mmap files (apparent size ~150 MB).
    out["disk_mb"] = sum(p.stat().st_blocks * 512 for p in Path(args.dir).rglob("*") if p.is_file()) / 2**20
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def phase_query(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    store = _make_store(args.store, Path(args.dir), args.dim)
    out: dict[str, Any] = {"import_s": time.perf_counter() - start, "rss_after_import_mb": _rss_mb()}
    start = time.perf_counter()
    out["count"] = store.count_documents()  # both stores open lazily: this is the open
    out["open_s"] = time.perf_counter() - start
    out["rss_after_open_mb"] = _rss_mb()
    from haystack_fin.core import schema

    flt = schema.filing_filter(f"F{args.target_filing:04d}")
    start = time.perf_counter()
    docs = store.filter_documents(filters=flt)
    out["filter_s"] = time.perf_counter() - start
    out["filter_n"] = len(docs)
    out["filter_with_embeddings"] = sum(1 for d in docs if d.embedding)
    out["filter_ids"] = sorted(d.id for d in docs)
    query = _query_vector(args)
    for run in ("knn_cold", "knn_warm"):
        start = time.perf_counter()
        hits = store._query_by_embedding(query_embedding=query, filters=flt, top_k=10)
        out[f"{run}_s"] = time.perf_counter() - start
    out["knn_ids"] = [d.id for d in hits]
    start = time.perf_counter()
    hits = store._query_by_embedding(query_embedding=query, top_k=10)
    out["knn_unfiltered_s"] = time.perf_counter() - start
    out["rss_mb"] = _rss_mb()
    out["peak_rss_mb"] = _peak_rss_mb()
    store.close()
    return out


def _child(args: argparse.Namespace, phase: str, store: str, folder: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--store", store, "--dir", str(folder)]
    for name in ("n", "dim", "filings", "target_filing", "seed", "batch"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.optimize:
        cmd.append("--optimize")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{phase} {store} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--filings", type=int, default=50)
    parser.add_argument("--target-filing", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=1_000, help="documents per write_documents call")
    parser.add_argument("--stores", default="edge,local", help="comma-separated: edge, local")
    parser.add_argument("--optimize", action="store_true", help="edge: build HNSW after writing (slow)")
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a new one under /tmp)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--phase", choices=("write", "query"), help=argparse.SUPPRESS)
    parser.add_argument("--store", choices=("edge", "local"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:
        result = phase_write(args) if args.phase == "write" else phase_query(args)
        print(json.dumps(result))
        return

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-edge-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        for store in args.stores.split(","):
            folder = work / store
            shutil.rmtree(folder, ignore_errors=True)
            print(f"[{store}] writing {args.n:,} x {args.dim} ...", flush=True)
            written = _child(args, "write", store, folder)
            print(f"[{store}] fresh process: open + filter + k-NN ...", flush=True)
            results[store] = {"write": written, "query": _child(args, "query", store, folder)}
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    per_filing = args.n // args.filings
    print(f"\n{args.n:,} docs x {args.dim}-d, {args.filings} filings of {per_filing:,}; fresh-process numbers")
    rows = [
        ("write (s)", lambda r: r["write"]["write_s"]),
        ("optimize (s)", lambda r: r["write"].get("optimize_s", float("nan"))),
        ("close after write (s)", lambda r: r["write"]["close_s"]),
        ("disk (MB)", lambda r: r["write"]["disk_mb"]),
        ("writer peak RSS (MB)", lambda r: r["write"]["peak_rss_mb"]),
        ("open (s)", lambda r: r["query"]["open_s"]),
        (f"filter 1 filing ({per_filing:,} docs) (s)", lambda r: r["query"]["filter_s"]),
        ("filtered k-NN, first (s)", lambda r: r["query"]["knn_cold_s"]),
        ("filtered k-NN, second (s)", lambda r: r["query"]["knn_warm_s"]),
        ("unfiltered k-NN (s)", lambda r: r["query"]["knn_unfiltered_s"]),
        ("RSS after imports (MB)", lambda r: r["query"]["rss_after_import_mb"]),
        ("RSS after open (MB)", lambda r: r["query"]["rss_after_open_mb"]),
        ("RSS after queries (MB)", lambda r: r["query"]["rss_mb"]),
        ("peak RSS (MB)", lambda r: r["query"]["peak_rss_mb"]),
    ]
    names = list(results)
    print(f"{'':40s}" + "".join(f"{n:>12s}" for n in names))
    for label, get in rows:
        print(f"{label:40s}" + "".join(f"{get(results[n]):12.3f}" for n in names))
    for name in names:
        q = results[name]["query"]
        print(
            f"{name}: count {q['count']}, filter returned {q['filter_n']} ({q['filter_with_embeddings']} with vectors)"
        )
    if len(names) == 2:
        a, b = (results[n]["query"] for n in names)
        print(
            f"same filing documents: {a['filter_ids'] == b['filter_ids']}; same top-10: {a['knn_ids'] == b['knn_ids']}"
        )
    if args.out:
        for r in results.values():
            r["query"].pop("filter_ids", None)
        Path(args.out).write_text(json.dumps({"args": vars(args), "results": results}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
