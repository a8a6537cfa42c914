"""Structural checks of FilingSplitter output over a folder of filings (no embedding, no store).

For every filing: Items with page ranges, image chunks (and how many are vector charts), and counts of chunks
missing a provenance field, table blocks with more than 15 data rows, and two measures of table text left in text
chunks:

- ``table_rows_in_text``: rows of the tables we found whose label and first two values also appear in a text chunk;
- ``value_lines_in_text`` (PDF only): lines of the page that read like a table row by themselves (two or more
  numbers, each a column gap from its neighbour; ``pdf_tables.value_lines``) and appear in a text chunk of that
  page. This one does not depend on the table finder, so it also counts tables the finder missed.

    python benchmarks/check_chunks.py ../shared/data/financebench-dev/pdfs ../shared/data/edgar-html [--json]
        [--table-finder hybrid|layout|pymupdf|none]
"""

import argparse
import json
import re
import sys
from pathlib import Path

import pymupdf

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema
from haystack_fin.core.ingest.pdf_tables import value_lines

MAX_ROWS = 15


def check(path: Path, converter: FilingConverter, splitter: FilingSplitter) -> dict:
    result = converter.run(sources=[path])
    if result["failures"]:
        return {"filing": path.name, "error": result["failures"][0]["error"]}
    split = splitter.run(documents=result["documents"])
    chunks, node = split["documents"], split["filing_nodes"][0]
    missing = sum(1 for c in chunks if not set(schema.PROVENANCE_FIELDS) <= c.meta.keys())
    tables = [c for c in chunks if c.meta[schema.MODALITY] == "table"]
    images = [c for c in chunks if c.meta[schema.MODALITY] == "image"]
    charts = sum(1 for c in images if (c.meta.get(schema.IMAGE) or {}).get("kind") == "chart")
    oversized = sum(1 for t in tables if len(t.meta[schema.TABLE_JSON]["rows"]) > MAX_ROWS)
    row_probes = set()
    for t in tables:
        for row in t.meta[schema.TABLE_JSON]["rows"]:
            values = [c for c in row["cells"][1:] if c]
            if row["label"] and len(row["label"]) > 12 and len(values) >= 2:
                row_probes.add(f"{row['label']} {values[0]} {values[1]}")
    text = [c.content for c in chunks if c.meta[schema.MODALITY] == "text"]
    leaks = sum(1 for probe in row_probes if any(probe in t for t in text))
    value_leaks = _value_lines_in_text(path, chunks) if path.suffix.lower() == ".pdf" else []
    return {
        "filing": path.name,
        "form": node.meta[schema.FORM],
        "pages": node.meta[schema.N_PAGES],
        "chunks": len(chunks),
        "tables": len(tables),
        "images": len(images),
        "charts": charts,
        "text_words": sum(len(c.content.split()) for c in chunks if c.meta[schema.MODALITY] == "text"),
        "missing_provenance": missing,
        "blocks_over_15_rows": oversized,
        "table_rows_probed": len(row_probes),
        "table_rows_in_text": leaks,
        "value_lines_in_text": len(value_leaks),
        "value_line_examples": value_leaks[:5],
        "items": " ".join(f"{it['item']}:{it['start_page']}-{it['end_page']}" for it in node.meta[schema.ITEMS]),
    }


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _value_lines_in_text(path: Path, chunks: list) -> list[str]:
    """Row-like lines of the PDF that a text chunk of the same page contains ("page N: line")."""
    by_page: dict[int, list[str]] = {}
    for c in chunks:
        if c.meta[schema.MODALITY] == "text":
            for page in c.meta[schema.PAGE_NUMBERS]:
                by_page.setdefault(page, []).append(_squash(c.content))
    found = []
    with pymupdf.open(path) as doc:
        for page in doc:
            texts = by_page.get(page.number + 1)
            if not texts:
                continue
            for _, line in value_lines(page.get_text("words")):
                probe = _squash(line)
                if any(probe in t for t in texts):
                    found.append(f"p{page.number + 1}: {line}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--table-finder",
        default="hybrid",
        choices=["hybrid", "layout", "pymupdf", "none"],
        help="FilingConverter's finder",
    )
    args = parser.parse_args(argv)
    converter, splitter = FilingConverter(table_finder=args.table_finder), FilingSplitter()
    files = sorted(
        p for folder in args.folders for p in Path(folder).iterdir() if p.suffix.lower() in (".pdf", ".htm", ".html")
    )
    rows = [check(p, converter, splitter) for p in files]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        if "error" in r:
            print(f"{r['filing']}: ERROR {r['error']}")
            continue
        print(
            f"{r['filing']}: {r['form']} {r['pages']}p {r['chunks']} chunks ({r['tables']} table blocks, "
            f"{r['images']} image chunks of which {r['charts']} charts); "
            f"missing provenance {r['missing_provenance']}, blocks >15 rows {r['blocks_over_15_rows']}, "
            f"table rows in text {r['table_rows_in_text']}/{r['table_rows_probed']}, "
            f"value lines in text {r['value_lines_in_text']}\n    {r['items']}"
        )
        for example in r["value_line_examples"]:
            print(f"      value line in text: {example}")
    keys = ("chunks", "tables", "images", "charts", "text_words", "missing_provenance", "blocks_over_15_rows")
    totals = {k: sum(r.get(k, 0) for r in rows) for k in keys}
    totals["table_rows_in_text"] = sum(r.get("table_rows_in_text", 0) for r in rows)
    totals["table_rows_probed"] = sum(r.get("table_rows_probed", 0) for r in rows)
    totals["value_lines_in_text"] = sum(r.get("value_lines_in_text", 0) for r in rows)
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
