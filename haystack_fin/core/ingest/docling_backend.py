"""Filings read through Docling into the same ``ParsedFiling`` as the native parsers.

Docling is optional (``pip install haystack-fin[docling]``) and imported only when this backend is used. Its
``DoclingDocument`` maps onto the layout model: titles and section headers become heading elements (their level
as a font size, largest first, since headings are ranked by size downstream), paragraphs and list items text
elements, tables ``TableData`` grids (spans expanded, EDGAR's "$"/")" fragment cells merged and spacer columns
dropped exactly as the native HTML parser does; a grid with fewer than two columns or rows reads as text lines,
like the layout tables that hold "Item 7." next to its title), pictures image elements with their caption and box.

Pages. A PDF item's page is the first page of its provenance (``prov[0].page_no``, 1-based). Docling's HTML
backend has no pages, so the page breaks the native parser counts (CSS ``page-break-*`` markers,
``html.page_break_sides``) are written into the DOM as marker paragraphs before Docling reads it, and each item
takes the page of the markers before it, with the native rule that a break opens a page only once text follows
it: both backends number an EDGAR filing's pages alike, and every chunk keeps a page.

PDF needs Docling's layout and table-structure models. They are never downloaded here: Docling reads them from
``DOCLING_ARTIFACTS_PATH`` (or its model cache, ``~/.cache/docling/models``), and a missing folder fails the file
with one line before Docling starts. OCR stays off in Docling's PDF pipeline (its OCR models would be a second
download); scanned pages are the native backend's job.
"""

import importlib.util
import io
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import lxml.etree
import lxml.html

from haystack_fin.core.ingest.html import (
    PageCounter,
    clean_table_rows,
    fill_image_context,
    find_units,
    header_rows,
    is_data_table,
    is_name_only_alt,
    load_html_tree,
    page_break_sides,
    table_caption,
)
from haystack_fin.core.ingest.layout import Element, FigureKind, FilingParseError, ImageData, ParsedFiling, TableData
from haystack_fin.core.log import get_logger
from haystack_fin.core.text import normalize_line

if TYPE_CHECKING:  # docling is an optional dependency: its types are only named here
    from docling.document_converter import DocumentConverter
    from docling_core.types.doc.common.reference import ProvenanceItem
    from docling_core.types.doc.document import DoclingDocument
    from docling_core.types.doc.items.node import DocItem, NodeItem
    from docling_core.types.doc.items.table.table import TableItem

logger = get_logger(__name__)

__all__ = [
    "DOCLING_INSTALL_HINT",
    "PAGE_BREAK_MARKER",
    "DoclingReader",
    "DoclingUnavailableError",
    "docling_installed",
    "mark_page_breaks",
    "parsed_filing_from_docling",
]

DOCLING_INSTALL_HINT = "pip install haystack-fin[docling]"
# What Docling's PDF pipeline imports beyond the HTML/DOCX backends (docling-slim's format-pdf and models-local).
_PDF_MODULES = ("docling_parse", "pypdfium2", "docling_ibm_models", "torch", "torchvision")
_PDF_INSTALL_HINT = "pip install docling (the full package, with its PDF layout-model code)"
# A paragraph no filing contains; Docling keeps it as a text item of its own where a page ends.
PAGE_BREAK_MARKER = "HAYSTACKFIN-PAGE-BREAK-7c1e"
# Heading levels as font sizes: structure detection ranks heading styles by size. Body text keeps 0.0 ("unknown"),
# as native HTML text without a CSS size does.
_TITLE_SIZE = 18.0
_SECTION_SIZES = {1: 16.0, 2: 14.0, 3: 13.0}
_DEEPER_SECTION_SIZE = 12.0


class DoclingUnavailableError(ImportError):
    """Docling is not installed; the message is one line naming the extra."""


def docling_installed() -> bool:
    return importlib.util.find_spec("docling") is not None


def _require_docling() -> None:
    if not docling_installed():
        raise DoclingUnavailableError(
            f"the Docling backend needs Docling, which is not installed: {DOCLING_INSTALL_HINT}"
        )


def mark_page_breaks(root: lxml.html.HtmlElement) -> int:
    """Write a marker paragraph where each CSS page break sits (before/after its element); return how many.

    A break on a table row or cell puts the marker text inside the row's first (before) or last (after) cell: a
    paragraph between rows is not HTML. The mapping strips it from the cell and turns it into a row boundary.
    """
    marks = 0
    for el in list(root.iter()):
        if not isinstance(el.tag, str):
            continue
        before, after = page_break_sides(el)
        if not (before or after):
            continue
        cell_holder = el.tag in ("tr", "td", "th") or any(a.tag in ("tr", "td", "th") for a in el.iterancestors())
        for side, wanted in (("before", before), ("after", after)):
            if not wanted:
                continue
            if cell_holder:
                marks += 1
                cells = el.xpath(".//td|.//th") if el.tag == "tr" else [el]
                target = cells[0 if side == "before" else -1] if cells else el
                span = lxml.html.Element("span")
                span.text = f" {PAGE_BREAK_MARKER} "
                if side == "before":
                    span.tail, target.text = target.text, None  # the cell's own text stays after the marker
                    target.insert(0, span)
                else:
                    target.append(span)
                continue
            para = lxml.html.Element("p")
            para.text = PAGE_BREAK_MARKER
            if el.getparent() is None:  # the root itself: nothing to put beside it
                continue
            marks += 1
            if side == "before":
                el.addprevious(para)
            else:
                # addnext would move el's tail text after the marker; keep it on the element's side of the break
                para.tail, el.tail = el.tail, None
                el.addnext(para)
    return marks


@dataclass
class _Breaks:
    """Where page-break markers sat in an item's text: before it, inside it, after it."""

    before: bool = False
    inside: bool = False
    after: bool = False


@dataclass
class _Mapper:
    doc: "DoclingDocument"
    paged: bool  # items carry provenance (PDF); else pages come from break markers
    extract_images: bool
    figure_kind: FigureKind
    elements: list[Element] = field(default_factory=list)
    pages: PageCounter = field(default_factory=PageCounter)

    def _strip_markers(self, text: str) -> tuple[str, _Breaks]:
        """The text without break markers, and where they sat: before, inside or after the text."""
        if PAGE_BREAK_MARKER not in text:
            return normalize_line(text), _Breaks()
        parts = [normalize_line(p) for p in text.split(PAGE_BREAK_MARKER)]
        breaks = _Breaks(
            before=not parts[0], after=not parts[-1], inside=any(parts[1:-1]) or bool(parts[0] and parts[-1])
        )
        return normalize_line(" ".join(parts)), breaks

    def _open(self, breaks: "_Breaks") -> None:
        if breaks.before and not self.paged:
            self.pages.pending_break = True

    def _close(self, element: Element | None, breaks: "_Breaks") -> None:
        """After an element: a break inside it carries it onto the next page, one after it opens a page later."""
        if self.paged:
            return
        if breaks.inside and element is not None:
            self.pages.page += 1
            self.pages.page_has_text = True
            self.pages.pending_break = False
            element.pages.append(self.pages.page)
        if breaks.after or (breaks.inside and element is None):
            self.pages.pending_break = True

    def _place(self, prov: "list[ProvenanceItem]") -> tuple[int, list[int], tuple[float, float, float, float] | None]:
        if not self.paged:
            return (page := self.pages.text_page()), [page], None
        if not prov:  # a PDF item Docling could not place: the page of the element before it
            page = self.elements[-1].page if self.elements else 1
            return page, [page], None
        pages = sorted({p.page_no for p in prov})
        first = prov[0]
        bbox = None
        page_item = self.doc.pages.get(first.page_no)
        if page_item is not None:
            box = first.bbox.to_top_left_origin(page_item.size.height)
            bbox = (round(box.l, 2), round(box.t, 2), round(box.r, 2), round(box.b, 2))
        return first.page_no, [first.page_no, *(p for p in pages if p != first.page_no)], bbox

    def text(self, item: "NodeItem") -> None:
        from docling_core.types.doc.items.text import ListItem, SectionHeaderItem, TextItem, TitleItem

        if not isinstance(item, TextItem):
            return
        raw = item.text
        if not self.paged and normalize_line(raw) == PAGE_BREAK_MARKER:
            self.pages.pending_break = True
            return
        text, breaks = self._strip_markers(raw)
        if not text:
            self._close(None, breaks)
            return
        self._open(breaks)
        if isinstance(item, ListItem) and item.enumerated and item.marker and not text.startswith(item.marker):
            text = f"{item.marker} {text}"
        size, heading = 0.0, False
        if isinstance(item, TitleItem):
            size, heading = _TITLE_SIZE, True
        elif isinstance(item, SectionHeaderItem):
            size, heading = _SECTION_SIZES.get(item.level, _DEEPER_SECTION_SIZE), True
        bold = heading or bool(item.formatting is not None and item.formatting.bold)
        page, pages, bbox = self._place(item.prov)
        element = Element("text", text, page, pages=pages, bbox=bbox, font_size=size, bold=bold, is_heading=heading)
        self.elements.append(element)
        self._close(element, breaks)

    def table(self, item: "TableItem") -> None:
        raw_rows, flagged_header_rows, boundaries = self._table_rows(item)
        n_rows = len(raw_rows)
        breaks = _Breaks(
            before=0 in boundaries,
            inside=any(0 < b < n_rows for b in boundaries),
            after=any(b >= n_rows for b in boundaries),
        )
        rows = clean_table_rows(raw_rows)
        if not rows:
            self._close(None, breaks)
            return
        self._open(breaks)
        if not is_data_table(rows):
            # Layout table ("Item 2." | "Management's Discussion ..."): each row reads as one line, as natively.
            last = None
            for row in rows:
                line = normalize_line(" ".join(c for c in row if c))
                if line:
                    page, pages, bbox = self._place(item.prov)
                    last = Element(kind="text", text=line, page=page, pages=pages, bbox=bbox)
                    self.elements.append(last)
            self._close(last, breaks)
            return
        caption = normalize_line(item.caption_text(self.doc))
        title, units_hint = (caption, "") if caption else table_caption(self.elements)
        units = find_units([title, units_hint, *(" ".join(r) for r in rows[:3])])
        n_header = min(flagged_header_rows, len(rows) - 1) if flagged_header_rows else header_rows(rows)
        page, pages, bbox = self._place(item.prov)
        element = Element(
            kind="table",
            text="\n".join(" | ".join(r) for r in rows),
            page=page,
            pages=pages,
            bbox=bbox,
            table=TableData(rows=rows, header_rows=n_header, title=title, units=units),
        )
        self.elements.append(element)
        self._close(element, breaks)

    def _table_rows(self, item: "TableItem") -> tuple[list[list[tuple[str, int]]], int, list[int]]:
        """Rows of (text, colspan) in column order, how many leading rows Docling flagged as column headers, and
        the row boundaries where page breaks sit (0 = before the first row, the row count = after the last)."""
        data = item.data
        starts: dict[int, list[tuple[int, int, str, bool]]] = {}
        for cell in data.table_cells:
            starts.setdefault(cell.start_row_offset_idx, []).append(
                (cell.start_col_offset_idx, cell.end_col_offset_idx, cell.text, cell.column_header)
            )
        raw_rows: list[list[tuple[str, int]]] = []
        header_flags: list[bool] = []
        boundaries: list[int] = []
        for r in range(data.num_rows):
            row: list[tuple[str, int]] = []
            col = 0
            texts_flagged: list[bool] = []
            for start, end, text, is_header in sorted(starts.get(r, [])):
                if start > col:  # a column covered by a rowspan from above, or a missing cell
                    row.extend([("", 1)] * (start - col))
                clean, breaks = self._strip_markers(text)
                if breaks.before:
                    boundaries.append(r)
                if breaks.inside or breaks.after:
                    boundaries.append(r + 1)
                row.append((clean, max(1, end - start)))
                if clean:
                    texts_flagged.append(is_header)
                col = max(col, end)
            raw_rows.append(row)
            if texts_flagged:
                header_flags.append(all(texts_flagged))
        flagged = 0
        for is_header in header_flags:
            if not is_header:
                break
            flagged += 1
        return raw_rows, flagged, boundaries

    def picture(self, item: "NodeItem") -> None:
        from docling_core.types.doc.items.picture.picture import PictureItem

        if not isinstance(item, PictureItem) or not self.extract_images:
            return
        caption = normalize_line(item.caption_text(self.doc))
        if is_name_only_alt(caption):  # Docling takes an <img>'s alt as caption; a file name says nothing
            caption = ""
        page, pages, bbox = self._place(item.prov)
        if not caption and bbox is None:
            return  # an HTML logo or spacer: nothing to retrieve it by and nowhere to point at
        image = ImageData(self.figure_kind, caption=caption)
        self.elements.append(Element("image", image.embedding_text(), page, pages=pages, bbox=bbox, image=image))


def _items(doc: "DoclingDocument") -> Iterator["DocItem"]:
    """Body items in reading order, without what a table or picture already holds (its cells, its captions)."""
    from docling_core.types.doc.items.node import DocItem
    from docling_core.types.doc.items.picture.picture import PictureItem
    from docling_core.types.doc.items.table.table import TableItem

    holders: set[str] = set()  # tables and pictures met so far (parents come before their children)
    captions: set[str] = set()
    for item, _level in doc.iterate_items(with_groups=True, traverse_pictures=False):
        # Rich table cells hold their content as children (through groups): the table's grid already has it.
        if item.parent is not None and item.parent.cref in holders:
            holders.add(item.self_ref)
            continue
        if isinstance(item, TableItem | PictureItem):
            holders.add(item.self_ref)
            captions.update(ref.cref for ref in item.captions)
        if item.self_ref in captions or not isinstance(item, DocItem):
            continue  # a caption is the table's title or the figure's caption; groups hold no text of their own
        yield item


def parsed_filing_from_docling(
    doc: "DoclingDocument",
    source: str,
    *,
    meta: dict[str, object] | None = None,
    extract_images: bool = True,
) -> ParsedFiling:
    """Map a converted ``DoclingDocument`` onto layout elements with 1-based pages.

    Items with provenance (PDF) take their pages from it; a document without any (HTML, DOCX) is paged by the
    ``PAGE_BREAK_MARKER`` paragraphs that ``mark_page_breaks`` wrote into it, or is one page when there are none.
    Raises ``FilingParseError`` when Docling found no text.
    """
    from docling_core.types.doc.items.picture.picture import PictureItem
    from docling_core.types.doc.items.table.table import TableItem

    paged = bool(doc.pages)
    mapper = _Mapper(doc, paged=paged, extract_images=extract_images, figure_kind="raster" if paged else "html")
    for item in _items(doc):
        if isinstance(item, TableItem):
            mapper.table(item)
        elif isinstance(item, PictureItem):
            mapper.picture(item)
        else:
            mapper.text(item)
    elements = mapper.elements
    if not any(el.kind != "image" for el in elements):
        raise FilingParseError(source, "Docling found no text in it")
    fill_image_context(elements)
    n_pages = max([len(doc.pages), *(max(el.pages) for el in elements)]) if paged else mapper.pages.page
    lines: dict[int, list[str]] = {}
    for el in elements:
        if el.kind != "image":
            lines.setdefault(el.page, []).append(el.text)
    page_texts = ["\n".join(lines.get(p, [])) for p in range(1, n_pages + 1)]
    return ParsedFiling(
        source_path=source,
        n_pages=n_pages,
        elements=elements,
        page_texts=page_texts,
        meta={**(meta or {}), "backend": "docling"},
    )


def _pdf_artifacts_path() -> Path:
    """Where Docling's PDF models are: ``DOCLING_ARTIFACTS_PATH`` or Docling's own model cache."""
    from docling.datamodel.settings import settings

    configured = os.environ.get("DOCLING_ARTIFACTS_PATH") or settings.artifacts_path
    return Path(configured).expanduser() if configured else settings.cache_dir / "models"


def _missing_pdf_models(artifacts: Path) -> list[str]:
    """Model folders the PDF pipeline needs that ``artifacts`` lacks (Docling names them repo id with "--")."""
    from docling.datamodel.pipeline_options import LayoutObjectDetectionOptions

    layout_repo = LayoutObjectDetectionOptions().model_spec.repo_id
    # TableFormer's folder (docling.models.stages.table_structure.table_structure_model._model_repo_folder).
    needed = [layout_repo.replace("/", "--"), "docling-project--docling-models"]
    return [name for name in needed if not (artifacts / name).is_dir()]


class DoclingReader:
    """Converts HTML and PDF filings through Docling; converters are built on first use and reused."""

    def __init__(self, extract_images: bool = True) -> None:
        _require_docling()
        self.extract_images = extract_images
        self._html: DocumentConverter | None = None
        self._pdf: DocumentConverter | None = None

    def _html_converter(self) -> "DocumentConverter":
        if self._html is None:
            from docling.datamodel.backend_options import HTMLBackendOptions
            from docling.datamodel.base_models import InputFormat
            from docling.document_converter import DocumentConverter, HTMLFormatOption

            # No rendering (a browser) and no fetching (EDGAR <img> sources are remote). No furniture inference:
            # it would set aside everything before the first <h1>-<h6>, the cover page the metadata is read from.
            options = HTMLBackendOptions.model_validate(
                {"fetch_images": False, "render_page": False, "infer_furniture": False, "add_title": False}
            )
            self._html = DocumentConverter(
                allowed_formats=[InputFormat.HTML],
                format_options={InputFormat.HTML: HTMLFormatOption(backend_options=options)},
            )
        return self._html

    def _pdf_converter(self, source: str) -> "DocumentConverter":
        if self._pdf is None:
            missing = [m for m in _PDF_MODULES if importlib.util.find_spec(m) is None]
            if missing:
                raise FilingParseError(
                    source,
                    f"PDF through Docling needs its layout-model packages ({', '.join(missing)} missing): "
                    f"{_PDF_INSTALL_HINT}, or use backend='native'",
                )
            artifacts = _pdf_artifacts_path()
            absent = _missing_pdf_models(artifacts)
            if absent:
                raise FilingParseError(
                    source,
                    f"PDF through Docling needs its layout models, not found in {artifacts} ({', '.join(absent)}); "
                    "they are not downloaded at run time: fetch them with `docling-tools models download` where the "
                    "hub is reachable and set DOCLING_ARTIFACTS_PATH, or use backend='native'",
                )
            from docling.datamodel.base_models import InputFormat
            from docling.datamodel.pipeline_options import PdfPipelineOptions
            from docling.document_converter import DocumentConverter, PdfFormatOption

            # artifacts_path makes Docling resolve every model locally: a missing one raises, never downloads.
            options = PdfPipelineOptions(artifacts_path=artifacts, do_ocr=False, do_table_structure=True)
            self._pdf = DocumentConverter(
                allowed_formats=[InputFormat.PDF],
                format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)},
            )
        return self._pdf

    def _convert(self, converter: "DocumentConverter", source: str, name: str, data: bytes) -> "DoclingDocument":
        from docling.datamodel.base_models import ConversionStatus, DocumentStream

        result = converter.convert(DocumentStream(name=name, stream=io.BytesIO(data)), raises_on_error=False)
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            reasons = "; ".join(e.error_message for e in result.errors) or result.status.value
            raise FilingParseError(source, f"Docling could not convert it: {reasons.splitlines()[0]}")
        return result.document

    def parse_html(self, source: str, data: bytes) -> ParsedFiling:
        """An EDGAR HTML filing: validated, decoded and stripped of hidden parts as natively, paged by its breaks."""
        started = time.perf_counter()
        root, meta = load_html_tree(source, data)
        # Inline XBRL tags hold the facts inside running text: Docling reads an unknown inline tag as a separate
        # run and joins runs with a space ("NVIDIA CORP" + "ORATION" -> "NVIDIA CORP ORATION"); their facts are in
        # ``meta`` already.
        ix_tags = {el.tag for el in root.iter() if isinstance(el.tag, str) and el.tag.startswith("ix:")}
        if ix_tags:
            lxml.etree.strip_tags(root, *ix_tags)
        marks = mark_page_breaks(root)
        html = lxml.etree.tostring(root, method="html", encoding="utf-8")
        doc = self._convert(self._html_converter(), source, f"{Path(source).stem or 'filing'}.html", html)
        parsed = parsed_filing_from_docling(doc, source, meta=meta, extract_images=self.extract_images)
        logger.debug(
            "docling parsed {source}: {n_pages} pages ({marks} break markers), {n_elements} elements in {seconds:.2f}s",
            source=source,
            n_pages=parsed.n_pages,
            marks=marks,
            n_elements=len(parsed.elements),
            seconds=time.perf_counter() - started,
        )
        return parsed

    def parse_pdf(self, source: str, data: bytes) -> ParsedFiling:
        """A PDF through Docling's layout pipeline; fails with one line when its models are absent."""
        converter = self._pdf_converter(source)
        doc = self._convert(converter, source, f"{Path(source).stem or 'filing'}.pdf", data)
        return parsed_filing_from_docling(doc, source, meta={"format": "pdf"}, extract_images=self.extract_images)
