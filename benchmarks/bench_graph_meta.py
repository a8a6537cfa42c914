"""Graph meta stored at indexing (FilingSplitter ``graph_meta``) against extraction at query time, on a store.

For every filing of the store: its chunks as the store returns them, the filing graph built from the stored graph
meta and built by extraction from the same chunks without it (``without_graph_meta``: what an index written without
the step gives), in alternating order; per filing the two build times, whether the stored meta was used, and whether
the two graphs are the same (``graph_signature``: every node with its attributes, every edge with its type, kind,
confidence and evidence). Also the bytes of the stored graph fields (JSON) against the rest of the chunks' payload.

With ``--pdfs DIR`` instead: the indexing step's cost. Per PDF, in this process, the parse stage as
``pipelines/indexing.yaml`` configures it (converter, then splitter without graph meta), then the graph-meta step on
its chunks (what ``FilingSplitter(graph_meta=True)`` adds); wall and CPU ms per page of each.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/bench_graph_meta.py --store /tmp/graph-index --out g.json
    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/bench_graph_meta.py --pdfs ../shared/data/financebench-dev/pdfs
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def _timed(row: dict[str, Any], name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    row[f"{name}_wall_ms"] = round(1000 * (time.perf_counter() - wall), 1)
    row[f"{name}_cpu_ms"] = round(1000 * (time.process_time() - cpu), 1)
    return out


def _store_graph_meta(chunks: list[Any], lexicon: Any) -> None:
    """What FilingSplitter(graph_meta=True) adds to a filing's chunks."""
    from haystack_fin.core.graph.build import chunk_graph_meta

    stored = chunk_graph_meta(({"id": d.id, "content": d.content, "meta": d.meta} for d in chunks), lexicon)
    for d in chunks:
        d.meta.update(stored[d.id])


def step_cost(pdfs: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Per PDF: converter, splitter (graph meta off) and the graph-meta step, wall and CPU ms."""
    from haystack import Pipeline

    from haystack_fin.core.lexicon import Lexicon
    from haystack_fin.indexing_runner import split_indexing_pipeline
    from haystack_fin.pipeline_loader import ALLOWED_MODULES, pipeline_dict

    parse, _, _ = split_indexing_pipeline(pipeline_dict("indexing"))
    parse["components"]["splitter"]["init_parameters"]["graph_meta"] = False
    pipe = Pipeline.from_dict(parse, allowed_modules=ALLOWED_MODULES)
    pipe.warm_up()
    converter, splitter = pipe.get_component("converter"), pipe.get_component("splitter")
    lexicon = Lexicon.load(parse["components"]["splitter"]["init_parameters"].get("lexicon_path"))
    _ = lexicon.fingerprint  # once per process, as in a parse worker's first filing
    rows: list[dict[str, Any]] = []
    for pdf in sorted(pdfs.glob("*.pdf")):
        row: dict[str, Any] = {"filing": pdf.stem}
        docs = _timed(row, "convert", converter.run, sources=[str(pdf)], meta=[{"filing_id": pdf.stem}])
        split = _timed(row, "split", splitter.run, documents=docs["documents"])
        _timed(row, "graph_meta", _store_graph_meta, split["documents"], lexicon)
        row.update(pages=int(split["filing_nodes"][0].meta["n_pages"]), chunks=len(split["documents"]))
        row["load_avg"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    pages = sum(r["pages"] for r in rows)
    keys = [k for k in rows[0] if k.endswith("_ms")] if rows else []
    per_page = {k.replace("_ms", "_ms_per_page"): round(sum(r[k] for r in rows) / pages, 2) for k in keys}
    return {"filings": len(rows), "pages": pages, **per_page, "load_avg": round(os.getloadavg()[0], 2)}, rows


def _report(summary: dict[str, Any], rows: list[dict[str, Any]], out: Path | None) -> int:
    print(json.dumps(summary))
    if out:
        out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--pdfs", type=Path, default=None, help="time the indexing step on these PDFs instead")
    parser.add_argument("--lexicon", default=None, help="lexicon JSON (default: the built-in one)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.pdfs is not None:
        return _report(*step_cost(args.pdfs), args.out)
    if args.store is None or not args.store.is_dir():
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
    return _report(summary, rows, args.out)


if __name__ == "__main__":
    sys.exit(main())
