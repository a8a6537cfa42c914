"""Node-id builders/parsers and the FilingNode record (core/schema.py)."""

import pytest

from haystack_fin.core import schema
from haystack_fin.core.schema import FilingItem, FilingNode


def test_ids_round_trip():
    assert schema.chunk_id("MMM_2018_10K", 12) == "MMM_2018_10K#chunk-00012"
    assert schema.parse_chunk_id("MMM_2018_10K#chunk-00012") == ("MMM_2018_10K", 12)
    assert schema.parse_chunk_id("a#b#chunk-00003") == ("a#b", 3)  # a "#" inside the filing id stays with it
    assert schema.parse_chunk_id("MMM_2018_10K#filing") is None
    assert schema.parse_chunk_id("MMM_2018_10K#table-0001") is None
    assert schema.filing_node_id("MMM_2018_10K") == "MMM_2018_10K#filing"
    assert schema.table_id("MMM_2018_10K", 3) == "MMM_2018_10K#table-0003"
    assert schema.tree_node_id("MMM_2018_10K", "7", "q", 1, 4) == "MMM_2018_10K#tree-7-q1-4"
    assert schema.filing_id_of("MMM_2018_10K#tree-7-q1-4") == "MMM_2018_10K"
    assert schema.filing_id_of("plain") == "plain"


def _node(**overrides):
    fields = {
        "filing_id": "acme",
        "company": "ACME",
        "form": "10-K",
        "period": "FY2024",
        "source_path": "acme.pdf",
        "fiscal_year": 2024,
        "n_pages": 80,
        "items": [FilingItem(item="7", title="MD&A", part="II", start_page=20, end_page=40, n_chunks=30)],
        "n_chunks_by_modality": {"text": 25, "table": 5, "image": 0},
        "index_run": "abc123",
        "item_term_counts": {"7": {"revenue": 4}},
        "item_term_totals": {"7": 4},
    }
    return FilingNode(**{**fields, **overrides})


def test_to_meta_writes_optional_provenance_only_when_set():
    meta = _node().to_meta()
    assert meta[schema.NODE_TYPE] == "filing" and meta[schema.FISCAL_YEAR] == 2024
    assert schema.FISCAL_QUARTER not in meta and schema.TICKER not in meta and schema.PERIOD_END not in meta
    assert meta[schema.ITEMS] == [
        {"item": "7", "title": "MD&A", "part": "II", "start_page": 20, "end_page": 40, "n_chunks": 30}
    ]
    assert schema.ITEM_TERM_COUNTS not in _node(item_term_counts=None, item_term_totals=None).to_meta()


def test_from_meta_inverts_to_meta():
    node = _node(ticker="ACM", fiscal_quarter=2, period_end="2024-06-30")
    assert FilingNode.from_meta(node.to_meta()) == node
    assert node.id == "acme#filing"


def test_section_term_statistics_are_flam_statistics_written_only_when_set():
    sections = {
        "section_term_counts": {"7": {"Liquidity": {"liquidity": 3}}},
        "section_term_totals": {"7": {"Liquidity": 5}},
    }
    node = _node(**sections)
    meta = node.to_meta()
    assert meta[schema.SECTION_TERM_COUNTS] == sections["section_term_counts"]
    assert FilingNode.from_meta(meta) == node
    assert (
        schema.SECTION_TERM_COUNTS not in _node().to_meta()
        and FilingNode.from_meta(_node().to_meta()).section_term_counts is None
    )
    # FilingScope reads filing nodes without them, as without the Item statistics.
    assert {schema.SECTION_TERM_COUNTS, schema.SECTION_TERM_TOTALS, schema.ITEM_TERM_COUNTS} <= set(
        schema.FLAM_STATISTICS
    )


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"filing_id": "x", "fiscal_year": "2019", "n_pages": "12"}, {"fiscal_year": 2019, "n_pages": 12}),
        ({"filing_id": "x", "items": ["1A", "7"]}, {"items": ["1A", "7"]}),  # bare Item codes (hand-made nodes)
        ({"filing_id": "x", "fiscal_year": "n/a"}, {"fiscal_year": None}),
    ],
)
def test_from_meta_is_tolerant(meta, expected):
    node = FilingNode.from_meta(meta)
    for key, value in expected.items():
        got = [it["item"] for it in node.items] if key == "items" else getattr(node, key)
        assert got == value
    assert node.item_term_counts is None and node.form == ""


def test_node_type_filter_selects_one_node_type():
    from haystack import Document
    from haystack.utils.filters import document_matches_filter

    from haystack_fin.core.schema import NodeType, node_type_filter

    chunk = Document(content="x", meta={"node_type": "chunk"})
    filing = Document(content="x", meta={"node_type": "filing"})
    assert document_matches_filter(node_type_filter(NodeType.CHUNK), chunk)
    assert not document_matches_filter(node_type_filter(NodeType.CHUNK), filing)
    assert node_type_filter(NodeType.FILING) == {"field": "meta.node_type", "operator": "==", "value": "filing"}


def test_filing_filter_one_and_several():
    assert schema.filing_filter("A") == {"field": "meta.filing_id", "operator": "==", "value": "A"}
    assert schema.filing_filter(("A", "B")) == {"field": "meta.filing_id", "operator": "in", "value": ["A", "B"]}
