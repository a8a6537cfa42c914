"""Who filed a filing, as the filing itself states it: CIK, trading symbols and exchanges, SEC file numbers, IRS
employer number, legal name and former names.

These identify a registrant across years and renames better than its name does: "Adobe Systems Incorporated"
(FY2017) and "Adobe Inc." (FY2022) share a CIK, a file number (0-15175), an IRS number and a ticker. Sources, most
reliable first:

* inline XBRL cover facts (EDGAR HTML since 2019): ``dei:EntityCentralIndexKey``, ``dei:TradingSymbol`` and
  ``dei:SecurityExchangeName`` (one per class), ``dei:EntityFileNumber``, ``dei:EntityTaxIdentificationNumber``,
  ``dei:EntityRegistrantName``, ``dei:EntityInformationFormerLegalOrRegisteredName``;
* an EDGAR submission header ("CENTRAL INDEX KEY:", "FORMER CONFORMED NAME:", "SEC FILE NUMBER:");
* the cover page text: the Section 12(b) table (every class's symbol with its exchange, when the table has a
  "Trading Symbol" column: covers before 2019 name only the exchange), "Commission File Number", the IRS
  Employer Identification No., and the "(Former name ... if changed since last report)" line;
* the first pages' prose: "Block, Inc. (formerly known as Square, Inc.)", "changed its name from X to Y".

Plain regular expressions over page text, so PDF and HTML read alike; no Haystack import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haystack_fin.core.text import normalize_line


def _upper_words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Prose that states a former name sits in Item 1's first paragraphs: a few pages after the cover and contents.
IDENTITY_PAGES = 12

_TICKER = re.compile(r"^[A-Z]{1,5}(?:[.-][A-Z]{1,2})?$")
# Upper-case words of a 12(b) table that are not symbols.
_NOT_SYMBOLS = _upper_words(
    """
    A AND CLASS COMMON DUE EACH INC LLC NAME NASDAQ NONE NOTES NYSE OF ON OR PAR PER SHARE SHARES STOCK THE TITLE
    VALUE WHICH USD EUR GBP JPY CHF CAD AUD PREFERRED DEPOSITARY REPRESENTING INTEREST SERIES NOTE WARRANTS UNITS
    RIGHTS ORDINARY LP
    """
)
# Exchange names as 12(b) tables print them, to the short names used in tickers' listings.
_EXCHANGES: tuple[tuple[str, str], ...] = (
    (r"(?:The\s+)?New\s*York\s+Stock\s+Exchange(?:\s+LLC)?(?:\s*\(\s*NYSE\s*\))?", "NYSE"),
    (r"NYSE\s+American(?:\s+LLC)?", "NYSE American"),
    (r"NYSE\s+Arca(?:,?\s+Inc\.?)?", "NYSE Arca"),
    (r"NYSE\s+Texas(?:,?\s+Inc\.?)?", "NYSE Texas"),
    (r"NYSE(?:\s+MKT)?(?:\s+LLC)?", "NYSE"),
    (
        r"(?:The\s+)?Nasdaq(?:\s+Stock\s+Market(?:\s+LLC)?)?(?:\s*\(\s*Nasdaq\s+(?:Global\s+Select|Global|Capital)"
        r"\s+Market\s*\))?(?:\s+(?:Global\s+Select|Global|Capital)\s+Market)?",
        "Nasdaq",
    ),
    (r"Chicago\s+Stock\s+Exchange(?:,?\s+Inc\.?)?", "Chicago Stock Exchange"),
    (r"Cboe\s+(?:BZX\s+)?(?:Exchange|Global\s+Markets)(?:,?\s+Inc\.?)?", "Cboe"),
    (r"Boston\s+Stock\s+Exchange", "Boston Stock Exchange"),
    (r"Pacific\s+(?:Stock\s+)?Exchange", "Pacific Exchange"),
    (r"London\s+Stock\s+Exchange", "London Stock Exchange"),
    (r"Euronext\s+\w+", "Euronext"),
)
_EXCHANGE = re.compile("|".join(f"(?P<x{i}>{p})" for i, (p, _) in enumerate(_EXCHANGES)), re.IGNORECASE)
_SECTION_12B = re.compile(r"Section\s+12\s*\(\s*b\s*\)", re.IGNORECASE)
_TABLE_END = re.compile(r"Section\s+12\s*\(\s*g\s*\)|Indicate\s+by\s+check\s+mark", re.IGNORECASE)
_SYMBOL_HEADER = re.compile(r"Trading\s+Symbols?(?:\s*\(s\))?", re.IGNORECASE)
_TABLE_HEADER = re.compile(
    r"Title\s+of\s+(?:each\s+)?class|Trading\s+Symbols?(?:\s*\(s\))?|Name\s+of\s+(?:each\s+)?exchange"
    r"(?:\s+on\s+which\s+registered)?",
    re.IGNORECASE,
)

_FILE_NUMBER = r"(?:\d{1,3}-\d{3,6}(?!\d))"
_FILE_LABEL = r"Commission\s+File\s+(?:No\.?|Numbers?)"
_FILE_AFTER = re.compile(rf"{_FILE_LABEL}\s*+:?\s*+(?P<n>{_FILE_NUMBER}(?:\s*+(?:and|,|&)\s*+{_FILE_NUMBER})*)", re.I)
_FILE_BEFORE = re.compile(rf"(?P<n>{_FILE_NUMBER})\s*+\(?\s*+{_FILE_LABEL}", re.IGNORECASE)
# An 8-K's cover row "North Carolina 1-1183 13-1584302" above "(State ...) (Commission File Number) (IRS ...)".
_FILE_ROW = re.compile(
    rf"(?<![\d-])(?P<n>{_FILE_NUMBER})(?![\d-])(?=[^()]{{0,40}}\(\s*+State[^)]{{0,60}}\)?\s*+\(?\s*+Commission)",
    re.IGNORECASE,
)
_IRS = re.compile(r"(?<![\d-])(?P<n>\d{2}-\d{7})(?![\d-])")
_IRS_LABEL = re.compile(r"I\.?\s?R\.?\s?S\.?\s+Employer|Employer\s+Identification|I\.?R\.?S\.?\s+ID", re.IGNORECASE)

_HEADER_CIK = re.compile(r"CENTRAL\s+INDEX\s+KEY:\s*(?P<cik>\d{1,10})")
_HEADER_NAME = re.compile(r"COMPANY\s+CONFORMED\s+NAME:\s*(?P<name>[^\n]+)")
_HEADER_FORMER = re.compile(r"FORMER\s+CONFORMED\s+NAME:\s*(?P<name>[^\n]+)")
_HEADER_FILE = re.compile(rf"SEC\s+FILE\s+NUMBER:\s*(?P<n>{_FILE_NUMBER})")

# The cover's label under a former name: "(Former name, former address and former fiscal year, if changed since
# last report)", "(Former name or former address, if changed since last report)".
_FORMER_LABEL = re.compile(r"Former\s++name\b", re.IGNORECASE)
_NOT_A_FORMER_NAME = re.compile(
    r"^(?:n/?a|none|not\s+applicable|no\s+change|unchanged|-+|—+)\.?$|\d{5}|street|avenue|suite|road|drive|boulevard"
    r"|parkway|p\.?o\.?\s+box|\(|registrant|telephone|address|check|mark",
    re.IGNORECASE,
)
_LEGAL_FORM = (
    r"(?:Inc|Incorporated|Corp|Corporation|Company|Co|Ltd|Limited|plc|PLC|LLC|L\.L\.C|L\.P|LP|N\.V|S\.A|AG|SE)\.?"
)
_NAME = rf"[A-Z][\w&.,'’ -]{{1,80}}?\b{_LEGAL_FORM}"
# "Block, Inc. (formerly known as Square, Inc.)", "(formerly, Wal-Mart Stores, Inc.)", "formerly named X".
_FORMERLY = re.compile(
    rf"\b(?:formerly|previously)\b\s*+(?:(?:known\s++as|named|called)\s*+)?,?\s*+(?:“|\")?(?P<name>{_NAME})(?![\w])",
    re.UNICODE,
)
# "changed its name from Wal-Mart Stores, Inc. to Walmart Inc."
_NAME_CHANGE = re.compile(
    rf"\bchanged\s+(?:its|our|the\s+Company[’']s)\s+(?:corporate\s+|legal\s+)?name\s+from\s+(?:“|\")?"
    rf"(?P<name>{_NAME})(?:”|\")?,?\s+to\b",
    re.IGNORECASE,
)


@dataclass
class Registrant:
    """Identity of a filing's registrant. ``securities`` lists (symbol, exchange) per registered class."""

    cik: str = ""
    securities: list[tuple[str, str]] = field(default_factory=list)
    file_numbers: list[str] = field(default_factory=list)
    irs_number: str = ""
    legal_name: str = ""
    former_names: list[str] = field(default_factory=list)

    @property
    def tickers(self) -> list[str]:
        return list(dict.fromkeys(symbol for symbol, _ in self.securities))


def normalize_cik(value: Any) -> str:
    """CIK as EDGAR writes it, ten digits with leading zeros ("320193" -> "0000320193"); "" if not a CIK."""
    digits = re.sub(r"\D", "", str(value or ""))
    return digits.zfill(10) if 0 < len(digits) <= 10 and int(digits) > 0 else ""


def normalize_file_number(value: str) -> str:
    """SEC file number without padding: "001-09595" and "1-9595" -> "1-9595"."""
    m = re.fullmatch(r"\s*(\d{1,3})-(\d{3,6})\s*", value or "")
    return f"{int(m.group(1))}-{int(m.group(2))}" if m else ""


def exchange_name(text: str) -> str:
    """The short name of an exchange as a 12(b) table or a dei fact prints it ("The Nasdaq Stock Market LLC" ->
    "Nasdaq", "NYSE" -> "NYSE"); the text itself when unknown."""
    m = _EXCHANGE.fullmatch(normalize_line(text))
    if m is None:
        return normalize_line(text)
    return next(short for i, (_, short) in enumerate(_EXCHANGES) if m.group(f"x{i}"))


def _flat(text: str) -> str:
    return " ".join(text.split())


_SYMBOL = re.compile(r"(?<![\w$.,/-])(?P<s>[A-Z]{1,5}(?:[.-][A-Z]{1,2})?)(?![\w/-]|\.\w|%)")
_CLASS_WORD = re.compile(r"(?:class|series)\s+$", re.IGNORECASE)


def cover_securities(text: str) -> list[tuple[str, str]]:
    """(symbol, exchange) of every class in the cover's Section 12(b) table, in table order. Only tables with a
    "Trading Symbol" column name symbols (covers before 2019 list the exchange alone): [] otherwise.

    Cells come in any order (PDF text puts a row's exchange before or after its title and symbol), so a symbol is
    an upper-case token of the table that is not a word of a class title or an exchange name, paired with the
    exchange right after it, else the nearest; a one-letter symbol ("V", "T") only right before its exchange.
    """
    flat = _flat(text)
    out: list[tuple[str, str]] = []
    for start in _SECTION_12B.finditer(flat):
        after = flat[start.end() : start.end() + 4000]
        end = _TABLE_END.search(after)
        table = after[: end.start()] if end else after
        if not _SYMBOL_HEADER.search(table):
            continue
        body = _TABLE_HEADER.sub(" | ", table)
        exchanges = [
            (m.start(), m.end(), next(short for i, (_, short) in enumerate(_EXCHANGES) if m.group(f"x{i}")))
            for m in _EXCHANGE.finditer(body)
        ]
        for m in _SYMBOL.finditer(body):
            symbol = m.group("s")
            if symbol in _NOT_SYMBOLS or _CLASS_WORD.search(body[max(0, m.start() - 8) : m.start()]):
                continue
            if any(s <= m.start() < e for s, e, _ in exchanges):
                continue
            following = next(((s, x) for s, _, x in exchanges if s >= m.end()), None)
            adjacent = following is not None and not body[m.end() : following[0]].strip(" |").removesuffix("The")
            if len(symbol) == 1 and not adjacent:
                continue
            nearest = min(exchanges, key=lambda x: min(abs(x[0] - m.end()), abs(m.start() - x[1])), default=None)
            exchange = following[1] if adjacent and following else (nearest[2] if nearest else "")
            if all(symbol != s for s, _ in out):
                out.append((symbol, exchange))
        if out:
            break
    return out


def cover_file_numbers(text: str) -> list[str]:
    """SEC file numbers printed on the cover ("Commission File Number 1-9595", "001-36743 (Commission File
    Number)"), normalized, each once."""
    flat = _flat(text)
    numbers: list[str] = []
    for pattern in (_FILE_AFTER, _FILE_BEFORE, _FILE_ROW):
        for m in pattern.finditer(flat):
            for raw in re.findall(_FILE_NUMBER, m.group("n")):
                n = normalize_file_number(raw)
                if n and n not in numbers:
                    numbers.append(n)
    return numbers


def cover_irs_number(text: str) -> str:
    """The IRS Employer Identification No. ("41-0907483") printed near its label on the cover."""
    flat = _flat(text)
    for label in _IRS_LABEL.finditer(flat):
        window = flat[max(0, label.start() - 250) : label.end() + 250]
        m = _IRS.search(window)
        if m:
            return m.group("n")
    return ""


def _clean(name: str) -> str:
    return normalize_line(name).strip(" ,;:-*®™|“”\"'()")


def _looks_like_former_name(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return 3 <= len(text) <= 100 and letters >= 3 and not _NOT_A_FORMER_NAME.search(text)


def cover_former_names(text: str) -> list[str]:
    """The name above the cover's "(Former name ... if changed since last report)" label, when it is one (not
    "N/A", not an address)."""
    names: list[str] = []
    for m in _FORMER_LABEL.finditer(text):
        head = text[: m.start()].rstrip().removesuffix("(").rstrip()
        line = head.rsplit("\n", 1)[-1].strip()
        candidate = _clean(line)
        if candidate and _looks_like_former_name(candidate) and candidate not in names:
            names.append(candidate)
    return names


def _squash(text: str) -> str:
    return re.sub(r"[\W_]", "", text.lower())


def prose_former_names(texts: Iterable[str], own_name: str = "") -> list[str]:
    """Former names the first pages state of the registrant itself: "X (formerly known as Y)" with X the
    registrant's name, or "changed its name from Y to X". Subsidiaries' renames (an "(formerly ...)" after another
    name) are not the registrant's."""
    own = _squash(re.sub(rf"[\s,]+{_LEGAL_FORM}\s*$", "", own_name))
    if len(own) < 3:
        return []
    names: list[str] = []
    for text in texts:
        flat = _flat(text)
        for pattern in (_FORMERLY, _NAME_CHANGE):
            for m in pattern.finditer(flat):
                if pattern is _FORMERLY:
                    # the registrant's name right before "(formerly ...": "Block, Inc. (formerly known as ..."
                    head = flat[max(0, m.start() - 80) : m.start()]
                    head = re.sub(rf"[\s,]*(?:{_LEGAL_FORM})?[\s,(“\"]*$", "", head)
                    if not _squash(head).endswith(own):
                        continue
                elif own not in _squash(flat[m.end() : m.end() + 80]):  # "... to Walmart Inc."
                    continue
                name = _clean(m.group("name"))
                if name and len(name.split()) <= 8 and name not in names:
                    names.append(name)
    return names


def header_identity(text: str) -> Registrant:
    """What an EDGAR submission header (the .txt form of a filing) says."""
    found = Registrant()
    m = _HEADER_CIK.search(text)
    if m:
        found.cik = normalize_cik(m.group("cik"))
    m = _HEADER_NAME.search(text)
    if m:
        found.legal_name = _clean(m.group("name"))
    found.former_names = [_clean(m.group("name")) for m in _HEADER_FORMER.finditer(text)]
    found.file_numbers = [n for m in _HEADER_FILE.finditer(text) if (n := normalize_file_number(m.group("n")))]
    return found


def _dei_values(parser_meta: Mapping[str, Any] | None, name: str) -> list[str]:
    meta = parser_meta or {}
    many = meta.get("dei_all")
    if isinstance(many, Mapping) and isinstance(many.get(name), list):
        return [normalize_line(str(v)) for v in many[name] if str(v).strip()]
    one = meta.get("dei")
    if isinstance(one, Mapping) and one.get(name):
        return [normalize_line(str(one[name]))]
    return []


def detect_registrant(
    page_texts: list[str], cover: str = "", legal_name: str = "", parser_meta: Mapping[str, Any] | None = None
) -> Registrant:
    """The registrant identity of a filing.

    :param page_texts: the filing's page texts (the first ``IDENTITY_PAGES`` are read).
    :param cover: the cover page text from its SEC header on, when the caller found one ("" for a release).
    :param legal_name: the registrant name read from the cover (``filing_meta``), kept as ``legal_name``.
    :param parser_meta: the parser's meta (HTML: ``dei`` facts, ``dei_all`` with every value of repeated facts).
    """
    pages = [t or "" for t in page_texts[:IDENTITY_PAGES]]
    found = header_identity(pages[0]) if pages and "CENTRAL INDEX KEY:" in pages[0][:20000] else Registrant()
    cik = next((c for v in _dei_values(parser_meta, "EntityCentralIndexKey") if (c := normalize_cik(v))), "")
    found.cik = cik or found.cik
    symbols = _dei_values(parser_meta, "TradingSymbol")
    exchanges = _dei_values(parser_meta, "SecurityExchangeName")
    securities: list[tuple[str, str]] = []
    for i, raw in enumerate(symbols):
        symbol = raw.upper().strip()
        if _TICKER.match(symbol) and all(symbol != s for s, _ in securities):
            exchange = exchange_name(exchanges[i]) if i < len(exchanges) else ""
            securities.append((symbol, exchange))
    cover_text = cover or (pages[0] if pages else "")
    for symbol, exchange in cover_securities(cover_text):
        if all(symbol != s for s, _ in securities):
            securities.append((symbol, exchange))
    found.securities = securities
    numbers = [n for v in _dei_values(parser_meta, "EntityFileNumber") if (n := normalize_file_number(v))]
    for n in [*found.file_numbers, *cover_file_numbers(cover_text[:6000])]:
        if n not in numbers:
            numbers.append(n)
    found.file_numbers = numbers
    irs = _dei_values(parser_meta, "EntityTaxIdentificationNumber")
    found.irs_number = (irs[0] if irs and _IRS.fullmatch(irs[0]) else "") or cover_irs_number(cover_text[:6000])
    found.legal_name = legal_name or found.legal_name
    former = [
        *found.former_names,
        *_dei_values(parser_meta, "EntityInformationFormerLegalOrRegisteredName"),
        *(cover_former_names(cover_text[:8000]) if cover else []),
        *prose_former_names(pages, found.legal_name),
    ]
    own = re.sub(r"\W", "", found.legal_name.lower())
    found.former_names = list(
        dict.fromkeys(n for n in former if _looks_like_former_name(n) and re.sub(r"\W", "", n.lower()) != own)
    )
    return found
