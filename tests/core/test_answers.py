"""Numbers of an answer found in (or missing from) the passages it cites; excerpts are public SEC text from the
FinanceBench dev PDFs (MGM Resorts 2022 10-K p. 60, Best Buy 10-Q for the quarter ended July 29, 2023 pp. 13 and 17)."""

import pytest

from haystack_fin.core.answers import Passage, check_answer, cited_refs, find_numbers
from haystack_fin.core.ingest.layout import TableData
from haystack_fin.core.ingest.table_blocks import block_to_json, block_to_markdown, split_table_blocks
from haystack_fin.core.table_cells import detect_units

# MGM Resorts International 2022 10-K, Consolidated Statements of Operations (p. 60), rows as printed.
MGM_ROWS = [
    ["", "2022", "2021", "2020"],
    ["Casino", "$ 5,734,173", "$ 5,362,912", "$ 2,871,720"],
    ["Rooms", "3,057,145", "1,690,037", "830,382"],
    ["Property transactions, net", "(1,036,997)", "(67,736)", "93,567"],
    ["Gain on REIT transactions, net", "(2,277,747)", "—", "(1,491,945)"],
    ["Operating income (loss)", "1,439,372", "2,278,699", "(642,434)"],
    ["Net income (loss)", "206,731", "1,208,389", "(1,319,907)"],
    ["Diluted", "$ 3.49", "$ 2.41", "$ (2.02)"],
]
MGM_UNITS = "(In thousands, except per share data)"


def _table_passage(rows: list[list[str]], title: str, units: str, meta: dict) -> Passage:
    """A table block passage built the way indexing builds one (split, Markdown text, JSON meta)."""
    block = split_table_blocks(TableData(rows=rows, header_rows=1, title=title, units=units))[0]
    label, multiplier = detect_units(units, title)
    table = block_to_json(block, label, multiplier)
    return Passage(block_to_markdown(block, title, units), {**meta, "table": table, "modality": "table"}, "t1")


MGM = _table_passage(
    MGM_ROWS,
    "CONSOLIDATED STATEMENTS OF OPERATIONS",
    MGM_UNITS,
    {"filing_id": "MGM_2022_10K", "item": "8", "page_numbers": [60], "table_id": "MGM_2022_10K#table-0031"},
)

# Best Buy 10-Q (quarter ended July 29, 2023), p. 17, prose.
BBY_TEXT = Passage(
    "The decrease in revenue in the second quarter and first six months of fiscal 2024 was primarily driven by "
    "comparable sales declines in appliances, home theater, computing and mobile phones, partially offset by "
    "comparable sales growth in gaming. Online revenue of $2.8 billion and $5.5 billion in the second quarter and "
    "first six months of fiscal 2024 decreased 7.1% and 9.7% on a comparable basis, respectively.",
    {"filing_id": "BBY", "item": "I-2", "page_numbers": [17], "modality": "text"},
    "p17",
)
# Best Buy 10-Q p. 13: segment revenue ($ in millions).
BBY_TABLE = _table_passage(
    [
        ["", "Three Months Ended July 29, 2023", "Three Months Ended July 30, 2022"],
        ["Domestic", "8,890", "9,569"],
        ["International", "693", "760"],
        ["Total revenue", "9,583", "10,329"],
    ],
    "Reportable segment and product category revenue information was as follows ($ in millions):",
    "$ in millions",
    {"filing_id": "BBY", "item": "I-1", "page_numbers": [13], "table_id": "BBY#table-0022"},
)


def _texts(text: str) -> list[str]:
    return [m.text for m in find_numbers(text)]


def test_find_numbers_skips_years_citations_dates_and_references():
    text = (
        "In fiscal 2024 (the quarter ended July 29, 2023) revenue was $9,583 million [2], see Item 7, page 17 and "
        "Note 5 of the 10-Q [1, 3]."
    )
    assert _texts(text) == ["$9,583 million"]


def test_find_numbers_kinds_scales_and_signs():
    found = {
        m.text: m for m in find_numbers("a loss of (1,036,997), EPS $(2.02) per share, up 7.1%, $2.8 billion, $583M")
    }
    assert found["(1,036,997)"].value == -1036997 and found["(1,036,997)"].kind == "number"
    assert found["$(2.02) per share"].value == -2.02 and found["$(2.02) per share"].kind == "per_share"
    assert found["7.1%"].kind == "percent"
    assert found["$2.8 billion"].absolute == pytest.approx(2.8e9)
    assert found["$583M"].absolute == pytest.approx(583e6)


def test_find_numbers_scale_abbreviations_and_ranges():
    found = {m.text: m for m in find_numbers("$9.6B (9.6 bn), 583mm, 12 M shares, growth of 5-7% and 10,000 stores")}
    assert found["$9.6B"].absolute == pytest.approx(9.6e9) and found["9.6 bn"].absolute == pytest.approx(9.6e9)
    assert found["583mm"].absolute == pytest.approx(583e6)
    assert found["12"].scale is None  # a lone "M" after a bare figure is not read as millions
    assert found["5"].kind == "percent" and found["7%"].kind == "percent"
    assert found["10,000"].kind == "number"


def test_cited_refs_reads_groups_and_ranges():
    assert cited_refs("a [2] b [1, 3] c [4-5] d [2]") == [2, 1, 3, 4, 5]


def test_table_cell_supports_copied_and_rescaled_amounts():
    # "(1,036,997)" in an "In thousands" table is -1,036,997,000; "$1.04 billion" rounds to it (sign flagged).
    check = check_answer(
        "Property transactions, net were (1,036,997) thousand... i.e. $(1,036,997) [1]; about $1.04 billion [1].", [MGM]
    )
    assert check.unsupported_numbers == []
    by_text = {n.text: n for n in check.numbers}
    cell = by_text["$(1,036,997)"].found[0]
    assert cell.ref == 1 and cell.location["source"] == "table_cell"
    assert cell.location["label"] == "Property transactions, net" and cell.location["column"] == "2022"
    assert cell.exact and not cell.sign_differs
    rounded = by_text["$1.04 billion"].found[0]
    assert rounded.rounded and rounded.sign_differs  # a positive amount for a negative cell: flagged, not hidden
    assert check.citations[0]["table_id"] == "MGM_2022_10K#table-0031" and check.citations[0]["pages"] == [60]


def test_per_share_amounts_are_not_scaled_by_the_table_units():
    check = check_answer("Diluted EPS was $3.49 per share in 2022 and $(2.02) in 2020 [1].", [MGM])
    assert check.unsupported_numbers == []
    assert all(n.found[0].location["label"] == "Diluted" for n in check.numbers)


def test_wrong_number_is_unsupported():
    # 1,439,732 is a transposition of the printed 1,439,372.
    check = check_answer("Operating income was $1,439,732 thousand [1].", [MGM])
    assert [u["text"] for u in check.unsupported_numbers] == ["$1,439,732 thousand"]
    assert check.unsupported_numbers[0]["reason"] == "not in cited passages [1]"


def test_billions_in_prose_match_millions_in_a_table():
    answer = "Total revenue was $9.6 billion [2]; online revenue was $2.8 billion, down 7.1% [1]."
    check = check_answer(answer, [BBY_TEXT, BBY_TABLE])
    assert check.unsupported_numbers == []
    by_text = {n.text: n for n in check.numbers}
    total = by_text["$9.6 billion"].found
    assert [f.ref for f in total] == [2] and total[0].location["label"] == "Total revenue"
    assert by_text["7.1%"].found[0].location["source"] == "text"
    assert {c["ref"]: c["filing_id"] for c in check.citations} == {2: "BBY", 1: "BBY"}


def test_dollar_sign_does_not_matter_and_percent_is_not_an_amount():
    check = check_answer("Domestic revenue was $8,890 and International 693 [2]; 9.7 [1]", [BBY_TEXT, BBY_TABLE])
    assert [u["text"] for u in check.unsupported_numbers] == ["9.7"]  # the passage says 9.7%, a percentage


def test_number_only_in_an_uncited_passage_names_it():
    check = check_answer("Total revenue was $9,583 million [1].", [BBY_TEXT, BBY_TABLE])
    assert check.unsupported_numbers[0]["in_uncited"] == [2]


def test_no_citation_means_nothing_supported_and_bad_refs_are_reported():
    check = check_answer("Revenue was $9,583 million.", [BBY_TABLE])
    assert check.unsupported_numbers[0]["reason"] == "the answer cites no passage"
    assert check_answer("See [7].", [BBY_TABLE]).invalid_refs == [7]


def test_markdown_rows_beyond_the_meta_block_are_searched():
    # A window merges neighbouring blocks into the text while meta["table"] keeps the hit's block only.
    merged = Passage(
        BBY_TABLE.text + "\n| Services | 550 | 516 |",
        BBY_TABLE.meta,
        "merged",
    )
    check = check_answer("Services revenue was $550 million [1].", [merged])
    assert check.numbers[0].found[0].location["source"] == "table_text"
    assert check.numbers[0].found[0].location["label"] == "Services"


def test_to_dict_is_plain_json():
    import json

    json.dumps(check_answer("Total revenue was $9.6 billion [2].", [BBY_TEXT, BBY_TABLE]).to_dict())
