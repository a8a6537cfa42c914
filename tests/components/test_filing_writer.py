import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.components.filing_writer import FilingWriter


def _nodes(run: str, n: int, filing: str = "acme-10k") -> tuple[list[Document], list[Document]]:
    chunks = [
        Document(id=f"{filing}#chunk-{i:05d}", content=f"chunk {i} {run}", meta={"filing_id": filing, "index_run": run})
        for i in range(n)
    ]
    node = Document(id=f"{filing}#filing", content="profile", meta={"filing_id": filing, "index_run": run})
    return chunks, [node]


class TestFilingWriter:
    def test_reindex_replaces_and_removes_stale(self):
        store = InMemoryDocumentStore()
        writer = FilingWriter(document_store=store)
        writer.run(*_nodes("run1", 5))
        writer.run(*_nodes("other", 3, filing="beta-10q"))
        assert store.count_documents() == 6 + 4
        again = writer.run(*_nodes("run1", 5))  # same filing, same run: count unchanged
        assert again["stale_deleted"] == 0 and store.count_documents() == 10
        shorter = writer.run(*_nodes("run2", 3))  # changed filing: fewer chunks, stale ones deleted
        assert shorter["stale_deleted"] == 2
        ids = {d.id for d in store.filter_documents()}
        assert "acme-10k#chunk-00004" not in ids and "beta-10q#chunk-00002" in ids
        assert store.count_documents() == 4 + 4

    def test_rejects_nodes_without_run(self):
        writer = FilingWriter(document_store=InMemoryDocumentStore())
        with pytest.raises(ValueError, match="index_run"):
            writer.run([Document(content="x", meta={"filing_id": "a"})])

    def test_to_dict_from_dict(self):
        writer = FilingWriter(document_store=InMemoryDocumentStore(), policy=DuplicatePolicy.OVERWRITE)
        data = writer.to_dict()
        assert data["init_parameters"]["policy"] == "OVERWRITE"
        restored = FilingWriter.from_dict(data)
        assert isinstance(restored.document_store, InMemoryDocumentStore)
        assert restored.policy == DuplicatePolicy.OVERWRITE

    def test_filing_nodes_get_the_mean_direction_of_their_chunks(self):
        chunks, filing = _nodes("run1", 2)
        chunks = [
            Document(id=c.id, content=c.content, meta={**c.meta, "node_type": "chunk"}, embedding=v)
            for c, v in zip(chunks, ([3.0, 0.0], [0.0, 1.0]), strict=True)
        ]
        summary = Document(id="acme-10k#summary-1", content="s", meta={**chunks[0].meta, "node_type": "summary"})
        filing = [Document(id=filing[0].id, content="profile", meta={**filing[0].meta, "node_type": "filing"})]
        store = InMemoryDocumentStore()
        FilingWriter(document_store=store).run(documents=[*chunks, summary], filing_nodes=filing)
        vector = store.filter_documents({"field": "meta.node_type", "operator": "==", "value": "filing"})[0].embedding
        assert vector == pytest.approx([2**-0.5, 2**-0.5])  # unit vectors averaged: length does not weigh
        assert filing[0].embedding is None  # the caller's node is not changed
        plain = InMemoryDocumentStore()
        FilingWriter(document_store=plain, filing_vectors=False).run(documents=chunks, filing_nodes=filing)
        assert (
            plain.filter_documents({"field": "meta.node_type", "operator": "==", "value": "filing"})[0].embedding
            is None
        )
        assert (
            FilingWriter.from_dict(FilingWriter(document_store=plain, filing_vectors=False).to_dict()).filing_vectors
            is False
        )

    def test_a_filing_without_embedded_chunks_keeps_no_vector(self):
        chunks, filing = _nodes("run1", 2)
        store = InMemoryDocumentStore()
        FilingWriter(document_store=store).run(documents=chunks, filing_nodes=filing)
        assert store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": "acme-10k"})
        assert all(d.embedding is None for d in store.filter_documents())


def test_reindex_with_qdrant_lookup_path():
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    store = QdrantDocumentStore(location=":memory:", index="w", embedding_dim=4, progress_bar=False)
    writer = FilingWriter(document_store=store)
    first = writer.run(*_nodes("run1", 5))
    assert first["stale_deleted"] == 0 and store.count_documents() == 6
    assert writer.run(*_nodes("run1", 5))["stale_deleted"] == 0 and store.count_documents() == 6
    changed = writer.run(*_nodes("run2", 3))  # the stored filing node has another run: stale chunks go
    assert changed["stale_deleted"] == 2 and store.count_documents() == 4


def test_filing_node_is_written_after_every_other_node():
    """Readers take a filing's run from its filing node (DualTreeRetriever, GraphExpander): it must not name a run
    whose nodes are not all written yet."""
    store = InMemoryDocumentStore()
    written: list[str] = []
    original = store.write_documents

    def recording(documents, policy=DuplicatePolicy.NONE):
        written.extend(d.id for d in documents)
        return original(documents, policy=policy)

    store.write_documents = recording  # type: ignore[method-assign]  # spy on the write order
    FilingWriter(document_store=store).run(*_nodes("run1", 3))
    # The pending marker first, the filing node last; the marker is gone once the write is done.
    assert written[0] == "acme-10k#pending" and written[-1] == "acme-10k#filing" and len(written) == 5
    assert {d.id for d in store.filter_documents()} == {*written[1:]}
