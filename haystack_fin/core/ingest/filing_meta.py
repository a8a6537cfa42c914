"""Filing-level metadata (company, form, period, fiscal year/quarter, ticker) read from a filing's first pages.

SEC filings announce what they are on the cover page: the form type, the registrant's name above "(Exact name of
registrant as specified in its charter)", the period ("For the fiscal year ended ..."), the trading symbols. Earnings
releases have no cover; their headline and first sentence say who reports which quarter. Everything here is plain
regular expressions over page text so it works the same for PDF and HTML sources.

Fiscal-year conventions: an annual report's fiscal year is the calendar year in which it ends, except that a
52/53-week year ending in the first week of January is named after the previous year (a year ending January 2,
2022 is fiscal 2021). A 10-Q's fiscal quarter comes from the year-to-date length ("six months ended ..."), a known
fiscal year end, or the filing's own wording ("second quarter of fiscal 2024"); when these are missing or disagree
the quarter stays None rather than a guess.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.ingest.registrant import Registrant, detect_registrant
from haystack_fin.core.log import get_logger
from haystack_fin.core.periods import MONTH, ORD, ORDINALS, annual_fiscal_year, month_number, year4
from haystack_fin.core.text import normalize_line, normalize_whitespace

logger = get_logger(__name__)

FORMS: tuple[str, ...] = (
    "10-K",
    "10-K/A",
    "10-Q",
    "10-Q/A",
    "8-K",
    "8-K/A",
    "20-F",
    "40-F",
    "earnings_release",
    "other",
)

# The SEC cover is page 1, or page 2-3 behind a glossy annual-report cover or a fax/transmittal sheet.
_COVER_PAGES = 3
# Year-to-date headers and "fiscal year ended" references sit in the table of contents, the statements and the
# first notes of a 10-Q; a regex pass over a dozen pages costs milliseconds.
_QUARTER_SCAN_PAGES = 15

_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212"})

# "July 29, 2023", "JULY 29,2023", "Sept. 30 2023", "29 July 2023", "2023-07-29". Whitespace is matched possessively
# (``\s*+``) here and in the patterns around dates: a date never starts with a space or a comma, so giving spaces back
# can never help, and ``\s*,?\s*`` split a run of spaces in quadratically many ways before failing. No \b after the
# year: glued HTML text reads "DECEMBER 31, 20241-2360(Commission file number)".
_DATE = (
    rf"(?:(?P<m1>{MONTH})\s*+(?P<d1>\d{{1,2}})\s*+,?\s*+(?P<y1>(?:19|20)\d\d)"
    rf"|(?P<d2>\d{{1,2}})\s++(?P<m2>{MONTH})\s*+,?\s*+(?P<y2>(?:19|20)\d\d)"
    r"|(?P<y3>(?:19|20)\d\d)-(?P<m3>[01]\d)-(?P<d3>[0-3]\d))"
)

# --- form -----------------------------------------------------------------------------------------------------------

_FORM_CORE = r"(?P<num>10|8|20|40)\s?-?\s?(?P<letter>[KQF])(?:\s*/\s*(?P<amend>A)(?![A-Za-z]))?"
_VALID_FORMS = {"10K", "10Q", "8K", "20F", "40F"}
# A cover line that is the form name and nothing else ("FORM 10-K", "Form 10-Q/A", "FORM 8-K (Amendment No. 1)").
_FORM_LINE = re.compile(rf"^FORM\s*{_FORM_CORE}\s*(?:\(.*\)\s*)?$", re.IGNORECASE)
# Glued HTML text has no lines: "...COMMISSION Washington, D.C. 20549FORM 10-K(Mark One)". Upper case only, so prose
# like "filed with the Securities and Exchange Commission on Form 10-Q" in a press release does not count.
_FORM_AFTER_HEADER = re.compile(rf"SECURITIES\s+AND\s+EXCHANGE\s+COMMISSION.{{0,250}}?FORM\s*{_FORM_CORE}", re.DOTALL)
_SEC_HEADER = re.compile(r"securities\s+and\s+exchange\s+commission", re.IGNORECASE)
_SEC_HEADER_UPPER = re.compile(r"SECURITIES\s+AND\s+EXCHANGE\s+COMMISSION")
_REPORT_KIND = re.compile(
    r"\b(?P<kind>ANNUAL|QUARTERLY|CURRENT)\s+REPORT\s+(?:PURSUANT|pursuant|Pursuant)\s+(?:TO|to)\s+(?:SECTION|Section)\s+13",
)
_AMENDMENT = re.compile(r"\(?\bAmendment\s+No\.?\s*\d+\b", re.IGNORECASE)

# A release headline: "PepsiCo Reports First-Quarter 2023 Results", "MGM RESORTS INTERNATIONAL REPORTS FOURTH QUARTER
# AND" / "FULL YEAR 2022 FINANCIAL AND OPERATING RESULTS", or a line of its own "Second Quarter Fiscal 2024 Results".
# Only the first lines of page 1 count: 10-K prose says "our reported financial results" and "fourth quarter and
# annual results" too.
_HEADLINE_LINES = 15
_HEADLINE_VERB_RESULTS = re.compile(
    r"^(?:.*\s)?[A-Z][\w.,&'’-]*\s+(?:Reports|Announces|Posts|Delivers|REPORTS|ANNOUNCES|POSTS|DELIVERS)\b"
    r"[^.]{0,120}?\b(?i:results|earnings)\b"
)
_HEADLINE_PERIOD_RESULTS = re.compile(
    rf"^(?:{ORD}[\s-]+(?:fiscal\s+)?quarter|Q[1-4]|full[\s-]+year|fiscal(?:\s+year)?)\b[\w\s,'&-]{{0,60}}"
    r"\b(?:results|earnings)[.!:]?$",
    re.IGNORECASE,
)
# First paragraph: "PepsiCo, Inc. (NASDAQ: PEP) today reported results for the first quarter 2023".
_RELEASE_SENTENCE = re.compile(r"\btoday\s+(?:reported|announced)\b[^.]{0,60}?\b(?:results|earnings)\b", re.IGNORECASE)
_EXHIBIT_99 = re.compile(r"\bExhibit\s+99(?:\.\d+)?\b", re.IGNORECASE)
_PRESS_BANNER = re.compile(r"\b(?:news|press|earnings)\s+release\b|\bfor\s+immediate\s+release\b", re.IGNORECASE)
# "SANTA CLARA, Calif., Jan. 26, 2023 --", "PURCHASE, N.Y., April 25, 2023 /PRNewswire/ --", "(BUSINESS WIRE)".
_DATELINE = re.compile(
    rf"\b(?P<m>{MONTH})\.?\s*+(?P<d>\d{{1,2}}),?\s*+(?P<y>(?:19|20)\d\d)\s*+"
    r"(?:/\s*PRNewswire[\w-]*\s*/|\(\s*(?:BUSINESS\s+WIRE|GLOBE\s+NEWSWIRE)\s*\)|--|—|–|-\s)",
    re.IGNORECASE,
)
_RELEASE_WORDS = re.compile(r"\b(?:financial\s+results|results\s+for\s+the|earnings\s+per\s+share)\b", re.IGNORECASE)
# PDF metadata of EDGAR printers: subject "10-K", "Form 10-Q filed on ...", keywords "0000764478-23-000041; ; 10-Q".
_META_FORM = re.compile(rf"(?:^|;\s*|^Form\s+){_FORM_CORE}(?:\s+(?:filed|for)\b|\s*$)", re.IGNORECASE)

# --- company --------------------------------------------------------------------------------------------------------

# "(Exact name of registrant as specified in its charter)". Searched without its optional "(" and leading space,
# which ``_exact_name_label`` adds back: ``\(?\s*Exact`` retried the whole run of blank lines before every "E" it
# did not find, quadratic in the run's length (3 s for 10,000 newlines).
_EXACT_NAME = re.compile(r"Exact\s+name\s+of\s+(?:the\s+)?registrants?\b", re.IGNORECASE)
_NAME_NOISE = re.compile(
    r"commission|file\s+n(?:o|umber)|transition\s+period|mark\s+one|pursuant|fiscal\s+year|quarterly\s+period"
    r"|date\s+of\s+report|washington,?\s+d\.?\s?c\b|registrant|identification|jurisdiction"
    r"|^or$|^form\b|^\(|^[xo☐☒ý¨]$|^_+$|check\s*box|^table\s+of\s+contents$|^page\s+\d",
    re.IGNORECASE,
)
# Where a glued prefix ("Commission File Number: 001-36743Apple Inc.") stops being cover boilerplate.
# Only ever .match()ed, so the rightmost boundary wins: "_{3}(?!_)" ends where "_{3,}" would, without rescanning the
# run of underscores from each of its positions; the \A keeps a .search() of it linear too.
_PREFIX_BOUNDARY = re.compile(
    r"\A.*(?:\)|\bOR\b|[☐☒]|_{3}(?!_)|\b\d{1,4}-\d{3,6}|commission\s+file\s+n(?:o\.?|umber)\s*:?)",
    re.IGNORECASE | re.DOTALL,
)
_LEGAL_FORM = (
    r"(?:Inc|Incorporated|Corp|Corporation|Company|Co|Ltd|Limited|plc|LLC|L\.?L\.?C|L\.?P|N\.?V|S\.?A|AG|SE)\.?"
)
_SUFFIX = rf"(?:{_LEGAL_FORM}|(?:Holdings?|Group|International|Bancorp|Trust)\b)"
_COMPANY_LINE = re.compile(rf"^[A-Z0-9][\w&.,'’ -]{{1,100}}\b{_SUFFIX}$", re.IGNORECASE)
# Second line of a wrapped name: "... GROUP," / "INC." or "... &" / "Co.".
_CONTINUATION = re.compile(rf"^(?:[a-z&]|(?i:{_LEGAL_FORM})(?![\w]))")
_SUBSIDIARIES = re.compile(
    r"^(?P<name>[A-Z][\w&.,'’ -]{1,100}?),?\s+(?:and|&)\s+(?:its\s+)?(?:consolidated\s+)?subsidiaries$", re.IGNORECASE
)
# Words of the cover's title block ("UNITED STATES / SECURITIES AND EXCHANGE COMMISSION / FORM 10-K / ANNUAL
# REPORT"). A "name" made of these only is that block, read where a logo or an image holds the real name.
_FORM_TITLE_TEXT = (
    "united states securities and exchange commission washington d c dc 20549 form forms annual quarterly current"
    " transition report reports pursuant to section of the act 1934 or 13 15 15d for fiscal year ended period mark"
    " one 10 k q 8 10k 10q 8k a amendment no cover page table contents"
)
_FORM_TITLE_WORDS = frozenset(_FORM_TITLE_TEXT.split())
# File stems that name the form, not the company: "d10k.htm", "form10-k.htm", "10q.htm", "annualreport.htm",
# an accession number "0000950123-02-001234.txt".
_STEM_NOT_A_NAME = re.compile(r"[a-z]{0,2}\d{1,2}[kq]\w*|form\w*|annual\w*|quarterly\w*|\d+|\w?", re.IGNORECASE)
_SMALL_CAPS = re.compile(r"\b([A-Z]) ([A-Z]{2,})\b")
# "– MGM Resorts International (NYSE: MGM)", "PepsiCo, Inc. (NASDAQ: PEP) today reported".
_EXCHANGE_TICKER = re.compile(
    r"\((?:NYSE|NASDAQ|Nasdaq|AMEX|TSX|LSE|CBOE)[A-Za-z ]{0,20}:\s*(?P<ticker>[A-Z]{1,5}(?:\.[A-Z]{1,2})?)\s*[;,)]"
)
# (?<!\s): start only at the first space of a run; the leftmost match is the same, but a run of n spaces is no
# longer retried from each of its n positions.
_HEADLINE_VERB = re.compile(r"(?<!\s)\s+(?:reports|announces|posts|delivers)\b", re.IGNORECASE)
_RELEASE_PREFIX = re.compile(
    r"^.*(?:Exhibit\s+99(?:\.\d+)?|Page\s+\d+\s+of\s+\d+|for\s+immediate\s+release|news\s+release|press\s+release)\s*",
    re.IGNORECASE,
)
# The name starts after all the spaces and ends at the first space run before "filed" (as the lazy ``.+?`` would), so
# neither end retries a run of spaces from each of its positions.
_META_TITLE_COMPANY = re.compile(r"^Form\s+\S+\s+for\s++(?P<name>.+?)(?<!\s)\s+filed\b", re.IGNORECASE)
_META_AUTHOR_JUNK = re.compile(r"edgar|donnelley|division|workiva|kaleidoscope|anonymous", re.IGNORECASE)

# --- period ---------------------------------------------------------------------------------------------------------

_ANNUAL_END = re.compile(rf"for\s+the\s+(?:fiscal\s+)?year\s+ended\s*+(?::\s*+)?{_DATE}", re.IGNORECASE)
_FISCAL_YEAR_ENDED = re.compile(rf"fiscal\s+year\s+ended\s*+(?::\s*+)?{_DATE}", re.IGNORECASE)
_QUARTER_END = re.compile(
    rf"for\s+the\s+(?:quarterly\s+period|(?:fiscal\s+)?quarter|(?:three|thirteen|twelve)[\s-]+(?:months|weeks)"
    rf"|period)\s+ended\s*+(?::\s*+)?{_DATE}",
    re.IGNORECASE,
)
_EVENT_DATE_AFTER = re.compile(
    rf"Date\s+of\s+(?:Report|earliest\s+event)[^:]{{0,60}}?(?:\)\s*+)*+:?\s*+{_DATE}", re.IGNORECASE | re.DOTALL
)
_EVENT_DATE_BEFORE = re.compile(rf"{_DATE}\s*+(?:\(\s*+)?Date\s+of\s+(?:Report|earliest\s+event)", re.IGNORECASE)
_RELEASE_END = re.compile(
    rf"\b(?P<what>quarter|(?:three|six|nine|twelve)\s+months|\d{{1,2}}\s+weeks|year|period)"
    rf"(?P<and_year>\s+and\s+(?:full\s+|fiscal\s+)?year)?\s+ended\s+{_DATE}",
    re.IGNORECASE,
)

# "--02-03" is how inline XBRL (dei:CurrentFiscalYearEndDate) writes a fiscal year end.
# It follows the CIK directly in the hidden header's text ("...Q30000320193--09-27P1Y...").
_XBRL_FYE = re.compile(r"(?<!-)--(?P<m>0[1-9]|1[0-2])-(?P<d>0[1-9]|[12]\d|3[01])(?!\d)")
# Month names case-sensitive here: "fiscal year ending ... that may change" must not read as May.
_FYE_STATEMENT = re.compile(
    rf"(?i:fiscal\s+year\s+(?:end|ends|ended|ending))\b[^.;]{{0,80}}?\b(?P<month>{MONTH})(?![a-z])"
    r"(?:\s*(?P<day>\d{1,2})\b)?"
)
_TEN_K_REFERENCE = re.compile(
    rf"Form\s+10-K\s+for\s+the\s+(?:fiscal\s+)?(?:year|period)\s+ended\s*{_DATE}",
    re.IGNORECASE,
)

_NUMBER_WORDS = {
    "three": 3,
    "six": 6,
    "nine": 9,
    "twelve": 12,
    "thirteen": 13,
    "sixteen": 16,
    "twenty-four": 24,
    "twenty four": 24,
    "twenty-six": 26,
    "twenty six": 26,
    "twenty-eight": 28,
    "twenty eight": 28,
    "thirty-six": 36,
    "thirty six": 36,
    "thirty-nine": 39,
    "thirty nine": 39,
    "forty": 40,
}
# "sixteen" before "six": lists of numbers are matched possessively (``_YTD_NUMS``), so the first alternative that
# fits is final.
_NUM = r"(?:\d{1,2}|three|sixteen|six|nine|twelve|thirteen|twenty[\s-](?:four|six|eight)|thirty[\s-](?:six|nine)|forty)"
# "three and six months ended July 29, 2023", "Nine Months Ended June 28,2025", "12 and 24 weeks ended". Two parts:
# the list of numbers, then what must follow it. One pattern ``\b(?P<nums>...(?:\s*(?:,|and|&)\s*...)*)[\s-]+month``
# re-read a list of n numbers from each of its n starts and backtracked through it each time, quadratic in its
# length (18 s for a 10,000-character "1, 2, 3, ..." line). A shorter list than the longest can never be followed
# by "months" (the next characters are ", 6" or " and 6"), so the list is taken whole and possessively, and a list
# not followed by "months ended <date>" is skipped as a whole, as the single pattern ended up doing.
_YTD_NUMS = re.compile(rf"\b{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*+", re.IGNORECASE)
_YTD_TAIL = re.compile(
    # (?<![\s-]): only ever matched right after a number; keeps a .search() of it linear too.
    rf"(?<![\s-])[\s-]+(?P<unit>month|week)s?(?:[\s-]+periods?)?\s+ended\b(?P<gap>.{{0,60}}?){_DATE}",
    re.IGNORECASE | re.DOTALL,
)
_FISCAL_QUARTER_PHRASES = (
    # "second quarter of fiscal 2024", "second fiscal quarter of 2024", "fourth quarter of fiscal year 2023"
    re.compile(
        rf"\b{ORD}\s+(?:fiscal\s+quarter\s+(?:of\s+)?(?:fiscal\s+)?(?:year\s+)?|quarter\s+(?:of\s+)?fiscal\s+"
        rf"(?:year\s+)?)(?P<year>(?:19|20)\d\d)\b",
        re.IGNORECASE,
    ),
    # "fiscal 2024 second quarter"
    re.compile(rf"\bfiscal\s+(?:year\s+)?(?P<year>(?:19|20)\d\d)\s+{ORD}[\s-]+quarter\b", re.IGNORECASE),
    # "Q2 fiscal 2024", "Q2 FY24", "fiscal Q2 2024"
    re.compile(r"\b(?:fiscal\s+)?Q(?P<q>[1-4])\s+(?:of\s+)?(?:fiscal\s+|FY\s?)'?(?P<year>\d{2}|(?:19|20)\d\d)\b"),
    re.compile(r"\bFY\s?'?(?P<year>\d{2}|(?:19|20)\d\d)\s+Q(?P<q>[1-4])\b"),
)
# Release headlines also say "First-Quarter 2023" or "Q4 2022" without "fiscal".
_RELEASE_QUARTER_PHRASES = (
    re.compile(
        rf"\b{ORD}[\s-]+(?:fiscal\s+)?quarter(?:\s+(?:and|&)\s+(?:full[\s-]+)?(?:fiscal\s+)?year)?"
        r"(?:\s+of)?(?:\s+fiscal)?(?:\s+year)?\s+(?:FY\s?)?'?(?P<year>\d{2}|(?:19|20)\d\d)\b",
        re.IGNORECASE,
    ),
    _FISCAL_QUARTER_PHRASES[1],
    re.compile(r"\bQ(?P<q>[1-4])\s*(?:of\s+)?(?:fiscal\s+|FY\s?)?'?(?P<year>\d{2}|(?:19|20)\d\d)\b"),
    _FISCAL_QUARTER_PHRASES[3],
)
_RELEASE_YEAR = re.compile(
    r"\b(?:full[\s-]+year|fiscal(?:\s+year)?|year[\s-]+end)\s+(?:FY\s?)?(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE
)

# --- ticker ---------------------------------------------------------------------------------------------------------

_TRADING_SYMBOL = re.compile(r"trading\s+symbols?(?:\s*\(s\))?", re.IGNORECASE)
_TICKER = re.compile(r"^[A-Z]{1,5}(?:[.-][A-Z]{1,2})?$")
_TICKER_STOP = {
    "A",
    "AND",
    "CLASS",
    "COMMON",
    "DUE",
    "EACH",
    "INC",
    "LLC",
    "NAME",
    "NASDAQ",
    "NONE",
    "NOTES",
    "NYSE",
    "OF",
    "ON",
    "OR",
    "PAR",
    "PER",
    "SHARE",
    "STOCK",
    "THE",
    "TITLE",
    "VALUE",
    "WHICH",
}
_TICKER_TABLE_END = re.compile(r"section\s+12\s*\(g\)|indicate\s+by\s+check\s+mark", re.IGNORECASE)
_TICKER_HEADER_WORDS = re.compile(
    r"name\s+of\s+(?:each\s+)?exchange(?:\s+on\s+which\s+registered)?|title\s+of\s+(?:each\s+)?class|registered",
    re.IGNORECASE,
)
# Glued HTML: "...par value per shareAAPLThe Nasdaq Stock Market LLC".
_GLUED_TICKER = re.compile(r"(?<=[a-z\s)])([A-Z]{1,5})(?=[A-Z][a-z]|\s|$)")


@dataclass
class FilingMeta:
    """What a filing is: who filed which form for which period.

    ``period`` is for display and filtering by people: "FY2023" (annual), "FY2024 Q2" or "Q ended 2023-07-29"
    (quarterly), "2023-05-03" (8-K event date), "FY2022 Q4" (earnings release). ``period_end`` is ISO or "".
    For an 8-K, ``fiscal_year`` is the calendar year of the reported event (its cover states no fiscal year).
    """

    company: str = ""
    form: str = "other"
    period: str = ""
    period_end: str = ""
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    ticker: str = ""
    registrant: Registrant = field(default_factory=Registrant)

    def to_dict(self) -> dict[str, Any]:
        """The metadata under the index's field names (schema.py); identity fields only when known."""
        values = asdict(self)
        out: dict[str, Any] = {
            schema.COMPANY: values["company"],
            schema.FORM: values["form"],
            schema.PERIOD: values["period"],
            schema.PERIOD_END: values["period_end"],
            schema.FISCAL_YEAR: values["fiscal_year"],
            schema.FISCAL_QUARTER: values["fiscal_quarter"],
            schema.TICKER: values["ticker"],
        }
        r = self.registrant
        identity: dict[str, Any] = {
            schema.CIK: r.cik,
            schema.TICKERS: r.tickers,
            schema.SECURITIES: [[symbol, exchange] for symbol, exchange in r.securities],
            schema.FILE_NUMBERS: list(r.file_numbers),
            schema.IRS_NUMBER: r.irs_number,
            schema.LEGAL_NAME: r.legal_name,
            schema.FORMER_NAMES: list(r.former_names),
        }
        out.update({key: value for key, value in identity.items() if value})
        return out


# --- helpers --------------------------------------------------------------------------------------------------------


def _prepare(text: str) -> str:
    """Unicode spaces and dashes to ASCII, line structure kept."""
    return normalize_whitespace(text.translate(_DASHES))


# The helpers below take text already passed through _prepare, so plain str.split() collapses its spaces.
def _lines(text: str) -> list[str]:
    return [line for line in (" ".join(raw.split()) for raw in text.split("\n")) if line]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _date_from_match(m: re.Match[str]) -> date | None:
    """The date captured by ``_DATE`` groups, or None if the calendar rejects it (e.g. "February 30")."""
    try:
        if m.group("m1"):
            return date(int(m.group("y1")), month_number(m.group("m1")), int(m.group("d1")))
        if m.group("m2"):
            return date(int(m.group("y2")), month_number(m.group("m2")), int(m.group("d2")))
        return date(int(m.group("y3")), int(m.group("m3")), int(m.group("d3")))
    except (ValueError, KeyError):
        return None


def _first_date(pattern: re.Pattern[str], text: str) -> date | None:
    for m in pattern.finditer(text):
        found = _date_from_match(m)
        if found:
            return found
    return None


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    day = min(d.day, _days_in_month(year, month + 1))
    return date(year, month + 1, day)


def _days_in_month(year: int, month: int) -> int:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return (nxt - date(year, month, 1)).days


def _months_between(start: date, end: date) -> float:
    return (end.year - start.year) * 12 + (end.month - start.month) + (end.day - start.day) / 30.0


# --- form -----------------------------------------------------------------------------------------------------------


def _form_from_groups(m: re.Match[str]) -> str | None:
    key = m.group("num") + m.group("letter").upper()
    if key not in _VALID_FORMS:
        return None
    form = f"{m.group('num')}-{m.group('letter').upper()}"
    if m.group("amend") and form in ("10-K", "10-Q", "8-K"):
        form += "/A"
    return form


def _cover_start(text: str) -> int | None:
    """Offset of the cover's "SECURITIES AND EXCHANGE COMMISSION" header, or None if ``text`` has no cover.

    Near the top of the page in any case; further down only in capitals, because HTML text may start with the
    hidden inline-XBRL header while prose pages say "filed with the Securities and Exchange Commission".
    """
    m = _SEC_HEADER.search(text, 0, 1500)
    if m is None:
        m = _SEC_HEADER_UPPER.search(text)
    return max(0, m.start() - 200) if m else None


def _cover_form(cover: str) -> str | None:
    """The form named on an SEC cover page (text from its header on), or None if the page names none."""
    head = _flat(cover)[:1500]
    form = None
    for line in _lines(cover)[:40]:
        m = _FORM_LINE.match(line)
        if m and (form := _form_from_groups(m)):
            break
    if form is None:
        m = _FORM_AFTER_HEADER.search(head)
        form = _form_from_groups(m) if m else None
    if form is None:
        # An odd or image-only FORM line: the checked report kind still tells annual from quarterly from current.
        kinds = {m.group("kind").upper() for m in _REPORT_KIND.finditer(head)}
        for kind, name in (("QUARTERLY", "10-Q"), ("ANNUAL", "10-K"), ("CURRENT", "8-K")):
            if kind in kinds:
                form = name
                break
    if form in ("10-K", "10-Q", "8-K"):
        label = _exact_name_label(head)
        if _AMENDMENT.search(head[:label] if label is not None else head[:600]):
            form += "/A"
    return form


def _is_earnings_release(text: str) -> bool:
    lines = _lines(text)[:_HEADLINE_LINES]
    for i, line in enumerate(lines):
        wrapped = f"{line} {lines[i + 1]}" if i + 1 < len(lines) else line
        if _HEADLINE_VERB_RESULTS.search(wrapped) or _HEADLINE_PERIOD_RESULTS.search(line):
            return True
    head = _flat(text)[:2500]
    if _RELEASE_SENTENCE.search(head):
        return True
    # An exhibit page that is a press release about results, whatever its headline says; or a page shaped like a
    # press release (a "News Release" / "For Immediate Release" banner or a wire-service dateline at the top) that
    # reports a quarter's or a year's results.
    if _EXHIBIT_99.search(head[:300]) and _RELEASE_WORDS.search(head):
        return True
    return bool(
        (_PRESS_BANNER.search(head[:600]) or _DATELINE.search(head[:1200]))
        and _RELEASE_WORDS.search(head)
        and any(p.search(head) for p in (*_RELEASE_QUARTER_PHRASES, _RELEASE_YEAR))
    )


def _metadata_form(pdf_metadata: dict[str, Any] | None) -> str | None:
    for key in ("subject", "keywords", "title"):
        value = str((pdf_metadata or {}).get(key) or "").translate(_DASHES).strip()
        for part in [value, *value.split(";")]:
            m = _META_FORM.search(part.strip())
            if m and (form := _form_from_groups(m)):
                return form
    return None


# --- company --------------------------------------------------------------------------------------------------------


def _clean_name(name: str) -> str:
    # "|" from a cover-page table row rendered as text ("THE HOME DEPOT, INC. | | |").
    name = normalize_line(name).strip(" ,;:-*®™|")
    # Small capitals extracted as "MGM R ESORTS I NTERNATIONAL": join only when the pattern repeats, so a single
    # "BANK A CORP"-like token pair is left alone.
    if len(_SMALL_CAPS.findall(name)) >= 2:
        name = _SMALL_CAPS.sub(r"\1\2", name)
    return name


def _looks_like_name(text: str) -> bool:
    if not 2 <= len(text) <= 120 or _NAME_NOISE.search(text):
        return False
    words = re.findall(r"[a-z0-9]+", text.lower())
    if all(word in _FORM_TITLE_WORDS for word in words):
        return False  # "ANNUAL REPORT", "QUARTERLY", "UNITED STATES"
    letters = sum(c.isalpha() for c in text)
    return letters >= 2 and letters >= 0.5 * len(text.replace(" ", ""))


def _exact_name_label(text: str) -> int | None:
    """Offset of "(Exact name of registrant ..." in ``text``: where ``\\(?\\s*Exact name ...`` would start."""
    m = _EXACT_NAME.search(text)
    if m is None:
        return None
    start = m.start()
    while start > 0 and text[start - 1].isspace():
        start -= 1
    return start - 1 if start > 0 and text[start - 1] == "(" else start


def _name_cell(line: str, column: int) -> str:
    """The name in a cover-table row rendered as "cell | cell | cell": the label's column, else the cell that reads
    as a company name."""
    if "|" not in line:
        return line
    cells = [cell.strip() for cell in line.split("|")]
    if 0 < column < len(cells) and cells[column]:
        return cells[column]
    filled = [cell for cell in cells if cell]
    named = [cell for cell in filled if _COMPANY_LINE.match(cell) and _looks_like_name(cell)]
    return (named or [cell for cell in filled if _looks_like_name(cell)] or [""])[0]


def _registrant_name(text: str) -> str:
    """The name printed above "(Exact name of registrant as specified in its charter)"."""
    label = _exact_name_label(text)
    if label is None:
        return ""
    # A cover laid out as a table: "(Exact name of registrant ...) | | |" under "ACME CORP | | |", or the label in
    # the middle column of "(State of incorporation) | (Exact name ...) | (I.R.S. No.)".
    line_start = text.rfind("\n", 0, label) + 1
    column = text.count("|", line_start, label)
    head = text[:line_start] if column else text[:label]
    lines = [line for line in _lines(head) if not set(line) <= set("_-|")]
    if not lines:
        return ""
    # Glued HTML keeps boilerplate on the label's line: "Commission File Number: 001-36743Apple Inc.".
    last = _name_cell(lines[-1], column)
    lines[-1] = last
    candidate = last
    boundary = _PREFIX_BOUNDARY.match(last)
    if boundary and last[boundary.end() :].strip():
        candidate = last[boundary.end() :].strip()
    if not _looks_like_name(candidate):
        return ""
    # A name wrapped over two lines: "THE GOLDMAN SACHS GROUP," / "INC." or "Foo &" / "Bar Corp".
    if len(lines) >= 2 and candidate == last:
        upper = _name_cell(lines[-2], column)
        if (_CONTINUATION.match(candidate) or upper.endswith(("&", ",", " and", " of"))) and _looks_like_name(upper):
            candidate = f"{upper} {candidate}"
    return _clean_name(candidate)


# A cover laid out as a table of registrants: "Commission File Number | Exact Name of Registrant ... | State | IRS
# No." over rows "1-12609 PG&E CORPORATION California 94-3234914" (a holding company and its utility file together).
_REGISTRANT_ROW = re.compile(
    rf"^\d{{1,3}}-\d{{3,6}}\s+(?P<name>[A-Z][\w&.,'’ -]{{1,80}}?\b{_LEGAL_FORM})(?:\s+[A-Z][A-Za-z]+){{1,3}}"
    r"\s+\d{2}-\d{7}$",
    re.IGNORECASE,
)


def _table_row_name(text: str) -> str:
    """The first registrant of a cover that lists its registrants as table rows under "Exact Name of Registrant"."""
    label = _exact_name_label(text)
    if label is None:
        return ""
    for line in _lines(text[label:])[:12]:
        m = _REGISTRANT_ROW.match(line)
        if m and _looks_like_name(m.group("name")):
            return _clean_name(m.group("name"))
    return ""


def _suffix_name(text: str) -> str:
    """A cover line that is a company name by its legal suffix ("MICROSOFT CORPORATION"), for covers without label."""
    for line in _lines(text):
        if re.search(r"securities\s+registered\s+pursuant", line, re.IGNORECASE):
            break
        if _COMPANY_LINE.match(line) and _looks_like_name(line) and "exchange" not in line.lower():
            return _clean_name(line)
    return ""


def _subsidiaries_name(texts: list[str]) -> str:
    """Running head "THE COCA-COLA COMPANY AND SUBSIDIARIES" of the pages after a cover whose name is a logo."""
    for text in texts:
        for line in _lines(text)[:8]:
            m = _SUBSIDIARIES.match(line)
            if m and _looks_like_name(m.group("name")):
                return _clean_name(m.group("name"))
    return ""


def _release_company(text: str) -> tuple[str, str]:
    """(company, ticker) from a release's first sentence "... – MGM Resorts International (NYSE: MGM)", or headline."""
    flat = _flat(text)[:4000]
    m = _EXCHANGE_TICKER.search(flat)
    if m:
        before = flat[max(0, m.start() - 150) : m.start()]
        # The dateline ends with a dash: "Las Vegas, Nevada, February 8, 2023 - MGM Resorts International".
        name = re.split(r"\s-{1,2}\s|--|/\s*PRNewswire\s*/|\)\s", before)[-1].strip()
        if _looks_like_name(name) and name[:1].isupper() and len(name.split()) <= 8:
            return _clean_name(name), m.group("ticker")
        return "", m.group("ticker")
    lines = _lines(text)[:_HEADLINE_LINES]
    for i, line in enumerate(lines):
        wrapped = f"{line} {lines[i + 1]}" if i + 1 < len(lines) else line
        verb = _HEADLINE_VERB.search(line)
        if verb and _HEADLINE_VERB_RESULTS.search(wrapped):
            name = _RELEASE_PREFIX.sub("", line[: verb.start()]).strip()
            if _looks_like_name(name) and len(name.split()) <= 8:
                return _clean_name(name), ""
    return "", ""


def _metadata_company(pdf_metadata: dict[str, Any] | None) -> str:
    meta = pdf_metadata or {}
    m = _META_TITLE_COMPANY.match(str(meta.get("title") or "").strip())
    if m:
        return _clean_name(m.group("name"))
    author = normalize_line(str(meta.get("author") or ""))
    if author and not _META_AUTHOR_JUNK.search(author) and re.search(rf"\b{_SUFFIX}$", author):
        return _clean_name(author)
    return ""


def _dei_company(parser_meta: dict[str, Any] | None) -> str:
    """dei:EntityRegistrantName of an inline-XBRL cover (HTML filings since 2019), when the cover text gave none."""
    dei = (parser_meta or {}).get("dei")
    name = normalize_line(str(dei.get("EntityRegistrantName") or "")) if isinstance(dei, dict) else ""
    return _clean_name(name) if name and _looks_like_name(name) else ""


def _source_company(source_name: str) -> str:
    """ "COCACOLA_2017_10K.pdf" -> "Cocacola"; the last resort, so it only needs to be recognizable.

    EDGAR's own file names ("d10k.htm", "form10-k.htm", an accession number) name no company: "" for those.
    """
    stem = Path(source_name).name.split(".")[0] if source_name else ""
    head = re.split(r"[_-]", stem, maxsplit=1)[0]
    if _STEM_NOT_A_NAME.fullmatch(head):
        return ""
    return head.title()


# --- ticker ---------------------------------------------------------------------------------------------------------


def _cover_ticker(texts: list[str]) -> str:
    """First symbol in the "Trading Symbol(s)" column of the Section 12(b) table."""
    for text in texts:
        header = _TRADING_SYMBOL.search(text)
        if not header:
            continue
        after = text[header.end() :]
        end = _TICKER_TABLE_END.search(after)
        table = after[: end.start()] if end else after[:3000]
        for line in _lines(table)[:60]:
            first = line.split()[0] if " " in line and re.match(r"^[A-Z]{1,5} \d", line) else line
            if _TICKER.match(first) and first not in _TICKER_STOP:
                return first
        # Glued HTML: no line breaks between the table's cells.
        flat = _TICKER_HEADER_WORDS.sub(" ", _flat(table))
        for m in _GLUED_TICKER.finditer(flat):
            if m.group(1) not in _TICKER_STOP:
                return m.group(1)
    return ""


# --- period ---------------------------------------------------------------------------------------------------------


def _fiscal_year_end_hint(flat_pages: list[str], period_end: date) -> tuple[int, int] | None:
    """(month, day) of the fiscal year end from the XBRL "--MM-DD", the prior 10-K or an explicit statement.

    Day 0 means "the end of that month" ("fiscal year ends on the Saturday nearest the end of January"). Returns
    None when the text states different months, since a guess is worse than no quarter.
    """
    months: Counter[tuple[int, int]] = Counter()
    for flat in flat_pages[:_COVER_PAGES]:
        for m in _XBRL_FYE.finditer(flat):
            months[(int(m.group("m")), int(m.group("d")))] += 1
    for flat in flat_pages:
        for m in _TEN_K_REFERENCE.finditer(flat):
            d = _date_from_match(m)
            if d and d != period_end:
                months[(d.month, d.day)] += 1
        for m in _FYE_STATEMENT.finditer(flat):
            day = int(m.group("day")) if m.group("day") else 0
            months[(month_number(m.group("month")), day)] += 1
    if not months:
        return None
    # 52/53-week years end on different days of the same month (or the first days of the next); group by month.
    by_month: Counter[int] = Counter()
    for (month, _day), n in months.items():
        by_month[month] += n
    if len(by_month) > 1:
        (_, n_top), (_, n_next) = by_month.most_common(2)
        if n_top < 2 * n_next:
            logger.debug("Conflicting fiscal year ends {months}; not using them", months=dict(months))
            return None
    top_month = by_month.most_common(1)[0][0]
    days = [day for (month, day), _ in months.most_common() if month == top_month and day]
    return top_month, (days[0] if days else 0)


def _quarter_from_fye(period_end: date, fye: tuple[int, int]) -> tuple[int, date] | None:
    """Fiscal quarter and the end of the fiscal year containing ``period_end``, from the year-end month/day."""
    month, day = fye
    year = period_end.year - 1
    day = day or _days_in_month(year, month)
    last_end = date(year, month, min(day, _days_in_month(year, month)))
    elapsed = _months_between(last_end, period_end)
    while elapsed > 12.5:
        last_end = _add_months(last_end, 12)
        elapsed = _months_between(last_end, period_end)
    if elapsed <= 0.5 or elapsed > 11.5:
        return None  # the period ends at the fiscal year end: not a quarter of it
    # Half a month of slack: 52/53-week quarters end a few days before or after the month boundary.
    quarter = math.ceil((elapsed - 0.5) / 3)
    return quarter, _add_months(last_end, 12)


def _ytd_matches(flat: str) -> Iterator[tuple[str, re.Match[str]]]:
    """(numbers, rest) of each "three and six months ended <date>" in ``flat``, left to right, not overlapping."""
    pos = 0
    while (nums := _YTD_NUMS.search(flat, pos)) is not None:
        tail = _YTD_TAIL.match(flat, nums.end())
        if tail is None:
            pos = nums.end()
            continue
        yield nums.group(), tail
        pos = tail.end()


def _quarter_from_ytd(flat_pages: list[str], period_end: date) -> int | None:
    """Quarter from the longest year-to-date column ending at ``period_end``: six months -> Q2, 39 weeks -> Q3."""
    best = 0
    for flat in flat_pages:
        for nums, m in _ytd_matches(flat):
            if _date_from_match(m) != period_end or re.search(r"ended|\d{4}", m.group("gap")):
                continue
            unit = m.group("unit").lower()
            for token in re.split(r"\s*(?:,|and|&)\s*", nums.lower()):
                n = int(token) if token.isdigit() else _NUMBER_WORDS.get(token, 0)
                quarter = n // 3 if unit == "month" and n in (3, 6, 9) else 0
                if unit == "week" and 10 <= n <= 40:
                    quarter = round(n / 13)
                best = max(best, quarter)
    return best or None


def _explicit_fiscal_quarters(flat_pages: list[str], period_end: date | None) -> Counter[tuple[int, int]]:
    """Votes for (quarter, fiscal year) from "second quarter of fiscal 2024"-style wording."""
    votes: Counter[tuple[int, int]] = Counter()
    for flat in flat_pages:
        for pattern in _FISCAL_QUARTER_PHRASES:
            for m in pattern.finditer(flat):
                quarter = ORDINALS[m.group("ord").lower()] if "ord" in m.groupdict() else int(m.group("q"))
                year = year4(m.group("year"))
                if period_end is None or period_end.year - 1 <= year <= period_end.year + 1:
                    votes[(quarter, year)] += 1
    return votes


def _quarterly_period(flat_pages: list[str], period_end: date) -> tuple[int | None, int | None]:
    """(fiscal_quarter, fiscal_year) of a 10-Q ending ``period_end``; (None, None) when not determinable."""
    by_fye: tuple[int, date] | None = None
    fye = _fiscal_year_end_hint(flat_pages, period_end)
    if fye:
        by_fye = _quarter_from_fye(period_end, fye)
    by_ytd = _quarter_from_ytd(flat_pages, period_end)
    votes = _explicit_fiscal_quarters(flat_pages, period_end)

    quarter: int | None = None
    year_end: date | None = None
    if by_fye and by_ytd and by_fye[0] != by_ytd:
        logger.warning(
            "Fiscal quarter evidence disagrees (year end {fye}, year-to-date Q{ytd}); leaving it unset",
            fye=fye,
            ytd=by_ytd,
        )
        return None, None
    if by_fye:
        quarter, year_end = by_fye
    elif by_ytd:
        quarter = by_ytd
        year_end = _add_months(period_end, 3 * (4 - quarter))
    elif votes:
        ranked = votes.most_common(2)
        # Wording alone is weak evidence (it also names past quarters): require a clear, repeated winner.
        if ranked[0][1] >= 2 and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            return ranked[0][0]
        return None, None
    if quarter is None or year_end is None:
        return None, None
    fiscal_year = annual_fiscal_year(year_end)
    # Companies that name a year ending in early February after the prior calendar year say so in the text.
    candidates = (fiscal_year - 1, fiscal_year)
    named = Counter({year: n for (q, year), n in votes.items() if q == quarter and year in candidates})
    if named:
        fiscal_year = named.most_common(1)[0][0]
    return quarter, fiscal_year


_ITEM_202 = re.compile(r"\bItem\s+2\.02\b|Results\s+of\s+Operations\s+and\s+Financial\s+Condition", re.IGNORECASE)


def _results_exhibit(pages: list[str]) -> str | None:
    """The page of an 8-K that is its results press release (Exhibit 99.x), if one of the first pages is."""
    for text in pages[1:]:
        if _is_earnings_release(text) or (_EXHIBIT_99.search(_flat(text)[:300]) and _RELEASE_WORDS.search(text)):
            return text
    return None


def _release_period(text: str) -> tuple[int | None, int | None, date | None]:
    """(fiscal_quarter, fiscal_year, period_end) from a release headline and first paragraph."""
    head = _flat(text)[:3000]
    quarter = year = None
    found: list[tuple[int, int, int]] = []
    for pattern in _RELEASE_QUARTER_PHRASES:
        m = pattern.search(head)
        if m:
            q = ORDINALS[m.group("ord").lower()] if "ord" in m.groupdict() else int(m.group("q"))
            found.append((m.start(), q, year4(m.group("year"))))
    if found:
        _, quarter, year = min(found)
    else:
        m = _RELEASE_YEAR.search(head)
        year = int(m.group("year")) if m else None
    end = None
    m = _RELEASE_END.search(head)
    if m:
        end = _date_from_match(m)
        if end and year is None:
            year = annual_fiscal_year(end) if m.group("and_year") or m.group("what").lower() == "year" else None
        if end and quarter is None and m.group("and_year"):
            quarter = 4  # "results for the quarter and year ended December 31" is the fourth quarter
    if year is None and end is None:
        # No period phrase: the release reports the quarter that ended before its dateline (results come out 2 to 8
        # weeks after a quarter closes), so the dateline gives the year of that quarter's end.
        m = _DATELINE.search(head[:1500])
        released = _dateline_date(m) if m else None
        if released is not None:
            year = _add_months(released, -1).year if released.month in (1, 2) else released.year
    if year is not None and not 1990 <= year <= 2100:
        year = None
    return quarter, year, end


def _dateline_date(m: re.Match[str]) -> date | None:
    try:
        return date(int(m.group("y")), month_number(m.group("m")), int(m.group("d")))
    except (ValueError, KeyError):
        return None


def _period_label(form: str, fiscal_year: int | None, quarter: int | None, period_end: str) -> str:
    if form.startswith("8-K"):
        return period_end
    if fiscal_year and quarter:
        return f"FY{fiscal_year} Q{quarter}"
    if quarter is None and fiscal_year and not form.startswith("10-Q"):
        return f"FY{fiscal_year}"
    return f"Q ended {period_end}" if period_end else ""


# --- entry point ----------------------------------------------------------------------------------------------------


def detect_filing_meta(
    page_texts: list[str], source_name: str = "", pdf_metadata: dict[str, Any] | None = None
) -> FilingMeta:
    """Read company, form, period, fiscal year/quarter and ticker from a filing's first pages.

    ``page_texts`` holds the raw text of each page (index 0 is page 1); only the first few pages are read (a
    dozen for a 10-Q's fiscal quarter). ``source_name`` (a file name such as "ACME_2020_10K.pdf") is the last
    resort for the company name; ``pdf_metadata`` (PyMuPDF ``Document.metadata``) helps when a cover is an image.
    """
    # Only the cover pages are normalized up front; a 10-Q reads further for its fiscal quarter.
    pages = [_prepare(t or "") for t in page_texts[: _COVER_PAGES + 2]]
    meta = FilingMeta()

    cover_index = None
    cover_start = 0
    for i, text in enumerate(pages[:_COVER_PAGES]):
        start = _cover_start(text)
        form = _cover_form(text[start:]) if start is not None else None
        if form:
            meta.form, cover_index, cover_start = form, i, start or 0
            break
    if cover_index is None:
        if any(_is_earnings_release(t) for t in pages[:2]):
            meta.form = "earnings_release"
        else:
            meta.form = _metadata_form(pdf_metadata) or "other"
            if meta.form != "other":
                logger.debug("Form {form} taken from PDF metadata of {source}", form=meta.form, source=source_name)
    cover_pages = pages[cover_index : cover_index + 3] if cover_index is not None else pages[:3]
    if cover_pages:
        cover_pages[0] = cover_pages[0][cover_start:]
    cover = cover_pages[0] if cover_pages else ""
    cover_flat = _flat(cover)

    # Company and ticker.
    release_company, release_ticker = _release_company(pages[0]) if pages else ("", "")
    if meta.form == "earnings_release":
        candidates = [release_company]
    else:
        candidates = [
            _registrant_name(cover),
            _table_row_name(cover),
            _suffix_name(cover),
            _subsidiaries_name(cover_pages[1:]),
        ]
    candidates += [_dei_company(pdf_metadata), _metadata_company(pdf_metadata), _source_company(source_name)]
    meta.company = next((c for c in candidates if c), "")
    meta.registrant = detect_registrant(
        page_texts,
        cover=cover if cover_index is not None else "",
        legal_name=meta.company,
        parser_meta=pdf_metadata,
    )
    if release_ticker and release_ticker not in meta.registrant.tickers:
        meta.registrant.securities.append((release_ticker, ""))
    meta.ticker = next(iter(meta.registrant.tickers), "") or _cover_ticker(cover_pages) or release_ticker

    # Period.
    end: date | None = None
    if meta.form.startswith(("10-K", "20-F", "40-F")):
        end = _first_date(_ANNUAL_END, cover_flat) or _first_date(_FISCAL_YEAR_ENDED, cover_flat)
        meta.fiscal_year = annual_fiscal_year(end) if end else None
    elif meta.form == "other":
        # Only the explicit cover phrase: "fiscal year ended" in arbitrary prose is often about another year.
        end = _first_date(_ANNUAL_END, cover_flat)
        meta.fiscal_year = annual_fiscal_year(end) if end else None
    elif meta.form.startswith("10-Q"):
        end = _first_date(_QUARTER_END, cover_flat)
        if end:
            more = [_prepare(t or "") for t in page_texts[len(pages) : _QUARTER_SCAN_PAGES]]
            flat_pages = [_flat(p) for p in pages + more]
            meta.fiscal_quarter, meta.fiscal_year = _quarterly_period(flat_pages, end)
    elif meta.form.startswith("8-K"):
        end = _first_date(_EVENT_DATE_AFTER, cover_flat) or _first_date(_EVENT_DATE_BEFORE, cover_flat)
        meta.fiscal_year = end.year if end else None
        # An 8-K furnishing results (Item 2.02 with the press release as Exhibit 99.1) reports the release's
        # period, not the event's: fiscal quarter and year are read from the release itself.
        release = _results_exhibit(pages) if _ITEM_202.search(" ".join(_flat(p) for p in pages[:3])) else None
        if release is not None:
            quarter, year, _release_end = _release_period(release)
            if year is not None:
                meta.fiscal_quarter, meta.fiscal_year = quarter, year
    elif meta.form == "earnings_release" and pages:
        meta.fiscal_quarter, meta.fiscal_year, end = _release_period(pages[0])
    meta.period_end = end.isoformat() if end else ""
    meta.period = _period_label(meta.form, meta.fiscal_year, meta.fiscal_quarter, meta.period_end)
    logger.debug("Filing meta of {source}: {meta}", source=source_name or "<unnamed>", meta=meta)
    return meta
