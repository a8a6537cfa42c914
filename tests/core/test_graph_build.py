"""Facts, edges and the filing graph (core/graph/facts.py, edges.py, build.py) on a small filing made of excerpts of
Netflix's 2015 10-K (public SEC text): an MD&A paragraph pointing to Note 10, a table introduced by "the following
table", the income statement, and Note 10's income tax table."""

import json

import pytest

from haystack_fin.core import schema
from haystack_fin.core.graph.build import (
    GRAPH_VERSION,
    build_filing_graph,
    chunk_graph_meta,
    graph_signature,
    without_graph_meta,
)
from haystack_fin.core.graph.edges import CONFIDENCE, EXPLICIT, INFERRED, MIN_CONFIDENCE, TABLE
from haystack_fin.core.graph.facts import UNIT_PER_SHARE, UNIT_PERCENT, table_facts
from haystack_fin.core.lexicon import Lexicon, TermCluster

FID = "NETFLIX_2015_10K"
MDNA = "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations"
ITEM8 = "Item 8. Financial Statements and Supplementary Data"
NOTES = "NETFLIX, INC. NOTES TO CONSOLIDATED FINANCIAL STATEMENTS"
COLS = ["", "Year Ended December 31, 2015", "Year Ended December 31, 2014", "Year Ended December 31, 2013"]


def _row(label: str, *cells: str) -> dict:
    return {"label": label, "cells": [label, *cells], "is_total": label.startswith("Total"), "is_context": False}


def _chunk(index: int, item: str, path: list[str], page: int, content: str, **extra: object) -> dict:
    meta = {
        "filing_id": FID,
        "company": "Netflix, Inc.",
        "form": "10-K",
        "period_end": "2015-12-31",
        "fiscal_year": 2015,
        "node_type": "chunk",
        "item": item,
        "part": "II",
        "section_path": path,
        "page_numbers": [page],
        "modality": "table" if "table" in extra else "text",
        "table_id": None,
        "chunk_index": index,
        "index_run": "run-1",
        **extra,
    }
    return {"id": schema.chunk_id(FID, index), "content": content, "meta": meta}


def _filing() -> list[dict]:
    tax_table = {
        "columns": [*COLS[:3], "Change 2015 vs. 2014"],
        "rows": [
            _row("Provision for income taxes", "19,244", "82,570", "(77)%"),
            _row("Effective tax rate", "14%", "24%", ""),
        ],
        "units": "thousands",
        "multiplier": 1000.0,
    }
    ops = {
        "columns": COLS,
        "rows": [
            _row("Revenues", "6,779,511", "5,504,656", "4,374,562"),
            _row("Operating income", "305,826", "402,648", "228,347"),
            _row("Interest expense", "(132,716)", "(50,219)", "(29,142)"),
            _row("Provision for income taxes", "19,244", "82,570", "58,671"),
            _row("Diluted earnings per share", "$ 0.28", "$ 0.62", "$ 0.26"),
        ],
        "units": "thousands",
        "multiplier": 1000.0,
    }
    note = {
        "columns": COLS,
        "rows": [_row("United States", "95,644", "325,081", "159,126"), _row("Foreign", "46,241", "24,288", "11,948")],
        "units": "thousands",
        "multiplier": 1000.0,
    }
    return [
        _chunk(0, "7", [MDNA, "Results of Operations"], 26,
               "Our provision for income taxes decreased in 2015. The following table shows the provision:"),
        _chunk(1, "7", [MDNA, "Results of Operations"], 26, "Provision for Income Taxes\nin thousands\n\n| ... |",
               table=tax_table, table_id=schema.table_id(FID, 1), table_block=0),
        _chunk(2, "7", [MDNA, "Results of Operations"], 26,
               "The decrease in our effective tax rate for the year ended December 31, 2015 is mainly due to an "
               "increase in R&D credits. See Note 10 of Item 8, Financial Statements and Supplementary Data for "
               "additional information. The provision for income taxes was $19.2 million in 2015."),
        _chunk(3, "8", [ITEM8, "NETFLIX, INC."], 40, "CONSOLIDATED STATEMENTS OF OPERATIONS\nin thousands\n\n| ... |",
               table=ops, table_id=schema.table_id(FID, 2), table_block=0, statement="income_statement"),
        _chunk(4, "8", [ITEM8, NOTES, "10. Income Taxes"], 57,
               "Income before provision for income taxes was as follows:"),
        _chunk(5, "8", [ITEM8, NOTES, "10. Income Taxes"], 57, "in thousands\n\n| ... |",
               table=note, table_id=schema.table_id(FID, 3), table_block=0),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


def _edges(fg, tier: str, kind: str | None = None) -> list:
    return [
        d["edge"]
        for _, _, d in fg.graph.edges(data=True)
        if d["edge"].type == tier and (kind is None or d["edge"].kind == kind)
    ]


def test_table_facts_scale_sign_and_period(lexicon: Lexicon) -> None:
    chunk = _filing()[3]
    facts = {(f.label, f.period): f for f in table_facts(chunk["id"], chunk["meta"], lexicon)}
    revenue = facts[("Revenues", "FY2015")]
    assert revenue.metric == "revenue" and revenue.value == pytest.approx(6_779_511_000)
    interest = facts[("Interest expense", "FY2014")]
    assert interest.value == pytest.approx(-50_219_000)  # "(50,219)" in a thousands table
    eps = facts[("Diluted earnings per share", "FY2015")]
    assert eps.unit == UNIT_PER_SHARE and eps.value == pytest.approx(0.28)  # "except per share data": not scaled
    tax = {(f.label, f.column): f for f in table_facts("x", _filing()[1]["meta"], lexicon)}
    change = tax[("Provision for income taxes", "Change 2015 vs. 2014")]
    assert change.unit == UNIT_PERCENT and change.value == -77.0 and change.period == ""


def test_words_are_no_facts(lexicon: Lexicon) -> None:
    # Verizon 2022 10-K, Note 7 (debt): a "Maturities" column of year ranges; a header row read as data.
    meta = {
        "period_end": "2022-12-31",
        "table": {
            "columns": ["", "Interest Rates %", "Maturities", "2022", "2021"],
            "rows": [
                _row("Verizon Communications—notes payable", "0.38 - 8.95", "2023 - 2061", "136,707", "137,144"),
                _row("Other subsidiaries—asset-backed debt", "0.41 - 5.72", "5", "9,767", "9,620"),
                _row("Contractual Obligations", "Total", "Less Than 1 Year", "1-3 Years", "5"),
            ],
            "multiplier": 1e6,
        },
    }
    facts = table_facts("x", meta, lexicon)
    assert {(f.label, f.raw) for f in facts} == {
        ("Verizon Communications—notes payable", "136,707"),
        ("Verizon Communications—notes payable", "137,144"),
        ("Other subsidiaries—asset-backed debt", "9,767"),
        ("Other subsidiaries—asset-backed debt", "9,620"),
    }


def test_edges_resolve_references_and_structure(lexicon: Lexicon) -> None:
    fg = build_filing_graph(_filing(), lexicon)
    ids = [schema.chunk_id(FID, i) for i in range(6)]
    explicit = {(e.source, e.target, e.kind) for e in _edges(fg, EXPLICIT)}
    assert (ids[0], ids[1], "table") in explicit  # "The following table" -> the next table
    assert (ids[2], ids[4], "note") in explicit  # "See Note 10" -> the first chunk under "10. Income Taxes"
    assert (ids[2], ids[3], "item") in explicit  # "Item 8" -> the Item's first chunk
    captions = {(e.source, e.target) for e in _edges(fg, TABLE, "caption")}
    assert (ids[1], ids[0]) in captions and (ids[5], ids[4]) in captions
    # The MD&A tax table and the income statement print the same provision: an inferred edge? No: they are in
    # different Items, and only explicit references cross Items.
    for edge in _edges(fg, INFERRED):
        assert fg.chunks[edge.source].item == fg.chunks[edge.target].item
    # Every edge is in a tier of at least 0.70, and cross-Item edges are explicit.
    for _, _, data in fg.graph.edges(data=True):
        edge = data["edge"]
        assert edge.confidence >= MIN_CONFIDENCE
        chunks = (fg.chunks.get(edge.source), fg.chunks.get(edge.target))
        if chunks[0] and chunks[1] and chunks[0].item != chunks[1].item:
            assert edge.type == EXPLICIT
    assert CONFIDENCE[EXPLICIT] == 0.95 and CONFIDENCE[TABLE] == 0.85 and CONFIDENCE[INFERRED] == 0.70


def test_inferred_edge_needs_the_same_value(lexicon: Lexicon) -> None:
    fg = build_filing_graph(_filing(), lexicon)
    ids = [schema.chunk_id(FID, i) for i in range(6)]
    inferred = {(e.source, e.target): e for e in _edges(fg, INFERRED)}
    # The text's "$19.2 million in 2015" is the table's 19,244 thousand within the printed precision.
    edge = inferred[(ids[1], ids[2])]
    assert edge.evidence["metric"] == "income_tax_expense" and edge.evidence["period"] == "FY2015"
    # Change the text's amount: no edge.
    docs = _filing()
    docs[2]["content"] = docs[2]["content"].replace("$19.2 million", "$21.5 million")
    fg2 = build_filing_graph(docs, lexicon)
    assert (ids[1], ids[2]) not in {(e.source, e.target) for e in _edges(fg2, INFERRED)}


def test_fact_lookup_and_counts(lexicon: Lexicon) -> None:
    fg = build_filing_graph(_filing(), lexicon)
    nodes = fg.facts_by_key[("operating_income", "FY2014")]
    assert [fg.fact(n).raw for n in nodes] == ["402,648"]
    counts = fg.counts()
    assert counts["facts"] == len([n for n, d in fg.graph.nodes(data=True) if d["node_type"] == "fact"])
    assert counts["edges"]["explicit"] >= 3
    assert fg.statements == {"income_statement": [schema.chunk_id(FID, 3)]}


def _with_stored_meta(docs: list[dict], lexicon: Lexicon) -> list[dict]:
    # JSON-safe: survives a dump/load (what any Haystack store does with meta).
    stored = json.loads(json.dumps(chunk_graph_meta(docs, lexicon)))
    return [{**d, "meta": {**d["meta"], **stored[d["id"]]}} for d in docs]


def test_stored_meta_round_trip(lexicon: Lexicon) -> None:
    docs = _filing()
    stored = chunk_graph_meta(docs, lexicon)
    assert set(stored) == {d["id"] for d in docs}
    assert all(m[schema.GRAPH_VERSION] == GRAPH_VERSION for m in stored.values())
    assert all(m[schema.GRAPH_LEXICON] == lexicon.fingerprint for m in stored.values())
    with_meta = _with_stored_meta(docs, lexicon)
    fresh = build_filing_graph(docs, lexicon)
    reused = build_filing_graph(with_meta, lexicon)
    assert reused.from_meta and not fresh.from_meta
    assert graph_signature(reused) == graph_signature(fresh)
    # The entities read back are the extracted ones, field for field (a metric's category from the lexicon).
    assert {c: reused.chunks[c].entities for c in reused.chunks} == {c: fresh.chunks[c].entities for c in fresh.chunks}
    # Storing again from chunks that already carry graph meta gives the same meta (it is extracted afresh).
    assert chunk_graph_meta(with_meta, lexicon) == stored
    # A stale version is recomputed, not trusted.
    stale = [{**d, "meta": {**d["meta"], schema.GRAPH_VERSION: GRAPH_VERSION - 1}} for d in with_meta]
    assert not build_filing_graph(stale, lexicon).from_meta
    # So is meta without_graph_meta, as an index written without the step has it.
    assert not build_filing_graph([{**d, "meta": without_graph_meta(d["meta"])} for d in with_meta], lexicon).from_meta


def test_stored_meta_of_another_lexicon_is_recomputed(lexicon: Lexicon) -> None:
    """Entities name lexicon clusters: a reader with another lexicon (the expander's ``lexicon_path``) extracts
    them itself instead of trusting the indexing lexicon's."""
    other = Lexicon([TermCluster("tax", "Taxes", "income_statement", ("provision for income taxes",))])
    assert other.fingerprint != lexicon.fingerprint
    with_meta = _with_stored_meta(_filing(), lexicon)
    fg = build_filing_graph(with_meta, other)
    assert not fg.from_meta
    assert graph_signature(fg) == graph_signature(build_filing_graph(_filing(), other))
    metrics = {e.key for c in fg.chunks.values() for e in c.entities if e.kind == "metric"}
    assert metrics == {"tax"}


def test_partly_stored_meta_falls_back_per_chunk(lexicon: Lexicon) -> None:
    """A filing whose chunks only partly carry graph meta (a store written half before, half after): entities from
    meta where stored, extracted elsewhere; edges recomputed. Same graph either way."""
    with_meta = _with_stored_meta(_filing(), lexicon)
    with_meta[1] = {**with_meta[1], "meta": without_graph_meta(with_meta[1]["meta"])}
    fg = build_filing_graph(with_meta, lexicon)
    assert not fg.from_meta
    assert graph_signature(fg) == graph_signature(build_filing_graph(_filing(), lexicon))
