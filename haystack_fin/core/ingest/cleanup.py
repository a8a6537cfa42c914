"""Page furniture removal and page-break repair, on layout elements of any source format.

Running headers ("Table of Contents", "PART II Item 7", "Verizon 2022 Annual Report on Form 10-K 18") and page
numbers carry no content but poison chunks and, worse, look like Item headings. Paragraphs and tables broken by
a page break are joined so that a chunk or a table block is not cut in half by the printer's layout.
"""

import re
from collections import Counter

from haystack_fin.core.ingest.layout import Element, TableData, merged_ocr
from haystack_fin.core.text import squash

# How many elements at the top and bottom of a page can be furniture.
_EDGE = 3
_MAX_FURNITURE_WORDS = 14
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?(?:[-–—]\s*)?(?:[A-Z]{1,2}\s?-\s?)?\d{1,4}(?:\s*[-–—])?(?:\s+of\s+\d{1,4})?$|^[ivxlc]{1,6}$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")


def _furniture_key(text: str) -> str:
    # Page numbers inside a running line ("Form 10-K 18") differ per page; digits are masked for counting.
    return squash(_DIGITS.sub("#", text))


def is_page_number(text: str) -> bool:
    """True for a lone page number: "3", "F-4", "Page 3 of 10", "- 3 -", "ii"."""
    return bool(_PAGE_NUMBER.match(text.strip()))


def _edge_indices(elements: list[Element]) -> dict[int, list[int]]:
    """Per page, the indices of its first and last few text elements."""
    by_page: dict[int, list[int]] = {}
    for i, el in enumerate(elements):
        by_page.setdefault(el.page, []).append(i)
    edges: dict[int, list[int]] = {}
    for page, idx in by_page.items():
        texts = [i for i in idx if elements[i].kind == "text"]
        edges[page] = sorted(set(texts[:_EDGE] + texts[-_EDGE:]))
    return edges


def remove_page_furniture(elements: list[Element], min_repeats: int = 3, min_page_share: float = 0.1) -> list[Element]:
    """Drop running headers/footers and page numbers.

    A short text element at the top or bottom of a page is furniture when it is a lone page number or when the
    same text (digits masked) sits at a page edge on at least ``min_repeats`` pages and ``min_page_share`` of all
    pages.
    """
    if not elements:
        return elements
    n_pages = len({e.page for e in elements})
    edges = _edge_indices(elements)
    counts: Counter[str] = Counter()
    for _page, idx in edges.items():
        keys = {_furniture_key(elements[i].text) for i in idx if len(elements[i].text.split()) <= _MAX_FURNITURE_WORDS}
        counts.update(k for k in keys if k)
    threshold = max(min_repeats, int(min_page_share * n_pages))
    drop: set[int] = set()
    for idx in edges.values():
        for i in idx:
            text = elements[i].text
            if len(text.split()) > _MAX_FURNITURE_WORDS:
                continue
            if is_page_number(text) or counts[_furniture_key(text)] >= threshold:
                drop.add(i)
    return [e for i, e in enumerate(elements) if i not in drop]


def _continues(prev: Element, nxt: Element) -> bool:
    if prev.kind != "text" or nxt.kind != "text" or prev.is_heading or nxt.is_heading:
        return False
    tail, head = prev.text.rstrip(), nxt.text.lstrip()
    if not tail or not head:
        return False
    # A sentence cut by the page break: no terminal punctuation before, lower-case (or continuing) start after.
    return tail[-1] not in '.:;!?”"' and (head[0].islower() or tail[-1] in ",-–(")


def _same_table(prev: TableData, nxt: TableData) -> bool:
    # A continuation has the same columns and no caption of its own (or the same one, or "(continued)"); a new
    # statement on the next page (income statement, then comprehensive income) has its own title.
    untitled = not nxt.title or squash(nxt.title) == squash(prev.title) or "continued" in nxt.title.lower()
    return prev.n_cols == nxt.n_cols and prev.n_cols >= 2 and untitled


def join_page_breaks(elements: list[Element]) -> list[Element]:
    """Join a paragraph or a table that a page break cut in two.

    Only the last element of a page and the first of the next are considered. A continued table keeps the first
    part's header; a repeated header on the continuation is dropped.
    """
    first_on_page: dict[int, int] = {}
    for i, el in enumerate(elements):
        if el.kind != "image":
            first_on_page.setdefault(el.page, i)
    out: list[Element] = []
    for i, el in enumerate(elements):
        prev = out[-1] if out else None
        if prev is not None and el.page == prev.pages[-1] + 1 and first_on_page.get(el.page) == i:
            if _continues(prev, el):
                out[-1] = Element(
                    "text",
                    f"{prev.text} {el.text}",
                    prev.page,
                    pages=[*prev.pages, el.page],
                    bbox=prev.bbox,
                    font_size=prev.font_size,
                    bold=prev.bold,
                    **merged_ocr(prev, el),
                )
                continue
            if (
                prev.kind == "table"
                and el.kind == "table"
                and prev.table
                and el.table
                and _same_table(prev.table, el.table)
            ):
                # The continuation's own header (usually a repeat of the first part's) is dropped.
                rows = el.table.rows[el.table.header_rows :]
                table = TableData(
                    rows=[*prev.table.rows, *rows],
                    header_rows=prev.table.header_rows,
                    title=prev.table.title,
                    units=prev.table.units or el.table.units,
                )
                out[-1] = Element(
                    "table",
                    f"{prev.text}\n{el.text}",
                    prev.page,
                    pages=[*prev.pages, el.page],
                    bbox=prev.bbox,
                    table=table,
                    **merged_ocr(prev, el),
                )
                continue
        out.append(el)
    return out
