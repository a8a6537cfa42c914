from pathlib import Path

import pytest
from haystack import Document

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema
from haystack_fin.core.ingest.filing_node import drop_chunks, section_term_counts
from haystack_fin.core.ingest.structure import ChunkRecord, FilingStructure, ItemSummary
from haystack_fin.core.lexicon import Lexicon


@pytest.fixture(scope="module")
def bestbuy_filing():
    fixture = Path(__file__).parents[1] / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
    return FilingConverter().run(sources=[fixture])["documents"]


@pytest.fixture(scope="module")
def bestbuy_split(bestbuy_filing):
    return FilingSplitter().run(documents=bestbuy_filing)


class TestFilingSplitter:
    def test_init_validates(self):
        with pytest.raises(ValueError, match="overlap_tokens"):
            FilingSplitter(chunk_tokens=100, overlap_tokens=100)
        with pytest.raises(ValueError, match="max_table_rows"):
            FilingSplitter(max_table_rows=0)

    def test_to_dict_from_dict(self):
        splitter = FilingSplitter(
            chunk_tokens=150, overlap_tokens=10, max_table_rows=12, include_images=False, graph_meta=False
        )
        restored = FilingSplitter.from_dict(splitter.to_dict())
        assert (restored.chunk_tokens, restored.overlap_tokens, restored.max_table_rows) == (150, 10, 12)
        assert restored.include_images is False and restored.graph_meta is False
        assert FilingSplitter.from_dict(FilingSplitter().to_dict()).graph_meta is True
        assert FilingSplitter.from_dict(FilingSplitter(section_term_stats=True).to_dict()).section_term_stats is True

    def test_every_chunk_has_full_provenance(self, bestbuy_split):
        chunks = bestbuy_split["documents"]
        assert len(chunks) > 100
        for chunk in chunks:
            assert set(schema.PROVENANCE_FIELDS) <= chunk.meta.keys()
            assert chunk.meta[schema.NODE_TYPE] == "chunk"
            assert chunk.meta[schema.FILING_ID] == "best-buy_10-Q_FY2024-Q2"
            assert chunk.id == schema.chunk_id(
                "best-buy_10-Q_FY2024-Q2", chunk.meta[schema.CHUNK_INDEX], chunk.meta[schema.INDEX_RUN]
            )
            assert chunk.meta[schema.FORM] == "10-Q" and chunk.meta[schema.PERIOD] == "FY2024 Q2"
            assert all(1 <= p <= 30 for p in chunk.meta[schema.PAGE_NUMBERS]) and chunk.meta[schema.PAGE_NUMBERS]
            assert chunk.meta[schema.SECTION_PATH][0].startswith(("Part", "Cover"))
            is_table = chunk.meta[schema.MODALITY] == "table"
            assert bool(chunk.meta[schema.TABLE_ID]) == is_table
        assert len({c.id for c in chunks}) == len(chunks)

    def test_tables_are_own_chunks_with_bounded_blocks(self, bestbuy_split):
        tables = [c for c in bestbuy_split["documents"] if c.meta[schema.MODALITY] == "table"]
        texts = [c for c in bestbuy_split["documents"] if c.meta[schema.MODALITY] == "text"]
        for t in tables:
            data_rows = [r for r in t.meta[schema.TABLE_JSON]["rows"]]
            assert len(data_rows) <= 15
        # the balance sheet (page 3) is a table chunk with parsed negative values elsewhere on page 4
        balance = [t for t in tables if 3 in t.meta[schema.PAGE_NUMBERS]]
        assert any("Cash and cash equivalents" in t.content for t in balance)
        earnings = [t for t in tables if 4 in t.meta[schema.PAGE_NUMBERS]]
        rows = [r for t in earnings for r in t.meta[schema.TABLE_JSON]["rows"]]
        restructuring = next(r for r in rows if r["label"] == "Restructuring charges")
        assert restructuring["values"][1:] == [-7.0, 34.0, -16.0, 35.0]
        # no table row leaks into running text
        for text in texts:
            assert "Cash and cash equivalents 1,093" not in text.content
            assert "| --- |" not in text.content

    def test_primary_statements_are_tagged(self, bestbuy_split):
        tagged: dict[str, set[int]] = {}
        for c in bestbuy_split["documents"]:
            if schema.STATEMENT in c.meta:
                assert c.meta[schema.MODALITY] == "table"
                tagged.setdefault(c.meta[schema.STATEMENT], set()).update(c.meta[schema.PAGE_NUMBERS])
        # Best Buy's 10-Q prints its condensed statements on pages 3-7, in Part I, Item 1.
        assert tagged == {
            "balance_sheet": {3},
            "income_statement": {4},
            "comprehensive_income_statement": {5},
            "cash_flow_statement": {6},
            "equity_statement": {7},
        }

    def test_items_and_page_ranges_in_filing_node(self, bestbuy_split):
        node = bestbuy_split["filing_nodes"][0]
        assert node.meta[schema.NODE_TYPE] == "filing"
        items = {it["item"]: (it["start_page"], it["end_page"]) for it in node.meta[schema.ITEMS]}
        assert items["I-1"][0] == 3 and items["I-2"][0] == 14 and items["I-3"][0] == 24 and items["II-1"][0] == 24
        assert sum(it["n_chunks"] for it in node.meta[schema.ITEMS]) == len(bestbuy_split["documents"])
        assert node.meta[schema.ITEM_TERM_COUNTS]["I-1"]  # lexicon statistics for FLAM
        assert node.meta[schema.N_CHUNKS_BY_MODALITY]["table"] > 20

    def test_section_term_counts_per_heading_below_the_item(self, bestbuy_filing, bestbuy_split):
        assert schema.SECTION_TERM_COUNTS not in bestbuy_split["filing_nodes"][0].meta  # off by default
        with_sections = FilingSplitter(section_term_stats=True).run(documents=bestbuy_filing)
        assert with_sections["documents"] == bestbuy_split["documents"]  # the chunks do not change
        bestbuy_split = with_sections
        meta = bestbuy_split["filing_nodes"][0].meta
        counts, totals = meta[schema.SECTION_TERM_COUNTS], meta[schema.SECTION_TERM_TOTALS]
        # MD&A's income-tax subsection and the fair-value note, counted like the Items (lexicon clusters).
        tax = counts["I-2"]["Income Tax Expense"]
        assert tax["effective_tax_rate"] >= 5 and tax["income_tax_expense"] >= 10
        assert totals["I-2"]["Income Tax Expense"] == sum(tax.values())
        assert counts["I-1"]["4. Fair Value Measurements"]["fair_value"] >= 20
        assert "Liquidity and Capital Resources" in counts["I-2"]
        # Every key is a heading of the first two levels below the Item title of some chunk of that Item.
        headings = {
            (d.meta[schema.ITEM], h) for d in bestbuy_split["documents"] for h in d.meta[schema.SECTION_PATH][1:3]
        }
        assert {(item, h) for item, by in counts.items() for h in by} <= headings
        # Only sections with a counted term, only Items with chunks (not the filed exhibits), totals for all.
        assert all(sum(c.values()) > 0 for by in counts.values() for c in by.values())
        assert not any(item.startswith("EX-") for item in counts) and counts.keys() == totals.keys()
        assert (
            FilingSplitter(term_stats=False, section_term_stats=True)
            .run(documents=[Document(content="ITEM 7. MD&A\nLIQUIDITY\nRevenue grew.")])["filing_nodes"][0]
            .meta.keys()
            .isdisjoint(schema.FLAM_STATISTICS)
        )

    def test_section_term_counts_are_capped_per_item(self):
        sections = {"A": "revenue", "B": "revenue and net income and capex", "C": "nothing", "D": "capex and goodwill"}
        chunks = [ChunkRecord("x", "text", "7", "MD&A", "II", ["Item 7. MD&A", h], [1]) for h in "ABCD"]
        structure = FilingStructure(chunks, [ItemSummary("7", "", "", 1, 2, 4, "", sections)])
        lexicon = Lexicon.load()
        # C counts no term; of A, B, D the two with the most terms stay, in filing order.
        assert list(section_term_counts(structure, lexicon, max_sections=2)["7"]) == ["B", "D"]
        # A heading no chunk sits under has nothing to retrieve: not counted.
        structure.chunks = chunks[:1]
        assert list(section_term_counts(structure, lexicon, max_sections=2)["7"]) == ["A"]

    def test_filed_exhibits_are_sections_without_chunks_by_default(self, bestbuy_split, fixtures):
        # The 10-Q's certifications (Exhibits 31.1-32.2, pages 27-30) follow its signatures.
        node = bestbuy_split["filing_nodes"][0]
        exhibits = {it["item"]: (it["start_page"], it["n_chunks"]) for it in node.meta[schema.ITEMS]}
        assert {k: v for k, v in exhibits.items() if k.startswith("EX-")} == {
            "EX-31.1": (27, 0),
            "EX-31.2": (28, 0),
            "EX-32.1": (29, 0),
            "EX-32.2": (30, 0),
        }
        assert not any(d.meta[schema.ITEM].startswith("EX-") for d in bestbuy_split["documents"])
        filing = FilingConverter().run(sources=[fixtures / "bestbuy-10q-2023-07-29.pdf"])["documents"]
        with_exhibits = FilingSplitter(include_filed_exhibits=True).run(documents=filing)
        certifications = [d for d in with_exhibits["documents"] if d.meta[schema.ITEM] == "EX-31.1"]
        assert certifications and certifications[0].meta[schema.PAGE_NUMBERS] == [27]
        assert "certify" in certifications[0].content
        restored = FilingSplitter.from_dict(FilingSplitter(include_filed_exhibits=True).to_dict())
        assert restored.include_filed_exhibits is True

    def test_dropping_chunks_counts_per_section_when_an_item_code_repeats(self):
        # A 10-K's Item 8 in Part II ("see page F-1") and again on its F-pages after Item 15: two sections, one code.
        def rec(item: str, modality: str = "text") -> ChunkRecord:
            return ChunkRecord("x", modality, item, item, "", [item], [1])

        items = [
            ItemSummary("8", "", "", 1, 1, 1),
            ItemSummary("15", "", "", 2, 2, 1),
            ItemSummary("8", "", "", 3, 4, 3),
        ]
        chunks = [rec("8"), rec("15"), rec("8"), rec("8", "image"), rec("8")]
        structure = FilingStructure(chunks, items)
        drop_chunks(structure, lambda c: c.modality == "image")
        assert [i.n_chunks for i in structure.items] == [1, 1, 2]
        assert [c.modality for c in structure.chunks] == ["text"] * 4

    def test_running_headers_removed(self, bestbuy_split):
        for chunk in bestbuy_split["documents"]:
            assert not chunk.content.startswith("Table of Contents")

    def test_deterministic_ids_and_run(self, fixtures):
        filing = FilingConverter().run(sources=[fixtures / "pepsico-8k-2023-05-05.pdf"])["documents"]
        first = FilingSplitter().run(documents=filing)
        second = FilingSplitter().run(documents=filing)
        assert [d.id for d in first["documents"]] == [d.id for d in second["documents"]]
        assert first["documents"][0].meta[schema.INDEX_RUN] == second["documents"][0].meta[schema.INDEX_RUN]
        other = FilingSplitter(chunk_tokens=120).run(documents=filing)
        assert other["documents"][0].meta[schema.INDEX_RUN] != first["documents"][0].meta[schema.INDEX_RUN]

    def test_plain_text_document_from_another_converter(self):
        content = (
            "FORM 8-K\nACME CORP\f"
            + "ITEM 2.02 RESULTS OF OPERATIONS AND FINANCIAL CONDITION\n"
            + ("Revenue grew strongly in the quarter. " * 20)
        )
        doc = Document(content=content, meta={"company": "Acme", "form": "8-K", "period": "2024-01-01"})
        result = FilingSplitter().run(documents=[doc])
        assert {c.meta["item"] for c in result["documents"]} == {"cover", "2.02"}
        assert result["documents"][-1].meta[schema.PAGE_NUMBERS] == [2]


def test_lexicon_path_is_the_lexicon_counted_and_tagged_with(tmp_path):
    from haystack_fin.core.lexicon import Lexicon, TermCluster

    lexicon = Lexicon([TermCluster("stock", "Merchandise", "balance_sheet", ("merchandise inventories",))])
    path = tmp_path / "lexicon.json"
    lexicon.to_json(path)
    splitter = FilingSplitter(lexicon_path=str(path))
    assert FilingSplitter.from_dict(splitter.to_dict()).lexicon_path == str(path)
    fixture = Path(__file__).parents[1] / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
    out = splitter.run(documents=FilingConverter().run(sources=[fixture])["documents"])
    counts = out["filing_nodes"][0].meta[schema.ITEM_TERM_COUNTS]
    assert {cluster for per_item in counts.values() for cluster in per_item} == {"stock"}
    # No statement clusters in this lexicon, so no block is tagged as a statement.
    assert not any(d.meta.get(schema.STATEMENT) for d in out["documents"])


def test_graph_meta_is_stored_and_changes_nothing_else(bestbuy_filing, bestbuy_split):
    """graph_meta (default): every chunk carries its graph entities and edges, which rebuild the graph extraction
    builds; without it the chunks are the same but for those fields and the run id, and what is embedded and
    searched (content, the embedder's text) is the same either way."""
    from haystack_fin.components.document_embedder import FinDocumentEmbedder
    from haystack_fin.core.graph.build import build_filing_graph, graph_signature
    from haystack_fin.core.lexicon import Lexicon

    on, node_on = bestbuy_split["documents"], bestbuy_split["filing_nodes"][0]
    off_out = FilingSplitter(graph_meta=False).run(documents=bestbuy_filing)
    off, node_off = off_out["documents"], off_out["filing_nodes"][0]
    assert all(set(schema.GRAPH_META_FIELDS) <= d.meta.keys() for d in on)
    assert not any(set(schema.GRAPH_META_FIELDS) & d.meta.keys() for d in off)
    assert not set(schema.GRAPH_META_FIELDS) & node_on.meta.keys()
    assert sum(len(d.meta[schema.GRAPH_EDGES]) for d in on) > 0
    # The stored entities and edges are part of what was written: another run id (caches reload, the writer
    # deletes the other run's nodes), the filing node's included.
    assert node_on.meta[schema.INDEX_RUN] != node_off.meta[schema.INDEX_RUN]
    assert {d.meta[schema.INDEX_RUN] for d in on} == {node_on.meta[schema.INDEX_RUN]}
    embedder = FinDocumentEmbedder(meta_fields_to_embed=["table_summary", "context"])
    # The same chunks, each under its run's id.
    assert [schema.parse_chunk_id(d.id) for d in on] == [schema.parse_chunk_id(d.id) for d in off]
    assert {schema.run_of_node_id(d.id) for d in off} == {node_off.meta[schema.INDEX_RUN]}
    for a, b in zip(on, off, strict=True):
        assert a.content == b.content
        assert embedder._text_to_embed(a) == embedder._text_to_embed(b)
        rest = {k: v for k, v in a.meta.items() if k not in schema.GRAPH_META_FIELDS and k != schema.INDEX_RUN}
        assert rest == {k: v for k, v in b.meta.items() if k != schema.INDEX_RUN}
    lexicon = Lexicon.load_default()

    def dicts(docs, ids):
        return [{"id": i, "content": d.content, "meta": d.meta} for i, d in zip(ids, docs, strict=True)]

    ids = [d.id for d in on]  # the graphs compared node for node
    stored, extracted = build_filing_graph(dicts(on, ids), lexicon), build_filing_graph(dicts(off, ids), lexicon)
    assert stored.from_meta and not extracted.from_meta
    assert graph_signature(stored) == graph_signature(extracted)
