"""OCR word accuracy and speed on scans made from the committed fixtures' text pages.

Each page is rendered to a grayscale image (``--scan-dpi``, a scanner's resolution) and put alone on an image-only
PDF page; ``core.ingest.ocr.ocr_page`` reads it back at ``--dpi``. The expected words are the original page's text layer
(``page.get_text("words")``). Word accuracy is multiset overlap after normalizing quotes and dashes:
recall = matched / expected words, precision = matched / OCR words, where a word matches at most as many times as
it occurs on both sides. Prints one line per page and the totals.

    python benchmarks/bench_ocr.py [--dpi 200] [--pages bestbuy:4,16 netflix:40]
"""

import argparse
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from haystack_fin.core.ingest import ocr

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
FILES = {
    "bestbuy": FIXTURES / "bestbuy-10q-2023-07-29.pdf",
    "netflix": FIXTURES / "netflix-10k-2015.pdf",
    "pepsico": FIXTURES / "pepsico-8k-2023-05-05.pdf",
}
# Cover, contents, Item headings with prose, statements, notes with tables, prose, exhibits, an 8-K.
DEFAULT_PAGES = [
    "bestbuy:1",
    "bestbuy:3",
    "bestbuy:4",
    "bestbuy:16",
    "bestbuy:24",
    "netflix:2",
    "netflix:14",
    "netflix:40",
    "netflix:43",
    "netflix:58",
    "pepsico:3",
    "pepsico:4",
]
_MAP = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-", "\u00a0": " "})


def normalize(word: str) -> str:
    return unicodedata.normalize("NFKC", word).translate(_MAP).strip()


def words_of(texts: list[str]) -> Counter[str]:
    return Counter(w for t in texts for w in normalize(t).split() if w)


def scan_page(src: pymupdf.Page, scan_dpi: int) -> pymupdf.Document:
    """An image-only copy of ``src``: the page rendered to a grayscale image, inserted on an empty page."""
    pix = src.get_pixmap(dpi=scan_dpi, colorspace=pymupdf.csGRAY)
    out = pymupdf.open()
    page = out.new_page(width=src.rect.width, height=src.rect.height)
    page.insert_image(page.rect, pixmap=pix)
    return out


def overlap(expected: Counter[str], got: Counter[str]) -> int:
    return sum(min(n, got[w]) for w, n in expected.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dpi", type=int, default=ocr.DEFAULT_DPI)
    parser.add_argument("--scan-dpi", type=int, default=300)
    parser.add_argument("--pages", nargs="*", default=DEFAULT_PAGES, help="name:page[,page] (1-based)")
    args = parser.parse_args()
    t = time.perf_counter()
    ocr.get_engine()
    print(f"engine load {time.perf_counter() - t:.2f} s")
    tot_exp = tot_got = tot_match = 0
    secs: list[float] = []
    for spec in args.pages:
        name, pages = spec.split(":")
        doc = pymupdf.open(FILES[name])
        for pno in (int(p) for p in pages.split(",")):
            src = doc[pno - 1]
            expected = words_of([w[4] for w in src.get_text("words")])
            scan = scan_page(src, args.scan_dpi)
            t0 = time.process_time()
            result = ocr.ocr_page(scan[0], dpi=args.dpi)
            cpu = time.process_time() - t0
            got = words_of([w[4] for w in result.words])
            match = overlap(expected, got)
            n_exp, n_got = sum(expected.values()), sum(got.values())
            tot_exp, tot_got, tot_match = tot_exp + n_exp, tot_got + n_got, tot_match + match
            secs.append(result.seconds)
            conf = f"{result.confidence:.3f}" if result.confidence is not None else "-"
            print(
                f"{name}:{pno:<3} words {n_exp:4d} ocr {n_got:4d} recall {match / max(n_exp, 1):.3f} "
                f"precision {match / max(n_got, 1):.3f} conf {conf} wall {result.seconds * 1000:.0f} ms "
                f"cpu {cpu * 1000:.0f} ms",
                flush=True,
            )
    print(
        f"TOTAL pages {len(secs)} words {tot_exp} recall {tot_match / max(tot_exp, 1):.3f} "
        f"precision {tot_match / max(tot_got, 1):.3f} mean {sum(secs) / max(len(secs), 1) * 1000:.0f} ms/page "
        f"(dpi {args.dpi})"
    )


if __name__ == "__main__":
    main()
