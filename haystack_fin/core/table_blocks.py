"""Financial table cells and row-group-aware table splitting.

Filing tables (balance sheets, cash-flow statements, segment tables) are often too long for one chunk. Cutting them
every N rows separates a line item from its section ("Current liabilities") and its total, so this module splits a
``TableData`` into ``TableBlock``s along the table's own structure:

* a *group* is a run of group-label rows (a label and no values, e.g. "Current assets:") plus the rows after it, up
  to and including the first total row, or up to the next group label;
* blocks end, in order of preference: after a total row, before a group label, or (only when one group alone is
  longer than a block) after ``max_data_rows`` rows; in that last case the group's label row is repeated at the top
  of the continuation block as context;
* every block repeats the table's header rows.

It also parses cell values the way filings print them ("(1,234)", "$ —", "(3.2)%") and finds unit statements
("in millions, except per share data") so renderings can keep the reported units.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from haystack_fin.core.layout import TableData
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


# ---------------------------------------------------------------------------------------------------------------
# Row classification
# ---------------------------------------------------------------------------------------------------------------

# Only labels that are totals by construction. "Net income" is left out on purpose: it opens every indirect
# cash-flow statement and reappears mid-table ("Net income attributable to noncontrolling interests"), so treating
# it as a total would end blocks in the wrong places.
_TOTAL_PATTERNS = [
    re.compile(r"^(?:grand\s+|sub-?\s?)?totals?\b"),  # "Total current assets", "Subtotal", "Sub-total", "Totals"
    re.compile(r"(?<!\bof )\b(?:sub-?\s?)?totals?$"),  # "Segment total", "Revenues, total"; not "% of total"
    # "Net cash provided by (used in) operating activities", "Net cash used in investing activities"
    re.compile(r"^net\s+cash\s+(?:flows?\s+)?\(?(?:provided|used|generated|from|inflows?|outflows?)\b"),
    # "Net increase (decrease) in cash and cash equivalents", "Decrease in cash, cash equivalents and ..."
    re.compile(r"^(?:net\s+)?\(?(?:increase|decrease|change)\)?(?:\s+\(?(?:increase|decrease)\)?)?\s+in\s+cash\b"),
]
# A label's decorations: leading punctuation, trailing punctuation/footnote marks, a trailing "(a)" / "(1)". One
# trimming step is ``re.sub(r"^[\W_]+|[\s:;,.*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰]+$|\s*\((?:[a-z]|\d{1,2})\)$", "", text)``, done as
# the head match and then the tail substitution on the rest, so that the tail's lookbehinds (which keep ``search``
# from rescanning a run of spaces or marks from each of its positions) never see a character the head consumed.
_LABEL_HEAD = re.compile(r"^[\W_]+")
_LABEL_TAIL = re.compile(r"(?<![\s:;,.*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰])[\s:;,.*†‡§¹²³⁴⁵⁶⁷⁸⁹⁰]+$|(?<!\s)\s*\((?:[a-z]|\d{1,2})\)$")
# Cells that decorate an otherwise empty row: a lone currency sign or percent sign from a split "$ | 1,093" column.
_DECORATION = set("$€£¥% ")


def _normalize_label(label: str) -> str:
    text = normalize_line(label).lower()
    while True:
        head = _LABEL_HEAD.match(text)
        trimmed = _LABEL_TAIL.sub("", text[head.end() :] if head else text)
        if trimmed == text:
            return text
        text = trimmed


def is_total_row(label: str) -> bool:
    """Whether a row label names a total: "Total ...", "Subtotal", "... total", "Net cash provided by/used in ...",
    "Net increase (decrease) in cash ...". Footnote markers and trailing colons are ignored."""
    text = _normalize_label(label)
    return bool(text) and any(p.search(text) for p in _TOTAL_PATTERNS)


def _has_value(cell: str) -> bool:
    text = normalize_line(cell)
    return bool(text) and not set(text) <= _DECORATION


def is_group_label_row(row: list[str]) -> bool:
    """Whether a row is a section label: a non-empty first cell and no values ("Current assets:", "Equity").

    Cells holding only "$" or "%" (split currency columns) count as empty; a dash counts as a value (it is nil).
    """
    if not row or not normalize_line(row[0]):
        return False
    return not any(_has_value(cell) for cell in row[1:])


# ---------------------------------------------------------------------------------------------------------------
# Splitting
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class TableBlock:
    """A slice of a table's data rows, with the table's header rows repeated on top.

    ``row_range`` is ``(start, end)``, end-exclusive, in the table's *data* rows (rows after the header rows).
    ``context_rows`` leading rows of ``data_rows`` are repeated context, not part of ``row_range``: when one row
    group is longer than a block, its continuation block starts with the group's label row again. Context rows count
    towards ``max_data_rows``. So ``data_rows[context_rows:] == data[start:end]``.
    """

    header_rows: list[list[str]]
    data_rows: list[list[str]]
    row_range: tuple[int, int]
    block_index: int
    context_rows: int = 0

    @property
    def n_cols(self) -> int:
        return max((len(r) for r in self.header_rows + self.data_rows), default=0)


@dataclass
class _RowKinds:
    total: list[bool] = field(default_factory=list)
    label: list[bool] = field(default_factory=list)


def _row_kinds(data: list[list[str]]) -> _RowKinds:
    kinds = _RowKinds()
    for row in data:
        total = bool(row) and is_total_row(row[0])
        kinds.total.append(total)
        kinds.label.append(not total and is_group_label_row(row))
    return kinds


# Cut preferences, best first. A cut at position p falls between data rows p-1 and p.
_CUT_AFTER_TOTAL = 3  # row p-1 ends a group with its total and row p is not another total
_CUT_BETWEEN_TOTALS = 2  # still ends on a total, but splits "Total equity" from "Total liabilities and equity"
_CUT_BEFORE_LABEL = 1  # a new group starts at p (a group without a total row ends here)
_CUT_INSIDE_GROUP = 0


def _cut_level(kinds: _RowKinds, p: int) -> int:
    if kinds.total[p - 1]:
        return _CUT_BETWEEN_TOTALS if kinds.total[p] else _CUT_AFTER_TOTAL
    if kinds.label[p] and not kinds.label[p - 1]:  # never between "Assets" and "Current assets"
        return _CUT_BEFORE_LABEL
    return _CUT_INSIDE_GROUP


def _nearest_marks(kinds: _RowKinds) -> list[int]:
    """For each row, the nearest row at or above it that is a total or a group label (-1 if none)."""
    nearest, last = [], -1
    for j, (total, label) in enumerate(zip(kinds.total, kinds.label, strict=True)):
        if total or label:
            last = j
        nearest.append(last)
    return nearest


def _context_label(kinds: _RowKinds, nearest: list[int], cut: int) -> int | None:
    """The label row of the group that a cut at ``cut`` splits: the nearest label above it, unless a total closes
    the group first. ``nearest`` (``_nearest_marks``) makes this constant time: scanning upwards from every cut
    was quadratic in a long table without totals or labels."""
    j = nearest[cut - 1] if cut > 0 else -1
    return j if j >= 0 and kinds.label[j] else None


def split_table_blocks(table: TableData, max_data_rows: int = 15) -> list[TableBlock]:
    """Split a table into blocks of at most ``max_data_rows`` data rows, each repeating the header rows.

    Each block takes as many rows as fit and ends at the best available cut: after a total row; else before a group
    label (keeping groups whole); else, when a single group is longer than a block, after ``max_data_rows`` rows, and
    the next block then starts with that group's label row as context (counted as a data row). Among cuts of the
    best kind the furthest wins, so whole groups are packed greedily. A table with at most ``max_data_rows`` data
    rows (including none) gives one block. Rows are copied, never dropped or reordered.
    """
    if max_data_rows < 1:
        raise ValueError(f"max_data_rows must be at least 1, got {max_data_rows}")
    header = [list(r) for r in table.rows[: table.header_rows]]
    data = [list(r) for r in table.rows[table.header_rows :]]
    kinds = _row_kinds(data)
    nearest = _nearest_marks(kinds)
    n = len(data)

    blocks: list[TableBlock] = []
    start = 0
    context: int | None = None
    while True:
        room = max_data_rows - (context is not None)
        if n - start <= room:
            end, level = n, _CUT_AFTER_TOTAL
        else:
            # Furthest cut of the best level in (start, start + room]; start + room < n here.
            level, end = max((_cut_level(kinds, p), p) for p in range(start + 1, start + room + 1))
        prefix = [list(data[context])] if context is not None else []
        blocks.append(
            TableBlock(
                header_rows=[list(r) for r in header],
                data_rows=prefix + [list(r) for r in data[start:end]],
                row_range=(start, end),
                block_index=len(blocks),
                context_rows=len(prefix),
            )
        )
        if end >= n:
            return blocks
        # A context row needs room for at least one new row beside it.
        context = _context_label(kinds, nearest, end) if level == _CUT_INSIDE_GROUP and max_data_rows > 1 else None
        start = end


# ---------------------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------------------


def _pad(row: list[str], n_cols: int) -> list[str]:
    return list(row) + [""] * (n_cols - len(row))


def _header_columns(header_rows: list[list[str]], n_cols: int) -> list[str]:
    """One string per column: the header rows' cells joined top to bottom.

    In all but the last header row a blank cell takes the text on its left (from column 1 on), because spanning
    headers ("Six Months Ended" over two date columns) arrive in the first cell of their span only.
    """
    parts: list[list[str]] = [[] for _ in range(n_cols)]
    for r, row in enumerate(header_rows):
        cells = [normalize_line(c) for c in _pad(row, n_cols)]
        if r < len(header_rows) - 1:
            for c in range(2, n_cols):
                if not cells[c] and cells[c - 1]:
                    cells[c] = cells[c - 1]
        for c, cell in enumerate(cells):
            if cell and (not parts[c] or parts[c][-1] != cell):
                parts[c].append(cell)
    return [" ".join(p) for p in parts]


def _md_cell(cell: str) -> str:
    return normalize_line(cell).replace("\\", "\\\\").replace("|", "\\|")


def block_to_markdown(block: TableBlock, title: str = "", units: str = "") -> str:
    """Render a block as a GitHub markdown table, with ``title`` and ``units`` (when given) on lines above it.

    Markdown has a single header row, so multiple header rows are joined per column. Pipes are escaped, cell line
    breaks become spaces, and short rows are padded to the widest row.
    """
    n_cols = max(block.n_cols, 1)
    header = [_md_cell(c) for c in _header_columns(block.header_rows, n_cols)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join([" --- "] * n_cols) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in _pad(row, n_cols)) + " |" for row in block.data_rows]
    above = [normalize_line(t) for t in (title, units) if normalize_line(t)]
    return "\n".join([*above, "", *lines]) if above else "\n".join(lines)


def block_to_json(block: TableBlock, units_label: str = "", multiplier: float = 1.0) -> dict[str, Any]:
    """A plain-JSON view of a block for Document meta (only str/float/int/bool/None/list/dict).

    ``columns`` has one joined header string per column (column 0 is the label column). Each row has ``label``,
    ``cells`` (raw strings, all columns, padded) and ``values`` (parsed numbers in the *reported* units, aligned with
    ``cells``; ``values[0]`` is always None since column 0 is the label), plus ``is_total`` and ``is_context`` (a
    repeated group label, not new data). ``units``/``multiplier`` come from ``detect_units``; values are not scaled.
    """
    n_cols = max(block.n_cols, 1)
    rows: list[dict[str, Any]] = []
    for i, row in enumerate(block.data_rows):
        cells = [str(c) for c in _pad(row, n_cols)]
        rows.append(
            {
                "label": normalize_line(cells[0]),
                "cells": cells,
                "values": [None] + [parse_number(c) for c in cells[1:]],
                "is_total": is_total_row(cells[0]),
                "is_context": i < block.context_rows,
            }
        )
    return {
        "columns": _header_columns(block.header_rows, n_cols),
        "rows": rows,
        "units": units_label,
        "multiplier": float(multiplier),
        "block_index": block.block_index,
        "row_range": [block.row_range[0], block.row_range[1]],
    }
