"""Fiscal-period vocabulary shared by the filing side (cover pages, ``ingest/filing_meta.py``) and the question side
(``retrieval/question_scope.py``): month names, quarter ordinals, two-digit years and how a fiscal year is named.

Only the words both sides read the same way live here. The patterns that find periods in a cover page and in a
question differ on purpose (a cover says "For the fiscal year ended July 29, 2023", a question says "FY24 Q2"), so
each side keeps its own.
"""

from datetime import date

MONTHS: dict[str, int] = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11,
    "dec": 12,
}  # fmt: skip

# Capitalized month names and their abbreviations ("Sept.", "Jan"); lower-case "may" is also a verb. Patterns that
# are case-insensitive anyway (cover pages) use ``MONTH``; the question side adds the all-caps names in ``MONTH_CAPS``.
_MONTH_NAMES = (
    r"Jan(?:uary|\.)?|Feb(?:ruary|\.)?|Mar(?:ch|\.)?|Apr(?:il|\.)?|May|June?|July?|Aug(?:ust|\.)?"
    r"|Sep(?:tember|t\.?|\.)?|Oct(?:ober|\.)?|Nov(?:ember|\.)?|Dec(?:ember|\.)?"
)
MONTH = rf"(?:{_MONTH_NAMES})"
MONTH_CAPS = (
    rf"(?:{_MONTH_NAMES}|JANUARY|FEBRUARY|MARCH|APRIL|MAY|JUNE|JULY|AUGUST|SEPTEMBER|OCTOBER|NOVEMBER|DECEMBER)"
)

ORDINALS: dict[str, int] = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
# A quarter ordinal as a named group: ``ORDINALS[m.group("ord").lower()]`` is its number.
ORD = r"(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)"


def month_number(name: str) -> int:
    """1-12 for a month name or abbreviation matched by ``MONTH``/``MONTH_CAPS`` ("Sept." -> 9, "MAY" -> 5)."""
    return MONTHS[name.strip(".").lower()[:3]]


def year4(raw: str) -> int:
    """A four-digit year from "2023", "23" or "'23" (two-digit years are read as 20xx: "FY24")."""
    year = int(raw.lstrip("'"))
    return year + 2000 if year < 100 else year


def annual_fiscal_year(period_end: date) -> int:
    """Fiscal year named after the calendar year it ends in; a 52/53-week year ending January 1-7 is the prior year."""
    return period_end.year - 1 if period_end.month == 1 and period_end.day <= 7 else period_end.year
