"""EDGAR (inline-XBRL) HTML filings to a ``ParsedFiling``.

EDGAR HTML has no pages, only CSS page-break markers left by the typesetting tool (Workiva, Donnelley, ...), so
physical pages are counted from those markers. Text comes out one element per block-level paragraph; tables
are rebuilt as clean grids because EDGAR tables put "$", ")" and "%" in their own cells between spacer columns.
Tables used only for layout ("Item 7." next to its title, cover-page checkboxes) come out as text lines so the
structure detector still sees the Item headings.
"""

import bisect
import re
import time
from dataclasses import dataclass
from pathlib import Path

import lxml.etree
import lxml.html

from haystack_fin.core.ingest.layout import Element, FilingParseError, ImageData, ParsedFiling, TableData
from haystack_fin.core.log import get_logger
from haystack_fin.core.text import normalize_line

logger = get_logger(__name__)

__all__ = [
    "PageCounter",
    "clean_table_rows",
    "fill_image_context",
    "find_units",
    "header_rows",
    "is_data_table",
    "is_name_only_alt",
    "load_html_tree",
    "merge_cell_fragments",
    "page_break_sides",
    "parse_html_filing",
    "table_caption",
]

# --- CSS / tag vocabulary -------------------------------------------------------------------------------------

_BLOCK_TAGS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "div", "dl", "dt"),
        *("fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header"),
        *("hr", "html", "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "tfoot", "th"),
        *("thead", "tr", "ul"),
    }
)
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BOLD_TAGS = frozenset({"b", "strong", "th"})
# ix:header holds the hidden XBRL contexts/facts; the rest never render.
_SKIP_TAGS = frozenset({"head", "script", "style", "noscript", "template", "title", "ix:header"})

_DISPLAY_NONE = re.compile(r"display\s*:\s*none", re.I)
# page-break-before:always, page-break-after:always, break-before:page (and spacing/case variants).
_PAGE_BREAK = re.compile(r"(?:page-)?break-(before|after)\s*:\s*(?:always|page)\b", re.I)
_FONT_SIZE = re.compile(r"font-size\s*:\s*(?:([\d.]+)\s*(pt|px|em|rem|%)?|([a-z-]+))", re.I)
_INLINE_GAP = re.compile(r"(?:padding|margin)-left\s*:(?!\s*0[a-z%]*\s*(?:;|$))", re.I)
_FONT_WEIGHT = re.compile(r"font-weight\s*:\s*([a-z0-9]+)", re.I)

_CSS_SIZE_KEYWORDS = {
    "xx-small": 7.0,
    "x-small": 7.5,
    "small": 10.0,
    "medium": 12.0,
    "large": 13.5,
    "x-large": 18.0,
    "xx-large": 24.0,
}
_FONT_TAG_SIZES = {1: 7.5, 2: 10.0, 3: 12.0, 4: 13.5, 5: 18.0, 6: 24.0, 7: 36.0}

# --- table vocabulary -----------------------------------------------------------------------------------------

_CURRENCY_FRAGMENTS = frozenset({"$", "US$", "€", "£", "¥"})
_CLOSING_FRAGMENT = re.compile(r"\)?%?\)?")  # ")", "%", ")%", "%)"
_DASHES = "-\u2012\u2013\u2014\u2212"
# A numeric data cell: "1,234", "(1,234)", "$ 3.5", "12%", "(4)%", "—". Each optional sign or "$" carries the spaces
# after it: written as ``\s*[-+]?\s*\$?\s*``, three adjacent ``\s*`` could split a run of spaces in cubically many
# ways before failing.
_NUMERIC_CELL = re.compile(
    rf"^[$€£¥(]*\s*(?:[{_DASHES}+]\s*)?(?:\$\s*)?(?:\d[\d,]*(?:\.\d+)?|\.\d+)\s*[)%]*\)?$|^[{_DASHES}]+$"
)
_YEAR_CELL = re.compile(r"^(?:fiscal\s+)?(?:19|20)\d\d$", re.I)
_CHECKBOX_CHARS = frozenset("\u2610\u2611\u2612\u25a0\u25a1\u25aa\u25ab\u2713\u2714\u2717\u2718")
_UNITS_PAREN = re.compile(
    r"\((?:[^()]{0,40}?\b)?in\s+(?:millions|thousands|billions)\b[^()]*(?:\([^()]*\)[^()]*)*\)", re.I
)
_UNITS_BARE = re.compile(r"^(?:\$|dollars|amounts|u\.s\. dollars)?\s*in\s+(?:millions|thousands|billions)\b.*$", re.I)
_FOOTER_LIKE = re.compile(r"^(?:page\s+)?\d{1,3}$|\|\s*\d{1,3}$|^table of contents$|^\(?continued\)?$", re.I)

_MAX_SPAN = 200  # cap hostile/garbled colspan values

# --- images ---------------------------------------------------------------------------------------------------

# <img> smaller than this (CSS px) on either side is a logo, an icon or a spacer, not a figure.
_MIN_IMAGE_PX = 100.0
_CSS_PX = re.compile(r"(?:^|;)\s*(width|height)\s*:\s*([\d.]+)\s*(px|pt)?", re.I)
# Alt text that says nothing: a file name or a number (Workiva writes "g66145g66i43.jpg", "2218").
_NAME_ONLY_ALT = re.compile(r"^[\w.\- ]*\.(?:jpe?g|png|gif|svg|bmp|tiff?)$|^[\W\d_]*$", re.I)
_PROSE_WORDS = 12

# --- input validation -----------------------------------------------------------------------------------------

_HTML_MARKUP = re.compile(rb"<\s*(?:html|body|div|p|table|span|font|br|h[1-6]|pre|td|tr)\b", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_DECLARED_CHARSET = re.compile(rb"""(?:encoding|charset)\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)


@dataclass
class PageCounter:
    """Physical pages of a document without pages, counted from its page-break markers."""

    page: int = 1
    pending_break: bool = False  # a break was seen; it opens a page when visible text follows
    page_has_text: bool = False

    def text_page(self) -> int:
        """The page new visible text lands on; a break only opens a page once text follows it (no blank pages)."""
        if self.pending_break and self.page_has_text:
            self.page += 1
            self.page_has_text = False
        self.pending_break = False
        self.page_has_text = True
        return self.page


@dataclass
class _Frag:
    """A run of text with the style it renders in and the page it lands on."""

    text: str
    size: float
    bold: bool
    heading: bool
    page: int


_Style = tuple[float, bool, bool]  # (font size in pt, 0.0 = unknown; bold; inside h1-h6)


@dataclass
class _Cell:
    text: str
    colspan: int
    rowspan: int


def parse_html_filing(source: str | Path, data: bytes | None = None, extract_images: bool = True) -> ParsedFiling:
    """Parse an EDGAR HTML/inline-XBRL filing into reading-order elements with physical page numbers.

    ``source`` names the file (read from disk unless ``data`` is given). Raises ``FilingParseError`` when the
    input is empty, binary, undecodable or not HTML. With ``extract_images``, each ``<img>`` of figure size
    becomes an image element with its alt text (when it says something), its caption (a ``<figcaption>``, or the
    title line just above it) and the paragraph around it.
    """
    source_name = str(source)
    started = time.perf_counter()
    root, meta = load_html_tree(source, data)
    body = root.find("body")
    walker = _Walker(extract_images)
    walker.run(body if body is not None else root)
    fill_image_context(walker.elements)
    if not walker.elements:
        raise FilingParseError(source_name, "HTML contains no visible text")

    n_pages = walker.pages.page
    page_texts = ["\n".join(walker.page_lines.get(p, [])) for p in range(1, n_pages + 1)]
    logger.debug(
        "parsed {source}: {n_pages} pages, {n_elements} elements in {seconds:.2f}s",
        source=source_name,
        n_pages=n_pages,
        n_elements=len(walker.elements),
        seconds=time.perf_counter() - started,
    )
    return ParsedFiling(
        source_path=source_name, n_pages=n_pages, elements=walker.elements, page_texts=page_texts, meta=meta
    )


def load_html_tree(source: str | Path, data: bytes | None = None) -> tuple[lxml.html.HtmlElement, dict[str, object]]:
    """The rendered DOM of an EDGAR HTML filing (hidden subtrees and ix:header dropped) and what its markup tells:
    ``{"format": "html", "title": ..., "dei": {dei fact: value}}``.

    ``source`` names the file (read from disk unless ``data`` is given). Raises ``FilingParseError`` when the
    input is empty, binary, undecodable or not HTML.
    """
    source_name = str(source)
    if data is None:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise FilingParseError(source_name, f"cannot read file: {exc}") from exc
    text = _decode(source_name, data)
    try:
        root = lxml.html.document_fromstring(text)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise FilingParseError(source_name, f"not parseable as HTML: {exc}") from exc

    meta: dict[str, object] = {"format": "html"}
    title = root.findtext(".//title")
    if title and normalize_line(title):
        meta["title"] = normalize_line(title)
    dei = _dei_facts(root)
    if dei:
        meta["dei"] = {name: values[0] for name, values in dei.items()}
        # Facts repeated per class (dei:TradingSymbol, dei:SecurityExchangeName): every value, in document order.
        meta["dei_all"] = {name: values for name, values in dei.items() if len(values) > 1}
    _drop_hidden(root)
    return root, meta


def page_break_sides(el: lxml.html.HtmlElement) -> tuple[bool, bool]:
    """(break before, break after): the CSS page-break markers an element carries."""
    style = el.get("style")
    if not style or "break" not in style.lower():
        return False, False
    sides = {m.group(1).lower() for m in _PAGE_BREAK.finditer(style)}
    return "before" in sides, "after" in sides


def _decode(source: str, data: bytes) -> str:
    """Bytes to text, refusing what is clearly not an HTML filing."""
    if not data or not data.strip():
        raise FilingParseError(source, "empty input")
    head = data[:65536]
    if head.lstrip().startswith(b"%PDF"):
        raise FilingParseError(source, "input is a PDF, not HTML")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise FilingParseError(source, f"undecodable UTF-16 input: {exc}") from exc
        if not _HTML_MARKUP.search(text[:65536].encode("utf-8", "ignore")):
            raise FilingParseError(source, "no HTML markup found")
        return _XML_DECL.sub("", text, count=1)
    if b"\x00" in head:
        raise FilingParseError(source, "binary data (NUL bytes), not HTML")
    if not _HTML_MARKUP.search(head) and not _HTML_MARKUP.search(data):
        raise FilingParseError(source, "no HTML markup found")

    # Strict UTF-8 first: it almost never decodes non-UTF-8 text, while EDGAR files declaring ASCII often hold UTF-8.
    encodings = ["utf-8-sig"]
    declared = _DECLARED_CHARSET.search(head[:4096])
    if declared:
        name = declared.group(1).decode("ascii", "ignore").lower()
        # Files declaring ASCII/Latin-1 regularly contain Windows-1252 quotes; cp1252 is a superset.
        if name not in {"ascii", "us-ascii", "iso-8859-1", "latin-1", "latin1", "windows-1252", "utf-8", "utf8"}:
            encodings.append(name)
    encodings.append("cp1252")
    for encoding in encodings:
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
        # lxml refuses str input that still carries an encoding declaration.
        return _XML_DECL.sub("", text, count=1)
    # A few stray bytes should not lose a whole filing; mostly-invalid input is not text at all.
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad > max(10, len(text) // 1000):
        raise FilingParseError(source, f"cannot decode input as text ({bad} invalid byte sequences)")
    logger.warning("{source}: {n} undecodable byte sequences replaced", source=source, n=bad)
    return _XML_DECL.sub("", text, count=1)


def _dei_facts(root: lxml.html.HtmlElement) -> dict[str, list[str]]:
    """Cover-page dei:* facts (document type, period, registrant...), including the hidden ones in ix:header: every
    value of each, in document order (a symbol and an exchange per registered class)."""
    facts: dict[str, list[str]] = {}
    for el in root.iter("ix:nonnumeric"):
        name = el.get("name") or ""
        if name.startswith("dei:"):
            value = normalize_line(el.text_content())
            if value:
                facts.setdefault(name[4:], []).append(value)
    return facts


def _drop_hidden(root: lxml.html.HtmlElement) -> None:
    """Remove non-rendered subtrees, keeping their tails (the visible text that follows them)."""
    hidden = []
    walk = lxml.etree.iterwalk(root, events=("start",))
    for _, el in walk:
        tag = el.tag
        if not isinstance(tag, str):  # comments, processing instructions
            continue
        style = el.get("style")
        if tag in _SKIP_TAGS or (style and _DISPLAY_NONE.search(style)):
            hidden.append(el)
            walk.skip_subtree()
    for el in hidden:
        if el.getparent() is not None:
            el.drop_tree()


def _style_of(el: lxml.html.HtmlElement, parent: _Style) -> _Style:
    """The (size, bold, heading) an element renders with, inheriting from its parent."""
    size, bold, heading = parent
    tag = el.tag
    if tag in _BOLD_TAGS:
        bold = True
    elif tag in _HEADING_TAGS:
        bold = heading = True
    elif tag == "font":
        size = _font_tag_size(el.get("size"), size)
    style = el.get("style")
    if style:
        m = _FONT_SIZE.search(style)
        if m:
            size = _css_size(m, size)
        m = _FONT_WEIGHT.search(style)
        if m:
            weight = m.group(1).lower()
            if weight.isdigit():
                bold = int(weight) >= 600
            elif weight in ("bold", "bolder"):
                bold = True
            elif weight in ("normal", "lighter"):
                bold = False
    return size, bold, heading


def _css_size(m: re.Match[str], parent: float) -> float:
    number, unit, keyword = m.group(1), (m.group(2) or "").lower(), m.group(3)
    if keyword:
        keyword = keyword.lower()
        if keyword == "smaller":
            return parent * 0.83
        if keyword == "larger":
            return parent * 1.2
        return _CSS_SIZE_KEYWORDS.get(keyword, parent)
    try:
        value = float(number)
    except ValueError:
        return parent
    if unit in ("pt", ""):
        return value
    if unit == "px":
        return value * 0.75
    if unit == "rem":
        return value * 12.0
    if unit == "em":
        return value * parent
    return value / 100.0 * parent  # %


def _font_tag_size(attr: str | None, parent: float) -> float:
    if not attr:
        return parent
    attr = attr.strip()
    try:
        if attr[:1] in "+-":
            base = next((k for k, v in _FONT_TAG_SIZES.items() if v == parent), 3)
            return _FONT_TAG_SIZES[min(7, max(1, base + int(attr)))]
        return _FONT_TAG_SIZES[min(7, max(1, int(attr)))]
    except (ValueError, KeyError):
        return parent


def _span(value: str | None) -> int:
    if not value:
        return 1
    m = re.match(r"\s*(\d+)", value)
    return min(_MAX_SPAN, max(1, int(m.group(1)))) if m else 1


class _Walker:
    """Walks the DOM once in document order, tracking page breaks, styles and the current paragraph."""

    def __init__(self, extract_images: bool = True) -> None:
        self.extract_images = extract_images
        self.elements: list[Element] = []
        self.page_lines: dict[int, list[str]] = {}
        self.pages = PageCounter()
        self._buffer: list[_Frag] = []
        self._br_pending = False

    # -- pages ---------------------------------------------------------------------------------------------------

    # -- main walk -----------------------------------------------------------------------------------------------

    def run(self, root: lxml.html.HtmlElement) -> None:
        stack: list[_Style] = [(0.0, False, False)]
        walk = lxml.etree.iterwalk(root, events=("start", "end"))
        for event, el in walk:
            tag = el.tag
            if not isinstance(tag, str):  # comment / PI: only its tail is content
                if event == "end" and el.tail:
                    self._add(el.tail, stack[-1])
                continue
            if event == "start":
                style = _style_of(el, stack[-1])
                stack.append(style)
                before, _ = page_break_sides(el)
                if before:
                    self._flush()
                    self.pages.pending_break = True
                if tag == "table":
                    self._flush()
                    self._table(el, style)
                    walk.skip_subtree()
                    continue
                if tag == "img":
                    if self.extract_images:
                        self._image(el)
                elif tag in _BLOCK_TAGS:
                    self._flush()
                elif tag == "br":
                    self._br()
                elif _has_inline_gap(el):
                    self._add(" ", style)
                if el.text:
                    self._add(el.text, style)
            else:
                if tag in _BLOCK_TAGS:
                    self._flush()
                _, after = page_break_sides(el)
                if after:
                    self._flush()
                    self.pages.pending_break = True
                stack.pop()
                if el.tail:
                    self._add(el.tail, stack[-1])
        self._flush()

    def _br(self) -> None:
        # One <br> is a line wrap inside the paragraph; an empty line (two in a row) separates paragraphs.
        if self._br_pending:
            self._flush()
        else:
            self._br_pending = True
            if self._buffer:
                self._buffer.append(_Frag(" ", 0.0, False, False, self.pages.page))

    def _add(self, text: str, style: _Style) -> None:
        if text.isspace():
            if self._buffer:
                self._buffer.append(_Frag(" ", 0.0, False, False, self.pages.page))
            return
        self._br_pending = False
        self._buffer.append(_Frag(text, style[0], style[1], style[2], self.pages.text_page()))

    def _flush(self) -> None:
        frags, self._buffer = self._buffer, []
        self._br_pending = False
        text = normalize_line("".join(f.text for f in frags))
        if not text:
            return
        size, bold, heading = _dominant_style(frags)
        pages = self._record_lines(frags)
        self.elements.append(
            Element(
                kind="text",
                text=text,
                page=pages[0],
                pages=pages,
                font_size=round(size, 2),
                bold=bold,
                is_heading=heading,
            )
        )

    def _record_lines(self, frags: list[_Frag]) -> list[int]:
        """Add the text to ``page_lines`` split where it crosses pages; return the pages covered."""
        pages: list[int] = []
        chunks: dict[int, list[str]] = {}
        for f in frags:
            if not f.text.isspace():
                if f.page not in chunks:
                    pages.append(f.page)
                chunks.setdefault(f.page, []).append(f.text)
            elif chunks:
                chunks[pages[-1]].append(" ")
        for page in pages:
            line = normalize_line("".join(chunks[page]))
            if line:
                self.page_lines.setdefault(page, []).append(line)
        return pages

    # -- images --------------------------------------------------------------------------------------------------

    def _image(self, img: lxml.html.HtmlElement) -> None:
        sizes = {
            m.group(1).lower(): float(m.group(2)) * (4 / 3 if (m.group(3) or "").lower() == "pt" else 1.0)
            for m in _CSS_PX.finditer(img.get("style") or "")
        }
        for side in ("width", "height"):
            attr = (img.get(side) or "").strip().removesuffix("px")
            if side not in sizes and attr.replace(".", "", 1).isdigit():
                sizes[side] = float(attr)
        if any(v < _MIN_IMAGE_PX for v in sizes.values()):
            return
        self._flush()
        alt = normalize_line(img.get("alt") or "")
        if is_name_only_alt(alt):
            alt = ""
        caption = ""
        for parent in img.iterancestors("figure"):
            found = parent.find(".//figcaption")
            if found is not None:
                caption = normalize_line(found.text_content())
            break
        context = ""
        if not caption:
            for el in reversed(self.elements[-4:]):
                if el.kind != "text" or _FOOTER_LIKE.search(el.text):
                    continue
                n_words = len(el.text.split())
                if n_words >= _PROSE_WORDS and not el.is_heading:
                    context = context or el.text
                    continue
                caption = el.text if n_words <= 15 else ""
                break
        image = ImageData("html", caption=caption, context=context, alt=alt)
        self.elements.append(Element("image", image.embedding_text(), self.pages.page, image=image))

    # -- tables --------------------------------------------------------------------------------------------------

    def _table(self, table: lxml.html.HtmlElement, style: _Style) -> None:
        raw: list[list[_Cell]] = []
        row_frags: list[list[_Frag]] = []
        row_pages: list[int] = []
        for tr in table.xpath("./tr|./*/tr"):
            tr_style = _style_of(tr, style)
            before, after = page_break_sides(tr)
            if before:
                self.pages.pending_break = True
            cells: list[_Cell] = []
            frags: list[_Frag] = []
            first_page = 0
            for td in tr:
                if td.tag not in ("td", "th"):
                    continue
                cell_frags = self._cell_fragments(td, tr_style)
                if cell_frags and not first_page:
                    first_page = cell_frags[0].page
                frags.extend(cell_frags)
                frags.append(_Frag(" ", 0.0, False, False, self.pages.page))
                text = normalize_line("".join(f.text for f in cell_frags))
                cells.append(_Cell(text, _span(td.get("colspan")), _span(td.get("rowspan"))))
            if after:
                self.pages.pending_break = True
            raw.append(cells)
            row_frags.append(frags)
            row_pages.append(first_page)
        if not any(p for p in row_pages):
            return  # decoration-only table (rules, spacers)

        rows, kept = _grid(raw)
        if is_data_table(rows):
            size = _dominant_style([f for frags in row_frags for f in frags])[0]
            self._emit_table(rows, [row_pages[i] for i in kept], size)
        else:
            # Layout table: each row reads as one line of text (e.g. "Item 7." | "Management's Discussion ...").
            for frags in row_frags:
                self._buffer = frags
                self._flush()

    def _cell_fragments(self, cell: lxml.html.HtmlElement, base: _Style) -> list[_Frag]:
        """Text runs of one cell; blocks and <br> inside a cell become spaces, nested tables are flattened."""
        frags: list[_Frag] = []
        stack: list[_Style] = [base]

        def add(text: str | None, style: _Style) -> None:
            if not text:
                return
            if text.isspace():
                if frags:
                    frags.append(_Frag(" ", 0.0, False, False, self.pages.page))
                return
            frags.append(_Frag(text, style[0], style[1], style[2], self.pages.text_page()))

        for event, el in lxml.etree.iterwalk(cell, events=("start", "end")):
            if not isinstance(el.tag, str):
                if event == "end" and el is not cell:
                    add(el.tail, stack[-1])
                continue
            if event == "start":
                style = _style_of(el, stack[-1])
                stack.append(style)
                if el.tag == "br" or (el.tag in _BLOCK_TAGS and frags) or _has_inline_gap(el):
                    add(" ", style)
                add(el.text, style)
            else:
                if el.tag in _BLOCK_TAGS:
                    add(" ", stack[-1])
                stack.pop()
                if el is not cell:
                    add(el.tail, stack[-1])
        return frags

    def _emit_table(self, rows: list[list[str]], pages_by_row: list[int], font_size: float) -> None:
        title, units_hint = table_caption(self.elements)
        units = find_units([title, units_hint, *(" ".join(r) for r in rows[:3])])
        table = TableData(rows=rows, header_rows=header_rows(rows), title=title, units=units)
        rendered = [" | ".join(r) for r in rows]
        pages: list[int] = []
        for line, page in zip(rendered, pages_by_row, strict=True):
            page = page or (pages[-1] if pages else self.pages.page)
            if page not in pages:
                pages.append(page)
            self.page_lines.setdefault(page, []).append(line)
        self.elements.append(
            Element(
                kind="table",
                text="\n".join(rendered),
                page=pages[0],
                pages=pages,
                font_size=round(font_size, 2),
                table=table,
            )
        )


def table_caption(elements: list[Element]) -> tuple[str, str]:
    """(title, units line) of a table from the few text elements just above it (the last of ``elements``)."""
    units_line = ""
    for el in reversed(elements[-4:]):
        if el.kind != "text":
            break
        text = el.text
        has_units = bool(find_units([text]))
        if has_units and not units_line:
            units_line = text
        if has_units and (text.startswith("(") or _UNITS_BARE.match(text)):
            continue  # a pure units line sits between caption and table
        if _FOOTER_LIKE.search(text):
            continue  # page footer/header between a caption and a table continued on the next page
        n_words = len(text.split())
        if n_words > 20 or (text.endswith(".") and n_words > 12) or not any(c.isalpha() for c in text):
            break
        return text, units_line
    return "", units_line


def fill_image_context(elements: list[Element]) -> None:
    """An image with no paragraph before it takes the paragraph just after it as its context."""
    for k, el in enumerate(elements):
        if el.image is None or el.image.context:
            continue
        for nxt in elements[k + 1 : k + 4]:
            if nxt.kind == "text" and len(nxt.text.split()) >= _PROSE_WORDS and not nxt.is_heading:
                el.image.context = nxt.text
                break


def is_name_only_alt(alt: str) -> bool:
    """Alt text that says nothing about the image: a file name or a number."""
    return bool(_NAME_ONLY_ALT.match(alt))


def _has_inline_gap(el: lxml.html.HtmlElement) -> bool:
    """Workiva renders the gap after list numbers ("2." then "Financial ...") as span padding, not a space."""
    style = el.get("style")
    return bool(style) and _INLINE_GAP.search(style) is not None


def _dominant_style(frags: list[_Frag]) -> _Style:
    """Font size covering most characters; bold/heading only when they cover nearly all of them."""
    by_size: dict[float, int] = {}
    total = bold = heading = 0
    for f in frags:
        n = len(f.text) - f.text.count(" ")
        if n <= 0 or f.text.isspace():
            continue
        total += n
        by_size[f.size] = by_size.get(f.size, 0) + n
        if f.bold:
            bold += n
        if f.heading:
            heading += n
    if not total:
        return 0.0, False, False
    size = max(by_size.items(), key=lambda kv: kv[1])[0]
    return size, bold >= 0.9 * total, heading >= 0.5 * total


# --- table cleaning -------------------------------------------------------------------------------------------


def merge_cell_fragments(cells: list[str]) -> list[str]:
    """Fold EDGAR's split-off "$", "(", ")" and "%" cells into the value cell next to them.

    Returns a list of the same length (positions are kept for column alignment); merged fragment cells become
    "". Currency signs are dropped so amounts read as plain numbers: ["$", "(1,234", ")"] -> ["", "(1,234)", ""].
    """
    out = [c.strip() for c in cells]
    # The nearest non-empty cell on the left, kept as we go: cells left of i only grow once they are past, so it
    # stays valid. Scanning back for it from every closing fragment was quadratic in a row of emptied fragments.
    last: int | None = None
    for i, text in enumerate(out):
        if not text:
            continue
        if text in _CURRENCY_FRAGMENTS:
            out[i] = ""
        elif text == "(":
            j = next((k for k in range(i + 1, len(out)) if out[k]), None)
            if j is not None and (out[j][0].isdigit() or out[j][0] in _DASHES or out[j][0] in "$."):
                out[j] = "(" + out[j]
                out[i] = ""
        elif _CLOSING_FRAGMENT.fullmatch(text):
            j = last
            if j is not None and _accepts_closing(out[j]):
                out[j] += text
                out[i] = ""
        if out[i]:
            last = i
    return out


def _accepts_closing(value: str) -> bool:
    # The last-character tests first: counting parentheses reads the whole cell, which grows with every fragment.
    return value[-1].isdigit() or value[-1] in ")%" + _DASHES or value.count("(") > value.count(")")


def clean_table_rows(raw: list[list[tuple[str, int]]]) -> list[list[str]]:
    """Rectangular grid from rows of (text, colspan) cells: spans expanded, fragments merged, blanks dropped."""
    rows, _ = _grid([[_Cell(normalize_line(t), _span(str(s)), 1) for t, s in row] for row in raw])
    return rows


class _ColumnCounts:
    """Per-column counts of a table, stored over the columns that have any, with range queries over a span."""

    def __init__(self, counts: dict[int, int]) -> None:
        self._cols = sorted(c for c, n in counts.items() if n)
        self._counts = [counts[c] for c in self._cols]

    def _window(self, start: int, span: int) -> tuple[int, int]:
        return bisect.bisect_left(self._cols, start), bisect.bisect_left(self._cols, start + span)

    def any_in(self, start: int, span: int) -> bool:
        lo, hi = self._window(start, span)
        return lo < hi

    def target(self, start: int, span: int) -> int:
        """The column of a cell spanning ``span`` from ``start``: the first one with the highest count, else start."""
        if span == 1 or start == 0:  # a span from the left edge is a row label ("ASSETS:"), not a column head
            return start
        lo, hi = self._window(start, span)
        if lo == hi:
            return start
        window = self._counts[lo:hi]
        return self._cols[lo + window.index(max(window))]


def _grid(raw: list[list[_Cell]]) -> tuple[list[list[str]], list[int]]:
    """Clean grid plus, for each kept row, its index in ``raw``.

    A spanning cell's text goes to the column inside its span where single-column values sit (the "2024" header
    spanning "$" | value | ")" lands over the value column), so headers and amounts line up once spacer
    columns are dropped.
    """
    placed: list[list[tuple[int, int, str]]] = []  # per row: (start column, span, merged text)
    carry: dict[int, int] = {}  # column -> rows still covered by a rowspan from above
    for cells in raw:
        busy = {c for c, n in carry.items() if n > 0}
        carry = {c: n - 1 for c, n in carry.items() if n > 1}
        col = 0
        row: list[tuple[int, int, str]] = []
        for cell in cells:
            while col in busy:
                col += 1
            row.append((col, cell.colspan, cell.text))
            if cell.rowspan > 1:
                for c in range(col, col + cell.colspan):
                    carry[c] = max(carry.get(c, 0), cell.rowspan - 1)
            col += cell.colspan
        merged = merge_cell_fragments([t for _, _, t in row])
        placed.append([(start, span, text) for (start, span, _), text in zip(row, merged, strict=True)])

    # Sparse from here on: a row of 100 cells of colspan 200 spans 20,000 columns, and a dense row (or count
    # array) over them for every row of a long table is cells x 200 of work and memory. Rows map column -> text
    # and counts keep only the columns that hold something.
    counts: dict[int, int] = {}
    for row in placed:
        for start, span, text in row:
            if text and span == 1:
                counts[start] = counts.get(start, 0) + 1
    used = _ColumnCounts(counts)

    # Second pass: spans with no single-column value under them follow where other spans landed.
    first = [[(used.target(s, n), t) for s, n, t in row if t] for row in placed]
    counts2: dict[int, int] = {}
    for row_targets in first:
        for col, _ in row_targets:
            counts2[col] = counts2.get(col, 0) + 1
    landed = _ColumnCounts(counts2)
    grid: list[dict[int, str]] = []
    filled: set[int] = set()
    for row in placed:
        line: dict[int, str] = {}
        for start, span, text in row:
            if not text:
                continue
            if span == 1 or start == 0 or used.any_in(start, span):
                col = used.target(start, span)
            else:
                col = landed.target(start, span)
            here = line.get(col, "")
            line[col] = f"{here} {text}".strip() if here else text
        filled.update(c for c, value in line.items() if value)
        grid.append(line)

    keep_cols = sorted(filled)
    rows: list[list[str]] = []
    kept: list[int] = []
    for i, line in enumerate(grid):
        kept_cells = [line.get(c, "") for c in keep_cols]
        if any(kept_cells):
            rows.append(kept_cells)
            kept.append(i)
    return rows, kept


def _is_numeric(cell: str) -> bool:
    return bool(_NUMERIC_CELL.match(cell)) and not _YEAR_CELL.match(cell)


def is_data_table(rows: list[list[str]]) -> bool:
    """Data tables have 2+ rows and 2+ non-empty columns; checkbox grids on the cover are layout."""
    if len(rows) < 2:
        return False
    if len(rows[0]) < 2:
        return False  # one column left after dropping spacers is a list of lines, not a grid
    cells = [c for r in rows for c in r if c]
    if any(ch in _CHECKBOX_CHARS for c in cells for ch in c):
        return any(_is_numeric(c) for c in cells)
    return True  # 2+ rows and 2+ non-empty columns (empty columns were dropped)


def header_rows(rows: list[list[str]]) -> int:
    """Leading rows without numeric data (years and dates allowed) that label the value columns."""
    n = 0
    for row in rows:
        if any(_is_numeric(c) for c in row if c):
            break
        labels_columns = any(row[1:]) or not row[0] or find_units([row[0]])
        if not labels_columns:
            break  # a row-label-only line ("Current assets:") starts the body
        n += 1
    if n == len(rows):  # all-text table: only its first row is a header
        return 1 if rows and any(rows[0][1:]) else 0
    return n


def find_units(texts: list[str]) -> str:
    for text in texts:
        if not text:
            continue
        m = _UNITS_PAREN.search(text)
        if m:
            return normalize_line(m.group(0))
        if len(text.split()) <= 12:
            m = _UNITS_BARE.match(text.strip(" |"))
            if m:
                return normalize_line(m.group(0))
    return ""
