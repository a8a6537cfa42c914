"""Which filing a file is: its default filing id, taken from the filing rather than from its file name.

EDGAR download tools save every filing under the same file name (``<accession>/primary-document.html``,
``full-submission.txt``), so a file stem cannot identify a filing. The default id is, in this order:

1. the **accession number** the file or its folder carries: ``.../0000320193-24-000123/primary-document.html``,
   ``0000320193-24-000123.txt``, EDGAR's archive layout ``.../320193/000032019324000123/aapl-20240928.htm``, or the
   ``ACCESSION NUMBER:`` line of a full submission's SEC header; written with dashes
   (``0000320193-24-000123``);
2. else **company key + form + period** read from the cover (``filing_meta.detect_filing_meta``), with the date
   for an 8-K or an earnings release (two of them can share a period): ``best-buy_10-Q_FY2024-Q2``,
   ``pepsico_8-K_2023-05-05``, ``mgm-resorts_earnings-release_FY2022-Q4_2022-12-31``;
3. else the **file stem** (``filing_id_for``), for a file whose cover tells too little.

Also here: reading a gzipped file with a bound on what it decompresses to, a file's SHA-256, and the primary
document of an EDGAR full submission (``full-submission.txt``).
"""

import gzip
import hashlib
import html
import re
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import BinaryIO

from haystack_fin.core.ingest.layout import FilingParseError
from haystack_fin.core.retrieval.companies import company_key

# "0000320193-24-000123": filer id (10 digits), year (2), sequence (6).
_ACCESSION = re.compile(r"(?<!\d)(\d{10})-(\d{2})-(\d{6})(?!\d)")
_ACCESSION_PLAIN = re.compile(r"^(\d{10})(\d{2})(\d{6})$")  # EDGAR archive folders write it without dashes
_HEADER_ACCESSION = re.compile(rb"ACCESSION[ \t]+NUMBER:[ \t]*(\d{10})-?(\d{2})-?(\d{6})\b")
# What an EDGAR full submission (.txt) starts with; its header names the accession number.
_SUBMISSION_START = re.compile(rb"^\s*<(?:SEC-DOCUMENT|SEC-HEADER|IMS-DOCUMENT|IMS-HEADER)>", re.IGNORECASE)
_HEADER_BYTES = 65536
_DOCUMENT = re.compile(rb"<DOCUMENT>(.*?)(?:</DOCUMENT>|\Z)", re.DOTALL | re.IGNORECASE)
_TEXT = re.compile(rb"<TEXT>(.*?)(?:</TEXT>|\Z)", re.DOTALL | re.IGNORECASE)
_HTML_MARKUP = re.compile(rb"<\s*(?:html|body|div|p|table|font)\b", re.IGNORECASE)
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_FILE_SUFFIXES = (".gz", ".pdf", ".htm", ".html", ".xhtml", ".txt")  # stripped in this order (".htm.gz")
# Forms whose period does not tell two filings apart: an 8-K's event date, a release's date.
_DATED_FORMS = ("8-K", "earnings_release")
_READ_CHUNK = 1 << 20

# A gzipped filing is read up to this size once decompressed (``read_source``): a 10 MB .htm.gz can inflate to
# 10 GB. EDGAR's largest HTML filings are tens of MB.
DEFAULT_MAX_DECOMPRESSED_MB = 512


@dataclass(frozen=True)
class FilingIdentity:
    """A file's filing id, how it was found (``basis``: "given", "accession", "cover" or "file name"), and the
    SHA-256 of the file's bytes ("" when the file cannot be read)."""

    source: str
    filing_id: str
    basis: str
    source_sha256: str


def filing_id_for(source_name: str) -> str:
    """The file-stem id: the file name without its filing suffix, characters outside [A-Za-z0-9._-] replaced by
    "-"."""
    stem = Path(source_name).name
    for suffix in _FILE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    return _SLUG.sub("-", stem).strip("-") or "filing"


def _dashed(m: "re.Match[str] | re.Match[bytes]") -> str:
    groups = [g.decode("ascii") if isinstance(g, bytes) else str(g) for g in m.group(1, 2, 3)]
    return "-".join(groups)


def accession_in_path(path: str) -> str | None:
    """The accession number in the file name (dashed, anywhere in it, or the file stem as 18 digits) or in the
    name of its folder (the whole name, dashed or 18 digits); None when neither carries one."""
    p = PurePath(path)
    m = _ACCESSION.search(p.name) or _ACCESSION_PLAIN.match(filing_id_for(p.name))
    if m is None and p.parent.name:
        m = _ACCESSION.fullmatch(p.parent.name) or _ACCESSION_PLAIN.match(p.parent.name)
    return _dashed(m) if m else None


def is_submission(data: bytes) -> bool:
    """Whether ``data`` is an EDGAR full submission (SGML header and documents, ``full-submission.txt``)."""
    return bool(_SUBMISSION_START.match(data[:1024]))


def accession_in_header(data: bytes) -> str | None:
    """The ``ACCESSION NUMBER:`` of an EDGAR full submission's SEC header (None for any other file)."""
    if not is_submission(data):
        return None
    m = _HEADER_ACCESSION.search(data[:_HEADER_BYTES])
    return _dashed(m) if m else None


def submission_document(name: str, data: bytes) -> bytes:
    """The primary document of an EDGAR full submission (its first ``<DOCUMENT>``) as HTML: its own HTML, or its
    plain text (filings before HTML) escaped into paragraphs, with ``<PAGE>`` markers and form feeds as page
    breaks.

    :raises FilingParseError: the submission holds no document text.
    """
    doc = _DOCUMENT.search(data)
    text = _TEXT.search(doc.group(1)) if doc else None
    body = text.group(1).strip() if text else b""
    if not body:
        raise FilingParseError(name, "EDGAR submission without a document text")
    if _HTML_MARKUP.search(body[:_HEADER_BYTES]) or _HTML_MARKUP.search(body):
        return body
    plain = body.decode("utf-8", errors="replace")
    pages = re.split(r"\f|<PAGE>", plain, flags=re.IGNORECASE)
    parts = []
    for i, page in enumerate(pages):
        style = ' style="page-break-before:always"' if i else ""
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", page) if p.strip()]
        parts.append(f"<div{style}>" + "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs) + "</div>")
    return ("<html><body>" + "".join(parts) + "</body></html>").encode("utf-8")


def read_gzip(name: str, stream: BinaryIO, max_bytes: int) -> bytes:
    """Decompress a gzip stream chunk by chunk, refusing it as soon as it exceeds ``max_bytes``.

    :raises FilingParseError: larger than ``max_bytes`` once decompressed, or not valid gzip.
    """
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=stream) as gz:
            while True:
                chunk = gz.read(min(_READ_CHUNK, max_bytes + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
                if len(out) > max_bytes:
                    raise FilingParseError(
                        name,
                        f"decompresses to more than {max_bytes // (1 << 20)} MB (the limit for a gzipped filing: "
                        "max_decompressed_mb)",
                    )
    except (OSError, EOFError, zlib.error) as exc:
        raise FilingParseError(name, f"not a readable gzip file ({exc})") from exc
    return bytes(out)


def sha256_of(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in chunks ("" when it cannot be read)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(_READ_CHUNK), b""):
                h.update(chunk)
    except OSError:
        return ""
    return h.hexdigest()


def _slug(text: str) -> str:
    # "_" separates the parts of a cover id, so it is not used inside one ("earnings_release" -> "earnings-release").
    return _SLUG.sub("-", text.strip()).replace("_", "-").strip("-")


def cover_filing_id(company: str, form: str, period: str, period_end: str = "") -> str | None:
    """``<company key>_<form>_<period>`` (plus the date for 8-Ks and earnings releases) from a filing's cover
    metadata; None when the company, the form or the period is unknown."""
    key = _slug(company_key(company).replace(" ", "-")) if company else ""
    if not key or not form or form == "other" or not period:
        return None
    parts = [key, _slug(form), _slug(period)]
    if form.startswith(_DATED_FORMS) and period_end and period_end not in period:
        parts.append(_slug(period_end))
    return "_".join(p for p in parts if p) if all(parts) else None
