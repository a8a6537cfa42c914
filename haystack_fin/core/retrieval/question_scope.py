"""What a question says about the filing it is asked of: fiscal periods, dates, form hints, candidate names.

``parse_question_scope`` reads fiscal years ("FY2019", "fiscal 2023", "FY 2021", "FY24"), quarters ("Q2 of FY2024",
"FY2023Q1", "fourth quarter 2022", "H1 FY2023"), calendar years ("in 2022"), dates ("May 3, 2023", "May 2023"), form
hints ("10-K", "annual report", "8-K", "earnings release") and candidate company names (capitalized spans, used only
to explain a miss). Which period is the question's target is rule 3 of ``filing_ranking``'s docstring; the filings
are scored against it there. Month names and ordinals come from ``core/periods.py``, shared with the cover-page
reader.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, Literal

from haystack_fin.core.periods import MONTH_CAPS, ORD, ORDINALS, month_number, year4


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
            rf"\b{ORD}[\s-]+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|FY\s?){_Y}\b", _I
        ),
        True,
    ),
    (re.compile(rf"\b{ORD}\s+fiscal\s+quarter\s+(?:of\s+)?(?:(?:the\s+)?year\s+)?{_Y4}\b", _I), True),
    (re.compile(rf"\b{ORD}[\s-]+quarter\s+(?:of\s+)?(?:(?:the\s+)?(?:calendar\s+)?year\s+)?{_Y4}\b", _I), False),
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
_QUARTER_ALONE = re.compile(rf"\b(?:{ORD}[\s-]+(?:fiscal\s+)?quarter|Q(?P<q>[1-4]))\b", _I)
_FY_RANGE = re.compile(
    rf"\b(?:FY|fiscal(?:\s+years?)?)\s?{_Y}\s*(?:-|–|—|to|through|thru|and|&)\s*(?:FY\s?)?'?(?P<y2>(?:19|20)\d\d|\d\d)\b",
    _I,
)
_FY = re.compile(rf"\bFYE?\s?{_Y}\b", _I)  # "FYE 2022": fiscal year end
_FISCAL_YEAR = re.compile(rf"\bfiscal\s+(?:years?\s+)?{_Y}\b", _I)
_YEAR_FISCAL = re.compile(rf"\b{_Y4}\s+fiscal\s+(?:year|period)\b", _I)
_DAY_DATES = (
    re.compile(rf"\b(?P<m>{MONTH_CAPS})\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>(?:19|20)\d\d)\b"),
    re.compile(rf"\b(?P<d>\d{{1,2}})\s+(?P<m>{MONTH_CAPS})(?:\s*,)?\s+(?P<y>(?:19|20)\d\d)\b"),
    re.compile(r"\b(?P<y>(?:19|20)\d\d)-(?P<mn>[01]\d)-(?P<d>[0-3]\d)\b"),
    re.compile(r"\b(?P<mn>[01]?\d)/(?P<d>[0-3]?\d)/(?P<y>(?:19|20)\d\d)\b"),
)
_MONTH_DATE = re.compile(rf"\b(?P<m>{MONTH_CAPS})\s*(?:of\s+)?(?:,\s*)?(?P<y>(?:19|20)\d\d)\b")
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
    def quarters(self) -> list[int]:
        return sorted({p.quarter for p in self.periods if p.quarter})

    def target(self) -> PeriodMention | None:
        """The period the question is asked about (rule 3 of ``filing_ranking``'s docstring)."""
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
            quarter = ORDINALS[groups["ord"].lower()] if groups.get("ord") else int(groups["q"])
            raw_year = groups.get("y") or groups.get("y2")
            take(m, year4(raw_year) if raw_year else None, quarter, fiscal)
    for m in list(_HALF.finditer(masked.text)):
        first_half = (m.group("h") or "") == "1" or (m.group("hw") or "").lower() == "first"
        raw = m.group("fy") or m.group("y")
        # Two-digit years only after FY/fiscal ("H1 FY23"); "H1 23" is too loose to read.
        year = year4(raw) if raw and (len(raw.lstrip("'")) == 4 or m.group("f")) else None
        take(m, year, 2 if first_half else None, bool(m.group("f")))
    for m in list(_YTD.finditer(masked.text)):
        take(m, None, 2 if m.group("n").lower() in ("six", "6") else 3, False)
    for m in list(_FY_RANGE.finditer(masked.text)):
        y1, y2 = year4(m.group("y")), year4(m.group("y2"))
        if abs(y2 - y1) > 10:
            continue
        found.append(_period(text, m, y1, None, True))
        found.append(_period(text, m, y2, None, True))
        masked.consume(m.start(), m.end())
    for pattern in (_FY, _FISCAL_YEAR, _YEAR_FISCAL):
        for m in list(pattern.finditer(masked.text)):
            take(m, year4(m.group("y")), None, True)
    for m in list(_QUARTER_ALONE.finditer(masked.text)):
        take(m, None, ORDINALS[m.group("ord").lower()] if m.group("ord") else int(m.group("q")), False)
    return found


def _parse_dates(masked: _Masked) -> list[DateMention]:
    text = masked.original
    found: list[DateMention] = []
    for pattern in _DAY_DATES:
        for m in list(pattern.finditer(masked.text)):
            groups = m.groupdict()
            month = month_number(groups["m"]) if groups.get("m") else int(groups["mn"])
            try:
                value = date(int(groups["y"]), month, int(groups["d"]))
            except ValueError:
                continue
            found.append(DateMention(text[m.start() : m.end()], m.start(), m.end(), value, "day"))
            masked.consume(m.start(), m.end())
    for m in list(_MONTH_DATE.finditer(masked.text)):
        value = date(int(m.group("y")), month_number(m.group("m")), 1)
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
            and not re.fullmatch(MONTH_CAPS, word)
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
    ends = sorted([m.end for m in periods] + [m.end for m in dates])

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
