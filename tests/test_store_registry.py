"""store_registry: one store instance per configuration and process, released (and closed) on demand."""

import threading
import uuid

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.store_registry import release_store, shared_store


class ClosingStore:
    """A store-like object with a configuration and a close() that records its calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = 0

    def to_dict(self) -> dict:
        return {"type": "tests.ClosingStore", "init_parameters": {"name": self.name}}

    def close(self) -> None:
        self.closed += 1


class NoDictStore:
    """A store without to_dict: can only be shared with itself."""


class BrokenDictStore:
    def to_dict(self) -> dict:
        raise RuntimeError("not serializable")


def _name() -> str:
    return f"reg-{uuid.uuid4().hex}"  # the registry is process-wide: every test uses its own configurations


def test_same_configuration_gives_the_first_instance():
    name = _name()
    first, second = ClosingStore(name), ClosingStore(name)
    try:
        assert shared_store(first) is first
        assert shared_store(second) is first
        assert shared_store(first) is first
    finally:
        release_store(first)


def test_other_configuration_gives_another_instance():
    a, b = ClosingStore(_name()), ClosingStore(_name())
    try:
        assert shared_store(a) is a
        assert shared_store(b) is b
    finally:
        release_store(a)
        release_store(b)


def test_release_closes_the_shared_instance_and_forgets_it():
    name = _name()
    first, second = ClosingStore(name), ClosingStore(name)
    shared_store(first)
    release_store(second)  # released by configuration: the instance registered first is the one closed
    assert (first.closed, second.closed) == (1, 0)
    third = ClosingStore(name)
    try:
        assert shared_store(third) is third  # a fresh instance after the release
    finally:
        release_store(third)
    assert first.closed == 1  # releasing the new instance does not close the old one again


def test_release_of_an_unregistered_store_does_nothing():
    store = ClosingStore(_name())
    release_store(store)
    release_store(store)
    assert store.closed == 0


def test_store_without_close_can_be_released():
    store = InMemoryDocumentStore(index=_name())
    assert shared_store(store) is store
    assert shared_store(InMemoryDocumentStore(index=store.index)) is store
    release_store(store)
    other = InMemoryDocumentStore(index=store.index)
    assert shared_store(other) is other
    release_store(other)


@pytest.mark.parametrize("cls", [NoDictStore, BrokenDictStore])
def test_store_without_usable_to_dict_is_shared_only_with_itself(cls):
    a, b = cls(), cls()
    try:
        assert shared_store(a) is a
        assert shared_store(b) is b
        assert shared_store(a) is a
    finally:
        release_store(a)
        release_store(b)


def test_concurrent_callers_get_one_instance():
    name = _name()
    candidates = [ClosingStore(name) for _ in range(16)]
    got: list[object] = []
    barrier = threading.Barrier(len(candidates))

    def worker(store: ClosingStore) -> None:
        barrier.wait()
        got.append(shared_store(store))

    threads = [threading.Thread(target=worker, args=(s,)) for s in candidates]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(got) == len(candidates)
        assert len({id(s) for s in got}) == 1
    finally:
        release_store(candidates[0])


def test_embedded_qdrant_folder_is_opened_once_and_freed_by_release(tmp_path):
    """The reason the registry exists: a second embedded client on one folder fails; the shared one does not, and
    release_store frees the folder for a client opened afterwards."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    def make() -> QdrantDocumentStore:
        return QdrantDocumentStore(path=str(tmp_path / "idx"), index="reg", embedding_dim=4, progress_bar=False)

    first = shared_store(make())
    try:
        assert first.count_documents() == 0  # opens the client and takes the folder lock
        assert shared_store(make()) is first
        with pytest.raises(RuntimeError, match="already accessed"):
            make().count_documents()  # what every component would hit without the registry
    finally:
        release_store(make())
    assert first._client is None  # closed by the release
    again = make()
    assert again.count_documents() == 0
    again.close()


def test_qdrant_edge_folder_is_opened_once_and_freed_by_release(tmp_path):
    """The same for the default store: an Edge shard admits one open store per folder (its WAL lock)."""
    from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore, QdrantEdgeStoreLockedError

    def make() -> QdrantEdgeDocumentStore:
        return QdrantEdgeDocumentStore(path=str(tmp_path / "idx"), index="reg", embedding_dim=4)

    first = shared_store(make())
    try:
        assert first.count_documents() == 0  # opens the shard and takes its WAL lock
        assert shared_store(make()) is first
        with pytest.raises(QdrantEdgeStoreLockedError):
            make().count_documents()
    finally:
        release_store(make())
    assert first._shard is None  # closed by the release
    again = make()
    assert again.count_documents() == 0
    again.close()


def test_filing_cache_keeps_to_the_filing_nodes_run_during_a_reindex():
    """Mid re-index the store holds two runs of a filing; FilingWriter writes the filing node last, so the cache keeps
    the run the filing node names and leaves the other run's nodes out, never a mix."""
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_fin.store_registry import FilingCache

    store = InMemoryDocumentStore()
    meta = {"filing_id": "F", "index_run": "run-1"}
    store.write_documents(
        [
            Document(id="F#filing", content="F", meta={**meta, "node_type": "filing"}),
            Document(id="F#chunk-1", content="old", meta={**meta, "node_type": "chunk"}, embedding=[1.0, 0.0]),
            Document(id="F#chunk-1-new", content="new", meta={**meta, "node_type": "chunk", "index_run": "run-2"}),
        ]
    )
    entry = FilingCache(4).get(store, ["F"])["F"]
    assert sorted(d.id for d in entry.docs) == ["F#chunk-1", "F#filing"]
    assert entry.index_run == "run-1" and entry.runs == frozenset({"run-1"}) and set(entry.vectors) == {"F#chunk-1"}
