"""Primary-statement tables from their titles; statement cues in questions."""

import pytest

from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.statements import (
    BALANCE_SHEET,
    CASH_FLOW_STATEMENT,
    COMPREHENSIVE_INCOME_STATEMENT,
    EQUITY_STATEMENT,
    IMPLIED_WEIGHT,
    INCOME_STATEMENT,
    classify_statement_table,
    statement_section_path,
    statements_in_query,
)

LEX = Lexicon.load_default()


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        # Titles as printed in real 10-Ks (Activision, Microsoft, PepsiCo, Best Buy, MGM).
        ("ACTIVISION BLIZZARD, INC. AND SUBSIDIARIES CONSOLIDATED BALANCE SHEETS", BALANCE_SHEET),
        ("INCOME STATEMENTS", INCOME_STATEMENT),
        ("CASH FLOWS STATEMENTS", CASH_FLOW_STATEMENT),
        ("Consolidated Statement of Cash Flows (continued) PepsiCo, Inc. and Subsidiaries", CASH_FLOW_STATEMENT),
        ("Consolidated Statements of Earnings", INCOME_STATEMENT),
        ("Condensed Consolidated Statements of Changes in Shareholders' Equity", EQUITY_STATEMENT),
        (
            "MGM RESORTS INTERNATIONAL AND SUBSIDIARIES CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME (LOSS)",
            COMPREHENSIVE_INCOME_STATEMENT,
        ),
        # Titles that name the statement after its subject (Microsoft) or in the filer's own word (Coca-Cola's
        # shareowners, a deficit, a partnership's capital).
        ("COMPREHENSIVE INCOME STATEMENTS", COMPREHENSIVE_INCOME_STATEMENT),
        ("STOCKHOLDERS’ EQUITY STATEMENTS", EQUITY_STATEMENT),
        ("THE COCA-COLA COMPANY AND SUBSIDIARIES CONSOLIDATED STATEMENTS OF SHAREOWNERS' EQUITY", EQUITY_STATEMENT),
        ("Consolidated Statements of Comprehensive Earnings", COMPREHENSIVE_INCOME_STATEMENT),
        ("CONSOLIDATED STATEMENTS OF SHAREHOLDERS’ DEFICIT", EQUITY_STATEMENT),
        ("Consolidated Statements of Partners' Capital", EQUITY_STATEMENT),
    ],
)
def test_statement_titles(title, kind):
    assert classify_statement_table(title, 30, "8", "10-K", LEX) == kind


@pytest.mark.parametrize(
    "title",
    [
        # Captions that refer to a statement but head a note table.
        "Supplemental balance sheet information related to our operating leases is as follows:",
        "The following table presents the effects of interest rate derivatives on our Consolidated Statements of "
        "Earnings for fiscal 2017 and 2016:",
        "CONDENSED CONSOLIDATING BALANCE SHEET INFORMATION",
        "Cash, cash equivalents and restricted cash reported on our Consolidated Balance Sheets is reconciled to the "
        "total shown on our Consolidated Statements of Cash Flows",
        "Property and equipment",
        "",
    ],
)
def test_reference_captions_are_not_statements(title):
    assert classify_statement_table(title, 30, "8", "10-K", LEX) is None


def test_size_and_item_rules():
    assert classify_statement_table("Balance Sheet", 3, "8", "10-K", LEX) is None  # a note's three-line excerpt
    assert classify_statement_table("Consolidated Balance Sheets:", 12, "6", "10-K", LEX) is None  # selected data
    # Statements printed inside Item 7 (PepsiCo does) or in a 10-Q / earnings release are still statements.
    assert classify_statement_table("Consolidated Balance Sheet", 40, "7", "10-K", LEX) == BALANCE_SHEET
    assert classify_statement_table("Condensed Consolidated Balance Sheets", 30, "I-1", "10-Q", LEX) == BALANCE_SHEET
    assert classify_statement_table("Consolidated Balance Sheets", 30, "S2", "EARNINGS", LEX) == BALANCE_SHEET


def test_statements_in_query_named_and_implied():
    q = "What is the FY2018 capital expenditure amount for 3M? Base your answer on the cash flow statement."
    assert statements_in_query(q, LEX) == {CASH_FLOW_STATEMENT: 1.0}
    implied = statements_in_query("What were year-end inventories and capex?", LEX)
    assert implied == {BALANCE_SHEET: IMPLIED_WEIGHT, CASH_FLOW_STATEMENT: IMPLIED_WEIGHT}
    both = statements_in_query("FY2019 revenue / average PP&E, from the P&L and the balance sheet", LEX)
    assert both[INCOME_STATEMENT] == 1.0 and both[BALANCE_SHEET] == 1.0
    # A statement name inside a longer term of another concept still counts as named.
    assert statements_in_query("Has Verizon increased its debt on balance sheet?", LEX)[BALANCE_SHEET] == 1.0
    assert statements_in_query("Who is the chief executive officer?", LEX) == {}
    # A ratio points at the statements its inputs come from (the lexicon cluster's "statements").
    assert statements_in_query("What is the quick ratio?", LEX) == {BALANCE_SHEET: IMPLIED_WEIGHT}
    roa = statements_in_query("What is the return on assets?", LEX)
    assert roa == {INCOME_STATEMENT: IMPLIED_WEIGHT, BALANCE_SHEET: IMPLIED_WEIGHT}


ITEM_8 = "Item 8. Financial Statements and Supplementary Data"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # Headings the layout left above a statement in real 10-Ks (eBay 2022, MGM 2018, Verizon 2021, Best Buy
        # 2019, FedEx 2023): the audit and internal-control reports and what sits under them go.
        ([ITEM_8, "Critical Audit Matters"], [ITEM_8, "CONSOLIDATED BALANCE SHEET"]),
        (
            [ITEM_8, "R EPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM", "/s/ DELOITTE & TOUCHE LLP"],
            [ITEM_8, "CONSOLIDATED BALANCE SHEET"],
        ),
        (
            [ITEM_8, "Reporting of Independent Registered Public Accounting Firm", "Ernst & Young LLP"],
            [ITEM_8, "CONSOLIDATED BALANCE SHEET"],
        ),
        (
            [ITEM_8, "REPORT OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM", "Definition and Limitations"],
            [ITEM_8, "CONSOLIDATED BALANCE SHEET"],
        ),
        (
            [ITEM_8, "MANAGEMENT’S REPORT ON INTERNAL CONTROL OVER FINANCIAL REPORTING", "Valuation of Accruals"],
            [ITEM_8, "CONSOLIDATED BALANCE SHEET"],
        ),
        # Other headings stay and the title is added: a note's supplemental table (PepsiCo), a company-name heading.
        (
            ["Item 7. MD&A", "Note 14 — Supplemental Financial Information"],
            ["Item 7. MD&A", "Note 14 — Supplemental Financial Information", "CONSOLIDATED BALANCE SHEET"],
        ),
        ([ITEM_8, "NETFLIX, INC."], [ITEM_8, "NETFLIX, INC.", "CONSOLIDATED BALANCE SHEET"]),
        ([ITEM_8], [ITEM_8, "CONSOLIDATED BALANCE SHEET"]),
        # A heading that already names a statement is the statement's section: nothing changes.
        (
            ["Part I, Item 1. Financial Statements", "CONDENSED CONSOLIDATED BALANCE SHEETS", "(In millions)"],
            ["Part I, Item 1. Financial Statements", "CONDENSED CONSOLIDATED BALANCE SHEETS", "(In millions)"],
        ),
    ],
)
def test_statement_section_path(path, expected):
    assert statement_section_path(path, "CONSOLIDATED  BALANCE SHEET\n", LEX) == expected
