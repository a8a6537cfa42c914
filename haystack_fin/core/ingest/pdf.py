"""Read a filing PDF with PyMuPDF into layout elements (text paragraphs, tables, images) in reading order.

Costs measured here drive the design: ``get_text("dict")`` is ~3 ms per page, PyMuPDF's ``find_tables`` 200-1,000 ms
per page (it runs the pymupdf-layout ONNX model; without it, row shading splits EDGAR tables into one-row tables).
Tables are therefore found by the fast geometric detector in ``pdf_tables`` on every page; by default
(``table_finder="hybrid"``) PyMuPDF's finder is a second opinion on pages where row-like lines were left outside
every detected table. ``"pymupdf"`` runs PyMuPDF's finder alone on every page the cheap pre-check flags (~30% of
a 10-K's pages, which alone would more than double indexing time).

A page without a text layer (a scan: almost no characters, a large image) is read by OCR (``core.ingest.ocr``, the
optional ``[ocr]`` extra) into the same word boxes and lines, so Items, headings and tables are found on it as on
a text page; its elements carry ``ocr=True`` and the recognition confidence.
"""

import bisect
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pymupdf

from haystack_fin.core.ingest import ocr as ocr_engine
from haystack_fin.core.ingest.figures import (
    VectorChart,
    chart_tables,
    figure_caption,
    figure_context,
    find_vector_charts,
)
from haystack_fin.core.ingest.layout import Element, FilingParseError, ImageData, ParsedFiling
from haystack_fin.core.ingest.pdf_tables import (
    DetectedTable,
    Word,
    find_table_regions,
    find_tables_checked,
    find_tables_pymupdf,
    page_may_have_table,
)
from haystack_fin.core.log import get_logger
from haystack_fin.core.text import normalize_line

logger = get_logger(__name__)

TableFinder = Literal["hybrid", "layout", "pymupdf", "none"]

# Images smaller than this (points) are logos, rules and check boxes, not figures worth a chunk.
_MIN_IMAGE_SIDE = 72.0
# A page's drawings are read for charts only when it has this many short lines with a digit outside its tables (a
# chart's values, years, percentages): 687 of the 3,222 dev pages, holding all 14 of their charts. Reading the
# drawings costs 5-9 ms a page here, more than finding the charts in them.
_CHART_MIN_NUMERIC_LINES = 3
# Lines of prose each side of a gutter before a page is read as two columns.
_COLUMN_MIN_LINES = 5
_SENTENCE_END = re.compile(r"[.:;!?)\]”\"]$")
# Item and Part headings stay in the running text even when the table detector takes them for a table caption.
_STRUCTURE_LINE = re.compile(r"^\s*(PART\s+[IV]+\b|I\s?T\s?E\s?M\s*\d)", re.IGNORECASE)


@dataclass
class _Line:
    text: str
    bbox: tuple[float, float, float, float]
    size: float
    bold: bool
    confidence: float | None = None  # OCR'd lines: mean recognition confidence


def _page_lines(page: pymupdf.Page) -> list[_Line]:
    """Visual lines of a page in reading order (see ``_merge_lines``)."""
    return _merge_lines(_raw_lines(page), page.rect.width)


def _split_lines(page: pymupdf.Page) -> tuple[list[_Line], list[_Line]]:
    """PyMuPDF's lines of a page and the visual lines merged from them."""
    raw = _raw_lines(page)
    return raw, _merge_lines(list(raw), page.rect.width)


def _raw_lines(page: pymupdf.Page) -> list[_Line]:
    """PyMuPDF's text lines of a page, before lines sharing a baseline are merged."""
    raw: list[_Line] = []
    data = page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)
    for block in data["blocks"]:
        if block.get("type") != 0:
            continue
        for line in block["lines"]:
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = normalize_line(" ".join(s["text"] for s in spans))
            if not text:
                continue
            n_chars = sum(len(s["text"].strip()) for s in spans)
            bold_chars = sum(len(s["text"].strip()) for s in spans if s["flags"] & 16 or "bold" in s["font"].lower())
            size = max(spans, key=lambda s: len(s["text"]))["size"]
            raw.append(_Line(text, tuple(line["bbox"]), round(size, 1), bold_chars >= 0.8 * n_chars))
    return raw


def _ocr_lines(result: ocr_engine.OcrPage, width: float) -> list[_Line]:
    """Visual lines of an OCR'd page: each recognized line box is a PyMuPDF line, merged the same way."""
    return _merge_lines(
        [_Line(normalize_line(ln.text), ln.bbox, ln.size, ln.bold, ln.confidence) for ln in result.lines if ln.text],
        width,
    )


def _mean_confidence(lines: list[_Line]) -> float | None:
    parts = [(ln.confidence, len(ln.text)) for ln in lines if ln.confidence is not None]
    total = sum(n for _, n in parts)
    return sum(c * n for c, n in parts) / total if total else None


def _gutter(raw: list[_Line], width: float) -> float | None:
    """The x of the gap between two columns of running text, or None for a one-column page.

    A gutter is a vertical strip in the middle 40% of the page that (almost) no line crosses, with prose on both
    sides: at least ``_COLUMN_MIN_LINES`` lines of several words each side whose median width is a quarter of the
    page or more. A table's value columns are narrow, so a table page is not taken for two columns; a full-width
    heading or footer crossing the strip is allowed (up to a tenth of the prose lines).
    """
    prose = [ln for ln in raw if len(ln.text.split()) >= 4]
    if len(prose) < 2 * _COLUMN_MIN_LINES or width <= 0:
        return None
    starts = sorted(ln.bbox[0] for ln in raw)
    ends = sorted(ln.bbox[2] for ln in raw)
    best: tuple[int, float] | None = None
    x = 0.3 * width
    while x <= 0.7 * width:  # ~1 pt steps over a fixed strip: bisect keeps each step logarithmic in the lines
        crossing = bisect.bisect_left(starts, x) - bisect.bisect_right(ends, x)
        if best is None or crossing < best[0]:
            best = (crossing, x)
        x += 1.0
    if best is None or best[0] > 0.1 * len(prose):
        return None
    gutter = best[1]
    left = [ln.bbox[2] - ln.bbox[0] for ln in prose if ln.bbox[2] <= gutter]
    right = [ln.bbox[2] - ln.bbox[0] for ln in prose if ln.bbox[0] >= gutter]
    if min(len(left), len(right)) < _COLUMN_MIN_LINES:
        return None
    if min(statistics.median(left), statistics.median(right)) < 0.25 * width:
        return None
    return gutter


def _merge_lines(raw: list[_Line], width: float = 0.0) -> list[_Line]:
    """Visual lines in reading order.

    On a two-column page (see ``_gutter``) each band between lines that cross the gutter is read left column
    first, then right column, so that lines of the two columns sharing a baseline are not glued together.
    """
    gutter = _gutter(raw, width)
    if gutter is None:
        return _merge_baselines(raw)
    raw.sort(key=lambda ln: (round(ln.bbox[1]), ln.bbox[0]))
    out: list[_Line] = []
    left: list[_Line] = []
    right: list[_Line] = []
    for ln in raw:
        if ln.bbox[2] <= gutter:
            left.append(ln)
        elif ln.bbox[0] >= gutter:
            right.append(ln)
        else:  # a full-width line ends the band above it
            out += _merge_baselines(left) + _merge_baselines(right)
            left, right = [], []
            out.append(ln)
    return out + _merge_baselines(left) + _merge_baselines(right)


def _merge_baselines(raw: list[_Line]) -> list[_Line]:
    """Lines sharing a baseline are merged left to right (a table row's label and values become one line)."""
    raw.sort(key=lambda ln: (round(ln.bbox[1]), ln.bbox[0]))
    merged: list[_Line] = []
    for ln in raw:
        prev = merged[-1] if merged else None
        if prev is not None:
            height = min(prev.bbox[3] - prev.bbox[1], ln.bbox[3] - ln.bbox[1])
            overlap = min(prev.bbox[3], ln.bbox[3]) - max(prev.bbox[1], ln.bbox[1])
            if height > 0 and overlap > 0.5 * height and ln.bbox[0] >= prev.bbox[0]:
                merged[-1] = _Line(
                    f"{prev.text} {ln.text}",
                    (
                        prev.bbox[0],
                        min(prev.bbox[1], ln.bbox[1]),
                        max(prev.bbox[2], ln.bbox[2]),
                        max(prev.bbox[3], ln.bbox[3]),
                    ),
                    max(prev.size, ln.size),
                    prev.bold and ln.bold,
                    _mean_confidence([prev, ln]),
                )
                continue
        merged.append(ln)
    return merged


def _inside(bbox: tuple[float, float, float, float], region: tuple[float, float, float, float]) -> bool:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    return region[0] - 2 <= cx <= region[2] + 2 and region[1] - 2 <= cy <= region[3] + 2


def _words_bbox(words: Sequence[Word], indices: list[int]) -> tuple[float, float, float, float] | None:
    if not indices:
        return None
    boxes = [words[i][:4] for i in indices]
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _all_caps(text: str) -> bool | None:
    """Whether a line is written in capitals (None when it has too few letters to tell: "2.", "(a)")."""
    letters = [c for c in text if c.isalpha()]
    return sum(c.isupper() for c in letters) >= 0.8 * len(letters) if len(letters) >= 4 else None


def _is_heading_line(line: _Line, body_size: float) -> bool:
    words = line.text.split()
    if len(words) > 20 or (_SENTENCE_END.search(line.text) and len(words) > 12):
        return False
    return line.bold or bool(_all_caps(line.text)) or line.size >= body_size + 1.5


def _case_changes(prev: _Line, line: _Line) -> bool:
    """A heading keeps its case over a line wrap: capitals followed by mixed case (or the reverse) is a heading
    and the sub-heading under it ("2. ACQUISITIONS" / "Fiscal 2017 Acquisitions")."""
    a, b = _all_caps(prev.text), _all_caps(line.text)
    return a is not None and b is not None and a != b


def _paragraphs(lines: list[_Line], page_no: int, body_size: float, ocr: bool = False) -> list[Element]:
    """Group visual lines into paragraphs; heading-looking lines stand alone so structure detection sees them."""
    elements: list[Element] = []
    current: list[_Line] = []

    def flush() -> None:
        if not current:
            return
        text = " ".join(ln.text for ln in current)
        # Hyphenated line breaks ("operat- ing") are rejoined.
        text = re.sub(r"(\w)- (\w)", r"\1\2", text) if "- " in text else text
        x0 = min(ln.bbox[0] for ln in current)
        bbox = (x0, current[0].bbox[1], max(ln.bbox[2] for ln in current), current[-1].bbox[3])
        bold = all(ln.bold for ln in current)
        # A heading may wrap over several lines ("Risks related to ... results of" / "operations.").
        heading = all(_is_heading_line(ln, body_size) for ln in current) and len(text.split()) <= 40
        elements.append(
            Element(
                "text",
                text,
                page_no,
                bbox=bbox,
                font_size=current[0].size,
                bold=bold,
                is_heading=heading,
                ocr=ocr,
                ocr_confidence=_mean_confidence(current) if ocr else None,
            )
        )
        current.clear()

    for ln in lines:
        if current:
            prev = current[-1]
            gap = ln.bbox[1] - prev.bbox[3]
            line_h = max(prev.bbox[3] - prev.bbox[1], 1.0)
            heading = _is_heading_line(ln, body_size)
            new_para = (
                gap > 0.6 * line_h
                or abs(ln.size - prev.size) > 0.6
                or ln.bold != prev.bold
                or heading != _is_heading_line(prev, body_size)
                # past the line above, a heading line follows a heading line
                or (heading and (ln.text[:4].lower() in ("item", "part") or _case_changes(prev, ln)))
                or (_SENTENCE_END.search(prev.text) is not None and ln.bbox[0] > prev.bbox[0] + 8)
            )
            if new_para:
                flush()
        current.append(ln)
    flush()
    return elements


def _may_have_chart(raw: list[_Line], tables: list[DetectedTable]) -> bool:
    count = 0
    for ln in raw:
        short_number = len(ln.text.split()) <= 4 and any(c.isdigit() for c in ln.text)
        if short_number and not any(_inside(ln.bbox, t.bbox) for t in tables):
            count += 1
            if count >= _CHART_MIN_NUMERIC_LINES:
                return True
    return False


def _image_elements(
    page: pymupdf.Page,
    page_no: int,
    lines: list[_Line],
    body_size: float,
    paragraphs: list[Element],
    ocr: bool,
) -> list[Element]:
    """Raster images of a page: caption, introducing paragraph, the text lines printed over the image, and the
    image's own text by OCR when the ``[ocr]`` extra is installed (figures of ``FIGURE_MIN_SIDE`` or more a side,
    bounded in time per figure)."""
    boxes = []
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        if x1 - x0 >= _MIN_IMAGE_SIDE and y1 - y0 >= _MIN_IMAGE_SIDE:
            boxes.append((float(x0), float(y0), float(x1), float(y1)))
    out: list[Element] = []
    for box in boxes:
        others = [b for b in boxes if b != box]
        inside = [ln.text for ln in lines if _inside(ln.bbox, box)]
        image = ImageData(
            "raster",
            caption=figure_caption(box, lines, body_size, stop=others).text,
            context=_context(box, paragraphs),
            labels=inside,
        )
        if ocr and min(box[2] - box[0], box[3] - box[1]) >= ocr_engine.FIGURE_MIN_SIDE and ocr_engine.ocr_available():
            read = ocr_engine.ocr_figure(page, box)
            image.ocr_text, image.ocr_confidence = read.text, read.confidence
        out.append(Element("image", image.embedding_text(), page_no, bbox=box, image=image))
    return out


def _context(box: tuple[float, float, float, float], paragraphs: list[Element]) -> str:
    return figure_context(box, [(p.bbox, p.text) for p in paragraphs if p.bbox is not None and not p.is_heading])


def _chart_elements(
    charts: list[VectorChart], raw: list[_Line], page_no: int, body_size: float, paragraphs: list[Element]
) -> list[Element]:
    """One image element per vector chart; a chart with no caption of its own takes the caption of the chart
    beside it on its row or just above it (a panel of small charts under one title)."""
    labels = {i for c in charts for i in c.label_indices}
    captions = [
        figure_caption(c.bbox, raw, body_size, skip=labels, stop=[o.bbox for o in charts if o is not c]) for c in charts
    ]
    for k, chart in enumerate(charts):
        if captions[k].text:
            continue
        # Nearest captioned chart on the same row, else the nearest captioned one above, whose caption lies above
        # this chart too (a panel's title, not the neighbour's own title).
        best: tuple[int, float, int] | None = None
        for j, other in enumerate(charts):
            if j == k or not captions[j].text or captions[j].bottom > chart.bbox[1] + 2:
                continue
            same_row = other.bbox[1] < chart.bbox[3] and chart.bbox[1] < other.bbox[3]
            gap = chart.bbox[1] - other.bbox[3]
            if same_row or 0 <= gap <= 48.0:
                rank = (0 if same_row else 1, abs(other.bbox[0] - chart.bbox[0]) if same_row else gap, j)
                best = rank if best is None or rank < best else best
        if best is not None:
            captions[k] = captions[best[2]]
    out: list[Element] = []
    for chart, caption in zip(charts, captions, strict=True):
        image = ImageData(
            "chart",
            chart=chart.kind,
            caption=caption.text,
            context=_context(chart.bbox, paragraphs),
            labels=[raw[i].text for i in chart.label_indices],
        )
        out.append(Element("image", image.embedding_text(), page_no, bbox=chart.bbox, image=image))
    return out


def _body_font_size(lines: list[_Line]) -> float:
    counts: dict[float, int] = {}
    for ln in lines:
        counts[ln.size] = counts.get(ln.size, 0) + len(ln.text)
    return max(counts, key=lambda s: counts[s]) if counts else 10.0


def _open(source: str | Path, data: bytes | None) -> pymupdf.Document:
    name = str(source)
    try:
        doc = pymupdf.open(stream=data, filetype="pdf") if data is not None else pymupdf.open(name, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types (FileDataError, RuntimeError, ...) for bad files.
        raise FilingParseError(name, f"not a readable PDF ({exc})") from exc
    if doc.needs_pass:
        raise FilingParseError(name, "the PDF is encrypted and needs a password")
    if doc.page_count == 0:
        raise FilingParseError(name, "damaged or empty PDF: no pages could be read")
    return doc


def parse_pdf_filing(
    source: str | Path,
    data: bytes | None = None,
    table_finder: TableFinder = "hybrid",
    extract_images: bool = True,
    ocr: bool = True,
    ocr_dpi: int = ocr_engine.DEFAULT_DPI,
    ocr_figures: bool = True,
) -> ParsedFiling:
    """Parse a filing PDF into a ``ParsedFiling``.

    :param source: path of the PDF (also the name used in error messages and provenance).
    :param data: the PDF bytes, when already in memory.
    :param table_finder: "hybrid" (default: the geometric detector, and PyMuPDF's table finder on pages where
        row-like lines lie outside every detected table), "layout" (the geometric detector alone), "pymupdf"
        (PyMuPDF's table finder alone, on pages that the cheap pre-check flags) or "none".
    :param extract_images: emit image elements: raster images and vector charts (``core.ingest.figures``), with
        bbox, caption, introducing paragraph and labels; a chart's words then leave the running text.
    :param ocr: OCR pages without a text layer, and the text inside raster figures (needs the ``[ocr]`` extra;
        without it such pages are left out and listed in ``ParsedFiling.skipped_pages``, and figures go without OCR
        text); when False scans are left empty.
    :param ocr_dpi: rendering resolution for OCR (lower for a page too large for ``ocr.PAGE_MAX_PIXELS``).
    :param ocr_figures: also OCR raster figures (when ``ocr`` is on and the extra is installed; 2-6 s a figure).
    :raises FilingParseError: the file is not a PDF, is encrypted, is empty or has no extractable text (every page
        without a text layer and OCR not installed included).
    """
    name = str(source)
    doc = _open(source, data)
    elements: list[Element] = []
    page_texts: list[str] = []
    try:
        page_lines: list[list[_Line]] = []
        page_raw: list[list[_Line]] = []
        ocr_pages: dict[int, ocr_engine.OcrPage] = {}
        skipped: list[int] = []
        for index, page in enumerate(doc.pages()):
            raw, lines = _split_lines(page)
            if ocr and ocr_engine.needs_ocr(page, sum(len(ln.text) - ln.text.count(" ") for ln in lines)):
                try:
                    result = ocr_engine.ocr_page(page, dpi=ocr_dpi)
                except ocr_engine.OcrUnavailableError:
                    # One scanned exhibit page must not cost the whole report: the page is left out and reported
                    # (the converter's caller warns, the filing node lists it).
                    skipped.append(index + 1)
                    page_lines.append([])
                    page_raw.append([])
                    continue
                ocr_pages[index] = result
                # The few characters of a scan's text layer (a stamp, a page number) are in the image too.
                lines = _ocr_lines(result, page.rect.width)
                raw = []
            page_lines.append(lines)
            page_raw.append(raw)
        if ocr_pages:
            logger.info("{source}: {n} page(s) read by OCR", source=name, n=len(ocr_pages))
        if skipped:
            logger.warning("{source}: {note}", source=name, note=skipped_pages_note(skipped))
        body_size = _body_font_size([ln for lines in page_lines for ln in lines])
        for index, page in enumerate(doc.pages()):
            page_no = index + 1
            lines = page_lines[index]
            page_texts.append("\n".join(ln.text for ln in lines))
            if page_no in skipped:
                continue  # left out whole: no figure chunk for the scan's page image either
            tables: list[DetectedTable] = []
            words: list[Word] = []
            scanned = ocr_pages.get(index)
            if scanned is not None and table_finder != "none" and lines:
                # The geometric detector on OCR word boxes; PyMuPDF's finder reads the page's own text and
                # drawings, which a scan does not have.
                words = list(scanned.words)
                tables = find_table_regions(page, words)
            elif table_finder != "none" and lines:
                words = page.get_text("words")
                if table_finder == "hybrid":
                    tables = find_tables_checked(page, words)
                elif table_finder == "layout":
                    tables = find_table_regions(page, words)
                elif page_may_have_table(words):
                    tables = find_tables_pymupdf(page, words=words)
            charts: list[VectorChart] = []
            if extract_images and scanned is None and lines and _may_have_chart(page_raw[index], tables):
                raw = page_raw[index]
                charts = find_vector_charts(page.get_cdrawings(), raw, tuple(page.rect), [t.bbox for t in tables])
                if charts:
                    # A column chart's row of value labels can pass for a table; the chart's words leave the text.
                    dropped = set(chart_tables([t.bbox for t in tables], charts))
                    tables = [t for k, t in enumerate(tables) if k not in dropped]
                    labels = {i for c in charts for i in c.label_indices}
                    lines = _merge_lines([ln for i, ln in enumerate(raw) if i not in labels], page.rect.width)
            # Table bodies and their caption/units lines live in the table chunk, not in the running text.
            regions = [t.bbox for t in tables] + [_words_bbox(words, t.caption_word_indices) for t in tables]
            text_lines = [
                ln
                for ln in lines
                if _STRUCTURE_LINE.match(ln.text) or not any(r and _inside(ln.bbox, r) for r in regions)
            ]
            page_elements = _paragraphs(text_lines, page_no, body_size, ocr=scanned is not None)
            paragraphs = list(page_elements)
            for table in tables:
                rows_text = "\n".join(" | ".join(c for c in row if c) for row in table.table.rows)
                confidence = None
                if scanned is not None:
                    inside = [ln for ln in lines if _inside(ln.bbox, table.bbox)]
                    confidence = _mean_confidence(inside) or scanned.confidence
                page_elements.append(
                    Element(
                        "table",
                        rows_text,
                        page_no,
                        bbox=table.bbox,
                        table=table.table,
                        ocr=scanned is not None,
                        ocr_confidence=confidence,
                    )
                )
            # A scan's only image is the page itself: no figure chunk for it.
            if extract_images and scanned is None:
                page_elements.extend(_chart_elements(charts, page_raw[index], page_no, body_size, paragraphs))
                page_elements.extend(_image_elements(page, page_no, lines, body_size, paragraphs, ocr and ocr_figures))
            page_elements.sort(key=lambda e: (e.bbox[1] if e.bbox else 0.0, e.bbox[0] if e.bbox else 0.0))
            elements.extend(page_elements)
        n_pages = doc.page_count
        pdf_meta = {k: v for k, v in (doc.metadata or {}).items() if v}
    finally:
        doc.close()
    if not any(e.kind == "text" and e.text for e in elements) and not any(e.kind == "table" for e in elements):
        if skipped:
            reason = f"no extractable text: no page has a text layer; {ocr_engine.OCR_EXTRA_HINT}"
        elif ocr:
            reason = "no extractable text (empty PDF, or scanned pages where OCR found no text)"
        else:
            reason = "no extractable text (scanned or empty PDF; OCR is off)"
        raise FilingParseError(name, reason)
    logger.debug(
        "Parsed {source}: {n_pages} pages, {n_elements} elements",
        source=name,
        n_pages=n_pages,
        n_elements=len(elements),
    )
    return ParsedFiling(
        source_path=name,
        n_pages=n_pages,
        elements=elements,
        page_texts=page_texts,
        meta=pdf_meta,
        skipped_pages=skipped,
    )


def page_ranges(pages: Sequence[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3-5, 9"``."""
    spans: list[list[int]] = []
    for page in sorted(set(pages)):
        if spans and spans[-1][1] == page - 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def skipped_pages_note(pages: Sequence[int]) -> str:
    """The one-line warning for pages left out for want of OCR, naming them and the extra."""
    one = len(pages) == 1
    what = f"page {page_ranges(pages)} has" if one else f"pages {page_ranges(pages)} have"
    return f"{what} no text layer and {'was' if one else 'were'} left out; {ocr_engine.OCR_EXTRA_HINT}"


def cover_page_texts(
    source: str | Path, data: bytes | None = None, max_pages: int = 15
) -> tuple[list[str], dict[str, Any]]:
    """The text of the first ``max_pages`` pages, line by line as ``parse_pdf_filing`` reads a page with a text
    layer (no OCR, no tables: milliseconds a page), and the PDF's metadata: enough to tell which filing it is
    (``filing_meta.detect_filing_meta``) without parsing it.

    :raises FilingParseError: as ``parse_pdf_filing`` for a file that is not a readable PDF.
    """
    doc = _open(source, data)
    try:
        texts = ["\n".join(ln.text for ln in _page_lines(doc[i])) for i in range(min(max_pages, doc.page_count))]
        meta = {k: v for k, v in (doc.metadata or {}).items() if v}
    finally:
        doc.close()
    return texts, meta
