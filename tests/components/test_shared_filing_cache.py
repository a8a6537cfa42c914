"""DualTreeRetriever and GraphExpander on one store read a cold filing once (store_registry.FilingCache)."""

import uuid

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.components.dual_tree_retriever import DualTreeRetriever
from haystack_fin.components.graph_expander import GraphExpander
from haystack_fin.components.passage_window import PassageWindow
from haystack_fin.store_registry import release_store, shared_filing_cache
from tests.components.test_dual_tree_retriever import (
    ACME,
    BETA,
    count_filter_calls,
    filing_node,
    item_documents,
    one_hot,
)
from tests.core.test_graph_build import FID, _filing


@pytest.fixture
def store() -> InMemoryDocumentStore:
    s = InMemoryDocumentStore(index=f"shared-{uuid.uuid4().hex}")
    s.write_documents([filing_node(ACME), *item_documents(ACME, "7"), filing_node(BETA), *item_documents(BETA, "7")])
    # the freshness probe needs get_documents_by_id, which InMemoryDocumentStore lacks
    s.get_documents_by_id = lambda ids: [s.storage[i] for i in ids if i in s.storage]  # type: ignore[attr-defined]  # added for the test
    yield s
    release_store(s)


def _query(retriever: DualTreeRetriever, expander: GraphExpander, fid: str) -> dict:
    found = retriever.run(query="pension", query_embedding=one_hot(5), budgets=[{"filing_id": fid, "k": 2}])
    return expander.run(documents=found["documents"], query="pension", query_embedding=one_hot(5))


def test_a_cold_filing_is_read_once_for_both_components(store):
    calls = count_filter_calls(store)
    retriever, expander = DualTreeRetriever(document_store=store), GraphExpander(document_store=store)
    out = _query(retriever, expander, ACME)
    assert len(calls) == 1, calls  # the retriever's read; the expander found the filing cached
    assert [t["filing_id"] for t in out["trace"]["filings"]] == [ACME]
    entry = retriever._filings.cached(ACME)
    assert entry is expander._filings.cached(ACME) and set(entry.views) == {"dual_tree", "graph:"}
    # one Document object per chunk, shared by both views (no copies), and no vectors on them
    chunk = next(d.id for d in entry.docs if d.meta["node_type"] == "chunk")
    assert entry.views["dual_tree"].chunks[chunk] is entry.views["graph:"].docs[chunk]
    assert all(d.embedding is None for d in entry.docs) and len(entry.vectors) == 16 + 13  # chunks + question nodes
    _query(retriever, expander, ACME)
    assert len(calls) == 1  # warm: nothing read


def test_a_new_index_run_rebuilds_both_views(store):
    calls = count_filter_calls(store)
    retriever, expander = DualTreeRetriever(document_store=store), GraphExpander(document_store=store)
    _query(retriever, expander, ACME)
    graph = expander._cached_graph(ACME)
    store.write_documents([filing_node(ACME, run="run-2")], policy=DuplicatePolicy.OVERWRITE)
    found = retriever.run(query="pension", query_embedding=one_hot(5), budgets=[{"filing_id": ACME, "k": 2}])
    assert found["trace"]["cache"]["stale"] == [ACME] and len(calls) == 2
    assert expander._cached_graph(ACME) is None  # the new entry has no graph yet: built on the expander's next use
    expander.run(documents=found["documents"], query="pension")
    assert expander._cached_graph(ACME) is not graph and len(calls) == 2


def test_the_bound_is_the_largest_cache_size_and_views_leave_with_their_entry(store):
    calls = count_filter_calls(store)
    retriever = DualTreeRetriever(document_store=store, cache_size=1)
    retriever.warm_up()
    assert retriever._filings.max_filings == 1
    for fid in (ACME, BETA, ACME):
        retriever.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": fid, "k": 1}])
    assert len(calls) == 3 and len(retriever._filings) == 1  # bounded: each switch evicts the other filing
    expander = GraphExpander(document_store=store, cache_size=2)
    expander.warm_up()
    assert retriever._filings is expander._filings and retriever._filings.max_filings == 2
    for fid in (BETA, ACME):
        retriever.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": fid, "k": 1}])
    assert len(calls) == 4 and len(retriever._filings) == 2  # BETA loaded, ACME still cached


def test_release_drops_the_cache(store):
    retriever = DualTreeRetriever(document_store=store)
    retriever.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": ACME, "k": 1}])
    cache = retriever._filings
    assert ACME in cache
    retriever.close()
    fresh = shared_filing_cache(store, 4)
    assert fresh is not cache and len(fresh) == 0


def test_expander_alone_reads_what_it_needs_and_a_retriever_then_finds_it():
    store = InMemoryDocumentStore(index=f"shared-{uuid.uuid4().hex}")
    store.write_documents([Document(id=d["id"], content=d["content"], meta=d["meta"]) for d in _filing()])
    calls = count_filter_calls(store)
    expander = GraphExpander(document_store=store)
    hit = [d for d in store.storage.values() if d.meta.get("chunk_index") == 2]
    out = expander.run(query="provision for income taxes 2015", documents=hit)
    assert len(out["documents"]) > 1 and len(calls) == 1
    cache = shared_filing_cache(store, 1)
    assert FID in cache and cache is expander._filings
    release_store(store)


def test_window_reads_neighbours_from_the_shared_cache():
    store = InMemoryDocumentStore(index=f"shared-{uuid.uuid4().hex}")
    store.write_documents([Document(id=d["id"], content=d["content"], meta=d["meta"]) for d in _filing()])
    hit = [d for d in store.storage.values() if d.meta.get("chunk_index") == 2]
    alone = PassageWindow(document_store=store, radius=2).run(documents=hit)["documents"]
    calls = count_filter_calls(store)
    expander = GraphExpander(document_store=store)
    expander.run(query="provision for income taxes 2015", documents=hit)
    assert len(calls) == 1  # the expander's load of the filing
    window = PassageWindow(document_store=store, radius=2)
    passages = window.run(documents=hit)["documents"]
    assert len(calls) == 1  # the neighbours came from the cached filing
    assert [(p.content, p.meta["window"]) for p in passages] == [(p.content, p.meta["window"]) for p in alone]
    release_store(store)
