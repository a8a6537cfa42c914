"""Geometric table detection on the Best Buy 10-Q fixture (a copy of BESTBUY_2024Q2_10Q.pdf).

Page numbers below are 1-based as printed in a PDF viewer; PyMuPDF indexes pages from 0.
"""

from pathlib import Path

import pymupdf
import pytest

from haystack_fin.core.ingest import pdf_tables
from haystack_fin.core.ingest.layout import TableData
from haystack_fin.core.ingest.pdf_tables import (
    DetectedTable,
    find_table_regions,
    find_tables_checked,
    find_tables_pymupdf,
    page_may_have_table,
    value_lines,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "bestbuy-10q-2023-07-29.pdf"

CONTENTS_PAGE = 2
BALANCE_SHEET_PAGE = 3
EARNINGS_PAGE = 4
CASH_FLOWS_PAGE = 6
FAIR_VALUE_PAGE = 10  # one-row tables under their own headers, one with a text column ("SG&A")
DEBT_PAGE = 11  # derivatives and long-term debt notes: three tables under prose
PROSE_PAGE = 23  # Item 3/Item 4 prose only


@pytest.fixture(scope="module")
def doc() -> pymupdf.Document:
    with pymupdf.open(FIXTURE) as d:
        yield d


def _tables(doc: pymupdf.Document, page_no: int) -> list[DetectedTable]:
    return find_table_regions(doc[page_no - 1])


def _row(table: TableData, label: str) -> list[str]:
    rows = [r for r in table.rows[table.header_rows :] if r[0] == label]
    assert rows, f"no row labelled {label!r} in {[r[0] for r in table.rows]}"
    return rows[0]


def test_balance_sheet_rows_header_and_caption(doc: pymupdf.Document) -> None:
    tables = _tables(doc, BALANCE_SHEET_PAGE)
    assert len(tables) == 1
    table = tables[0].table
    assert table.header_rows == 1
    assert table.rows[0] == ["", "July 29, 2023", "January 28, 2023", "July 30, 2022"]
    assert _row(table, "Cash and cash equivalents") == ["Cash and cash equivalents", "1,093", "1,874", "840"]
    assert _row(table, "Total liabilities and equity") == ["Total liabilities and equity", "15,318", "15,803", "15,419"]
    # Section labels stay as value-less rows; the table is rectangular.
    assert _row(table, "Current assets") == ["Current assets", "", "", ""]
    assert {len(r) for r in table.rows} == {4}
    assert table.title == "Condensed Consolidated Balance Sheets"
    assert table.units.startswith("$ in millions")


def test_balance_sheet_wrapped_label_is_one_row(doc: pymupdf.Document) -> None:
    table = _tables(doc, BALANCE_SHEET_PAGE)[0].table
    common = [r for r in table.rows if r[0].startswith("Common stock, $0.10 par value")]
    assert len(common) == 1
    assert common[0][0].endswith("225.1 million shares, respectively")
    assert common[0][1:] == ["22", "22", "22"]


def test_earnings_statement_keeps_negatives_and_spanning_header(doc: pymupdf.Document) -> None:
    tables = _tables(doc, EARNINGS_PAGE)
    assert len(tables) == 1
    table = tables[0].table
    assert _row(table, "Restructuring charges") == ["Restructuring charges", "(7)", "34", "(16)", "35"]
    assert _row(table, "Interest expense") == ["Interest expense", "(12)", "(7)", "(24)", "(13)"]
    assert _row(table, "Diluted earnings per share")[1:] == ["1.25", "1.35", "2.36", "2.85"]
    assert table.rows[0][1:] == [
        "Three Months Ended July 29, 2023",
        "Three Months Ended July 30, 2022",
        "Six Months Ended July 29, 2023",
        "Six Months Ended July 30, 2022",
    ]
    assert "except per share amounts" in table.units


def test_cash_flow_statement(doc: pymupdf.Document) -> None:
    table = _tables(doc, CASH_FLOWS_PAGE)[0].table
    assert table.rows[0] == ["", "Six Months Ended July 29, 2023", "Six Months Ended July 30, 2022"]
    assert _row(table, "Accounts payable") == ["Accounts payable", "(206)", "(1,434)"]
    assert _row(table, "Gain on sale of subsidiary, net") == ["Gain on sale of subsidiary, net", "(21)", "-"]


def test_several_tables_between_paragraphs(doc: pymupdf.Document) -> None:
    tables = _tables(doc, DEBT_PAGE)
    assert len(tables) == 3
    notional, effects, debt = (t.table for t in tables)
    assert notional.rows[0] == ["Contract Type", "July 29, 2023", "January 28, 2023", "July 30, 2022"]
    assert notional.units == "$ in millions"
    assert "Notional amounts" in notional.title
    # A text column ("Statement of Earnings Location") between label and numbers.
    assert _row(effects, "Interest rate swap contracts") == [
        "Interest rate swap contracts",
        "Interest expense",
        "(10)",
        "14",
        "(14)",
        "(31)",
    ]
    # Numbers inside a label ("4.45%", "2028") stay in the label.
    assert _row(debt, "Notes, 4.45%, due October 1, 2028")[1:] == ["500", "500", "500"]
    # Prose around the tables is not swallowed.
    for t in tables:
        assert not any("We manage our economic" in r[0] or "On April 12, 2023" in r[0] for r in t.table.rows)


def test_detected_table_geometry_and_word_indices(doc: pymupdf.Document) -> None:
    page = doc[BALANCE_SHEET_PAGE - 1]
    words = page.get_text("words")
    detected = find_table_regions(page, words)[0]
    x0, y0, x1, y1 = detected.bbox
    assert 0 <= x0 < x1 <= page.rect.width and 0 <= y0 < y1 <= page.rect.height
    texts = {words[i][4] for i in detected.word_indices}
    assert {"1,093", "Goodwill", "January"} <= texts
    caption = {words[i][4] for i in detected.caption_word_indices}
    assert "Balance" in caption and "1,093" not in caption
    assert not set(detected.word_indices) & set(detected.caption_word_indices)
    assert detected.method == "geometric"


def test_prose_page_has_no_table(doc: pymupdf.Document) -> None:
    page = doc[PROSE_PAGE - 1]
    words = page.get_text("words")
    assert len(words) > 500  # a full page of text
    assert find_table_regions(page, words) == []
    assert page_may_have_table(words) is False


def test_precheck_flags_statement_pages(doc: pymupdf.Document) -> None:
    for page_no in (BALANCE_SHEET_PAGE, EARNINGS_PAGE, CASH_FLOWS_PAGE, DEBT_PAGE):
        assert page_may_have_table(doc[page_no - 1].get_text("words"))


def test_one_row_tables_under_a_header(doc: pymupdf.Document) -> None:
    tables = {t.table.rows[-1][0]: t.table for t in _tables(doc, FAIR_VALUE_PAGE)}
    amortization = tables["Amortization expense"]
    assert amortization.header_rows == 1 and len(amortization.rows) == 2
    # The text column between label and values stays a column of its own.
    assert amortization.rows[1] == ["Amortization expense", "SG&A", "21", "22", "41", "44"]
    assert tables["Long-term debt(1)"].rows[1] == [
        "Long-term debt(1)",
        "991",
        "1,130",
        "1,019",
        "1,143",
        "1,069",
        "1,169",
    ]


def test_table_of_contents_is_not_a_table(doc: pymupdf.Document) -> None:
    # "Item 1. Financial Statements   3": page numbers in a column are not financial data.
    assert _tables(doc, CONTENTS_PAGE) == []


@pytest.mark.parametrize("name", ["bestbuy-10q-2023-07-29.pdf", "netflix-10k-2015.pdf", "pepsico-8k-2023-05-05.pdf"])
def test_every_row_like_line_lies_in_a_table(name: str) -> None:
    # value_lines does not use the detector: a line with two column-gapped numbers outside every detected table
    # is a table the detector missed (NETFLIX 10-K: notes tables with date and text columns, one-row MD&A
    # tables under their own headers). Their text would otherwise land in a text chunk.
    missed = []
    with pymupdf.open(FIXTURES / name) as d:
        for page in d:
            words = page.get_text("words")
            boxes = [t.bbox for t in find_table_regions(page, words)]
            for line_box, text in value_lines(words):
                # the same containment test (2 pt tolerance) the hybrid finder uses to decide on a second opinion
                if not any(pdf_tables._contains(box, line_box) for box in boxes):
                    missed.append(f"p{page.number + 1}: {text}")
    assert missed == []


def test_second_opinion_runs_only_where_rows_were_left(doc: pymupdf.Document, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("PyMuPDF's finder ran on a page without missed rows")

    monkeypatch.setattr(pdf_tables, "find_tables_pymupdf", fail)
    page = doc[BALANCE_SHEET_PAGE - 1]
    assert [t.method for t in find_tables_checked(page)] == ["geometric"]


@pytest.mark.slow
def test_second_opinion_adds_a_missed_table(doc: pymupdf.Document, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate a detector miss on the balance sheet: the rows are left outside every table, so PyMuPDF's finder runs.
    monkeypatch.setattr(pdf_tables, "find_table_regions", lambda page, words=None: [])
    tables = find_tables_checked(doc[BALANCE_SHEET_PAGE - 1])
    assert [t.method for t in tables] == ["pymupdf"]
    assert _row(tables[0].table, "Cash and cash equivalents")[1:] == ["1,093", "1,874", "840"]


def test_labels_set_above_their_numbers() -> None:
    # COCACOLA 10-K layout: each label (with a footnote digit) sits on its own line just above its numbers.
    page_doc = pymupdf.open()
    page = page_doc.new_page()
    page.insert_text((300, 100), "2017", fontsize=9)
    page.insert_text((380, 100), "2016", fontsize=9)
    y = 100.0
    for label, v1, v2 in [
        ("Dividend yield1", "3.6%", "3.2%"),
        ("Expected volatility2", "15.5%", "16.0%"),
        ("Risk-free interest rate3", "2.2%", "1.5%"),
    ]:
        page.insert_text((50, y + 14), label, fontsize=9)
        page.insert_text((300, y + 22), v1, fontsize=9)
        page.insert_text((380, y + 22), v2, fontsize=9)
        y += 20
    tables = find_table_regions(page)
    assert len(tables) == 1
    assert tables[0].table.rows == [
        ["", "2017", "2016"],
        ["Dividend yield1", "3.6%", "3.2%"],
        ["Expected volatility2", "15.5%", "16.0%"],
        ["Risk-free interest rate3", "2.2%", "1.5%"],
    ]
    page_doc.close()


def test_sentence_with_numbers_is_not_a_table() -> None:
    # Synthetic page: justified prose full of numbers, then a two-row, one-column list (too small to be a table).
    page_doc = pymupdf.open()
    page = page_doc.new_page()
    prose = (
        "During 2022 we recorded pre-tax charges of $1.2 billion and $826 million, respectively, and 2.9% at "
        "December 31, 2021 compared to 5.2% at December 31, 2022, for a total of 1,234 units in 12 states."
    )
    page.insert_textbox(pymupdf.Rect(50, 50, 550, 200), prose, fontsize=10)
    page.insert_text((50, 250), "Revenue", fontsize=10)
    page.insert_text((400, 250), "1,234", fontsize=10)
    page.insert_text((50, 265), "Net income", fontsize=10)
    page.insert_text((400, 265), "567", fontsize=10)
    assert find_table_regions(page) == []
    page_doc.close()


def test_synthetic_table_merges_currency_and_parenthesis_fragments() -> None:
    page_doc = pymupdf.open()
    page = page_doc.new_page()
    y = 100.0
    page.insert_text((300, y), "2023", fontsize=9)
    page.insert_text((400, y), "2022", fontsize=9)
    rows = [
        ("Revenue", "$", "1,093", "$", "1,874"),
        ("Restructuring", "(", "7)", "", "34"),
        ("Margin", "", "12.5", "", "11.0"),
    ]
    for label, cur1, v1, cur2, v2 in rows:
        y += 12
        page.insert_text((50, y), label, fontsize=9)
        if cur1:
            page.insert_text((280, y), cur1, fontsize=9)
        page.insert_text((310, y), v1, fontsize=9)
        if cur2:
            page.insert_text((380, y), cur2, fontsize=9)
        page.insert_text((410, y), v2, fontsize=9)
    page.insert_text((432, y), "%", fontsize=9)
    tables = find_table_regions(page)
    assert len(tables) == 1
    table = tables[0].table
    assert table.rows[0] == ["", "2023", "2022"]
    assert table.rows[1:] == [
        ["Revenue", "1,093", "1,874"],
        ["Restructuring", "(7)", "34"],
        ["Margin", "12.5", "11.0%"],
    ]
    page_doc.close()


@pytest.mark.slow
def test_pymupdf_finder_maps_to_the_same_shape(doc: pymupdf.Document) -> None:
    tables = find_tables_pymupdf(doc[BALANCE_SHEET_PAGE - 1])
    assert len(tables) == 1
    table = tables[0].table
    assert tables[0].method == "pymupdf"
    assert table.rows[0] == ["", "July 29, 2023", "January 28, 2023", "July 30, 2022"]
    # Cell text comes from word boxes, so spacing is right even where Table.extract() glues words together.
    assert _row(table, "Cash and cash equivalents") == ["Cash and cash equivalents", "1,093", "1,874", "840"]
    assert table.title == "Condensed Consolidated Balance Sheets"
