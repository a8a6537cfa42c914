"""Write each page's text of a filing to its own file, for labelling questions by reading (and grepping) pages.

PDF pages are PyMuPDF's ``page.get_text()`` (what the eval and the validator read); EDGAR HTML pages are the
native parser's pages (``parse_html_filing(...).page_texts``), the pages its chunks carry. File ``p0001.txt`` is
page 1, i.e. ``evidence_page_num`` 0.

    python benchmarks/page_texts.py FILING [FILING ...] --out /tmp/pages
    grep -l "Total current liabilities" /tmp/pages/AES_2021_10K/*.txt
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path


def page_texts(path: Path) -> list[str]:
    """The text of every page of a PDF or EDGAR HTML filing, page 1 first."""
    if path.suffix.lower() == ".pdf":
        import pymupdf

        with pymupdf.open(path) as doc:
            return [page.get_text() for page in doc]
    from haystack_fin.core.ingest.html import parse_html_filing

    return parse_html_filing(path, extract_images=False).page_texts


def doc_name(path: Path) -> str:
    """The filing's name in a question set: its file name without ``.pdf``, ``.html``/``.htm`` (and ``.gz``)."""
    return re.sub(r"\.(pdf|html?)(\.gz)?$", "", path.name, flags=re.IGNORECASE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("filings", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for path in args.filings:
        folder = args.out / doc_name(path)
        folder.mkdir(parents=True, exist_ok=True)
        texts = page_texts(path)
        for number, text in enumerate(texts, start=1):
            (folder / f"p{number:04d}.txt").write_text(text, encoding="utf-8")
        print(f"{path.name}: {len(texts)} pages -> {folder}")


if __name__ == "__main__":
    main()
