"""Filing scope: which filings of a shared index a question is about (company, fiscal period, form).

In an index of many filings, plain retrieval readily answers from the wrong company or, far more often, from
another year of the right company: every 10-K of a company talks about revenue and capital expenditure. So a
question is first scoped to the filings it names. This module is plain Python (no Haystack):

* ``parse_question_scope`` reads what a question says about period and form: fiscal years ("FY2019", "fiscal
  2023", "FY 2021", "FY24"), quarters ("Q2 of FY2024", "FY2023Q1", "fourth quarter 2022", "H1 FY2023"), calendar
  years ("in 2022"), dates ("May 3, 2023", "May 2023"), form hints ("10-K", "annual report", "8-K", "earnings
  release") and candidate company names (capitalized spans, used only to explain a miss).
* ``CompanyIndex`` turns the indexed filings' company names and tickers into aliases and finds them in a question
  (exact name or alias, case-sensitive ticker, fuzzy name for small typos).
* ``resolve_scope`` scores the filings of the mentioned companies against the question's period and form and
  returns a ranked, explained ``ScopeDecision``.

Scoping rules (the weights are the module constants below; each score line becomes a human-readable reason):

1. An explicit filing filter (a list of filing ids) overrides everything.
2. Company first. Filings of companies the question names are the only candidates; several named companies all
   stay in scope. With no recognized company: a single-company index is scoped to that company, otherwise the
   scope is every filing (unscoped) with the reason, never an empty scope.
3. Target period. Of the periods a question mentions, the one introduced by "as of" wins; otherwise the latest
   one that is not forward-looking ("expect to pay in 2024", "guidance for FY2023"): "FY2017-FY2019 average" and
   "change between FY2022 and FY2023" are both answered by the latest year's filing, which carries the earlier
   years as comparatives. A filing scores for the target's fiscal year (a "FY" year is compared with
   ``fiscal_year`` only; a calendar year also with the ``period_end`` year), less for the next year (it reports the
   target year as comparative) and a little for the other years mentioned; for the quarter (exact fiscal quarter;
   an annual report for Q4; a different quarter is penalized). A question without a quarter prefers annual
   reports, then fourth-quarter releases (they report the full year); an 8-K is an event report and is not
   preferred for a period unless the question gives a date or asks for an 8-K.
4. Dates ("on May 26, 2023") are compared with ``period_end``: exact day, within a week (an 8-K is filed up to four
   business days after its event), or the same month.
5. Form hints add to matching forms ("annual report" -> 10-K/20-F/40-F, "quarterly report" -> 10-Q, "8-K",
   "earnings/press release" -> earnings_release); forward-looking or non-GAAP wording ("guidance", "adjusted
   EBITDA") is a weak hint for an earnings release. An 8-K whose Items fit the question's topic ("vote", "annual
   meeting" -> Item 5.07) gains a little, which separates 8-Ks of the same month.
6. No period mentioned: every filing of the company is a candidate and annual reports come first, most recent
   first. The rationale: an undated question is usually about the current state or the history, which the
   latest 10-K covers best, and the older ones that follow keep the history in scope.
7. Selection: per company, filings scoring within ``SCOPE_MARGIN`` of that company's best filing, best first,
   companies interleaved, at most ``max_filings``. Ties go to the more complete form, then to the year closest to
   the target, then to the most recent filing.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Literal

from haystack_fin.core import schema

logger = logging.getLogger(__name__)

# --- weights (see the module docstring) -----------------------------------------------------------------------------

YEAR_MATCH = 3.0
NEXT_YEAR = 1.0  # the following year's filing reports the target year as its comparative
OTHER_YEAR = 0.5  # a filing of another year the question mentions ("FY2021 and FY2022")
QUARTER_MATCH = 2.0
QUARTER_MISMATCH = -1.0
ANNUAL_FOR_Q4 = 1.0
ANNUAL_FOR_YEAR = 1.5
Q4_FOR_YEAR = 0.75  # "fourth quarter and full year results"
EVENT_FOR_PERIOD = -1.0  # an 8-K asked about a period, with no date and no 8-K hint
DATE_EXACT = 4.0
DATE_NEAR = 3.0
DATE_SAME_MONTH = 2.0  # the question names only the month ("8-K dated May 2023")
DATE_SAME_MONTH_OTHER_DAY = 1.0
FORM_MATCH = 2.0
FORM_RELATED = 1.0  # earnings release <-> 8-K: releases are filed as 8-K exhibit 99.1
FORM_WEAK = 1.0
EVENT_TOPIC = 1.0
# A filing stays in scope when it scores within this margin of its company's best filing. 1.5 keeps a Q4 release
# next to the 10-K of the same year but drops the neighbouring years (at most NEXT_YEAR + ANNUAL_FOR_YEAR = 2.5
# against YEAR_MATCH + ANNUAL_FOR_YEAR = 4.5).
SCOPE_MARGIN = 1.5
NEAR_DAYS = 7

ANNUAL_FORMS = frozenset({"10-K", "20-F", "40-F"})
# Tie-break between equally scored filings: the more complete document first.
_FORM_RANK = {"10-K": 5, "20-F": 5, "40-F": 5, "10-Q": 4, "earnings_release": 3, "8-K": 2, "other": 1}

# --- words ----------------------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Ordinary English and finance words. A company alias made only of them ("Target", "Visa", "Best Buy") must be
# capitalized in the question, a first-word alias made of one ("best" from Best Buy, "american" from American
# Express) is not generated, and fuzzy matching never "corrects" them.
_ORDINARY_WORDS = _words(
    """
    a about above across after all also american an and annual any apple are as asset assets at average bank based
    be been being best between big block blue bright business but buy by can capital cash central century change
    chase choice citizens city clear common community company consolidated corporate cost credit current data day
    days debt did digital discover do does dollar domestic down during each east eastern energy equity every
    express family federal fidelity financial first fiscal for free from general global gold golden good great
    group growth had has have health high home how in income interest international is it its key labor last
    liberty life live low main market match meta more most national net new next north northern not of old on one
    open or other our over pacific people peoples per plus principal progressive public quality quarter rate real
    regional republic resources return revenue royal sales same security service services shares south southern
    standard state states steel stock street summit target than that the their there these this total trade
    travelers trust two under union united universal up us value visa was west western what when where which who
    why will with world year years
    """
)
# Upper-case words and finance abbreviations that are also tickers (GM, IT, ALL, ON, ...): such a ticker counts only
# written as "$GM", "ticker GM" or "(NYSE: GM)".
_AMBIGUOUS_TICKERS = _words(
    """
    A I AN AS AT BE BY DO GO HE IF IN IS IT ME MY NO OF OK ON OR SO TO UP US WE AI AP AR CF DA EU EV FX GM HR NA NI
    OM PB PE PP RD UK ALL AND ANY ARE BIG CAN CEO CFO COO CTO FOR HAS KEY LOW NEW NOT NOW ONE THE TWO USA USD EUR GBP
    EPS ROA ROE ROI ROIC EBIT EBITDA EBITDAR GAAP FCF CAPEX COGS SGA PPE DSO DPO DIO AGM SEC IPO LTM TTM YOY QOQ FY
    NOI FFO AFFO NIM ESG TAM ARPU KPI CAGR WACC NPV IRR LIFO FIFO AOCI OCI SBC RSU ETF REIT LLC INC CORP CO BEST
    """
)
# Legal-form and group words dropped from the end of a company name to build its base alias.
_NAME_SUFFIXES = _words(
    """
    inc incorporated corp corporation co company companies cos ltd limited plc llc lp llp nv sa ag se spa bv holdings
    holding group international intl com the and
    """
)

# 8-K Items by what a question about them says (SEC Form 8-K item titles, in question words).
_EVENT_TOPICS: dict[str, tuple[str, ...]] = {
    "1.01": ("agreement", "contract", "credit agreement", "revolving", "merger agreement", "entered into"),
    "1.02": ("terminate", "terminated", "termination"),
    "2.01": ("acquisition", "acquire", "acquired", "disposition", "divest", "divestiture", "completed the sale"),
    "2.02": ("results", "earnings", "quarterly results"),
    "2.03": ("borrow", "borrowing", "credit facility", "revolving", "notes", "loan", "debt", "indebtedness"),
    "2.05": ("restructuring", "layoff", "layoffs", "exit", "disposal"),
    "2.06": ("impairment", "impaired"),
    "5.02": ("ceo", "cfo", "officer", "director", "resign", "resigned", "appoint", "appointed", "departure", "retire"),
    "5.03": ("bylaws", "articles of incorporation", "charter", "fiscal year change"),
    "5.07": (
        "vote",
        "voted",
        "votes",
        "voting",
        "annual meeting",
        "shareholder meeting",
        "agm",
        "proposal",
        "elected",
        "election of directors",
        "shareholders approved",
    ),
}

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11,
    "dec": 12,
}  # fmt: skip
# Capitalized month names only: "may" is also a verb.
_MONTH = (
    r"(?:Jan(?:uary|\.)?|Feb(?:ruary|\.)?|Mar(?:ch|\.)?|Apr(?:il|\.)?|May|June?|July?|Aug(?:ust|\.)?"
    r"|Sep(?:tember|t\.?|\.)?|Oct(?:ober|\.)?|Nov(?:ember|\.)?|Dec(?:ember|\.)?"
    r"|JANUARY|FEBRUARY|MARCH|APRIL|MAY|JUNE|JULY|AUGUST|SEPTEMBER|OCTOBER|NOVEMBER|DECEMBER)"
)
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_ORD = r"(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)"
_Y = r"'?(?P<y>(?:19|20)\d\d|\d\d)"  # four digits, or two after FY/fiscal/apostrophe
_Y4 = r"(?P<y>(?:19|20)\d\d)"

_I = re.IGNORECASE
# Optional separators carry the spaces after them ("\s*(?:-\s*)?", not "\s*-?\s*"): two adjacent "\s*" split a run
# of spaces in quadratically many ways before a match fails (here and in the date patterns below).
# (pattern, fiscal): the year is a fiscal year (compared with fiscal_year only) or a calendar year. Order matters:
# earlier patterns consume their text so that later, looser ones do not read it again.
_PERIOD_PATTERNS: tuple[tuple[re.Pattern[str], bool], ...] = (
    (re.compile(rf"\bFY\s?{_Y}\s*(?:[-/]\s*)?Q(?P<q>[1-4])\b", _I), True),  # FY2023Q1, FY24 Q2
    (re.compile(rf"\bQ(?P<q>[1-4])\s*(?:of\s+|,\s*)?(?:the\s+)?(?:FY|fiscal(?:\s+year)?)\s*{_Y}\b", _I), True),
    (re.compile(rf"\bfiscal\s+Q(?P<q>[1-4])\s*(?:of\s+)?{_Y4}\b", _I), True),
    (
        re.compile(
            rf"\b{_ORD}[\s-]+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|FY\s?){_Y}\b", _I
        ),
        True,
    ),
    (re.compile(rf"\b{_ORD}\s+fiscal\s+quarter\s+(?:of\s+)?(?:(?:the\s+)?year\s+)?{_Y4}\b", _I), True),
    (re.compile(rf"\b{_ORD}[\s-]+quarter\s+(?:of\s+)?(?:(?:the\s+)?(?:calendar\s+)?year\s+)?{_Y4}\b", _I), False),
    (re.compile(r"\bQ(?P<q>[1-4])\s*(?:of\s+)?(?:'(?P<y2>\d\d)|(?P<y>(?:19|20)\d\d))\b", _I), False),
    (re.compile(rf"\b{_Y4}\s*(?:-\s*)?Q(?P<q>[1-4])\b", _I), False),
)
# H1/H2 and first/second half: the first half is what a second-quarter report covers, the second half ends the year.
_HALF = re.compile(
    r"\b(?:H(?P<h>[12])|(?P<hw>first|second)\s+half)(?:\s+(?:of\s+)?(?:the\s+)?|\s*)"
    r"(?:(?P<f>FY|fiscal(?:\s+year)?)\s*'?(?P<fy>(?:19|20)\d\d|\d\d)|(?P<y>(?:19|20)\d\d))?\b",
    _I,
)
_YTD = re.compile(r"\b(?P<n>six|nine|6|9)[\s-]+months\b", _I)
_QUARTER_ALONE = re.compile(rf"\b(?:{_ORD}[\s-]+(?:fiscal\s+)?quarter|Q(?P<q>[1-4]))\b", _I)
_FY_RANGE = re.compile(
    rf"\b(?:FY|fiscal(?:\s+years?)?)\s?{_Y}\s*(?:-|–|—|to|through|thru|and|&)\s*(?:FY\s?)?'?(?P<y2>(?:19|20)\d\d|\d\d)\b",
    _I,
)
_FY = re.compile(rf"\bFYE?\s?{_Y}\b", _I)  # "FYE 2022": fiscal year end
_FISCAL_YEAR = re.compile(rf"\bfiscal\s+(?:years?\s+)?{_Y}\b", _I)
_YEAR_FISCAL = re.compile(rf"\b{_Y4}\s+fiscal\s+(?:year|period)\b", _I)
_DAY_DATES = (
    re.compile(rf"\b(?P<m>{_MONTH})\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>(?:19|20)\d\d)\b"),
    re.compile(rf"\b(?P<d>\d{{1,2}})\s+(?P<m>{_MONTH})(?:\s*,)?\s+(?P<y>(?:19|20)\d\d)\b"),
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)-(?P<d>[0-3]\d)\b"),
    re.compile(r"\b(?P<mn>[01]?\d)/(?P<d>[0-3]?\d)/(?P<y>(?:19|20)\d\d)\b"),
)
_MONTH_DATE = re.compile(rf"\b(?P<m>{_MONTH})\s*(?:of\s+)?(?:,\s*)?(?P<y>(?:19|20)\d\d)\b")
# Not an amount: "$2019", "2020 million", "2021%".
_BARE_YEAR = re.compile(r"(?<![\d$.,/])(?P<y>(?:19|20)\d\d)(?![\d%]|\s*(?:million|billion|thousand|bn|mm)\b)", _I)

_ANCHOR = re.compile(r"\bas\s+(?:of|at)\s+(?:the\s+end\s+of\s+)?(?:the\s+)?(?:fiscal\s+year\s+)?$", _I)
_FORWARD_WORDS = _words(
    "expect expects expected expecting anticipate anticipates anticipated project projects projected projection "
    "forecast forecasts forecasted plan plans planned will guidance outlook target targets maturing matures "
    "mature maturity maturities due until beyond thereafter"
)
_FORWARD_WINDOW = 7  # words before a year that can make it forward-looking

_FORM_HINTS: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"\b10-?K\b|\bannual\s+(?:report|filing)\b", _I), "10-K", False),
    (re.compile(r"\b10-?Q\b|\bquarterly\s+(?:report|filing)\b", _I), "10-Q", False),
    (re.compile(r"\b8-?K\b|\bcurrent\s+report\b", _I), "8-K", False),
    (re.compile(r"\b20-?F\b", _I), "20-F", False),
    (re.compile(r"\b40-?F\b", _I), "40-F", False),
    (
        re.compile(
            r"\b(?:earnings|press|news)\s+(?:release|report|announcement|call)s?\b"
            r"|\b(?:quarterly|q[1-4])\s+earnings\b(?!\s+per\s+share)|\bresults\s+(?:release|announcement)\b",
            _I,
        ),
        "earnings_release",
        False,
    ),
    # Forward-looking and non-GAAP vocabulary lives in earnings releases more than in 10-K/10-Q text.
    (
        re.compile(
            r"\bguidance\b|\boutlook\b|\bnon-gaap\b|\bconstant\s+currency\b|\bcore\s+eps\b"
            r"|\badjusted\s+(?:ebit|ebitda|ebitdar|eps|earnings|operating\s+income|net\s+income)\b",
            _I,
        ),
        "earnings_release",
        True,
    ),
)
# Bare "earnings" is a line item (retained earnings, earnings per share), not a form: only the phrases above count.

# Capitalized words that start questions or name metrics, periods and units: never a company candidate.
_NOT_NAMES = _words(
    """
    what which who whom whose when where why how is are was were do does did has have had can could should would will
    may might must according based basing given using use assuming assume in on at of for from by as to the a an
    and or please calculate compute answer round provide give state respond we i if among between during this
    that these those its their it our total net gross operating adjusted annual quarterly fiscal fy q1 q2 q3 q4 h1
    h2 usd us u.s ceo cfo agm eps ebit ebitda ebitdar gaap roa roe roi capex cogs ppe sec form item part note
    compare list describe explain summarize show find tell identify determine estimate evaluate assess per under
    after before since over with within without into through
    highest lowest worst top balance sheet income statement cash flow flows statements yes no
    """
)


# --- data -----------------------------------------------------------------------------------------------------------


def _form_family(form: str) -> str:
    """ "10-K/A" -> "10-K"; unknown forms keep their name."""
    form = (form or "other").strip()
    return form[:-2] if form.upper().endswith("/A") else form


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _iso_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value[:10]) if value else None
    except ValueError:
        return None


@dataclass(frozen=True)
class FilingProfile:
    """What the index knows about one filing: its ``filing`` node's meta (see ``FilingSplitter._filing_node``).

    ``items`` holds the filing's Item codes; for an 8-K they say which event it reports ("5.07": a shareholder vote).
    """

    filing_id: str
    company: str = ""
    ticker: str = ""
    form: str = "other"
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    period_end: str = ""
    period: str = ""
    items: tuple[str, ...] = ()

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> FilingProfile:
        """Profile from a filing node's meta; tolerant of missing keys and of numbers stored as strings."""
        items: list[str] = []
        for it in meta.get(schema.ITEMS) or ():
            code = it.get("item") if isinstance(it, Mapping) else it
            if code:
                items.append(str(code))
        return cls(
            filing_id=str(meta.get(schema.FILING_ID) or ""),
            company=str(meta.get(schema.COMPANY) or ""),
            ticker=str(meta.get(schema.TICKER) or ""),
            form=str(meta.get(schema.FORM) or "other"),
            fiscal_year=_as_int(meta.get(schema.FISCAL_YEAR)),
            fiscal_quarter=_as_int(meta.get(schema.FISCAL_QUARTER)),
            period_end=str(meta.get(schema.PERIOD_END) or ""),
            period=str(meta.get(schema.PERIOD) or ""),
            items=tuple(items),
        )

    @property
    def form_family(self) -> str:
        return _form_family(self.form)

    @property
    def period_end_date(self) -> date | None:
        return _iso_date(self.period_end)

    @property
    def is_annual(self) -> bool:
        """An annual report: 10-K/20-F/40-F, or an "other" document with a fiscal year and no quarter."""
        family = self.form_family
        if family in ANNUAL_FORMS:
            return True
        return family == "other" and self.fiscal_year is not None and self.fiscal_quarter is None


@dataclass(frozen=True)
class TextSpan:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class PeriodMention:
    """A fiscal or calendar period named in a question. ``quarter`` None means the year as a whole."""

    text: str
    start: int
    end: int
    year: int | None
    quarter: int | None = None
    fiscal: bool = False  # "FY2019", "fiscal 2023": compared with fiscal_year only
    anchored: bool = False  # "as of ...": the point of view of the question
    forward: bool = False  # "expect to pay in 2024": not the period of the filing

    @property
    def label(self) -> str:
        year = "" if self.year is None else (f"FY{self.year}" if self.fiscal else str(self.year))
        quarter = f"Q{self.quarter}" if self.quarter else ""
        return " ".join(p for p in (year, quarter) if p) or "?"


@dataclass(frozen=True)
class DateMention:
    text: str
    start: int
    end: int
    value: date  # the first of the month for a month-precision mention
    precision: Literal["day", "month"] = "day"
    anchored: bool = False
    forward: bool = False


@dataclass(frozen=True)
class FormHint:
    form: str  # "10-K", "10-Q", "8-K", "20-F", "40-F", "earnings_release"
    text: str
    start: int
    end: int
    weak: bool = False


@dataclass(frozen=True)
class QuestionScope:
    """What a question says about its filing: periods, dates, forms, and capitalized spans that may name a company."""

    question: str
    periods: tuple[PeriodMention, ...] = ()
    dates: tuple[DateMention, ...] = ()
    forms: tuple[FormHint, ...] = ()
    company_spans: tuple[TextSpan, ...] = ()

    @property
    def years(self) -> list[int]:
        ys = {p.year for p in self.periods if p.year is not None} | {d.value.year for d in self.dates}
        return sorted(ys)

    @property
    def fiscal_years(self) -> list[int]:
        return sorted({p.year for p in self.periods if p.fiscal and p.year is not None})

    @property
    def calendar_years(self) -> list[int]:
        ys = {p.year for p in self.periods if not p.fiscal and p.year is not None} | {d.value.year for d in self.dates}
        return sorted(ys)

    @property
    def quarters(self) -> list[int]:
        return sorted({p.quarter for p in self.periods if p.quarter})

    def target(self) -> PeriodMention | None:
        """The period the question is asked about (rule 3 of the module docstring)."""
        candidates = list(self.periods) + [
            PeriodMention(d.text, d.start, d.end, d.value.year, None, False, d.anchored, d.forward) for d in self.dates
        ]
        if not candidates:
            return None
        pool = [c for c in candidates if c.anchored] or [c for c in candidates if not c.forward] or candidates
        dated = [c for c in pool if c.year is not None]
        if not dated:
            return max(pool, key=lambda c: c.quarter or 0)
        # The whole year sorts after its fourth quarter: an annual report also covers every quarter.
        best = max(dated, key=lambda c: (c.year, c.quarter if c.quarter else 4.5, c.fiscal))
        if best.quarter is None:
            # "second quarter" said apart from its year ("in the second quarter of that year, 2023").
            loose = [c for c in pool if c.year is None and c.quarter]
            if len({c.quarter for c in loose}) == 1:
                best = replace(best, quarter=loose[0].quarter)
        return best

    def to_dict(self) -> dict[str, Any]:
        target = self.target()
        return {
            "periods": [_period_dict(p) for p in self.periods],
            "dates": [
                {"text": d.text, "date": d.value.isoformat(), "precision": d.precision, "anchored": d.anchored}
                for d in self.dates
            ],
            "forms": [{"form": f.form, "text": f.text, "weak": f.weak} for f in self.forms],
            "company_spans": [s.text for s in self.company_spans],
            "target": _period_dict(target) if target else None,
        }


def _period_dict(p: PeriodMention) -> dict[str, Any]:
    return {
        "text": p.text,
        "year": p.year,
        "quarter": p.quarter,
        "fiscal": p.fiscal,
        "anchored": p.anchored,
        "forward": p.forward,
        "label": p.label,
    }


# --- question parsing -----------------------------------------------------------------------------------------------


def _year4(raw: str) -> int:
    y = int(raw.lstrip("'"))
    return y if y >= 100 else 2000 + y


def _is_anchored(before: str) -> bool:
    return bool(_ANCHOR.search(before))


def _is_forward(before: str) -> bool:
    words = re.findall(r"[a-z]+", before.lower())[-_FORWARD_WINDOW:]
    if words and words[-1] == "by":  # "by 2030"
        return True
    return any(w in _FORWARD_WORDS for w in words)


class _Masked:
    """The question with consumed spans blanked out, so looser patterns do not re-read a period.

    Blanked in a character list and joined when next read: rebuilding the string at every consumed match was
    quadratic in a question with thousands of periods.
    """

    def __init__(self, text: str) -> None:
        self.original = text
        self._chars = list(text)
        self._text: str | None = text

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self._chars)
        return self._text

    def consume(self, start: int, end: int) -> None:
        self._chars[start:end] = " " * (end - start)
        self._text = None


def _period(text: str, m: re.Match[str], year: int | None, quarter: int | None, fiscal: bool) -> PeriodMention:
    # Flags (anchored, forward) are set once all mentions are known: see _with_context.
    return PeriodMention(text[m.start() : m.end()].strip(), m.start(), m.end(), year, quarter, fiscal)


def _parse_periods(masked: _Masked) -> list[PeriodMention]:
    text = masked.original
    found: list[PeriodMention] = []

    def take(m: re.Match[str], year: int | None, quarter: int | None, fiscal: bool) -> None:
        found.append(_period(text, m, year, quarter, fiscal))
        masked.consume(m.start(), m.end())

    for pattern, fiscal in _PERIOD_PATTERNS:
        for m in list(pattern.finditer(masked.text)):
            groups = m.groupdict()
            quarter = _ORDINALS[groups["ord"].lower()] if groups.get("ord") else int(groups["q"])
            raw_year = groups.get("y") or groups.get("y2")
            take(m, _year4(raw_year) if raw_year else None, quarter, fiscal)
    for m in list(_HALF.finditer(masked.text)):
        first_half = (m.group("h") or "") == "1" or (m.group("hw") or "").lower() == "first"
        raw = m.group("fy") or m.group("y")
        # Two-digit years only after FY/fiscal ("H1 FY23"); "H1 23" is too loose to read.
        year = _year4(raw) if raw and (len(raw.lstrip("'")) == 4 or m.group("f")) else None
        take(m, year, 2 if first_half else None, bool(m.group("f")))
    for m in list(_YTD.finditer(masked.text)):
        take(m, None, 2 if m.group("n").lower() in ("six", "6") else 3, False)
    for m in list(_FY_RANGE.finditer(masked.text)):
        y1, y2 = _year4(m.group("y")), _year4(m.group("y2"))
        if abs(y2 - y1) > 10:
            continue
        found.append(_period(text, m, y1, None, True))
        found.append(_period(text, m, y2, None, True))
        masked.consume(m.start(), m.end())
    for pattern in (_FY, _FISCAL_YEAR, _YEAR_FISCAL):
        for m in list(pattern.finditer(masked.text)):
            take(m, _year4(m.group("y")), None, True)
    for m in list(_QUARTER_ALONE.finditer(masked.text)):
        take(m, None, _ORDINALS[m.group("ord").lower()] if m.group("ord") else int(m.group("q")), False)
    return found


def _month_number(name: str) -> int:
    return _MONTHS[name[:3].lower()]


def _parse_dates(masked: _Masked) -> list[DateMention]:
    text = masked.original
    found: list[DateMention] = []
    for pattern in _DAY_DATES:
        for m in list(pattern.finditer(masked.text)):
            groups = m.groupdict()
            month = _month_number(groups["m"]) if groups.get("m") else int(groups["mn"])
            try:
                value = date(int(groups["y"]), month, int(groups["d"]))
            except ValueError:
                continue
            found.append(DateMention(text[m.start() : m.end()], m.start(), m.end(), value, "day"))
            masked.consume(m.start(), m.end())
    for m in list(_MONTH_DATE.finditer(masked.text)):
        value = date(int(m.group("y")), _month_number(m.group("m")), 1)
        found.append(DateMention(text[m.start() : m.end()], m.start(), m.end(), value, "month"))
        masked.consume(m.start(), m.end())
    return found


def _parse_forms(text: str) -> list[FormHint]:
    hints: list[FormHint] = []
    for pattern, form, weak in _FORM_HINTS:
        for m in pattern.finditer(text):
            hints.append(FormHint(form, m.group(0), m.start(), m.end(), weak))
    return hints


_NAME_TOKEN = re.compile(r"[A-Z0-9][\w.&'’-]*")
_CONNECTORS = frozenset({"of", "and", "&", "de", "du", "la"})
_PERIOD_WORD = re.compile(r"(?:fy|q|h)?'?\d{2,4}(?:q[1-4])?|\d+(?:\.\d+)?%?|q[1-4]|h[12]|\d{1,2}-?[kqf](?:/a)?")


def _company_spans(text: str) -> list[TextSpan]:
    """Capitalized runs that may name a company ("Activision Blizzard", "3M", "Bank of America").

    Only used to explain a question whose company is not in the index, so a loose heuristic is enough.
    """
    spans: list[TextSpan] = []
    run: list[tuple[int, int]] = []

    def flush() -> None:
        while run and text[run[-1][0] : run[-1][1]].lower() in _CONNECTORS:
            run.pop()
        if run:
            spans.append(TextSpan(text[run[0][0] : run[-1][1]], run[0][0], run[-1][1]))
        run.clear()

    for m in re.finditer(r"\S+", text):
        raw = m.group(0)
        word = re.sub(r"(?:['’]s|['’])$", "", raw.strip(',.;:?!()"[]'))
        if not word:
            flush()
            continue
        start = m.start() + raw.find(word)
        lower = word.lower()
        is_name = (
            _NAME_TOKEN.fullmatch(word) is not None
            and lower not in _NOT_NAMES
            and not _PERIOD_WORD.fullmatch(lower)
            and not re.fullmatch(_MONTH, word)
        )
        if is_name or (run and lower in _CONNECTORS):
            run.append((start, start + len(word)))
        else:
            flush()
        # Punctuation and possessives end a name: "Best Buy's quick ratio", "for MGM, ...".
        if raw[-1:] in ',.;:?!)"' or raw.endswith(("'s", "’s")):
            flush()
    flush()
    return spans


def _with_context(
    text: str, periods: list[PeriodMention], dates: list[DateMention]
) -> tuple[list[PeriodMention], list[DateMention]]:
    """Set ``anchored`` and ``forward`` from the words between a mention and the mention before it.

    The window stops at the previous period so that "guidance for 2024 per its FY2022 report" marks only 2024.
    """
    ends = sorted(m.end for m in (*periods, *dates))

    def flags(start: int) -> tuple[bool, bool]:
        k = bisect_right(ends, start)  # the latest end at or before ``start`` (a scan of all spans was quadratic)
        prev_end = ends[k - 1] if k else 0
        before = text[max(prev_end, start - 80) : start]
        return _is_anchored(before), _is_forward(before)

    periods = [replace(p, anchored=a, forward=f) for p in periods for a, f in [flags(p.start)]]
    dates = [replace(d, anchored=a, forward=f) for d in dates for a, f in [flags(d.start)]]
    return periods, dates


def parse_question_scope(question: str) -> QuestionScope:
    """Read the periods, dates, form hints and candidate company names a question mentions."""
    masked = _Masked(question)
    # Dates first: "December 31, 2021" must not also count as the bare year 2021.
    dates = _parse_dates(masked)
    periods = _parse_periods(masked)
    for m in _BARE_YEAR.finditer(masked.text):
        periods.append(_period(question, m, int(m.group("y")), None, False))
    periods, dates = _with_context(question, periods, dates)
    return QuestionScope(
        question=question,
        periods=tuple(sorted(periods, key=lambda p: p.start)),
        dates=tuple(sorted(dates, key=lambda d: d.start)),
        forms=tuple(_parse_forms(question)),
        company_spans=tuple(_company_spans(question)),
    )


# --- companies ------------------------------------------------------------------------------------------------------

_CAMEL_LEGAL = re.compile(r"^(?P<head>[A-Z][a-z]+(?:[A-Z][a-z]+)*?)(?P<tail>Co|Corp|Inc)$")
_TICKER_CONTEXT = re.compile(r"(?:ticker|symbol|NYSE|NASDAQ|Nasdaq|AMEX|CBOE)\s*(?::\s*)?$", re.IGNORECASE)
_KIND_PRIORITY = {"name": 0, "alias": 1, "ticker": 2, "short": 3, "fuzzy": 4}
_FUZZY_MIN_LEN = 5
_FUZZY_LOWERCASE_MIN_LEN = 8  # shorter names must be capitalized to be fuzzy-matched ("being" is not "Boeing")


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c)).lower().replace("’", "'")


def _name_tokens(name: str, drop_ampersand: bool = False) -> list[str]:
    s = _fold(name)
    s = re.sub(r"\b([a-z])\.(?=[a-z]\.)", r"\1", s)  # "l.p." -> "lp.", "n.v." -> "nv."
    s = re.sub(r"'s\b", "", s)
    s = s.replace("&", " " if drop_ampersand else " and ")
    return re.findall(r"[^\W_]+", s)


def _strip_name(tokens: list[str]) -> list[str]:
    t = list(tokens)
    if len(t) > 1 and t[0] == "the":
        t = t[1:]
    while len(t) > 1 and t[-1] in _NAME_SUFFIXES:
        t.pop()
    return t


def company_key(name: str) -> str:
    """Grouping key of a company name: "BEST BUY CO., INC." and "Best Buy Co., Inc." -> "best buy"."""
    return " ".join(_strip_name(_name_tokens(name)))


def company_aliases(name: str) -> list[tuple[str, str]]:
    """(alias, kind) pairs for a company name; kind "name" (full or without legal suffix) or "short".

    "MGM RESORTS INTERNATIONAL" -> mgm resorts international, mgm resorts, mgm (short); "THE COCA-COLA COMPANY" ->
    coca cola company, coca cola, coca (short); "PepsiCo, Inc." -> pepsico, pepsi (short, from the camel-case
    "Pepsi" + "Co"). Matching compares aliases without spaces, so "coca cola", "Coca-Cola" and "CocaCola" agree.
    """
    out: list[tuple[str, str]] = []

    def add(tokens: list[str], kind: str) -> None:
        alias = " ".join(tokens)
        if alias and all(alias != a for a, _ in out):
            out.append((alias, kind))

    for drop in (False, True):
        full = _name_tokens(name, drop)
        if len(full) > 1 and full[0] == "the":
            full = full[1:]
        base = _strip_name(full)
        add(full, "name")
        add(base, "name")
        first = base[0] if base else ""
        if len(base) > 1 and len(first) >= 3 and not first.isdigit() and first not in _ORDINARY_WORDS:
            add([first], "short")
    words = [w.strip(",.;") for w in name.split()]
    camel = [m.group("head") if (m := _CAMEL_LEGAL.match(w)) else w for w in words]
    if camel != words:
        add(_strip_name(_name_tokens(" ".join(camel))), "short")
    return out


def _osa_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment edit distance (a transposition counts 1); ``limit + 1`` once it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1] if prev[-1] <= limit else limit + 1


@dataclass(frozen=True)
class CompanyMention:
    """A company named in a question: the question's text and which indexed company (by key) it matched how."""

    text: str
    start: int
    end: int
    key: str
    company: str
    alias: str
    how: str  # "name", "alias" (user map), "ticker", "short" (first word), "fuzzy"
    distance: int = 0

    def describe(self) -> str:
        how = {
            "name": "name",
            "alias": "user alias",
            "ticker": "ticker",
            "short": "short name",
            "fuzzy": f"name (fuzzy, {self.distance} edit{'s' if self.distance != 1 else ''})",
        }[self.how]
        return f"company '{self.text}' matched {how} '{self.alias}' of {self.company}"


@dataclass
class CompanyEntry:
    key: str
    name: str
    tickers: tuple[str, ...]
    filing_ids: list[str]


@dataclass(frozen=True)
class _Alias:
    key: str
    alias: str
    kind: str
    needs_caps: bool


class CompanyIndex:
    """Aliases and tickers of the indexed companies, and a finder for them in questions.

    Filings are grouped by company: by the name without legal suffixes, and names sharing a ticker are merged
    (a renamed company, or cover-page and press-release spellings). ``aliases`` maps a company (its name, key,
    ticker or one of its filing ids) to extra names, e.g. ``{"THE COCA-COLA COMPANY": ["coke"]}``.
    """

    def __init__(self, profiles: Iterable[FilingProfile], aliases: Mapping[str, Sequence[str]] | None = None) -> None:
        self.companies: dict[str, CompanyEntry] = {}
        self.key_of_filing: dict[str, str] = {}
        self._compact: dict[str, list[_Alias]] = {}
        self._tickers: dict[str, str] = {}
        self._max_tokens = 1
        self._build(list(profiles), aliases or {})

    # build ----------------------------------------------------------------------------------------------------------

    def _build(self, profiles: list[FilingProfile], aliases: Mapping[str, Sequence[str]]) -> None:
        names: dict[str, list[str]] = {}
        parent: dict[str, str] = {}

        def find(k: str) -> str:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        raw_key: dict[str, str] = {}
        by_ticker: dict[str, str] = {}
        for p in profiles:
            key = company_key(p.company) if p.company else (p.ticker.lower() if p.ticker else "")
            if not key:
                continue
            raw_key[p.filing_id] = key
            parent.setdefault(key, key)
            names.setdefault(key, []).append(p.company or p.ticker)
            if p.ticker:
                other = by_ticker.setdefault(p.ticker.upper(), key)
                a, b = find(other), find(key)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        for p in profiles:
            if p.filing_id not in raw_key:
                continue
            key = find(raw_key[p.filing_id])
            self.key_of_filing[p.filing_id] = key
            entry = self.companies.get(key)
            if entry is None:
                entry = self.companies[key] = CompanyEntry(key, "", (), [])
            entry.filing_ids.append(p.filing_id)
            if p.ticker and p.ticker.upper() not in entry.tickers:
                entry.tickers = (*entry.tickers, p.ticker.upper())
        group_names: dict[str, list[str]] = {}
        for key, ns in names.items():
            group_names.setdefault(find(key), []).extend(ns)
        for key, entry in self.companies.items():
            ns = group_names.get(key, [])
            entry.name = max(set(ns), key=ns.count) if ns else key
            for n in dict.fromkeys(ns):
                for alias, kind in company_aliases(n):
                    self._add_alias(key, alias, kind)
            for ticker in entry.tickers:
                self._tickers.setdefault(ticker, key)
        self._add_user_aliases(aliases)
        # A short alias shared by two companies ("american") names neither.
        for compact, entries in list(self._compact.items()):
            keys = {e.key for e in entries}
            if len(keys) > 1:
                kept = [e for e in entries if e.kind != "short"]
                if kept:
                    self._compact[compact] = kept
                else:
                    del self._compact[compact]

    def _add_alias(self, key: str, alias: str, kind: str) -> None:
        tokens = alias.split()
        compact = "".join(tokens)
        if not compact:
            return
        needs_caps = kind != "alias" and all(t in _ORDINARY_WORDS for t in tokens)
        entries = self._compact.setdefault(compact, [])
        if any(e.key == key for e in entries):
            return
        entries.append(_Alias(key, alias, kind, needs_caps))
        self._max_tokens = max(self._max_tokens, len(tokens))

    def _add_user_aliases(self, aliases: Mapping[str, Sequence[str]]) -> None:
        for target, extra in aliases.items():
            keys = self._resolve_alias_target(target)
            if not keys:
                logger.warning("Alias target %r names no indexed company; its aliases are ignored", target)
                continue
            for key in keys:
                for alias in extra:
                    self._add_alias(key, " ".join(_name_tokens(alias)), "alias")

    def _resolve_alias_target(self, target: str) -> list[str]:
        if target in self.key_of_filing:
            return [self.key_of_filing[target]]
        if target.upper() in self._tickers:
            return [self._tickers[target.upper()]]
        key = company_key(target)
        return [key] if key in self.companies else []

    # lookup ---------------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.companies)

    def aliases_of(self, key: str) -> list[str]:
        return sorted({e.alias for entries in self._compact.values() for e in entries if e.key == key})

    def find(self, question: str) -> list[CompanyMention]:
        """Companies named in ``question``: names and aliases, then tickers; fuzzy names only when neither hit."""
        tokens = self._tokens(question)
        found = self._exact(question, tokens) + self._ticker_hits(question)
        if not found:
            found = self._fuzzy(question, tokens)
        return self._non_overlapping(found)

    @staticmethod
    def _tokens(question: str) -> list[tuple[str, int, int]]:
        out: list[tuple[str, int, int]] = []
        for m in re.finditer(r"[^\W_]+", question):
            # The possessive "s" of "Best Buy's" is not part of the name.
            if m.group(0) in ("s", "S") and m.start() > 0 and question[m.start() - 1] in "'’":
                continue
            out.append((_fold(m.group(0)), m.start(), m.end()))
        return out

    def _exact(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            compact = ""
            for j in range(i, min(len(tokens), i + self._max_tokens + 2)):
                compact += tokens[j][0]
                for e in self._compact.get(compact, ()):
                    start, end = tokens[i][1], tokens[j][2]
                    span = question[start:end]
                    if e.needs_caps and not span[:1].isupper():
                        continue
                    found.append(self._mention(span, start, end, e.key, e.alias, e.kind))
        return found

    def _ticker_hits(self, question: str) -> list[CompanyMention]:
        if not self._tickers:
            return []
        pattern = "|".join(re.escape(t) for t in sorted(self._tickers, key=len, reverse=True))
        found: list[CompanyMention] = []
        for m in re.finditer(rf"(?<![\w$])(?P<cash>\$)?(?P<t>{pattern})(?![\w])", question):
            ticker = m.group("t")
            if (ticker in _AMBIGUOUS_TICKERS or len(ticker) == 1) and not (
                m.group("cash") or _TICKER_CONTEXT.search(question[max(0, m.start() - 20) : m.start()])
            ):
                continue
            found.append(self._mention(m.group(0), m.start(), m.end(), self._tickers[ticker], ticker, "ticker"))
        return found

    def _fuzzy(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        by_first: dict[str, list[tuple[str, _Alias]]] = {}
        for compact, entries in self._compact.items():
            if len(compact) >= _FUZZY_MIN_LEN and not compact.isdigit():
                for e in entries:
                    by_first.setdefault(compact[0], []).append((compact, e))
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            compact = ""
            words: list[str] = []
            for j in range(i, min(len(tokens), i + 3)):
                compact += tokens[j][0]
                words.append(tokens[j][0])
                if len(compact) < _FUZZY_MIN_LEN - 1 or all(w in _ORDINARY_WORDS for w in words):
                    continue
                start, end = tokens[i][1], tokens[j][2]
                capitalized = question[start].isupper()
                for alias_compact, e in by_first.get(compact[0], ()):
                    if not capitalized and (e.needs_caps or len(alias_compact) < _FUZZY_LOWERCASE_MIN_LEN):
                        continue
                    limit = 1 if len(alias_compact) <= 8 else 2
                    d = _osa_distance(compact, alias_compact, limit)
                    if 0 < d <= limit:
                        found.append(self._mention(question[start:end], start, end, e.key, e.alias, "fuzzy", d))
        return found

    def _mention(
        self, text: str, start: int, end: int, key: str, alias: str, how: str, distance: int = 0
    ) -> CompanyMention:
        return CompanyMention(text, start, end, key, self.companies[key].name, alias, how, distance)

    @staticmethod
    def _non_overlapping(found: list[CompanyMention]) -> list[CompanyMention]:
        """Longest, most certain spans first; a span inside a kept one is dropped (unless it is the same span)."""
        ranked = sorted(found, key=lambda m: (m.distance, -(m.end - m.start), _KIND_PRIORITY[m.how], m.start))
        kept: list[CompanyMention] = []
        for m in ranked:
            clash = [k for k in kept if m.start < k.end and k.start < m.end]
            if any((k.start, k.end) != (m.start, m.end) or k.key == m.key for k in clash):
                continue
            kept.append(m)
        return sorted(kept, key=lambda m: m.start)


# --- scoring --------------------------------------------------------------------------------------------------------


@dataclass
class FilingMatch:
    """One filing's score for a question, with the reasons that make it up."""

    filing_id: str
    company: str
    form: str
    period: str
    score: float
    reasons: list[str] = field(default_factory=list)
    selected: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "filing_id": self.filing_id,
            "company": self.company,
            "form": self.form,
            "period": self.period,
            "score": round(self.score, 2),
            "selected": self.selected,
            "reasons": list(self.reasons),
        }


@dataclass
class ScopeDecision:
    """The filings a question is scoped to, best first, and why.

    ``scoped`` is False when the decision is "every filing" (no company recognized, or no profiles); ``matches``
    lists the selected filings first, then the candidates that were left out, each with its reasons.
    """

    filing_ids: list[str]
    scoped: bool
    reason: str
    matches: list[FilingMatch] = field(default_factory=list)
    companies: list[CompanyMention] = field(default_factory=list)
    question: QuestionScope | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable explanation."""
        return {
            "filing_ids": list(self.filing_ids),
            "scoped": self.scoped,
            "reason": self.reason,
            "companies": [
                {"text": c.text, "company": c.company, "alias": c.alias, "how": c.how, "distance": c.distance}
                for c in self.companies
            ],
            "question": self.question.to_dict() if self.question else None,
            "matches": [m.to_dict() for m in self.matches],
        }


def _event_topics(question: str) -> dict[str, str]:
    lower = question.lower()
    topics: dict[str, str] = {}
    for code, words in _EVENT_TOPICS.items():
        for w in words:
            if re.search(rf"\b{re.escape(w)}\b", lower):
                topics[code] = w
                break
    return topics


def _year_part(p: FilingProfile, target: PeriodMention, other_years: set[int]) -> tuple[float, str]:
    fy, end, y = p.fiscal_year, p.period_end_date, target.year
    if y is None:
        return 0.0, ""
    if fy == y:
        return YEAR_MATCH, f"{target.label} matched fiscal_year={fy}"
    if not target.fiscal and end is not None and end.year == y:
        return YEAR_MATCH, f"{y} matched period_end {p.period_end}"
    if fy is not None and fy == y + 1:
        return NEXT_YEAR, f"FY{fy} filing reports {target.label} as its prior-year comparative"
    if fy is not None and fy in other_years:
        return OTHER_YEAR, f"FY{fy} is another year the question mentions"
    return 0.0, f"fiscal_year={fy if fy is not None else '?'} does not match {target.label}"


def _quarter_part(p: FilingProfile, quarter: int) -> tuple[float, str]:
    if p.fiscal_quarter == quarter:
        return QUARTER_MATCH, f"Q{quarter} matched fiscal_quarter={quarter}"
    if p.fiscal_quarter is not None:
        return QUARTER_MISMATCH, f"fiscal_quarter={p.fiscal_quarter} is not the asked Q{quarter}"
    if p.is_annual and quarter == 4:
        return ANNUAL_FOR_Q4, "annual report covers the fourth quarter"
    return 0.0, ""


def _date_part(p: FilingProfile, dates: Sequence[DateMention]) -> tuple[float, str]:
    end = p.period_end_date
    if end is None:
        return 0.0, ""
    best = (0.0, "")
    for d in dates:
        if d.precision == "day":
            gap = abs((end - d.value).days)
            if gap == 0:
                cand = (DATE_EXACT, f"date {d.text!r} matched period_end {p.period_end}")
            elif gap <= NEAR_DAYS:
                cand = (DATE_NEAR, f"period_end {p.period_end} is {gap} days from {d.text!r}")
            elif (end.year, end.month) == (d.value.year, d.value.month):
                cand = (DATE_SAME_MONTH_OTHER_DAY, f"period_end {p.period_end} is in the month of {d.text!r}")
            else:
                continue
        elif (end.year, end.month) == (d.value.year, d.value.month):
            cand = (DATE_SAME_MONTH, f"period_end {p.period_end} is in {d.text!r}")
        else:
            continue
        best = max(best, cand, key=lambda c: c[0])
    return best


def _form_part(p: FilingProfile, forms: Sequence[FormHint]) -> tuple[float, str]:
    family = p.form_family
    best = (0.0, "")
    for h in forms:
        if family == h.form or (h.form == "10-K" and family in ANNUAL_FORMS and "annual" in h.text.lower()):
            cand = (
                (FORM_WEAK, f"{h.text!r} suggests an {family}")
                if h.weak
                else (FORM_MATCH, f"form {h.text!r} matched {p.form}")
            )
        elif not h.weak and {family, h.form} == {"8-K", "earnings_release"}:
            cand = (FORM_RELATED, f"{p.form} is related to the asked {h.text!r} (releases are 8-K exhibits)")
        else:
            continue
        best = max(best, cand, key=lambda c: c[0])
    return best


def score_filing(
    profile: FilingProfile,
    scope: QuestionScope,
    target: PeriodMention | None = None,
    topics: Mapping[str, str] | None = None,
) -> tuple[float, list[str]]:
    """Period, date, form and event-topic score of one filing for a parsed question, with its reasons."""
    score = 0.0
    reasons: list[str] = []

    def add(part: tuple[float, str]) -> None:
        nonlocal score
        score += part[0]
        if part[1]:
            reasons.append(part[1])

    family = profile.form_family
    if target is not None and target.year is not None:
        others = {y for y in scope.years if y != target.year}
        add(_year_part(profile, target, others))
    if target is not None and target.quarter:
        add(_quarter_part(profile, target.quarter))
    else:
        asks_event = bool(scope.dates) or any(h.form == "8-K" and not h.weak for h in scope.forms)
        what = "a full-year question" if target is not None else "a question without a period"
        if profile.is_annual:
            add((ANNUAL_FOR_YEAR, f"annual report preferred for {what}"))
        elif profile.fiscal_quarter == 4:
            add((Q4_FOR_YEAR, "fourth-quarter release also reports the full year"))
        elif family == "8-K" and not asks_event:
            add((EVENT_FOR_PERIOD, "8-K reports an event, not a fiscal period"))
    if scope.dates:
        add(_date_part(profile, scope.dates))
    if scope.forms:
        add(_form_part(profile, scope.forms))
    if family == "8-K" and topics:
        hits = [f"{code} ({topics[code]!r})" for code in profile.items if code in topics]
        if hits:
            add((EVENT_TOPIC, f"8-K Item {', '.join(hits)} fits the question"))
    return score, reasons


def _sort_key(p: FilingProfile, score: float, target: PeriodMention | None) -> tuple[Any, ...]:
    end = p.period_end_date
    distance = 0
    if target is not None and target.year is not None and p.fiscal_year is not None:
        # Closer years first; of two equally close, the later one (it carries the other as comparative).
        distance = 2 * abs(p.fiscal_year - target.year) + (1 if p.fiscal_year < target.year else 0)
    return (
        -round(score, 6),
        -_FORM_RANK.get(p.form_family, 0),
        distance,
        -(end.toordinal() if end else 0),
        p.filing_id,
    )


# --- decision -------------------------------------------------------------------------------------------------------


def resolve_scope(
    question: str,
    profiles: Sequence[FilingProfile],
    filing_filter: Sequence[str] | None = None,
    max_filings: int = 3,
    aliases: Mapping[str, Sequence[str]] | None = None,
    company_index: CompanyIndex | None = None,
) -> ScopeDecision:
    """Decide which filings ``question`` is about (rules in the module docstring).

    :param question: the user's question.
    :param profiles: the indexed filings.
    :param filing_filter: filing ids chosen by the caller; when non-empty they are the scope, in their order.
    :param max_filings: at most this many filings when the question is scoped by company.
    :param aliases: extra company names, see ``CompanyIndex``; ignored when ``company_index`` is given.
    :param company_index: a prebuilt index over ``profiles`` (saves rebuilding it per question).
    :returns: the ranked filing ids and the explanation.
    """
    if max_filings < 1:
        raise ValueError(f"max_filings must be >= 1, got {max_filings}")
    by_id = {p.filing_id: p for p in profiles}
    if filing_filter:
        ids = list(dict.fromkeys(filing_filter))
        unknown = [fid for fid in ids if fid not in by_id]
        if unknown:
            logger.warning("Filing filter names filings without a profile: %s", unknown)
        matches = [
            FilingMatch(
                fid,
                by_id[fid].company if fid in by_id else "",
                by_id[fid].form if fid in by_id else "",
                by_id[fid].period if fid in by_id else "",
                0.0,
                ["selected by the caller's filing filter"] + ([] if fid in by_id else ["no filing profile indexed"]),
                True,
            )
            for fid in ids
        ]
        return ScopeDecision(ids, True, f"explicit filing filter ({len(ids)} filings) overrides the question", matches)

    scope = parse_question_scope(question)
    if not profiles:
        return ScopeDecision([], False, "no filing profiles in the index: unscoped", question=scope)
    index = company_index if company_index is not None else CompanyIndex(profiles, aliases)
    target = scope.target()
    topics = _event_topics(question)
    mentions = index.find(question)

    if mentions:
        keys = list(dict.fromkeys(m.key for m in mentions))
        why_company = {k: next(m for m in mentions if m.key == k).describe() for k in keys}
    elif len(index) == 1:
        keys = list(index.companies)
        why_company = {keys[0]: f"no company named; {index.companies[keys[0]].name} is the only company indexed"}
    else:
        return _unscoped(question, profiles, scope, target, topics, max_filings, index)

    per_company: list[list[FilingMatch]] = []
    rejected: list[FilingMatch] = []
    notes: list[str] = []
    for key in keys:
        entry = index.companies[key]
        scored = []
        for fid in entry.filing_ids:
            p = by_id[fid]
            s, reasons = score_filing(p, scope, target, topics)
            scored.append((p, s, [why_company[key], *reasons]))
        scored.sort(key=lambda t: _sort_key(t[0], t[1], target))
        best = scored[0][1]
        kept = [
            FilingMatch(p.filing_id, p.company, p.form, p.period, s, r)
            for p, s, r in scored
            if s >= best - SCOPE_MARGIN
        ]
        for p, s, r in scored:
            if s < best - SCOPE_MARGIN:
                rejected.append(
                    FilingMatch(
                        p.filing_id, p.company, p.form, p.period, s, [*r, f"below the best {best:.2f} - margin"]
                    )
                )
        per_company.append(kept)
        if target is not None and target.year is not None and best < YEAR_MATCH:
            notes.append(f"no {entry.name} filing matches {target.label}; closest filings returned")

    selected: list[FilingMatch] = []
    depth = 0
    while len(selected) < max_filings and any(depth < len(k) for k in per_company):
        for kept in per_company:
            if depth < len(kept) and len(selected) < max_filings:
                selected.append(kept[depth])
        depth += 1
    chosen = {m.filing_id for m in selected}
    for m in selected:
        m.selected = True
    left_out = [m for kept in per_company for m in kept if m.filing_id not in chosen]
    for m in left_out:
        m.reasons.append(f"beyond max_filings={max_filings}")
    names = ", ".join(index.companies[k].name for k in keys)
    period = f" for {target.label}" if target is not None else " (no period mentioned: annual reports, latest first)"
    reason = f"scoped to {names}{period}"
    if notes:
        reason += "; " + "; ".join(notes)
    decision = ScopeDecision(
        [m.filing_id for m in selected], True, reason, selected + left_out + rejected, mentions, scope
    )
    logger.debug("Scope of %r: %s", question, decision.filing_ids)
    return decision


def _unscoped(
    question: str,
    profiles: Sequence[FilingProfile],
    scope: QuestionScope,
    target: PeriodMention | None,
    topics: Mapping[str, str],
    max_filings: int,
    index: CompanyIndex,
) -> ScopeDecision:
    """Every filing, ranked by period and form only; the explanation lists the best few."""
    scored = [(p, *score_filing(p, scope, target, topics)) for p in profiles]
    scored.sort(key=lambda t: _sort_key(t[0], t[1], target))
    if scope.company_spans:
        names = ", ".join(repr(s.text) for s in scope.company_spans)
        reason = f"no indexed company recognized (unmatched names: {names}): unscoped, all {len(profiles)} filings"
    else:
        reason = f"no company mentioned and {len(index)} companies indexed: unscoped, all {len(profiles)} filings"
    matches = [
        FilingMatch(p.filing_id, p.company, p.form, p.period, s, ["unscoped", *r], True)
        for p, s, r in scored[:max_filings]
    ]
    logger.debug("Scope of %r: unscoped", question)
    return ScopeDecision([p.filing_id for p, _, _ in scored], False, reason, matches, [], scope)
