"""Company identity as data: registrant identity read from filings, aliases by general rules, the reference table,
and a scope that resolves names, tickers, initialisms, abbreviations, renames and typos.

Company names, tickers and CIKs are real (SEC's company list); the questions are our own.
"""

from pathlib import Path

import pytest

from haystack_fin.core.ingest.filing_meta import detect_filing_meta
from haystack_fin.core.ingest.items import catalog_family
from haystack_fin.core.ingest.registrant import (
    cover_file_numbers,
    cover_former_names,
    cover_securities,
    detect_registrant,
    header_identity,
    normalize_cik,
    prose_former_names,
)
from haystack_fin.core.retrieval.companies import ALIAS_FILE, CompanyIndex, load_alias_file
from haystack_fin.core.retrieval.company_names import compact, derived_aliases
from haystack_fin.core.retrieval.company_reference import load_company_reference
from haystack_fin.core.retrieval.filing_profile import FilingProfile, form_family
from haystack_fin.core.retrieval.filing_ranking import resolve_scope

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFERENCE = load_company_reference(FIXTURES / "company_tickers_sample.csv")


# --- registrant identity --------------------------------------------------------------------------------------------


def test_every_class_of_the_12b_table_whatever_the_cell_order():
    # PDF text of a combined cover: the exchange is printed on the line before its class's title and symbol.
    cover = (
        "Securities registered pursuant to Section 12(b) of the Act:\n"
        "Title of each class Trading Symbol(s) Name of each exchange on which registered\n"
        "The New York Stock Exchange\nCommon stock, no par value PCG\n"
        "NYSE American LLC\nFirst preferred stock, cumulative, par value $25 per share, 6%\nnonredeemable PCG-PA\n"
        "Class A Common Stock GOOGL The Nasdaq Stock Market LLC\n"
        "Securities registered pursuant to Section 12(g) of the Act: None\n"
    )
    found = cover_securities(cover)
    assert [symbol for symbol, _ in found] == ["PCG", "PCG-PA", "GOOGL"]
    assert found[-1] == ("GOOGL", "Nasdaq")  # a symbol right before its exchange takes that one
    # Covers before 2019 name the exchange only: no symbol is made up from the class title.
    old = "Securities registered pursuant to Section 12(b) of the Act:\nCOMMON STOCK, $.10 PAR VALUE NYSE\n"
    assert cover_securities(old) == []


def test_file_numbers_cik_and_header():
    assert cover_file_numbers("Commission file number 1-9595\nBEST BUY CO., INC.") == ["1-9595"]
    row = "North Carolina 1-1183 13-1584302\n(State or other jurisdiction (Commission (IRS Employer\n"
    assert cover_file_numbers(row + "of incorporation) File Number) Identification No.)") == ["1-1183"]
    assert cover_file_numbers("Commission File No. 001-10362") == ["1-10362"]
    assert normalize_cik("320193") == "0000320193" and normalize_cik("n/a") == ""
    header = (
        "COMPANY CONFORMED NAME: Block, Inc.\nCENTRAL INDEX KEY: 0001512673\n"
        "FORMER COMPANY:\nFORMER CONFORMED NAME: Square, Inc.\nSEC FILE NUMBER: 001-37622\n"
    )
    found = header_identity(header)
    assert (found.cik, found.legal_name, found.former_names, found.file_numbers) == (
        "0001512673",
        "Block, Inc.",
        ["Square, Inc."],
        ["1-37622"],
    )


def test_former_names_of_the_registrant_only():
    cover = "Wal-Mart Stores, Inc.\n(Former name, former address and former fiscal year, if changed since last report)"
    assert cover_former_names(cover) == ["Wal-Mart Stores, Inc."]
    assert cover_former_names("N/A\n(Former name or former address, if changed since last report)") == []
    prose = "Block, Inc. (formerly known as Square, Inc.) builds tools. AES Andes (formerly AES Gener S.A.) sells."
    assert prose_former_names([prose], "Block, Inc.") == ["Square, Inc."]
    assert prose_former_names(["We changed our name from Wal-Mart Stores, Inc. to Walmart Inc."], "Walmart Inc.") == [
        "Wal-Mart Stores, Inc."
    ]


def test_inline_xbrl_facts_give_cik_and_every_symbol():
    dei = {
        "dei": {"EntityCentralIndexKey": "0001652044"},
        "dei_all": {"TradingSymbol": ["GOOGL", "GOOG"], "SecurityExchangeName": ["NASDAQ", "NASDAQ"]},
    }
    found = detect_registrant(["cover"], legal_name="Alphabet Inc.", parser_meta=dei)
    assert (found.cik, found.securities) == ("0001652044", [("GOOGL", "Nasdaq"), ("GOOG", "Nasdaq")])


def test_an_8k_furnishing_results_reports_the_releases_period():
    cover = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 8-K\nCURRENT REPORT\n"
        "Date of Report (Date of earliest event reported): January 26, 2023\nAcme Widgets, Inc.\n"
        "(Exact name of registrant as specified in its charter)\n"
        "Item 2.02 Results of Operations and Financial Condition.\nThe press release is Exhibit 99.1.\n"
    )
    release = (
        "Exhibit 99.1\nAcme Widgets Reports Fourth-Quarter and Full-Year 2022 Financial Results\n"
        "SPRINGFIELD, Ill., Jan. 26, 2023 -- Acme Widgets, Inc. today reported results for the fourth quarter.\n"
    )
    meta = detect_filing_meta([cover, release], "acme-8k.pdf")
    assert (meta.form, meta.period_end, meta.fiscal_year, meta.fiscal_quarter) == ("8-K", "2023-01-26", 2022, 4)
    profile = FilingProfile("ACME_8K", "Acme Widgets, Inc.", form="8-K", fiscal_year=2022, fiscal_quarter=4,
                            items=("cover", "2.02", "EX-99.1"))  # fmt: skip
    assert profile.reports_results


def test_a_page_shaped_like_a_press_release_is_an_earnings_release():
    page = (
        "NEWS RELEASE\nFor more information contact: Investor Relations\n"
        "Globex fourth quarter and fiscal year 2023 results\n"
        "SPRINGFIELD, Ill., Feb. 1, 2024 /PRNewswire/ -- Globex Corporation reported financial results for the "
        "fourth quarter and fiscal year 2023, with earnings per share of $1.10.\n"
    )
    meta = detect_filing_meta([page], "globex.pdf")
    assert (meta.form, meta.fiscal_year, meta.fiscal_quarter) == ("earnings_release", 2023, 4)


def test_one_form_family():
    assert form_family("10-K/A") == form_family("10-k") == "10-K"
    assert form_family("") == "other" and form_family("earnings_release") == "earnings_release"
    assert catalog_family("10-q/a") == "10-Q" and catalog_family("earnings_release") == ""


# --- aliases by rule ------------------------------------------------------------------------------------------------


def keys(name: str) -> set[str]:
    return {a.key for a in derived_aliases(name)}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("The Procter & Gamble Company", {"procterandgamble", "proctergamble", "p&g", "pg"}),
        ("Johnson & Johnson", {"j&j", "jj", "johnsonandjohnson"}),
        ("American Express Company", {"americanexpress", "amex"}),
        ("International Business Machines Corporation", {"ibm", "internationalbusinessmachines"}),
        ("3M Company", {"3m", "threem"}),
        ("Adobe Systems Incorporated", {"adobe", "adobesystems"}),
        ("Bank of America Corporation", {"bankofamerica", "bofa"}),
        ("PEOPLES FINANCIAL CORP /MS/", {"peoplesfinancial"}),
    ],
)
def test_derived_aliases(name, expected):
    assert expected <= keys(name)


def test_two_letter_initialisms_need_their_ampersand_and_pge_is_no_pe():
    assert "ba" not in keys("Bank of America Corporation")  # "BA" is Boeing's ticker
    assert "pe" not in keys("PG&E Corporation") and "pge" in keys("PG&E Corporation")
    assert compact("J & J") == compact("J&J") == "jj"


def test_the_shipped_alias_file_reads():
    listed = load_alias_file(ALIAS_FILE)
    assert "Google" in listed["Alphabet Inc."] and all(isinstance(v, list) for v in listed.values())


# --- finding companies ----------------------------------------------------------------------------------------------

STORE = [
    FilingProfile("JNJ_2022_10K", "JOHNSON & JOHNSON", "", "10-K", 2022, file_numbers=("1-3215",)),
    FilingProfile("AXP_2022_10K", "American Express Company", "", "10-K", 2022),
    FilingProfile("MMM_2022_10K", "3M Company", "MMM", "10-K", 2022),
    FilingProfile("IBM_2022_10K", "International Business Machines Corporation", "", "10-K", 2022),
    FilingProfile("PG_2022_10K", "THE PROCTER & GAMBLE COMPANY", "", "10-K", 2022),
    FilingProfile("BBY_2019_10K", "BEST BUY CO., INC.", "", "10-K", 2019),
    FilingProfile("GOOGL_2022_10K", "Alphabet Inc.", "GOOGL", "10-K", 2022),
]


@pytest.mark.parametrize(
    ("question", "filing", "how"),
    [
        ("What was JnJ's FY2022 revenue?", "JNJ_2022_10K", "initialism"),
        ("What was J&J's FY2022 revenue?", "JNJ_2022_10K", "initialism"),
        ("How did AmEx's card fees grow in FY2022?", "AXP_2022_10K", "abbreviation"),
        ("What did Three M spend on R&D in FY2022?", "MMM_2022_10K", "name"),
        ("What was IBM's FY2022 free cash flow?", "IBM_2022_10K", "ticker"),  # the reference adds IBM's ticker
        ("What was P&G's organic growth in FY2022?", "PG_2022_10K", "initialism"),
        ("What was PnG's organic growth in FY2022?", "PG_2022_10K", "initialism"),
        ("How much did Google spend on capex in FY2022?", "GOOGL_2022_10K", "listed"),
        ("What was BBY's revenue in FY2019?", "BBY_2019_10K", "ticker"),  # the cover printed no ticker
    ],
)
def test_alias_styles_reach_the_filing(question, filing, how):
    index = CompanyIndex(STORE, listed_aliases=load_alias_file(ALIAS_FILE), reference=REFERENCE)
    decision = resolve_scope(question, STORE, company_index=index)
    assert decision.filing_ids[:1] == [filing]
    assert decision.companies[0].how == how


def test_lower_case_initialisms_are_words():
    index = CompanyIndex(STORE)
    assert index.find("save the chart as a png file") == []


def test_a_renamed_company_is_one_company_and_the_year_decides():
    """The issue's rename: "X Systems Incorporated" 10-Ks for FY2015-2017 and "X Inc." for FY2022, one registrant
    (the same SEC file number). "X" with FY2016 is the FY2016 10-K, not the one filed under the name said."""
    profiles = [
        FilingProfile(f"ADBE_{y}_10K", "ADOBE SYSTEMS INCORPORATED", "", "10-K", y, file_numbers=("0-15175",))
        for y in (2015, 2016, 2017)
    ] + [FilingProfile("ADBE_2022_10K", "Adobe Inc.", "ADBE", "10-K", 2022, file_numbers=("0-15175",))]
    assert len(CompanyIndex(profiles)) == 1
    for year in (2015, 2016, 2017, 2022):
        assert resolve_scope(f"What was Adobe's revenue in FY{year}?", profiles).filing_ids[0] == f"ADBE_{year}_10K"
        assert resolve_scope(f"What was Adobe Inc.'s FY{year} revenue?", profiles).filing_ids[0] == f"ADBE_{year}_10K"


def test_a_stated_former_name_joins_the_two_names():
    profiles = [
        FilingProfile("SQ_2019_10K", "Square, Inc.", "SQ", "10-K", 2019),
        FilingProfile("XYZ_2022_10K", "Block, Inc.", "XYZ", "10-K", 2022, former_names=("Square, Inc.",)),
    ]
    index = CompanyIndex(profiles)
    assert len(index) == 1
    assert resolve_scope("What was Block's revenue in FY2019?", profiles, company_index=index).filing_ids == [
        "SQ_2019_10K"
    ]
    assert resolve_scope("What was Square's revenue in FY2022?", profiles, company_index=index).filing_ids == [
        "XYZ_2022_10K"
    ]


def test_a_known_company_the_index_lacks_and_an_unknown_name():
    index = CompanyIndex(STORE, reference=REFERENCE)
    decision = resolve_scope("What was Apple's revenue in FY2022?", STORE, company_index=index)
    assert [(k.name, k.ticker) for k in decision.known] == [("Apple Inc.", "AAPL")]
    assert decision.unmatched[0]["status"] == "not_indexed"
    assert decision.unmatched[0]["reason"] == "Apple Inc. (AAPL), a listed company, has no indexed filing"
    unknown = resolve_scope("What was Zorblax Dynamics' revenue in FY2022?", STORE, company_index=index)
    assert unknown.unmatched[0]["status"] == "unknown" and unknown.filing_ids  # ranked, never empty


def test_a_year_inside_a_company_name_is_not_the_period():
    profiles = [
        FilingProfile(f"BKT_{y}_10K", "BlackRock Municipal 2030 Target Term Trust", "BTT", "10-K", y)
        for y in (2015, 2021)
    ]
    decision = resolve_scope("What was BlackRock Municipal 2030 Target Term Trust's income in FY2015?", profiles)
    assert decision.filing_ids[0] == "BKT_2015_10K"


def test_fuzzy_threshold():
    index = CompanyIndex(STORE)
    assert [m.how for m in index.find("What did Amercan Express earn?")] == ["fuzzy"]  # one edit, 15 letters
    assert index.find("What did Amrcan Exprss earn in total?") == []  # three edits


def test_a_distinctive_later_word_of_a_name_when_nothing_else_matches():
    profiles = [
        FilingProfile("KHC_2022_10K", "The Kraft Heinz Company", "", "10-K", 2022),
        FilingProfile("ATVI_2019_10K", "Activision Blizzard, Inc.", "", "10-K", 2019),
        FilingProfile("LMT_2022_10K", "Lockheed Martin Corporation", "", "10-K", 2022),
    ]
    index = CompanyIndex(profiles)
    assert [(m.key, m.how) for m in index.find("What did Heinz earn in FY2022?")] == [("kraft heinz", "token")]
    assert [m.key for m in index.find("How many Blizzard games sold?")] == ["activision blizzard"]
    assert index.find("What is the heinz ketchup share?") == []  # written as a word, not a name
