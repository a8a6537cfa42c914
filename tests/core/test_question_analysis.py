"""analyze_question on FinanceBench-style questions: what each query stage reads from a question, read once."""

import json
from datetime import date

import pytest

from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.bm25 import content_terms
from haystack_fin.core.retrieval.filing_ranking import question_event_topics
from haystack_fin.core.retrieval.flam import cluster_item_priors, detect_query_clusters
from haystack_fin.core.retrieval.passage_scoring import asks_for_number
from haystack_fin.core.retrieval.question_analysis import (
    QuestionAnalysis,
    analysis_for,
    analysis_or_own,
    analyze_question,
)
from haystack_fin.core.retrieval.question_scope import parse_question_scope
from haystack_fin.core.statements import statements_in_query

# Questions of the FinanceBench open-source sample (the first three verbatim, the last a paraphrase).
CAPEX_3M = (
    "What is the FY2018 capital expenditure amount (in USD millions) for 3M? Give a response to the question by "
    "relying on the details shown in the cash flow statement."
)
BBY_STORES = "Was there any change in the number of Best Buy stores between Q2 of FY2024 and FY2023?"
PEP_AGM = (
    "At the Pepsico AGM held on May 3, 2023, what was the outcome of the shareholder vote on the shareholder "
    "proposal for a congruency report by Pepsico on net-zero emissions policies?"
)
ATVI_TURNOVER = (
    "What is the FY2019 fixed asset turnover ratio for Activision Blizzard? Fixed asset turnover ratio is defined "
    "as: FY2019 revenue / (average PP&E between FY2018 and FY2019). Use the statement of income and the statement "
    "of financial position."
)
PEP_GUIDANCE = "As of FY2023Q1, by how many percentage points did Pepsico raise its 10-Q guidance for EPS growth?"
QUESTIONS = [CAPEX_3M, BBY_STORES, PEP_AGM, ATVI_TURNOVER, PEP_GUIDANCE]


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


def clusters_of(analysis: QuestionAnalysis) -> list[str]:
    return [t.cluster_id for t in analysis.terms]


def test_capex_question(lexicon):
    a = analyze_question(CAPEX_3M, lexicon)
    assert clusters_of(a) == ["capex", "cash_flow_statement"]
    assert [c.id for c in a.clusters] == ["capex", "cash_flow_statement"]
    assert a.clusters[0].name == "Capital expenditures" and a.clusters[0].terms == ("capital expenditure amount",)
    assert a.statements == {"cash_flow_statement": 1.0}  # named outright
    assert a.asks_for_number
    assert "capital" in a.content_terms and "2018" in a.content_terms  # "FY2018" also yields the bare year
    target = a.question_scope.target()
    assert (target.year, target.quarter, target.fiscal) == (2018, None, True)
    assert [s.text for s in a.question_scope.company_spans] == ["3M"]
    assert a.event_topics == {}


def test_quarter_question(lexicon):
    a = analyze_question(BBY_STORES, lexicon)
    assert clusters_of(a) == ["store_count"]
    assert a.statements == {}  # store counts are not on a statement
    periods = [(p.text, p.year, p.quarter) for p in a.question_scope.periods]
    assert periods == [("Q2 of FY2024", 2024, 2), ("FY2023", 2023, None)]
    assert a.question_scope.target().label == "FY2024 Q2"
    assert [s.text for s in a.question_scope.company_spans] == ["Best Buy"]


def test_event_question(lexicon):
    a = analyze_question(PEP_AGM, lexicon)
    assert set(clusters_of(a)) == {"shareholder_vote", "climate_esg"}
    assert a.event_topics == {"5.07": "vote"}
    assert [(d.value, d.precision) for d in a.question_scope.dates] == [(date(2023, 5, 3), "day")]
    vote = next(c for c in a.clusters if c.id == "shareholder_vote")
    assert vote.items["8-K"] == ("5.07",)  # FLAM's Item prior travels with the analysis
    assert not a.asks_for_number and a.statements == {}


def test_ratio_question_implies_and_names_statements(lexicon):
    a = analyze_question(ATVI_TURNOVER, lexicon)
    assert "fixed_asset_turnover" in clusters_of(a) and "ppe" in clusters_of(a)
    assert a.statements == {"income_statement": 1.0, "balance_sheet": 1.0}
    assert a.question_scope.target().label == "FY2019"


def test_form_hint(lexicon):
    a = analyze_question(PEP_GUIDANCE, lexicon)
    assert "10-Q" in [f.form for f in a.question_scope.forms]
    assert a.question_scope.target().label == "FY2023 Q1" and a.question_scope.target().anchored


@pytest.mark.parametrize("question", QUESTIONS)
def test_holds_what_the_stages_compute_themselves(lexicon, question):
    a = analyze_question(question, lexicon)
    assert list(a.terms) == detect_query_clusters(question, lexicon)  # FlamRouter
    assert a.statements == statements_in_query(question, lexicon)  # DualTreeRetriever, TwoStageRanker
    assert list(a.content_terms) == content_terms(question)  # the ranker's fallback scorer
    assert a.asks_for_number == asks_for_number(question)
    assert a.question_scope == parse_question_scope(question)  # FilingScope
    assert a.event_topics == question_event_topics(question)


@pytest.mark.parametrize("question", QUESTIONS)
def test_json_round_trip(lexicon, question):
    a = analyze_question(question, lexicon)
    data = json.loads(json.dumps(a.to_dict()))  # plain JSON: no dates, tuples or dataclasses left
    assert QuestionAnalysis.from_dict(data) == a
    assert QuestionAnalysis.from_dict(data).to_dict() == a.to_dict()


@pytest.mark.parametrize("form", ["10-K", "10-Q", "8-K", "earnings_release"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_cluster_lexicon_gives_the_item_priors_and_names_of_the_full_lexicon(lexicon, question, form):
    a = analyze_question(question, lexicon)
    small = QuestionAnalysis.from_dict(a.to_dict()).cluster_lexicon()
    ids = [c.id for c in a.clusters]
    assert cluster_item_priors(ids, small, form) == cluster_item_priors(ids, lexicon, form)
    assert [small.cluster(i).name for i in ids] == [lexicon.cluster(i).name for i in ids]


def test_custom_lexicon_is_the_one_used():
    custom = Lexicon([TermCluster("outlays", "Capital outlays", "cash_flow", ("capital outlays",), {"10-K": ("8",)})])
    a = analyze_question("How large were capital outlays in FY2020?", custom)
    assert clusters_of(a) == ["outlays"] and a.clusters[0].items == {"10-K": ("8",)}
    assert a.statements == {"cash_flow_statement": 0.5}  # implied by the custom cluster's category


def test_question_without_anything(lexicon):
    a = analyze_question("hello", lexicon)
    assert (a.terms, a.clusters, a.statements, a.asks_for_number) == ((), (), {}, False)
    assert QuestionAnalysis.from_dict(a.to_dict()) == a


def test_analysis_for_checks_the_question(lexicon):
    data = analyze_question(CAPEX_3M, lexicon).to_dict()
    assert analysis_for(CAPEX_3M, None) is None
    assert analysis_for(CAPEX_3M, data).terms[0].cluster_id == "capex"
    with pytest.raises(ValueError, match="not of the query"):
        analysis_for(BBY_STORES, data)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(version=99), "version 99"),
        (lambda d: d.pop("terms"), "lacks"),
        (lambda d: d.update(terms=[{"term": "capex"}]), "malformed"),
        (lambda d: d["scope"].update(periods="FY2018"), "must be a list"),
    ],
)
def test_from_dict_refuses_other_layouts(lexicon, edit, message):
    data = analyze_question(CAPEX_3M, lexicon).to_dict()
    edit(data)
    with pytest.raises(ValueError, match=message):
        QuestionAnalysis.from_dict(data)
    with pytest.raises(ValueError, match="must be a dict"):
        QuestionAnalysis.from_dict(["not", "a", "dict"])  # type: ignore[arg-type]  # bad input on purpose


def test_synonyms_are_every_term_of_the_matched_clusters_and_survive_json(lexicon):
    analysis = analyze_question(CAPEX_3M, lexicon)
    assert set(analysis.synonyms) == {t.cluster_id for t in analysis.terms}
    for cluster_id, terms in analysis.synonyms.items():
        assert terms == tuple(lexicon.cluster(cluster_id).terms)
    assert QuestionAnalysis.from_dict(json.loads(json.dumps(analysis.to_dict()))).synonyms == analysis.synonyms


def test_analysis_or_own_takes_the_given_analysis_else_reads_with_the_built_in_lexicon(lexicon):
    given = analyze_question(BBY_STORES, Lexicon([TermCluster("stores", "Stores", "operations", ("stores",))]))
    assert analysis_or_own(BBY_STORES, given.to_dict()) == given
    assert analysis_or_own(BBY_STORES, None) == analyze_question(BBY_STORES, lexicon)
