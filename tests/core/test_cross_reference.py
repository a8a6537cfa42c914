"""A 10-K in the company's own order: Items read from its Form 10-K Cross-Reference Index."""

from pathlib import Path

from haystack_fin.core.ingest import cross_reference as xref
from haystack_fin.core.ingest.items import detect_item_sections
from haystack_fin.core.ingest.layout import Element
from tests.core.test_sec_items import _ten_k_with_toc, load_excerpt

EXCERPTS = Path(__file__).resolve().parents[1] / "fixtures" / "excerpts"


def _el(text: str, page: int) -> Element:
    return Element("text", text, page)


def test_parse_index_reads_each_items_printed_pages():
    text = (EXCERPTS / "intel-10k-2020-p121-cross-reference-index.txt").read_text()
    found = {item.number: item.ranges for item in xref.parse_index(text.replace("\n", " "))}
    assert found["1"] == ((2, 7), (18, 19), (2, 36), (51, 52), (68, 68), (84, 86), (69, 69))
    assert found["1A"] == ((53, 65),)
    assert found["7A"] == ((46, 47),)
    assert found["8"] == ((70, 112),)
    assert found["15"] == ((114, 118),)
    # "Not applicable" and proxy references cite no page; the signatures' "Page 120" belongs to no Item
    assert "1B" not in found and "11" not in found and "16" not in found


def test_printed_page_offset_from_page_footers():
    raw = [_el("Body text of the page that says nothing about numbers.", p) for p in range(3, 9)]
    raw += [_el(f"Acme Corp 2022 Annual Report {p - 2}", p) for p in range(3, 9)]
    assert xref.printed_page_offset(sorted(raw, key=lambda e: e.page)) == 2
    assert xref.printed_page_offset([_el("No numbers here at all.", 1)]) is None


def test_a_page_takes_the_item_of_the_narrowest_range_citing_it():
    index = [xref.ItemPages("1", ((2, 36),)), xref.ItemPages("7", ((17, 41),)), xref.ItemPages("8", ((70, 72),))]
    pages = xref.page_items(index, offset=2)
    assert pages[4] == "1" and pages[18] == "1" and pages[19] == "7" and pages[38] == "7" and pages[43] == "7"
    assert pages[72] == "8"
    assert 3 not in pages and 50 not in pages


def test_annual_report_style_10k_gets_its_items_from_the_cross_reference_index():
    form, elements = load_excerpt("mcdonalds-10k-2022-cross-reference-index.txt")
    headings_only = detect_item_sections(elements, form)
    assert headings_only[0].item == "cover" and headings_only[1].start_page == 65  # the index's own lines
    sections = detect_item_sections(elements, form, elements)
    assert [(s.item, s.start_page) for s in sections] == [
        ("cover", 1),
        ("1", 3),
        ("7", 8),
        ("7A", 22),
        ("1A", 27),
        ("8", 35),  # cited by MD&A (8-35) and Item 8 (35-57): the narrower range wins
        ("9A", 62),  # the uncited index and signature pages continue it
        ("EX-10", 67),
    ]
    assert sections[1].title == "Business" and sections[5].part == "II"


def test_a_10k_with_item_headings_ignores_the_index():
    elements = _ten_k_with_toc()
    index_page = [_el("Form 10-K Cross-Reference Index", 40)]
    for number, pages in [("1", "4-6"), ("1A", "7-11"), ("7", "20-29"), ("8", "30-39")]:
        index_page += [_el(f"Item {number}", 40), _el(f"Pages {pages}", 40)]
    with_index = [*elements, *index_page]
    assert [(s.item, s.start_page) for s in detect_item_sections(with_index, "10-K", with_index)] == [
        (s.item, s.start_page) for s in detect_item_sections(with_index, "10-K")
    ]


def test_printed_page_offset_is_not_misled_by_dates_at_page_tops():
    raw: list[Element] = []
    for p in range(3, 9):
        raw += [_el("Years ended December 31, 2022 2021 2020", p), _el("Net sales rose in every segment.", p)]
        raw += [_el(str(p - 2), p)]
    assert xref.printed_page_offset(raw) == 2
