"""pdf_parse: reading order of visual lines (one and two columns) and page provenance on real filings."""

import random
import textwrap
from pathlib import Path

import pymupdf
import pytest

from haystack_fin.core.ingest import pdf as pdf_parse
from haystack_fin.core.ingest.items import detect_item_sections

FIXTURES = Path(__file__).parent.parent / "fixtures"
REAL_PDFS = sorted(FIXTURES.glob("*.pdf"))
WORDS = ["revenue", "operating", "income", "liquidity", "capital", "segment", "margin", "demand", "pricing", "debt"]


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def _two_column_pdf(with_table: bool = False) -> bytes:
    """Two 10-K Items side by side on one page: each column starts with its Item heading on the same baseline."""
    rng = random.Random(3)
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((200, 60), "ANNUAL REPORT ON FORM 10-K FOR THE FISCAL YEAR", fontsize=10)  # crosses the gutter
    for left, heading in ((72.0, "Item 1. Business"), (318.0, "Item 1A. Risk Factors")):
        y = 100.0
        page.insert_text((left, y), heading, fontname="hebo", fontsize=11)
        for line in textwrap.wrap(_prose(rng, 160), width=42):
            y += 12.5
            page.insert_text((left, y), line, fontsize=10)
    if with_table:
        y = 560.0
        for label in ("Net revenue", "Cost of revenue", "Operating income", "Net income"):
            y += 12.5
            page.insert_text((72, y), label, fontsize=9)
            for x, value in ((420, "1,234"), (500, "(567)")):
                page.insert_text((x, y), value, fontsize=9)
    return doc.tobytes()


def _lines(data: bytes) -> list[str]:
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return [ln.text for ln in pdf_parse._page_lines(doc[0])]


def test_two_columns_are_read_column_by_column() -> None:
    lines = _lines(_two_column_pdf())
    assert lines[0] == "ANNUAL REPORT ON FORM 10-K FOR THE FISCAL YEAR"
    # Headings on one baseline stay separate lines; the left column is read to its end before the right one.
    assert "Item 1. Business" in lines and "Item 1A. Risk Factors" in lines
    assert lines.index("Item 1A. Risk Factors") > lines.index("Item 1. Business") + 10
    assert not any("Business" in ln and "Risk" in ln for ln in lines)


def test_two_column_items_are_both_found() -> None:
    parsed = pdf_parse.parse_pdf_filing("two_columns.pdf", data=_two_column_pdf(), table_finder="none")
    codes = [s.item for s in detect_item_sections(parsed.elements, form="10-K")]
    assert codes[-2:] == ["1", "1A"]


def test_table_rows_are_not_taken_for_columns() -> None:
    """A page of label + value rows: the values are narrow, so rows are still merged across the page."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80.0
    for i in range(30):
        y += 12.5
        page.insert_text((72, y), f"Segment {i} revenue from customers in the region", fontsize=9)
        page.insert_text((420, y), "1,234", fontsize=9)
        page.insert_text((500, y), "(567)", fontsize=9)
    lines = _lines(doc.tobytes())
    assert lines[0] == "Segment 0 revenue from customers in the region 1,234 (567)"


@pytest.mark.parametrize("path", REAL_PDFS, ids=[p.name for p in REAL_PDFS])
def test_one_column_filings_have_no_gutter(path: Path) -> None:
    """The committed real filings are one-column: no page of them is read as two columns."""
    with pymupdf.open(path) as doc:
        for page in doc:
            gutter = pdf_parse._gutter(pdf_parse._raw_lines(page), page.rect.width)
            assert gutter is None, f"{path.name} page {page.number + 1}"
