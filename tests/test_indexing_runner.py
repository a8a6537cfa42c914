import copy
import multiprocessing
import shutil
import time

import pytest
from haystack import Pipeline
from helpers.slow_converter import CRASH_EXIT_CODE, SlowConverter

from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from haystack_fin.indexing_runner import (
    ParseWorkerPool,
    index_filings,
    parse_filings,
    split_indexing_pipeline,
)
from haystack_fin.pipeline_loader import ALLOWED_MODULES, drop_components, pipeline_dict
from haystack_fin.store_check import StoreError

SLOW_TYPE = f"{SlowConverter.__module__}.SlowConverter"
TIMEOUT_S = 3.0


@pytest.fixture
def slow_pipeline(monkeypatch) -> dict:
    """The shipped indexing pipeline with the test converter; the allowlist env reaches the spawned workers."""
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", SlowConverter.__module__)
    data = pipeline_dict("indexing")
    data["components"]["converter"]["type"] = SLOW_TYPE
    return data


def _no_model_pipeline(data: dict, store_dir) -> dict:
    """Parse stage + writer into an embedded store folder, no embedder (no model to load: a unit test)."""
    data = copy.deepcopy(data)
    store = data["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]
    store["path"] = str(store_dir)
    data = drop_components(data, ("embedder", "tree_builder"))
    data["connections"].append({"sender": "splitter.documents", "receiver": "writer.documents"})
    return data


def test_split_of_the_shipped_indexing_yaml():
    data = pipeline_dict("indexing")
    parse, write, crossing = split_indexing_pipeline(data)
    assert set(parse["components"]) == {"converter", "splitter"}
    assert set(write["components"]) == {"embedder", "tree_builder", "writer"}
    assert sorted(crossing) == [
        ("splitter.documents", "embedder.documents"),
        ("splitter.filing_nodes", "writer.filing_nodes"),
    ]
    assert [(c["sender"], c["receiver"]) for c in parse["connections"]] == [
        ("converter.documents", "splitter.documents")
    ]
    # every connection lands in exactly one stage or crosses
    n_inside = len(parse["connections"]) + len(write["connections"])
    assert n_inside + len(crossing) == len(data["connections"])
    Pipeline.from_dict(parse, allowed_modules=ALLOWED_MODULES)  # the parse stage loads on its own


def test_split_rejects_missing_components_and_back_edges():
    data = pipeline_dict("indexing")
    with pytest.raises(ValueError, match="no component 'parser'"):
        split_indexing_pipeline(data, ("parser", "splitter"))
    data["connections"].append({"sender": "embedder.documents", "receiver": "splitter.documents"})
    with pytest.raises(ValueError, match="feeds the parse stage from the write stage"):
        split_indexing_pipeline(data)


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_worker_result_equals_in_process(fixtures):
    source = str(fixtures / "pepsico-8k-2023-05-05.pdf")
    data = pipeline_dict("indexing")
    meta = {"filing_id": "PEP-8K"}
    (local,) = parse_filings([source], data, meta, in_process=True)
    (remote,) = parse_filings([source], data, meta, timeout_s=300)
    assert not local.failures and not remote.failures and not remote.timed_out
    assert [d.id for d in remote.documents] == [d.id for d in local.documents]
    assert [d.content for d in remote.documents] == [d.content for d in local.documents]
    assert [d.meta for d in remote.documents] == [d.meta for d in local.documents]
    assert remote.documents[0].id.startswith("PEP-8K#")  # the meta override reached the worker
    assert (remote.n_pages, remote.n_chunks) == (local.n_pages, local.n_chunks)
    assert remote.n_pages > 0 and remote.n_chunks == len(remote.documents) - 1  # one filing node
    assert set(remote.stage_outputs) == {"embedder", "writer"}
    assert [d.id for d in remote.stage_outputs["writer"]["filing_nodes"]] == ["PEP-8K#filing", "PEP-8K#profile"]
    assert multiprocessing.active_children() == []  # the pool shut its worker down


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_hung_filing_times_out_and_the_next_is_parsed(slow_pipeline, fixtures, tmp_path):
    good = str(fixtures / "pepsico-8k-2023-05-05.pdf")
    hang = str(tmp_path / "hang.pdf")
    t0 = time.monotonic()
    outcomes = list(
        parse_filings(
            [hang, good, good],
            slow_pipeline,
            [{"filing_id": "h"}, {"filing_id": "a"}, {"filing_id": "b"}],
            timeout_s=TIMEOUT_S,
            workers=1,
        )
    )
    elapsed = time.monotonic() - t0
    assert [o.source for o in outcomes] == [hang, good, good]  # input order
    assert outcomes[0].timed_out and outcomes[0].failures == [f"{hang}: timed out after 3 s"]
    assert outcomes[0].documents == [] and outcomes[0].stage_outputs == {}
    assert TIMEOUT_S <= outcomes[0].seconds < TIMEOUT_S + 5
    # the replacement worker parsed the rest, with the per-source meta
    assert [o.documents[0].meta["filing_id"] for o in outcomes[1:]] == ["a", "b"]
    assert not any(o.failures or o.timed_out for o in outcomes[1:])
    assert elapsed < 3600
    assert multiprocessing.active_children() == []  # the hung worker was reaped, not left behind


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_worker_crash_is_reported_and_the_batch_goes_on(slow_pipeline, fixtures, tmp_path):
    good = str(fixtures / "pepsico-8k-2023-05-05.pdf")
    crash = str(tmp_path / "crash.pdf")
    outcomes = list(parse_filings([crash, good], slow_pipeline, timeout_s=120, workers=2))
    assert outcomes[0].failures == [f"{crash}: worker process died (exit code {CRASH_EXIT_CODE})"]
    assert not outcomes[0].timed_out and outcomes[0].documents == []
    assert not outcomes[1].failures and outcomes[1].n_chunks > 0
    assert multiprocessing.active_children() == []


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_converter_failure_is_one_line_from_the_worker(fixtures, tmp_path):
    bad = tmp_path / "fake.pdf"
    bad.write_text("not a pdf")
    (outcome,) = parse_filings([str(bad)], pipeline_dict("indexing"), timeout_s=120)
    assert outcome.failures == [f"{bad}: not a readable PDF (Failed to open stream)"]
    assert outcome.documents == [] and not outcome.timed_out


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_pool_is_reused_and_stops_workers_when_the_caller_stops_early(slow_pipeline, fixtures, tmp_path):
    good = str(fixtures / "pepsico-8k-2023-05-05.pdf")
    with ParseWorkerPool(slow_pipeline, workers=1) as pool:
        (first,) = pool.parse([good], timeout_s=120)
        worker_pid = pool._workers[0].process.pid
        (second,) = pool.parse([good], timeout_s=120)
        assert pool._workers[0].process.pid == worker_pid  # one worker for both calls
        assert [d.id for d in second.documents] == [d.id for d in first.documents]
        outcomes = pool.parse([good, str(tmp_path / "hang.pdf")], timeout_s=600)
        next(outcomes)  # the worker is now on the hanging filing
        outcomes.close()
        assert all(w.task is None for w in pool._workers)
        (third,) = pool.parse([good], timeout_s=120)  # no stale result of the abandoned filing
        assert [d.id for d in third.documents] == [d.id for d in first.documents]
    assert multiprocessing.active_children() == []


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_nothing_of_a_timed_out_filing_is_written(slow_pipeline, fixtures, tmp_path):
    store_dir = tmp_path / "idx"
    good = tmp_path / "good.pdf"
    shutil.copy(fixtures / "pepsico-8k-2023-05-05.pdf", good)
    hang = tmp_path / "hang.pdf"
    shutil.copy(fixtures / "bestbuy-10q-2023-07-29.pdf", hang)  # a real filing: it would write nodes
    data = _no_model_pipeline(slow_pipeline, store_dir)
    report = index_filings([hang, good], data, timeout_s=TIMEOUT_S, quiet=True)
    assert (report.n_ok, report.n_failed) == (1, 1)
    assert report.failures == [f"{hang}: timed out after 3 s"]
    store = QdrantEdgeDocumentStore(path=str(store_dir), index="haystack_fin", embedding_dim=384)
    try:
        docs = store.filter_documents()
        assert {d.meta["filing_id"] for d in docs} == {"good"}
        assert len(docs) == report.nodes_written > 1
    finally:
        store.close()


def test_index_fails_fast_on_a_locked_store(fixtures, tmp_path):
    store_dir = tmp_path / "idx"
    holder = QdrantEdgeDocumentStore(path=str(store_dir), index="haystack_fin", embedding_dim=384)
    holder.count_documents()  # takes the folder's lock
    try:
        data = _no_model_pipeline(pipeline_dict("indexing"), store_dir)
        t0 = time.monotonic()
        with pytest.raises(StoreError, match="in use by another process"):
            index_filings([fixtures / "bestbuy-10q-2023-07-29.pdf"], data, quiet=True)
        assert time.monotonic() - t0 < 60  # before the filing was parsed (it takes longer than that here)
        assert holder.count_documents() == 0
    finally:
        holder.close()
    assert multiprocessing.active_children() == []


@pytest.mark.integration
def test_index_filings_with_the_model_skips_the_timed_out_filing(slow_pipeline, fixtures, tmp_path):
    store_dir = tmp_path / "idx"
    good = tmp_path / "good.pdf"
    shutil.copy(fixtures / "pepsico-8k-2023-05-05.pdf", good)
    hang = tmp_path / "hang-bestbuy.pdf"
    shutil.copy(fixtures / "bestbuy-10q-2023-07-29.pdf", hang)
    data = copy.deepcopy(slow_pipeline)
    data["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]["path"] = str(store_dir)
    report = index_filings([good, hang], data, timeout_s=TIMEOUT_S, quiet=True)
    assert report.failures == [f"{hang}: timed out after 3 s"]
    store = QdrantEdgeDocumentStore(path=str(store_dir), index="haystack_fin", embedding_dim=384)
    try:
        docs = store.filter_documents()
        assert {d.meta["filing_id"] for d in docs} == {"good"}
        assert len(docs) == report.nodes_written
        assert any(d.meta.get("node_type") == "summary" for d in docs)  # the write stage's trees ran
    finally:
        store.close()


def test_index_filings_refuses_a_local_mode_folder(fixtures, tmp_path):
    """Without the CLI's store check: the Edge store itself will not create a shard inside an old local-mode
    folder (it would look like an empty index next to the old data)."""
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    store_dir = tmp_path / "old"
    old = QdrantDocumentStore(path=str(store_dir), index="haystack_fin", embedding_dim=384, progress_bar=False)
    old.count_documents()
    old.close()
    before = sorted(p.name for p in store_dir.iterdir())
    data = _no_model_pipeline(pipeline_dict("indexing"), store_dir)
    with pytest.raises(StoreError, match=r"a qdrant-client local-mode store .* re-index into a new folder"):
        index_filings([fixtures / "bestbuy-10q-2023-07-29.pdf"], data, quiet=True)
    assert sorted(p.name for p in store_dir.iterdir()) == before
    assert multiprocessing.active_children() == []


def test_the_store_is_optimized_once_after_a_batch_that_wrote(fixtures, tmp_path, monkeypatch):
    calls: list[str] = []
    real = QdrantEdgeDocumentStore.optimize

    def optimize(self):
        calls.append(self.path)
        return real(self)

    monkeypatch.setattr(QdrantEdgeDocumentStore, "optimize", optimize)
    data = _no_model_pipeline(pipeline_dict("indexing"), tmp_path / "idx")
    pdf = fixtures / "pepsico-8k-2023-05-05.pdf"
    report = index_filings([pdf], data, quiet=True, in_process=True)
    assert report.n_ok == 1 and calls == [str(tmp_path / "idx")] and report.optimize_seconds > 0
    skipped = index_filings(
        [pdf],
        _no_model_pipeline(pipeline_dict("indexing"), tmp_path / "b"),
        quiet=True,
        in_process=True,
        optimize=False,
    )
    assert skipped.n_ok == 1 and len(calls) == 1 and skipped.optimize_seconds == 0
    # A batch that wrote nothing (the file is not a filing) does not optimize.
    bad = tmp_path / "empty.pdf"
    bad.write_bytes(b"not a pdf")
    nothing = index_filings(
        [bad], _no_model_pipeline(pipeline_dict("indexing"), tmp_path / "c"), quiet=True, in_process=True
    )
    assert nothing.n_failed == 1 and len(calls) == 1


def test_upgrade_gives_an_older_stores_filing_nodes_their_vectors(tmp_path):
    """A store written before filing vectors existed: ``haystack-fin upgrade`` adds them from the chunks of the run
    each filing node names, then optimizes without a global graph (the indexing YAML's hnsw_m: 0)."""
    import json

    from haystack import Document

    from haystack_fin.cli import main

    def unit(*weights: tuple[int, float]) -> list[float]:
        vector = [0.0] * 384
        for index, weight in weights:
            vector[index] = weight
        return vector

    path = tmp_path / "old"
    store = QdrantEdgeDocumentStore(path=str(path), return_embedding=True)  # what an older haystack-fin wrote
    docs = []
    for fid, vectors in (("A", [unit((0, 1.0)), unit((1, 1.0))]), ("B", [unit((2, 2.0))]), ("C", [])):
        docs.append(
            Document(id=f"{fid}#filing", content="", meta={"node_type": "filing", "filing_id": fid, "index_run": "r1"})
        )
        for i, v in enumerate(vectors):
            meta = {"node_type": "chunk", "filing_id": fid, "index_run": "r1"}
            docs.append(Document(id=f"{fid}#chunk-{i}", content="c", meta=meta, embedding=v))
    # a chunk left over from an older run of A does not count
    old_run = {"node_type": "chunk", "filing_id": "A", "index_run": "r0"}
    docs.append(Document(id="A#old", content="c", meta=old_run, embedding=unit((3, 1.0))))
    store.write_documents(docs)
    store.close()
    assert main(["upgrade", "--store", str(path), "-q"]) == 0
    reopened = QdrantEdgeDocumentStore(path=str(path), return_embedding=True)
    found = reopened.filter_documents({"field": "meta.node_type", "operator": "==", "value": "filing"})
    reopened.close()
    by_id = {d.id: d.embedding for d in found}
    assert by_id["A#filing"] == pytest.approx(unit((0, 2**-0.5), (1, 2**-0.5)))
    assert by_id["B#filing"] == pytest.approx(unit((2, 1.0)))
    assert by_id["C#filing"] is None  # no chunk vectors, no filing vector
    assert json.loads((path / "haystack_fin" / "edge_config.json").read_text())["hnsw_config"]["m"] == 0
