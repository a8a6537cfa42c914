"""Table cells as facts: each numeric cell of a table block is (metric, period, value) with its provenance.

"capex FY2018" is then one lookup and a ratio's inputs are two. The row label gives the metric (the lexicon
cluster it names, ``entities.row_metric``), the column header the period (``entities.column_period``; a "Change
2015 vs. 2014" column names no single period), and the value is scaled by the table's unit statement ("in
millions": 1,234 -> 1.234e9) except for cells that are not amounts in that unit: percentages, per-share amounts
and ratios keep their printed number ("in millions, except per share data").
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from haystack_fin.core import schema
from haystack_fin.core.graph.entities import FiscalCalendar, column_period, row_metric
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.table_cells import ParsedValue, parse_cell

# Rows and columns whose numbers are not in the table's unit: "Diluted earnings per share", "Revenue per
# membership", "Gross margin %", "Effective tax rate", "Ratio of earnings to fixed charges", "Number of stores".
_UNSCALED_LABEL = re.compile(r"\bper\b|%|\bpercent|\bratio\b|\brate\b|\bmargin\b|\bmultiple\b|\bnumber of\b", re.I)
_UNSCALED_COLUMN = re.compile(r"%|\bpercent|\bchange\b|\bbps\b|\bpoints?\b", re.I)

_MARKER_CELL = re.compile(r"^\(\d\)$")
_YEAR_CELL = re.compile(r"^(?:19|20)\d\d$")

UNIT_PERCENT = "%"
UNIT_PER_SHARE = "per_unit"  # per share, per membership, per unit: printed as is
UNIT_SCALED = "amount"  # scaled by the table's multiplier


@dataclass(frozen=True)
class Fact:
    """One numeric cell. ``row`` indexes ``meta["table"]["rows"]``, ``col`` the cells; ``value`` is scaled (see the
    module docstring), ``precision`` half a unit of the last printed digit after scaling (equal values within it
    are the same number printed twice, e.g. 6,779,511 thousand and $6.8 billion)."""

    chunk_id: str
    row: int
    col: int
    label: str
    column: str
    metric: str
    period: str
    value: float
    raw: str
    unit: str
    precision: float
    item: str
    table_id: str
    pages: tuple[int, ...]
    is_total: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "row": self.row,
            "col": self.col,
            "label": self.label,
            "column": self.column,
            "metric": self.metric,
            "period": self.period,
            "value": self.value,
            "raw": self.raw,
            "unit": self.unit,
            "table_id": self.table_id,
            "pages": list(self.pages),
        }


def _decimals(raw: str) -> int:
    digits = raw.strip().rstrip("%)").rstrip()
    _, dot, tail = digits.rpartition(".")
    return len(tail) if dot and tail.isdigit() else 0


def _numeric_columns(parsed_rows: list[list[ParsedValue]], n_columns: int) -> set[int]:
    """Columns where at least half the filled cells are numbers: "Exhibit Description", "Maturities" ("< 5 Years",
    "2024 - 2050") and "Location" columns hold words with stray digits."""
    out = set()
    for c in range(1, max(n_columns, max((len(r) for r in parsed_rows), default=0))):
        filled = [r[c] for r in parsed_rows if c < len(r) and r[c].raw.strip()]
        # A column of "(1)", "(2)" markers is footnote references (a list of subsidiaries), not amounts.
        markers = all(_MARKER_CELL.match(p.raw.strip()) for p in filled)
        if filled and not markers and 2 * sum(p.value is not None for p in filled) >= len(filled):
            out.add(c)
    return out


def table_facts(
    chunk_id: str, meta: Mapping[str, Any], lexicon: Lexicon, calendar: FiscalCalendar | None = None
) -> list[Fact]:
    """The numeric cells of a table block chunk as facts (none for a chunk without ``meta["table"]``).

    Repeated context rows (a group label carried into a continuation block) and zero cells (dashes for nil) are
    left out: a nil says nothing a lookup could use, and would make every two nils "the same value".
    """
    table = meta.get(schema.TABLE_JSON)
    if not isinstance(table, Mapping):
        return []
    calendar = calendar or FiscalCalendar.from_meta(meta)
    columns = [str(c) for c in table.get("columns") or ()]
    periods = [column_period(c, calendar) if i else "" for i, c in enumerate(columns)]
    multiplier = float(table.get("multiplier") or 1.0)
    pages = tuple(int(p) for p in meta.get(schema.PAGE_NUMBERS) or ())
    item = str(meta.get(schema.ITEM) or "")
    table_id = str(meta.get(schema.TABLE_ID) or "")
    rows = [r for r in table.get("rows") or () if isinstance(r, Mapping)]
    parsed_rows = [[parse_cell(str(c)) for c in r.get("cells") or ()] for r in rows]
    numeric_columns = _numeric_columns(parsed_rows, len(columns))
    facts: list[Fact] = []
    for r, row in enumerate(rows):
        if row.get("is_context"):
            continue
        label = str(row.get("label") or "")
        cells = [str(c) for c in row.get("cells") or ()]
        parsed_cells = parsed_rows[r]
        filled = [p for p in parsed_cells[1:] if p.raw.strip()]
        # A header row read as data ("Contractual Obligations | Total | Less Than 1 Year | ... | More Than 5
        # Years"): most of its cells are words, so its stray numbers are no facts.
        if filled and 2 * sum(p.value is not None for p in filled) < len(filled):
            continue
        metric = row_metric(label, lexicon) if label else ""
        unscaled_row = bool(_UNSCALED_LABEL.search(label))
        for c in range(1, len(cells)):
            parsed = parsed_cells[c]
            if parsed.value is None or parsed.value == 0.0 or c not in numeric_columns:
                continue
            if _YEAR_CELL.match(parsed.raw.strip()):  # "2017" in a description column: a date, not an amount
                continue
            column = columns[c] if c < len(columns) else ""
            if parsed.is_percent or (column and _UNSCALED_COLUMN.search(column)):
                unit, scale = UNIT_PERCENT, 1.0
            elif unscaled_row:
                unit, scale = UNIT_PER_SHARE, 1.0
            else:
                unit, scale = UNIT_SCALED, multiplier
            facts.append(
                Fact(
                    chunk_id=chunk_id,
                    row=r,
                    col=c,
                    label=label,
                    column=column,
                    metric=metric,
                    period=periods[c] if c < len(periods) else "",
                    value=parsed.value * scale,
                    raw=cells[c].strip(),
                    unit=unit,
                    precision=0.5 * scale * 10.0 ** (-_decimals(cells[c])),
                    item=item,
                    table_id=table_id,
                    pages=pages,
                    is_total=bool(row.get("is_total")),
                )
            )
    return facts
