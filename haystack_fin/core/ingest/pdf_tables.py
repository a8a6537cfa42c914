"""Financial table detection on PDF pages.

Most tables in EDGAR-rendered filings have no ruling lines: a row label at the left and numbers right-aligned in
columns, separated by wide horizontal gaps. ``find_table_regions`` finds them from word boxes alone
(``page.get_text("words")``, ~2-3 ms per page), which keeps table detection inside the indexing budget and keeps
PyMuPDF's correct word spacing. ``find_tables_pymupdf`` maps PyMuPDF's own (much slower, ~300-600 ms per page)
``page.find_tables`` output to the same ``DetectedTable`` shape, re-reading cell text from word boxes because
``Table.extract()`` glues words together on these PDFs. ``page_may_have_table`` is a cheap pre-check that decides
which pages deserve the expensive path.
"""

import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import pymupdf

from haystack_fin.core.ingest.layout import TableData
from haystack_fin.core.log import get_logger
from haystack_fin.core.text import normalize_line

logger = get_logger(__name__)

__all__ = [
    "DetectedTable",
    "find_table_regions",
    "find_tables_checked",
    "find_tables_pymupdf",
    "page_may_have_table",
    "value_lines",
]

# A word tuple from page.get_text("words"): (x0, y0, x1, y1, text, block_no, line_no, word_no).
Word = Sequence[Any]


@dataclass
class DetectedTable:
    """One table found on a page.

    ``bbox`` covers the header and body rows (not the caption). ``word_indices`` index into the ``words`` list
    the detector read (``page.get_text("words")`` order) and cover the header and body, so a caller can drop
    those words from the running text; ``caption_word_indices`` cover the title/units lines above, which the
    caller may keep as text or drop because ``table.title``/``table.units`` already carry them.
    """

    bbox: tuple[float, float, float, float]
    table: TableData
    word_indices: list[int] = field(default_factory=list)
    caption_word_indices: list[int] = field(default_factory=list)
    method: str = "geometric"


# --- token classification ------------------------------------------------------------------------------------

_NUM_RE = re.compile(
    r"^[(\[]?[-−–+]?(?:US)?[$€£¥]?[(]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?[)\]]?%?[)]?(?:x|bps|pts)?$",
    re.IGNORECASE,
)
_DASH_RE = re.compile(r"^(?:[-—–−]+|n/?a|n/?m|nm)$", re.IGNORECASE)
_CUR_RE = re.compile(r"^(?:US)?[$€£¥]$")
_CLOSE_RE = re.compile(r"^(?:\)|%|\)%|%\)|\)\)|pts|bps)$")
_OPEN_RE = re.compile(r"^\($")
_FOOT_RE = re.compile(r"^(?:\([a-z]\)|\*+|†+|‡+)$")
_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")
_FOOTNOTE_REF_RE = re.compile(r"^\(\d\)$")
_HAS_DIGIT = re.compile(r"\d")
# "Item 1. Financial Statements   3", "Part II — Other Information   24": table-of-contents entries, never table rows.
_TOC_ENTRY_RE = re.compile(r"^(?:item\s*\d|part\s+[iv]+\b)", re.IGNORECASE)

_NUM, _DASH, _CUR, _CLOSE, _OPEN, _FOOT, _TEXT = range(7)
_VALUE_KINDS = (_NUM, _DASH, _CUR, _CLOSE, _OPEN, _FOOT)

# Header lines name periods or column titles; a lone centered "ASSETS" between header and body does not.
_PERIOD_RE = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\b(?:ended|ending|months|"
    r"weeks|quarters?|years?|fiscal|period|change|total|amount|percent|actual|budget|as of)\b|%",
    re.IGNORECASE,
)
_UNITS_RE = re.compile(
    r"\b(?:in|amounts in|dollars in)\s+(?:millions|thousands|billions)\b"
    r"|\$\s*(?:and [a-z ]+)?in\s+(?:millions|thousands|billions)\b"
    r"|\bexcept (?:per[- ]share|share)\b",
    re.IGNORECASE,
)
_UNAUDITED_RE = re.compile(r"^\(?unaudited\)?$", re.IGNORECASE)
_PAGE_FURNITURE_RE = re.compile(r"^(?:table of contents|index|page \d+( of \d+)?|\d+|[a-z]-\d+)$", re.IGNORECASE)
_BULLETS = {"•", "●", "◦", "▪", "■", "-", "–", "—", "*", "·", "o", "§"}
# Leaders end a label or a word. The lookbehind lets a match start only where a run of leader characters starts;
# without it ``sub`` rescans a long run of dots from each of its positions when the run does not end the text.
_LEADER_RE = re.compile(r"(?<![ .…·])[ .…·]{2,}$")
_LEADER_DOTS_RE = re.compile(r"(?<![.…·])[.…·]{3,}$")
_CONNECTOR_END_RE = re.compile(r"(?:,|\b(?:and|or|of|the|in|for|to|at|by|on|from|with|net|less|a|an))$", re.I)


def _kind(text: str) -> int:
    if _CUR_RE.match(text):
        return _CUR
    if _CLOSE_RE.match(text):
        return _CLOSE
    if _OPEN_RE.match(text):
        return _OPEN
    if _DASH_RE.match(text):
        return _DASH
    if _FOOT_RE.match(text):
        return _FOOT
    if _HAS_DIGIT.search(text) and _NUM_RE.match(text):
        return _NUM
    return _TEXT


# --- line model ----------------------------------------------------------------------------------------------


@dataclass
class _W:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    idx: int
    kind: int


@dataclass
class _Cell:
    x0: float  # extent of the value itself (without a detached "$"), used for column clustering
    x1: float
    fx0: float  # full extent including "$"/"(" prefixes, used for header placement
    text: str
    numeric: bool
    col: int = -1


# Line kinds.
_ROW, _HEADER, _TEXTLINE, _PROSE, _FURNITURE = "row", "header", "text", "prose", "furniture"


@dataclass
class _Line:
    words: list[_W]
    y0: float
    y1: float
    h: float
    segments: list[list[_W]] = field(default_factory=list)
    label: list[_W] = field(default_factory=list)
    cells: list[_Cell] = field(default_factory=list)
    kind: str = _TEXTLINE

    @property
    def x0(self) -> float:
        return self.words[0].x0

    @property
    def x1(self) -> float:
        return self.words[-1].x1

    @property
    def text(self) -> str:
        return normalize_line(" ".join(w.text for w in self.words))


def _to_words(words: Sequence[Word]) -> list[_W]:
    out = []
    for i, w in enumerate(words):
        # Leader dots ("Revenue ........ 1,234") are spacing: dropping them leaves the column gap they fill.
        text = _LEADER_DOTS_RE.sub("", normalize_line(str(w[4])))
        if text:
            out.append(_W(float(w[0]), float(w[1]), float(w[2]), float(w[3]), text, i, _kind(text)))
    return out


def _group_lines(ws: list[_W]) -> list[_Line]:
    """Group words into visual lines by vertical overlap.

    A word joins the current line when at least half of the shorter of (word, line's tallest word) overlaps
    vertically: a label printed 3 pt above its numbers (MICROSOFT 10-K) and superscript footnote markers stay on
    their line, while tight leading (overlap of a few percent) does not chain neighbouring lines together.
    """
    ws = sorted(ws, key=lambda w: (w.y0 + w.y1) / 2)
    lines: list[_Line] = []
    cur: list[_W] = []
    by0 = by1 = 0.0  # box of the tallest word in the current line
    for w in ws:
        if cur:
            overlap = min(by1, w.y1) - max(by0, w.y0)
            if overlap >= 0.5 * min(by1 - by0, w.y1 - w.y0):
                cur.append(w)
                if w.y1 - w.y0 > by1 - by0:
                    by0, by1 = w.y0, w.y1
                continue
            lines.append(_make_line(cur))
        cur = [w]
        by0, by1 = w.y0, w.y1
    if cur:
        lines.append(_make_line(cur))
    lines.sort(key=lambda ln: ln.y0)
    return lines


def _make_line(ws: list[_W]) -> _Line:
    ws.sort(key=lambda w: w.x0)
    h = median(w.y1 - w.y0 for w in ws)
    return _Line(ws, min(w.y0 for w in ws), max(w.y1 for w in ws), max(h, 1.0))


def _split_segments(line: _Line) -> list[list[_W]]:
    """Split a line at column gaps: prose word spacing stays below ~0.5 x height, table gaps exceed ~1.5 x."""
    gap = max(line.h * 0.9, 4.0)
    segs: list[list[_W]] = [[line.words[0]]]
    for prev, w in itertools.pairwise(line.words):
        if w.x0 - prev.x1 >= gap:
            segs.append([w])
        else:
            segs[-1].append(w)
    return segs


def _cells_from_words(ws: list[_W], line_h: float) -> list[_Cell]:
    """Turn value/text words into cells: "$" and "(" attach to the next number, ")" and "%" to the previous one."""
    cells: list[_Cell] = []
    prefix: list[_W] = []
    text_run: list[_W] = []

    def flush_text() -> None:
        if text_run:
            cells.append(
                _Cell(
                    text_run[0].x0,
                    text_run[-1].x1,
                    text_run[0].x0,
                    normalize_line(" ".join(w.text for w in text_run)),
                    False,
                )
            )
            text_run.clear()

    range_dash: str | None = None
    for k, w in enumerate(ws):
        superscript = (w.y1 - w.y0) < 0.7 * line_h
        # A dash between words is punctuation ("Other income (loss) — net"), not an empty value.
        dash_in_text = w.kind == _DASH and 0 < k < len(ws) - 1 and ws[k - 1].kind == ws[k + 1].kind == _TEXT
        if w.kind == _TEXT or dash_in_text:
            if prefix:  # a "$" before text: keep it in the text
                text_run.extend(prefix)
                prefix = []
            text_run.append(w)
            continue
        flush_text()
        if w.kind == _FOOT or (superscript and w.kind == _NUM):
            continue  # footnote markers are not values
        if w.kind in (_CUR, _OPEN):
            prefix.append(w)
        elif w.kind == _NUM and range_dash is not None and cells and cells[-1].numeric:
            cells[-1].text += f" {range_dash} {w.text.lstrip('$')}"  # "0.5% – 2.0%" is one value
            cells[-1].x1 = w.x1
            range_dash = None
        elif (
            w.kind == _DASH
            and not prefix
            and cells
            and cells[-1].numeric
            and _HAS_DIGIT.search(cells[-1].text)
            and (k + 1 < len(ws) and ws[k + 1].kind == _NUM)
        ):
            range_dash = w.text
        elif w.kind in (_NUM, _DASH):
            opens = "(" if any(p.kind == _OPEN for p in prefix) else ""
            text = w.text
            if text[:1] in "$€£¥" and len(text) > 1:  # "$1,093" -> "1,093": currency is implied by the units line
                text = text[1:]
            text = re.sub(r"^\((?:US)?[$€£¥]", "(", text)
            fx0 = prefix[0].x0 if prefix else w.x0
            cells.append(_Cell(w.x0, w.x1, fx0, opens + text, True))
            prefix = []
        elif w.kind == _CLOSE and cells and cells[-1].numeric:
            cells[-1].text += w.text
            cells[-1].x1 = max(cells[-1].x1, w.x1)
    flush_text()
    return cells


def _analyze(line: _Line, text_left: float, text_right: float) -> None:
    """Split a line into label and cells and classify it as row / header / text / prose / page furniture."""
    text_width = max(text_right - text_left, 1.0)
    page_mid2 = text_left + text_right
    line.segments = _split_segments(line)
    # A "$" set apart from its number (wide currency columns) belongs to the next piece.
    k = 0
    while k < len(line.segments) - 1:
        if all(w.kind in (_CUR, _OPEN) for w in line.segments[k]):
            line.segments[k : k + 2] = [line.segments[k] + line.segments[k + 1]]
        else:
            k += 1
    if len(line.segments) > 1 and len(line.segments[0]) == 1 and line.segments[0][0].text in _BULLETS:
        line.segments[:2] = [line.segments[0] + line.segments[1]]  # "•   text": the bullet's gap is no column
    first = line.segments[0]
    # A number at the left margin is a row label ("2021", an exhibit number), not a value.
    if all(w.kind in _VALUE_KINDS for w in first) and first[0].x0 > text_left + 0.1 * text_width:
        line.label = []
        rest = line.segments
    else:
        line.label = first
        rest = line.segments[1:]
    # Cells per segment, so text columns separated by a column gap stay separate cells.
    line.cells = [c for seg in rest for c in _cells_from_words(seg, line.h)]
    n_label_words = len(line.label)
    wide = line.x1 - line.x0 >= 0.75 * text_width
    numeric = [c for c in line.cells if c.numeric]
    first_num = next((k for k, c in enumerate(line.cells) if c.numeric), len(line.cells))
    trailing_text = [len(c.text.split()) for c in line.cells[first_num:] if not c.numeric]
    # Three or more gap-separated pieces with two real values read as a row even with text columns among them
    # ("Money market funds  $ 5,320  ...  Cash and cash equivalents", a notes table's "April 15 and October 15").
    values = [c for c in numeric if _HAS_DIGIT.search(c.text) and not _FOOTNOTE_REF_RE.match(c.text)]
    columnar = len(line.segments) >= 3 and (len(values) >= 2 or (len(values) == 1 and len(numeric) >= 3))
    # Officer and exhibit tables hold a title column ("Senior Vice President, Controller and Chief Accounting
    # Officer"); a longer run of words after a number is a numbered paragraph.
    max_text_words = 15 if columnar else 6
    if n_label_words > 25 or (len(line.segments) == 1 and wide and len(line.words) >= 8):
        line.kind = _PROSE
    elif (
        len(line.words) <= 4
        and _PAGE_FURNITURE_RE.match(line.text)
        and abs(line.x0 + line.x1 - page_mid2) < 0.2 * text_width
    ):
        line.kind = _FURNITURE  # centred page number / "Page 12 of 15": ends a table, never part of one
    elif _TOC_ENTRY_RE.match(line.text):
        line.kind = _TEXTLINE
    elif any(not c.numeric and len(c.text.split()) > max_text_words for c in line.cells) or (
        not columnar
        and trailing_text
        and (sum(trailing_text) > 1 and (len(trailing_text) > 1 or not line.cells[-1].numeric))
    ):
        # "10.48   Letter, dated March 22, ..." (a numbered list) or "$0.69   in the current quarter compared to"
        # (justified bullet text): financial rows do not continue with prose after their numbers. One text column
        # between numbers ("(226)   Net operating revenues   443") is fine.
        line.kind = _TEXTLINE
    elif (not columnar and sum(not c.numeric for c in line.cells) >= max(2, len(numeric))) or (
        numeric and all(_FOOTNOTE_REF_RE.match(c.text) for c in numeric) and len(numeric) < len(line.cells)
    ):
        # Column titles with footnote references ("Eliminations (3)   Total"), not a row of values.
        line.kind = _TEXTLINE
    elif numeric and (not line.label or line.label[-1].x1 < line.x0 + 0.85 * (text_right - line.x0)):
        years = all(_YEAR_RE.match(c.text) for c in numeric)
        has_cur = any(w.kind == _CUR or w.text.startswith("$") for seg in rest for w in seg)
        line.kind = _HEADER if years and not has_cur else _ROW
    else:
        line.kind = _TEXTLINE


# --- public API ----------------------------------------------------------------------------------------------


def page_may_have_table(words: Sequence[Word]) -> bool:
    """Cheap pre-check (~0.2-0.5 ms): does the page have number columns worth running a table finder on?

    True when at least 3 lines carry a number standing a column gap (one line height) away from its left
    neighbour, or 2 lines carry two such numbers. Prose numbers ("$826 million", "2.9% at December 31") sit at
    normal word spacing, so prose-only pages fail.
    """
    if len(words) < 6:
        return False
    hits = multi = 0
    for line in _lines_by_bottom(words):
        n = _gapped_numbers(line)
        hits += n > 0
        multi += n > 1
        # Mirrors find_table_regions' acceptance: 3 rows with numbers, or 2 rows with 2+ value columns.
        if hits >= 3 or multi >= 2:
            return True
    return False


def value_lines(words: Sequence[Word]) -> list[tuple[tuple[float, float, float, float], str]]:
    """Lines that read like a table row: two or more numbers each standing a column gap from its left neighbour.

    Independent of the detectors, so a benchmark can check that no such line was left in the running text
    (``benchmarks/check_chunks.py``). Returns (bbox, text) per line, top to bottom.
    """
    out = []
    for line in _lines_by_bottom(words):
        if _gapped_numbers(line) >= 2:
            bbox = (
                min(float(w[0]) for w in line),
                min(float(w[1]) for w in line),
                max(float(w[2]) for w in line),
                max(float(w[3]) for w in line),
            )
            out.append((bbox, " ".join(str(w[4]) for w in line)))
    return out


def _lines_by_bottom(words: Sequence[Word]) -> Iterator[list[Word]]:
    """Lines by bottom edge only (no overlap test): good enough for a pre-check, a fraction of full grouping."""
    ws = sorted(words, key=lambda w: w[3])
    start = 0
    for end in range(1, len(ws) + 1):
        if end < len(ws) and ws[end][3] - ws[start][3] < 2.0:
            continue
        if end - start >= 2:
            yield sorted(ws[start:end], key=lambda w: w[0])
        start = end


def _gapped_numbers(line: list[Word]) -> int:
    """Numbers with digits that stand a column gap (one line height) away from their left neighbour."""
    h = max(float(line[0][3]) - float(line[0][1]), 4.0)
    n = 0
    prev_x1 = float(line[0][2])
    for w in line[1:]:
        text = str(w[4]).strip()
        if text in ("$", "(", "US$", "($"):  # "$ 3,117": the gap that matters is the one before the "$"
            continue
        if float(w[0]) - prev_x1 >= h and _kind(text) == _NUM:  # regex only after the cheap gap test
            n += 1
        prev_x1 = float(w[2])
    return n


def find_table_regions(page: pymupdf.Page, words: Sequence[Word] | None = None) -> list[DetectedTable]:
    """Detect borderless financial tables on ``page`` from word boxes.

    ``words`` may be passed when the caller already has ``page.get_text("words")``; ``word_indices`` in the result
    index into that list. Returns tables top to bottom; an empty list for prose pages.
    """
    if words is None:
        words = page.get_text("words")
    ws = _to_words(words)
    if len(ws) < 6:
        return []
    lines = _group_lines(ws)
    text_left = min(w.x0 for w in ws)
    text_right = max(w.x1 for w in ws)
    for ln in lines:
        _analyze(ln, text_left, text_right)
    lh = median(ln.h for ln in lines)
    tables = []
    for start, end in _find_runs(lines, lh):
        detected = _build_table(lines, start, end, lh)
        if detected is not None:
            tables.append(detected)
    return tables


def find_tables_checked(page: pymupdf.Page, words: Sequence[Word] | None = None) -> list[DetectedTable]:
    """The geometric detector, with PyMuPDF's finder as a second opinion where the detector left rows behind.

    When a line that reads like a table row (``value_lines``) lies outside every detected table, PyMuPDF's
    ``find_tables`` runs on that page and each of its tables that holds such a line and overlaps no detected
    table is added. PyMuPDF's finder costs ~200-1,000 ms per page, so it runs only on those pages (2 of the 3,222
    FinanceBench dev pages, both bar-chart labels, where it finds nothing).
    """
    if words is None:
        words = page.get_text("words")
    tables = find_table_regions(page, words)
    missed = [box for box, _ in value_lines(words) if not any(_contains(t.bbox, box) for t in tables)]
    if not missed:
        return tables
    extra = [
        t
        for t in find_tables_pymupdf(page, words=words)
        if any(_contains(t.bbox, box) for box in missed) and not any(_overlaps(t.bbox, d.bbox) for d in tables)
    ]
    if extra:
        logger.debug(
            "PyMuPDF's finder added {n_tables} table(s) on page {page}", n_tables=len(extra), page=page.number + 1
        )
    return sorted(tables + extra, key=lambda t: (t.bbox[1], t.bbox[0]))


def _contains(outer: Sequence[float], inner: Sequence[float], tol: float = 2.0) -> bool:
    return (
        inner[0] >= outer[0] - tol
        and inner[1] >= outer[1] - tol
        and inner[2] <= outer[2] + tol
        and inner[3] <= outer[3] + tol
    )


def _overlaps(a: Sequence[float], b: Sequence[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


# --- run detection -------------------------------------------------------------------------------------------


def _zone_x0(lines: list[_Line], idxs: Sequence[int]) -> float:
    xs = [c.fx0 for i in idxs for c in lines[i].cells]
    return min(xs) if xs else float("inf")


def _starts_new_header(line: _Line, zone_x0: float, lh: float) -> bool:
    """A text line with two or more gap-separated pieces in the value zone is a new table's column header."""
    if line.kind == _HEADER:
        return True
    if line.kind != _TEXTLINE:
        return False
    in_zone = [s for s in line.segments if s[0].x0 >= zone_x0 - lh]
    return len(in_zone) >= 2


def _find_runs(lines: list[_Line], lh: float) -> list[tuple[int, int]]:
    """Runs of table rows: (first row index, last row index) with at most a few section-label lines in between."""
    runs: list[tuple[int, int]] = []
    max_gap = 3.0 * lh
    start = last = -1
    pending: list[int] = []
    rows_in_run: list[int] = []

    def close() -> None:
        nonlocal start, last, pending, rows_in_run
        if start >= 0:
            runs.append((start, last))
        start = last = -1
        pending = []
        rows_in_run = []

    for i, ln in enumerate(lines):
        prev = lines[i - 1] if i else None
        if start >= 0 and prev is not None and ln.y0 - prev.y1 > max_gap:
            close()
        if start >= 0 and ln.kind == _HEADER and ln.label and not _rows_follow(lines, i, max_gap):
            # Years as values under a row label, with no rows after it: the table's last row, not a new header.
            ln.kind = _ROW
        if ln.kind == _ROW:
            if start < 0:
                start = i
            last = i
            pending = []
            rows_in_run.append(i)
            continue
        if start < 0:
            continue
        zone_x0 = _zone_x0(lines, rows_in_run)
        label_left = min((lines[j].label[0].x0 for j in rows_in_run if lines[j].label), default=ln.x0)
        # A single-piece line from the left margin into the value columns reads like prose.
        sentence = len(ln.segments) == 1 and ln.x0 <= label_left + 2 * lh and ln.x1 >= zone_x0 and len(ln.words) >= 6
        if ln.kind == _FURNITURE:
            close()
        elif ln.kind == _PROSE or sentence:
            # One wide line directly followed by a row is a wrapped row label (long "Common stock, $0.01 par ..."
            # captions); anything more is a paragraph after the table.
            nxt = lines[i + 1] if i + 1 < len(lines) else None
            wrapped = (
                nxt is not None
                and nxt.kind == _ROW
                and nxt.y0 - ln.y1 <= 0.8 * lh
                and not any(lines[j].kind == _PROSE for j in pending)
            )
            if wrapped:
                pending.append(i)
                continue
            close()
        elif _starts_new_header(ln, zone_x0, lh):
            close()
        else:
            pending.append(i)
            if len(pending) > 4:
                close()
    close()
    return runs


def _rows_follow(lines: list[_Line], i: int, max_gap: float) -> bool:
    """Does a table row follow line ``i`` within the next three lines, without a paragraph-sized gap?"""
    for j in range(i + 1, min(i + 4, len(lines))):
        if lines[j].y0 - lines[j - 1].y1 > max_gap or lines[j].kind in (_PROSE, _FURNITURE):
            return False
        if lines[j].kind == _ROW:
            return True
    return False


# --- table assembly ------------------------------------------------------------------------------------------


@dataclass
class _Col:
    x0: float
    x1: float
    fx0: float
    rows: set[int]


def _cluster_columns(lines: list[_Line], body: list[int]) -> list[_Col]:
    """Columns = overlapping x-extents of cells across rows, never two cells of one row in the same column."""
    cells = sorted(((c, i) for i in body for c in lines[i].cells), key=lambda t: t[0].x0)
    cols: list[_Col] = []
    for cell, i in cells:
        best, best_ov = None, -1.0
        for col in cols:
            if i in col.rows:
                continue
            ov = min(col.x1, cell.x1) - max(col.x0, cell.x0)
            if ov > best_ov:
                best, best_ov = col, ov
        if best is None or best_ov < -1.0:
            best = _Col(cell.x0, cell.x1, cell.fx0, set())
            cols.append(best)
        else:
            best.x0, best.x1, best.fx0 = min(best.x0, cell.x0), max(best.x1, cell.x1), min(best.fx0, cell.fx0)
        best.rows.add(i)
    cols.sort(key=lambda c: (c.x0 + c.x1) / 2)
    # Dashes centred in a right-aligned column can miss the numbers' extents; fold such stray clusters into a
    # close neighbour that never shares a row with them.
    merged: list[_Col] = []
    for col in cols:
        if merged:
            prev = merged[-1]
            close_by = col.x0 - prev.x1 < 8.0
            if close_by and not (prev.rows & col.rows):
                prev.x0, prev.x1, prev.fx0 = min(prev.x0, col.x0), max(prev.x1, col.x1), min(prev.fx0, col.fx0)
                prev.rows |= col.rows
                continue
        merged.append(col)
    return merged


def _assign(cell: _Cell, cols: list[_Col]) -> int:
    best, best_ov = 0, float("-inf")
    for j, col in enumerate(cols):
        ov = min(col.x1, cell.x1) - max(col.x0, cell.x0)
        if ov > best_ov:
            best, best_ov = j, ov
    return best


def _reclaim_values(line: _Line, cols: list[_Col], zone_x0: float) -> None:
    """Numbers glued to an overflowing label ("... respectively 848") move to the value column they sit in."""
    if not line.label or not cols:
        return
    k = len(line.label)
    while k > 1 and line.label[k - 1].kind in _VALUE_KINDS:
        k -= 1
    tail = line.label[k:]
    for j, w in enumerate(tail):
        if w.kind == _NUM and w.x0 >= zone_x0 - 2.0 and any(min(c.x1, w.x1) - max(c.x0, w.x0) > 0 for c in cols):
            moved = tail[j:]
            line.label = line.label[: k + j]
            line.cells = _cells_from_words(moved, line.h) + line.cells
            return


def _label_text(ws: list[_W]) -> str:
    text = normalize_line(" ".join(w.text for w in ws))
    return _LEADER_RE.sub("", text).strip()


def _is_wrapped_label(line: _Line, nxt: _Line, label_zone: tuple[float, float], lh: float) -> bool:
    """A value-less line continues into the next row when it runs long or breaks mid-phrase, not a section title."""
    if line.cells or not line.label or nxt.y0 - line.y1 > 0.8 * lh:
        return False
    if not nxt.label:  # label set top-aligned in a tall row, its numbers bottom-aligned on the next line
        return bool(nxt.cells)
    text = _label_text(line.label)
    if text.endswith(":"):
        return False
    if text.isupper():  # "ASSETS", "LIABILITIES AND EQUITY": section headings
        return False
    left, right = label_zone
    width = max(right - left, 1.0)
    # A label forced to wrap fills the label column; a short heading above indented items does not.
    long_line = line.x0 <= left + 0.25 * width and line.label[-1].x1 >= left + 0.85 * width
    return long_line or nxt.label[0].text[:1].islower() or bool(_CONNECTOR_END_RE.search(text))


def _span_columns(
    segs: list[tuple[float, float, str]], blocks: list[tuple[float, float]], pitch: float
) -> list[list[int]]:
    """Columns each header segment covers; ``blocks`` are the columns' extents (values plus header text below).

    Each column first takes its nearest segment if that segment reaches over the column's block; then a segment
    grows over unclaimed neighbouring columns while it stays centred over them, since a spanning title ("Year
    Ended December 31,", "Gain (Loss) Recognized") is centred over the columns it spans. A segment no column
    picked still attaches to its nearest column so no header text is lost.
    """
    centers = [(x0 + x1) / 2 for x0, x1 in blocks]
    # Period titles over equal groups of sub-columns ("2021" over Beverage/Convenient Food) are often set off
    # centre; when the columns split evenly and each title lies over its group, take the even split.
    n, m = len(blocks), len(segs)
    if m > 1 and n > m and n % m == 0:
        g = n // m
        groups = [list(range(k * g, (k + 1) * g)) for k in range(m)]
        if all(
            blocks[grp[0]][0] - pitch / 2 <= (sx0 + sx1) / 2 <= blocks[grp[-1]][1] + pitch / 2
            for grp, (sx0, sx1, _) in zip(groups, segs, strict=True)
        ):
            return groups
    owner: dict[int, int] = {}
    reach = 0.05 * pitch + 2.0
    for j, (bx0, bx1) in enumerate(blocks):
        k = min(range(m), key=lambda k: abs((segs[k][0] + segs[k][1]) / 2 - centers[j]))
        if min(bx1, segs[k][1]) - max(bx0, segs[k][0]) >= -reach:
            owner[j] = k
    result: list[list[int]] = []
    tol = max(0.25 * pitch, 8.0)
    for k, (sx0, sx1, _) in enumerate(segs):
        sc = (sx0 + sx1) / 2
        owned = sorted(j for j, o in owner.items() if o == k)
        if not owned:
            result.append([min(range(n), key=lambda j: abs(centers[j] - sc))] if n else [])
            continue
        a, b = owned[0], owned[-1]

        def centred(lo: int, hi: int, sc: float = sc) -> bool:
            return abs((blocks[lo][0] + blocks[hi][1]) / 2 - sc) <= tol

        while True:
            free_l = a > 0 and (a - 1) not in owner
            free_r = b + 1 < n and (b + 1) not in owner
            if free_l and free_r and centred(a - 1, b + 1):
                a, b = a - 1, b + 1
            elif free_l and centred(a - 1, b):
                a -= 1
            elif free_r and centred(a, b + 1):
                b += 1
            else:
                break
        for j in range(a, b + 1):
            owner.setdefault(j, k)
        result.append(list(range(a, b + 1)))
    return result


def _header_row(
    lines: list[_Line], header_idx: list[int], cols: list[_Col], zone_x0: float, label_left: float
) -> list[str]:
    """Combine stacked header lines into one header row, spreading spanning titles over the columns below them.

    Lines are placed bottom-up so each column's block grows with the header text already placed over it.
    """
    n = len(cols) + 1
    centers = [(c.fx0 + c.x1) / 2 for c in cols]
    pitch = median([b - a for a, b in itertools.pairwise(centers)]) if len(centers) > 1 else 60.0
    blocks = [(c.fx0, c.x1) for c in cols]
    per_line: list[list[str]] = []
    for i in sorted(header_idx, key=lambda i: -lines[i].y0):
        ln = lines[i]
        row = [""] * n
        label_ws: list[_W] = []
        segs: list[tuple[float, float, str]] = []
        for seg in _split_segments(ln):
            # Left of the numbers and nearer the label margin than any column: the label column's header.
            sc = (seg[0].x0 + seg[-1].x1) / 2
            near_col = min((abs(c - sc) for c in centers), default=float("inf"))
            if seg[-1].x1 < zone_x0 - 1.0 and seg[0].x0 - label_left < near_col:
                label_ws.extend(seg)
            else:
                segs.append((seg[0].x0, seg[-1].x1, normalize_line(" ".join(w.text for w in seg))))
        row[0] = _label_text(label_ws)
        if segs and blocks:
            for k, owned in enumerate(_span_columns(segs, blocks, pitch)):
                for j in owned:
                    row[j + 1] = f"{row[j + 1]} {segs[k][2]}".strip()
                if len(owned) == 1:
                    j = owned[0]
                    blocks[j] = (min(blocks[j][0], segs[k][0]), max(blocks[j][1], segs[k][1]))
        per_line.append(row)
    per_line.reverse()
    return [" ".join(r[j] for r in per_line if r[j]) for j in range(n)]


def _strip_parens(text: str) -> str:
    text = text.strip()
    return text[1:-1].strip() if text.startswith("(") and text.endswith(")") else text


def _units_in(text: str) -> tuple[str, bool] | None:
    """The unit statement in a caption line, and whether it is the whole line ("(In millions)")."""
    m = _UNITS_RE.search(text)
    if m is None:
        return None
    if text.startswith("(") or m.start() <= 2 or text.lower().startswith(("amounts", "dollars")):
        paren = re.match(r"^\(([^()]*)\)", text)
        if paren and paren.end() < len(text):  # "(dollars in millions)   2022   2021": a header line's label
            return paren.group(1).strip(), False
        return _strip_parens(text), True
    paren = re.search(r"\(([^()]*" + re.escape(m.group(0)) + r"[^()]*)\)", text)
    return (paren.group(1) if paren else m.group(0)), False


def _caption(lines: list[_Line], top: int, lh: float) -> tuple[list[int], str, str]:
    """Title and units from the tight block of short lines just above the table (at most 4 lines)."""
    idxs: list[int] = []
    i = top - 1
    below_y0 = lines[top].y0
    first_gap = 3.0 * lh
    while i >= 0 and len(idxs) < 5:
        ln = lines[i]
        gap = below_y0 - ln.y1
        # Caption lines sit at tight leading; a units line is often set apart from the title above it.
        limit = first_gap if not idxs else (2.0 * lh if (u := _units_in(lines[idxs[-1]].text)) and u[1] else 0.5 * lh)
        if gap > limit or ln.kind in (_ROW, _HEADER, _FURNITURE):
            break
        idxs.append(i)
        below_y0 = ln.y0
        i -= 1
    texts = [(j, lines[j].text) for j in reversed(idxs) if not _PAGE_FURNITURE_RE.match(lines[j].text)]
    n_words = sum(len(t.split()) for _, t in texts)
    if not texts or len(texts) > 4 or n_words > 80:
        return [], "", ""
    title_parts, units = [], ""
    for _, t in texts:
        if _UNAUDITED_RE.match(t):
            continue
        found = _units_in(t)
        if found and not units:
            units, whole_line = found
            if whole_line:
                continue
        title_parts.append(t)
    return [j for j, _ in texts], " ".join(title_parts), units


def _build_table(lines: list[_Line], start: int, end: int, lh: float) -> DetectedTable | None:
    body = list(range(start, end + 1))
    row_idx = [i for i in body if lines[i].kind == _ROW]
    cols = _cluster_columns(lines, row_idx)
    zone_x0 = min((c.fx0 for c in cols), default=float("inf"))
    for i in body:
        _reclaim_values(lines[i], cols, zone_x0)
    # Columns come from lines with numbers; text on value-less lines (section labels) never adds a column.
    cols = _cluster_columns(lines, [i for i in body if any(c.numeric for c in lines[i].cells)])
    if not cols:
        return None
    zone_x0 = min(c.fx0 for c in cols)

    # Header lines and section labels above the first row.
    headers: list[int] = []
    labels_above: list[int] = []
    units_idx: list[int] = []
    label_left = min((lines[i].label[0].x0 for i in body if lines[i].label), default=lines[start].x0)
    sentence_x = label_left + 0.15 * max(zone_x0 - label_left, 0.0)
    i = start - 1
    below_y0 = lines[start].y0
    while i >= 0:
        ln = lines[i]
        gap = below_y0 - ln.y1
        if ln.kind in (_ROW, _PROSE, _FURNITURE) or gap > 3.0 * lh or _TOC_ENTRY_RE.match(ln.text):
            break
        line_units = _units_in(ln.text)
        if line_units and line_units[1] and not headers:  # "(In thousands, except per share data)" under the header
            units_idx.append(i)
            below_y0 = ln.y0
            i -= 1
            continue
        # "Numerator (in millions):" is a section label that names units, not the caption's units line.
        if (line_units and len(ln.segments) == 1 and not ln.text.endswith(":")) or _UNAUDITED_RE.match(ln.text):
            break
        in_zone = [s for s in ln.segments if s[-1].x1 >= zone_x0 - lh]
        # A sentence running from the left margin into the value columns is the caption, never a header, unless
        # a column header sits right above it: then it is a section label set across the table.
        if any(s[0].x0 <= sentence_x and s[-1].x1 >= zone_x0 for s in ln.segments):
            above = lines[i - 1] if i else None
            if headers or above is None or above.kind != _HEADER or ln.y0 - above.y1 > 1.5 * lh:
                break
            labels_above.append(i)
            below_y0 = ln.y0
            i -= 1
            continue
        if not headers:
            strict = ln.kind == _HEADER or (
                in_zone and (len(in_zone) >= 2 or _PERIOD_RE.search(" ".join(w.text for s in in_zone for w in s)))
            )
            if strict:
                headers.append(i)
            elif len(labels_above) < 4 and len(in_zone) <= 1:  # section labels, incl. a centred "ASSETS"
                labels_above.append(i)
            else:
                break
        elif (ln.kind == _HEADER or in_zone) and gap <= 1.5 * lh and len(headers) < 8:
            headers.append(i)
        else:
            break
        below_y0 = ln.y0
        i -= 1
    if not headers:
        units_idx = []  # no header: a units line above the rows belongs to the caption
    if headers:
        body = sorted(labels_above) + body
        top = min(headers)
    else:
        # Without a column header, only "Heading:" lines directly above belong to the body; the rest is caption.
        keep: list[int] = []
        for j in labels_above:
            short = len(lines[j].words) <= 8  # "Revenue:" is a section; "... were as follows:" is a caption
            if short and lines[j].text.endswith(":") and (not keep or keep[-1] == j + 1) and (j + 1 == start or keep):
                keep.append(j)
            else:
                break
        body = sorted(keep) + body
        top = body[0]

    # Row/column consistency: enough rows with numbers to be a table rather than a sentence.
    # Dashes alone ("—", "-----------") prove nothing: count cells with digits.
    digits = {i: sum(1 for c in lines[i].cells if c.numeric and _HAS_DIGIT.search(c.text)) for i in body}
    for i in body:
        for cell in lines[i].cells:
            cell.col = _assign(cell, cols)
    per_col = [0] * len(cols)
    for i in body:
        for cell in lines[i].cells:
            if cell.numeric and _HAS_DIGIT.search(cell.text):
                per_col[cell.col] += 1
    wide_rows = [i for i in body if digits[i] >= 2]
    # One row under a column header is a table too (MD&A sets "Product development  $ 998  15%  $ 1,101 ..."
    # under its own header, one line item per table); without a header one row is too weak a signal.
    numeric_rows = [i for i in body if digits[i]]
    if not (
        max(per_col) >= 3
        or len(wide_rows) >= 2
        or (headers and wide_rows)
        or (max(per_col) >= 2 and len(wide_rows) == 1 and len(numeric_rows) >= 2)
    ):
        return None

    toc = [i for i in body if _TOC_ENTRY_RE.match(lines[i].text) and lines[i].cells and lines[i].cells[-1].numeric]
    if len(toc) >= 2:
        return None  # a table of contents: "Item 7. ...  31" lines with page numbers

    # Rows of a table carry labels; scattered unlabelled numbers are chart annotations (pie/bar labels). A label
    # may sit on its own line just above its numbers (top-aligned in a tall row, COCACOLA 10-K).
    def labelled(pos: int) -> bool:
        ln = lines[body[pos]]
        if ln.label:
            return True
        above = lines[body[pos - 1]] if pos else None
        return above is not None and not above.cells and bool(above.label) and ln.y0 - above.y1 <= 0.8 * lh

    numeric_pos = [pos for pos, i in enumerate(body) if digits[i]]
    if 2 * sum(1 for pos in numeric_pos if labelled(pos)) < len(numeric_pos):
        return None

    label_left = min((lines[i].label[0].x0 for i in body if lines[i].label), default=0.0)
    label_zone = (label_left, zone_x0)

    rows: list[list[str]] = []
    carry = ""
    for pos, i in enumerate(body):
        ln = lines[i]
        nxt = lines[body[pos + 1]] if pos + 1 < len(body) else None
        label = _label_text(ln.label)
        if carry:
            label = f"{carry} {label}".strip()
            carry = ""
        if nxt is not None and _is_wrapped_label(ln, nxt, label_zone, lh):
            carry = label
            continue
        row = [label] + [""] * len(cols)
        for cell in ln.cells:
            slot = cell.col + 1
            row[slot] = f"{row[slot]} {cell.text}".strip()
        rows.append(row)
    if carry:
        rows.append([carry] + [""] * len(cols))

    header = _header_row(lines, headers, cols, zone_x0, label_left) if headers else []
    found = _units_in(header[0]) if header else None
    units = found[0] if found else ""
    grid = ([header] if header and any(header) else []) + rows
    header_rows = 1 if header and any(header) else 0
    grid, header_rows = _drop_empty_columns(grid, header_rows)
    if _is_page_index(grid, header_rows):
        return None

    cap_idx, title, cap_units = _caption(lines, top, lh)
    inner_units = next((f[0] for j in units_idx if (f := _units_in(lines[j].text))), "")
    table = TableData(rows=grid, header_rows=header_rows, title=title, units=cap_units or inner_units or units)
    region = sorted(set(headers) | set(body) | set(units_idx))
    word_idx = sorted(w.idx for j in region for w in lines[j].words)
    bx = [w for j in region for w in lines[j].words]
    bbox = (min(w.x0 for w in bx), min(w.y0 for w in bx), max(w.x1 for w in bx), max(w.y1 for w in bx))
    caption_idx = sorted(w.idx for j in cap_idx for w in lines[j].words)
    return DetectedTable(bbox=bbox, table=table, word_indices=word_idx, caption_word_indices=caption_idx)


def _is_page_index(grid: list[list[str]], header_rows: int) -> bool:
    """One headerless column of three or more small ascending integers is a contents list's page numbers."""
    if header_rows or not grid or len(grid[0]) != 2:
        return False
    values = [r[1] for r in grid if r[1]]
    if len(values) < 3 or not all(re.fullmatch(r"\d{1,3}", v) for v in values):
        return False
    pages = [int(v) for v in values]
    return pages == sorted(pages)


def _drop_empty_columns(grid: list[list[str]], header_rows: int) -> tuple[list[list[str]], int]:
    """Drop value columns with no data cell; their header text is dropped too (it is a span's spacer column)."""
    if not grid:
        return grid, header_rows
    width = max(len(r) for r in grid)
    grid = [r + [""] * (width - len(r)) for r in grid]
    data = grid[header_rows:]
    keep = [0] + [j for j in range(1, width) if any(r[j] for r in data)]
    return [[r[j] for j in keep] for r in grid], header_rows


# --- PyMuPDF table finder ------------------------------------------------------------------------------------

_FRAGMENT_PREFIX = re.compile(r"^(?:US)?[$€£¥]$")
_FRAGMENT_SUFFIX = re.compile(r"^(?:\)|%|\)%|%\))$")


def _words_in_rect(ws: list[_W], rect: Sequence[float], used: set[int]) -> str:
    x0, y0, x1, y1 = rect
    inside = []
    for w in ws:
        cx, cy = (w.x0 + w.x1) / 2, (w.y0 + w.y1) / 2
        if x0 <= cx <= x1 and y0 <= cy <= y1:
            inside.append(w)
            used.add(w.idx)
    inside.sort(key=lambda w: (round((w.y0 + w.y1) / 4), w.x0))  # reading order inside the cell
    return normalize_line(" ".join(w.text for w in inside))


def _is_numeric_cell(text: str) -> bool:
    toks = text.split()
    return bool(toks) and all(_kind(t) in _VALUE_KINDS for t in toks) and any(_kind(t) in (_NUM, _DASH) for t in toks)


def _grid_to_table(grid: list[list[str | None]], title: str = "") -> TableData:
    """Normalize a raw cell grid (None = covered by a span) into TableData like the geometric path produces."""
    width = max((len(r) for r in grid), default=0)
    rows = [list(r) + [""] * (width - len(r)) for r in grid]
    rows = [r for r in rows if any(c for c in r)]
    # Leading rows without numbers and with text beyond the label column are headers; label-only rows before
    # the first header row are caption lines.
    first_data = next(
        (k for k, r in enumerate(rows) if any(_is_numeric_cell(c or "") for c in r[1:])),
        len(rows),
    )
    header_lines: list[list[str | None]] = []
    caption: list[str] = [title] if title else []
    body_start = 0
    for k in range(first_data):
        r = rows[k]
        if any(c for c in r[1:]):
            header_lines.append(r)
            body_start = k + 1
        elif not header_lines:
            caption.append(r[0] or "")
            body_start = k + 1
        else:
            break
    body = rows[body_start:]
    body_s = [[normalize_line(c or "") for c in r] for r in body]
    # Cell fragments: "$" belongs to the next value, ")" and "%" to the previous one.
    for cells in body_s:
        for j in range(1, width):
            if _FRAGMENT_PREFIX.match(cells[j]):
                cells[j] = ""
            elif _FRAGMENT_SUFFIX.match(cells[j]):
                k = j - 1
                while k > 0 and not cells[k]:
                    k -= 1
                if k > 0:
                    cells[k] += cells[j]
                cells[j] = ""
            elif cells[j].startswith("$") and _is_numeric_cell(cells[j][1:]):
                cells[j] = cells[j][1:].strip()
    keep = [0] + [j for j in range(1, width) if any(r[j] for r in body_s)]
    out: list[list[str]] = []
    if header_lines:
        # A header cell spans the None cells to its right; it heads every kept column inside its span, or the
        # nearest kept column to its right when it sat over spacer/"$" columns only.
        parts: list[list[str]] = [[] for _ in keep]
        for r in header_lines:
            j = 0
            while j < width:
                end = j
                while end + 1 < width and r[end + 1] is None:
                    end += 1
                text = normalize_line(r[j] or "")
                if text:
                    hit = [pos for pos, c in enumerate(keep) if j <= c <= end]
                    if not hit:
                        right = [pos for pos, c in enumerate(keep) if c > end]
                        hit = right[:1] or [len(keep) - 1]
                    for pos in hit:
                        if text not in parts[pos]:
                            parts[pos].append(text)
                j = end + 1
        header = [" ".join(p) for p in parts]
        if any(header):
            out.append(header)
    out += [[r[j] for j in keep] for r in body_s]
    header_rows = 1 if out and header_lines and any(out[0]) else 0
    units = ""
    cap_title = []
    for t in caption:
        t = normalize_line(t)
        found = _units_in(t)
        if found and not units:
            units, whole_line = found
            if whole_line:
                continue
            m = _UNITS_RE.search(t)
            if m and t.count("(", 0, m.start()) == t.count(")", 0, m.start()):
                # PyMuPDF joins caption lines: "Balance Sheets $ in millions, except ..." -> title + units
                cut = m.start() - 2 if t[max(0, m.start() - 2) : m.start()] == "$ " else m.start()
                units, t = t[cut:].strip(), t[:cut].strip()
        if t:
            cap_title.append(t)
    if not units and header_rows:
        found = _units_in(out[0][0])
        units = found[0] if found else ""
    return TableData(rows=out, header_rows=header_rows, title=" ".join(cap_title), units=units)


def find_tables_pymupdf(
    page: pymupdf.Page,
    clip: pymupdf.Rect | Sequence[float] | None = None,
    words: Sequence[Word] | None = None,
    strategy: str = "lines",
) -> list[DetectedTable]:
    """Tables via PyMuPDF's ``page.find_tables`` (slow: ~300-600 ms per page on EDGAR filings).

    Cell text is re-read from ``words`` inside each cell's box, because ``Table.extract()`` drops spaces and
    reorders commas on these PDFs. ``strategy`` is passed through ("lines" uses the row shading/rules EDGAR
    renders; "text" aligns on words).
    """
    if words is None:
        words = page.get_text("words")
    ws = _to_words(words)
    try:
        finder = page.find_tables(clip=clip, strategy=strategy)
    except Exception as exc:  # PyMuPDF raises plain exceptions on odd vector graphics; treat as "no tables"
        logger.warning("find_tables failed on page {page}: {error}", page=page.number + 1, error=exc)
        return []
    out = []
    for tab in finder.tables:
        used: set[int] = set()
        grid: list[list[str | None]] = []
        for row in tab.rows:
            grid.append([None if cell is None else _words_in_rect(ws, cell, used) for cell in row.cells])
        title = ""
        cap_used: set[int] = set()
        hdr = tab.header
        if hdr is not None and hdr.external and hdr.bbox:
            cells = [None if c is None else _words_in_rect(ws, c, cap_used) for c in hdr.cells]
            if sum(1 for c in cells if c) <= 1:  # a caption line PyMuPDF took for a header
                title = next((c for c in cells if c), "")
            else:
                grid.insert(0, cells)
                used |= cap_used
                cap_used = set()
        table = _grid_to_table(grid, title)
        if not table.rows:
            continue
        if not any(_is_numeric_cell(c) for r in table.rows[table.header_rows :] for c in r[1:]):
            continue  # text layout boxes, not a financial table
        out.append(
            DetectedTable(
                bbox=tuple(tab.bbox),
                table=table,
                word_indices=sorted(used),
                caption_word_indices=sorted(cap_used),
                method="pymupdf",
            )
        )
    return out
