import hashlib
import io
from pathlib import Path
from typing import Any, Literal, get_args

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ByteStream

from haystack_fin.core import schema
from haystack_fin.core.ingest.docling_backend import DoclingReader
from haystack_fin.core.ingest.filing_identity import (
    DEFAULT_MAX_DECOMPRESSED_MB,
    FilingIdentity,
    accession_in_header,
    accession_in_path,
    cover_filing_id,
    filing_id_for,
    is_submission,
    read_gzip,
    sha256_of,
    submission_document,
)
from haystack_fin.core.ingest.filing_meta import detect_filing_meta
from haystack_fin.core.ingest.html import parse_html_filing
from haystack_fin.core.ingest.layout import FilingParseError, ParsedFiling
from haystack_fin.core.ingest.pdf import TableFinder, cover_page_texts, parse_pdf_filing
from haystack_fin.core.text import normalize_whitespace
from haystack_fin.core.validation import check_int

logger = logging.getLogger(__name__)

_FORMATS = ("pdf", "html")
Backend = Literal["native", "docling"]
_BACKENDS: tuple[str, ...] = get_args(Backend)
_TABLE_FINDERS: tuple[str, ...] = get_args(TableFinder)

__all__ = ["FilingConverter", "filing_id_for", "sniff_format"]


def sniff_format(name: str, data: bytes) -> str:
    """ "pdf" or "html" from the bytes (the extension can lie: a text file named .pdf must be caught)."""
    head = data[:1024].lstrip().lower()
    if data[:5] == b"%PDF-" or b"%pdf-" in head[:1024]:
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html", b"<?xml")) or b"<html" in head:
        return "html"
    suffix = Path(name).suffix.lower()
    if suffix == ".pdf":
        return "pdf"  # parse_pdf_filing reports why it is not a readable PDF
    if suffix in (".htm", ".html", ".xhtml"):
        return "html"
    raise FilingParseError(
        name, f"unsupported file type (expected a PDF or an EDGAR HTML filing, got {suffix or 'no extension'})"
    )


@component
class FilingConverter:
    """Converts SEC filings (PDF via PyMuPDF, EDGAR inline-XBRL HTML via lxml) into one Document per filing.

    ``backend="docling"`` reads them through Docling instead (the ``[docling]`` extra), into the same layout
    elements: HTML without any model, PDF only where Docling's layout models are installed
    (``DOCLING_ARTIFACTS_PATH``); they are never downloaded, and without them each PDF fails with one line.

    Inputs: PDF, EDGAR HTML (``.htm``/``.html``, optionally gzipped, decompressed as a stream up to
    ``max_decompressed_mb``) and EDGAR full submissions (``full-submission.txt``: the primary document is read).

    The Document's content is the filing's text with pages separated by form feeds ("\\f"), so plain Haystack
    splitters work on it too. Its meta carries the filing metadata detected from the cover page (``company``,
    ``form``, ``period``, ``fiscal_year``, ``fiscal_quarter``, ``period_end``, ``ticker``), ``n_pages``,
    ``source_path``, ``source_sha256`` (of the file's bytes), ``skipped_pages`` (pages without a text layer left
    out because OCR is not installed) and, under ``filing_elements``, the layout elements (paragraphs, tables with
    cells, images with bbox and caption, 1-based pages) that ``FilingSplitter`` turns into Item-aware chunks.
    Caller metadata overrides detected values.

    The default ``filing_id`` comes from the filing, not its file name (``identify``,
    ``core/ingest/filing_identity.py``): the accession number the file, its folder or its SEC header carries, else
    company + form + period from the cover (``best-buy_10-Q_FY2024-Q2``), else the file stem.

    A file that cannot be read does not stop the batch: it is skipped, logged, and reported in ``failures`` as
    ``{"source": ..., "error": ...}`` with a one-line reason that names the file.

    Usage example:
    ```python
    from haystack_fin.components.filing_converter import FilingConverter

    converter = FilingConverter()
    result = converter.run(sources=["tests/fixtures/bestbuy-10q-2023-07-29.pdf"], meta={"company": "Best Buy"})
    filing = result["documents"][0]
    print(filing.meta["form"], filing.meta["period"], filing.meta["n_pages"])
    ```
    """

    def __init__(
        self,
        formats: list[str] | None = None,
        table_finder: TableFinder = "hybrid",
        extract_images: bool = True,
        ocr: bool = True,
        ocr_figures: bool = True,
        backend: Backend = "native",
        max_decompressed_mb: int = DEFAULT_MAX_DECOMPRESSED_MB,
    ):
        """
        :param formats: accepted formats, any of "pdf" and "html" (default both).
        :param table_finder: PDF tables: "hybrid" (default: the fast geometric detector, with PyMuPDF's table
            finder as a second opinion on the few pages where row-like lines lie outside every detected table),
            "layout" (the geometric detector alone), "pymupdf" (PyMuPDF's table finder on every page that may hold
            a table; several times slower) or "none".
        :param extract_images: emit image elements: PDF raster images and vector charts (bbox, caption, introducing
            paragraph, chart labels, whose words then leave the running text) and HTML ``<img>`` (alt, caption,
            paragraph).
        :param ocr: OCR PDF pages without a text layer (scans; needs the ``[ocr]`` extra, without which such pages
            are left out, listed in ``skipped_pages`` and logged in one warning naming them and the extra; a file
            with no text at all then fails). False leaves those pages empty.
        :param ocr_figures: with ``ocr``, also read the text inside PDF raster figures (chart images: axis labels,
            legends) when the ``[ocr]`` extra is installed; 2-6 s per figure, bounded per figure.
        :param backend: "native" (default: PyMuPDF and lxml) or "docling" (Docling's converters, for users with
            Docling's layout models: complex decks and earnings releases; needs ``pip install haystack-fin[docling]``,
            imported by ``warm_up`` or the first run). The Docling backend leaves ``table_finder``, ``ocr`` and
            ``ocr_figures`` unused: Docling finds PDF tables with its own model and runs without OCR here.
        :param max_decompressed_mb: a gzipped file that decompresses to more than this many MB fails with one line
            (it is decompressed as a stream, never whole).
        """
        formats = list(formats) if formats is not None else list(_FORMATS)
        unknown = [f for f in formats if f not in _FORMATS]
        if unknown or not formats:
            raise ValueError(f"formats must be a non-empty subset of {_FORMATS}, got {formats}")
        if table_finder not in _TABLE_FINDERS:
            raise ValueError(f"table_finder must be one of {_TABLE_FINDERS}, got {table_finder!r}")
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        check_int("max_decompressed_mb", max_decompressed_mb)
        self.formats = formats
        self.table_finder = table_finder
        self.extract_images = extract_images
        self.ocr = ocr
        self.ocr_figures = ocr_figures
        self.backend = backend
        self.max_decompressed_mb = max_decompressed_mb
        self._docling: DoclingReader | None = None

    def warm_up(self) -> None:
        """With ``backend="docling"``, import Docling (once). Raises ImportError, one line naming the extra, when
        Docling is not installed."""
        if self.backend == "docling" and self._docling is None:
            self._docling = DoclingReader(extract_images=self.extract_images)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            formats=self.formats,
            table_finder=self.table_finder,
            extract_images=self.extract_images,
            ocr=self.ocr,
            ocr_figures=self.ocr_figures,
            backend=self.backend,
            max_decompressed_mb=self.max_decompressed_mb,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FilingConverter":
        return default_from_dict(cls, data)

    @staticmethod
    def _name(source: str | Path | ByteStream) -> str:
        if isinstance(source, ByteStream):
            return str(source.meta.get("file_path") or source.meta.get("source_path") or "<bytes>")
        return str(source)

    def _read(self, source: str | Path | ByteStream) -> tuple[str, bytes, str]:
        """(name, the filing's bytes (a gzipped file decompressed), SHA-256 of the source's own bytes)."""
        name = self._name(source)
        cap = self.max_decompressed_mb << 20
        if isinstance(source, ByteStream):
            raw = source.data
            sha = hashlib.sha256(raw).hexdigest()
            data = read_gzip(name, io.BytesIO(raw), cap) if name.lower().endswith(".gz") else raw
            return name, data, sha
        path = Path(source)
        try:
            if path.suffix.lower() == ".gz":
                if path.stat().st_size == 0:
                    raise FilingParseError(name, "the file is empty")
                with path.open("rb") as f:
                    data = read_gzip(name, f, cap)
                return name, data, sha256_of(path)
            data = path.read_bytes()
        except OSError as exc:
            raise FilingParseError(name, f"cannot read file ({exc.strerror or exc})") from exc
        if not data:
            raise FilingParseError(name, "the file is empty")
        return name, data, hashlib.sha256(data).hexdigest()

    def parse(self, source: str | Path | ByteStream) -> ParsedFiling:
        """Parse one source into layout elements. Raises FilingParseError naming the file."""
        name, data, _ = self._read(source)
        return self._parse(name, data)

    def _parse(self, name: str, data: bytes) -> ParsedFiling:
        if is_submission(data):
            fmt, data = "html", submission_document(name, data)
        else:
            fmt = sniff_format(name[:-3] if name.lower().endswith(".gz") else name, data)
        if fmt not in self.formats:
            raise FilingParseError(name, f"{fmt.upper()} input is not enabled for this converter")
        if self.backend == "docling":
            self.warm_up()
            assert self._docling is not None
            return self._docling.parse_pdf(name, data) if fmt == "pdf" else self._docling.parse_html(name, data)
        if fmt == "pdf":
            return parse_pdf_filing(
                name,
                data=data,
                table_finder=self.table_finder,
                extract_images=self.extract_images,
                ocr=self.ocr,
                ocr_figures=self.ocr_figures,
            )
        return parse_html_filing(name, data=data, extract_images=self.extract_images)

    def identify(self, source: str | Path | ByteStream, meta: dict[str, Any] | None = None) -> FilingIdentity:
        """Which filing ``source`` is, without parsing it whole: its filing id (``meta["filing_id"]`` when given,
        else the default of the class docstring) and the SHA-256 of its bytes. A PDF's cover is read from its
        first pages' text layer (milliseconds), an HTML filing is parsed (a second or two for a 10-K). A file that
        cannot be read gets its file-stem id (parsing it then reports why)."""
        name = self._name(source)
        given = (meta or {}).get(schema.FILING_ID)
        try:
            name, data, sha = self._read(source)
        except FilingParseError:
            sha = "" if isinstance(source, ByteStream) else sha256_of(name)
            return FilingIdentity(name, str(given or filing_id_for(name)), "given" if given else "file name", sha)
        if given:
            return FilingIdentity(name, str(given), "given", sha)
        return self._identity(name, data, sha)

    def _identity(self, name: str, data: bytes, sha: str, parsed: ParsedFiling | None = None) -> FilingIdentity:
        accession = accession_in_path(name) or accession_in_header(data)
        if accession:
            return FilingIdentity(name, accession, "accession", sha)
        try:
            if is_submission(data):
                fmt, data = "html", submission_document(name, data)
            else:
                fmt = sniff_format(name[:-3] if name.lower().endswith(".gz") else name, data)
            if fmt == "pdf":
                texts, pdf_meta = cover_page_texts(name, data)
            elif parsed is not None and self.backend == "native":
                texts, pdf_meta = parsed.page_texts, parsed.meta  # the parse identify() would have done
            else:
                html = parse_html_filing(name, data=data, extract_images=self.extract_images)
                texts, pdf_meta = html.page_texts, html.meta
            detected = detect_filing_meta(texts, Path(name).name, pdf_meta)
            cover_id = cover_filing_id(detected.company, detected.form, detected.period, detected.period_end)
        except FilingParseError:
            cover_id = None
        if cover_id:
            return FilingIdentity(name, cover_id, "cover", sha)
        return FilingIdentity(name, filing_id_for(name), "file name", sha)

    def to_document(
        self, parsed: ParsedFiling, meta: dict[str, Any] | None = None, identity: FilingIdentity | None = None
    ) -> Document:
        """Wrap a parsed filing as a Document with detected metadata, overridden by ``meta``; the default filing id
        is ``identity``'s (the file stem without one)."""
        detected = detect_filing_meta(parsed.page_texts, Path(parsed.source_path).name, parsed.meta).to_dict()
        filing_meta: dict[str, Any] = {
            schema.FILING_ID: identity.filing_id if identity is not None else filing_id_for(parsed.source_path),
            **{k: v for k, v in detected.items() if v not in (None, "")},
            schema.SOURCE_PATH: parsed.source_path,
            schema.N_PAGES: parsed.n_pages,
        }
        if identity is not None and identity.source_sha256:
            filing_meta[schema.SOURCE_SHA256] = identity.source_sha256
        if parsed.skipped_pages:
            filing_meta[schema.SKIPPED_PAGES] = list(parsed.skipped_pages)
        filing_meta.update(meta or {})
        filing_meta[schema.ELEMENTS] = [el.to_dict() for el in parsed.elements]
        content = "\f".join(normalize_whitespace(t) for t in parsed.page_texts)
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]
        filing_meta["content_sha256"] = digest
        return Document(id=f"{filing_meta[schema.FILING_ID]}#source", content=content, meta=filing_meta)

    def convert(self, source: str | Path | ByteStream, meta: dict[str, Any] | None = None) -> Document:
        """One source to its Document (``run`` without the failure handling). Raises FilingParseError."""
        name, data, sha = self._read(source)
        parsed = self._parse(name, data)
        given = (meta or {}).get(schema.FILING_ID)
        identity = FilingIdentity(name, str(given), "given", sha) if given else self._identity(name, data, sha, parsed)
        return self.to_document(parsed, meta, identity)

    @component.output_types(documents=list[Document], failures=list[dict[str, str]])
    def run(
        self,
        sources: list[str | Path | ByteStream],
        meta: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """
        Convert filings.

        :param sources: file paths or ByteStreams (PDF, .htm/.html, optionally gzipped, EDGAR full-submission .txt).
        :param meta: metadata applied to every filing (a dict) or per source (a list of the same length); it
            overrides detected fields, e.g. ``{"company": "3M", "filing_id": "MMM-2018-10K"}``.
        :returns: ``documents``: one Document per readable filing; ``failures``: ``{"source", "error"}`` per
            unreadable one.
        """
        if isinstance(meta, list) and len(meta) != len(sources):
            raise ValueError(f"meta has {len(meta)} entries but there are {len(sources)} sources")
        self.warm_up()  # a missing Docling is the converter's setup, not one bad file: it fails the run once
        documents: list[Document] = []
        failures: list[dict[str, str]] = []
        for i, source in enumerate(sources):
            source_meta = meta[i] if isinstance(meta, list) else meta
            try:
                documents.append(self.convert(source, source_meta))
            except FilingParseError as exc:
                logger.warning("Skipping {error}", error=exc)
                failures.append({"source": exc.source, "error": str(exc)})
            except Exception as exc:  # a parser bug on one filing must not abort the batch
                name = (
                    str(getattr(source, "meta", {}).get("file_path", source))
                    if isinstance(source, ByteStream)
                    else str(source)
                )
                error = f"{name}: unexpected {type(exc).__name__}: {exc}"
                # One line like any other bad file (a damaged PDF raises RuntimeError from PyMuPDF); the traceback
                # is for debugging only.
                logger.warning("Skipping {error}", error=(error.splitlines() or [error])[0])
                logger.debug("Traceback of the unexpected error converting {source}", source=name, exc_info=True)
                failures.append({"source": name, "error": error})
        return {"documents": documents, "failures": failures}
