import random
import re
import time
from pathlib import Path

from haystack_fin.core.ingest import items as sec_items
from haystack_fin.core.ingest.items import detect_heading_sections, detect_item_sections, part_of
from haystack_fin.core.ingest.layout import Element, TableData


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


# --- patterns of real filings (tests/fixtures/excerpts/: each file says whether it is a real excerpt or a
# reconstructed layout) ---------------------------------------------------------------------------------------

EXCERPTS = Path(__file__).resolve().parents[1] / "fixtures" / "excerpts"


def load_excerpt(name: str) -> tuple[str, list[Element]]:
    """(form, elements) of an excerpt: "=== page N" starts a page, "## " a bold heading, "[table] T" a table
    captioned T, "# form: F" names the form, other "# " lines are comments, every other line is one text element."""
    form, page, elements = "", 0, []
    for raw in (EXCERPTS / name).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("=== page "):
            page = int(line.split()[-1])
        elif line.startswith("## "):
            elements.append(_el(line[3:], page, True))
        elif line.startswith("# form:"):
            form = line.split(":", 1)[1].strip()
        elif line.startswith("#"):
            continue
        elif line.startswith("[table] "):
            title = line[len("[table] ") :]
            table = TableData(rows=[["", "2012", "2011"], ["Total", "1,234", "1,100"]], header_rows=1, title=title)
            elements.append(Element("table", f"{title}\nTotal | 1,234 | 1,100", page, table=table))
        else:
            elements.append(_el(line, page))
    assert form, f"{name} names no form"
    return form, elements


def _starts(name: str) -> list[tuple[str, int]]:
    form, elements = load_excerpt(name)
    return [(s.item, s.start_page) for s in detect_item_sections(elements, form)]


def test_part_divider_pages_listing_items_without_page_numbers_are_not_sections():
    # Before: the Part I divider's lines became Items 1-2 and "Item 2" swallowed the statements and MD&A.
    assert _starts("10q-part-divider-pages.txt") == [
        ("cover", 1),
        ("I-1", 3),  # no "Item 1" heading comes back: the divider's line is where the statements begin
        ("I-2", 14),
        ("I-3", 20),
        ("I-4", 20),
        ("II-1", 22),
        ("II-1A", 22),
        ("II-2", 22),  # short real sections, four to a page, kept
        ("II-3", 22),
        ("II-4", 22),
        ("II-5", 22),
        ("II-6", 23),
    ]


def test_contents_page_without_page_numbers_is_not_sections():
    assert _starts("10k-contents-without-page-numbers.txt") == [
        ("cover", 1),
        ("1", 3),
        ("1A", 9),
        ("1B", 18),
        ("2", 18),
        ("3", 18),
        ("4", 18),
        ("5", 19),
        ("7", 21),
        ("8", 35),
        ("10", 70),
        ("11", 70),
    ]


def test_short_real_sections_several_to_a_page_are_kept():
    # Real excerpt: Netflix 2015 10-K pages 33-39, Items 8/9/9A on one page, 10-14 on another, F-pages after 15.
    assert _starts("netflix-10k-2015-p33-39.txt") == [
        ("8", 33),
        ("9", 33),
        ("9A", 33),
        ("9B", 35),
        ("10", 36),
        ("11", 36),
        ("12", 36),
        ("13", 36),
        ("14", 36),
        ("15", 37),
        ("8", 38),
    ]


def test_10q_heading_variants_condensed_statements_4t_and_reserved():
    form, elements = load_excerpt("10q-2010-heading-variants.txt")
    sections = detect_item_sections(elements, form)
    assert [(s.item, s.start_page) for s in sections] == [
        ("cover", 1),
        ("I-1", 3),  # "Item 1. Condensed Consolidated Financial Statements (Unaudited)"
        ("I-2", 12),
        ("I-3", 17),
        ("I-4", 17),  # "Item 4T. Controls and Procedures"
        ("II-1", 18),
        ("II-1A", 18),
        ("II-2", 18),
        ("II-3", 18),
        ("II-4", 18),  # "Item 4. (Removed and Reserved)": Part II's Item 4, not Part I's
        ("II-5", 18),
        ("II-6", 18),
    ]
    assert elements[next(s for s in sections if s.item == "II-4").start].text == "Item 4. (Removed and Reserved)"


def test_10k_heading_variants_reserved_and_9a_t():
    assert _starts("10k-2009-smaller-reporting-company.txt") == [
        ("cover", 1),
        ("1", 3),
        ("1A", 8),
        ("1B", 8),
        ("2", 8),
        ("3", 8),
        ("4", 8),  # "ITEM 4. RESERVED"
        ("5", 9),
        ("6", 9),
        ("7", 9),
        ("8", 14),
        ("9", 30),
        ("9A", 30),  # "ITEM 9A(T). CONTROLS AND PROCEDURES"
        ("9B", 31),
    ]


def test_pre_2003_10k_item_14_exhibits_and_f_pages_after_it():
    form, elements = load_excerpt("10k-2001-item14-exhibits.txt")
    sections = detect_item_sections(elements, form)
    assert [(s.item, s.start_page) for s in sections][-4:] == [("12", 16), ("13", 16), ("14", 17), ("8", 20)]
    item14 = next(s for s in sections if s.item == "14")
    assert (item14.title, item14.part) == ("Exhibits, Financial Statement Schedules and Reports on Form 8-K", "IV")
    # the F-pages start at the auditors' report, not at Item 14(a)'s list of statements on page 17
    assert elements[sections[-1].start].text == "INDEPENDENT AUDITORS' REPORT"


def test_8k_items_before_august_2004():
    assert _starts("8k-2003-items-before-2004.txt") == [
        ("cover", 1),
        ("5", 2),  # Other Events
        ("7", 2),  # Financial Statements and Exhibits
        ("9", 2),  # Regulation FD Disclosure
        ("12", 2),  # Results of Operations and Financial Condition
        ("EX-99.1", 3),
    ]


def test_8k_item_9_01_headed_by_its_paragraph():
    assert _starts("8k-2019-item-9-01d.txt") == [("cover", 1), ("2.02", 2), ("9.01", 2), ("EX-99.1", 3)]


def test_f_pages_start_at_the_statements_not_in_item_15s_list_of_them():
    form, elements = load_excerpt("10k-2012-item15-statement-list.txt")
    sections = detect_item_sections(elements, form)
    assert [(s.item, s.start_page) for s in sections][-3:] == [("10", 36), ("15", 37), ("8", 40)]
    # an index heading that names the schedule too is still where the statements start
    assert elements[sections[-1].start].text.startswith("INDEX TO CONSOLIDATED FINANCIAL STATEMENTS AND")


def test_auditors_report_on_the_schedules_is_not_item_8():
    # Real text: IBM 2024 10-K (../shared/data/edgar-html), Item 15(a)'s list on page 19 and page 28's heading.
    elements = [
        _el("ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA", 14, True),
        _el("Refer to the 2024 Annual Report: the financial statements are incorporated herein by reference.", 14),
        _el("Item 9. Changes in and Disagreements with Accountants on Accounting and Financial Disclosure:", 14, True),
        _el("None.", 14),
        _el("PART IV", 19, True),
        _el("Item 15. Exhibits, Financial Statement Schedules:", 19, True),
        _el("(a) The following documents are filed as part of this report:", 19),
        _el("Report of Independent Registered Public Accounting Firm ‒ PCAOB Firm ID 238 (pages 44 through 45).", 19),
        _el("Consolidated Balance Sheet at December 31, 2024 and 2023 (page 48).", 19),
        _el("REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM", 28, True),
        _el("ON FINANCIAL STATEMENT SCHEDULE", 28, True),
        _el("To the Board of Directors and Stockholders of International Business Machines Corporation:", 28),
    ]
    assert [(s.item, s.start_page) for s in detect_item_sections(elements, "10-K")] == [
        ("8", 14),
        ("9", 14),
        ("15", 19),
    ]


def test_item_chain_is_linear_in_the_number_of_candidates():
    # 20,000 "Item" headings (a 1,000-page filing of short sections): comparing every pair of candidates took about
    # 40 s for 8,000 of them, and four times that for each doubling.
    elements = []
    titles = [("1", "Business"), ("1A", "Risk Factors"), ("2", "Properties"), ("7", "Management's Discussion")]
    for k in range(20_000):
        number, title = titles[k % len(titles)]
        elements += [_el(f"Item {number}. {title}", k // 30 + 1, True), _el(BODY, k // 30 + 1)]
    candidates = sec_items._candidates(elements, sec_items.ITEMS_10K)
    started = time.perf_counter()
    chain = sec_items._best_chain(candidates, sec_items.ITEMS_10K)
    assert time.perf_counter() - started < 5
    assert [c.spec.code for c in chain] == ["1", "1A", "2", "7"]
    assert chain[0].index == 0  # ties go to the earliest candidate, as before


# Patterns rewritten for linear time, and the forms they replace: same matches on random strings built from the
# pieces they parse, and a fraction of a second on the inputs that took the old forms minutes.
OLD_PART_HEADING = re.compile(r"^\s*PART\s+(IV|I{1,3})\b(?:\s*[.:\-–—]?\s*)(.{0,60})$", re.IGNORECASE)


def _random_part_lines(n: int) -> list[str]:
    rng = random.Random(11)
    pieces = ["PART", "Part", " ", "  ", "\n", "I", "II", "III", "IV", "V", ".", ":", "—", "-", "x" * 30, " OTHER"]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 9))) for _ in range(n)]


def test_part_heading_pattern_matches_as_before_and_in_linear_time():
    for line in _random_part_lines(20_000):
        old, new = OLD_PART_HEADING.match(line), sec_items._PART_HEADING.match(line)
        assert (old and (old.span(), old.groups())) == (new and (new.span(), new.groups())), repr(line)
    started = time.perf_counter()
    assert part_of("PART I" + " " * 50_000 + "x" * 70) is None  # the old form: about 45 s per 10,000 spaces
    assert time.perf_counter() - started < 1


def test_item_start_accepts_the_old_forms_unchanged():
    old = re.compile(
        r"^\s*(?:PART\s+(?P<part>IV|I{1,3})\b[\s,.:;\-–—]*)?"
        r"I\s?T\s?E\s?M\s*(?P<num>\d{1,2}(?:\.\d{2})?)\s*(?P<letter>[A-C](?![a-z]))?"
        r"\s*(?:[.:;\-–—]+\s*|\s+|$)(?P<rest>.*)$",
        re.IGNORECASE | re.DOTALL,
    )
    rng = random.Random(5)
    for _ in range(20_000):
        line = "".join(
            rng.choice(options)
            for options in (
                ["", " ", "PART II, ", "Part I "],
                ["Item", "ITEM", "I tem"],
                ["", " ", "  "],
                ["1", "7", "15", "2.02", "9.01"],
                ["", "A", "B", "a"],
                ["", " ", "\n"],
                ["", ".", ":", " -", "—"],
                ["", " ", "Business", "Controls and Procedures", "x"],
            )
        )
        a, b = old.match(line), sec_items._ITEM_START.match(line)
        assert (a and a.groupdict()) == (b and b.groupdict()), repr(line)


def test_exhibits_filed_after_the_signatures_are_their_own_sections():
    # Real excerpt: Best Buy 2023 10-K pages 64-75; the exhibit index of Item 15 (page 66) starts nothing.
    form, elements = load_excerpt("bestbuy-10k-2023-p64-75-filed-exhibits.txt")
    sections = detect_item_sections(elements, form)
    assert [(s.item, s.start_page, s.end_page) for s in sections][-8:] == [
        ("15", 65, 67),
        ("16", 67, 68),  # the signatures stay with the last Item
        ("EX-21.1", 69, 70),
        ("EX-23.1", 71, 71),
        ("EX-31.1", 72, 72),
        ("EX-31.2", 73, 73),
        ("EX-32.1", 74, 74),
        ("EX-32.2", 75, 75),
    ]
    assert sections[-1].title == "Exhibit 32.2"


def test_filed_exhibits_need_the_signatures_and_a_heading_at_the_top_of_a_page():
    body = [
        _el("Item 15. Exhibits and Financial Statement Schedules", 10, True),
        _el("Exhibit 10.1 Credit Agreement dated as of May 1, 2023", 11),  # the exhibit index, before signatures
        _el("Item 16. Form 10-K Summary", 12, True),
        _el("None.", 12),
        _el("SIGNATURES", 13, True),
        _el(BODY, 13),
        _el("Exhibit 21 as filed herewith lists the subsidiaries.", 13),  # below the top of the page
        _el("Exhibit 21", 14, True),
        _el("SUBSIDIARIES OF THE REGISTRANT", 14, True),
        _el("Exhibit 10.2(1)", 15, True),
        _el(BODY, 15),
    ]
    elements = [*_ten_k_with_toc(), *body]
    got = [(s.item, s.start_page) for s in detect_item_sections(elements, "10-K")]
    assert got[-4:] == [("15", 10), ("16", 12), ("EX-21", 14), ("EX-10.2", 15)]
    unsigned = [el for el in elements if el.text != "SIGNATURES"]
    assert [s.item for s in detect_item_sections(unsigned, "10-K")][-1] == "16"
