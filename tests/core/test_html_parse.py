"""parse_html_filing on Apple's Q3 2025 10-Q (inline XBRL, Workiva) plus small handmade HTML cases.

Facts below were checked by hand against the filing: pages are separated by <hr style="page-break-after:always">,
the cover and table of contents are unnumbered, so physical page = printed page + 2.
"""

import gzip
from pathlib import Path

import pytest

from haystack_fin.core.ingest.html import clean_table_rows, merge_cell_fragments, parse_html_filing
from haystack_fin.core.ingest.layout import Element, FilingParseError, ParsedFiling

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "aapl-10-q-2025-08-01.html.gz"


@pytest.fixture(scope="module")
def filing() -> ParsedFiling:
    return parse_html_filing(FIXTURE.name.removesuffix(".gz"), data=gzip.decompress(FIXTURE.read_bytes()))


def _text(filing: ParsedFiling, startswith: str) -> list[Element]:
    return [e for e in filing.elements if e.kind == "text" and e.text.startswith(startswith)]


def _table(filing: ParsedFiling, title: str) -> Element:
    return next(e for e in filing.elements if e.kind == "table" and e.table and e.table.title == title)


def test_page_count_matches_printed_page_numbers(filing: ParsedFiling) -> None:
    assert filing.n_pages == 25
    assert len(filing.page_texts) == 25
    assert filing.page_texts[0].startswith("UNITED STATES")
    # Printed footers run 1..23 on physical pages 3..25.
    assert filing.page_texts[2].endswith("Apple Inc. | Q3 2025 Form 10-Q | 1")
    assert filing.page_texts[24].endswith("Apple Inc. | Q3 2025 Form 10-Q | 23")
    assert all(1 <= e.page <= 25 for e in filing.elements)


def test_item_headings_are_single_text_elements_on_their_pages(filing: ParsedFiling) -> None:
    mdna = _text(filing, "Item 2. Management’s Discussion and Analysis")
    assert [(e.page, e.text) for e in mdna] == [
        (15, "Item 2. Management’s Discussion and Analysis of Financial Condition and Results of Operations")
    ]
    assert mdna[0].bold and mdna[0].font_size == 9.0
    assert [e.page for e in _text(filing, "Item 1. Financial Statements")] == [3]
    assert [e.page for e in _text(filing, "Item 6. Exhibits")] == [24]
    assert [e.page for e in _text(filing, "PART II — OTHER INFORMATION")] == [22]


def test_income_statement_table(filing: ParsedFiling) -> None:
    el = _table(filing, "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)")
    table = el.table
    assert table is not None
    assert el.page == 3
    assert table.units == (
        "(In millions, except number of shares, which are reflected in thousands, and per-share amounts)"
    )
    assert table.header_rows == 2
    assert table.rows[0] == ["", "Three Months Ended", "", "Nine Months Ended", ""]
    assert table.rows[1] == ["", "June 28, 2025", "June 29, 2024", "June 28, 2025", "June 29, 2024"]
    assert ["Total net sales", "94,036", "85,777", "313,695", "296,105"] in table.rows
    # ")" split into its own cell is merged back into the negative amount.
    assert ["Other income/(expense), net", "(171)", "142", "(698)", "250"] in table.rows
    assert "Total net sales | 94,036 | 85,777 | 313,695 | 296,105" in el.text.splitlines()


def test_balance_sheet_table(filing: ParsedFiling) -> None:
    table = _table(filing, "CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)").table
    assert table is not None
    assert table.header_rows == 1
    assert table.rows[0] == ["", "June 28, 2025", "September 28, 2024"]
    assert table.rows[1] == ["ASSETS:", "", ""]  # full-width section label stays in the label column
    assert ["Total assets", "331,495", "364,980"] in table.rows


def test_percent_cells_are_merged(filing: ParsedFiling) -> None:
    # MD&A net sales by reportable segment, page 16: "%" and ")%" sit in their own cells in the HTML.
    segment = next(e for e in filing.elements if e.kind == "table" and e.page == 16)
    assert segment.table is not None
    assert segment.table.rows[1][3] == "Change"
    assert ["Greater China", "15,369", "14,728", "4%", "49,884", "51,919", "(4)%"] in segment.table.rows


def test_hidden_ix_header_does_not_leak(filing: ParsedFiling) -> None:
    everything = "\n".join(filing.page_texts) + "\n".join(e.text for e in filing.elements)
    # Both live only in the display:none ix:header block.
    assert "--09-27" not in everything
    assert "0000320193" not in everything
    # ...but the dei facts are kept as metadata.
    assert filing.meta["dei"]["DocumentType"] == "10-Q"
    assert filing.meta["dei"]["EntityCentralIndexKey"] == "0000320193"


def test_cover_checkbox_tables_become_text(filing: ParsedFiling) -> None:
    cover = [e for e in filing.elements if e.page == 1]
    assert any(e.kind == "text" and e.text == "Large accelerated filer ☒ Accelerated filer ☐" for e in cover)
    assert not any(e.kind == "table" and "☒" in e.text for e in cover)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty"),
        (b"   \n\t ", "empty"),
        (bytes(range(256)) * 8, "binary"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF"),
        (b"plain text, no markup at all", "no HTML markup"),
        (b"<html><body>" + bytes(range(0x80, 0x100)) * 20 + b"</body></html>", "cannot decode"),
        (b"<html><body><div style='display: none'>hidden</div></body></html>", "no visible text"),
    ],
)
def test_bad_input_raises(data: bytes, problem: str) -> None:
    with pytest.raises(FilingParseError, match=problem) as info:
        parse_html_filing("bad.htm", data=data)
    assert info.value.source == "bad.htm"


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FilingParseError, match="cannot read"):
        parse_html_filing(tmp_path / "nope.htm")


# --- handmade HTML ---------------------------------------------------------------------------------------------


def test_merge_cell_fragments() -> None:
    assert merge_cell_fragments(["Net loss", "$", "(1,234", ")", "", "(", "5", ")"]) == [
        "Net loss",
        "",
        "(1,234)",
        "",
        "",
        "",
        "(5)",
        "",
    ]
    assert merge_cell_fragments(["Growth", "12.5", "%", "(4)", "%"]) == ["Growth", "12.5%", "", "(4)%", ""]
    # A lone ")" or "%" after a label is not a fragment of a number.
    assert merge_cell_fragments(["Total", ")"]) == ["Total", ")"]


def test_clean_table_rows_aligns_spanning_headers() -> None:
    raw = [
        [("", 3), ("2024", 3), ("", 1), ("2023", 3)],
        [("Revenue", 3), ("$", 1), ("1,000", 1), ("", 1), ("", 1), ("$", 1), ("900", 1), ("", 1)],
        [("Loss", 3), ("(20", 2), (")", 1), ("", 1), ("—", 2), ("", 1)],
    ]
    assert clean_table_rows(raw) == [
        ["", "2024", "2023"],
        ["Revenue", "1,000", "900"],
        ["Loss", "(20)", "—"],
    ]


_PAGE = """<html><body>
<div style="display:none"><ix:header><ix:hidden>SECRET</ix:hidden></ix:header></div>
<div><span style="font-size:10pt">Cover</span></div>
<hr style="PAGE-BREAK-AFTER: Always"/>
<table><tr><td><span style="font-weight:bold">Item 7.</span></td><td><b>Management's Discussion</b></td></tr></table>
<p style="font-size:12px">Intro <b>bold</b> text<br>next line</p>
<div style="break-before: page"><h2>Results</h2></div>
<p>Sales (in millions):</p>
<table>
 <tr><td></td><td colspan="3">2024</td><td></td><td colspan="3">2023</td></tr>
 <tr><td>Revenue</td><td>$</td><td>1,000</td><td></td><td></td><td>$</td><td>900</td><td></td></tr>
 <tr><td>Margin</td><td></td><td>12</td><td>%</td><td></td><td></td><td>(3</td><td>)%</td></tr>
</table>
<script>var x = 1;</script>
</body></html>"""


def test_handmade_page_breaks_layout_tables_and_tables() -> None:
    parsed = parse_html_filing("tiny.htm", data=_PAGE.encode())
    texts = [(e.kind, e.page, e.text) for e in parsed.elements]
    assert texts[:5] == [
        ("text", 1, "Cover"),
        ("text", 2, "Item 7. Management's Discussion"),
        ("text", 2, "Intro bold text next line"),
        ("text", 3, "Results"),
        ("text", 3, "Sales (in millions):"),
    ]
    assert parsed.n_pages == 3
    assert parsed.page_texts[0] == "Cover"
    assert "SECRET" not in "".join(parsed.page_texts) and "var x" not in "".join(parsed.page_texts)

    item, intro, heading = parsed.elements[1], parsed.elements[2], parsed.elements[3]
    assert item.bold
    assert intro.font_size == 9.0 and not intro.bold  # 12px -> 9pt; "bold" covers only part of the line
    assert heading.is_heading and heading.bold

    table = parsed.elements[5]
    assert table.kind == "table" and table.page == 3 and table.table is not None
    assert table.table.rows == [["", "2024", "2023"], ["Revenue", "1,000", "900"], ["Margin", "12%", "(3)%"]]
    assert table.table.header_rows == 1
    assert table.table.title == "Sales (in millions):"
    assert table.table.units == "(in millions)"
    assert table.text == " | 2024 | 2023\nRevenue | 1,000 | 900\nMargin | 12% | (3)%"
