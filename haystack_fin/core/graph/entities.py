"""Entities of one chunk: companies, segments and geographies, fiscal periods, lexicon metrics, amounts,
percentages and explicit references, normalized so that two chunks naming the same thing share a key.

Every pattern here runs in linear time on any input: repetitions are bounded, and a pattern that starts with an
unbounded run (digits) begins with a lookbehind so that a match may only start where such a run starts (otherwise
``finditer`` rescans a long run from each of its positions). ``tests/core/test_graph_entities.py`` times a 1 MB
adversarial string.

Periods are normalized to the filing's fiscal calendar (``FiscalCalendar``, from ``period_end``): "three months
ended July 29, 2023" in a filing whose fiscal year ends in late January is ``FY2024Q2``; "December 31, 2015" in a
calendar-year filer is ``FY2015`` (a year-end balance), "fiscal 2023" is ``FY2023``. Keys: ``FY<year>``,
``FY<year>Q<n>``, ``FY<year>H1`` (six months), ``FY<year>M9`` (nine months).
"""

import bisect
import re
from calendar import monthrange
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.periods import MONTH, ORD, ORDINALS, month_number, year4
from haystack_fin.core.retrieval.companies import company_key

# Entity kinds.
COMPANY = "company"
SEGMENT = "segment"
GEOGRAPHY = "geography"
PERIOD = "period"
METRIC = "metric"
AMOUNT = "amount"
PERCENT = "percent"
PER_SHARE = "per_share"
REFERENCE = "reference"

# Where an entity was read.
FROM_TEXT = "text"
FROM_HEADING = "heading"
FROM_TABLE_HEADER = "table_header"
FROM_ROW_LABEL = "row_label"

# A chunk keeps at most this many amount / percent mentions: an all-numbers chunk would otherwise carry hundreds of
# entities in its meta, and the graph only uses amounts that also name a metric and a period.
MAX_VALUE_ENTITIES = 40
_MAX_TEXT = 40  # characters of the surface text kept per entity


@dataclass(frozen=True)
class Entity:
    """One normalized mention.

    ``key`` is what two mentions of the same thing share ("revenue", "FY2015", "note:7", "item:7", "table:next",
    "page:45", "exhibit:13", "netflix", "north america"). ``value`` is the number of an amount (scaled to units,
    signed), percent or per-share amount; ``metric``/``period`` the lexicon cluster and period key named in the same
    sentence as an amount (empty when none). ``start`` is the offset in the chunk text, -1 when read from meta.
    """

    kind: str
    key: str
    text: str = ""
    start: int = -1
    source: str = FROM_TEXT
    value: float | None = None
    unit: str = ""
    metric: str = ""
    period: str = ""
    decimals: int = 0  # digits after the point as printed, scaled: the precision of ``value`` (inferred edges)
    category: str = ""  # lexicon category of a metric

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, defaults left out (chunk meta stays small)."""
        out: dict[str, Any] = {"kind": self.kind, "key": self.key}
        for name, default in _OPTIONAL_DEFAULTS.items():
            value = getattr(self, name)
            if value != default:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Entity":
        kwargs = {name: data.get(name, default) for name, default in _OPTIONAL_DEFAULTS.items()}
        value = kwargs["value"]
        kwargs["value"] = float(value) if value is not None else None
        return cls(kind=str(data["kind"]), key=str(data["key"]), **kwargs)

    def to_row(self) -> list[Any]:
        """The compact JSON form stored in chunk meta: ``[kind, key, text, start]`` plus a dict of the other
        non-default fields when there are any. ``category`` is left out: a metric's is its lexicon cluster's, and
        ``from_row`` takes it from the reader's lexicon (the same one: the stored lexicon fingerprint is checked).
        A table-heavy 10-K stores ~8,000 entities, so the field names of ``to_dict`` would be a third of the bytes."""
        row: list[Any] = [self.kind, self.key, self.text, self.start]
        rest = {name: getattr(self, name) for name in _ROW_EXTRAS if getattr(self, name) != _OPTIONAL_DEFAULTS[name]}
        if rest:
            row.append(rest)
        return row

    @classmethod
    def from_row(cls, row: Sequence[Any], category: str = "") -> "Entity":
        """The inverse of ``to_row``, with the metric's ``category`` given by the reader."""
        rest: Mapping[str, Any] = row[4] if len(row) > 4 else {}
        data = {**rest, "kind": row[0], "key": row[1], "text": row[2], "start": int(row[3]), "category": category}
        return cls.from_dict(data)


_OPTIONAL_DEFAULTS: dict[str, Any] = {
    "text": "",
    "start": -1,
    "source": FROM_TEXT,
    "value": None,
    "unit": "",
    "metric": "",
    "period": "",
    "decimals": 0,
    "category": "",
}
_ROW_EXTRAS = ("source", "value", "unit", "metric", "period", "decimals")


# --- fiscal calendar --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FiscalCalendar:
    """A filer's fiscal calendar: the month and day its fiscal year ends on and the filing's own fiscal year.

    52/53-week filers end their year on a weekday near a month end (Best Buy: February 2, 2019, February 3, 2018,
    January 28, 2017), so a date within ``_YEAR_END_DAYS`` of the year-end day is a year end whatever its month.
    """

    end_month: int = 12
    fiscal_year: int | None = None
    end_day: int = 31

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "FiscalCalendar":
        """From a chunk's or filing node's ``period_end`` ("2023-01-28"), ``fiscal_year`` and ``fiscal_quarter``
        (a 10-Q's period end is a quarter end: its year ends ``3 * (4 - quarter)`` months later); December 31 and
        the filing year unknown when absent. A 52/53-week year ending January 1-7 ends "in December"."""
        end_month, end_day = 12, 31
        raw = str(meta.get(schema.PERIOD_END) or "")
        quarter = _int_or_none(meta.get(schema.FISCAL_QUARTER))
        try:
            end = date.fromisoformat(raw[:10])
            end_month, end_day = end.month, end.day
            if quarter in (1, 2, 3):
                end_month = (end.month + 3 * (4 - quarter) - 1) % 12 + 1
            if end_month == 1 and end_day <= 7:
                end_month, end_day = 12, 31
        except ValueError:
            pass
        return cls(end_month, _int_or_none(meta.get(schema.FISCAL_YEAR)), end_day)

    def _year_end_fy(self, year: int, month: int, day: int | None) -> int | None:
        """The fiscal year whose end is within ``_YEAR_END_DAYS`` of the date, None if none is (or no day)."""
        if day is None:
            return year if month == self.end_month else None
        try:
            when = date(year, month, day)
        except ValueError:
            return None
        for fy in (year - 1, year, year + 1):
            last = monthrange(fy, self.end_month)[1]
            end = date(fy, self.end_month, min(self.end_day, last))
            if abs((when - end).days) <= _YEAR_END_DAYS:
                return fy
        return None

    def fiscal_year_of(self, year: int, month: int) -> int:
        """The fiscal year a month falls in (named after the calendar year it ends in)."""
        return year if month <= self.end_month else year + 1

    def quarter_of(self, month: int) -> int:
        """The fiscal quarter (1-4) that ends in ``month``, for quarter-end months; the quarter holding it otherwise."""
        return ((month - self.end_month - 1) % 12) // 3 + 1

    def period_of_date(self, year: int, month: int, months: int | None, day: int | None = None) -> str:
        """The period key of a period ending on (year, month, day) and lasting ``months`` (None: a balance date)."""
        year_end = self._year_end_fy(year, month, day)
        if months is None or months >= 12:
            if year_end is not None:
                return f"FY{year_end}"
            fy = self.fiscal_year_of(year, month)
            # A balance at any other date is its quarter's end; an annual period ends at a year end.
            return f"FY{fy}" if months is not None else f"FY{fy}Q{self.quarter_of(month)}"
        fy = self.fiscal_year_of(year, month)
        if months == 3:
            return f"FY{year_end}Q4" if year_end is not None else f"FY{fy}Q{self.quarter_of(month)}"
        return f"FY{fy}H1" if months == 6 else f"FY{fy}M9" if months == 9 else f"FY{fy}"


_YEAR_END_DAYS = 7


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


# --- patterns ---------------------------------------------------------------------------------------------------

_YEAR = r"(?:19|20)\d\d"
_DATE = rf"(?P<month>{MONTH})\s+(?:(?P<day>\d{{1,2}}),?\s+)?(?P<year>{_YEAR})"
_DURATIONS = {"three": 3, "3": 3, "six": 6, "6": 6, "nine": 9, "9": 9, "twelve": 12, "12": 12, "13": 3, "26": 6}
# "three months ended July 29, 2023", "fiscal years ended December 31, 2015, 2014 and 2013", "quarter ended ...",
# "13 weeks ended": the duration says which period the date closes.
_PERIOD_ENDED = re.compile(
    rf"\b(?:(?P<dur>three|six|nine|twelve|3|6|9|12)[\s-]+months?|(?P<weeks>13|26|52|53)[\s-]+weeks?|"
    rf"(?P<quarter>quarters?)|(?:fiscal\s+)?(?P<year_word>years?))\s+(?:then\s+)?ended\s+{_DATE}"
    rf"(?P<more>(?:\s*,\s*(?:and\s+)?{_YEAR}|\s+and\s+{_YEAR}){{0,4}})",
    re.IGNORECASE,
)
_MORE_YEARS = re.compile(_YEAR)
_FISCAL = re.compile(r"\b(?:fiscal(?:\s+year)?|FY)\s?'?(?P<y>(?:19|20)\d\d|\d\d)\b", re.IGNORECASE)
_QUARTER = re.compile(
    rf"\b(?:Q(?P<q>[1-4])|{ORD}\s+(?:fiscal\s+)?quarter)"
    r"(?:\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?|FY\s?)?'?(?P<y>(?:19|20)\d\d|\d\d)\b)?",
    re.IGNORECASE,
)
_AS_OF_DATE = re.compile(rf"\b{_DATE}\b")
# A bare year: not part of a number ("$2015", "2015.5", "12,015") nor an amount ("2015 million").
_BARE_YEAR = re.compile(rf"(?<![\d$.,/-])(?P<y>{_YEAR})(?![\d%]|,\d|\.\d|\s*(?:million|billion|thousand)\b)")

_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_AMOUNT = re.compile(
    r"(?P<neg>\(\s?)?(?P<minus>-\s?)?\$\s?(?P<neg2>\()?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d{1,4}))?"
    r"(?P<close>\))?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion)s?\b)?"
    r"(?P<ps>\s+per\s+(?:basic\s+|diluted\s+)?(?:common\s+)?share\b)?",
    re.IGNORECASE,
)
_PERCENT = re.compile(r"(?<![\d.,])(?P<num>\d{1,3}(?:\.\d{1,3})?)\s?(?:%|percent\b)", re.IGNORECASE)

_NOTE_REF = re.compile(
    r"\b(?i:notes?)\s+(?P<n>\d{1,2}|[A-Z])\b(?P<more>(?:\s*(?:,|and|&|through|-)\s*(?:\d{1,2}|[A-Z])\b){0,6})"
)
_NOTE_MORE = re.compile(r"\d{1,2}|[A-Z]")
_ITEM_REF = re.compile(
    r"\b(?:(?i:part)\s+(?P<part>IV|I{1,3})\s?,?\s+)?(?i:items?)\s+(?P<item>\d\.\d\d|\d{1,2}[AB]?)\b"
    r"(?P<more>(?:\s*(?:,|and|&)\s*\d{1,2}[AB]?\b){0,4})"
)
_ITEM_MORE = re.compile(r"\d{1,2}[AB]?")
_TABLE_NEXT = re.compile(
    r"\b(?:following\s+tables?|tables?\s+(?:set\s+forth\s+)?below|below\s+table|the\s+following\s+"
    r"(?:summarizes|presents|sets\s+forth|shows|provides|details|reconciles|reflects))\b",
    re.IGNORECASE,
)
_TABLE_PREV = re.compile(r"\b(?:(?:preceding|above|previous)\s+tables?|tables?\s+above)\b", re.IGNORECASE)
_PAGE_REF = re.compile(r"\b(?:on|see|at|to|in)\s+pages?\s+(?P<f>F-)?(?P<p>\d{1,3})\b", re.IGNORECASE)
_EXHIBIT_REF = re.compile(r"\b(?i:exhibits?)\s+(?P<ex>\d{1,3}(?:\.\d{1,3})?)\b")

# Another company's legal name: capitalized words (with "of", "and", "&", "the" between) ending in a legal suffix.
_LEGAL_NAME = re.compile(
    r"\b(?P<name>[A-Z][\w&'.-]{0,30}(?:,?\s+(?:[A-Z][\w&'.-]{0,30}|of|and|&|the|de)){0,5}),?\s+"
    r"(?P<suffix>Inc\b\.?|Incorporated\b|Corporation\b|Corp\b\.?|Company\b|Co\b\.|LLC\b|L\.P\.|plc\b|Ltd\b\.?|N\.A\.)"
)
# Words that begin a sentence or a heading, not a name ("The Company", "Our Company", "Such Corporation").
_NOT_NAME_HEADS = frozenset({"the", "our", "such", "this", "that", "each", "any", "a", "an", "its", "their", "we"})

# The name ends in a non-space and the gaps are bounded, so the name and the gap never compete for spaces (linear).
_SEGMENT_HEADING = re.compile(
    r"^(?P<name>[A-Z][\w&'.,/ -]{0,59}?[\w&'.,/-])\s{1,3}(?i:(?:reportable\s{1,3}|operating\s{1,3})?segments?)$"
)
_GEOGRAPHIES = (
    "United States", "U.S.", "US", "International", "Domestic", "North America", "Latin America", "South America",
    "Europe", "EMEA", "Asia Pacific", "Asia-Pacific", "APAC", "Greater China", "China", "Japan", "Canada",
    "Mexico", "Americas", "Middle East", "Africa", "Asia", "India", "Brazil", "United Kingdom", "Germany",
    "France", "Rest of World", "Rest of Asia Pacific", "Foreign", "Macau", "Las Vegas Strip",
)  # fmt: skip
_GEOGRAPHY = re.compile(
    r"(?<![\w.])(?P<g>" + "|".join(re.escape(g) for g in sorted(_GEOGRAPHIES, key=len, reverse=True)) + r")(?![\w])"
)
_GEOGRAPHY_KEYS = {
    "u.s.": "united states",
    "us": "united states",
    "asia-pacific": "asia pacific",
    "apac": "asia pacific",
}

# Lexicon categories that are topics or document parts, not line items a table row reports.
_NOT_LINE_ITEMS = frozenset(
    {"risk", "market_risk", "governance", "legal", "business", "sec_structure", "events", "esg", "guidance",
     "cover", "accounting", "financial_statements", "mdna", "healthcare"}
)  # fmt: skip
_PREPOSITIONS = frozenset({"of", "on", "from", "for", "in", "before", "after", "to", "attributable", "by", "under"})
_ENTITY_LABEL = re.compile(
    r",?\s(?:LLC|L\.L\.C\.|Inc\.?|Corp\.?|Corporation|L\.P\.|LP|Ltd\.?|plc|N\.A\.)(?:$|,?\s+(?:dba|d/b/a)\b)"
)
_CHANGE_LABEL = re.compile(r"^\W{0,3}(?:net\s+)?\(?(?:increases?|decreases?|changes?)\b", re.IGNORECASE)
_SENTENCE_BREAK = re.compile(r"[.!?;:](?=\s+[A-Z(\[])|\n\s*\n|\|")
_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


class _Mask:
    """Character ranges already read as a period, so that "December 31, 2015" is not also the bare year 2015.
    Spans are kept sorted and disjoint; lookups are by bisection."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def free(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._starts, start)
        if i and self._ends[i - 1] > start:
            return False
        return not (i < len(self._starts) and self._starts[i] < end)

    def take(self, start: int, end: int) -> None:
        i = bisect.bisect_right(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)


# --- periods ----------------------------------------------------------------------------------------------------


def find_periods(text: str, calendar: FiscalCalendar, source: str = FROM_TEXT) -> list[Entity]:
    """Period mentions of ``text`` normalized to ``calendar``, in text order.

    Bare years count as fiscal years in table headers (filers label fiscal-year columns "2023") and in the prose of
    calendar-year filers; in the prose of other filers a bare year is ambiguous and left out.
    """
    mask = _Mask()
    found: list[Entity] = []

    def add(start: int, end: int, key: str) -> None:
        if mask.free(start, end):
            mask.take(start, end)
            found.append(Entity(PERIOD, key, _clip(text[start:end]), start, source))

    for m in _PERIOD_ENDED.finditer(text):
        months: int | None
        if m.group("dur"):
            months = _DURATIONS[m.group("dur").lower()]
        elif m.group("weeks"):
            months = {"13": 3, "26": 6}.get(m.group("weeks"), 12)
        else:
            months = 3 if m.group("quarter") else 12
        month = month_number(m.group("month"))
        day = int(m.group("day")) if m.group("day") else None
        add(m.start(), m.end(), calendar.period_of_date(int(m.group("year")), month, months, day))
        # "years ended December 31, 2015, 2014 and 2013": the same day closes each listed year.
        for extra in _MORE_YEARS.finditer(m.group("more") or ""):
            key = calendar.period_of_date(int(extra.group()), month, months, day)
            found.append(Entity(PERIOD, key, _clip(extra.group()), m.start("more") + extra.start(), source))
    for m in _QUARTER.finditer(text):
        quarter = int(m.group("q")) if m.group("q") else ORDINALS[m.group("ord").lower()]
        year = year4(m.group("y")) if m.group("y") else calendar.fiscal_year
        if year is not None:
            add(m.start(), m.end(), f"FY{year}Q{quarter}")
    for m in _FISCAL.finditer(text):
        add(m.start(), m.end(), f"FY{year4(m.group('y'))}")
    for m in _AS_OF_DATE.finditer(text):
        day = int(m.group("day")) if m.group("day") else None
        month = month_number(m.group("month"))
        add(m.start(), m.end(), calendar.period_of_date(int(m.group("year")), month, None, day))
    if source == FROM_TABLE_HEADER or calendar.end_month == 12:
        for m in _BARE_YEAR.finditer(text):
            add(m.start(), m.end(), f"FY{m.group('y')}")
    found.sort(key=lambda e: e.start)
    return found


def column_period(header: str, calendar: FiscalCalendar) -> str:
    """The one period a table column header names ("Year Ended December 31, 2015", "2015", "Q2 FY24"), or ""
    when it names none or several ("Change 2015 vs. 2014" compares two periods: not a period column)."""
    keys = {e.key for e in find_periods(header, calendar, FROM_TABLE_HEADER)}
    return keys.pop() if len(keys) == 1 else ""


# --- values -----------------------------------------------------------------------------------------------------


def _amounts(text: str) -> Iterable[Entity]:
    for m in _AMOUNT.finditer(text):
        number = float(m.group("num").replace(",", "") + ("." + m.group("dec") if m.group("dec") else ""))
        scale_word = (m.group("scale") or "").lower()
        scale = _SCALES.get(scale_word, 1.0)
        # "($1,234)", "$(1,234)" and "-$12" are negative; a lone "(" or ")" is punctuation around the amount.
        negative = bool((m.group("neg") or m.group("neg2")) and m.group("close")) or bool(m.group("minus"))
        value = -number * scale if negative else number * scale
        decimals = len(m.group("dec") or "")
        kind, unit = (PER_SHARE, "USD/share") if m.group("ps") else (AMOUNT, "USD")
        key = f"{value:.6g}"
        yield Entity(kind, key, _clip(m.group()), m.start(), FROM_TEXT, value, unit, decimals=decimals)


def _percents(text: str) -> Iterable[Entity]:
    for m in _PERCENT.finditer(text):
        value = float(m.group("num"))
        yield Entity(PERCENT, f"{value:g}%", _clip(m.group()), m.start(), FROM_TEXT, value, "%")


# --- references -------------------------------------------------------------------------------------------------


def _is_heading(text: str, start: int, end: int) -> bool:
    """Whether a "Note 7" / "Item 7" match is a heading inside the chunk ("NOTE 15 — UNEARNED REVENUE", "Item 8.
    Financial Statements") rather than a reference: it starts a line and a separator or a title follows."""
    line_start = text.rfind("\n", max(0, start - 200), start) + 1 if start else 0
    if text[line_start:start].strip():
        return False
    after = text[end : end + 4].lstrip()
    if not after or after[0] in "—–-:." or after[0].isupper():
        return True
    # A line of codes only, such as the running header "PART II, III / Item 9B, 10, 11, 12, 13, 14".
    line_end = text.find("\n", end, end + 200)
    rest = text[end : line_end if line_end >= 0 else min(len(text), end + 200)]
    return not any(ch.islower() for ch in rest)


def find_references(text: str) -> list[Entity]:
    """Explicit references: "Note 7" (and "Notes 7 and 8"), "Item 7A", "Part II, Item 8", "the following table",
    "the table above", "on page 45" / "page F-12", "Exhibit 13"; keys "note:7", "item:7A", "table:next",
    "table:previous", "page:45" / "page:F-12", "exhibit:13". The Part is dropped from the key: a 10-K's Item
    numbers are unique; 10-Q codes are completed by the resolver."""
    found: list[Entity] = []
    for m in _NOTE_REF.finditer(text):
        if _is_heading(text, m.start(), m.end()):
            continue
        numbers = [m.group("n"), *_NOTE_MORE.findall(m.group("more") or "")]
        for n in dict.fromkeys(numbers):
            found.append(Entity(REFERENCE, f"note:{n.upper()}", _clip(m.group()), m.start()))
    for m in _ITEM_REF.finditer(text):
        if _is_heading(text, m.start(), m.end()):
            continue
        part = m.group("part") or ""
        for code in dict.fromkeys([m.group("item"), *_ITEM_MORE.findall(m.group("more") or "")]):
            key = f"item:{part}-{code.upper()}" if part else f"item:{code.upper()}"
            found.append(Entity(REFERENCE, key, _clip(m.group()), m.start()))
    for m in _TABLE_NEXT.finditer(text):
        found.append(Entity(REFERENCE, "table:next", _clip(m.group()), m.start()))
    for m in _TABLE_PREV.finditer(text):
        found.append(Entity(REFERENCE, "table:previous", _clip(m.group()), m.start()))
    for m in _PAGE_REF.finditer(text):
        found.append(Entity(REFERENCE, f"page:{m.group('f') or ''}{m.group('p')}", _clip(m.group()), m.start()))
    for m in _EXHIBIT_REF.finditer(text):
        found.append(Entity(REFERENCE, f"exhibit:{m.group('ex')}", _clip(m.group()), m.start()))
    found.sort(key=lambda e: e.start)
    return found


# --- names ------------------------------------------------------------------------------------------------------


def _name_pattern(name: str) -> re.Pattern[str] | None:
    """A pattern for a company's name as filings write it: "Netflix", "NETFLIX, INC.", "Best Buy Co., Inc."."""
    key = company_key(name)
    if not key:
        return None
    words = key.split()
    return re.compile(r"(?<!\w)" + r"[\s.,'&-]{0,3}".join(re.escape(w) for w in words) + r"(?!\w)", re.IGNORECASE)


def find_companies(text: str, own_company: str = "") -> list[Entity]:
    """The filing's own company (by its name without legal suffix) and other legal names ("Bank of America
    Corporation" is one entity, keyed "bank of america")."""
    found: list[Entity] = []
    seen: set[int] = set()
    pattern = _name_pattern(own_company) if own_company else None
    own = company_key(own_company) if own_company else ""
    if pattern is not None:
        m = pattern.search(text)
        if m:
            found.append(Entity(COMPANY, own, _clip(m.group()), m.start()))
            seen.add(m.start())
    for m in _LEGAL_NAME.finditer(text):
        name = m.group("name")
        head = name.split()[0].lower() if name.split() else ""
        if head in _NOT_NAME_HEADS and len(name.split()) == 1:
            continue
        key = company_key(f"{name} {m.group('suffix')}")
        if not key or key in {e.key for e in found}:
            continue
        found.append(Entity(COMPANY, key, _clip(m.group().strip()), m.start()))
    return found


def _segments_and_geographies(text: str, source: str) -> list[Entity]:
    found: list[Entity] = []
    line = text.strip()
    m = _SEGMENT_HEADING.match(line) if len(line) <= 80 else None
    if m:
        found.append(
            Entity(SEGMENT, " ".join(_TOKEN_SPLIT.split(m.group("name").lower())).strip(), _clip(line), -1, source)
        )
    for g in _GEOGRAPHY.finditer(text):
        raw = g.group("g")
        found.append(Entity(GEOGRAPHY, _GEOGRAPHY_KEYS.get(raw.lower(), raw.lower()), raw, -1, source))
    return found


# --- metrics ----------------------------------------------------------------------------------------------------


def find_metrics(text: str, lexicon: Lexicon, source: str = FROM_TEXT) -> list[Entity]:
    """Lexicon concepts named in ``text`` (exact and normalized matches, longest first), keyed by cluster id."""
    out = []
    for match in lexicon.find_terms(text, fuzzy=False):
        category = lexicon.cluster(match.cluster_id).category
        out.append(Entity(METRIC, match.cluster_id, _clip(match.text), match.start_char, source, category=category))
    return out


def row_metric(label: str, lexicon: Lexicon) -> str:
    """The lexicon cluster a table row label names: the longest term in it ("Total net revenues" -> revenue),
    "" when it names none. A label naming two concepts ("Revenue less cost of revenue") takes the first."""
    # "Increase in accounts receivable", "(Decrease) increase in cash": a change of the line item, not the item;
    # "MGM Lessee, LLC": a company, not leases.
    if _CHANGE_LABEL.match(label) or _ENTITY_LABEL.search(label):
        return ""
    heads = []
    for m in lexicon.find_terms(label, fuzzy=False):
        if lexicon.cluster(m.cluster_id).category in _NOT_LINE_ITEMS:
            continue
        # A term after a preposition qualifies another noun: "Amortization of net losses", "Effect of exchange
        # rate on cash", "Income before provision for income taxes" do not report net income, FX risk or taxes.
        before = label[: m.start_char].split()
        if before and before[-1].lower().strip(",") in _PREPOSITIONS:
            continue
        heads.append(m)
    if not heads:
        return ""
    # The label's head is its first words: "Receivables, net of an allowance for doubtful accounts of $13" reports
    # receivables, not the allowance. A term at the label's start wins; else the longest.
    lead = len(label) - len(label.lstrip(" \t-–—•*(")) if label else 0
    first = [m for m in heads if m.start_char <= lead]
    return max(first or heads, key=lambda m: (m.end - m.start, -m.start)).cluster_id


# --- one chunk --------------------------------------------------------------------------------------------------


def _sentence_bounds(text: str) -> list[int]:
    return [m.start() for m in _SENTENCE_BREAK.finditer(text)]


def _attach_context(values: list[Entity], metrics: list[Entity], periods: list[Entity], text: str) -> list[Entity]:
    """Give each amount the metric named before it and the period named in its sentence (both may be empty)."""
    if not values:
        return values
    bounds = _sentence_bounds(text)
    # The metric of an amount is a line item ("revenue", "capex"), not a topic ("properties", "risk factors").
    metrics = [m for m in metrics if m.category not in _NOT_LINE_ITEMS]
    metric_starts = [e.start for e in metrics]
    period_starts = [e.start for e in periods]
    out = []
    for v in values:
        i = bisect.bisect_right(bounds, v.start)
        lo = bounds[i - 1] if i else 0
        hi = bounds[i] if i < len(bounds) else len(text)
        j = bisect.bisect_right(metric_starts, v.start)
        metric = metrics[j - 1].key if j and metric_starts[j - 1] >= lo else ""
        k_lo = bisect.bisect_left(period_starts, lo)
        k_hi = bisect.bisect_left(period_starts, hi)
        keys = {periods[k].key for k in range(k_lo, k_hi)}
        # Only an unambiguous sentence gives a period: "rose to $6.8 billion in 2015 from $5.5 billion in 2014"
        # names two and pins neither amount.
        period = keys.pop() if len(keys) == 1 else ""
        out.append(Entity(v.kind, v.key, v.text, v.start, v.source, v.value, v.unit, metric, period, v.decimals))
    return out


@dataclass
class ChunkEntities:
    """All entities of one chunk, in text order per kind."""

    entities: list[Entity] = field(default_factory=list)

    def of(self, kind: str) -> list[Entity]:
        return [e for e in self.entities if e.kind == kind]

    def keys(self, kinds: Sequence[str] | None = None) -> set[tuple[str, str]]:
        return {(e.kind, e.key) for e in self.entities if kinds is None or e.kind in kinds}


def extract_entities(content: str, meta: Mapping[str, Any], lexicon: Lexicon) -> ChunkEntities:
    """Entities of one chunk from its text and meta (see the module docstring).

    Table blocks read periods from their column headers and metrics from their row labels (plus the title
    line above the grid); text chunks read everything from their text. Headings (``section_path`` after the
    Item title) give segments and geographies for every chunk under them.
    """
    calendar = FiscalCalendar.from_meta(meta)
    table = meta.get(schema.TABLE_JSON)
    entities: list[Entity] = []
    for heading in list(meta.get(schema.SECTION_PATH) or ())[1:]:
        entities.extend(_segments_and_geographies(str(heading), FROM_HEADING))
    if isinstance(table, Mapping):
        columns = [str(c) for c in table.get("columns") or ()]
        for column in columns[1:]:
            entities.extend(find_periods(column, calendar, FROM_TABLE_HEADER))
            entities.extend(_segments_and_geographies(column, FROM_TABLE_HEADER))
        title = content.split("\n|", 1)[0] if not content.startswith("|") else ""
        metrics = find_metrics(title, lexicon)
        entities.extend(find_periods(title, calendar))
        entities.extend(find_references(title))
        for row in table.get("rows") or ():
            label = str(row.get("label") or "")
            metrics.extend(find_metrics(label, lexicon, FROM_ROW_LABEL))
            entities.extend(_segments_and_geographies(label, FROM_ROW_LABEL))
        entities.extend(metrics)
        entities.extend(find_companies(title, str(meta.get(schema.COMPANY) or "")))
    else:
        periods = find_periods(content, calendar)
        metrics = find_metrics(content, lexicon)
        values = _attach_context([*_amounts(content)][:MAX_VALUE_ENTITIES], metrics, periods, content)
        entities.extend(periods)
        entities.extend(metrics)
        entities.extend(values)
        entities.extend([*_percents(content)][:MAX_VALUE_ENTITIES])
        entities.extend(find_references(content))
        entities.extend(find_companies(content, str(meta.get(schema.COMPANY) or "")))
    return ChunkEntities(entities)
