"""Items of a 10-K that presents its content in its own order, read from its "Form 10-K Cross-Reference Index".

The SEC lets a 10-K follow an annual report's layout instead of the form's Item order when a cross-reference index
maps each Item to the pages that answer it ("The order and presentation of content in this Form 10-K differs from
the traditional SEC Form 10-K format ..."). Such a filing has no "Item 7." heading above its MD&A: the only "Item"
lines are the index's, at the back, so heading-based detection leaves most of the filing in the cover section. This
module reads the index instead:

* the index: the text from a "Form 10-K Cross-Reference Index" heading to the end of its page (and the next page,
  an index can run over), split at each "Item <number>" entry; every "Page 33" / "Pages 3-7, 9-10" of an entry is
  a printed page range of that Item ("Not applicable" and proxy references give none);
* printed pages become physical pages by the filing's own page numbers (the most common difference between a
  page's physical number and the number printed at its top or bottom);
* each page takes the Item with the narrowest referenced range that contains it, so MD&A's "Pages 17-41" inside
  Item 1's "Pages 2-36" is MD&A, and a note the index cites for Legal Proceedings is Item 3; consecutive pages of
  one Item form one section, and an Item can have several. Pages no range covers continue the section before them
  (the cover before the first range).
"""

import re
from collections import Counter
from dataclasses import dataclass

from haystack_fin.core.ingest.layout import Element

INDEX_HEADING = re.compile(r"cross[\s\-]*reference\s+index", re.IGNORECASE)
_ITEM_ENTRY = re.compile(r"\bItem\s+(\d{1,2}[A-C]?)\b\.?", re.IGNORECASE)
# One page or range, then more after a comma or "and": a separator between numbers keeps matching linear.
_PAGE_SPAN = r"\d{1,4}(?:\s*[-–]\s*\d{1,4})?"
_PAGES = re.compile(rf"\bPages?\s+({_PAGE_SPAN}(?:\s*(?:,|\band\b)\s*{_PAGE_SPAN})*)", re.IGNORECASE)
_RANGE = re.compile(r"(\d{1,4})(?:\s*[-–]\s*(\d{1,4}))?")
# The index ends with the signatures' page reference and footnotes: not part of the last Item's entry.
_INDEX_END = re.compile(r"\bSignatures?\b", re.IGNORECASE)
_TRAILING_NUMBER = re.compile(r"(?:^|\s)(\d{1,4})\s*$")
_MAX_NUMBER_LINE_WORDS = 12  # "McDonald's Corporation 2022 Annual Report 65": a footer, not a sentence
_EDGE_LINES = 2
_MIN_ITEMS = 4  # entries with pages before an index is believed


@dataclass(frozen=True)
class ItemPages:
    """One Item of the index: its number as printed ("7A") and its printed page ranges, inclusive."""

    number: str
    ranges: tuple[tuple[int, int], ...]


def parse_index(text: str) -> list[ItemPages]:
    """The Items of a cross-reference index's text with the printed page ranges each entry cites (entries without
    page references are left out)."""
    text = text[: m.start()] if (m := _INDEX_END.search(text)) else text
    entries = list(_ITEM_ENTRY.finditer(text))
    out: list[ItemPages] = []
    for k, entry in enumerate(entries):
        body = text[entry.end() : entries[k + 1].start() if k + 1 < len(entries) else len(text)]
        ranges: list[tuple[int, int]] = []
        for pages in _PAGES.finditer(body):
            for r in _RANGE.finditer(pages.group(1)):
                first = int(r.group(1))
                last = int(r.group(2)) if r.group(2) else first
                if first <= last:
                    ranges.append((first, last))
        if ranges:
            out.append(ItemPages(entry.group(1).upper(), tuple(ranges)))
    return out


def find_index(elements: list[Element]) -> list[ItemPages]:
    """The parsed cross-reference index of a filing, or [] when it has none (or one citing fewer than
    ``_MIN_ITEMS`` Items with pages: a mere mention of the index in the contents)."""
    for i, el in enumerate(elements):
        head = el.text if el.kind == "text" else (el.table.title if el.table is not None else "")
        if not INDEX_HEADING.search(head[:200]):
            continue
        pages = {el.page, el.page + 1}
        text = " ".join(e.text for e in elements[i:] if e.page in pages and e.kind != "image")
        found = parse_index(text)
        if len(found) >= _MIN_ITEMS:
            return found
    return []


def printed_page_offset(raw_elements: list[Element], min_pages: int = 3) -> int | None:
    """Physical minus printed page number, the most common over the pages whose last (else first) lines end with a
    number that can be a page's (before page furniture is removed; a year in "December 31, 2022" cannot); None when
    fewer than ``min_pages`` pages agree."""
    by_page: dict[int, list[Element]] = {}
    for el in raw_elements:
        if el.kind == "text":
            by_page.setdefault(el.page, []).append(el)
    last_page = max(by_page, default=0)
    votes: Counter[int] = Counter()
    for page, texts in by_page.items():
        edge = [*reversed(texts[-_EDGE_LINES:]), *texts[:_EDGE_LINES]]  # page numbers sit mostly at the bottom
        for el in {id(e): e for e in edge}.values():
            line = el.text.strip()
            m = _TRAILING_NUMBER.search(line) if len(line.split()) <= _MAX_NUMBER_LINE_WORDS else None
            if m and 0 < int(m.group(1)) <= last_page:
                votes[page - int(m.group(1))] += 1
                break
    if not votes:
        return None
    offset, n = votes.most_common(1)[0]
    return offset if n >= min_pages else None


def page_items(index: list[ItemPages], offset: int) -> dict[int, str]:
    """Physical page -> the Item number whose narrowest cited range holds it."""
    best: dict[int, tuple[int, str]] = {}
    for item in index:
        for first, last in item.ranges:
            width = last - first
            for printed in range(first, last + 1):
                page = printed + offset
                if page not in best or width < best[page][0]:
                    best[page] = (width, item.number)
    return {page: number for page, (_, number) in best.items()}


def item_runs(elements: list[Element], items_by_page: dict[int, str]) -> list[tuple[int, str | None]]:
    """Where each run of one Item starts: (element index, Item number), None for the pages before the first cited
    page; an uncited page continues the run before it."""
    runs: list[tuple[int, str | None]] = []
    current: str | None = None
    for i, el in enumerate(elements):
        number = items_by_page.get(el.page, current)
        if not runs or number != current:
            runs.append((i, number))
            current = number
    return runs
