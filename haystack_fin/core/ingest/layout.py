"""Layout elements: what a converter reads off a filing, before any SEC structure is applied.

PDF and HTML parsers both produce a ``ParsedFiling``: an ordered list of ``Element`` (text lines/paragraphs,
tables with cells, images with captions) tagged with 1-based physical page numbers. FilingSplitter consumes only
this model, so both formats share one structure detector. Elements travel between Haystack components as plain
dicts (``to_dict``/``from_dict``) inside Document meta.
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ElementKind = Literal["text", "table", "image"]
FigureKind = Literal["raster", "chart", "html"]


@dataclass
class TableData:
    """A table as a rectangular grid of cell strings.

    ``header_rows`` leading rows are column headers (periods, column titles); the rest are data rows whose first
    cell is usually the row label. ``title`` is the caption/heading line found above the table, ``units`` the
    unit statement ("in millions, except per share amounts") when one was seen.
    """

    rows: list[list[str]]
    header_rows: int = 0
    title: str = ""
    units: str = ""

    @property
    def n_cols(self) -> int:
        return max((len(r) for r in self.rows), default=0)


@dataclass
class ImageData:
    """What is known of a figure (an image element): where it came from and the text that describes it.

    ``kind`` is "raster" (a PDF image), "chart" (a PDF chart drawn with vector paths; ``chart`` is "column",
    "bar" or "pie") or "html" (an ``<img>``). ``caption`` is the nearest caption-like line, ``context`` the
    paragraph that introduces the figure, ``labels`` the chart's own text lines in reading order (titles, axis,
    series and data labels), ``alt`` an HTML image's alt text when it says something, ``ocr_text`` the text OCR
    read inside a raster image (``ocr_confidence`` its mean confidence).
    """

    kind: FigureKind
    chart: str = ""
    caption: str = ""
    context: str = ""
    labels: list[str] = field(default_factory=list)
    alt: str = ""
    ocr_text: str = ""
    ocr_confidence: float | None = None

    def embedding_text(self) -> str:
        """Caption, labels, alt text and OCR text: what a figure's chunk holds and is embedded by."""
        parts = [self.caption, " ".join(self.labels), self.alt, self.ocr_text]
        return "\n".join(p for p in parts if p)


@dataclass
class Element:
    """One layout element in reading order.

    ``text`` is the plain text (for tables a plain-text rendering, for images ``image.embedding_text()``).
    ``page`` is the 1-based physical page where it starts; ``pages`` lists every page it covers (a table or a
    paragraph joined across a page break covers two). ``font_size`` and ``bold`` drive heading detection;
    ``is_heading`` is set by parsers that know it (HTML heading tags, styled titles). ``ocr`` marks an element read by
    OCR from a scanned page and ``ocr_confidence`` is the mean recognition confidence of its characters (0-1).
    """

    kind: ElementKind
    text: str
    page: int
    pages: list[int] = field(default_factory=list)
    bbox: tuple[float, float, float, float] | None = None
    font_size: float = 0.0
    bold: bool = False
    is_heading: bool = False
    table: TableData | None = None
    ocr: bool = False
    ocr_confidence: float | None = None
    image: ImageData | None = None

    def __post_init__(self) -> None:
        if not self.pages:
            self.pages = [self.page]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.ocr:  # text-layer elements (nearly all) travel without the OCR fields
            for key in ("ocr", "ocr_confidence"):
                data.pop(key)
        if self.image is None:
            data.pop("image")
        if self.bbox is not None:
            data["bbox"] = list(self.bbox)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Element":
        data = dict(data)
        table = data.pop("table", None)
        bbox = data.pop("bbox", None)
        image = data.pop("image", None)
        return cls(
            **data,
            bbox=tuple(bbox) if bbox is not None else None,
            table=TableData(**table) if table else None,
            image=ImageData(**image) if image else None,
        )


@dataclass
class ParsedFiling:
    """A whole filing as parsed from its source file.

    ``page_texts`` holds the raw text of each page (index 0 = page 1); the cover-page metadata detector and
    header/footer removal read it. ``meta`` holds what the parser could tell (e.g. PDF metadata title).
    """

    source_path: str
    n_pages: int
    elements: list[Element]
    page_texts: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # Pages without a text layer that were left out because OCR is not installed (1-based).
    skipped_pages: list[int] = field(default_factory=list)


class FilingParseError(ValueError):
    """A filing could not be read. The message names the file and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem
