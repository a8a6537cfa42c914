"""Cell parsing, unit detection, row classification and group-aware splitting of financial tables.

The two statement fixtures are copied from Best Buy's 10-Q for the quarter ended July 29, 2023
(tests/fixtures/bestbuy-10q-2023-07-29.pdf, pages 3 and 6), as rows a table parser would produce.
"""

import itertools
import json
import random
import re

import pytest

from haystack_fin.core.ingest.layout import TableData
from haystack_fin.core.ingest.table_blocks import (
    MAX_CELL_CHARS,
    TableBlock,
    block_to_json,
    block_to_markdown,
    clip_cell,
    is_group_label_row,
    is_total_row,
    split_table_blocks,
    table_summary,
)
from haystack_fin.core.table_cells import ParsedValue, detect_units, parse_cell, parse_number

# --- fixtures ------------------------------------------------------------------------------------------------

BALANCE_HEADER = ["", "July 29, 2023", "January 28, 2023", "July 30, 2022"]
BALANCE_ROWS = [
    ["Assets", "", "", ""],
    ["Current assets", "", "", ""],
    ["Cash and cash equivalents", "$ 1,093", "$ 1,874", "$ 840"],
    ["Receivables, net", "856", "1,141", "840"],
    ["Merchandise inventories", "5,651", "5,140", "6,043"],
    ["Other current assets", "704", "647", "621"],
    ["Total current assets", "8,304", "8,802", "8,344"],
    ["Property and equipment, net", "2,305", "2,352", "2,319"],
    ["Operating lease assets", "2,813", "2,746", "2,796"],
    ["Goodwill", "1,383", "1,383", "1,385"],
    ["Other assets", "513", "520", "575"],
    ["Total assets", "$ 15,318", "$ 15,803", "$ 15,419"],
    ["Liabilities and equity", "", "", ""],
    ["Current liabilities", "", "", ""],
    ["Accounts payable", "$ 5,471", "$ 5,687", "$ 5,406"],
    ["Unredeemed gift card liabilities", "250", "274", "273"],
    ["Deferred revenue", "996", "1,116", "1,133"],
    ["Accrued compensation and related expenses", "377", "405", "374"],
    ["Accrued liabilities", "709", "843", "820"],
    ["Current portion of operating lease liabilities", "615", "638", "629"],
    ["Current portion of long-term debt", "15", "16", "15"],
    ["Total current liabilities", "8,433", "8,979", "8,650"],
    ["Long-term operating lease liabilities", "2,254", "2,164", "2,221"],
    ["Long-term debt", "1,145", "1,160", "1,184"],
    ["Long-term liabilities", "651", "705", "472"],
    ["Contingencies (Note 10)", "", "", ""],
    ["Equity", "", "", ""],
    ["Best Buy Co., Inc. Shareholders' Equity", "", "", ""],
    [
        "Preferred stock, $1.00 par value: Authorized - 400,000 shares; Issued and outstanding - none",
        "-",
        "-",
        "-",
    ],
    [
        "Common stock, $0.10 par value: Authorized - 1.0 billion shares; Issued and outstanding - 217.9 million, "
        "218.1 million and 225.1 million shares, respectively",
        "22",
        "22",
        "22",
    ],
    ["Additional paid-in capital", "-", "21", "20"],
    ["Retained earnings", "2,491", "2,430", "2,522"],
    ["Accumulated other comprehensive income", "322", "322", "328"],
    ["Total equity", "2,835", "2,795", "2,892"],
    ["Total liabilities and equity", "$ 15,318", "$ 15,803", "$ 15,419"],
]

# Two header rows: the period span sits in the first cell of its span only, as HTML colspans arrive.
CASH_FLOW_HEADER = [["", "Six Months Ended", ""], ["", "July 29, 2023", "July 30, 2022"]]
CASH_FLOW_ROWS = [
    ["Operating activities", "", ""],
    ["Net earnings", "$ 518", "$ 647"],
    ["Adjustments to reconcile net earnings to total cash provided by (used in) operating activities:", "", ""],
    ["Depreciation and amortization", "473", "453"],
    ["Restructuring charges", "(16)", "35"],
    ["Stock-based compensation", "75", "65"],
    ["Gain on sale of subsidiary, net", "(21)", "-"],
    ["Other, net", "2", "19"],
    ["Changes in operating assets and liabilities:", "", ""],
    ["Receivables", "289", "201"],
    ["Merchandise inventories", "(508)", "(79)"],
    ["Other assets", "(32)", "(13)"],
    ["Accounts payable", "(206)", "(1,434)"],
    ["Income taxes", "(148)", "42"],
    ["Other liabilities", "(245)", "(645)"],
    ["Total cash provided by (used in) operating activities", "181", "(709)"],
    ["Investing activities", "", ""],
    ["Additions to property and equipment", "(395)", "(441)"],
    ["Purchases of investments", "(2)", "(46)"],
    ["Net proceeds from sale of subsidiary", "14", "-"],
    ["Other, net", "2", "3"],
    ["Total cash used in investing activities", "(381)", "(484)"],
    ["Financing activities", "", ""],
    ["Repurchase of common stock", "(158)", "(465)"],
    ["Dividends paid", "(402)", "(397)"],
    ["Other, net", "-", "1"],
    ["Total cash used in financing activities", "(560)", "(861)"],
    ["Effect of exchange rate changes on cash and cash equivalents", "(2)", "1"],
    ["Decrease in cash, cash equivalents and restricted cash", "(762)", "(2,053)"],
    ["Cash, cash equivalents and restricted cash at beginning of period", "2,253", "3,205"],
    ["Cash, cash equivalents and restricted cash at end of period", "$ 1,491", "$ 1,152"],
]


def balance_sheet() -> TableData:
    return TableData(
        rows=[BALANCE_HEADER, *BALANCE_ROWS],
        header_rows=1,
        title="Condensed Consolidated Balance Sheets",
        units="$ in millions, except per share amounts (unaudited)",
    )


def cash_flow() -> TableData:
    return TableData(
        rows=[*CASH_FLOW_HEADER, *CASH_FLOW_ROWS],
        header_rows=2,
        title="Condensed Consolidated Statements of Cash Flows",
        units="$ in millions (unaudited)",
    )


def fresh_rows(blocks: list[TableBlock]) -> list[list[str]]:
    return [row for b in blocks for row in b.data_rows[b.context_rows :]]


# --- parse_number / parse_cell -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("(1,234)", -1234.0),
        ("$ 1,093", 1093.0),
        ("-12.5", -12.5),
        ("(3.2)%", -3.2),
        ("(3.2%)", -3.2),
        ("—", 0.0),
        ("–", 0.0),
        ("-", 0.0),
        ("$ —", 0.0),
        ("—%", 0.0),
        ("n/a", None),
        ("N/A", None),
        ("NM", None),
        ("", None),
        ("   ", None),
        ("1.2x", 1.2),
        ("12.5 x", 12.5),
        ("150 bps", 150.0),
        ("1,234 (a)", 1234.0),
        ("1,234(1)", 1234.0),
        ("1,234*", 1234.0),
        ("1,234¹", 1234.0),
        ("(1,234)(2)", -1234.0),
        ("(1)", -1.0),  # a bare parenthesized number is a negative, not a footnote
        ("(a)", None),
        ("2023", 2023.0),
        ("July 29, 2023", None),
        ("$(1,234)", -1234.0),
        ("($1,234)", -1234.0),
        ("-$12", -12.0),
        ("−12", -12.0),  # U+2212 minus sign
        ("(−12)", -12.0),  # redundant notation, not a double negative
        ("+5.0%", 5.0),
        ("\xa01,093\xa0", 1093.0),
        ("1,234,567.89", 1234567.89),
        (".5", 0.5),
        ("(0)", 0.0),
        ("$", None),
        ("%", None),
        ("1,23", None),  # malformed grouping is not silently read as 123
        ("1.2B", None),  # scale words in cells are not guessed
        ("Total assets", None),
    ],
)
def test_parse_number(cell: str, expected: float | None) -> None:
    assert parse_number(cell) == expected


def test_parse_number_never_returns_negative_zero() -> None:
    assert str(parse_number("(—)")) == "0.0"
    assert str(parse_number("(0)")) == "0.0"


@pytest.mark.parametrize(
    ("cell", "value", "is_percent", "is_currency"),
    [
        ("(3.2)%", -3.2, True, False),
        ("$ 1,093", 1093.0, False, True),
        ("$ —", 0.0, False, True),
        ("1,093 USD", 1093.0, False, True),
        ("€ 12", 12.0, False, True),
        ("42", 42.0, False, False),
        ("NM", None, False, False),
    ],
)
def test_parse_cell_flags(cell: str, value: float | None, is_percent: bool, is_currency: bool) -> None:
    assert parse_cell(cell) == ParsedValue(value, is_percent, is_currency, cell)


# --- detect_units --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(in millions, except per share data)", ("millions", 1e6)),
        ("$ in thousands", ("thousands", 1e3)),
        ("In billions", ("billions", 1e9)),
        ("(Dollars in millions)", ("millions", 1e6)),
        ("amounts in millions", ("millions", 1e6)),
        ("$ in millions, except per share amounts (unaudited)", ("millions", 1e6)),
        ("(Millions of dollars)", ("millions", 1e6)),
        ("($ millions)", ("millions", 1e6)),
        ("(in € million)", ("millions", 1e6)),
        ("($000)", ("thousands", 1e3)),
        ("(in 000's)", ("thousands", 1e3)),
        ("(in millions, except per share data; shares in thousands)", ("millions", 1e6)),
        ("Revenue grew $2.3 million to $1.2 billion", ("", 1.0)),
        ("Condensed Consolidated Balance Sheets", ("", 1.0)),
        ("", ("", 1.0)),
    ],
)
def test_detect_units(text: str, expected: tuple[str, float]) -> None:
    assert detect_units(text) == expected


def test_detect_units_tries_texts_in_order() -> None:
    assert detect_units("", "Segment results", "(in thousands)", "(in millions)") == ("thousands", 1e3)
    assert detect_units() == ("", 1.0)


# --- row classification --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label",
    [
        "Total current assets",
        "Total",
        "Totals:",
        "Total assets (1)",
        "Subtotal",
        "Sub-total",
        "Segment total",
        "Grand total",
        "Net cash provided by operating activities",
        "Net cash used in investing activities",
        "Net cash provided by (used in) financing activities",
        "Net increase (decrease) in cash and cash equivalents",
        "Decrease in cash, cash equivalents and restricted cash",
        "Total cash provided by (used in) operating activities",
    ],
)
def test_is_total_row(label: str) -> None:
    assert is_total_row(label)


@pytest.mark.parametrize(
    "label",
    [
        "",
        "Net earnings",  # opens cash-flow statements; deliberately not a total
        "Net income",
        "Cash and cash equivalents",
        "Percent of total",
        "(Increase) decrease in receivables",
        "Net cash paid for interest",
        "Totalisator receipts",
        "Cash, cash equivalents and restricted cash at end of period",
    ],
)
def test_is_not_total_row(label: str) -> None:
    assert not is_total_row(label)


def test_is_group_label_row() -> None:
    assert is_group_label_row(["Current assets:", "", "", ""])
    assert is_group_label_row(["Liabilities and equity"])
    assert is_group_label_row(["Contingencies (Note 10)", " ", "$", "\xa0"])  # stray "$" column is not a value
    assert not is_group_label_row(["Receivables, net", "856", "1,141", "840"])
    assert not is_group_label_row(["Preferred stock", "-", "-", "-"])  # a dash is a nil value
    assert not is_group_label_row(["Ratio", "NM", "", ""])
    assert not is_group_label_row(["", "", ""])
    assert not is_group_label_row([])


# --- splitting: real statements ------------------------------------------------------------------------------


def test_balance_sheet_blocks() -> None:
    table = balance_sheet()
    blocks = split_table_blocks(table, max_data_rows=15)

    # Assets | liabilities up to their total | the rest, each ending on a total row.
    assert [b.row_range for b in blocks] == [(0, 12), (12, 22), (22, 35)]
    assert [b.block_index for b in blocks] == [0, 1, 2]
    for block in blocks:
        assert len(block.data_rows) <= 15
        assert block.header_rows == [BALANCE_HEADER]
        assert block.context_rows == 0
    for block in blocks[:-1]:
        assert is_total_row(block.data_rows[-1][0])
    assert blocks[-1].data_rows[-1][0] == "Total liabilities and equity"
    assert fresh_rows(blocks) == BALANCE_ROWS


def test_balance_sheet_values_and_units() -> None:
    table = balance_sheet()
    units, multiplier = detect_units(table.units, table.title)
    blocks = split_table_blocks(table)
    data = block_to_json(blocks[0], units, multiplier)

    assert data["units"] == "millions"
    assert data["multiplier"] == 1e6
    assert data["columns"] == BALANCE_HEADER
    by_label = {row["label"]: row for row in data["rows"]}
    assert by_label["Cash and cash equivalents"]["values"] == [None, 1093.0, 1874.0, 840.0]
    assert by_label["Cash and cash equivalents"]["cells"] == [
        "Cash and cash equivalents",
        "$ 1,093",
        "$ 1,874",
        "$ 840",
    ]
    assert by_label["Total assets"]["values"] == [None, 15318.0, 15803.0, 15419.0]
    assert by_label["Total assets"]["is_total"]
    assert not by_label["Goodwill"]["is_total"]
    assert by_label["Current assets"]["values"] == [None, None, None, None]

    equity = {row["label"]: row for row in block_to_json(blocks[-1], units, multiplier)["rows"]}
    assert equity["Additional paid-in capital"]["values"] == [None, 0.0, 21.0, 20.0]

    # The assets block adds up: current assets plus long-lived assets give total assets, in every column.
    for col in (1, 2, 3):
        parts = ["Total current assets", "Property and equipment, net", "Operating lease assets", "Goodwill"]
        assert (
            sum(by_label[p]["values"][col] for p in [*parts, "Other assets"]) == by_label["Total assets"]["values"][col]
        )


def test_cash_flow_blocks_keep_sections_and_signs() -> None:
    table = cash_flow()
    blocks = split_table_blocks(table, max_data_rows=15)

    # Operating activities (16 rows) cannot fit with its total; it splits at its "Changes in ..." sub-section
    # label instead of mid-section, and the next block ends on the investing total.
    assert [b.row_range for b in blocks] == [(0, 8), (8, 22), (22, 31)]
    assert blocks[1].data_rows[0][0] == "Changes in operating assets and liabilities:"
    assert blocks[1].data_rows[-1][0] == "Total cash used in investing activities"
    assert all(b.header_rows == CASH_FLOW_HEADER for b in blocks)
    assert fresh_rows(blocks) == CASH_FLOW_ROWS

    data = block_to_json(blocks[1], *detect_units(table.units))
    assert data["columns"] == ["", "Six Months Ended July 29, 2023", "Six Months Ended July 30, 2022"]
    by_label = {row["label"]: row for row in data["rows"]}
    assert by_label["Accounts payable"]["values"] == [None, -206.0, -1434.0]
    assert by_label["Total cash provided by (used in) operating activities"]["values"] == [None, 181.0, -709.0]
    assert by_label["Net proceeds from sale of subsidiary"]["values"] == [None, 14.0, 0.0]


def test_table_summary_has_every_row_label_and_no_numbers() -> None:
    table = cash_flow()
    block = split_table_blocks(table, max_data_rows=15)[1]
    data = block_to_json(block, *detect_units(table.units))
    summary = table_summary("Condensed Consolidated Statements of Cash Flows", "$ in millions", data)
    assert summary.startswith("Condensed Consolidated Statements of Cash Flows. $ in millions. Columns: Six Months")
    assert all(row["label"] in summary for row in data["rows"] if row["label"])
    assert "1,434" not in summary and "206" not in summary  # the block's values stay in its markdown only
    assert table_summary("", "", {"columns": [], "rows": []}) == ""
    many = {"columns": ["", "2023"], "rows": [{"label": f"Line item number {i}"} for i in range(200)]}
    assert len(table_summary("T", "", many)) <= 600  # the embedder's 256 tokens keep room for the markdown


def test_small_table_is_one_block() -> None:
    table = TableData(rows=[BALANCE_HEADER, *BALANCE_ROWS[:15]], header_rows=1)
    blocks = split_table_blocks(table, max_data_rows=15)
    assert len(blocks) == 1
    assert blocks[0].row_range == (0, 15)
    assert blocks[0].data_rows == BALANCE_ROWS[:15]


def test_empty_and_header_only_tables_give_one_empty_block() -> None:
    for table in (TableData(rows=[]), TableData(rows=[BALANCE_HEADER], header_rows=1)):
        blocks = split_table_blocks(table)
        assert len(blocks) == 1
        assert blocks[0].data_rows == []
        assert blocks[0].row_range == (0, 0)


def test_max_data_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_data_rows"):
        split_table_blocks(balance_sheet(), max_data_rows=0)


def test_input_rows_are_not_shared_with_blocks() -> None:
    table = balance_sheet()
    blocks = split_table_blocks(table)
    blocks[0].data_rows[0][0] = "changed"
    blocks[0].header_rows[0][1] = "changed"
    assert table.rows[0] == BALANCE_HEADER
    assert table.rows[1][0] == "Assets"


# --- splitting: oversized groups -----------------------------------------------------------------------------


def test_oversized_group_repeats_its_label_as_context() -> None:
    rows = [["Revenue by product:", "", ""]]
    rows += [[f"Product {i}", str(i), f"({i})"] for i in range(1, 31)]
    rows += [["Total revenue", "465", "(465)"], ["Other income", "1", "2"]]
    table = TableData(rows=[["", "2023", "2022"], *rows], header_rows=1)

    blocks = split_table_blocks(table, max_data_rows=15)

    assert [b.row_range for b in blocks] == [(0, 15), (15, 29), (29, 33)]
    assert [b.context_rows for b in blocks] == [0, 1, 1]
    for block in blocks[1:]:
        assert block.data_rows[0] == ["Revenue by product:", "", ""]
    assert all(len(b.data_rows) <= 15 for b in blocks)
    assert fresh_rows(blocks) == rows
    assert block_to_json(blocks[1])["rows"][0]["is_context"] is True
    assert block_to_json(blocks[1])["rows"][1]["is_context"] is False


def test_oversized_group_splits_at_its_last_total_row() -> None:
    rows = [["Operating expenses:", "", ""]]
    rows += [[f"Expense {i}", "1", "2"] for i in range(6)]
    rows += [["Total personnel expenses", "6", "12"], ["Total personnel and benefits", "6", "12"]]
    rows += [[f"Other expense {i}", "1", "2"] for i in range(12)]
    table = TableData(rows=[["", "2023", "2022"], *rows], header_rows=1)

    blocks = split_table_blocks(table, max_data_rows=15)

    assert blocks[0].row_range == (0, 9)
    assert blocks[0].data_rows[-1][0] == "Total personnel and benefits"
    assert blocks[1].context_rows == 0  # the cut closed a group, so there is nothing to repeat
    assert fresh_rows(blocks) == rows


def test_max_one_row_per_block_has_no_room_for_context() -> None:
    rows = [["Section", ""], ["a", "1"], ["b", "2"], ["c", "3"]]
    blocks = split_table_blocks(TableData(rows=rows), max_data_rows=1)
    assert [b.data_rows for b in blocks] == [[r] for r in rows]
    assert all(b.context_rows == 0 for b in blocks)


# --- rendering -----------------------------------------------------------------------------------------------


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_block_to_markdown() -> None:
    table = balance_sheet()
    block = split_table_blocks(table)[0]
    text = block_to_markdown(block, title=table.title, units=table.units)
    lines = text.split("\n")

    assert lines[0] == "Condensed Consolidated Balance Sheets"
    assert lines[1] == "$ in millions, except per share amounts (unaudited)"
    assert lines[2] == ""
    assert lines[3] == "|  | July 29, 2023 | January 28, 2023 | July 30, 2022 |"
    assert lines[4] == "| --- | --- | --- | --- |"
    assert lines[5] == "| Assets |  |  |  |"
    assert lines[7] == "| Cash and cash equivalents | $ 1,093 | $ 1,874 | $ 840 |"
    assert len(lines) == 5 + len(block.data_rows)


def test_block_to_markdown_escapes_and_pads() -> None:
    block = TableBlock(
        header_rows=[["Segment", "FY23"]],
        data_rows=[["A|B", "1"], ["Wrapped\nlabel"], ["C", "2", "extra"], ["back\\slash|", "3"]],
        row_range=(0, 4),
        block_index=0,
    )
    lines = block_to_markdown(block).split("\n")

    assert lines[0] == "| Segment | FY23 |  |"  # no title or units: the table starts the text
    assert lines[2] == "| A\\|B | 1 |  |"
    assert lines[3] == "| Wrapped label |  |  |"
    assert all(_unescaped_pipes(line) == 4 for line in lines)


def test_block_to_json_is_plain_json() -> None:
    table = cash_flow()
    for block in split_table_blocks(table, max_data_rows=6):
        data = block_to_json(block, "millions", 1e6)
        assert json.loads(json.dumps(data)) == data
        assert set(data) >= {"columns", "rows", "units", "multiplier"}
        for row in data["rows"]:
            assert len(row["cells"]) == len(row["values"]) == len(data["columns"])
            assert isinstance(row["is_total"], bool)


# --- property-style: random tables ---------------------------------------------------------------------------


def _random_table(rng: random.Random) -> TableData:
    """Tables mixing section labels, items, totals, consecutive totals, blank and ragged rows, odd cell text."""
    n_cols = rng.randint(1, 5)
    header_rows = rng.randint(0, 2)
    rows = [[f"H{r}.{c}" if rng.random() < 0.8 else "" for c in range(n_cols)] for r in range(header_rows)]
    for i in range(rng.choice([0, 1, rng.randint(0, 15), rng.randint(0, 80)])):
        kind = rng.choices(["item", "label", "total", "blank"], weights=[10, 2, 2, 1])[0]
        width = rng.randint(1, n_cols + 1) if rng.random() < 0.2 else n_cols
        values = [rng.choice(["1,234", "(56)", "—", "$ 7", "n/a", "12%", "a|b", "x\\"]) for _ in range(width - 1)]
        if kind == "item":
            rows.append([f"Item {i}", *values])
        elif kind == "label":
            rows.append([f"Section {i}:"] + [rng.choice(["", "$"]) for _ in range(width - 1)])
        elif kind == "total":
            rows.append([rng.choice(["Total", "Subtotal", "Net cash used in x"]) + f" {i}", *values])
        else:
            rows.append([""] * width if rng.random() < 0.5 else [])
    return TableData(rows=rows, header_rows=header_rows)


def _cut_level(data: list[list[str]], p: int) -> int:
    """The contract's cut preferences, restated from the public classifiers."""

    def total(i: int) -> bool:
        return bool(data[i]) and is_total_row(data[i][0])

    def label(i: int) -> bool:
        return not total(i) and is_group_label_row(data[i])

    if total(p - 1):
        return 2 if total(p) else 3
    return 1 if label(p) and not label(p - 1) else 0


def _check_invariants(table: TableData, max_rows: int) -> None:
    header = table.rows[: table.header_rows]
    data = table.rows[table.header_rows :]
    blocks = split_table_blocks(table, max_data_rows=max_rows)

    assert [b.block_index for b in blocks] == list(range(len(blocks)))
    assert fresh_rows(blocks) == data
    assert blocks[0].row_range[0] == 0
    assert blocks[-1].row_range[1] == len(data)
    if len(data) <= max_rows:
        assert len(blocks) == 1
    for prev, block in itertools.pairwise(blocks):
        assert prev.row_range[1] == block.row_range[0]

    for i, block in enumerate(blocks):
        start, end = block.row_range
        assert block.header_rows == header
        assert len(block.data_rows) <= max_rows
        assert block.data_rows[block.context_rows :] == data[start:end]
        assert block.context_rows in (0, 1)
        assert end > start or not data
        if block.context_rows:
            # The context row is the label of the group the previous cut went through.
            assert is_group_label_row(block.data_rows[0])
            assert block.data_rows[0] in data[:start]
            assert _cut_level(data, start) == 0
        if i == len(blocks) - 1:
            continue
        room = max_rows - block.context_rows
        window = range(start + 1, start + room + 1)
        levels = {p: _cut_level(data, p) for p in window}
        # The block ends at the furthest cut of the best kind available in its window: on a total row when any
        # total fits, else before a group label, else (an oversized group) exactly when it is full.
        assert levels[end] == max(levels.values())
        assert all(levels[p] < levels[end] for p in window if p > end)
        if levels[end] == 0:
            assert end == start + room
            nxt = blocks[i + 1]
            above = [j for j in range(end) if is_group_label_row(data[j]) and not is_total_row(data[j][0])]
            closed = any(is_total_row(data[j][0]) for j in range(above[-1], end) if data[j]) if above else True
            assert nxt.context_rows == (0 if closed or max_rows == 1 else 1)


def test_random_tables_keep_the_invariants() -> None:
    rng = random.Random(20230729)
    for _ in range(1500):
        table = _random_table(rng)
        _check_invariants(table, max_rows=rng.choice([1, 2, 3, rng.randint(1, 20), 15]))


def test_random_tables_render() -> None:
    rng = random.Random(7)
    for _ in range(200):
        table = _random_table(rng)
        for block in split_table_blocks(table, max_data_rows=rng.randint(1, 15)):
            lines = block_to_markdown(block).split("\n")
            n_cols = max(block.n_cols, 1)
            assert len(lines) == 2 + len(block.data_rows)
            assert all(_unescaped_pipes(line) == n_cols + 1 for line in lines)
            data = block_to_json(block)
            assert json.loads(json.dumps(data)) == data


def test_leader_and_filler_cells_are_collapsed_and_clipped() -> None:
    assert clip_cell("Net sales . . . . . . . . $") == "Net sales … $"
    assert clip_cell("Net sales.............") == "Net sales…"
    assert clip_cell("3.14159") == "3.14159" and clip_cell("—") == "—" and clip_cell("----") == "----"
    assert clip_cell("." * 300_000) == "…"
    long = clip_cell("word " * 10_000)
    assert len(long) == MAX_CELL_CHARS + 1 and long.endswith("…")


def test_a_filler_cell_does_not_blow_up_a_block() -> None:
    table = TableData(rows=[["Item", "Page"], ["Business" + "." * 100_000, "3"], ["Risk factors", "9"]], header_rows=1)
    (block,) = split_table_blocks(table)
    text = block_to_markdown(block)
    assert len(text) < 200 and "Business…" in text
    assert block_to_json(block)["rows"][0]["cells"][0] == "Business…"
