"""Entities of a chunk (core/graph/entities.py) on short excerpts of public SEC filings (Netflix 10-K 2015, Best Buy
10-Q Q2 FY2024, Bank of America 10-K)."""

import time

import pytest

from haystack_fin.core.graph.entities import (
    COMPANY,
    FiscalCalendar,
    column_period,
    extract_entities,
    find_companies,
    find_periods,
    find_references,
)
from haystack_fin.core.lexicon import Lexicon

NFLX = FiscalCalendar.from_meta({"period_end": "2015-12-31", "fiscal_year": 2015})
BBY = FiscalCalendar.from_meta({"period_end": "2023-07-29", "fiscal_year": 2024})  # fiscal year ends late January


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


def test_calendar_from_meta() -> None:
    assert NFLX.end_month == 12
    # A 10-Q's period_end is a quarter end, but its fiscal_year is the filing's: what matters here is the month the
    # year ends in, which a 10-Q alone does not say; a 10-K of Best Buy ("2023-01-28") does.
    bby_10k = FiscalCalendar.from_meta({"period_end": "2023-01-28", "fiscal_year": 2023})
    assert bby_10k.end_month == 1
    assert FiscalCalendar.from_meta({"period_end": "2022-01-02"}).end_month == 12  # 52/53-week year ending Jan 1-7
    assert FiscalCalendar.from_meta({}).end_month == 12


def test_52_53_week_years_and_10q_calendars() -> None:
    # Best Buy's fiscal years end on the Saturday nearest January 31: February 2, 2019, February 3, 2018, January 28,
    # 2017 are all year ends (BESTBUY_2019_10K's balance sheet and income statement columns).
    bby = FiscalCalendar.from_meta({"period_end": "2019-02-02", "fiscal_year": 2019})
    assert column_period("January 28, 2017", bby) == "FY2017"
    assert column_period("February 3, 2018", bby) == "FY2018"
    assert column_period("Three Months Ended May 4, 2019", bby) == "FY2020Q1"
    # A 10-Q's period_end is a quarter end: Q2 FY2024 ended July 29, 2023, so the year ends in January.
    q2 = FiscalCalendar.from_meta({"period_end": "2023-07-29", "fiscal_year": 2024, "fiscal_quarter": 2})
    assert q2.end_month == 1
    assert column_period("Three Months Ended July 29, 2023", q2) == "FY2024Q2"
    assert column_period("January 28, 2023", q2) == "FY2023"


def test_periods_follow_the_fiscal_calendar() -> None:
    bby = FiscalCalendar(end_month=1, fiscal_year=2024)
    keys = [
        e.key for e in find_periods("For the three months ended July 29, 2023 and six months ended July 29, 2023", bby)
    ]
    assert keys == ["FY2024Q2", "FY2024H1"]
    assert [e.key for e in find_periods("as of January 28, 2023", bby)] == ["FY2023"]
    text = "Total intrinsic value of options exercised for the years ended December 31, 2015 , 2014 and 2013 was $368.4"
    assert [e.key for e in find_periods(text, NFLX)] == ["FY2015", "FY2014", "FY2013"]
    assert [e.key for e in find_periods("in fiscal 2023 and in the second quarter of fiscal 2024", bby)] == [
        "FY2023",
        "FY2024Q2",
    ]
    # A bare year in prose is the fiscal year of a calendar-year filer only.
    assert [e.key for e in find_periods("In 2015, the difference", NFLX)] == ["FY2015"]
    assert find_periods("In 2015, the difference", bby) == []


def test_column_periods() -> None:
    assert column_period("Year Ended December 31, 2015", NFLX) == "FY2015"
    assert column_period("As of/ Year Ended December 31, 2014", NFLX) == "FY2014"
    assert column_period("2015 High", NFLX) == "FY2015"
    assert column_period("Change 2015 vs. 2014", NFLX) == ""  # two periods: not a period column
    assert column_period("Shares Available for Grant", NFLX) == ""


def test_references() -> None:
    text = (
        "See Note 10 of Item 8, Financial Statements and Supplementary Data for additional information. "
        "The aggregate intrinsic value in the table above represents the total pretax intrinsic value. "
        "Refer to Part II, Item 7A and Notes 3 and 4; incorporated by reference to Exhibit 13 on page 45. "
        "the 5.375% Notes due 2021"
    )
    keys = [e.key for e in find_references(text)]
    assert keys == ["note:10", "item:8", "table:previous", "item:II-7A", "note:3", "note:4", "exhibit:13", "page:45"]
    assert [e.key for e in find_references("The following table summarizes the assumptions")] == ["table:next"]
    # An 8-K Item is no 10-K Item 5; a heading inside a chunk is no reference.
    assert [e.key for e in find_references("under Item 5.05 of Form 8-K regarding")] == ["item:5.05"]
    assert find_references("See accompanying notes.\nNOTE 15 — UNEARNED REVENUE\nUnearned revenue by segment") == []


def test_companies_whole_names() -> None:
    text = "Bank of America Corporation and Merrill Lynch & Co. Inc. compete with Netflix, Inc. The Company believes"
    found = find_companies(text, "NETFLIX INC")
    keys = [e.key for e in found if e.kind == COMPANY]
    assert keys[0] == "netflix"
    assert "bank of america" in keys
    assert not any(k in ("bank", "america", "the company") for k in keys)


def test_text_chunk_amounts_and_context(lexicon: Lexicon) -> None:
    content = (
        "In 2015, the difference between our 14% effective tax rate and the Federal statutory rate of 35% was "
        "$30.4 million primarily due to a $13.4 million release of tax reserves. Diluted earnings per share were "
        "$0.28 per share in 2015. We recorded a loss of $(1,234) million."
    )
    ents = extract_entities(content, {"period_end": "2015-12-31", "fiscal_year": 2015}, lexicon)
    amounts = ents.of("amount")
    assert [a.value for a in amounts] == [30.4e6, 13.4e6, -1234e6]
    assert amounts[0].period == "FY2015"
    per_share = ents.of("per_share")
    assert per_share and per_share[0].value == pytest.approx(0.28)
    assert [p.value for p in ents.of("percent")] == [14.0, 35.0]
    assert "eps" in {m.key for m in ents.of("metric")}


def test_table_chunk_entities(lexicon: Lexicon) -> None:
    meta = {
        "period_end": "2015-12-31",
        "fiscal_year": 2015,
        "section_path": ["Item 8. Financial Statements", "10. Income Taxes"],
        "table": {
            "columns": ["", "Year Ended December 31, 2015", "Year Ended December 31, 2014"],
            "rows": [
                {"label": "United States", "cells": ["United States", "95,644", "325,081"], "is_context": False},
                {"label": "Foreign", "cells": ["Foreign", "46,241", "24,288"], "is_context": False},
                {"label": "Income before income taxes", "cells": ["x", "141,885", "349,369"], "is_context": False},
            ],
        },
    }
    content = "Income before provision for income taxes was as follows:\nin thousands\n\n| ..."
    ents = extract_entities(content, meta, lexicon)
    assert {p.key for p in ents.of("period")} == {"FY2015", "FY2014"}
    assert {"united states", "foreign"} <= {g.key for g in ents.of("geography")}
    assert "pretax_income" in {m.key for m in ents.of("metric")}


def _time(fn: object, text: str) -> float:
    start = time.perf_counter()
    fn(text)  # type: ignore[operator]
    return time.perf_counter() - start


_ADVERSARIAL_UNITS = [
    "9",  # one long run each: digits, spaces, letters, thousands groups, dashes
    " ",
    "a",
    "1,",
    "-",
    "9" * 50 + " ",
    "$" * 40 + "1" * 40,
    "Note " * 20,
    "Item Part II, " * 10,
    "A " * 30 + "Inc ",
    "three months ended " * 5,
    " " * 200 + "Corporation",
    "1,234,567.8" * 10 + "%",
    "( $ 1 ) " * 10,
    "December 31, " * 8,
]


def _adversarial(total: int) -> str:
    # Each pathological unit repeated into one long run: a pattern that rescans a run from each of its positions
    # is quadratic in the run's length.
    share = total // len(_ADVERSARIAL_UNITS)
    return "".join(unit * (share // len(unit)) for unit in _ADVERSARIAL_UNITS)


def test_linear_time_on_adversarial_text(lexicon: Lexicon) -> None:
    """1 MB of pathological runs stays linear: 10x the text may take at most ~25x the time (a quadratic pattern
    would take ~100x), and 1 MB finishes in seconds."""
    meta = {"period_end": "2015-12-31", "fiscal_year": 2015, "company": "Bank of America Corporation"}

    def run(text: str) -> None:
        extract_entities(text, meta, lexicon)

    t_small = max(_time(run, _adversarial(100_000)), 1e-3)
    t_big = _time(run, _adversarial(1_000_000))
    assert t_big < 15.0
    assert t_big / t_small < 25.0, (t_small, t_big)
