"""GraphExpander alone after a plain Haystack retriever, its YAML round trip and its per-filing cache."""

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.components.graph_expander import GraphExpander
from haystack_fin.components.query_analyzer import QueryAnalyzer
from haystack_fin.core import schema
from tests.core.test_graph_build import FID, _filing


def _store(docs: list[dict] | None = None) -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d["id"], content=d["content"], meta=d["meta"]) for d in docs or _filing()])
    return store


def test_works_alone_after_a_plain_bm25_retriever() -> None:
    store = _store()
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=1))
    pipe.add_component("graph", GraphExpander(document_store=store, max_added=5))
    pipe.connect("retriever.documents", "graph.documents")
    question = "Why did the effective tax rate decrease in 2015?"
    out = pipe.run({"retriever": {"query": question}, "graph": {"query": question}})
    docs = out["graph"]["documents"]
    first = docs[0]
    assert first.id == schema.chunk_id(FID, 2)  # BM25's one hit: the MD&A paragraph
    added = {d.id: d for d in docs[1:]}
    assert added, out["graph"]["trace"]
    # The paragraph says "See Note 10": Note 10 comes in with the path that pulled it.
    note = added.get(schema.chunk_id(FID, 4))
    assert note is not None, list(added)
    path = note.meta["graph"]["path"]
    assert path[0]["type"] == "explicit" and path[0]["kind"] == "note" and path[0]["confidence"] == 0.95
    for doc in added.values():
        assert doc.meta[schema.BUDGET_K] >= 1
        assert doc.meta[schema.RETRIEVAL]["mode"] == "graph"
        assert 0.0 <= doc.meta["graph"]["score"] <= 1.0
    assert len(added) <= 5


def test_ratio_brings_the_input_statement() -> None:
    store = _store()
    expander = GraphExpander(document_store=store, max_added=2)
    start = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    out = expander.run(query="What was Netflix's FY2015 operating margin?", documents=start)
    reasons = {d.id: d.meta["graph"]["reason"] for d in out["documents"][1:]}
    assert reasons.get(schema.chunk_id(FID, 3)) == "ratio input: income_statement", reasons


def test_documents_without_filing_pass_through() -> None:
    expander = GraphExpander(document_store=_store())
    plain = [Document(content="no provenance")]
    out = expander.run(query="revenue 2015", documents=plain)
    assert out["documents"] == plain and out["trace"]["filings"] == []


def test_cache_follows_index_run() -> None:
    docs = _filing()
    store = _store(docs)
    expander = GraphExpander(document_store=store)
    hit = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    expander.run(query="provision for income taxes 2015", documents=hit)
    first = expander._cached_graph(FID)
    expander.run(query="provision for income taxes 2015", documents=hit)
    assert expander._cached_graph(FID) is first  # same index_run: reused
    rerun = [Document(id=d.id, content=d.content, meta={**d.meta, schema.INDEX_RUN: "run-2"}) for d in hit]
    expander.run(query="provision for income taxes 2015", documents=rerun)
    assert expander._cached_graph(FID) is not first


def test_yaml_round_trip() -> None:
    pipe = Pipeline()
    pipe.add_component("graph", GraphExpander(document_store=InMemoryDocumentStore(), max_added=2, max_hops=1))
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
    params = loaded.get_component("graph").to_dict()["init_parameters"]
    assert params["max_added"] == 2 and params["max_hops"] == 1 and params["entity_weight"] == 0.5
    assert loaded.dumps() == pipe.dumps()


def test_preload_builds_graphs_before_the_first_query() -> None:
    store = _store()
    expander = GraphExpander(document_store=store)
    assert expander.preload() == [FID] and expander.preload([FID]) == [FID]
    assert expander.preload(["OTHER"]) == []
    graph = expander._cached_graph(FID)
    calls = []
    original = store.filter_documents
    store.filter_documents = lambda *a, **k: calls.append(k) or original(*a, **k)  # type: ignore[method-assign]
    hit = original({"field": "meta.chunk_index", "operator": "==", "value": 2})
    out = expander.run(query="provision for income taxes 2015", documents=hit)
    assert calls == [] and expander._cached_graph(FID) is graph  # no store scan, no rebuild on the first query
    assert len(out["documents"]) > 1


def test_question_comes_from_the_analysis_when_no_query_is_given() -> None:
    store = _store()
    hit = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    question = "Why did the effective tax rate decrease in 2015?"
    analysis = QueryAnalyzer().run(query=question)["analysis"]
    by_analysis = GraphExpander(document_store=store).run(documents=hit, analysis=analysis)
    by_query = GraphExpander(document_store=store).run(documents=hit, query=question, analysis=analysis)
    assert [d.id for d in by_analysis["documents"]] == [d.id for d in by_query["documents"]]
    assert len(by_query["documents"]) > 1
    with pytest.raises(ValueError, match="needs the question"):
        GraphExpander(document_store=store).run(documents=hit)


def test_graph_from_stored_meta_or_from_text_expands_the_same() -> None:
    """A store written with the splitter's graph meta gives the graph from the meta; one written without it (an
    older index) gives it from the chunk text. Same graph, same passages added with the same paths."""
    from haystack_fin.core.graph.build import chunk_graph_meta, graph_signature
    from haystack_fin.core.lexicon import Lexicon

    plain = _filing()
    stored = chunk_graph_meta(plain, Lexicon.load_default())
    with_meta = [{**d, "meta": {**d["meta"], **stored[d["id"]]}} for d in plain]
    question = "Why did the effective tax rate decrease in 2015?"
    results = {}
    for name, docs in (("meta", with_meta), ("text", plain)):
        store = _store(docs)
        expander = GraphExpander(document_store=store, max_added=5)
        hit = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
        out = expander.run(query=question, documents=hit)
        graph = expander._cached_graph(FID)
        assert graph is not None and graph.from_meta == (name == "meta")
        added = [(d.id, d.meta["graph"]["path"], d.meta["graph"]["score"]) for d in out["documents"][1:]]
        results[name] = (graph_signature(graph), added)
        expander.clear_cache()
    assert results["meta"] == results["text"]
    assert results["meta"][1]


def test_raise_budgets_switch() -> None:
    """An added passage raises its Item's budget by what the graph added there, or keeps the incoming one."""
    store = _store()
    start = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    start = [Document(id=d.id, content=d.content, meta={**d.meta, schema.BUDGET_K: 2}) for d in start]
    question = "Why did the effective tax rate decrease in 2015?"
    raised = GraphExpander(document_store=store, max_added=3).run(query=question, documents=start)["documents"][1:]
    kept = GraphExpander(document_store=store, max_added=3, raise_budgets=False).run(query=question, documents=start)
    assert raised and [d.id for d in raised] == [d.id for d in kept["documents"][1:]]
    item = start[0].meta.get(schema.ITEM)
    same_item = [d for d in raised if d.meta.get(schema.ITEM) == item]
    assert same_item and all(d.meta[schema.BUDGET_K] > 2 for d in same_item)
    assert all(d.meta[schema.BUDGET_K] in (0, 2) for d in kept["documents"][1:])
    restored = GraphExpander.from_dict(GraphExpander(document_store=store, raise_budgets=False).to_dict())
    assert restored.raise_budgets is False


def test_added_passages_carry_their_cosine_instead_of_a_vector() -> None:
    filing = _filing()
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=d["id"], content=d["content"], meta=d["meta"], embedding=[1.0, float(i)]) for i, d in
         enumerate(filing)]
    )  # fmt: skip
    start = store.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    question = "Why did the effective tax rate decrease in 2015?"
    added = GraphExpander(document_store=store).run(query=question, documents=start, query_embedding=[1.0, 0.0])
    added_docs = added["documents"][1:]
    assert added_docs
    for doc in added_docs:
        assert doc.embedding is None and -1.0 <= doc.meta[schema.QUERY_COSINE] <= 1.0 + 1e-9
    # Asked for, or with no question vector to record a cosine against, the vector comes along.
    kept = GraphExpander(document_store=store, return_embedding=True).run(
        query=question, documents=start, query_embedding=[1.0, 0.0]
    )["documents"][1:]
    assert [d.meta[schema.QUERY_COSINE] for d in kept] == [d.meta[schema.QUERY_COSINE] for d in added_docs]
    assert all(d.embedding is not None for d in kept)
    bare = GraphExpander(document_store=store).run(query=question, documents=start)["documents"][1:]
    assert all(d.embedding is not None and schema.QUERY_COSINE not in d.meta for d in bare)
