"""Headings below the Item: numbering-free matching, the one-word rule, the chunk index and the lexicon's titles."""

import re
from pathlib import Path

import pytest

from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.sections import (
    SectionIndex,
    normalize_heading,
    question_sections,
    section_match,
    sections_in_query,
)

TAX = {"income tax": "effective_tax_rate", "general": "business_overview", "general matter": "x"}


@pytest.mark.parametrize(
    ("heading", "normalized"),
    [
        ("NOTE 14: INCOME TAXES", "income tax"),
        ("Note 2 — Acquisitions and Divestitures", "acquisition and divestiture"),
        ("12. Debt", "debt"),
        ("Item 7. Management's Discussion", "management discussion"),
        ("401(k) Plan", "401 k plan"),  # a number that is part of the title stays
        ("2023 Compared with 2022", "2023 compared with 2022"),  # so does a year
    ],
)
def test_normalize_heading_drops_numbering_only(heading, normalized):
    assert normalize_heading(heading) == normalized


def test_section_match_reads_every_heading_of_the_path():
    assert section_match(["Item 8. Financial Statements", "NOTE 14: INCOME TAXES"], TAX) == "income tax"
    assert section_match(["Item 1. Business"], {"business": "business_overview"}) == "business"
    assert section_match(["Item 1A. Risk Factors", "Risks related to our business"], {"business": "x"}) is None
    # A title inside an Item's title is not the Item: every MD&A chunk carries "... of Financial Condition ...".
    mdna = "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations"
    assert section_match([mdna, "Cost of Services"], {"financial condition": "liquidity"}) is None
    assert section_match([mdna, "Financial Condition"], {"financial condition": "liquidity"}) == "financial condition"
    assert section_match([], TAX) is None
    assert section_match(["Item 8", "NOTE 14: INCOME TAXES"], {}) is None


def test_one_word_titles_must_be_the_whole_heading():
    assert section_match(["Item 7", "General"], TAX) == "general"
    assert section_match(["Item 7", "General and administrative expenses"], TAX) is None


def test_multi_word_titles_match_inside_a_merged_heading():
    titles = {"debt and borrowing arrangement": "total_debt"}
    path = ["Item 8", "NOTE 9: ACCOUNTS PAYABLE", "NOTE 10: DEBT AND BORROWING ARRANGEMENTS Short-Term Borrowings"]
    assert section_match(path, titles) == "debt and borrowing arrangement"
    assert section_match(["Item 8", "Debt-free arrangements"], titles) is None


def test_section_index_finds_the_same_chunks_as_section_match():
    paths = {
        "f#chunk-00001": ["Item 1. Business", "General"],
        "f#chunk-00002": ["Item 7. MD&A", "Income Taxes"],
        "f#chunk-00003": ["Item 8. Financial Statements", "NOTE 14: INCOME TAXES", "Rate reconciliation"],
        "f#chunk-00004": ["Item 8. Financial Statements", "NOTE 15: LEASES"],
        "f#chunk-00005": ["Item 1A. Risk Factors", "Taxes on income could rise"],
        "f#chunk-00006": ["Item 7. Discussion of General Matters", "Results"],
    }
    index = SectionIndex(paths.items())
    found = index.chunks_under(TAX)
    assert found == {cid: section_match(p, TAX) for cid, p in paths.items() if section_match(p, TAX)}
    assert set(found) == {"f#chunk-00001", "f#chunk-00002", "f#chunk-00003"}
    assert index.chunks_under({}) == {}


def test_question_sections_come_from_the_clusters_first_claim_wins():
    clusters = [
        TermCluster("a", "A", "x", ("a",), sections=("Income Taxes", "NOTE 3: Debt")),
        TermCluster("b", "B", "x", ("b",), sections=("income taxes", "Leases")),
    ]
    assert question_sections(clusters) == {"income tax": "a", "debt": "a", "lease": "b"}


def test_the_default_lexicon_knows_where_analyst_concepts_are_reported():
    lexicon = Lexicon.load_default()
    assert "income tax" in sections_in_query("How did the effective tax rate change?", lexicon)
    legal = sections_in_query("Any material ongoing legal battles?", lexicon)
    assert "commitment and contingency" in legal and "legal proceeding" in legal
    cover = sections_in_query("Which debt securities are registered on a national securities exchange?", lexicon)
    assert "security registered pursuant to section 12 b of the act" in cover
    assert sections_in_query("What was revenue in 2022?", lexicon) == {}


def test_sections_round_trip_through_the_cluster_dict():
    cluster = TermCluster("a", "A", "x", ("a",), sections=("Income Taxes",))
    assert TermCluster.from_dict(cluster.to_dict()) == cluster
    with pytest.raises(ValueError, match="sections"):
        TermCluster.from_dict({"id": "a", "terms": ["a"], "sections": "Income Taxes"})


def test_every_cluster_with_sections_is_documented_in_the_intents_table():
    doc = (Path(__file__).parents[2] / "docs" / "intents.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", doc))
    with_sections = {cluster.id for cluster in Lexicon.load_default() if cluster.sections}
    assert with_sections and with_sections <= documented, sorted(with_sections - documented)
