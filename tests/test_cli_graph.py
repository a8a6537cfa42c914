"""`haystack-fin graph` on a small fixture store and the graph paths of `ask --explain`. Stores are written directly
(chunks of the Netflix-like fixture filing of tests/core/test_graph_build.py, no embedding model)."""

import json
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.cli import main
from haystack_fin.components.graph_expander import GraphExpander
from haystack_fin.core import schema
from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from haystack_fin.query_runner import QueryResult
from tests.core.test_graph_build import FID, _filing

DIM = 384


def _docs() -> list[Document]:
    return [
        Document(id=d["id"], content=d["content"], meta=d["meta"], embedding=[1.0] + [0.0] * (DIM - 1))
        for d in _filing()
    ]


@pytest.fixture
def graph_store(tmp_path) -> Path:
    path = tmp_path / "idx"
    store = QdrantEdgeDocumentStore(path=str(path), index="haystack_fin", embedding_dim=DIM)
    store.write_documents(_docs())
    store.close()
    return path


def test_graph_json_exports_counts_and_adjacency(graph_store, capsys) -> None:
    assert main(["graph", "--store", str(graph_store), "--filing", FID, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["filing_id"] == FID and out["item"] is None
    counts = out["counts"]
    assert counts["nodes"]["chunk"] == 6 and counts["facts"] == counts["nodes"]["fact"] > 0
    assert counts["edges"]["explicit"] == 3 and counts["edge_kinds"]["explicit/note"] == 1
    assert counts["entities"]["reference"] == 3
    # "See Note 10" in the MD&A paragraph (chunk 2) points at the first chunk of Note 10 (chunk 4).
    mdna, note = schema.chunk_id(FID, 2), schema.chunk_id(FID, 4)
    links = [e for e in out["adjacency"][mdna] if e["target"] == note]
    assert links and links[0]["type"] == "explicit" and links[0]["confidence"] == 0.95
    assert out["nodes"][note]["label"] == "p. 57 10. Income Taxes"
    n_edges = sum(len(v) for v in out["adjacency"].values())
    assert n_edges == sum(counts["edges"].values())


def test_graph_item_scope_and_text_output(graph_store, capsys) -> None:
    assert main(["graph", "--store", str(graph_store), "--filing", FID, "--item", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"]["nodes"]["chunk"] == 3
    # The cross-Item reference from Item 7 touches Item 8, so it is kept and its Item-7 end is listed.
    assert out["counts"]["edge_kinds"]["explicit/note"] == 1 and schema.chunk_id(FID, 2) in out["nodes"]
    assert main(["graph", "--store", str(graph_store), "--filing", FID]) == 0
    printed = capsys.readouterr().out
    assert "p. 57 10. Income Taxes <- referenced by p. 26 Results of Operations, 0.95" in printed


def test_graph_errors_are_one_line(graph_store, tmp_path, capsys) -> None:
    assert main(["graph", "--store", str(graph_store), "--filing", "NOPE"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == ["error: no filing 'NOPE' in the store"]
    assert main(["graph", "--store", str(graph_store), "--filing", FID, "--item", "1A"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [f"error: filing '{FID}' has no Item '1A' (Items: 7, 8)"]
    missing = tmp_path / "missing"
    assert main(["graph", "--store", str(missing), "--filing", FID]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(missing) in err[0] and not missing.exists()


def test_ask_explain_prints_graph_paths(tmp_path, monkeypatch, capsys) -> None:
    """The CLI's rendering of what a real GraphExpander returned (the query pipeline itself is replaced: it needs
    the embedding model and a full index, tested in the integration tests)."""
    memory = InMemoryDocumentStore()
    memory.write_documents(_docs())
    question = "Why did the effective tax rate decrease in 2015?"
    start = memory.filter_documents({"field": "meta.chunk_index", "operator": "==", "value": 2})
    expanded = GraphExpander(document_store=memory, max_added=5).run(query=question, documents=start)

    class Runner:
        def __init__(self, *args, **kwargs) -> None:
            pass

        def run(self, *args, **kwargs) -> QueryResult:
            trace = {"scope": {}, "routing": {}, "retrieval": {}, "graph": expanded["trace"]}
            return QueryResult(passages=expanded["documents"], trace=trace)

        def close(self) -> None:
            pass

    monkeypatch.setattr("haystack_fin.query_runner.QueryRunner", Runner)
    store = tmp_path / "idx"
    assert main(["ask", question, "--store", str(store), "--create", "--no-llm", "--explain"]) == 0
    printed = capsys.readouterr().out
    n_added = len(expanded["documents"]) - 1
    assert f"Graph: {n_added} passage(s) added, {n_added} among the results" in printed
    note = 1 + [d.id for d in expanded["documents"]].index(schema.chunk_id(FID, 4))
    assert f"  [{note}] p. 57 10. Income Taxes <- referenced by p. 26 Results of Operations, 0.95" in printed
