"""Page furniture removal and page-break repair, on layout elements of any source format.

Running headers ("Table of Contents", "PART II Item 7", "Verizon 2022 Annual Report on Form 10-K 18") and page
numbers carry no content but poison chunks and, worse, look like Item headings. Paragraphs and tables broken by
a page break are joined so that a chunk or a table block is not cut in half by the printer's layout.
"""

import re
from collections import Counter

from haystack_fin.core.ingest.layout import Element, TableData
from haystack_fin.core.text import squash

# How many elements at the top and bottom of a page can be furniture.
_EDGE = 3
_MAX_FURNITURE_WORDS = 14
_MAX_EXHIBIT_LINE = 160
_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?(?:[-–—]\s*)?(?:[A-Z]{1,2}\s?-\s?)?\d{1,4}(?:\s*[-–—])?(?:\s+of\s+\d{1,4})?$|^[ivxlc]{1,6}$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
# An exhibit's heading, "Exhibit 31.1" / "EX-23" / "Exhibit 10.2(1)" (``items`` also reads it): one per exhibit at
# the top of its first page, so that the masked key repeats over the certifications of a 10-Q, while the exhibit
# number differs; only the same heading on several pages is a running header.
EXHIBIT_HEADING_LINE = re.compile(
    r"^\s*EX(?:HIBIT)?[\s\-]*(\d{1,3}(?:\.\d{1,3})?)(?:\(\w{1,3}\))?(?=\s|$)", re.IGNORECASE
)


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
    exhibit_lines = Counter(
        squash(elements[i].text)
        for idx in edges.values()
        for i in idx
        if len(elements[i].text) <= _MAX_EXHIBIT_LINE and EXHIBIT_HEADING_LINE.match(elements[i].text)
    )
    drop: set[int] = set()
    for idx in edges.values():
        for i in idx:
            text = elements[i].text
            if len(text.split()) > _MAX_FURNITURE_WORDS:
                continue
            if is_page_number(text):
                drop.add(i)
            elif counts[_furniture_key(text)] >= threshold:
                exhibit = squash(text) in exhibit_lines and len(text) <= _MAX_EXHIBIT_LINE
                if not exhibit or exhibit_lines[squash(text)] >= threshold:
                    drop.add(i)
    return [e for i, e in enumerate(elements) if i not in drop]


def _continues(prev: Element, nxt: Element, tail: str | None = None) -> bool:
    """True when ``nxt``, first on its page, continues the paragraph ``prev`` that ended the page before.

    ``tail`` is the last part's text when ``prev`` heads a run of joined parts: only the end of the paragraph
    decides, so the run's whole text need not be built to ask.
    """
    if prev.kind != "text" or nxt.kind != "text" or prev.is_heading or nxt.is_heading:
        return False
    tail, head = (prev.text if tail is None else tail).rstrip(), nxt.text.lstrip()
    if not tail or not head:
        return False
    # A sentence cut by the page break: no terminal punctuation before, lower-case (or continuing) start after.
    return tail[-1] not in '.:;!?”"' and (head[0].islower() or tail[-1] in ",-–(")


def _same_table(n_cols: int, title: str, nxt: TableData) -> bool:
    """True when ``nxt`` continues a table of ``n_cols`` columns captioned ``title``."""
    # A continuation has the same columns and no caption of its own (or the same one, or "(continued)"); a new
    # statement on the next page (income statement, then comprehensive income) has its own title.
    untitled = not nxt.title or squash(nxt.title) == squash(title) or "continued" in nxt.title.lower()
    return n_cols == nxt.n_cols and n_cols >= 2 and untitled


class _Run:
    """An element and the continuations joined to it so far; the joined Element is built once, when the run ends.

    Building it at every page break copies the text, pages and rows gathered so far: a paragraph or a table over
    N pages would cost O(N^2). The run keeps the parts and the running values the join decisions read.
    """

    def __init__(self, first: Element) -> None:
        self.first = first
        self.texts = [first.text]
        self.pages = list(first.pages)
        table = first.table if first.kind == "table" else None
        self.rows: list[list[str]] = list(table.rows) if table else []
        self.units = table.units if table else ""
        # A continuation joins only with the first part's column count and adds rows no wider, so the joined
        # table keeps the first part's columns (and title): computed once, not over the growing rows.
        self.n_cols = table.n_cols if table else 0
        self.ocr = first.ocr
        self.ocr_confidence = first.ocr_confidence
        self.length = len(first.text)  # of the joined text: its weight in the OCR confidence mean

    def add(self, el: Element, sep: str) -> None:
        """Join ``el`` after ``sep`` ("\n" between table parts, " " between paragraph parts)."""
        # merged_ocr(joined so far, el) with the same operations in the same order: the confidence is the float
        # that joining pairwise gave, not a re-associated (and possibly last-bit different) mean.
        if self.ocr or el.ocr:
            weighted = [(self.ocr_confidence, max(self.length, 1)), (el.ocr_confidence, max(len(el.text), 1))]
            parts = [(c, n) for c, n in weighted if c is not None]
            self.ocr_confidence = sum(c * n for c, n in parts) / sum(n for _, n in parts) if parts else None
            self.ocr = True
        else:
            self.ocr, self.ocr_confidence = False, None
        self.texts.append(el.text)
        self.pages.append(el.page)
        self.length += len(sep) + len(el.text)

    def element(self) -> Element:
        first = self.first
        if len(self.texts) == 1:
            return first
        if first.kind == "text":
            return Element(
                "text",
                " ".join(self.texts),
                first.page,
                pages=self.pages,
                bbox=first.bbox,
                font_size=first.font_size,
                bold=first.bold,
                ocr=self.ocr,
                ocr_confidence=self.ocr_confidence,
            )
        assert first.table is not None  # only tables join as tables
        table = TableData(self.rows, header_rows=first.table.header_rows, title=first.table.title, units=self.units)
        return Element(
            "table",
            "\n".join(self.texts),
            first.page,
            pages=self.pages,
            bbox=first.bbox,
            table=table,
            ocr=self.ocr,
            ocr_confidence=self.ocr_confidence,
        )


def join_page_breaks(elements: list[Element]) -> list[Element]:
    """Join a paragraph or a table that a page break cut in two.

    Only the last element of a page and the first of the next are considered. A continued table keeps the first
    part's header; a repeated header on the continuation is dropped. Linear in the elements' size: a run of parts
    over many pages is joined once, when it ends.
    """
    first_on_page: dict[int, int] = {}
    for i, el in enumerate(elements):
        if el.kind != "image":
            first_on_page.setdefault(el.page, i)
    out: list[Element] = []
    run: _Run | None = None
    for i, el in enumerate(elements):
        if run is not None and el.page == run.pages[-1] + 1 and first_on_page.get(el.page) == i:
            first = run.first
            if _continues(first, el, tail=run.texts[-1]):
                run.add(el, " ")
                continue
            if (
                first.kind == "table"
                and el.kind == "table"
                and first.table
                and el.table
                and _same_table(run.n_cols, first.table.title, el.table)
            ):
                # The continuation's own header (usually a repeat of the first part's) is dropped.
                run.rows.extend(el.table.rows[el.table.header_rows :])
                run.units = run.units or el.table.units
                run.add(el, "\n")
                continue
        if run is not None:
            out.append(run.element())
        run = _Run(el)
    if run is not None:
        out.append(run.element())
    return out
