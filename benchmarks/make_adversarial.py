"""Generate an adversarial corpus of filings that stress the parser's time and structure handling.

Every case is something a real filing can contain (one real 10-K's dot leaders hung the indexer through an
exponential regex): contents lines with 300-dot leaders and no page number, a 1,000-page 10-K, a 3,000-row table,
a 100,000-character line (and a 2 MB line in HTML, where nothing clips it), rotated pages, two columns, 500 tiny
images, all Items on one page, an empty page between Items, image-only (scanned) pages. The output is
deterministic (seeded text, no timestamps) and takes a few seconds; ``manifest.json`` in the output folder says
what each file tests and which one-line errors are acceptable for it (``benchmarks/sweep_corpus.py`` reads it).

    python benchmarks/make_adversarial.py OUT_DIR [--only dot_leaders,items_one_page,...] [--list]

Generated files are not committed: the sweep generates them into a temporary folder (``--adversarial``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import textwrap
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

WIDTH, HEIGHT = 612.0, 792.0  # US Letter, as EDGAR renders filings
MARGIN = 72.0
BODY_SIZE = 10.0
LINE_H = 12.5
COMPANY = "Adversarial Test Corp."
FONT = pymupdf.Font("helv")
BOLD = pymupdf.Font("hebo")

# Item codes and titles of a 10-K, as the filings print them.
ITEMS_10K: tuple[tuple[str, str, str], ...] = (
    ("I", "1", "Business"),
    ("I", "1A", "Risk Factors"),
    ("I", "1B", "Unresolved Staff Comments"),
    ("I", "1C", "Cybersecurity"),
    ("I", "2", "Properties"),
    ("I", "3", "Legal Proceedings"),
    ("I", "4", "Mine Safety Disclosures"),
    (
        "II",
        "5",
        "Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases of Equity Securities",
    ),
    ("II", "6", "[Reserved]"),
    ("II", "7", "Management's Discussion and Analysis of Financial Condition and Results of Operations"),
    ("II", "7A", "Quantitative and Qualitative Disclosures About Market Risk"),
    ("II", "8", "Financial Statements and Supplementary Data"),
    ("II", "9", "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure"),
    ("II", "9A", "Controls and Procedures"),
    ("II", "9B", "Other Information"),
    ("III", "10", "Directors, Executive Officers and Corporate Governance"),
    ("III", "11", "Executive Compensation"),
    ("III", "12", "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder Matters"),
    ("III", "13", "Certain Relationships and Related Transactions, and Director Independence"),
    ("III", "14", "Principal Accountant Fees and Services"),
    ("IV", "15", "Exhibits and Financial Statement Schedules"),
    ("IV", "16", "Form 10-K Summary"),
)
ALL_ITEM_CODES = [code for _, code, _ in ITEMS_10K]

COVER_LINES = (
    "UNITED STATES",
    "SECURITIES AND EXCHANGE COMMISSION",
    "Washington, D.C. 20549",
    "FORM 10-K",
    "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
    "For the fiscal year ended December 31, 2023",
    "Commission File Number 001-99999",
    COMPANY.upper(),
    "(Exact name of registrant as specified in its charter)",
    "Delaware 99-9999999",
    "Securities registered pursuant to Section 12(b) of the Act:",
    "Common Stock, $0.01 par value ADVT New York Stock Exchange",
)

_VOCABULARY = (
    "revenue net sales operating income segment margin cash flows capital expenditures liquidity debt interest "
    "expense tax rate goodwill impairment inventory receivables customers products services demand pricing "
    "competition supply chain regulation risk foreign currency exchange fiscal year quarter increase decrease "
    "compared primarily due to higher lower costs results operations financial condition management believes "
    "estimates assumptions the company our we its of in and for with on by from as a an to which during period "
    "shareholders dividends repurchases share-based compensation acquisitions pension obligations lease"
)
_WORDS = _VOCABULARY.split()


@dataclass
class Case:
    """One generated file: what it tests, and what a correct sweep must see."""

    file: str
    description: str
    # Substrings of acceptable one-line errors (e.g. an image-only filing while OCR is not installed).
    may_fail_with: list[str] = field(default_factory=list)
    # Item codes the filing really has (headings outside any contents page), for the sweep to compare.
    items: list[str] = field(default_factory=list)
    # Those of ``items`` whose heading is on an image-only page: found only with OCR.
    ocr_items: list[str] = field(default_factory=list)


# --- text helpers ---------------------------------------------------------------------------------------------


def prose(rng: random.Random, n_words: int) -> str:
    """Deterministic filing-like prose: sentences of 8-22 words from a financial vocabulary."""
    out: list[str] = []
    while len(out) < n_words:
        sentence = [rng.choice(_WORDS) for _ in range(rng.randint(8, 22))]
        sentence[0] = sentence[0].capitalize()
        sentence[-1] += "."
        out.extend(sentence)
    return " ".join(out[:n_words]).rstrip(".") + "."


def _money(rng: random.Random) -> str:
    value = rng.randint(-9_999, 99_999)
    return f"({abs(value):,})" if value < 0 else f"{value:,}"


class _DocFonts:
    """Per-document xrefs of the two base-14 fonts the raw content streams use (/F1 Helvetica, /F2 bold)."""

    # Keyed by id() but holding the document: a document closed without _save stays registered, and were only its
    # id kept, a later document given the same address would be taken for it and get no fonts of its own (the
    # generator's output then depended on memory addresses).
    _by_doc: dict[int, tuple[pymupdf.Document, tuple[int, int]]] = {}  # noqa: RUF012 - a registry, cleared by _save

    @classmethod
    def get(cls, doc: pymupdf.Document) -> tuple[int, int]:
        entry = cls._by_doc.get(id(doc))
        if entry is None or entry[0] is not doc:
            xrefs = []
            for base in ("Helvetica", "Helvetica-Bold"):
                xref = doc.get_new_xref()
                doc.update_object(xref, f"<</Type/Font/Subtype/Type1/BaseFont/{base}/Encoding/WinAnsiEncoding>>")
                xrefs.append(xref)
            entry = (doc, (xrefs[0], xrefs[1]))
            cls._by_doc[id(doc)] = entry
        return entry[1]

    @classmethod
    def forget(cls, doc: pymupdf.Document) -> None:
        cls._by_doc.pop(id(doc), None)


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")  # WinAnsiEncoding, which has the ellipsis and curly quotes
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


class PageWriter:
    """Lays text (and raw images) out top to bottom on one page.

    Unrotated pages get one raw content stream written at ``close()``: PyMuPDF's ``TextWriter.append`` and
    ``Page.insert_image`` cost time proportional to what the page already holds, so a 3,000-row page or 500
    images took minutes. Rotated pages go through ``TextWriter``, which places text upright in the rotated view.
    """

    def __init__(self, page: pymupdf.Page, top: float = MARGIN, left: float = MARGIN, right: float | None = None):
        self.page = page
        self.y = top
        self.left = left
        self.right = right if right is not None else page.rect.width - MARGIN
        self._runs: list[tuple[float, float, str, bool, float]] = []  # x, baseline y (top-down), text, bold, size
        self._images: list[tuple[pymupdf.Rect, int, int, bytes]] = []  # rect, width, height, RGB samples

    @property
    def full(self) -> bool:
        return self.y > self.page.rect.height - MARGIN

    def text_at(self, x: float, y: float, text: str, size: float = BODY_SIZE, bold: bool = False) -> None:
        self._runs.append((x, y, text, bold, size))

    def line(self, text: str, size: float = BODY_SIZE, bold: bool = False, x: float | None = None) -> None:
        self.y += size * 1.25
        self.text_at(self.left if x is None else x, self.y, text, size, bold)

    def heading(self, text: str, size: float = 11.0) -> None:
        self.y += 6
        for ln in textwrap.wrap(text, width=int((self.right - self.left) / (size * 0.55))):
            self.line(ln, size=size, bold=True)
        self.y += 4

    def paragraph(self, text: str, size: float = BODY_SIZE) -> None:
        width = max(10, int((self.right - self.left) / (size * 0.5)))
        for ln in textwrap.wrap(text, width=width):
            if self.full:
                return
            self.line(ln, size=size)
        self.y += 6

    def table_rows(self, rows: Iterable[tuple[str, list[str]]], columns: list[float], size: float = 9.0) -> None:
        """Rows of a label and right-aligned values ending at the x positions in ``columns`` (column gaps, no
        ruling lines: how EDGAR renders financial tables)."""
        for label, values in rows:
            self.y += size * 1.3
            self.text_at(self.left, self.y, label, size)
            for right_x, value in zip(columns, values, strict=False):
                self.text_at(right_x - FONT.text_length(value, fontsize=size), self.y, value, size)

    def image(self, rect: pymupdf.Rect, rgb: tuple[int, int, int], side: int) -> None:
        """A ``side`` x ``side`` pixel image of one colour with a lighter diagonal, drawn into ``rect``."""
        light = tuple(min(255, c + 90) for c in rgb)
        samples = b"".join(bytes(light if x == y else rgb) for y in range(side) for x in range(side))
        self._images.append((rect, side, side, samples))

    def footer(self, page_no: int) -> None:
        h = self.page.rect.height
        self.text_at(self.page.rect.width / 2 - 6, h - 36, str(page_no), 9)
        self.text_at(MARGIN, 40, f"{COMPANY} | 2023 Form 10-K", 8)

    def close(self) -> None:
        if self.page.rotation:
            tw = pymupdf.TextWriter(self.page.rect)
            for x, y, text, bold, size in self._runs:
                tw.append((x, y), text, font=BOLD if bold else FONT, fontsize=size)
            tw.write_text(self.page)
            return
        doc, h = self.page.parent, self.page.rect.height
        regular, bold = _DocFonts.get(doc)
        ops = [b"BT"]
        for x, y, text, is_bold, size in self._runs:
            ops.append(
                b"/F%d %.2f Tf 1 0 0 1 %.2f %.2f Tm %s Tj" % (2 if is_bold else 1, size, x, h - y, _pdf_string(text))
            )
        ops.append(b"ET")
        xobjects = []
        for i, (rect, width, height, samples) in enumerate(self._images):
            xref = doc.get_new_xref()
            doc.update_object(
                xref,
                f"<</Type/XObject/Subtype/Image/Width {width}/Height {height}/ColorSpace/DeviceRGB"
                "/BitsPerComponent 8>>",
            )
            doc.update_stream(xref, samples)
            xobjects.append(f"/Im{i} {xref} 0 R")
            ops.append(b"q %.2f 0 0 %.2f %.2f %.2f cm /Im%d Do Q" % (rect.width, rect.height, rect.x0, h - rect.y1, i))
        content = doc.get_new_xref()
        doc.update_object(content, "<<>>")
        doc.update_stream(content, b"\n".join(ops))
        kind, value = doc.xref_get_key(self.page.xref, "Contents")
        if kind == "xref":
            doc.xref_set_key(self.page.xref, "Contents", f"[{value} {content} 0 R]")
        elif kind == "array":
            doc.xref_set_key(self.page.xref, "Contents", f"{value[:-1]} {content} 0 R]")
        else:
            doc.xref_set_key(self.page.xref, "Contents", f"{content} 0 R")
        # One writer per page owns the images; a second writer on the page (the other column) keeps them.
        kind, value = doc.xref_get_key(self.page.xref, "Resources/XObject")
        keep = value[2:-2] if kind == "dict" and not xobjects else ""
        doc.xref_set_key(
            self.page.xref,
            "Resources",
            f"<</Font<</F1 {regular} 0 R/F2 {bold} 0 R>>/XObject<<{' '.join(xobjects) or keep}>>>>",
        )


def cover_page(doc: pymupdf.Document) -> None:
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT), top=90)
    for text in COVER_LINES:
        w.line(text, size=12 if text.isupper() else 10, bold=text.isupper())
        w.y += 4
    w.close()


def financial_table(w: PageWriter, rng: random.Random, n_rows: int, title: str = "") -> None:
    w.heading(title or "CONSOLIDATED STATEMENTS OF OPERATIONS (in millions, except per share amounts)", size=9.5)
    cols = [400.0, 470.0, 540.0]
    w.table_rows([("", ["2023", "2022", "2021"])], cols)
    labels = ("Net sales", "Cost of sales", "Gross margin", "Selling, general and administrative", "Operating income")
    w.table_rows(
        ((f"{labels[i % len(labels)]} {i // len(labels) + 1}", [_money(rng) for _ in cols]) for i in range(n_rows)),
        cols,
    )
    w.y += 8


def item_pages(
    doc: pymupdf.Document,
    rng: random.Random,
    items: Iterable[tuple[str, str, str]],
    pages_per_item: int = 1,
    words_per_page: int = 300,
) -> None:
    """A simple body: each Item's heading, then prose pages (with a table on every third page of Items 7 and 8)."""
    part = ""
    for item_part, code, title in items:
        for k in range(pages_per_item):
            w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
            if k == 0:
                if item_part != part:
                    w.heading(f"PART {item_part}", size=12)
                    part = item_part
                w.heading(f"Item {code}. {title}")
            if code in ("7", "8") and k % 3 == 1:
                w.paragraph(prose(rng, words_per_page // 3))
                financial_table(w, rng, 18)
            else:
                w.paragraph(prose(rng, words_per_page))
            w.footer(doc.page_count)
            w.close()


def _save(doc: pymupdf.Document, path: Path) -> None:
    # No timestamps or random ids in the output: the same bytes every run.
    doc.set_metadata({"title": f"{COMPANY} Form 10-K", "author": "", "creationDate": "", "modDate": ""})
    doc.save(path, garbage=3, deflate=True, no_new_id=True)
    _DocFonts.forget(doc)
    doc.close()


# --- the cases ------------------------------------------------------------------------------------------------


def dot_leaders(out: Path) -> Case:
    """A contents page whose leaders run 300 dots without a page number (what hung the indexer), with and
    without trailing text, as spaced dots and as ellipsis characters; then the real Items."""
    rng = random.Random(1)
    doc = pymupdf.open()
    cover_page(doc)
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
    w.heading("TABLE OF CONTENTS")
    # 4 pt keeps a 300-dot leader (about 330 pt) inside the page, so extraction sees all of it.
    size = 4.0
    entries = [
        ("1", "Business", "." * 300),
        ("1A", "Risk Factors", "\u2026" * 100),
        ("7", "Management's Discussion and Analysis of Financial Condition and Results of Operations", "." * 300),
        ("7A", "Quantitative and Qualitative Disclosures About Market Risk", "." * 300 + " see the discussion in"),
        ("8", "Financial Statements and Supplementary Data", ". " * 150),
        ("9A", "Controls and Procedures", "." * 299 + " 7"),
        ("15", "Exhibits and Financial Statement Schedules", "." * 320 + " x"),
    ]
    for code, title, leader in entries:
        w.line(f"Item {code}. {title} {leader}", size=size)
        w.y += 4
    w.line("." * 400, size=size)  # a bare rule of dots
    w.line("Item 7. " + "." * 200 + " Management's Discussion and Analysis" + "." * 200, size=size)
    w.close()
    item_pages(doc, rng, ITEMS_10K)
    _save(doc, out / "dot_leaders.pdf")
    return Case("dot_leaders.pdf", dot_leaders.__doc__ or "", items=ALL_ITEM_CODES)


def filing_1000_pages(out: Path) -> Case:
    """A 1,000-page 10-K: cover, contents, then every Item over ~45 pages of prose, with a table on every third
    page of Items 7 and 8."""
    rng = random.Random(2)
    doc = pymupdf.open()
    cover_page(doc)
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
    w.heading("TABLE OF CONTENTS")
    for i, (_, code, title) in enumerate(ITEMS_10K):
        w.line(f"Item {code}. {title[:60]}  {3 + 45 * i}", size=9)
    w.close()
    per_item = (1000 - 2) // len(ITEMS_10K)
    item_pages(doc, rng, ITEMS_10K, pages_per_item=per_item, words_per_page=300)
    while doc.page_count < 1000:
        w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
        w.paragraph(prose(rng, 300))
        w.footer(doc.page_count)
        w.close()
    _save(doc, out / "filing_1000_pages.pdf")
    return Case("filing_1000_pages.pdf", filing_1000_pages.__doc__ or "", items=ALL_ITEM_CODES)


def _table_3000(rng: random.Random) -> list[tuple[str, list[str]]]:
    return [(f"Property {i:04d} net book value", [_money(rng) for _ in range(4)]) for i in range(3000)]


def table_3000_rows(out: Path) -> list[Case]:
    """A 3,000-row table as column-gapped text rows: once on a single 30,000-pt-tall page (the detector sees
    3,000 lines at once), once over 55 ordinary pages."""
    cols = [380.0, 440.0, 500.0, 560.0]
    header = ("", ["2023", "2022", "2021", "2020"])
    cases = []
    for name, tall in (("table_3000_rows_one_page.pdf", True), ("table_3000_rows_paged.pdf", False)):
        rng = random.Random(3)
        doc = pymupdf.open()
        cover_page(doc)
        rows = _table_3000(rng)
        intro = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
        intro.heading(f"Item 2. {ITEMS_10K[4][2]}")
        intro.paragraph(prose(rng, 120))
        intro.close()
        if tall:
            w = PageWriter(doc.new_page(width=WIDTH, height=3000 * 9 * 1.3 + 2 * MARGIN + 40))
            w.heading("SCHEDULE OF PROPERTIES (in thousands)", size=9.5)
            w.table_rows([header, *rows], cols)
            w.close()
        else:
            per_page = 52
            for start in range(0, len(rows), per_page):
                w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
                w.heading("SCHEDULE OF PROPERTIES (in thousands)" + (" (continued)" if start else ""), size=9.5)
                w.table_rows([header, *rows[start : start + per_page]], cols)
                w.footer(doc.page_count)
                w.close()
        tail = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
        tail.heading(f"Item 3. {ITEMS_10K[5][2]}")
        tail.paragraph(prose(rng, 120))
        tail.close()
        _save(doc, out / name)
        cases.append(Case(name, table_3000_rows.__doc__ or "", items=["2", "3"]))
    return cases


def long_line(out: Path) -> Case:
    """A 100,000-character line inserted as one text run, twice: on a letter page (extraction clips it to the
    page, so only its start is read) and on a 60,000-pt-wide page in 1-pt type, where all of it is read as one
    line without a sentence end. The HTML case carries a 2 MB line."""
    rng = random.Random(4)
    doc = pymupdf.open()
    cover_page(doc)
    text = prose(rng, 20_000)
    while len(text) < 100_000:
        text += " " + prose(rng, 2_000)
    text = text[:100_000].replace(".", ",")
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
    w.heading(f"Item 7. {ITEMS_10K[9][2]}")
    w.line(text, size=BODY_SIZE)
    w.paragraph(prose(rng, 100))
    w.close()
    w = PageWriter(doc.new_page(width=60_000, height=HEIGHT))
    w.heading(f"Item 7A. {ITEMS_10K[10][2]}")
    w.line(text, size=1.0)
    w.close()
    _save(doc, out / "long_line.pdf")
    return Case("long_line.pdf", long_line.__doc__ or "", items=["7", "7A"])


def rotated_pages(out: Path) -> Case:
    """Pages with /Rotate 90, 180 and 270 (text upright for the reader) and a landscape table whose text runs
    vertically on an unrotated page."""
    rng = random.Random(5)
    doc = pymupdf.open()
    cover_page(doc)
    items = iter(ITEMS_10K[:4])
    for rotation in (90, 180, 270):
        page = doc.new_page(width=WIDTH, height=HEIGHT)
        page.set_rotation(rotation)  # PyMuPDF then places text upright in the rotated view
        w = PageWriter(page)
        _, code, title = next(items)
        w.heading(f"Item {code}. {title}")
        w.paragraph(prose(rng, 200))
        financial_table(w, rng, 6)
        w.close()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    _, code, title = next(items)
    page.insert_text((MARGIN, 80), f"Item {code}. {title}", fontname="hebo", fontsize=11)
    # A landscape table printed sideways: every row is a vertical run of text.
    for i in range(30):
        x = 110 + i * 14.0
        row = f"Segment {i:02d} revenue        {_money(rng):>10}        {_money(rng):>10}        {_money(rng):>10}"
        page.insert_text((x, HEIGHT - MARGIN), row, fontsize=9, rotate=90)
    _save(doc, out / "rotated_pages.pdf")
    return Case("rotated_pages.pdf", rotated_pages.__doc__ or "", items=["1", "1A", "1B", "1C"])


def two_columns(out: Path) -> Case:
    """A two-column layout: lines of both columns share baselines, Item headings sit inside a column."""
    rng = random.Random(6)
    doc = pymupdf.open()
    cover_page(doc)
    gutter = 18.0
    mid = WIDTH / 2
    items = list(ITEMS_10K[:8])
    while items:
        page = doc.new_page(width=WIDTH, height=HEIGHT)
        cols = [PageWriter(page, left=MARGIN, right=mid - gutter / 2), PageWriter(page, left=mid + gutter / 2)]
        for w in cols:
            if items:
                _, code, title = items.pop(0)
                w.heading(f"Item {code}. {title}")
            w.paragraph(prose(rng, 220))
            w.close()
    _save(doc, out / "two_columns.pdf")
    return Case("two_columns.pdf", two_columns.__doc__ or "", items=ALL_ITEM_CODES[:8])


def _colour(rng: random.Random) -> tuple[int, int, int]:
    return (rng.randrange(166), rng.randrange(166), rng.randrange(166))


def many_images(out: Path) -> Case:
    """500 distinct tiny images (logos, check boxes) on one page, and six 100x100 pt figures with captions."""
    rng = random.Random(7)
    doc = pymupdf.open()
    cover_page(doc)
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
    w.heading(f"Item 1. {ITEMS_10K[0][2]}")
    w.paragraph(prose(rng, 60))
    for i in range(500):
        x, y = MARGIN + (i % 25) * 18.0, 200 + (i // 25) * 18.0
        w.image(pymupdf.Rect(x, y, x + 8, y + 8), _colour(rng), 4)
    w.close()
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT))
    w.heading(f"Item 2. {ITEMS_10K[4][2]}")
    for i in range(6):
        x, y = MARGIN + (i % 3) * 160.0, 140 + (i // 3) * 220.0
        w.image(pymupdf.Rect(x, y, x + 100, y + 100), _colour(rng), 64)
        w.text_at(x, y + 116, f"Figure {i + 1}: facility {i + 1}", 9)
    w.y = 600
    w.paragraph(prose(rng, 80))
    w.close()
    _save(doc, out / "many_images.pdf")
    return Case("many_images.pdf", many_images.__doc__ or "", items=["1", "2"])


def items_one_page(out: Path) -> Case:
    """A 10-K whose every Item heading sits on one page, each followed by one sentence (many candidates on one
    page look like a contents page)."""
    rng = random.Random(8)
    doc = pymupdf.open()
    cover_page(doc)
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT), top=50)
    for _, code, title in ITEMS_10K:
        w.line(f"Item {code}. {title[:70]}", size=9, bold=True)
        w.line(prose(rng, 12), size=8)
    w.close()
    _save(doc, out / "items_one_page.pdf")
    return Case("items_one_page.pdf", items_one_page.__doc__ or "", items=ALL_ITEM_CODES)


def empty_page_between_items(out: Path) -> Case:
    """A blank page (no content at all) between Item 1 and Item 1A, and an 'intentionally left blank' page
    between Item 1A and Item 2."""
    rng = random.Random(9)
    doc = pymupdf.open()
    cover_page(doc)
    item_pages(doc, rng, ITEMS_10K[:1])
    doc.new_page(width=WIDTH, height=HEIGHT)
    item_pages(doc, rng, ITEMS_10K[1:2])
    w = PageWriter(doc.new_page(width=WIDTH, height=HEIGHT), top=380)
    w.line("This page intentionally left blank.", x=220)
    w.close()
    item_pages(doc, rng, ITEMS_10K[4:5])
    _save(doc, out / "empty_page_between_items.pdf")
    return Case("empty_page_between_items.pdf", empty_page_between_items.__doc__ or "", items=["1", "1A", "2"])


def _scan(src: pymupdf.Page, doc: pymupdf.Document, dpi: int = 120) -> None:
    """Replace nothing, add a page that holds only a grayscale picture of ``src`` (what a scanner produces)."""
    pix = src.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    page = doc.new_page(width=src.rect.width, height=src.rect.height)
    page.insert_image(page.rect, stream=pix.tobytes("png"))


def scanned(out: Path) -> list[Case]:
    """Image-only pages: one scanned page (Item 1A) inside a text 10-K, and a filing that is all scans. Without
    OCR the all-scan filing must fail with one line; the mixed one parses with that page's text missing."""
    rng = random.Random(10)
    text_doc = pymupdf.open()
    cover_page(text_doc)
    item_pages(text_doc, rng, ITEMS_10K[:3], words_per_page=200)
    mixed = pymupdf.open()
    for page in text_doc:
        if page.number == 2:
            _scan(page, mixed)
        else:
            mixed.insert_pdf(text_doc, from_page=page.number, to_page=page.number)
    _save(mixed, out / "scanned_one_page.pdf")
    full = pymupdf.open()
    for page in text_doc:
        _scan(page, full)
    _save(full, out / "scanned_all_pages.pdf")
    text_doc.close()
    no_text = ["no extractable text", "OCR"]
    return [
        Case("scanned_one_page.pdf", scanned.__doc__ or "", items=["1", "1A", "1B"], ocr_items=["1A"]),
        Case(
            "scanned_all_pages.pdf",
            scanned.__doc__ or "",
            may_fail_with=no_text,
            items=["1", "1A", "1B"],
            ocr_items=["1", "1A", "1B"],
        ),
    ]


_HTML_HEAD = (
    "<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>\n"
    + "".join(f"<p><b>{line}</b></p>\n" for line in COVER_LINES)
    + "<div style='page-break-after:always'></div>\n"
)
_HTML_BREAK = "<div style='page-break-after:always'></div>\n"


def _html_item(code: str, title: str, body: str) -> str:
    return f"<p><b>Item {code}. {title}</b></p>\n<p>{body}</p>\n"


def html_long_line(out: Path) -> Case:
    """HTML with a 2 MB paragraph of words and no sentence end (one line), and a 200,000-character token without
    any space; gzipped, as EDGAR bulk downloads come."""
    rng = random.Random(11)
    parts = [_HTML_HEAD.format(title="long line")]
    parts.append(_html_item("1", "Business", prose(rng, 200)))
    parts.append(_HTML_BREAK)
    words: list[str] = []
    size = 0
    while size < 2_000_000:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    parts.append(_html_item("7", ITEMS_10K[9][2], " ".join(words)))
    parts.append(_HTML_BREAK)
    token = "".join(rng.choice("abcdefghij0123456789") for _ in range(200_000))
    parts.append(_html_item("8", ITEMS_10K[11][2], f"{prose(rng, 40)} {token} {prose(rng, 40)}"))
    parts.append("</body></html>\n")
    data = "".join(parts).encode()
    name = "html_long_line.htm.gz"
    # mtime=0 and no file name in the header: identical bytes every run.
    (out / name).write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
    return Case(name, html_long_line.__doc__ or "", items=["1", "7", "8"])


def html_toc_and_table(out: Path) -> Case:
    """HTML with a contents table of 5,000-dot leaders without page numbers (nothing clips them in HTML) and a
    3,000-row financial table."""
    rng = random.Random(12)
    parts = [_HTML_HEAD.format(title="dot leaders and a long table"), "<p><b>TABLE OF CONTENTS</b></p><table>\n"]
    for _, code, title in ITEMS_10K:
        parts.append(f"<tr><td>Item {code}.</td><td>{title} {'.' * 5000}</td><td></td></tr>\n")
    parts.append("</table>\n" + _HTML_BREAK)
    for _, code, title in ITEMS_10K:
        parts.append(_html_item(code, title, prose(rng, 150)))
        if code == "8":
            parts.append("<p>CONSOLIDATED BALANCE SHEETS (in millions)</p>\n<table>\n")
            parts.append("<tr><td></td><td>2023</td><td>2022</td></tr>\n")
            for i in range(3000):
                a, b = _money(rng), _money(rng)
                parts.append(f"<tr><td>Account {i:04d}</td><td>$</td><td>{a}</td><td>$</td><td>{b}</td></tr>\n")
            parts.append("</table>\n")
        parts.append(_HTML_BREAK)
    parts.append("</body></html>\n")
    (out / "html_toc_and_table.htm").write_text("".join(parts), encoding="utf-8")
    return Case("html_toc_and_table.htm", html_toc_and_table.__doc__ or "", items=ALL_ITEM_CODES)


CASES: dict[str, Callable[[Path], Case | list[Case]]] = {
    "dot_leaders": dot_leaders,
    "filing_1000_pages": filing_1000_pages,
    "table_3000_rows": table_3000_rows,
    "long_line": long_line,
    "rotated_pages": rotated_pages,
    "two_columns": two_columns,
    "many_images": many_images,
    "items_one_page": items_one_page,
    "empty_page_between_items": empty_page_between_items,
    "scanned": scanned,
    "html_long_line": html_long_line,
    "html_toc_and_table": html_toc_and_table,
}
MANIFEST = "manifest.json"


def generate(out_dir: str | Path, only: Iterable[str] | None = None) -> list[Case]:
    """Write the chosen cases (default: all) and ``manifest.json`` into ``out_dir``; return their descriptions."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(only) if only is not None else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; known: {', '.join(CASES)}")
    cases: list[Case] = []
    for name in names:
        made = CASES[name](out)
        cases.extend(made if isinstance(made, list) else [made])
    manifest = {
        c.file: {
            "description": " ".join(c.description.split()),
            "may_fail_with": c.may_fail_with,
            "items": c.items,
            "ocr_items": c.ocr_items,
        }
        for c in cases
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", nargs="?", help="folder to write the files into")
    parser.add_argument("--only", default=None, help=f"comma-separated cases (default all): {', '.join(CASES)}")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, fn in CASES.items():
            print(f"{name}: {' '.join((fn.__doc__ or '').split())}")
        return 0
    if not args.out_dir:
        parser.error("OUT_DIR is required")
    started = time.perf_counter()
    try:
        cases = generate(args.out_dir, args.only.split(",") if args.only else None)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for c in cases:
        size = (Path(args.out_dir) / c.file).stat().st_size
        print(f"{c.file}: {size / 1e6:.2f} MB")
    print(f"{len(cases)} files in {time.perf_counter() - started:.1f} s -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
