"""FilingScope over filing nodes in an InMemoryDocumentStore (no Qdrant needed).

The 22 filing nodes carry the company, form and period values ``detect_filing_meta`` reads from the FinanceBench
open-source PDFs; the questions are our own paraphrases.
"""

import json
import uuid
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.components.filing_scope import FilingScope
from haystack_fin.store_registry import release_store

# filing_id, company, ticker, form, fiscal_year, fiscal_quarter, period_end, period, items (shared with the other
# scope tests: tests/fixtures/filing_profiles.json)
FILINGS = [
    (*row[:8], tuple(row[8]))
    for row in json.loads((Path(__file__).parents[1] / "fixtures" / "filing_profiles.json").read_text())["rows"]
]
ALL_IDS = {row[0] for row in FILINGS}


def filing_node(fid, company, ticker, form, fiscal_year, fiscal_quarter, period_end, period, items) -> Document:
    """A filing node shaped like FilingSplitter's: one per filing, meta node_type="filing"."""
    meta = {
        "node_type": "filing",
        "filing_id": fid,
        "company": company,
        "form": form,
        "period": period,
        "fiscal_year": fiscal_year,
        "fiscal_quarter": fiscal_quarter,
        "period_end": period_end,
        "ticker": ticker,
        "items": [{"item": "cover", "title": "Cover page and table of contents"}]
        + [{"item": code, "title": "", "start_page": 1, "end_page": 1} for code in items],
        "n_pages": 10,
    }
    return Document(id=f"{fid}#filing", content=f"{company} {form} {period}", meta=meta)


def chunk(fid: str) -> Document:
    return Document(id=f"{fid}#chunk-00000", content="Revenue grew.", meta={"node_type": "chunk", "filing_id": fid})


@pytest.fixture
def store() -> InMemoryDocumentStore:
    s = InMemoryDocumentStore()
    s.write_documents([filing_node(*row) for row in FILINGS] + [chunk(row[0]) for row in FILINGS])
    return s


class CountingStore(InMemoryDocumentStore):
    """Counts filter_documents calls (to check caching and that __init__ does no I/O)."""

    calls = 0

    def filter_documents(self, filters=None):
        type(self).calls += 1
        return super().filter_documents(filters)


class TestFilingScope:
    def test_init_defaults(self, store):
        scope = FilingScope(document_store=store)
        assert scope.document_store is store
        assert scope.max_filings == 3
        assert scope.aliases is None

    def test_init_does_no_io(self):
        CountingStore.calls = 0
        FilingScope(document_store=CountingStore())
        assert CountingStore.calls == 0

    @pytest.mark.parametrize("bad", [0, -1, 1.5])
    def test_init_rejects_bad_max_filings(self, store, bad):
        with pytest.raises(ValueError, match="max_filings"):
            FilingScope(document_store=store, max_filings=bad)

    def test_init_rejects_bad_aliases(self, store):
        with pytest.raises(ValueError, match="aliases"):
            FilingScope(document_store=store, aliases={"KO": "coke"})

    def test_to_dict(self, store):
        # No to_dict of its own: every init argument is a same-named attribute, which Haystack serializes.
        d = component_to_dict(FilingScope(document_store=store, max_filings=2, aliases={"KO": ["coke"]}), "scope")
        assert d["type"] == "haystack_fin.components.filing_scope.FilingScope"
        params = d["init_parameters"]
        assert params["max_filings"] == 2
        assert params["aliases"] == {"KO": ["coke"]}
        assert params["document_store"]["type"].endswith("InMemoryDocumentStore")

    def test_from_dict(self, store):
        scope = FilingScope(document_store=store, max_filings=2, aliases={"KO": ["coke"]})
        restored = component_from_dict(FilingScope, component_to_dict(scope, "scope"), "scope")
        assert isinstance(restored.document_store, InMemoryDocumentStore)
        assert (restored.max_filings, restored.aliases) == (2, {"KO": ["coke"]})

    def test_pipeline_yaml_roundtrip(self, store):
        pipe = Pipeline()
        pipe.add_component("scope", FilingScope(document_store=store))
        loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        assert loaded.to_dict() == pipe.to_dict()

    def test_warm_up_is_idempotent_and_caches_profiles(self):
        CountingStore.calls = 0
        counting = CountingStore()
        counting.write_documents([filing_node(*row) for row in FILINGS])
        scope = FilingScope(document_store=counting)
        scope.warm_up()
        reads = CountingStore.calls  # profile nodes, then (none here) the filing nodes
        scope.warm_up()
        scope.run(query="What was Netflix's FY2015 revenue?")
        scope.run(query="What was Netflix's FY2017 revenue?")
        assert CountingStore.calls == reads <= 2
        assert len(scope.profiles) == 22  # chunks are not read as profiles

    def test_profile_nodes_are_read_instead_of_filing_nodes(self):
        from haystack_fin.components.filing_splitter import FilingSplitter

        nodes = [filing_node(*row) for row in FILINGS]
        store = InMemoryDocumentStore()
        store.write_documents([*nodes, *(FilingSplitter.profile_node(n) for n in nodes)])
        profiles = FilingScope(document_store=store).profiles
        assert len(profiles) == 22
        assert "5.07" in next(p for p in profiles if p.filing_id == "PEPSICO_2023_8K_dated-2023-05-05").items
        result = FilingScope(document_store=store).run(query="How did PepsiCo shareholders vote on May 3, 2023?")
        assert result["filing_ids"] == ["PEPSICO_2023_8K_dated-2023-05-05"]

    def test_run_scopes_to_the_asked_filing(self, store):
        result = FilingScope(document_store=store).run(query="Is Best Buy's quick ratio healthy as of Q2 FY2024?")
        assert result["filing_ids"] == ["BESTBUY_2024Q2_10Q"]
        assert result["filters"] == {"field": "meta.filing_id", "operator": "in", "value": ["BESTBUY_2024Q2_10Q"]}
        assert result["scope"]["scoped"] is True
        assert "Q2 matched fiscal_quarter=2" in result["scope"]["matches"][0]["reasons"]
        json.dumps(result["scope"])

    def test_filters_select_the_chunks_of_the_scope(self, store):
        result = FilingScope(document_store=store).run(query="How did PepsiCo shareholders vote on May 3, 2023?")
        chunks = store.filter_documents(
            {"operator": "AND", "conditions": [result["filters"], {"field": "meta.node_type", "operator": "==",
                                                                   "value": "chunk"}]}
        )  # fmt: skip
        assert [d.meta["filing_id"] for d in chunks] == ["PEPSICO_2023_8K_dated-2023-05-05"]

    def test_run_year_disambiguation_and_ranking(self, store):
        scope = FilingScope(document_store=store)
        assert scope.run(query="What were Verizon's derivatives in FY 2021?")["filing_ids"] == ["VERIZON_2021_10K"]
        assert scope.run(query="How much did Pepsico spend on buybacks in 2022?")["filing_ids"] == ["PEPSICO_2022_10K"]
        assert scope.run(query="Which MGM region grew most in FY2022?")["filing_ids"] == [
            "MGMRESORTS_2022_10K",
            "MGMRESORTS_2022Q4_EARNINGS",
        ]

    def test_max_filings(self, store):
        result = FilingScope(document_store=store, max_filings=1).run(query="How did MGM's debt evolve?")
        assert result["filing_ids"] == ["MGMRESORTS_2022_10K"]

    def test_run_override(self, store):
        result = FilingScope(document_store=store).run(
            query="What was Best Buy's FY2019 revenue?", filing_ids=["NETFLIX_2015_10K"]
        )
        assert result["filing_ids"] == ["NETFLIX_2015_10K"]
        assert result["filters"]["value"] == ["NETFLIX_2015_10K"]
        assert result["scope"]["reason"].startswith("explicit filing filter")

    def test_run_unscoped_returns_every_filing(self, store):
        question = "What is the quick ratio in FY2022?"
        # the default bounds it (10 of the 22 filings here, by period and form without a vector)
        assert len(FilingScope(document_store=store).run(query=question)["filing_ids"]) == 10
        result = FilingScope(document_store=store, unscoped_max_filings=None).run(query=question)
        assert set(result["filing_ids"]) == ALL_IDS
        assert set(result["filters"]["value"]) == ALL_IDS
        assert result["scope"]["scoped"] is False
        assert "no company mentioned" in result["scope"]["reason"]

    def test_run_typo_and_ticker(self, store):
        scope = FilingScope(document_store=store)
        assert scope.run(query="What was Netflx's FY2017 revenue?")["filing_ids"] == ["NETFLIX_2017_10K"]
        assert scope.run(query="MSFT operating margin in fiscal 2023")["filing_ids"] == ["MICROSOFT_2023_10K"]

    def test_aliases(self, store):
        scope = FilingScope(document_store=store, aliases={"THE COCA-COLA COMPANY": ["Coke"]})
        result = scope.run(query="What was Coke's return on assets in FY2017?")
        assert result["filing_ids"] == ["COCACOLA_2017_10K"]
        assert result["scope"]["companies"][0]["how"] == "alias"

    def test_refresh_reads_new_filings(self, store):
        scope = FilingScope(document_store=store)
        question = "What did Netflix report for FY2019?"
        assert scope.run(query=question)["filing_ids"][0] == "NETFLIX_2017_10K"
        store.write_documents(
            [filing_node("NETFLIX_2019_10K", "Netflix, Inc.", "NFLX", "10-K", 2019, None, "2019-12-31", "FY2019", ())]
        )
        assert scope.run(query=question)["filing_ids"][0] == "NETFLIX_2017_10K"  # cached
        assert scope.run(query=question, refresh=True)["filing_ids"] == ["NETFLIX_2019_10K"]

    def test_empty_store(self):
        result = FilingScope(document_store=InMemoryDocumentStore()).run(query="What was Netflix's revenue?")
        assert result["filing_ids"] == [] and result["filters"] == {}
        assert result["scope"]["scoped"] is False

    def test_in_pipeline(self, store):
        pipe = Pipeline()
        pipe.add_component("scope", FilingScope(document_store=store))
        out = pipe.run({"scope": {"query": "Did MGM Resorts' revenue grow in Q4 2022 per its earnings release?"}})
        assert out["scope"]["filing_ids"] == ["MGMRESORTS_2022Q4_EARNINGS"]

    def test_connects_to_a_retriever(self, store):
        pipe = Pipeline()
        pipe.add_component("scope", FilingScope(document_store=store))
        pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=5))
        pipe.connect("scope.filters", "retriever.filters")
        question = "How did Netflix's revenue grow in FY2015?"
        out = pipe.run({"scope": {"query": question}, "retriever": {"query": question}})
        assert {d.meta["filing_id"] for d in out["retriever"]["documents"]} == {"NETFLIX_2015_10K"}

    def test_docstring_example(self):
        store = InMemoryDocumentStore()
        store.write_documents(
            [
                Document(id="BBY-2023#filing", content="", meta={"node_type": "filing", "filing_id": "BBY-2023",
                         "company": "BEST BUY CO., INC.", "form": "10-K", "fiscal_year": 2023, "period": "FY2023"}),
                Document(id="BBY-2024Q2#filing", content="", meta={"node_type": "filing", "filing_id": "BBY-2024Q2",
                         "company": "BEST BUY CO., INC.", "form": "10-Q", "fiscal_year": 2024, "fiscal_quarter": 2}),
            ]
        )  # fmt: skip
        result = FilingScope(document_store=store).run(query="Is Best Buy's quick ratio healthy as of Q2 FY2024?")
        assert result["filing_ids"] == ["BBY-2024Q2"]
        assert result["filters"] == {"field": "meta.filing_id", "operator": "in", "value": ["BBY-2024Q2"]}


@pytest.mark.parametrize(
    "question",
    [
        "Is Best Buy's quick ratio healthy as of Q2 FY2024?",
        "How did PepsiCo shareholders vote on May 3, 2023?",
        "Did MGM Resorts' revenue grow in Q4 2022 per its earnings release?",
        "What is the quick ratio in FY2022?",
        "How did MGM's debt evolve?",
    ],
)
def test_same_scope_with_the_query_analyzers_analysis(store, monkeypatch, question):
    from haystack_fin.components.query_analyzer import QueryAnalyzer
    from haystack_fin.core.retrieval import filing_ranking

    scope = FilingScope(document_store=store)
    alone = scope.run(query=question)
    analysis = QueryAnalyzer().run(query=question)["analysis"]

    def not_again(_question):
        raise AssertionError("the question was analysed again")

    monkeypatch.setattr(filing_ranking, "parse_question_scope", not_again)
    monkeypatch.setattr(filing_ranking, "question_event_topics", not_again)
    assert scope.run(query=question, analysis=analysis) == alone


def test_an_unscoped_question_in_a_large_index_is_bounded_by_its_nearest_chunks():
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    docs = []
    for n in range(12):
        fid = f"CO{n}_2022_10K"
        meta = {"node_type": "filing", "filing_id": fid, "company": f"Company {n} Inc.", "form": "10-K"}
        docs.append(Document(id=f"{fid}#filing", content="", meta={**meta, "fiscal_year": 2022, "period": "FY2022"}))
        vector = [1.0 if i == n else 0.0 for i in range(12)]
        docs.append(
            Document(
                id=f"{fid}#chunk-00000", content="text", embedding=vector, meta={"node_type": "chunk", "filing_id": fid}
            )
        )
    store.write_documents(docs)
    question = "Which filer reported the largest goodwill impairment?"
    unbounded = FilingScope(document_store=store, unscoped_max_filings=None).run(query=question)
    assert len(unbounded["filing_ids"]) == 12
    scope = FilingScope(document_store=store, unscoped_max_filings=3)
    near = [0.0] * 12
    near[7], near[2] = 1.0, 0.5
    out = scope.run(query=question, query_embedding=near)
    assert out["filing_ids"][:2] == ["CO7_2022_10K", "CO2_2022_10K"] and len(out["filing_ids"]) == 3
    assert "bounded to 3 of 12 filings" in out["scope"]["reason"]
    # without a vector, period and form alone pick the three
    assert len(scope.run(query=question)["filing_ids"]) == 3
    # a question naming a company is not affected
    assert scope.run(query="What did Company 4 earn?", query_embedding=near)["filing_ids"] == ["CO4_2022_10K"]
    with pytest.raises(ValueError, match="unscoped_max_filings"):
        FilingScope(document_store=store, unscoped_max_filings=0)


def test_in_a_store_with_more_filing_vectors_than_candidates_only_the_candidates_chunks_vote():
    """The unscoped search reads the filing vectors first; only the nearest filings' chunks are then searched."""
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_fin.components.dense_filing_scope import DenseFilingScope

    def unit(i: int) -> list[float]:
        return [1.0 if j == i else 0.0 for j in range(12)]

    docs = []
    for n in range(12):
        fid = f"CO{n}_2022_10K"
        meta = {"node_type": "filing", "filing_id": fid, "company": f"Company {n} Inc.", "form": "10-K"}
        # CO2's chunk is near the question but its filing as a whole (its filing vector) is not
        filing_vector = unit(11) if n == 2 else unit(n)
        docs.append(
            Document(
                id=f"{fid}#filing",
                content="",
                embedding=filing_vector,
                meta={**meta, "fiscal_year": 2022, "period": "FY2022"},
            )
        )
        docs.append(
            Document(
                id=f"{fid}#chunk-00000", content="t", embedding=unit(n), meta={"node_type": "chunk", "filing_id": fid}
            )
        )
    store = InMemoryDocumentStore()
    store.write_documents(docs)
    near = [0.0] * 12
    near[7], near[2], near[3] = 1.0, 0.5, 0.2
    question = "Which filer reported the largest goodwill impairment?"

    def nearest_by_chunks(candidates: int | None) -> tuple[str, list[str]]:
        scope = FilingScope(document_store=store, unscoped_max_filings=3, unscoped_candidate_filings=candidates)
        out = scope.run(query=question, query_embedding=near)
        return out["scope"]["reason"], out["filing_ids"]

    reason, every_chunk = nearest_by_chunks(None)
    assert every_chunk == ["CO7_2022_10K", "CO2_2022_10K", "CO3_2022_10K"]
    assert "3 by the nearest chunks" in reason
    # 12 filing vectors, 2 candidates: CO7 and CO3 are the filings nearest by filing vector; CO2 is not searched
    reason, two = nearest_by_chunks(2)
    assert two[:2] == ["CO7_2022_10K", "CO3_2022_10K"] and "2 by the nearest chunks" in reason
    # fewer filing vectors than candidates (a small store, or one written without them): every chunk is searched
    assert nearest_by_chunks(64)[1] == every_chunk
    dense = DenseFilingScope(document_store=store, top_k=5, max_filings=3, candidate_filings=2).run(
        query_embedding=near
    )
    assert dense["filing_ids"] == ["CO7_2022_10K", "CO3_2022_10K"]
    assert "among the 2 filings nearest by filing vector" in dense["scope"]["reason"]
    assert (
        DenseFilingScope.from_dict(
            DenseFilingScope(document_store=store, candidate_filings=5).to_dict()
        ).candidate_filings
        == 5
    )
    with pytest.raises(ValueError, match="unscoped_candidate_filings"):
        FilingScope(document_store=store, unscoped_candidate_filings=0)


@pytest.mark.parametrize(("refresh_seconds", "sees_new"), [(0.0, True), (None, False)], ids=["ttl-0", "no-ttl"])
def test_a_filing_indexed_after_start_is_seen_after_refresh_seconds(refresh_seconds, sees_new):
    """A long-running server: the profiles are re-read once they are older than ``refresh_seconds``."""
    store = InMemoryDocumentStore(index=f"fs-{uuid.uuid4().hex}")
    node = {"node_type": "filing", "form": "10-K", "fiscal_year": 2023, "period": "FY2023"}
    store.write_documents(
        [Document(id="A#filing", content="", meta={**node, "filing_id": "A", "company": "ACME CORP"})]
    )
    scope = FilingScope(document_store=store, refresh_seconds=refresh_seconds)
    assert scope.run(query="What was Acme's revenue?")["filing_ids"] == ["A"]
    store.write_documents([Document(id="B#filing", content="", meta={**node, "filing_id": "B", "company": "BETA INC"})])
    found = scope.run(query="What was Beta's revenue?")["filing_ids"]
    assert (found == ["B"]) is sees_new
    release_store(store)


def _bby_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(index=f"fs-{uuid.uuid4().hex}")
    meta = {"node_type": "filing", "filing_id": "BBY", "company": "BEST BUY CO., INC.", "ticker": "BBY",
            "form": "10-Q", "fiscal_year": 2024, "fiscal_quarter": 2, "period": "FY2024 Q2"}  # fmt: skip
    store.write_documents([Document(id="BBY#filing", content="", meta=meta)])
    return store


REFERENCE = str(Path(__file__).parents[1] / "fixtures" / "company_tickers_sample.csv")


def test_a_company_the_index_lacks_scopes_to_no_filing():
    """Apple asked of a Best Buy index: no filing in scope (not Best Buy's passages), and the notice names it."""
    store = _bby_store()
    scope = FilingScope(document_store=store, company_reference=REFERENCE)
    out = scope.run(query="What was Apple's revenue in fiscal 2019?")
    assert out["filing_ids"] == [] and out["filters"] == {}
    assert out["scope"]["reason"] == (
        "no indexed filing matches: Apple Inc. (AAPL), a listed company, has no indexed filing"
    )
    assert out["scope"]["not_indexed"][0]["ticker"] == "AAPL"
    assert scope.run(query="What was AAPL's revenue in fiscal 2019?")["filing_ids"] == []
    # an explicit scope is the caller's choice, and a named indexed company keeps its filings
    assert scope.run(query="Apple's revenue?", filing_ids=["BBY"])["filing_ids"] == ["BBY"]
    both = scope.run(query="Did Best Buy sell more than Apple?")
    assert both["filing_ids"] == ["BBY"]
    assert [u["status"] for u in both["scope"]["unmatched"]] == ["not_indexed"]
    release_store(store)


def test_an_unknown_name_falls_back_with_a_notice():
    """A name neither indexed nor known: the filings are ranked as for a question naming no company (the dense
    ranking when the question's vector is given), never none, and the reason says so."""
    store = _bby_store()
    for reference in (REFERENCE, None):  # without a reference table, Apple too is just a name
        scope = FilingScope(document_store=store, company_reference=reference)
        out = scope.run(query="What was Zorblax Dynamics' revenue in fiscal 2024?")
        assert out["filing_ids"] == ["BBY"]
        assert "'Zorblax Dynamics' names no indexed or known company" in out["scope"]["reason"] or reference is None
    unknown = FilingScope(document_store=store, company_reference=None).run(query="What was Apple's revenue?")
    assert unknown["filing_ids"] == ["BBY"] and unknown["scope"]["unmatched"][0]["status"] == "unknown"
    release_store(store)


def test_aliases_path_and_rule_in_the_explanation(tmp_path):
    store = _bby_store()
    path = tmp_path / "aliases.yaml"
    path.write_text('"BEST BUY CO., INC.": [Geek Squad owner]\n')
    scope = FilingScope(document_store=store, aliases_path=str(path), company_reference=None)
    out = scope.run(query="What did the Geek Squad owner earn in Q2 FY2024?")
    assert out["filing_ids"] == ["BBY"]
    assert out["scope"]["companies"][0]["rule"] == (
        "company 'Geek Squad owner' matched user alias 'Geek Squad owner' of BEST BUY CO., INC."
    )
    assert FilingScope.from_dict(scope.to_dict()).aliases_path == str(path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just a list\n")
    with pytest.raises(ValueError, match=r"bad\.yaml"):
        FilingScope(document_store=store, aliases_path=str(bad)).warm_up()
    release_store(store)


def test_a_segment_name_is_no_company_notice():
    store = _bby_store()
    out = FilingScope(document_store=store).run(query="What was Domestic segment revenue?")
    assert out["filing_ids"] == ["BBY"] and out["scope"]["unmatched"] == []
    release_store(store)
