"""Saying what is not there: ``ScopeDecision.unmatched`` names the filing ids, companies, periods and forms a
question asks for that no indexed filing has, without changing which filings are in scope.

Profiles are the 22 FinanceBench filings of tests/fixtures/filing_profiles.json (as ``detect_filing_meta`` reads
them); the single-company index is the Best Buy 10-Q alone, as in the new-user report of the issue."""

import json
from pathlib import Path

from haystack_fin.core.retrieval.filing_ranking import FilingProfile, resolve_scope

ROWS = json.loads((Path(__file__).parents[1] / "fixtures" / "filing_profiles.json").read_text())["rows"]
PROFILES = [FilingProfile(*row[:8], tuple(row[8])) for row in ROWS]
BBY_10Q = [p for p in PROFILES if p.filing_id == "BESTBUY_2024Q2_10Q"]


def _unmatched(question: str, profiles: list[FilingProfile], **kwargs) -> list[tuple[str, str]]:
    return [(u["kind"], u["text"]) for u in resolve_scope(question, profiles, **kwargs).to_dict()["unmatched"]]


def test_unknown_filing_id_in_the_filter():
    decision = resolve_scope("revenue?", PROFILES, filing_filter=["BOGUS", "BESTBUY_2023_10K"])
    assert [(u["kind"], u["text"]) for u in decision.unmatched] == [("filing_id", "BOGUS")]
    assert decision.unmatched[0]["reason"] == "no indexed filing has id 'BOGUS'"


def test_other_company_asked_of_a_single_company_index():
    decision = resolve_scope("What was Apple's revenue in fiscal 2024?", BBY_10Q)
    assert [(u["kind"], u["text"]) for u in decision.unmatched] == [("company", "Apple")]
    assert "indexed: BEST BUY CO., INC." in decision.unmatched[0]["reason"]
    assert decision.filing_ids == ["BESTBUY_2024Q2_10Q"]  # reported, not acted on: the scope is unchanged


def test_period_no_filing_of_the_company_has():
    assert _unmatched("What was Best Buy's revenue in FY2019?", BBY_10Q) == [("period", "FY2019")]
    assert _unmatched("What was Best Buy's revenue in FY2024?", BBY_10Q) == []


def test_form_no_filing_of_the_company_has():
    assert _unmatched("What does Best Buy's FY2024 10-K say about revenue?", BBY_10Q) == [("form", "10-K")]
    assert _unmatched("What does Best Buy's 10-Q say about revenue?", BBY_10Q) == []


def test_unknown_company_in_a_shared_index():
    assert _unmatched("What was Amazon's capex in FY2022?", PROFILES) == [("company", "Amazon")]


def test_nothing_unmatched_for_an_indexed_question():
    assert _unmatched("What was MGM Resorts' revenue in FY2022?", PROFILES) == []
