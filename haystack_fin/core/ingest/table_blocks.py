"""Table splitting: financial tables cut into row-group-aware blocks.

Filing tables (balance sheets, cash-flow statements, segment tables) are often too long for one chunk. Cutting them
every N rows separates a line item from its section ("Current liabilities") and its total, so this module splits a
``TableData`` into ``TableBlock``s along the table's own structure:

* a *group* is a run of group-label rows (a label and no values, e.g. "Current assets:") plus the rows after it, up
  to and including the first total row, or up to the next group label;
* blocks end, in order of preference: after a total row, before a group label, or (only when one group alone is
  longer than a block) after ``max_data_rows`` rows; in that last case the group's label row is repeated at the top
  of the continuation block as context;
* every block repeats the table's header rows.

Cell values and unit statements are read by ``core/table_cells.py``; blocks render to Markdown and JSON here.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from haystack_fin.core.ingest.layout import TableData
from haystack_fin.core.table_cells import parse_number
from haystack_fin.core.text import normalize_line
from haystack_fin.core.validation import check_int

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
    check_int("max_data_rows", max_data_rows)
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


# A cell longer than this is clipped in a block's text and JSON: real cells (a label, a value, a footnote) are
# far shorter, while a filler cell of an HTML layout table can run to 100,000+ characters and would make one table
# block the size of a filing.
MAX_CELL_CHARS = 2000
# Dot leaders and fill-in rules ("Net sales . . . . $", "______"): every dot is a token to the embedder and BM25,
# and none carries meaning. Dashes are left alone: a lone run of them is a nil value.
_LEADER = re.compile(r"(?:\. ?){4,}|[_·…]{4,}")


def clip_cell(cell: str) -> str:
    """``cell`` with leader runs collapsed to one ellipsis, clipped to ``MAX_CELL_CHARS`` characters."""
    if "." in cell or "_" in cell or "·" in cell or "…" in cell:
        cell = _LEADER.sub("… ", cell).strip() if _LEADER.search(cell) else cell
    return cell if len(cell) <= MAX_CELL_CHARS else cell[:MAX_CELL_CHARS] + "…"


def _md_cell(cell: str) -> str:
    return normalize_line(clip_cell(cell)).replace("\\", "\\\\").replace("|", "\\|")


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


TABLE_SUMMARY_CHARS = 600  # ~120 MiniLM tokens: the rest of its 256 are the block's markdown


def table_summary(title: str, units: str, block_json: dict[str, Any]) -> str:
    """The words of a table block without its numbers: title, units, column headers, every row label.

    Why: the embedder reads 256 tokens (all-MiniLM-L6-v2's limit), and a table block's markdown spends most of them
    on numbers and separators, so the vector of a long block never sees its last row labels ("Capital expenditures"
    below twenty rows of operating cash flow). The summary goes first in the embedded text (``meta_fields_to_embed``);
    the markdown stays the content and the structured JSON the ground truth.
    """
    columns = [normalize_line(c) for c in block_json.get("columns", [])[1:] if normalize_line(c)]
    labels = list(dict.fromkeys(r["label"] for r in block_json.get("rows", []) if r.get("label")))
    parts = [normalize_line(t) for t in (title, units) if normalize_line(t)]
    if columns:
        parts.append("Columns: " + "; ".join(dict.fromkeys(columns)))
    if labels:
        parts.append("Rows: " + "; ".join(labels))
    text = ". ".join(parts)
    return text if len(text) <= TABLE_SUMMARY_CHARS else text[: TABLE_SUMMARY_CHARS - 1].rstrip() + "…"


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
        cells = [clip_cell(str(c)) for c in _pad(row, n_cols)]
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
        "columns": [clip_cell(c) for c in _header_columns(block.header_rows, n_cols)],
        "rows": rows,
        "units": units_label,
        "multiplier": float(multiplier),
        "block_index": block.block_index,
        "row_range": [block.row_range[0], block.row_range[1]],
    }
