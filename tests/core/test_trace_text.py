"""``ask --explain`` lines from a trace of the shape the query pipeline returns."""

from haystack_fin.core.trace_text import explain_lines, passage_lines, retrieval_lines, routing_lines, scope_lines

SCOPE = {
    "filing_ids": ["BBY"],
    "scoped": True,
    "reason": "scoped to BEST BUY CO., INC. for FY2024 Q2",
    "unmatched": [{"kind": "company", "text": "Apple", "reason": "no indexed company is named 'Apple'"}],
    "matches": [
        {"filing_id": "BBY", "company": "BEST BUY CO., INC.", "form": "10-Q", "period": "FY2024 Q2", "selected": True,
         "reasons": ["company 'Best Buy' matched", "FY2024 Q2 matched fiscal_year=2024", "Q2 matched", "a", "b"]},
        {"filing_id": "NFLX", "company": "NETFLIX", "selected": False, "reasons": []},
    ],
}  # fmt: skip
ROUTING = {
    "terms": [{"term": "revenue"}, {"term": "revenue"}],
    "mode": "relative",
    "item_weights": {"BBY": {"I-1": 0.2, "I-2": 0.46}},
    "budgets": {"BBY": {"I-1": 4, "I-2": 9}},
}


def test_scope_lines_name_matched_and_unmatched():
    assert scope_lines(SCOPE) == [
        "Scope: scoped to BEST BUY CO., INC. for FY2024 Q2 -> BBY",
        "  matched BBY (BEST BUY CO., INC. 10-Q FY2024 Q2): company 'Best Buy' matched; FY2024 Q2 matched "
        "fiscal_year=2024; Q2 matched; +2 more",
        "  1 other filing(s) scored lower",
        "  unmatched company 'Apple': no indexed company is named 'Apple'",
    ]
    assert scope_lines({"filing_ids": [], "reason": "no indexed filing matches"}) == [
        "Scope: no indexed filing matches -> no filing"
    ]


def test_items_by_weight_with_budgets():
    assert routing_lines(ROUTING) == [
        "Items (FLAM relative, terms: revenue; weight and budget k per Item):",
        "  BBY: I-2 0.46 k=9, I-1 0.20 k=4",
    ]


def test_each_passage_says_how_it_was_reached():
    how = [
        {"item": "I-2", "mode": "summary_tree", "tree_paths": {"summary": ["BBY#tree-I-2-s0-0", "BBY#tree-I-2-s1-10",
                                                                           "BBY#chunk-00086"]}},
        {"item": "I-1", "mode": "statement", "statement": "income_statement"},
        {"item": "I-1", "mode": "section", "section": "Income Taxes", "cluster": "effective_tax_rate"},
        {"item": "I-2", "mode": "summary_tree", "tree_paths": {}},
        None,
        {"mode": "heading", "section": "Gross Margin"},
        {"mode": "intent_item", "item": "1"},
        {"mode": "neighbour", "of": "BBY#chunk-00086", "direction": "next"},
    ]  # fmt: skip
    assert passage_lines(how) == [
        "Retrieved by:",
        "  [1] summary tree, Item I-2: s0-0 > s1-10 > chunk-00086",
        "  [2] statement block (income_statement)",
        "  [3] under the heading 'Income Taxes' (effective_tax_rate)",
        "  [4] flat BM25/dense match (no tree path)",
        "  [5] flat BM25/dense match (no tree path)",
        "  [6] under the filing's heading 'Gross Margin', which matches the question",
        "  [7] best match in Item 1, where the question's concepts are reported",
        "  [8] the next page of candidate chunk-00086",
    ]


def test_explain_lines_in_pipeline_order_without_reprs():
    trace = {
        "scope": SCOPE,
        "routing": ROUTING,
        "retrieval": {"statements": {"asked": {"income_statement": 0.5}, "added": ["a", "b"]}, "sections": {}},
        "graph": {"filings": [{"added": ["x"]}]},
        "graph_paths": ["table -> see Note 7", None],
        "retrieved_by": [{"mode": "graph", "reason": "reference"}, {}],
    }
    lines = explain_lines(trace)
    heads = [line.split(":")[0] for line in lines if not line.startswith(" ")]
    assert heads == ["Scope", "Items (FLAM relative, terms", "Statements", "Graph", "Retrieved by"]
    assert "Statements: income_statement 0.5 (2 statement blocks added)" in lines
    assert "  [1] table -> see Note 7" in lines and "  [1] graph neighbour (reference)" in lines
    assert not any("{" in line for line in lines)


def test_flam_routed_sections_with_their_scores():
    sections = [{"section": "Income Tax Expense", "score": 0.2143, "count": 9, "total": 32, "k": 4}]
    routing = {**ROUTING, "sections": {"BBY": {"I-2": sections}}}
    assert routing_lines(routing)[-1] == "    Item I-2 sections (FLAM score, k): 'Income Tax Expense' 0.214 k=4"
    routed = {"filing_id": "BBY", "item": "I-2", "section": "Income Tax Expense", "score": 0.2143, "k": 4,
              "added": ["BBY#chunk-00090", "BBY#chunk-00091"]}  # fmt: skip
    lines = retrieval_lines({"sections": {"asked": {}, "added": [], "routed": [routed]}})
    assert lines == ["FLAM section: BBY Item I-2 'Income Tax Expense' (score 0.214, 2 chunks added)"]
    how = [{"item": "I-2", "mode": "section", "section": "Income Tax Expense", "flam_score": 0.2143}]
    assert passage_lines(how)[1] == "  [1] in the FLAM-routed section 'Income Tax Expense' (score 0.214)"
