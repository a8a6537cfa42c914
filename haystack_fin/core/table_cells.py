"""Numeric table cells, signs and units, read the way filings print them.

``parse_cell`` reads "(1,234)", "$ —", "(3.2)%", "1.2x", "1,234 (a)" into a ``ParsedValue`` (sign, currency,
percent; never scaled by units); ``detect_units`` finds unit statements ("in millions, except per share data") so
renderings can keep the reported units. Used by table splitting (``ingest/table_blocks.py``), by the OCR checks of
implausible numbers (``ingest/ocr.py``) and by the filing structure (``ingest/structure.py``).
"""

import re
from dataclasses import dataclass

from haystack_fin.core.text import normalize_line

# ---------------------------------------------------------------------------------------------------------------
# Cell values
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedValue:
    """One table cell read as a number.

    ``value`` is the number as printed (no unit scaling; "12%" gives 12.0), ``None`` when the cell holds no number
    ("n/a", "NM", a date, text). ``is_percent``/``is_currency`` say whether a "%" or a currency sign was attached.
    """

    value: float | None
    is_percent: bool
    is_currency: bool
    raw: str


# Every dash a filing uses for minus or nil: hyphen, en dash, em dash, minus sign, figure dash, horizontal bar.
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_CURRENCY_PREFIX = re.compile(r"^(?:US\$|U\.S\.\$|C\$|A\$|\$|€|£|¥|USD|EUR|GBP)\s*", re.IGNORECASE)
# The end-anchored patterns below start with lookbehinds: a match may only begin where a run of the characters it
# repeats begins. Without them ``search`` rescans such a run from each of its positions (quadratic on a long run
# of spaces or stars); the leftmost match, and so every result, is the same.
_CURRENCY_SUFFIX = re.compile(r"(?<!\s)\s*(?:\$|€|£|¥|USD|EUR|GBP)$", re.IGNORECASE)
# Footnote markers trail the number: "1,234 (a)", "1,234(1)", "1,234 [2]", "1,234*", "1,234 †", "1,234¹".
_FOOTNOTE = re.compile(
    r"(?<!\s)\s*(?:\([a-z]\)|\(\d{1,2}\)|\[[a-z0-9]{1,2}\]|(?<!\*)\*+|(?<![†‡§])[†‡§]+|(?<![¹²³⁴⁵⁶⁷⁸⁹⁰])[¹²³⁴⁵⁶⁷⁸⁹⁰]+)$",
    re.IGNORECASE,
)
# Non-scaling suffixes: multiples ("1.2x") and basis/percentage points. "%" is handled separately to flag it.
_RATIO_SUFFIX = re.compile(r"(?<!\s)\s*(?:x|bps|bp|pts|pt|pp)$", re.IGNORECASE)
_NUMBER = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$|^\.\d+$")
_NIL_WORDS = {"nil"}


def parse_cell(cell: str) -> ParsedValue:
    """Read a financial table cell: sign, currency, percent, footnote markers and nil dashes.

    "(1,234)" -> -1234, "$ 1,093" -> 1093 (currency), "(3.2)%" -> -3.2 (percent), "—" / "$ —" -> 0.0 (EDGAR prints
    a dash for nil), "1.2x" -> 1.2, "1,234 (a)" -> 1234; "n/a", "NM", "" and text -> None. A bare "(1)" is -1, not
    a footnote: markers are only stripped when a number remains. Numbers are never scaled by units.
    """
    raw = cell
    text = normalize_line(cell)
    is_percent = False
    is_currency = False
    negative = False

    # Strip footnote markers first, but never eat the whole number: "(1)" alone is a negative one.
    while True:
        stripped = _FOOTNOTE.sub("", text)
        if stripped == text or not any(ch.isdigit() or ch in _DASHES for ch in stripped):
            break
        text = stripped

    # Peel decorations from the outside in; parentheses, signs, "%" and "$" nest in any order in filings
    # ("($1,234)", "$(1,234)", "(3.2)%", "(3.2%)", "-$12", "$-12"). Parentheses and a minus sign both mean negative;
    # a cell showing both ("(-12)") is a redundant notation, not a double negation.
    for _ in range(6):
        before = text
        if text.endswith("%"):
            is_percent, text = True, text[:-1].rstrip()
        if match := _CURRENCY_PREFIX.match(text):
            is_currency, text = True, text[match.end() :]
        if (match := _CURRENCY_SUFFIX.search(text)) and match.start() > 0:  # "$" alone is not a value
            is_currency, text = True, text[: match.start()]
        if len(text) >= 2 and text[0] == "(" and text[-1] == ")":
            negative, text = True, text[1:-1].strip()
        elif text[:1] == "+" and len(text) > 1:
            text = text[1:].lstrip()
        elif text[:1] in _DASHES and len(text) > 1 and text.strip(_DASHES + " "):
            negative, text = True, text[1:].lstrip()
        if text == before:
            break

    text = _RATIO_SUFFIX.sub("", text) if any(ch.isdigit() for ch in text) else text

    if text and (not text.strip(_DASHES + " ") or text.lower() in _NIL_WORDS):
        return ParsedValue(0.0, is_percent, is_currency, raw)
    if not _NUMBER.match(text):
        return ParsedValue(None, is_percent, is_currency, raw)
    value = float(text.replace(",", ""))
    return ParsedValue(-value if negative and value else value, is_percent, is_currency, raw)


def parse_number(cell: str) -> float | None:
    """The numeric value of a financial cell as printed (see ``parse_cell``), or None when it holds no number."""
    return parse_cell(cell).value


# ---------------------------------------------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------------------------------------------

_UNIT_MULTIPLIERS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SCALE = r"(?P<scale>thousand|million|billion|trillion)s?"
_CURRENCY_WORD = r"(?:[$€£¥]|us\$|usd|eur|gbp|u\.s\.\s+dollars?|dollars?|euros?)"
_UNIT_PATTERNS = [
    # "(in millions, except per share data)", "$ in thousands", "(Dollars in millions)", "amounts in € millions"
    re.compile(rf"\bin\s+(?:{_CURRENCY_WORD}\s*)?{_SCALE}\b", re.IGNORECASE),
    # "(Millions of dollars)", "thousands of U.S. dollars"
    re.compile(rf"\b{_SCALE}\s+of\s+{_CURRENCY_WORD}", re.IGNORECASE),
    # "($ millions)", "$ thousands", "USD millions", "(€ million)"
    re.compile(rf"(?:[$€£¥]|\b(?:usd|eur|gbp))\s*{_SCALE}\b", re.IGNORECASE),
    # "(in 000s)", "($000)", "$000's": the accountants' shorthand for thousands
    re.compile(r"(?:\bin\s+|[$€£¥]\s*|\()(?P<k>000)(?:'?s)?\b", re.IGNORECASE),
]


def detect_units(*texts: str) -> tuple[str, float]:
    """Find a unit statement in the given texts: ("millions", 1e6), ("thousands", 1e3), ...; ("", 1.0) if none.

    Texts are tried in order (pass the most specific first, e.g. the table's units line, then its title, then the
    header cells); within a text the earliest statement wins, so "(in millions, except per share data; shares in
    thousands)" gives millions. Prose amounts like "$2.3 million" are not unit statements and do not match.
    """
    for text in texts:
        if not text:
            continue
        best: tuple[int, str] | None = None
        for pattern in _UNIT_PATTERNS:
            match = pattern.search(text)
            if match and (best is None or match.start() < best[0]):
                scale = "thousand" if match.groupdict().get("k") else match.group("scale").lower()
                best = (match.start(), scale)
        if best is not None:
            return best[1] + "s", _UNIT_MULTIPLIERS[best[1]]
    return "", 1.0
