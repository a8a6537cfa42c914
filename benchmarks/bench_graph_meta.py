"""Graph meta stored at indexing (FilingSplitter ``graph_meta``) against extraction at query time, on a store.

For every filing of the store: its chunks as the store returns them, the filing graph built from the stored graph
meta and built by extraction from the same chunks without it (``without_graph_meta``: what an index written without
the step gives), in alternating order; per filing the two build times, whether the stored meta was used, and whether
the two graphs are the same (``graph_signature``: every node with its attributes, every edge with its type, kind,
confidence and evidence). Also the bytes of the stored graph fields (JSON) against the rest of the chunks' payload.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/bench_graph_meta.py --store /tmp/graph-index --out g.json
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--lexicon", default=None, help="lexicon JSON (default: the built-in one)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not args.store.is_dir():
        print(f"error: {args.store}: no such store folder", file=sys.stderr)
        return 2

    from haystack_fin.core import schema
    from haystack_fin.core.graph.build import build_filing_graph, graph_signature, without_graph_meta
    from haystack_fin.core.lexicon import Lexicon
    from haystack_fin.pipeline_loader import indexing_store

    lexicon = Lexicon.load(args.lexicon)
    store = indexing_store(str(args.store), None)
    try:
        chunks = store.filter_documents({"field": f"meta.{schema.NODE_TYPE}", "operator": "==", "value": "chunk"})
        filings = {
            str(n.meta[schema.FILING_ID]): int(n.meta.get(schema.N_PAGES) or 0)
            for n in store.filter_documents({"field": f"meta.{schema.NODE_TYPE}", "operator": "==", "value": "filing"})
        }
    finally:
        store.close()
    by_filing: dict[str, list[dict[str, Any]]] = {}
    for d in chunks:
        by_filing.setdefault(str(d.meta[schema.FILING_ID]), []).append(
            {"id": d.id, "content": d.content, "meta": d.meta}
        )
    rows = []
    for i, (fid, docs) in enumerate(sorted(by_filing.items())):
        plain = [{**d, "meta": without_graph_meta(d["meta"])} for d in docs]
        # A JSON string field counts as its own length (its quotes escaped again would inflate it).
        graph_bytes = sum(
            len(v) if isinstance(v, str) else len(json.dumps(v))
            for d in docs
            for k in schema.GRAPH_META_FIELDS
            if (v := d["meta"].get(k)) is not None
        )
        rest_bytes = sum(len(json.dumps(p["meta"], default=str)) + len(p["content"] or "") for p in plain)
        built: dict[str, Any] = {}
        order = ("stored", "extracted") if i % 2 == 0 else ("extracted", "stored")
        for name in order:
            t = time.perf_counter()
            built[name] = build_filing_graph(docs if name == "stored" else plain, lexicon, fid)
            built[name + "_ms"] = 1000 * (time.perf_counter() - t)
        same = graph_signature(built["stored"]) == graph_signature(built["extracted"])
        rows.append(
            {
                "filing_id": fid,
                "pages": filings.get(fid, 0),
                "chunks": len(docs),
                "from_meta": built["stored"].from_meta,
                "stored_ms": round(built["stored_ms"], 1),
                "extracted_ms": round(built["extracted_ms"], 1),
                "same_graph": same,
                "nodes": built["stored"].graph.number_of_nodes(),
                "edges": built["stored"].graph.number_of_edges(),
                "graph_meta_bytes": graph_bytes,
                "other_payload_bytes": rest_bytes,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    summary = {
        "filings": len(rows),
        "from_meta": sum(r["from_meta"] for r in rows),
        "mismatches": [r["filing_id"] for r in rows if not r["same_graph"]],
        "stored_ms_median": round(statistics.median(r["stored_ms"] for r in rows), 1),
        "extracted_ms_median": round(statistics.median(r["extracted_ms"] for r in rows), 1),
        "stored_ms_total": round(sum(r["stored_ms"] for r in rows), 1),
        "extracted_ms_total": round(sum(r["extracted_ms"] for r in rows), 1),
        "graph_meta_mb": round(sum(r["graph_meta_bytes"] for r in rows) / 1e6, 2),
        "other_payload_mb": round(sum(r["other_payload_bytes"] for r in rows) / 1e6, 2),
        "graph_meta_mb_max_filing": round(max(r["graph_meta_bytes"] for r in rows) / 1e6, 2),
        "load_avg": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
