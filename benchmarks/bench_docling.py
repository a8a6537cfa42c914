"""FilingConverter's native backend against backend="docling" on EDGAR HTML filings.

For each filing and backend: conversion seconds (best of ``--repeat`` runs; the Docling converter is built once
before timing), pages, tables, Items that FilingSplitter finds (code and start page) and chunks. Items are
compared by (code, start page). Needs the [docling] extra.

    python benchmarks/bench_docling.py FILE.html [FILE.html.gz ...] [--repeat 2] [--out docling.json]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema


def measure(converter: FilingConverter, path: str, repeat: int) -> dict[str, object]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = converter.run(sources=[path])
        seconds.append(time.perf_counter() - started)
    if result["failures"]:
        return {"error": result["failures"][0]["error"]}
    filing = result["documents"][0]
    split = FilingSplitter(term_stats=False).run(documents=[filing])
    chunks = split["documents"]
    items = split["filing_nodes"][0].meta["items"]
    return {
        "seconds": round(min(seconds), 2),
        "pages": filing.meta[schema.N_PAGES],
        "tables": sum(1 for e in filing.meta[schema.ELEMENTS] if e["kind"] == "table"),
        "items": [f"{i['item']}@{i['start_page']}" for i in items],
        "chunks": len(chunks),
        "table_chunks": sum(1 for c in chunks if c.meta.get("modality") == "table"),
        "chunks_without_pages": sum(1 for c in chunks if not c.meta.get("page_numbers")),
        "meta": [filing.meta.get(k) for k in ("company", "form", "period")],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    converters = {"native": FilingConverter(), "docling": FilingConverter(backend="docling")}
    for converter in converters.values():
        converter.warm_up()
    report: dict[str, dict[str, object]] = {}
    for path in args.files:
        row = {name: measure(conv, path, args.repeat) for name, conv in converters.items()}
        native, docling = row["native"], row["docling"]
        if "items" in native and "items" in docling:
            a, b = set(native["items"]), set(docling["items"])  # type: ignore[arg-type]
            row["items_same"] = sorted(a & b)  # type: ignore[assignment]
            row["items_native_only"] = sorted(a - b)  # type: ignore[assignment]
            row["items_docling_only"] = sorted(b - a)  # type: ignore[assignment]
        report[Path(path).name] = row
        print(Path(path).name, json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
