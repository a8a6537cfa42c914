"""Filing metadata from cover pages: three real EDGAR fixtures plus handmade covers for the edge cases."""

import random
import re
import time
from pathlib import Path

import pymupdf
import pytest

from haystack_fin.core import schema
from haystack_fin.core.ingest import filing_meta
from haystack_fin.core.ingest.filing_meta import FORMS, FilingMeta, detect_filing_meta
from haystack_fin.core.ingest.registrant import Registrant
from haystack_fin.core.periods import MONTH, annual_fiscal_year

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_pdf(name: str, max_pages: int = 15) -> tuple[list[str], dict]:
    # The detector reads at most 15 pages; extracting the rest would only slow the tests down.
    with pymupdf.open(FIXTURES / name) as doc:
        return [doc[i].get_text() for i in range(min(max_pages, len(doc)))], dict(doc.metadata or {})


def cover(form_line: str, period_line: str, name_lines: str = "Acme Widgets, Inc.", extra: str = "") -> str:
    """A minimal SEC cover page in PyMuPDF's line layout, with the non-breaking spaces EDGAR PDFs use."""
    return (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington,\u00a0D.C. 20549\n"
        f"{form_line}\n(Mark One)\n☒\n{period_line}\nOR\n☐\n"
        "TRANSITION REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
        "Commission File Number 001-12345\n"
        f"{name_lines}\n(Exact name of registrant as specified in its charter)\n"
        "Delaware\n12-3456789\n(State or other jurisdiction of incorporation or organization)\n"
        "Securities registered pursuant to Section 12(b) of the Act:\n"
        "Title of each class\nTrading Symbol(s)\nName of each exchange on which registered\n"
        "Common Stock, $0.01 par value\nACME\nNew York Stock Exchange\n"
        "Securities registered pursuant to Section 12(g) of the Act: None\n"
        f"{extra}"
    )


ANNUAL = "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934"
QUARTERLY = "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934"


def ten_k(period: str, **kwargs: str) -> str:
    return cover("FORM 10-K", f"{ANNUAL}\nFor the fiscal year ended {period}", **kwargs)


def ten_q(period: str, **kwargs: str) -> str:
    return cover("FORM 10-Q", f"{QUARTERLY}\nFor the quarterly period ended {period}", **kwargs)


# --- real filings -----------------------------------------------------------------------------------------------


def test_bestbuy_10q_fixture() -> None:
    pages, metadata = read_pdf("bestbuy-10q-2023-07-29.pdf")
    meta = detect_filing_meta(pages, "bestbuy-10q-2023-07-29.pdf", metadata)
    assert meta == FilingMeta(
        company="BEST BUY CO., INC.",
        form="10-Q",
        period="FY2024 Q2",
        period_end="2023-07-29",
        fiscal_year=2024,
        fiscal_quarter=2,
        ticker="BBY",
        registrant=Registrant(
            securities=[("BBY", "NYSE")],
            file_numbers=["1-9595"],
            irs_number="41-0907483",
            legal_name="BEST BUY CO., INC.",
        ),
    )
    identity = meta.to_dict()
    assert (identity[schema.TICKERS], identity[schema.FILE_NUMBERS], identity[schema.SECURITIES]) == (
        ["BBY"],
        ["1-9595"],
        [["BBY", "NYSE"]],
    )


def test_pepsico_8k_fixture_uses_event_date() -> None:
    # The 8-K was filed on May 5; its cover reports the event of May 3.
    pages, metadata = read_pdf("pepsico-8k-2023-05-05.pdf")
    meta = detect_filing_meta(pages, "pepsico-8k-2023-05-05.pdf", metadata)
    assert (meta.company, meta.form, meta.period, meta.period_end) == (
        "PepsiCo, Inc.",
        "8-K",
        "2023-05-03",
        "2023-05-03",
    )
    assert (meta.fiscal_year, meta.fiscal_quarter, meta.ticker) == (2023, None, "PEP")


def test_netflix_10k_fixture_without_trading_symbol_column() -> None:
    pages, metadata = read_pdf("netflix-10k-2015.pdf")
    meta = detect_filing_meta(pages, "netflix-10k-2015.pdf", metadata)
    assert meta == FilingMeta(
        company="Netflix, Inc.",
        form="10-K",
        period="FY2015",
        period_end="2015-12-31",
        fiscal_year=2015,
        fiscal_quarter=None,
        ticker="",  # 2015 covers had no "Trading Symbol(s)" column
        registrant=Registrant(file_numbers=["1-35727"], irs_number="77-0467272", legal_name="Netflix, Inc."),
    )


def test_body_pages_of_a_filing_are_not_a_filing_cover_or_release() -> None:
    pages, _ = read_pdf("netflix-10k-2015.pdf")
    assert detect_filing_meta(pages[5:]).form == "other"


# --- annual reports ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("period", "iso", "fiscal_year"),
    [
        ("January 1, 2022", "2022-01-01", 2021),  # 52/53-week year ending in the first week of January
        ("January 7, 2022", "2022-01-07", 2021),
        ("January 8, 2022", "2022-01-08", 2022),
        ("February 3, 2024", "2024-02-03", 2024),
        ("June 30, 2023", "2023-06-30", 2023),
        ("December\u00a031,\u00a02023", "2023-12-31", 2023),
    ],
)
def test_annual_fiscal_year(period: str, iso: str, fiscal_year: int) -> None:
    meta = detect_filing_meta([ten_k(period)])
    assert (meta.form, meta.period_end, meta.fiscal_year, meta.period) == ("10-K", iso, fiscal_year, f"FY{fiscal_year}")
    assert meta.fiscal_quarter is None
    assert (meta.company, meta.ticker) == ("Acme Widgets, Inc.", "ACME")


def test_annual_fiscal_year_function() -> None:
    from datetime import date

    assert annual_fiscal_year(date(2021, 1, 2)) == 2020
    assert annual_fiscal_year(date(2021, 1, 30)) == 2021


def test_odd_form_line_falls_back_to_report_kind() -> None:
    page = cover("FORM", f"{ANNUAL}\nFor the Fiscal Year Ended June 30, 2023")
    assert detect_filing_meta([page]).form == "10-K"


def test_form_line_with_unicode_hyphen_and_spaces() -> None:
    page = cover("FORM\u00a010\u2011K", f"{ANNUAL}\nFor the fiscal year ended December 31, 2019")
    assert detect_filing_meta([page]).form == "10-K"


@pytest.mark.parametrize(
    ("form_line", "form"),
    [
        ("FORM 10-K/A\n(Amendment No. 1)", "10-K/A"),
        ("FORM 10-K\n(Amendment No. 2)", "10-K/A"),
        ("Form 10-Q/A", "10-Q/A"),
        ("FORM 8-K/A", "8-K/A"),
        ("FORM 20-F", "20-F"),
    ],
)
def test_amendments_and_other_forms(form_line: str, form: str) -> None:
    page = cover(form_line, f"{ANNUAL}\nFor the fiscal year ended December 31, 2022")
    assert detect_filing_meta([page]).form == form


def test_glossy_cover_before_the_sec_cover() -> None:
    pages = ["Acme Widgets\n2023 Annual Report\nBuilding what matters", ten_k("December 31, 2023")]
    meta = detect_filing_meta(pages)
    assert (meta.form, meta.company, meta.fiscal_year) == ("10-K", "Acme Widgets, Inc.", 2023)


# --- company ----------------------------------------------------------------------------------------------------


def test_missing_registrant_falls_back_to_source_name() -> None:
    page = ten_k("December 31, 2021", name_lines="")
    meta = detect_filing_meta([page], source_name="/data/ACMEWIDGETS_2021_10K.pdf")
    assert meta.company == "Acmewidgets"
    assert meta.form == "10-K"


def test_missing_registrant_prefers_pdf_metadata_over_source_name() -> None:
    page = ten_k("December 31, 2021", name_lines="")
    metadata = {"title": "Form 10-K for Acme Widgets INC filed 02/09/2022", "author": "EDGAR Online"}
    assert detect_filing_meta([page], "acme-10k.pdf", metadata).company == "Acme Widgets INC"


def test_logo_cover_uses_subsidiaries_running_head() -> None:
    pages = [ten_k("December 31, 2017", name_lines=""), "THE ACME COMPANY AND SUBSIDIARIES\nTable of Contents\n"]
    assert detect_filing_meta(pages, "ACME_2017_10K.pdf").company == "THE ACME COMPANY"


def test_cover_without_label_uses_legal_suffix_line() -> None:
    page = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
        f"{ANNUAL}\nFor the Fiscal Year Ended June 30, 2016\nCommission File Number 001-37845\n"
        "ACME SOFTWARE CORPORATION\nWASHINGTON\n91-1144442\n(STATE OF INCORPORATION)\n"
        "Securities registered pursuant to Section 12(b) of the Act:\n"
    )
    assert detect_filing_meta([page]).company == "ACME SOFTWARE CORPORATION"


def test_small_caps_name_is_joined() -> None:
    page = ten_k("December 31, 2018", name_lines="G LOBEX R ESORTS I NTERNATIONAL")
    assert detect_filing_meta([page]).company == "GLOBEX RESORTS INTERNATIONAL"


def test_name_wrapped_over_two_lines() -> None:
    page = ten_k("December 31, 2018", name_lines="THE GLOBEX HOLDINGS GROUP,\nINC.")
    assert detect_filing_meta([page]).company == "THE GLOBEX HOLDINGS GROUP, INC."


def test_glued_html_cover_text() -> None:
    # lxml text_content() of an EDGAR inline-XBRL cover has no line breaks between cells.
    page = (
        "UNITED STATESSECURITIES AND EXCHANGE COMMISSIONWashington, D.C. 20549FORM 10-K(Mark One)☒ "
        f"{ANNUAL}For the fiscal year ended September\u00a028, 2024or☐ TRANSITION REPORT PURSUANT TO SECTION 13"
        " OR 15(d)Commission File Number: 001-36743Acme Inc.(Exact name of Registrant as specified in its charter)"
        "California94-2404110Securities registered pursuant to Section 12(b) of the Act:Title of each classTrading "
        "symbol(s)Name of each exchange on which registeredCommon Stock, $0.00001 par value per shareACMEThe Nasdaq "
        "Stock Market LLCSecurities registered pursuant to Section 12(g) of the Act: None"
    )
    meta = detect_filing_meta([page])
    assert (meta.company, meta.form, meta.period_end, meta.fiscal_year, meta.ticker) == (
        "Acme Inc.",
        "10-K",
        "2024-09-28",
        2024,
        "ACME",
    )


# Reconstructed layout of an EDGAR HTML cover built as a layout table, as FilingConverter renders its rows
# ("cell | cell | cell", the empty cells kept): e.g. The Home Depot's 10-Ks of the 2000s.
TABLE_COVER = (
    "UNITED STATES | | |\nSECURITIES AND EXCHANGE COMMISSION | | |\nWashington, D.C. 20549 | | |\nFORM 10-K | | |\n"
    f"☒ | {ANNUAL} | |\nFor the fiscal year ended January 31, 2010 | | |\nCommission File Number 1-8207 | | |\n"
    "THE HOME DEPOT, INC. | | |\n(Exact name of registrant as specified in its charter) | | |\n"
    "Delaware | | 95-3261426 |\n(State or other jurisdiction of incorporation or organization) | | "
    "(I.R.S. Employer Identification No.) |\n"
)


def test_company_name_from_a_cover_table_row_has_no_cell_separators() -> None:
    meta = detect_filing_meta([TABLE_COVER], "d10k.htm")
    assert (meta.company, meta.form, meta.period_end) == ("THE HOME DEPOT, INC.", "10-K", "2010-01-31")


def test_company_name_in_the_labels_column_of_a_three_column_cover_row() -> None:
    # 8-K covers put state, name or file number and I.R.S. number side by side, each over its label.
    page = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 8-K\nCURRENT REPORT\n"
        "Date of Report (Date of earliest event reported): July 17, 2003\n"
        "Delaware | ACME WIDGETS, INC. | 36-1234567\n"
        "(State of incorporation) | (Exact name of registrant as specified in its charter) | (I.R.S. Employer No.)\n"
    )
    assert detect_filing_meta([page]).company == "ACME WIDGETS, INC."


@pytest.mark.parametrize(
    "above_label",
    ["ANNUAL REPORT", "QUARTERLY", "UNITED STATES", "FORM 10-K", "ANNUAL REPORT PURSUANT TO SECTION 13"],
)
def test_company_name_is_never_a_word_of_the_form_title(above_label: str) -> None:
    # A cover whose name is a logo: the line above the label is the title block (IBM's cover reads "FORM 10-K /
    # ANNUAL REPORT / pursuant to Section 13 ..."). The name then comes from the next source that has one.
    page = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
        f"For the fiscal year ended December 31, 2024\n{above_label}\n"
        "(Exact name of registrant as specified in its charter)\n"
    )
    assert detect_filing_meta([page]).company == ""
    assert detect_filing_meta([page], "ACMEWIDGETS_2024_10K.pdf").company == "Acmewidgets"
    dei = {"format": "html", "dei": {"EntityRegistrantName": "Acme Widgets, Inc."}}
    assert detect_filing_meta([page], "d10k.htm", dei).company == "Acme Widgets, Inc."


@pytest.mark.parametrize(
    ("source", "company"),
    [
        ("d10k.htm", ""),
        ("form10-k.htm", ""),
        ("form10k.htm", ""),
        ("10q.htm", ""),
        ("annualreport.htm", ""),
        ("0000950123-02-001234.txt", ""),
        ("COCACOLA_2017_10K.pdf", "Cocacola"),
        ("3M_2018_10K.pdf", "3M"),
    ],
)
def test_edgar_file_names_name_no_company(source: str, company: str) -> None:
    assert detect_filing_meta([ten_k("December 31, 2021", name_lines="")], source).company == company


# Patterns rewritten for linear time, and the forms they replace: same results on random strings built from the
# pieces they parse, and a fraction of a second on inputs that took the old forms seconds to minutes.
_OLD_NUM = (
    r"(?:\d{1,2}|three|six|nine|twelve|thirteen|sixteen|twenty[\s-](?:four|six|eight)|thirty[\s-](?:six|nine)|forty)"
)
OLD_YTD = re.compile(
    rf"\b(?P<nums>{_OLD_NUM}(?:\s*(?:,|and|&)\s*{_OLD_NUM})*)[\s-]+(?P<unit>month|week)s?(?:[\s-]+periods?)?\s+ended\b"
    rf"(?P<gap>.{{0,60}}?){filing_meta._DATE}",
    re.IGNORECASE | re.DOTALL,
)
OLD_EXACT_NAME = re.compile(r"\(?\s*Exact\s+name\s+of\s+(?:the\s+)?registrants?\b", re.IGNORECASE)
OLD_HEADLINE_VERB = re.compile(r"\s+(?:reports|announces|posts|delivers)\b", re.IGNORECASE)
OLD_FORM_LINE = re.compile(rf"^FORM\s*{filing_meta._FORM_CORE}\s*(?:\(.*\))?\s*$", re.IGNORECASE)


def _random_texts(pieces: list[str], n: int, seed: int, most: int = 12) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, most))) for _ in range(n)]


def _random_year_to_date(rng: random.Random) -> str:
    """ "<numbers> <unit> ended <date>" with random parts and one or two random characters inserted or deleted."""
    numbers = ["three", "six", "sixteen", "nine", "twelve", "twenty-six", "thirty nine", "12", "26", "39", "6", "x"]
    text = rng.choice(numbers) + "".join(
        rng.choice([" and ", ", ", " & ", "and", " "]) + rng.choice(numbers) for _ in range(rng.randint(0, 3))
    )
    text = rng.choice(["", "the ", "1, 2, "]) + text + rng.choice([" ", "-", ""]) + rng.choice(["months", "weeks"])
    text += rng.choice(["", " periods"]) + rng.choice([" ended ", " Ended ", " ended (unaudited) ", " ending "])
    text += rng.choice(["June 30, 2023", "2023-07-29", "29 July 2023", "Feb 30, 2020", "x"])
    chars = list(text + rng.choice(["", " and six months ended June 30, 2023"]))
    for _ in range(rng.randint(0, 2)):
        if chars and rng.random() < 0.5:
            del chars[rng.randrange(len(chars))]
        else:
            chars.insert(rng.randint(0, len(chars)), rng.choice(" ,-x1a"))
    return "".join(chars)


def test_year_to_date_matches_as_before() -> None:
    rng = random.Random(3)
    found = 0
    for _ in range(20_000):
        text = _random_year_to_date(rng)
        old = [(m.group("nums"), m.group("unit"), m.group("gap"), m.end()) for m in OLD_YTD.finditer(text)]
        new = [(nums, m.group("unit"), m.group("gap"), m.end()) for nums, m in filing_meta._ytd_matches(text)]
        assert old == new, repr(text)
        found += bool(new)
    assert found > 2000  # the strings exercise the pattern, not just its failure


def test_rewritten_cover_patterns_match_as_before() -> None:
    for text in _random_texts(["(", " ", "\n", "Exact", " name", " of", " the", " registrant", "s", "x"], 5000, 1):
        old = OLD_EXACT_NAME.search(text)
        assert (old.start() if old else None) == filing_meta._exact_name_label(text), repr(text)
    for text in _random_texts([" ", "  ", "\n", "reports", "Reports", "posts", "x", "ing", "Acme"], 5000, 2):
        old, new = OLD_HEADLINE_VERB.search(text), filing_meta._HEADLINE_VERB.search(text)
        assert (old and old.span()) == (new and new.span()), repr(text)
    pieces = ["FORM", "Form", " ", "10", "8", "-", "K", "Q", "/", "A", "(", ")", "Amendment No. 1", "  "]
    for text in _random_texts(pieces, 5000, 4):
        old, new = OLD_FORM_LINE.match(text), filing_meta._FORM_LINE.match(text)
        assert (old and (old.span(), old.groups())) == (new and (new.span(), new.groups())), repr(text)


OLD_DATE = (
    rf"(?:(?P<m1>{MONTH})\s*(?P<d1>\d{{1,2}})\s*,?\s*(?P<y1>(?:19|20)\d\d)"
    rf"|(?P<d2>\d{{1,2}})\s+(?P<m2>{MONTH})\s*,?\s*(?P<y2>(?:19|20)\d\d)"
    r"|(?P<y3>(?:19|20)\d\d)-(?P<m3>[01]\d)-(?P<d3>[0-3]\d))"
)
OLD_DATE_PATTERNS = {
    "_ANNUAL_END": re.compile(rf"for\s+the\s+(?:fiscal\s+)?year\s+ended\s*:?\s*{OLD_DATE}", re.IGNORECASE),
    "_EVENT_DATE_AFTER": re.compile(
        rf"Date\s+of\s+(?:Report|earliest\s+event)[^:]{{0,60}}?(?:\)\s*)*:?\s*{OLD_DATE}", re.IGNORECASE | re.DOTALL
    ),
    "_EVENT_DATE_BEFORE": re.compile(rf"{OLD_DATE}\s*\(?\s*Date\s+of\s+(?:Report|earliest\s+event)", re.IGNORECASE),
}


def test_date_patterns_match_as_before() -> None:
    rng = random.Random(8)
    heads = ["for the fiscal year ended", "for the year ended", "Date of Report (Date of earliest event reported)", ""]
    dates = ["July 29, 2023", "JULY 29,2023", "Sept. 30 2023", "29 July 2023", "2023-07-29", "May  3 ,  2023"]
    found = 0
    for _ in range(5000):
        text = rng.choice(heads) + rng.choice(["", ":", " :", ") ", " \n"]) + rng.choice(["", " ", "  "])
        text += rng.choice(dates) + rng.choice(["", " (Date of Report)", " ( Date of earliest event reported)"])
        chars = list(text)
        for _ in range(rng.randint(0, 2)):
            chars.insert(rng.randint(0, len(chars)), rng.choice(" \n,:()x1"))
        text = "".join(chars)
        for name, old in OLD_DATE_PATTERNS.items():
            a = [(m.span(), m.groupdict()) for m in old.finditer(text)]
            assert a == [(m.span(), m.groupdict()) for m in getattr(filing_meta, name).finditer(text)], (name, text)
            found += bool(a)
    assert found > 1000


def test_cover_reading_is_linear_on_adversarial_pages() -> None:
    # Before: about 18 s (a "1, 2, 3, ..." line of 10,000 characters in a 10-Q's first pages), 3 s (10,000 blank
    # lines before the registrant label) and 16 s (a 10,000-space run in a release headline).
    head = "SECURITIES AND EXCHANGE COMMISSION\nFORM 10-Q\nFor the quarterly period ended June 30, 2023\n"
    pages = [head + "1, " * 20_000, "\n" * 40_000 + "(Exact name of registrant as specified in its charter)"]
    started = time.perf_counter()
    detect_filing_meta(pages)
    detect_filing_meta(["Acme" + " " * 40_000 + "x Reports results"])
    assert time.perf_counter() - started < 2


# --- ticker -----------------------------------------------------------------------------------------------------


def test_ticker_first_of_several_and_split_series() -> None:
    table = (
        "Title of Each Class\nTrading Symbol(s)\nName of Each Exchange on Which\nRegistered\n"
        "Common Stock, par value $0.10\nVZ\nNew York Stock Exchange\n1.625% Notes due 2024\nVZ 24B\n"
    )
    page = ten_k("December 31, 2022").replace(
        "Title of each class\nTrading Symbol(s)\nName of each exchange on which registered\n"
        "Common Stock, $0.01 par value\nACME\nNew York Stock Exchange\n",
        table,
    )
    assert detect_filing_meta([page]).ticker == "VZ"


def test_ticker_on_second_cover_page_of_8k() -> None:
    page1 = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWASHINGTON, D.C. 20549\nFORM 8-K\nCURRENT REPORT\n"
        "Pursuant to Section 13 or 15(d) of the Securities Exchange Act of 1934\n"
        "Date of Report (Date of earliest event reported): May 3, 2023\n"
        "Acme Widgets, Inc.\n(Exact name of registrant as specified in its charter)\n"
    )
    page2 = "Title of each class\nTrading Symbols\nName of each exchange on which registered\nCommon Stock\nAWI\n"
    meta = detect_filing_meta([page1, page2])
    assert (meta.form, meta.period, meta.ticker) == ("8-K", "2023-05-03", "AWI")


# --- 8-K --------------------------------------------------------------------------------------------------------


def test_8k_with_press_release_exhibit_stays_8k() -> None:
    page1 = (
        "UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nFORM 8-K\nCURRENT REPORT\n"
        "May 3, 2023\n(Date of Report (Date of earliest event reported))\n"
        "Acme Widgets, Inc.\n(Exact name of registrant as specified in its charter)\n"
    )
    page2 = "Exhibit 99.1\nAcme Widgets Reports First Quarter 2023 Results\n"
    meta = detect_filing_meta([page1, page2])
    assert (meta.form, meta.period_end, meta.fiscal_year, meta.company) == (
        "8-K",
        "2023-05-03",
        2023,
        "Acme Widgets, Inc.",
    )


# --- earnings releases ------------------------------------------------------------------------------------------


def test_earnings_release_headline_and_first_sentence() -> None:
    page = (
        "Exhibit 99.1\nAcme Widgets Announces Fiscal 2024 Second Quarter Results\nRevenue up 5%\n"
        "SPRINGFIELD, Ill., Aug. 20, 2024 \u2013 Acme Widgets, Inc. (NYSE: ACME) today reported results for the "
        "quarter ended July 27, 2024.\nThe company also filed its Quarterly Report on\nForm 10-Q\n"
    )
    meta = detect_filing_meta([page], "ACME_2024Q2_EARNINGS.pdf")
    assert meta == FilingMeta(
        company="Acme Widgets, Inc.",
        form="earnings_release",
        period="FY2024 Q2",
        period_end="2024-07-27",
        fiscal_year=2024,
        fiscal_quarter=2,
        ticker="ACME",
        registrant=Registrant(securities=[("ACME", "")], legal_name="Acme Widgets, Inc."),
    )


def test_earnings_release_upper_case_headline_wrapped() -> None:
    page = (
        "Page 1 of 12\nExhibit 99.1\nGLOBEX CORPORATION REPORTS FOURTH QUARTER AND\n"
        "FULL YEAR 2022 FINANCIAL AND OPERATING RESULTS\n\u2022 Record revenue\n"
    )
    meta = detect_filing_meta([page])
    assert (meta.form, meta.company, meta.period, meta.fiscal_quarter, meta.fiscal_year) == (
        "earnings_release",
        "GLOBEX CORPORATION",
        "FY2022 Q4",
        4,
        2022,
    )


def test_plain_document_is_other() -> None:
    page = "Letter to shareholders\nDear fellow shareholders,\nOur reported financial results improved this year."
    meta = detect_filing_meta([page], "acme_letter.pdf")
    assert (meta.form, meta.period, meta.fiscal_year, meta.company) == ("other", "", None, "Acme")


def test_empty_input() -> None:
    assert detect_filing_meta([], "GLOBEX-2020-10K.pdf") == FilingMeta(
        company="Globex", registrant=Registrant(legal_name="Globex")
    )


# --- quarterly reports ------------------------------------------------------------------------------------------


def test_10q_without_quarter_evidence_leaves_quarter_unset() -> None:
    meta = detect_filing_meta([ten_q("July 29, 2023")])
    assert (meta.fiscal_quarter, meta.fiscal_year, meta.period) == (None, None, "Q ended 2023-07-29")


def test_10q_quarter_from_xbrl_fiscal_year_end() -> None:
    page = "acme-20230729false2024Q20000012345--02-03P1Y\n" + ten_q("July 29, 2023")
    meta = detect_filing_meta([page])
    assert (meta.fiscal_quarter, meta.fiscal_year, meta.period) == (2, 2024, "FY2024 Q2")


def test_10q_quarter_from_stated_fiscal_year_end_month() -> None:
    notes = "Our fiscal year ends on the Saturday nearest the end of January."
    meta = detect_filing_meta([ten_q("April 29, 2023"), notes])
    assert (meta.fiscal_quarter, meta.fiscal_year) == (1, 2024)


def test_10q_quarter_from_year_to_date_weeks() -> None:
    toc = "Condensed Consolidated Statement of Income \u2013 12 and 24 Weeks Ended June 17, 2023 and June 11, 2022"
    meta = detect_filing_meta([ten_q("June 17, 2023"), toc])
    assert (meta.fiscal_quarter, meta.fiscal_year, meta.period) == (2, 2023, "FY2023 Q2")


def test_10q_first_quarter_of_a_june_fiscal_year() -> None:
    pages = [
        ten_q("September 30, 2023"),
        "INCOME STATEMENTS\nThree Months Ended September 30,\n2023\n2022\n",
        "read with our Annual Report on Form 10-K for the fiscal year ended June 30, 2023.",
    ]
    meta = detect_filing_meta(pages)
    assert (meta.fiscal_quarter, meta.fiscal_year, meta.period) == (1, 2024, "FY2024 Q1")


def test_10q_conflicting_evidence_leaves_quarter_unset() -> None:
    pages = [
        ten_q("June 30, 2023"),
        "Statements of Operations for the Three and Nine Months Ended June 30, 2023",
        "Annual Report on Form 10-K for the year ended December 31, 2022",
    ]
    meta = detect_filing_meta(pages)
    assert (meta.fiscal_quarter, meta.fiscal_year) == (None, None)


def test_10q_fiscal_year_named_by_the_filing() -> None:
    # A retailer that calls the year ending February 3, 2024 "fiscal 2023" says so; its wording wins.
    pages = [
        ten_q("July 29, 2023"),
        "Statements for the three and six months ended July 29, 2023",
        "In the second quarter of fiscal 2023, sales rose. Second quarter of fiscal 2023 margins improved.",
    ]
    meta = detect_filing_meta(pages)
    assert (meta.fiscal_quarter, meta.fiscal_year, meta.period) == (2, 2023, "FY2023 Q2")


def test_10q_wording_alone() -> None:
    pages = [ten_q("July 29, 2023"), "In the second quarter of fiscal 2024 we ... the second quarter of fiscal 2024"]
    meta = detect_filing_meta(pages)
    assert (meta.fiscal_quarter, meta.fiscal_year) == (2, 2024)


# --- output -----------------------------------------------------------------------------------------------------


def test_to_dict_uses_schema_field_names() -> None:
    meta = detect_filing_meta([ten_k("February 3, 2024")])
    assert meta.to_dict() == {
        schema.COMPANY: "Acme Widgets, Inc.",
        schema.FORM: "10-K",
        schema.PERIOD: "FY2024",
        schema.PERIOD_END: "2024-02-03",
        schema.FISCAL_YEAR: 2024,
        schema.FISCAL_QUARTER: None,
        schema.TICKER: "ACME",
        schema.TICKERS: ["ACME"],
        schema.SECURITIES: [["ACME", "NYSE"]],
        schema.FILE_NUMBERS: ["1-12345"],
        schema.LEGAL_NAME: "Acme Widgets, Inc.",
    }
    assert meta.form in FORMS
