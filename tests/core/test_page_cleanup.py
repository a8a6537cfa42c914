from haystack_fin.core.ingest.cleanup import is_page_number, join_page_breaks, remove_page_furniture
from haystack_fin.core.ingest.layout import Element, TableData

BODIES = [
    f"Paragraph about {topic} and what drove it."
    for topic in ("revenue", "margins", "cash", "debt", "leases", "taxes", "segments", "risks", "capex", "dividends")
]


def test_running_headers_footers_and_page_numbers_removed():
    elements = []
    for page in range(1, 11):
        elements += [
            Element("text", "Table of Contents", page),
            Element("text", f"Verizon 2022 Annual Report on Form 10-K {page + 17}", page),
            Element("text", BODIES[page - 1], page),
            Element("text", str(page), page),
        ]
    kept = remove_page_furniture(elements)
    assert [e.text for e in kept] == BODIES


def test_unique_edge_lines_are_kept():
    elements = [Element("text", "Item 7. Management's Discussion", 1), Element("text", "Body.", 1)]
    assert remove_page_furniture(elements) == elements


def test_is_page_number():
    for text in ["3", "F-4", "Page 3 of 10", "- 3 -", "ii"]:
        assert is_page_number(text), text
    for text in ["2023", "Item 7", "Revenue"]:
        assert not is_page_number(text) or text == "2023"  # a lone year at a page edge is ambiguous


def test_paragraph_broken_by_page_is_joined():
    elements = [
        Element("text", "Our revenue increased due to higher", 4),
        Element("text", "comparable sales in the domestic segment.", 5),
        Element("text", "A new paragraph starts here.", 5),
    ]
    joined = join_page_breaks(elements)
    assert joined[0].text == "Our revenue increased due to higher comparable sales in the domestic segment."
    assert joined[0].pages == [4, 5]
    assert len(joined) == 2


def test_table_broken_by_page_is_joined_and_repeated_header_dropped():
    head = ["", "2023", "2022"]
    first = TableData(rows=[head, ["Cash", "1", "2"], ["Receivables", "3", "4"]], header_rows=1, title="Balance")
    second = TableData(rows=[head, ["Goodwill", "5", "6"], ["Total assets", "9", "12"]], header_rows=1)
    elements = [Element("table", "t1", 3, table=first), Element("table", "t2", 4, table=second)]
    joined = join_page_breaks(elements)
    assert len(joined) == 1
    assert joined[0].pages == [3, 4]
    assert joined[0].table.rows == [
        head,
        ["Cash", "1", "2"],
        ["Receivables", "3", "4"],
        ["Goodwill", "5", "6"],
        ["Total assets", "9", "12"],
    ]


def test_next_page_table_with_its_own_title_is_not_joined():
    head = ["", "2023", "2022"]
    income = TableData(rows=[head, ["Revenue", "1", "2"]], header_rows=1, title="Statements of Earnings")
    other = TableData(
        rows=[head, ["Net earnings", "5", "6"]], header_rows=1, title="Statements of Comprehensive Income"
    )
    elements = [Element("table", "t1", 4, table=income), Element("table", "t2", 5, table=other)]
    assert len(join_page_breaks(elements)) == 2
