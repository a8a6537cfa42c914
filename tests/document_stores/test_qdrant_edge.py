import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import qdrant_edge as qe
from haystack import Document, Pipeline
from haystack.dataclasses import ByteStream, SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.errors import FilterError
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    DocumentStoreBaseExtendedTests,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldUniqueValuesTest,
)
from haystack.utils.filters import document_matches_filter
from haystack_integrations.document_stores.qdrant.converters import convert_id as qdrant_haystack_convert_id

from haystack_fin.components.qdrant_edge_retriever import QdrantEdgeEmbeddingRetriever
from haystack_fin.document_stores.qdrant_edge import (
    QdrantEdgeDocumentStore,
    QdrantEdgeStoreError,
    QdrantEdgeStoreLockedError,
)
from haystack_fin.document_stores.qdrant_edge.converters import convert_id, document_to_point
from haystack_fin.document_stores.qdrant_edge.filters import convert_filters, field_key

REPO = Path(__file__).resolve().parents[2]
_TMPFS = Path("/dev/shm")


@pytest.fixture
def fast_dir(tmp_path):
    """A scratch folder on tmpfs when there is one: every Edge metadata write (shard creation, payload index, flush)
    fsyncs, ~0.2 s each on this machine's shared disk and ~0.01 s on tmpfs. Tests of reopening use tmp_path."""
    if not (_TMPFS.is_dir() and os.access(_TMPFS, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="haystack-fin-edge-", dir=_TMPFS))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


class TestQdrantEdgeDocumentStoreMixins(
    DocumentStoreBaseExtendedTests,
    CountDocumentsByFilterTest,
    CountUniqueMetadataByFilterTest,
    GetMetadataFieldsInfoTest,
    GetMetadataFieldMinMaxTest,
    GetMetadataFieldUniqueValuesTest,
):
    """Haystack's own DocumentStore test suites on a scratch shard (768-d: the dimension of the mixins' docs)."""

    @pytest.fixture
    def document_store(self, fast_dir):
        # Keyword indexes on fields the suites filter by, one of them numeric: filters must give the same answers
        # whether or not a field is indexed and whatever the index type.
        store = QdrantEdgeDocumentStore(
            path=str(fast_dir),
            embedding_dim=768,
            return_embedding=True,
            payload_indexes=["name", "chapter", "category", "number"],
        )
        yield store
        store.close()

    def assert_documents_are_equal(self, received: list[Document], expected: list[Document]) -> None:
        # Overridden as the mixin's docstring asks of stores that differ: results come in point-id order, not
        # insertion order, and a cosine store keeps unit-normalized float32 vectors. Everything else must match
        # exactly; embeddings must be the expected direction.
        received = sorted(received, key=lambda d: d.id)
        expected = sorted(expected, key=lambda d: d.id)
        assert [d.id for d in received] == [d.id for d in expected]
        for got, want in zip(received, expected, strict=True):
            assert got.content == want.content
            assert got.meta == want.meta
            assert got.blob == want.blob
            assert got.score == want.score
            if want.embedding is None:
                assert got.embedding is None
            else:
                assert got.embedding == pytest.approx(_unit(want.embedding), abs=1e-6)

    def test_write_documents(self, document_store):
        # Haystack leaves the default policy to each store (the mixin raises NotImplementedError by design). Ours
        # is QdrantDocumentStore's: FAIL by default; NONE upserts.
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])
        assert document_store.write_documents([doc], policy=DuplicatePolicy.NONE) == 1
        assert document_store.count_documents() == 1
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


# -- filters: conversion alone ----------------------------------------------------------------------------------------
class TestConvertFilters:
    def test_empty_and_native(self):
        assert convert_filters(None) is None
        assert convert_filters({}) is None
        native = qe.Filter(must=[qe.FieldCondition("meta.x", match=qe.MatchValue("a"))])
        assert convert_filters(native) is native

    def test_equal_string_is_a_keyword_match_on_the_meta_path(self):
        flt = convert_filters({"field": "meta.filing_id", "operator": "==", "value": "BBY_2023_10Q"})
        (cond,) = flt.must
        assert cond.key == "meta.filing_id"
        assert cond.match.value == "BBY_2023_10Q"

    def test_field_paths(self):
        assert field_key("meta.a.b") == "meta.a.b"
        assert field_key("content") == "content"
        assert field_key("ticker") == "meta.ticker"  # converted legacy filters, as the reference reads them

    def test_numbers_compare_as_a_closed_range(self):
        (cond,) = convert_filters({"field": "meta.year", "operator": "==", "value": 2023}).must
        assert (cond.range.gte, cond.range.lte) == (2023.0, 2023.0)
        (cond,) = convert_filters({"field": "meta.year", "operator": ">", "value": 2}).must
        assert cond.range.gt == 2.0 and cond.range.lt is None

    def test_iso_dates_become_datetime_ranges(self):
        (cond,) = convert_filters({"field": "meta.date", "operator": "<=", "value": "1969-07-21T20:17:40"}).must
        assert isinstance(cond.range, qe.RangeDateTime)
        assert cond.range.lte == "1969-07-21 20:17:40 UTC"  # Edge parses the bound; naive reads as UTC

    def test_id_uses_point_ids(self):
        (cond,) = convert_filters({"field": "id", "operator": "in", "value": ["a", "b"]}).must
        assert isinstance(cond, qe.HasIdCondition)
        assert {str(p).replace("-", "") for p in cond.point_ids} == {convert_id("a"), convert_id("b")}

    def test_not_negates_the_conjunction(self):
        flt = convert_filters(
            {
                "operator": "NOT",
                "conditions": [
                    {"field": "meta.a", "operator": "==", "value": "x"},
                    {"field": "meta.b", "operator": "==", "value": "y"},
                ],
            }
        )
        (inner,) = flt.must_not
        assert isinstance(inner, qe.Filter) and len(inner.must) == 2

    @pytest.mark.parametrize(
        "bad",
        [
            {"conditions": [{"field": "meta.a", "operator": "==", "value": 1}]},
            {"operator": "AND"},
            {"operator": "XOR", "conditions": []},
            {"operator": "AND", "conditions": [{"operator": "==", "value": 1}]},
            {"operator": "AND", "conditions": [{"field": "meta.a", "value": 1}]},
            {"operator": "AND", "conditions": [{"field": "meta.a", "operator": "=="}]},
            {"field": "meta.a", "operator": "~", "value": 1},
            {"field": "meta.a", "operator": ">", "value": "abc"},
            {"field": "meta.a", "operator": ">", "value": [1]},
            {"field": "meta.a", "operator": ">", "value": True},
            {"field": "meta.a", "operator": "in", "value": "abc"},
            {"field": "meta.a", "operator": "not in", "value": (1, 2)},
            {"field": "meta.a", "operator": "==", "value": {"x": 1}},
            "meta.a == 1",
        ],
    )
    def test_malformed_filters_raise_filter_error(self, bad):
        with pytest.raises(FilterError):
            convert_filters(bad)


# -- filters: same answers as Haystack's reference implementation -----------------------------------------------------
_REFERENCE_DOCS = [
    Document(id="d1", content="a", meta={"s": "x", "n": 1, "f": 0.5, "b": True, "date": "2020-01-01T00:00:00"}),
    Document(id="d2", content="b", meta={"s": "y", "n": 2, "f": 2.0, "b": False, "date": "2021-06-01T12:00:00"}),
    Document(id="d3", content="c", meta={"s": "x", "n": 3, "date": "2022-03-04"}),
    Document(id="d4", content="d", meta={"s": None, "n": 2.0}),
    Document(id="d5", content="e", meta={}),
]
_REFERENCE_FILTERS = [
    {"field": "meta.s", "operator": "==", "value": "x"},
    {"field": "meta.s", "operator": "!=", "value": "x"},
    {"field": "meta.s", "operator": "==", "value": None},
    {"field": "meta.s", "operator": "!=", "value": None},
    {"field": "meta.n", "operator": "==", "value": 2},
    {"field": "meta.f", "operator": "==", "value": 0.5},
    {"field": "meta.b", "operator": "==", "value": True},
    {"field": "meta.b", "operator": "!=", "value": False},
    {"field": "meta.n", "operator": ">", "value": 1},
    {"field": "meta.n", "operator": "<=", "value": 2},
    {"field": "meta.n", "operator": ">=", "value": None},
    {"field": "meta.date", "operator": ">", "value": "2020-06-01T00:00:00"},
    {"field": "meta.date", "operator": "<", "value": "2021-06-01T12:00:00"},
    {"field": "meta.n", "operator": "in", "value": [1, 3]},
    {"field": "meta.s", "operator": "in", "value": ["y", None]},
    {"field": "meta.s", "operator": "in", "value": []},
    {"field": "meta.n", "operator": "not in", "value": [2]},
    {"field": "meta.s", "operator": "not in", "value": []},
    {"field": "id", "operator": "in", "value": ["d2", "d5", "nope"]},
    {"field": "id", "operator": "!=", "value": "d1"},
    {"field": "content", "operator": "==", "value": "c"},
    {"field": "s", "operator": "==", "value": "y"},
    {
        "operator": "AND",
        "conditions": [
            {"field": "meta.s", "operator": "==", "value": "x"},
            {"field": "meta.n", "operator": ">", "value": 1},
        ],
    },
    {
        "operator": "OR",
        "conditions": [
            {"field": "meta.b", "operator": "==", "value": False},
            {"field": "meta.n", "operator": "==", "value": 3},
        ],
    },
    {
        "operator": "NOT",
        "conditions": [
            {"field": "meta.s", "operator": "==", "value": "x"},
            {"field": "meta.n", "operator": "==", "value": 1},
        ],
    },
    {
        "operator": "NOT",
        "conditions": [
            {
                "operator": "OR",
                "conditions": [
                    {"field": "meta.s", "operator": "==", "value": None},
                    {"field": "meta.f", "operator": "<", "value": 1},
                ],
            }
        ],
    },
    {"operator": "AND", "conditions": []},
    {"operator": "OR", "conditions": []},
]


@pytest.fixture(scope="module")
def reference_store(tmp_path_factory):
    # meta.s indexed (keyword), meta.n indexed although numeric, the rest not: answers must not depend on it.
    store = QdrantEdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("reference")), embedding_dim=2, payload_indexes=["s", "n"]
    )
    store.write_documents(_REFERENCE_DOCS)
    yield store
    store.close()


@pytest.mark.parametrize("flt", _REFERENCE_FILTERS, ids=lambda f: json.dumps(f)[:70])
def test_filters_match_haystack_reference(reference_store, flt):
    expected = sorted(d.id for d in _REFERENCE_DOCS if document_matches_filter(flt, d))
    assert sorted(d.id for d in reference_store.filter_documents(flt)) == expected
    assert reference_store.count_documents_by_filter(flt) == len(expected)


# -- converters -------------------------------------------------------------------------------------------------------
def test_point_ids_are_qdrant_haystacks_and_documents_round_trip():
    assert convert_id("acme-2024-1") == qdrant_haystack_convert_id("acme-2024-1")
    doc = Document(id="acme-2024-1", content="Revenue", meta={"page_numbers": [3, 4], "table": {"rows": 2}})
    point = document_to_point(doc, embedding_dim=3)
    assert point.payload["id"] == "acme-2024-1" and "embedding" not in point.payload
    assert point.vector == {}
    full = Document(
        id="x",
        content="c",
        blob=ByteStream(b"ab", mime_type="x/y", meta={"k": 1}),
        meta={"a": {"b": [1, 2]}},
        score=0.5,
        embedding=[1.0, 2.0, 3.0],
        sparse_embedding=SparseEmbedding(indices=[1], values=[0.5]),
    )
    expected = full.to_dict(flatten=False)
    expected.pop("embedding")
    assert document_to_point(full, embedding_dim=3).payload == expected  # qdrant-haystack's payload
    with pytest.raises(ValueError, match="embedding of length 2"):
        document_to_point(Document(content="x", embedding=[1.0, 2.0]), embedding_dim=3)


def test_documents_with_blob_and_explicit_ids_round_trip(fast_dir):
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=3, similarity="dot_product")
    doc = Document(
        id="MMM_2018_10K#c1", content="capex", blob=ByteStream(b"\x00\x01", mime_type="x/y"), embedding=[1, 2, 3]
    )
    store.write_documents([doc])
    (got,) = store.get_documents_by_id(["MMM_2018_10K#c1", "missing"])
    assert (got.id, got.content, got.blob, got.embedding) == (doc.id, "capex", doc.blob, None)
    store.close()


def test_filter_documents_can_leave_large_meta_fields_out(fast_dir):
    from haystack_fin.store_registry import filter_documents_without

    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=3)
    meta = {"node_type": "filing", "company": "3M", "item_term_counts": {"7": {"capex": 4}}, "item_term_totals": {}}
    store.write_documents([Document(id="MMM_2018_10K#filing", content="3M 10-K", meta=meta)])
    flt = {"field": "meta.node_type", "operator": "==", "value": "filing"}
    (lean,) = filter_documents_without(store, flt, ["item_term_counts", "meta.item_term_totals"])
    assert (lean.id, lean.content, lean.meta) == (
        "MMM_2018_10K#filing",
        "3M 10-K",
        {"node_type": "filing", "company": "3M"},
    )
    (whole,) = store.filter_documents(flt)
    assert whole.meta == meta
    store.close()
    # A store that cannot leave fields out (Haystack's InMemory) returns whole Documents.
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    memory = InMemoryDocumentStore()
    memory.write_documents([Document(id="x", content="c", meta=meta)])
    assert filter_documents_without(memory, flt, ["item_term_counts"])[0].meta == meta


# -- store lifecycle --------------------------------------------------------------------------------------------------
def test_init_does_no_io_and_payload_indexes_are_created(fast_dir):
    path = fast_dir / "later"
    store = QdrantEdgeDocumentStore(path=str(path), payload_indexes=["filing_id", "meta.ticker"])
    assert not path.exists()
    assert store.count_documents() == 0
    shard = store._shard_or_open()
    assert set(shard.info().payload_schema) == {"meta.filing_id", "meta.ticker"}
    store.close()
    wider = QdrantEdgeDocumentStore(path=str(path), payload_indexes=["filing_id", "ticker", "form"])
    assert set(wider._shard_or_open().info().payload_schema) == {"meta.filing_id", "meta.ticker", "meta.form"}
    wider.close()


def test_wrong_embedding_dim_old_format_and_foreign_shard_give_clear_errors(fast_dir):
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4)
    store.write_documents([Document(content="x", embedding=[1, 0, 0, 0])])
    store.close()

    with pytest.raises(
        QdrantEdgeStoreError, match=r"embedding_dim=4, but this store is configured with embedding_dim=8"
    ):
        QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=8).count_documents()
    with pytest.raises(QdrantEdgeStoreError, match="similarity='cosine'"):
        QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4, similarity="l2").count_documents()

    store_file = fast_dir / "haystack_fin" / "haystack_fin_store.json"
    meta = json.loads(store_file.read_text())
    store_file.write_text(json.dumps({**meta, "schema_version": 0}))
    with pytest.raises(QdrantEdgeStoreError, match=r"store format 0.*re-index"):
        QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4).count_documents()
    store_file.unlink()
    with pytest.raises(QdrantEdgeStoreError, match="not written by haystack-fin"):
        QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4).count_documents()


def test_wrong_query_and_document_dims_are_value_errors(fast_dir):
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=3)
    with pytest.raises(ValueError, match="embedding_dim=3"):
        store.write_documents([Document(content="x", embedding=[1.0, 2.0])])
    with pytest.raises(ValueError, match="length 2"):
        store._query_by_embedding([1.0, 2.0])
    store.close()


def test_recreate_index_wipes_once_and_never_deletes_a_foreign_folder(fast_dir):
    first = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=2)
    first.write_documents([Document(content="old")])
    first.close()
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=2, recreate_index=True)
    assert store.count_documents() == 0
    store.write_documents([Document(content="new")])
    store.close()
    assert store.count_documents() == 1  # reopened lazily, not wiped a second time
    store.close()

    foreign = fast_dir / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(QdrantEdgeStoreError, match="not a Qdrant Edge store"):
        QdrantEdgeDocumentStore(path=str(fast_dir), index="mine", recreate_index=True).count_documents()
    assert (foreign / "notes.txt").exists()


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_reopening_in_a_new_process_sees_the_data(tmp_path):
    store = QdrantEdgeDocumentStore(path=str(tmp_path), embedding_dim=2, return_embedding=True)
    store.write_documents(
        [Document(id=f"d{i}", content=f"doc {i}", meta={"filing_id": f"F{i % 2}"}, embedding=[1, i]) for i in range(6)]
    )
    store.close()
    result = _run_python(
        f"""
        from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
        s = QdrantEdgeDocumentStore(path={str(tmp_path)!r}, embedding_dim=2)
        docs = s.filter_documents({{"field": "meta.filing_id", "operator": "==", "value": "F1"}})
        print(s.count_documents(), sorted(d.id for d in docs))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "6 ['d1', 'd3', 'd5']"


def test_second_process_on_an_open_store_gets_a_clear_error(tmp_path):
    store = QdrantEdgeDocumentStore(path=str(tmp_path), embedding_dim=2)
    store.write_documents([Document(content="x")])
    code = f"""
        from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore, QdrantEdgeStoreLockedError
        try:
            QdrantEdgeDocumentStore(path={str(tmp_path)!r}, embedding_dim=2).count_documents()
            print("opened")
        except QdrantEdgeStoreLockedError as exc:
            print("locked:", exc)
        """
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("locked:") and "already open by another store" in result.stdout
    with pytest.raises(QdrantEdgeStoreLockedError):  # a second instance in this process too
        QdrantEdgeDocumentStore(path=str(tmp_path), embedding_dim=2).count_documents()
    store.close()
    assert _run_python(code).stdout.startswith("opened")  # close() released the folder


def test_store_to_dict_from_dict():
    store = QdrantEdgeDocumentStore(path="./idx", embedding_dim=16, similarity="l2", payload_indexes=["ticker"])
    data = store.to_dict()
    assert data["type"] == "haystack_fin.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore"
    assert data["init_parameters"]["payload_indexes"] == ["ticker"]
    restored = QdrantEdgeDocumentStore.from_dict(data)
    assert restored.to_dict() == data
    for bad in ({"payload_indexes": "filing_id"}, {"similarity": "jaccard"}, {"embedding_dim": 0}, {"index": "a/b"}):
        with pytest.raises(ValueError):
            QdrantEdgeDocumentStore(path="./idx", **bad)


def test_hnsw_m_is_validated_serialized_and_recorded_in_the_shard(fast_dir):
    assert QdrantEdgeDocumentStore(path="./idx").to_dict()["init_parameters"]["hnsw_m"] is None
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="hnsw_m"):
            QdrantEdgeDocumentStore(path="./idx", hnsw_m=bad)
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4, hnsw_m=0)
    assert QdrantEdgeDocumentStore.from_dict(store.to_dict()).hnsw_m == 0
    store.write_documents([Document(id=f"d{i}", content="x", embedding=[1, i, 0, 0]) for i in range(20)])
    store.optimize()  # merges without a graph: searches still answer
    assert [d.id for d in store._query_by_embedding([1, 19, 0, 0], top_k=1)] == ["d19"]
    store.close()
    config = json.loads((fast_dir / "haystack_fin" / "edge_config.json").read_text())
    assert config["hnsw_config"]["m"] == 0
    # None keeps what the shard recorded; a number given on open replaces it for the segments built afterwards
    kept = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4)
    assert kept.count_documents() == 20
    kept.close()
    assert json.loads((fast_dir / "haystack_fin" / "edge_config.json").read_text())["hnsw_config"]["m"] == 0
    changed = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=4, hnsw_m=8)
    assert changed.count_documents() == 20
    changed.close()
    assert json.loads((fast_dir / "haystack_fin" / "edge_config.json").read_text())["hnsw_config"]["m"] == 8


# -- retriever --------------------------------------------------------------------------------------------------------
@pytest.fixture
def retrieval_store(fast_dir):
    rng = random.Random(7)
    docs = []
    for i in range(60):
        vec = [rng.gauss(0, 1) for _ in range(8)]
        docs.append(Document(id=f"d{i}", content=f"doc {i}", meta={"filing_id": f"F{i % 3}", "n": i}, embedding=vec))
    store = QdrantEdgeDocumentStore(path=str(fast_dir), embedding_dim=8)
    store.write_documents(docs)
    yield store, docs
    store.close()


def _cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_retriever_returns_nearest_documents_with_filters(retrieval_store):
    store, docs = retrieval_store
    query = docs[10].embedding
    retriever = QdrantEdgeEmbeddingRetriever(document_store=store, top_k=5)

    flt = {"field": "meta.filing_id", "operator": "==", "value": "F2"}
    got = retriever.run(query_embedding=query, filters=flt)["documents"]
    expected = sorted((d for d in docs if d.meta["filing_id"] == "F2"), key=lambda d: -_cosine(query, d.embedding))
    assert [d.id for d in got] == [d.id for d in expected[:5]]
    assert got[0].score == pytest.approx(_cosine(query, expected[0].embedding), abs=1e-5)
    assert all(d.embedding is None for d in got)

    unfiltered = retriever.run(query_embedding=query, top_k=1, return_embedding=True)["documents"]
    assert unfiltered[0].id == "d10" and unfiltered[0].embedding == pytest.approx(_unit(query), abs=1e-6)


def test_retriever_filter_policies(retrieval_store):
    store, _ = retrieval_store
    init = {"field": "meta.filing_id", "operator": "==", "value": "F0"}
    runtime = {"field": "meta.n", "operator": "<", "value": 9}
    replace = QdrantEdgeEmbeddingRetriever(document_store=store, filters=init, top_k=50)
    assert {d.meta["n"] for d in replace.run(query_embedding=[1.0] * 8, filters=runtime)["documents"]} == set(range(9))
    merge = QdrantEdgeEmbeddingRetriever(document_store=store, filters=init, top_k=50, filter_policy="merge")
    assert {d.meta["n"] for d in merge.run(query_embedding=[1.0] * 8, filters=runtime)["documents"]} == {0, 3, 6}
    with pytest.raises(ValueError, match="Native"):
        merge.run(query_embedding=[1.0] * 8, filters=qe.Filter(must=[]))
    with pytest.raises(ValueError, match="QdrantEdgeDocumentStore"):
        QdrantEdgeEmbeddingRetriever(document_store=object())


def test_retriever_and_store_round_trip_through_pipeline_yaml(retrieval_store):
    store, docs = retrieval_store
    retriever = QdrantEdgeEmbeddingRetriever(
        document_store=store, filters={"field": "meta.filing_id", "operator": "==", "value": "F1"}, top_k=3
    )
    pipe = Pipeline()
    pipe.add_component("retriever", retriever)
    yaml_text = pipe.dumps()
    assert "haystack_fin.document_stores.qdrant_edge.document_store.QdrantEdgeDocumentStore" in yaml_text
    loaded = Pipeline.loads(yaml_text, allowed_modules=["haystack_fin"])
    assert loaded.to_dict() == pipe.to_dict()
    loaded_store = loaded.get_component("retriever").document_store
    assert isinstance(loaded_store, QdrantEdgeDocumentStore) and loaded_store.path == store.path

    expected = pipe.run({"retriever": {"query_embedding": docs[4].embedding}})["retriever"]["documents"]
    pipe.close()  # releases the folder for the loaded pipeline's store
    got = loaded.run({"retriever": {"query_embedding": docs[4].embedding}})["retriever"]["documents"]
    assert [d.id for d in got] == [d.id for d in expected] and got[0].id == "d4"
    loaded.close()
