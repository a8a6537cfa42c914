"""Layout elements: what a converter reads off a filing, before any SEC structure is applied.

PDF and HTML parsers both produce a ``ParsedFiling``: an ordered list of ``Element`` (text lines/paragraphs,
tables with cells, images with captions) tagged with 1-based physical page numbers. FilingSplitter consumes only
this model, so both formats share one structure detector. Elements travel between Haystack components as plain
dicts (``to_dict``/``from_dict``) inside Document meta.
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ElementKind = Literal["text", "table", "image"]


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
class Element:
    """One layout element in reading order.

    ``text`` is the plain text (for tables a plain-text rendering, for images the caption/nearby text).
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

    def __post_init__(self) -> None:
        if not self.pages:
            self.pages = [self.page]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.ocr:  # text-layer elements (nearly all) travel without the OCR fields
            for key in ("ocr", "ocr_confidence"):
                data.pop(key)
        if self.bbox is not None:
            data["bbox"] = list(self.bbox)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Element":
        data = dict(data)
        table = data.pop("table", None)
        bbox = data.pop("bbox", None)
        return cls(
            **data,
            bbox=tuple(bbox) if bbox is not None else None,
            table=TableData(**table) if table else None,
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


class FilingParseError(ValueError):
    """A filing could not be read. The message names the file and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem
