from pathlib import Path

import lxml.etree
import pytest

from haystack_fin.core.ingest.docling_backend import (
    PAGE_BREAK_MARKER,
    DoclingReader,
    _missing_pdf_models,
    _pdf_artifacts_path,
    mark_page_breaks,
    parsed_filing_from_docling,
)
from haystack_fin.core.ingest.html import load_html_tree, parse_html_filing
from haystack_fin.core.ingest.layout import FilingParseError

FIXTURES = Path(__file__).parents[1] / "fixtures"

# An EDGAR-like filing: a page break after an <hr>, one before a table row, two empty breaks in a row (one page),
# "$" and ")" in their own cells, hidden XBRL header.
FILING_HTML = b"""<html><head><title>acme 10-k</title></head><body>
<div style="display:none"><ix:header>hidden dei facts</ix:header></div>
<p>ACME CORP FORM 10-K cover page text.</p>
<hr style="page-break-after:always"/>
<p style="font-weight:bold">Item 7. Management's Discussion and Analysis</p>
<p>Revenue grew strongly in the year, as the table below shows for each of the two years.</p>
<p>Net Sales (in millions)</p>
<table>
<tr><td></td><td colspan="3">2024</td><td colspan="3">2023</td></tr>
<tr><td>Net sales</td><td>$</td><td>1,234</td><td></td><td>$</td><td>(56</td><td>)</td></tr>
<tr style="page-break-before:always">
<td>Cost of sales</td><td>$</td><td>500</td><td></td><td>$</td><td>400</td><td></td></tr>
</table>
<p>After the table.</p>
<div style="page-break-before:always"></div>
<div style="page-break-before:always"></div>
<p>Last page.</p>
</body></html>"""


def _layout(parsed):
    return [(e.kind, e.page, e.pages) for e in parsed.elements]


def test_mark_page_breaks_places_a_marker_at_each_break():
    root, _ = load_html_tree("acme.html", FILING_HTML)
    assert mark_page_breaks(root) == 4
    html = lxml.etree.tostring(root, method="html", encoding="unicode")
    assert html.count(PAGE_BREAK_MARKER) == 4
    # after the <hr>, as a paragraph of its own; in the row's first cell, before the cell's text
    assert f'<hr style="page-break-after:always"><p>{PAGE_BREAK_MARKER}</p>' in html
    assert f"<td><span> {PAGE_BREAK_MARKER} </span>Cost of sales</td>" in html
    assert "hidden dei facts" not in html


@pytest.fixture
def reader():
    pytest.importorskip("docling", reason="the [docling] extra is not installed")
    return DoclingReader()


def test_html_pages_and_tables_match_the_native_parser(reader):
    native = parse_html_filing("acme.html", data=FILING_HTML)
    parsed = reader.parse_html("acme.html", FILING_HTML)
    assert parsed.n_pages == native.n_pages == 4
    assert _layout(parsed) == _layout(native)
    table = next(e for e in parsed.elements if e.kind == "table")
    assert table.pages == [2, 3]  # the row after the break is on page 3
    assert table.table.rows == [["", "2024", "2023"], ["Net sales", "1,234", "(56)"], ["Cost of sales", "500", "400"]]
    assert table.table.header_rows == 1
    assert (table.table.title, table.table.units) == ("Net Sales (in millions)", "(in millions)")
    native_table = next(e for e in native.elements if e.kind == "table")
    assert table.table == native_table.table
    assert parsed.page_texts[0] == "ACME CORP FORM 10-K cover page text."
    assert parsed.meta["backend"] == "docling" and parsed.meta["title"] == "acme 10-k"
    assert PAGE_BREAK_MARKER not in " ".join(e.text for e in parsed.elements)


def test_docx_headings_lists_and_tables(reader, tmp_path):
    docx = pytest.importorskip("docx", reason="python-docx is not installed")
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter

    document = docx.Document()
    document.add_heading("Fourth Quarter Results", level=1)
    document.add_paragraph("Revenue rose 12 percent to a record for the quarter.")
    document.add_heading("Outlook", level=2)
    document.add_paragraph("Gross margin is expected to be 45 percent.", style="List Bullet")
    document.add_paragraph("Operating expenses are expected to be flat.", style="List Bullet")
    table = document.add_table(rows=3, cols=3)
    grid = [["Segment", "Q4 2024", "Q4 2023"], ["Cloud", "1,200", "1,000"], ["Devices", "800", "(20)"]]
    for r, row in enumerate(grid):
        for c, text in enumerate(row):
            table.cell(r, c).text = text
    path = tmp_path / "release.docx"
    document.save(path)

    doc = DocumentConverter(allowed_formats=[InputFormat.DOCX]).convert(path).document
    parsed = parsed_filing_from_docling(doc, str(path))
    headings = [(e.text, e.font_size) for e in parsed.elements if e.is_heading]
    assert headings[:2] == [("Fourth Quarter Results", 16.0), ("Outlook", 14.0)]
    texts = [e.text for e in parsed.elements if e.kind == "text" and not e.is_heading]
    assert "Gross margin is expected to be 45 percent." in texts
    assert "Operating expenses are expected to be flat." in texts
    table_data = next(e for e in parsed.elements if e.kind == "table").table
    assert table_data.rows == grid
    assert table_data.header_rows == 1
    assert parsed.n_pages == 1 and {e.page for e in parsed.elements} == {1}  # a DOCX has no page breaks here


def test_a_document_without_text_fails_naming_the_file(reader):
    from docling_core.types.doc.document import DoclingDocument

    with pytest.raises(FilingParseError, match=r"^empty\.html: Docling found no text"):
        parsed_filing_from_docling(DoclingDocument(name="empty"), "empty.html")


def _pdf_models_installed() -> bool:
    try:
        return not _missing_pdf_models(_pdf_artifacts_path())
    except ImportError:
        return False


def test_pdf_without_layout_models_fails_with_one_line(reader, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCLING_ARTIFACTS_PATH", str(tmp_path))  # an empty model folder: nothing to load
    source = str(FIXTURES / "pepsico-8k-2023-05-05.pdf")
    with pytest.raises(FilingParseError) as raised:
        reader.parse_pdf(source, (FIXTURES / "pepsico-8k-2023-05-05.pdf").read_bytes())
    message = str(raised.value)
    assert message.startswith(f"{source}: PDF through Docling needs its layout")
    assert "backend='native'" in message and "\n" not in message


@pytest.mark.slow
@pytest.mark.skipif(
    not _pdf_models_installed(),
    reason="Docling's PDF layout models are not installed here (set DOCLING_ARTIFACTS_PATH to a folder made by "
    "`docling-tools models download`); they cannot be downloaded at run time",
)
def test_pdf_with_layout_models_keeps_pages_and_tables(reader):
    parsed = reader.parse_pdf("bestbuy.pdf", (FIXTURES / "bestbuy-10q-2023-07-29.pdf").read_bytes())
    assert parsed.n_pages == 30
    pages = [e.page for e in parsed.elements]
    assert pages == sorted(pages) and pages[0] >= 1 and pages[-1] <= 30
    assert any(e.kind == "table" and e.table.n_cols >= 2 and e.bbox is not None for e in parsed.elements)
