"""Benchmark table detection on PDF filings.

Measures, per page: ``page.get_text("words")``, ``page_may_have_table``, ``find_table_regions`` (geometric),
``find_tables_checked`` (the default "hybrid": geometric, plus PyMuPDF's finder on pages where row-like lines were
left outside every table; on how many pages that second opinion ran and what it added) and ``find_tables_pymupdf``
(PyMuPDF's ``find_tables``) on a sample of the pages the pre-check flags, plus how many pages each method finds
tables on.

    python benchmarks/bench_pdf_tables.py --pdfs /work/shared/data/financebench-dev/pdfs --sample 40
"""

import argparse
import logging
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf

from haystack_fin.core.ingest import pdf_tables
from haystack_fin.core.ingest.pdf_tables import (
    find_table_regions,
    find_tables_checked,
    find_tables_pymupdf,
    page_may_have_table,
)

logger = logging.getLogger("bench_pdf_tables")

DEFAULT_PDFS = Path("/work/shared/data/financebench-dev/pdfs")


def _ms(samples: list[float]) -> str:
    if not samples:
        return "n/a"
    return f"{statistics.mean(samples):7.2f} mean  {statistics.median(samples):7.2f} p50  {max(samples):8.1f} max"


_pymupdf_calls = [0]


def _counting(finder: Callable[..., list]) -> Callable[..., list]:
    """Wrap ``pdf_tables.find_tables_pymupdf`` to count how often the hybrid finder asks for a second opinion."""

    def wrapper(*args: Any, **kwargs: Any) -> list:
        _pymupdf_calls[0] += 1
        return finder(*args, **kwargs)

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS, help="directory of *.pdf files")
    parser.add_argument("--sample", type=int, default=40, help="candidate pages to run find_tables_pymupdf on (0=none)")
    parser.add_argument("--max-pages", type=int, default=0, help="stop after this many pages in total (0=all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    pdf_tables.find_tables_pymupdf = _counting(pdf_tables.find_tables_pymupdf)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(message)s")

    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if not pdfs:
        parser.error(f"no PDFs in {args.pdfs}")
    t_words: list[float] = []
    t_check: list[float] = []
    t_regions: list[float] = []
    t_checked: list[float] = []
    second_opinion_pages: list[str] = []
    added_by_pymupdf = 0
    candidates: list[tuple[Path, int]] = []
    pages_with_tables = 0
    n_tables = 0
    n_pages = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            file_tables = 0
            for page in doc:
                if args.max_pages and n_pages >= args.max_pages:
                    break
                n_pages += 1
                t0 = time.perf_counter()
                words = page.get_text("words")
                t1 = time.perf_counter()
                maybe = page_may_have_table(words)
                t2 = time.perf_counter()
                tables = find_table_regions(page, words)
                t3 = time.perf_counter()
                calls_before = _pymupdf_calls[0]
                checked = find_tables_checked(page, words)
                t4 = time.perf_counter()
                t_words.append((t1 - t0) * 1000)
                t_check.append((t2 - t1) * 1000)
                t_regions.append((t3 - t2) * 1000)
                t_checked.append((t4 - t3) * 1000)
                if _pymupdf_calls[0] > calls_before:
                    second_opinion_pages.append(f"{path.name} p{page.number + 1}")
                    added_by_pymupdf += sum(1 for t in checked if t.method == "pymupdf")
                if maybe:
                    candidates.append((path, page.number))
                if tables:
                    pages_with_tables += 1
                    n_tables += len(tables)
                    file_tables += len(tables)
                if tables and not maybe:
                    logger.debug("%s p%d: tables found but pre-check said no", path.name, page.number + 1)
            logger.info("%s: %d pages, %d tables", path.name, len(doc), file_tables)

    # The slow path only runs on a random sample of candidate pages; compare page-level agreement there.
    rng = random.Random(args.seed)
    sample = rng.sample(candidates, min(args.sample, len(candidates))) if args.sample else []
    t_pymupdf: list[float] = []
    t_geo_sample: list[float] = []
    both = only_geo = only_pymupdf = neither = 0
    for path, pno in sorted(sample):
        with pymupdf.open(path) as doc:
            page = doc[pno]
            words = page.get_text("words")
            t0 = time.perf_counter()
            geo = find_table_regions(page, words)
            t1 = time.perf_counter()
            lib = find_tables_pymupdf(page, words=words)
            t2 = time.perf_counter()
        t_geo_sample.append((t1 - t0) * 1000)
        t_pymupdf.append((t2 - t1) * 1000)
        if geo and lib:
            both += 1
        elif geo:
            only_geo += 1
            logger.debug("%s p%d: geometric only", path.name, pno + 1)
        elif lib:
            only_pymupdf += 1
            logger.debug("%s p%d: pymupdf only", path.name, pno + 1)
        else:
            neither += 1

    print(f"\n{len(pdfs)} PDFs, {n_pages} pages")
    print(f"{'get_text(words)':<28} ms/page {_ms(t_words)}")
    print(f"{'page_may_have_table':<28} ms/page {_ms(t_check)}")
    print(f"{'find_table_regions':<28} ms/page {_ms(t_regions)}")
    print(f"{'find_tables_checked':<28} ms/page {_ms(t_checked)}")
    print(
        f"second opinion (PyMuPDF) ran on {len(second_opinion_pages)} pages and added {added_by_pymupdf} tables: "
        f"{', '.join(second_opinion_pages[:20])}"
    )
    print(f"{'find_table_regions (sample)':<28} ms/page {_ms(t_geo_sample)}")
    print(f"{'find_tables_pymupdf (sample)':<28} ms/page {_ms(t_pymupdf)}")
    print(f"pre-check candidates: {len(candidates)} pages ({100 * len(candidates) / max(n_pages, 1):.0f}%)")
    print(f"find_table_regions: {pages_with_tables} pages with tables, {n_tables} tables")
    if sample:
        print(
            f"sample of {len(sample)} candidate pages - tables found by both: {both}, geometric only: {only_geo}, "
            f"pymupdf only: {only_pymupdf}, neither: {neither}"
        )


if __name__ == "__main__":
    main()
