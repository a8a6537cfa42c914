"""Primary financial statements: which table is one, and which statements a question is about.

Analysts' metric questions are answered from the primary statements ("FY2018 capex ... from the cash flow
statement", "year-end inventories ... balance sheet"), and those pages are hard for a bi-encoder: a grid of
numbers embeds poorly and a statement's row labels are terse. The filing itself says which tables are the
statements: their titles ("CONSOLIDATED STATEMENTS OF CASH FLOWS"). This module

* classifies a table as a primary statement from its title, size and Item (``classify_statement_table``), at
  indexing time, so every block of the table carries ``meta["statement"]``;
* reads which statements a question needs from the lexicon (``statements_in_query``): a statement named outright
  ("balance sheet", "statement of operations", "P&L") weighs 1.0; a line item of a statement's lexicon category
  ("capex" is a ``cash_flow`` concept, "inventories" a ``balance_sheet`` one) or a ratio whose cluster lists its
  input statements ("quick ratio": balance sheet) weighs ``IMPLIED_WEIGHT``.

Retrieval then adds the matching statement blocks to the candidates and the ranker's fallback scorer gives them a
prior (``haystack_fin.core.retrieval.passage_scoring``). Kinds are the lexicon's statement cluster ids, so a custom
lexicon keeps working as long as it keeps those ids and categories.
"""

import re
from collections.abc import Mapping, Sequence

from haystack_fin.core.lexicon import Lexicon, normalize_term
from haystack_fin.core.retrieval.filing_profile import form_family

# Statement kinds = the lexicon clusters that name a statement.
INCOME_STATEMENT = "income_statement"
BALANCE_SHEET = "balance_sheet"
CASH_FLOW_STATEMENT = "cash_flow_statement"
EQUITY_STATEMENT = "equity_statement"
COMPREHENSIVE_INCOME_STATEMENT = "comprehensive_income_statement"
STATEMENT_KINDS: tuple[str, ...] = (
    INCOME_STATEMENT,
    BALANCE_SHEET,
    CASH_FLOW_STATEMENT,
    EQUITY_STATEMENT,
    COMPREHENSIVE_INCOME_STATEMENT,
)

# Lexicon categories whose concepts are line items of one statement.
LINE_ITEM_CATEGORIES: Mapping[str, str] = {
    "income_statement": INCOME_STATEMENT,
    "balance_sheet": BALANCE_SHEET,
    "cash_flow": CASH_FLOW_STATEMENT,
    "debt": BALANCE_SHEET,
}

# A line item points at its statement less surely than the statement's name: revenue is also in MD&A tables.
IMPLIED_WEIGHT = 0.5

# Items that summarise statements without being them (10-K Item 6, "Selected Financial Data"). The statements
# themselves are not pinned to Item 8: some filers print them inside Item 7 (PepsiCo), some after Item 15.
NOT_STATEMENT_ITEMS: Mapping[str, frozenset[str]] = {"10-K": frozenset({"6"})}

# A statement title names the statement, optionally after the company name and before periods or
# "(continued)"; a caption that *refers* to a statement is a sentence about something else ("The following table
# presents ... in our consolidated balance sheets", "Supplemental balance sheet information").
_REFERENCE_WORDS = re.compile(
    r"\b(?:following|table|tables|follows|included|includes|recorded|reported|reflected|presented|presents|"
    r"reconcil\w*|summar\w*|impacts?|effects?|supplemental|information|data|location|components|allowance|"
    r"analysis|activity|related|consolidating|within|our)\b",
    re.IGNORECASE,
)
_MAX_WORDS_BEFORE = 10
MIN_STATEMENT_ROWS = 4


def _title_kind(title: str, lexicon: Lexicon) -> str | None:
    """The statement a table title names, or None when the title does not name exactly one."""
    if not title or _REFERENCE_WORDS.search(title):
        return None
    matches = [m for m in lexicon.find_terms(title, fuzzy=False) if m.cluster_id in STATEMENT_KINDS]
    if len({m.cluster_id for m in matches}) != 1:
        return None
    # The name must come early: "... Inc. and Subsidiaries Consolidated Statements of Income" is a title, a long
    # sentence ending in "statements of income" is not.
    return matches[0].cluster_id if len(title[: matches[0].start_char].split()) <= _MAX_WORDS_BEFORE else None


# The reports that precede the statements in Item 8: the auditor's (with its critical audit matters) and management's
# on internal control. A statement is never part of them, but when the statement's title is a table caption rather
# than a heading, the layout leaves the statement under the last report heading it found.
_REPORT_HEADING = re.compile(
    r"independent\s+registered\s+public\s+accounting\s+firm|critical\s+audit\s+matters?|"
    r"internal\s+control\s+over\s+financial\s+reporting|independent\s+auditors?\W{0,2}\s*report|"
    r"report\s+of\s+independent\s+auditors?",
    re.IGNORECASE,
)


def statement_section_path(path: Sequence[str], title: str, lexicon: Lexicon) -> list[str]:
    """The section path of a block of the primary statement ``title`` names: without the audit and internal-control
    report headings (and the headings under them), and ending in the title when no heading left names a statement.
    The first element (the Item's title) is kept."""
    kept = list(path)
    cut = next((i for i, heading in enumerate(kept) if i and _REPORT_HEADING.search(heading)), None)
    if cut is not None:
        kept = kept[:cut]
    if not any(_title_kind(heading, lexicon) for heading in kept):
        kept.append(" ".join(title.split()))
    return kept


def classify_statement_table(title: str, n_rows: int, item: str, form: str, lexicon: Lexicon) -> str | None:
    """The primary statement a table is, or None.

    :param title: the table's caption or, failing that, its heading.
    :param n_rows: data rows of the whole table (before it is cut into blocks); statements are long, a note's
        two-line "Balance Sheet" excerpt is not one.
    :param item: the Item code of the section holding the table.
    :param form: the filing's form; with ``item`` it rules out summaries such as a 10-K's Item 6 table titled
        "Consolidated Balance Sheets:".
    """
    if n_rows < MIN_STATEMENT_ROWS or item in NOT_STATEMENT_ITEMS.get(form_family(form), frozenset()):
        return None
    return _title_kind(title, lexicon)


def statements_in_query(query: str, lexicon: Lexicon) -> dict[str, float]:
    """Which statements ``query`` is about, weighted: 1.0 when it names the statement, ``IMPLIED_WEIGHT`` when it
    names one of the statement's line items or a ratio computed from it (the cluster's ``statements``). Empty when
    it mentions none of these."""
    weights: dict[str, float] = {}

    def implied(kind: str) -> None:
        weights[kind] = max(weights.get(kind, 0.0), IMPLIED_WEIGHT)

    for match in lexicon.find_terms(query):
        if match.cluster_id in STATEMENT_KINDS:
            weights[match.cluster_id] = 1.0
            continue
        cluster = lexicon.cluster(match.cluster_id)
        if cluster.category in LINE_ITEM_CATEGORIES:
            implied(LINE_ITEM_CATEGORIES[cluster.category])
        for kind in cluster.statements:  # a ratio's inputs: ROA reads the income statement and the balance sheet
            if kind in STATEMENT_KINDS:
                implied(kind)
    # A statement's name inside a longer term of another concept ("debt on balance sheet") still names it.
    padded = f" {normalize_term(query)} "
    for kind in STATEMENT_KINDS:
        try:
            terms = lexicon.cluster(kind).terms
        except KeyError:  # a custom lexicon without this statement
            continue
        if any(f" {normalize_term(term)} " in padded for term in terms):
            weights[kind] = 1.0
    return weights
