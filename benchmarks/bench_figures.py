"""What figure extraction costs in PDF parsing: ms/page with and without it, in the same run.

Parses every PDF of a folder with ``parse_pdf_filing`` three ways, file by file (so load changes hit all three
alike): images and vector charts off; on without figure OCR; on with figure OCR (when the ``[ocr]`` extra is
installed). Prints ms/page of each, the difference, and the figure counts.

    python benchmarks/bench_figures.py /work/shared/data/financebench-dev/pdfs [--no-ocr]
"""

import argparse
import sys
import time
from pathlib import Path

from haystack_fin.core.ingest import ocr as ocr_engine
from haystack_fin.core.ingest.pdf import parse_pdf_filing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--no-ocr", action="store_true", help="skip the figure-OCR variant")
    args = parser.parse_args(argv)
    variants = {"off": {"extract_images": False}, "charts+images": {"ocr_figures": False}}
    if not args.no_ocr and ocr_engine.ocr_available():
        variants["charts+images+ocr"] = {}
    seconds = dict.fromkeys(variants, 0.0)
    counts = dict.fromkeys(variants, 0)
    pages = 0
    for path in sorted(Path(args.folder).glob("*.pdf")):
        for name, kwargs in variants.items():
            start = time.perf_counter()
            parsed = parse_pdf_filing(path, **kwargs)  # type: ignore[arg-type]
            seconds[name] += time.perf_counter() - start
            counts[name] += sum(1 for e in parsed.elements if e.kind == "image")
        pages += parsed.n_pages
    base = 1000 * seconds["off"] / pages
    for name in variants:
        ms = 1000 * seconds[name] / pages
        print(f"{name:18s} {ms:7.2f} ms/page  (+{ms - base:.2f})  image elements {counts[name]}")
    print(f"{pages} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
