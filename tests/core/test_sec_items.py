from haystack_fin.core.layout import Element
from haystack_fin.core.sec_items import detect_heading_sections, detect_item_sections, part_of


def _el(text: str, page: int, heading: bool = False, size: float = 10.0) -> Element:
    return Element("text", text, page, is_heading=heading, bold=heading, font_size=size)


BODY = "We sell consumer electronics through stores and online channels in the United States and Canada every day."


def _ten_k_with_toc() -> list[Element]:
    toc = [_el("TABLE OF CONTENTS", 2, True)]
    for number, title, page in [
        ("1.", "Business", 4),
        ("1A.", "Risk Factors", 7),
        ("2.", "Properties", 12),
        ("7.", "Management's Discussion and Analysis of Financial Condition", 20),
        ("8.", "Financial Statements and Supplementary Data", 30),
    ]:
        toc += [_el(f"Item {number}", 2), _el(title, 2), _el(str(page), 2)]
    body = [
        _el("Item 1. Busines s.", 4, True),  # extraction glitch inside the title
        _el(BODY, 4),
        _el("Our strategy is described in Item 7, Management's Discussion and Analysis, of this report.", 5),
        _el("Item 1A. Risk Factors", 7, True),
        _el(BODY, 7),
        _el("Item 2. Propertie s", 12, True),
        _el(BODY, 12),
        _el("Item 7.", 20, True),
        _el("Management's Discussion and Analysis of Financial Condition and Results of Operations", 20, True),
        _el(BODY, 20),
        _el("Item 8 of this Annual Report contains the statements referred to above in more detail.", 25),
        _el("ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA", 30, True),
        _el(BODY, 31),
    ]
    return [_el("FORM 10-K", 1, True), _el("BEST BUY CO., INC.", 1), *toc, *body]


def test_items_found_in_order_with_pages_and_toc_rejected():
    elements = _ten_k_with_toc()
    sections = detect_item_sections(elements, "10-K")
    assert [(s.item, s.start_page, s.end_page) for s in sections] == [
        ("cover", 1, 2),
        ("1", 4, 5),
        ("1A", 7, 7),
        ("2", 12, 12),
        ("7", 20, 25),
        ("8", 30, 31),
    ]
    assert all(elements[s.start].page != 2 for s in sections[1:])  # nothing from the TOC page


def test_single_line_toc_entries_with_page_numbers_are_rejected():
    elements = [
        _el("Item 1. Business 4", 2),
        _el("Item 1A. Risk Factors 9", 3),
        _el("Item 1. Business", 4, True),
        _el(BODY, 4),
        _el("Item 1A. Risk Factors", 9, True),
        _el(BODY, 9),
    ]
    sections = detect_item_sections(elements, "10-K")
    assert [(s.item, s.start_page) for s in sections] == [("cover", 2), ("1", 4), ("1A", 9)]


def test_ten_q_parts_disambiguate_item_numbers():
    elements = [
        _el("PART I — FINANCIAL INFORMATION", 3, True),
        _el("Item 1. Financial Statements", 3, True),
        _el(BODY, 3),
        _el("Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations", 14, True),
        _el(BODY, 14),
        _el("PART II — OTHER INFORMATION", 24, True),
        _el("Item 1. Legal Proceedings", 24, True),
        _el(BODY, 24),
        _el("Item 1A. Risk Factors", 25, True),
        _el(BODY, 25),
        _el("Item 6. Exhibits", 26, True),
        _el(BODY, 26),
    ]
    sections = detect_item_sections(elements, "10-Q")
    assert [s.item for s in sections] == ["I-1", "I-2", "II-1", "II-1A", "II-6"]
    # a Part heading right before an Item belongs to that Item, not to the previous one
    assert sections[0].start == 0
    assert elements[sections[2].start].text.startswith("PART II")


def test_eight_k_items_and_exhibit_sections():
    elements = [
        _el("FORM 8-K", 1, True),
        _el("Item 2.02 Results of Operations and Financial Condition.", 2, True),
        _el(BODY, 2),
        _el("Item 9.01 Financial Statements and Exhibits.", 2, True),
        _el("(d) Exhibits", 2),
        _el("Exhibit 99.1", 3, True),
        _el("PepsiCo Reports First Quarter 2023 Results", 3, True),
        _el(BODY, 3),
    ]
    sections = detect_item_sections(elements, "8-K")
    assert [(s.item, s.start_page) for s in sections] == [("cover", 1), ("2.02", 2), ("9.01", 2), ("EX-99.1", 3)]


def test_no_items_for_forms_without_catalog():
    assert detect_item_sections([_el("Item 1. Business", 1, True)], "earnings_release") == []


def test_heading_sections_for_releases():
    elements = [
        _el("MGM Resorts Reports Fourth Quarter Results", 1, True, size=14),
        _el(BODY, 1),
        _el("Consolidated results", 2, True, size=12),
        _el(BODY, 2),
        _el("Las Vegas Strip Resorts", 3, True, size=12),
        _el(BODY, 3),
        _el("Regional operations", 4, True, size=12),
        _el(BODY, 4),
    ]
    sections = detect_heading_sections(elements)
    assert [s.item for s in sections] == ["S1", "S2", "S3", "S4"]
    assert sections[2].title == "Las Vegas Strip Resorts"
    assert (sections[0].start_page, sections[-1].end_page) == (1, 4)


def test_part_of():
    assert part_of("PART II — OTHER INFORMATION") == "II"
    assert part_of("Part IV") == "IV"
    assert part_of("Particular risks") is None
