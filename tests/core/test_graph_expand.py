"""Question intents and graph expansion (core/graph/expand.py) on the Netflix 10-K excerpts of test_graph_build."""

import pytest
from test_graph_build import FID, _filing

from haystack_fin.core import schema
from haystack_fin.core.graph.build import build_filing_graph
from haystack_fin.core.graph.entities import FiscalCalendar
from haystack_fin.core.graph.expand import ExpansionParams, expand, question_intent
from haystack_fin.core.lexicon import Lexicon

NFLX = FiscalCalendar(end_month=12, fiscal_year=2015)


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


def test_question_intent(lexicon: Lexicon) -> None:
    intent = question_intent("How did operating income change from FY2014 to FY2015?", lexicon, NFLX)
    assert intent.metrics == ("operating_income",) and set(intent.periods) == {"FY2014", "FY2015"}
    assert intent.comparison and not intent.why
    ratio = question_intent("What was the FY2015 operating margin?", lexicon, NFLX)
    assert "income_statement" in ratio.ratio_statements
    assert question_intent("Why did the effective tax rate decrease in 2015?", lexicon, NFLX).why


def test_comparison_brings_a_fact_of_each_period(lexicon: Lexicon) -> None:
    fg = build_filing_graph(_filing(), lexicon)
    intent = question_intent("How did operating income change from FY2014 to FY2015?", lexicon, NFLX)
    start = [schema.chunk_id(FID, 0)]  # an MD&A paragraph without the figures
    added, trace = expand(fg, intent, start, ExpansionParams(max_added=2))
    ids = [e.chunk_id for e in added]
    assert schema.chunk_id(FID, 3) in ids  # the income statement holds operating income for both years
    assert trace["matched"]["how"] == "exact"
    for exp in added:
        assert 0.0 <= exp.score <= 1.0 and exp.hops in (0, 1, 2)


def test_paths_follow_edges_and_weights_are_parameters(lexicon: Lexicon) -> None:
    fg = build_filing_graph(_filing(), lexicon)
    intent = question_intent("What else does the filing say about this?", lexicon, NFLX)
    start = [schema.chunk_id(FID, 2)]  # "See Note 10 of Item 8"
    added, _ = expand(fg, intent, start, ExpansionParams(max_added=5, min_score=0.0))
    by_id = {e.chunk_id: e for e in added}
    note = by_id[schema.chunk_id(FID, 4)]
    assert note.hops == 1 and note.path[0].kind == "note" and note.hop_proximity == pytest.approx(0.95)
    only_hops, _ = expand(fg, intent, start, ExpansionParams(w_entity=0, w_vector=0, w_hop=1, min_score=0.0))
    assert {e.chunk_id: e.score for e in only_hops}[schema.chunk_id(FID, 4)] == pytest.approx(0.95)
