import json

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.components.flam_router import FlamRouter, budget_filters
from haystack_fin.components.query_analyzer import QueryAnalyzer
from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.flam import ItemBudget

ROUTER_TYPE = "haystack_fin.components.flam_router.FlamRouter"


def _filing_node(filing_id: str, counts: dict, totals: dict, chunks: dict, form: str = "10-K") -> Document:
    return Document(
        id=f"{filing_id}#filing",
        content=f"{filing_id} {form}",
        meta={
            "node_type": "filing",
            "filing_id": filing_id,
            "form": form,
            "items": [{"item": item, "title": f"Item {item}", "n_chunks": n} for item, n in chunks.items()],
            "item_term_counts": counts,
            "item_term_totals": totals,
        },
    )


def _chunk(filing_id: str, item: str, text: str, embedding: list[float]) -> Document:
    return Document(
        id=f"{filing_id}#{item}#{text[:12]}",
        content=text,
        embedding=embedding,
        meta={"node_type": "chunk", "filing_id": filing_id, "item": item},
    )


@pytest.fixture
def store() -> InMemoryDocumentStore:
    """Two small filings: the capex question belongs to Item 8 of each; Item 1A talks about the same words less."""
    store = InMemoryDocumentStore()
    counts = {"cover": {"capex": 2}, "1A": {"capex": 1, "inflation": 9}, "7": {"capex": 2}, "8": {"capex": 12}}
    totals = {"cover": 30, "1A": 200, "7": 300, "8": 150}
    chunks = {"cover": 1, "1A": 1, "7": 1, "8": 2}
    store.write_documents(
        [
            _filing_node("acme-2023", counts, totals, chunks),
            _filing_node("acme-2022", counts, totals, chunks),
            _chunk("acme-2023", "cover", "Table of contents: capital expenditures, capex", [1.0, 0.0, 0.0]),
            _chunk("acme-2023", "1A", "Capex plans may change if inflation persists", [0.9, 0.1, 0.0]),
            _chunk("acme-2023", "7", "Capex rose because of new stores", [0.8, 0.2, 0.0]),
            _chunk("acme-2023", "8", "Capex: purchases of property and equipment 1,200", [0.7, 0.3, 0.0]),
            _chunk("acme-2023", "8", "Capex by segment: retail 800, online 400", [0.6, 0.4, 0.0]),
            _chunk("acme-2022", "8", "Capex: purchases of property and equipment 1,100", [0.5, 0.5, 0.0]),
            _chunk("acme-2022", "1A", "Capex risk factors", [0.95, 0.05, 0.0]),
        ]
    )
    return store


class TestFlamRouter:
    def test_init_defaults(self, store):
        router = FlamRouter(document_store=store)
        assert (router.top_k, router.mode, router.temperature) == (5, "relative", 1.0)
        assert router._store is None  # nothing connected before warm_up

    def test_the_lexicon_is_the_analyzers(self, store):
        with pytest.raises(TypeError, match="lexicon_path"):
            FlamRouter(document_store=store, lexicon_path="lex.json")  # type: ignore[call-arg]  # removed parameter

    @pytest.mark.parametrize(
        "kwargs",
        [{"top_k": 0}, {"top_k": 2.5}, {"mode": "bm25"}, {"temperature": 0.0}, {"smoothing": -1.0}],
    )
    def test_init_invalid(self, store, kwargs):
        with pytest.raises(ValueError):
            FlamRouter(document_store=store, **kwargs)

    def test_to_dict(self, store):
        router = FlamRouter(document_store=store, top_k=7, mode="log")
        data = component_to_dict(router, "router")
        assert data["type"] == ROUTER_TYPE
        params = data["init_parameters"]
        assert params["document_store"]["type"].endswith("InMemoryDocumentStore")
        assert {k: params[k] for k in ("top_k", "mode", "temperature", "idf")} == {
            "top_k": 7,
            "mode": "log",
            "temperature": 1.0,
            "idf": False,
        }
        assert "lexicon_path" not in params and "finrad_csv" not in params

    def test_from_dict(self, store):
        data = component_to_dict(FlamRouter(document_store=store, mode="softmax", temperature=0.5), "router")
        router = component_from_dict(FlamRouter, data, "router")
        assert (router.mode, router.temperature) == ("softmax", 0.5)
        assert isinstance(router.document_store, InMemoryDocumentStore)

    def test_pipeline_round_trip(self, store):
        pipe = Pipeline()
        pipe.add_component("router", FlamRouter(document_store=store, top_k=4, mode="log"))
        loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        assert loaded.to_dict() == pipe.to_dict()

    def test_warm_up_is_idempotent(self, store):
        router = FlamRouter(document_store=store)
        router.warm_up()
        connected = router._store
        router.warm_up()
        assert router._store is connected

    def test_run_single_filing(self, store):
        result = FlamRouter(document_store=store, top_k=4).run("What was capex?", filing_ids=["acme-2023"])
        # capex per Item: 1A 1/(200+10), 7 2/(300+10), 8 12/(150+10) -> Item 8 weighs 0.87: 3.48 units, rounded to 4.
        assert result["budgets"] == [
            {"filing_id": "acme-2023", "item": "8", "k": 4, "weight": pytest.approx(0.87, abs=0.01)}
        ]
        routing = result["routing"]
        assert json.loads(json.dumps(routing)) == routing
        assert routing["terms"][0]["cluster"] == "capex" and routing["clusters"]["capex"] == "Capital expenditures"
        assert max(routing["item_weights"]["acme-2023"], key=routing["item_weights"]["acme-2023"].get) == "8"

    def test_run_splits_budget_across_filings_in_scope_order(self, store):
        result = FlamRouter(document_store=store, top_k=5).run("capex", filing_ids=["acme-2022", "acme-2023"])
        per_filing: dict[str, int] = {}
        for budget in result["budgets"]:
            per_filing[budget["filing_id"]] = per_filing.get(budget["filing_id"], 0) + budget["k"]
        assert per_filing == {"acme-2022": 3, "acme-2023": 2}
        assert sum(b["weight"] for b in result["budgets"]) <= 1.0 + 1e-6

    def test_run_all_filings_and_top_k_override(self, store):
        result = FlamRouter(document_store=store, top_k=5).run("capex", top_k=2)
        assert sum(b["k"] for b in result["budgets"]) == 2
        assert {b["filing_id"] for b in result["budgets"]} == {"acme-2022", "acme-2023"}

    def test_run_without_filing_nodes(self):
        router = FlamRouter(document_store=InMemoryDocumentStore())
        assert router.run("capex")["filters"] is None
        scoped = router.run("capex", filing_ids=["other"])
        assert scoped["budgets"] == []
        assert scoped["filters"]["conditions"][1] == {"field": "meta.filing_id", "operator": "in", "value": ["other"]}

    def test_run_without_terms_is_uniform(self, store):
        result = FlamRouter(document_store=store, top_k=3).run(
            "Tell me about the weather in Paris.", filing_ids=["acme-2023"]
        )
        assert result["routing"]["filings"][0]["basis"] == "uniform"
        assert [b["item"] for b in result["budgets"]] == ["1A", "7", "8"]

    def test_the_analyzers_custom_lexicon_and_finrad_csv_reach_the_router(self, store, tmp_path):
        lexicon = Lexicon([TermCluster("capex", "Capex", "cash_flow", ("capex",), {"10-K": ("8",)})])
        lexicon_path = tmp_path / "lexicon.json"
        lexicon.to_json(lexicon_path)
        csv_path = tmp_path / "finrad.csv"
        csv_path.write_text("terms,definitions\ncapex; capital outlays,Money spent on fixed assets\n", encoding="utf-8")
        analyzer = QueryAnalyzer(lexicon_path=str(lexicon_path), finrad_csv=str(csv_path))
        question = "How large were capital outlays?"
        analysis = analyzer.run(query=question)["analysis"]
        result = FlamRouter(document_store=store).run(question, filing_ids=["acme-2023"], analysis=analysis)
        assert [t["cluster"] for t in result["routing"]["terms"]] == ["capex"]  # FinRAD synonym, existing id


class TestBudgetFilters:
    def test_or_of_ands(self):
        budgets = [ItemBudget("a", "7", 2, 0.4), ItemBudget("a", "8", 1, 0.2), ItemBudget("b", "8", 2, 0.4)]
        filters = budget_filters(budgets)
        chunk, routed = filters["conditions"]
        assert chunk == {"field": "meta.node_type", "operator": "==", "value": "chunk"}
        assert routed["operator"] == "OR"
        assert routed["conditions"][0]["conditions"] == [
            {"field": "meta.filing_id", "operator": "==", "value": "a"},
            {"field": "meta.item", "operator": "in", "value": ["7", "8"]},
        ]

    def test_single_filing_has_no_or(self):
        routed = budget_filters([ItemBudget("a", "8", 3, 1.0)])["conditions"][1]
        assert routed["operator"] == "AND"

    def test_nothing_routed(self):
        assert budget_filters([]) is None
        assert budget_filters([], ["a"])["conditions"][1]["value"] == ["a"]


class TestPlainPipeline:
    def test_filters_feed_a_bm25_retriever(self, store):
        pipe = Pipeline()
        pipe.add_component("router", FlamRouter(document_store=store, top_k=3))
        pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=10))
        pipe.connect("router.filters", "retriever.filters")
        query = "What was capex?"
        result = pipe.run({"router": {"query": query, "filing_ids": ["acme-2023"]}, "retriever": {"query": query}})
        documents = result["retriever"]["documents"]
        assert documents
        assert {(d.meta["filing_id"], d.meta["item"]) for d in documents} <= {("acme-2023", "8"), ("acme-2023", "7")}
        assert all(d.meta["node_type"] == "chunk" for d in documents)
        assert result["router"]["budgets"]

    def test_filters_feed_an_embedding_retriever(self, store):
        pipe = Pipeline()
        pipe.add_component("router", FlamRouter(document_store=store, top_k=2))
        pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=10))
        pipe.connect("router.filters", "retriever.filters")
        result = pipe.run({"router": {"query": "capex"}, "retriever": {"query_embedding": [1.0, 0.0, 0.0]}})
        documents = result["retriever"]["documents"]
        # The nearest chunks (cover, Item 1A) are outside the routed Items; only Item 8 chunks come back.
        assert documents and {d.meta["item"] for d in documents} == {"8"}
        assert {d.meta["filing_id"] for d in documents} == {"acme-2022", "acme-2023"}

    def test_yaml_pipeline_runs(self, store):
        pipe = Pipeline()
        pipe.add_component("router", FlamRouter(document_store=store, top_k=2))
        pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store))
        pipe.connect("router.filters", "retriever.filters")
        loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        result = loaded.run({"router": {"query": "capex"}, "retriever": {"query": "capex"}})
        assert {d.meta["item"] for d in result["retriever"]["documents"]} == {"8"}


@pytest.mark.parametrize("mode", ["relative", "log", "uniform"])
@pytest.mark.parametrize(
    ("question", "filing_ids"),
    [
        ("What was capex?", ["acme-2023"]),
        ("How did capital expenditures and inflation develop?", ["acme-2023", "acme-2022"]),
        ("What did we spend on capex?", ["acme-2023", "no-counts"]),  # Item priors: the filing has no term counts
        ("Tell me about the weather in Paris.", None),
    ],
)
def test_same_routing_with_the_query_analyzers_analysis(store, monkeypatch, mode, question, filing_ids):
    from haystack_fin.components.query_analyzer import QueryAnalyzer
    from haystack_fin.core.retrieval import flam

    store.write_documents([_filing_node("no-counts", {}, {}, {"1A": 1, "7": 1, "8": 1})])
    router = FlamRouter(document_store=store, top_k=6, mode=mode)
    alone = router.run(question, filing_ids=filing_ids)
    analysis = QueryAnalyzer().run(query=question)["analysis"]

    def not_again(*_args, **_kwargs):
        raise AssertionError("the question was analysed again")

    monkeypatch.setattr(flam, "detect_query_clusters", not_again)
    assert router.run(question, filing_ids=filing_ids, analysis=analysis) == alone
    if filing_ids and "no-counts" in filing_ids and mode != "uniform":
        assert alone["routing"]["filings"][1]["basis"] == "item_priors"  # the priors path is exercised


def test_sections_below_the_routed_item_from_the_filing_nodes_section_statistics(store):
    """Item 8 of acme-2024 reports capex in its cash-flow note: 9 of its 20 lexicon terms, against 12 of 150 for
    the Item as a whole; its other notes mention capex in passing or not at all."""
    node = _filing_node("acme-2024", {"8": {"capex": 12}}, {"8": 150}, {"8": 2})
    node.meta["section_term_counts"] = {
        "8": {"NOTE 5: CASH FLOW INFORMATION": {"capex": 9, "cash": 11}, "NOTE 2: REVENUE": {"capex": 1, "revenue": 40}}
    }
    node.meta["section_term_totals"] = {"8": {"NOTE 5: CASH FLOW INFORMATION": 20, "NOTE 2: REVENUE": 41}}
    store.write_documents([node])
    result = FlamRouter(document_store=store, top_k=3, route_sections=True).run("What was capex?", ["acme-2024"])
    # 9 / (20 + 10) = 0.3 > 12 / (150 + 10) = 0.075 > 1 / (41 + 10): the cash-flow note gets the Item's 3 passages.
    assert result["budgets"] == [
        {
            "filing_id": "acme-2024",
            "item": "8",
            "k": 3,
            "weight": 1.0,
            "sections": [{"section": "NOTE 5: CASH FLOW INFORMATION", "score": 0.3, "count": 9, "total": 20, "k": 3}],
        }
    ]
    assert result["routing"]["sections"] == {"acme-2024": {"8": result["budgets"][0]["sections"]}}
    assert result["filters"] == budget_filters([ItemBudget("acme-2024", "8", 3, 1.0)])  # the Items' filter only
    off = FlamRouter(document_store=store, top_k=3).run("What was capex?", ["acme-2024"])  # the default: off
    assert off["budgets"] == [{"filing_id": "acme-2024", "item": "8", "k": 3, "weight": 1.0}]
    assert "sections" not in off["routing"]
    restored = component_from_dict(FlamRouter, component_to_dict(FlamRouter(store, route_sections=True), "r"), "r")
    assert restored.route_sections is True and FlamRouter(store).route_sections is False


def test_filing_nodes_without_section_statistics_route_as_before(store):
    # The fixture's filing nodes were written before section statistics existed: no budget names a section.
    result = FlamRouter(document_store=store, top_k=5).run("capex", filing_ids=["acme-2022", "acme-2023"])
    assert result["budgets"] and all(set(b) == {"filing_id", "item", "k", "weight"} for b in result["budgets"])
    assert "sections" not in result["routing"]
