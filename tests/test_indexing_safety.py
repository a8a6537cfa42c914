"""Indexing that never loses a filing: filing ids that cannot collide, --replace, crash-safe re-index, leftovers of
interrupted writes, and what ``inspect`` says about them.

The write stage here is the shipped indexing pipeline without its embedder and trees (no model to load); the parse
stage runs in this process unless a test is about the workers.
"""

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.cli import main
from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.components.filing_writer import FilingWriter
from haystack_fin.core import schema
from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from haystack_fin.indexing_runner import index_filings
from haystack_fin.pipeline_loader import drop_components, pipeline_dict
from haystack_fin.store_registry import FilingCache

FIXTURES = Path(__file__).parent / "fixtures"
PEP = FIXTURES / "pepsico-8k-2023-05-05.pdf"
BBY = FIXTURES / "bestbuy-10q-2023-07-29.pdf"
AAPL = FIXTURES / "aapl-10-q-2025-08-01.html.gz"


def _pipeline(store_dir: Path) -> dict:
    """Parse stage + writer into an embedded store folder, no embedder (no model to load)."""
    data = copy.deepcopy(pipeline_dict("indexing", str(store_dir)))
    data = drop_components(data, ("embedder", "tree_builder"))
    data["connections"].append({"sender": "splitter.documents", "receiver": "writer.documents"})
    return data


def _index(paths, store_dir: Path, **kwargs):
    return index_filings([str(p) for p in paths], _pipeline(store_dir), quiet=True, in_process=True, **kwargs)


def _store(store_dir: Path) -> QdrantEdgeDocumentStore:
    return QdrantEdgeDocumentStore(path=str(store_dir), index="haystack_fin", embedding_dim=384)


def _filings(store_dir: Path) -> dict[str, schema.FilingNode]:
    store = _store(store_dir)
    try:
        nodes = store.filter_documents(schema.node_type_filter(schema.NodeType.FILING))
        return {n.filing_id: n for n in (schema.FilingNode.from_meta(d.meta) for d in nodes)}
    finally:
        store.close()


def _count(store_dir: Path, filing_id: str) -> int:
    store = _store(store_dir)
    try:
        return len(store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": filing_id}))
    finally:
        store.close()


def _copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dst)
    return dst


# --- filing identity ------------------------------------------------------------------------------------------


def test_two_filings_saved_under_one_file_name_are_both_indexed(tmp_path):
    """EDGAR download tools save every filing as <accession>/primary-document.*: the file name says nothing."""
    a = _copy(BBY, tmp_path / "a" / "primary-document.pdf")
    b = _copy(PEP, tmp_path / "b" / "primary-document.pdf")
    report = _index([a, b], tmp_path / "idx")
    assert (report.n_ok, report.n_failed, report.failures) == (2, 0, [])
    filings = _filings(tmp_path / "idx")
    assert sorted(n.source_path for n in filings.values()) == [str(a), str(b)]
    assert sorted(filings) == ["best-buy_10-Q_FY2024-Q2", "pepsico_8-K_2023-05-03"]  # from their covers


def test_two_files_of_one_filing_in_a_batch_are_refused_in_one_line(tmp_path):
    a = _copy(PEP, tmp_path / "a" / "primary-document.pdf")
    b = _copy(PEP, tmp_path / "b" / "primary-document.pdf")
    report = _index([a, b], tmp_path / "idx")
    assert (report.n_ok, report.n_failed) == (0, 2)
    assert report.failures == [
        f"{a}, {b}: the same filing (pepsico_8-K_2023-05-03); none of them was indexed: index each alone with "
        "--meta filing_id=ID to keep them apart"
    ]
    assert _filings(tmp_path / "idx") == {}
    # Given ids keep them apart.
    report = _index([a, b], tmp_path / "idx", meta=[{"filing_id": "pep-a"}, {"filing_id": "pep-b"}])
    assert report.n_ok == 2 and sorted(_filings(tmp_path / "idx")) == ["pep-a", "pep-b"]


def test_the_accession_number_of_the_path_or_the_sec_header_names_the_filing(tmp_path):
    converter = FilingConverter()
    folder = _copy(PEP, tmp_path / "0000077476-23-000019" / "primary-document.pdf")
    archive = _copy(PEP, tmp_path / "77476" / "000007747623000019" / "pep-20230505.pdf")
    named = _copy(PEP, tmp_path / "0000077476-23-000019.pdf")
    for path in (folder, archive, named):
        (doc,) = converter.run(sources=[path])["documents"]
        assert doc.meta["filing_id"] == "0000077476-23-000019", path
        identity = converter.identify(str(path))
        assert (identity.filing_id, identity.basis) == ("0000077476-23-000019", "accession"), path
    # An EDGAR full submission: the SEC header's accession number, the primary document read as HTML.
    import gzip

    html = gzip.decompress(AAPL.read_bytes())
    submission = tmp_path / "edgar" / "full-submission.txt"
    submission.parent.mkdir()
    submission.write_bytes(
        b"<SEC-DOCUMENT>0000320193-25-000073.txt : 20250801\n<SEC-HEADER>0000320193-25-000073.hdr.sgml : 20250801\n"
        b"ACCESSION NUMBER:\t\t0000320193-25-000073\nCONFORMED SUBMISSION TYPE:\t10-Q\n</SEC-HEADER>\n"
        b"<DOCUMENT>\n<TYPE>10-Q\n<SEQUENCE>1\n<FILENAME>aapl-20250628.htm\n<TEXT>\n"
        + html
        + b"\n</TEXT>\n</DOCUMENT>\n</SEC-DOCUMENT>\n"
    )
    assert converter.identify(str(submission)).filing_id == "0000320193-25-000073"
    result = converter.run(sources=[submission])
    assert result["failures"] == []
    doc = result["documents"][0]
    assert (doc.meta["filing_id"], doc.meta["company"], doc.meta["form"]) == (
        "0000320193-25-000073",
        "Apple Inc.",
        "10-Q",
    )
    # Without an accession number: the cover; a cover that says too little: the file stem.
    assert converter.identify(str(PEP)).filing_id == "pepsico_8-K_2023-05-03"
    assert converter.identify(str(AAPL)).filing_id == "apple_10-Q_FY2025-Q3"
    import pymupdf

    bare = tmp_path / "notes.pdf"
    pdf = pymupdf.open()
    pdf.new_page().insert_text((72, 72), "Meeting notes without any cover page.")
    pdf.save(bare)
    assert (converter.identify(str(bare)).filing_id, converter.identify(str(bare)).basis) == ("notes", "file name")


def test_replacing_a_stored_filing_with_another_document_needs_replace(tmp_path):
    idx = tmp_path / "idx"
    assert _index([PEP], idx, meta={"filing_id": "X"}).n_ok == 1
    n_pep = _count(idx, "X")
    refused = _index([AAPL], idx, meta={"filing_id": "X"})
    assert (refused.n_ok, refused.n_failed) == (0, 1)
    assert refused.failures == [
        f"{AAPL}: filing X is already indexed from another document ({PEP}); not replaced: pass --replace to "
        "replace it, or --meta filing_id=ID to index this one under another id"
    ]
    assert _filings(idx)["X"].source_path == str(PEP) and _count(idx, "X") == n_pep
    replaced = _index([AAPL], idx, meta={"filing_id": "X"}, replace=True)
    assert replaced.n_ok == 1 and _filings(idx)["X"].source_path == str(AAPL)
    n_aapl = _count(idx, "X")
    store = _store(idx)
    try:
        runs = {
            d.meta["index_run"]
            for d in store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": "X"})
        }
    finally:
        store.close()
    assert len(runs) == 1  # nothing of the 8-K is left
    # The same document again, from where it was or from a copy elsewhere: no --replace needed, nothing changes.
    again = _index([AAPL], idx, meta={"filing_id": "X"})
    moved = _index([_copy(AAPL, tmp_path / "moved" / AAPL.name)], idx, meta={"filing_id": "X"})
    assert again.n_ok == moved.n_ok == 1 and _count(idx, "X") == n_aapl
    # A file updated where it lies (same path, other bytes) replaces its filing without --replace.
    updated = _copy(PEP, tmp_path / "upd" / "filing.pdf")
    assert _index([updated], idx, meta={"filing_id": "Y"}).n_ok == 1
    _copy(BBY, updated)
    assert _index([updated], idx, meta={"filing_id": "Y"}).n_ok == 1 and _filings(idx)["Y"].form == "10-Q"


def test_reindexing_a_file_keeps_the_id_it_is_stored_under(tmp_path):
    """A store written when the default id was the file stem: re-indexing the same file replaces that filing
    instead of adding a second copy under the new default id."""
    idx = tmp_path / "idx"
    assert _index([PEP], idx, meta={"filing_id": "pepsico-8k-2023-05-05"}).n_ok == 1
    n = _count(idx, "pepsico-8k-2023-05-05")
    report = _index([PEP], idx)
    assert list(_filings(idx)) == ["pepsico-8k-2023-05-05"] and _count(idx, "pepsico-8k-2023-05-05") == n
    assert report.n_ok == 1 and report.filing_ids == {str(PEP): "pepsico-8k-2023-05-05"}
    # Another filing saved later under a stored file's name is another filing, not a new version of it.
    latest = _copy(PEP, tmp_path / "downloads" / "latest.pdf")
    assert _index([latest], tmp_path / "idx2").filing_ids == {str(latest): "pepsico_8-K_2023-05-03"}
    _copy(BBY, latest)
    assert _index([latest], tmp_path / "idx2").filing_ids == {str(latest): "best-buy_10-Q_FY2024-Q2"}
    assert sorted(_filings(tmp_path / "idx2")) == ["best-buy_10-Q_FY2024-Q2", "pepsico_8-K_2023-05-03"]


# --- crash-safe re-index --------------------------------------------------------------------------------------


class _Killed(RuntimeError):
    pass


def _cut_after(store, n_nodes: int, deletes: bool = True):
    """The store's writes stop (as a killed process stops) once ``n_nodes`` nodes are written; with
    ``deletes=False`` its deletes stop instead."""
    written = [0]
    write = store.write_documents

    def cut_write(documents, policy=DuplicatePolicy.NONE):
        room = n_nodes - written[0]
        if room <= 0:
            raise _Killed
        written[0] += min(room, len(documents))
        write(documents[:room], policy=policy)
        if len(documents) > room:
            raise _Killed
        return len(documents)

    def cut_delete(filters):
        raise _Killed

    store.write_documents = cut_write
    if not deletes:
        store.delete_by_filter = cut_delete
    return store


def _versions(filing_id: str = "bby"):
    """The same filing split twice with other parameters: two indexing runs whose chunk positions overlap."""
    filing = FilingConverter().run(sources=[BBY], meta={"filing_id": filing_id})["documents"]
    return [FilingSplitter(chunk_tokens=tokens).run(documents=filing) for tokens in (200, 150)]


@pytest.fixture(scope="module")
def versions():
    return _versions()


def _read(store, filing_id: str = "bby") -> dict[int, str] | None:
    """The filing's chunks as a query reads them (the shared filing cache), by position."""
    entry = FilingCache(4).get(store, [filing_id]).get(filing_id)
    if entry is None:
        return None
    return {d.meta["chunk_index"]: d.content for d in entry.docs if d.meta.get("node_type") == "chunk"}


def _chunks(version) -> dict[int, str]:
    return {d.meta["chunk_index"]: d.content for d in version["documents"]}


@pytest.mark.parametrize("cut", [1, 2, 40, 120, 178])
def test_a_reindex_cut_short_leaves_the_old_version_whole(tmp_path, versions, cut):
    """Chunk ids carry the run: a re-index stopped at any node (disk full, kill -9) has overwritten nothing of the
    version queries read. ``cut`` nodes of the new run get written (its marker first, then its 177 chunks; its
    filing node would be the 179th)."""
    v1, v2 = versions
    assert len(v2["documents"]) == 177
    store = _store(tmp_path / "idx")
    try:
        FilingWriter(document_store=store).run(**v1)
        with pytest.raises(_Killed):
            FilingWriter(document_store=_cut_after(store, cut)).run(**v2)
        read = _read(store)
        assert read == _chunks(v1), f"{len(read or {})} chunks read of {len(v1['documents'])}"
    finally:
        store.close()


def test_a_reindex_cut_after_its_switch_reads_the_new_version_and_the_next_index_removes_the_old(tmp_path, versions):
    v1, v2 = versions
    store = _store(tmp_path / "idx")
    try:
        FilingWriter(document_store=store).run(**v1)
        with pytest.raises(_Killed):
            FilingWriter(document_store=_cut_after(store, 10_000, deletes=False)).run(**v2)
    finally:
        store.close()
    store = _store(tmp_path / "idx")
    try:
        assert _read(store) == _chunks(v2)
        writer = FilingWriter(document_store=store)
        writer.warm_up()
        assert writer.recovered == {"bby": len(v1["documents"])}  # the old run (then the marker)
        nodes = store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": "bby"})
        assert len(nodes) == len(v2["documents"]) + len(v2["filing_nodes"]) and _read(store) == _chunks(v2)
    finally:
        store.close()


def test_an_interrupted_first_index_is_invisible_and_a_later_index_removes_it(tmp_path, versions):
    v1, _ = versions
    other = FilingSplitter().run(documents=FilingConverter().run(sources=[PEP], meta={"filing_id": "pep"})["documents"])
    store = _store(tmp_path / "idx")
    try:
        with pytest.raises(_Killed):
            FilingWriter(document_store=_cut_after(store, 60)).run(**v1)
    finally:
        store.close()
    store = _store(tmp_path / "idx")
    try:
        assert store.count_documents() == 60  # the marker and 59 chunks, no filing node
        assert _read(store) is None  # no query sees a filing that was never completely written
        FilingWriter(document_store=store).run(**other)  # a later index, of another filing
        assert _count_in(store, "bby") == 0
        assert _read(store, "pep") == _chunks(other)
    finally:
        store.close()


def _count_in(store, filing_id: str) -> int:
    return len(store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": filing_id}))


def test_inspect_reports_the_leftovers_of_an_unfinished_run(tmp_path, versions, capsys):
    v1, v2 = versions
    idx = tmp_path / "idx"
    store = _store(idx)
    try:
        FilingWriter(document_store=store).run(**v1)
        writer = FilingWriter(document_store=store)  # one writer: its start-up clean-up runs once, before both
        with pytest.raises(_Killed):
            writer.run(**_cut_after(store, 31) and v2)
        del store.write_documents  # the store's own again
        first = FilingSplitter().run(
            documents=FilingConverter().run(sources=[PEP], meta={"filing_id": "pep"})["documents"]
        )
        with pytest.raises(_Killed):
            writer.run(**_cut_after(store, 5) and first)
    finally:
        store.close()
    capsys.readouterr()
    assert main(["inspect", "--store", str(idx), "--json"]) == 0
    captured = capsys.readouterr()
    (profile,) = json.loads(captured.out)
    run2 = v2["filing_nodes"][0].meta["index_run"]
    assert profile["unfinished_run"] == {"run": run2, "switched": False, "leftover_nodes": 30}
    assert captured.err.splitlines() == [
        "warning: pep: 4 node(s) of an interrupted first index (not searchable); the next `haystack-fin index` "
        "removes them"
    ]
    assert main(["inspect", "--store", str(idx)]) == 0
    text = capsys.readouterr().out
    assert (
        f"  unfinished indexing run {run2} (not switched to it): 30 leftover node(s), not searchable; the next "
        "`haystack-fin index` removes them"
    ) in text.splitlines()
    # The next index (of anything) removes both.
    store = _store(idx)
    try:
        FilingWriter(document_store=store).warm_up()
    finally:
        store.close()
    assert main(["inspect", "--store", str(idx), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["unfinished_run"] is None and captured.err == ""


def test_a_filing_mid_reindex_is_read_from_one_run_by_the_window(tmp_path, versions):
    """PassageWindow grows a hit with its neighbours by id: a hit of the old run never picks up new-run chunks."""
    from haystack_fin.core.retrieval.windows import neighbour_ids

    v1, v2 = versions
    hit = v1["documents"][10]
    assert not {d.id for d in v1["documents"]} & {d.id for d in v2["documents"]}
    assert set(neighbour_ids(hit.id, 3)) <= {d.id for d in v1["documents"]}
    assert all(schema.run_of_node_id(i) == hit.meta["index_run"] for i in neighbour_ids(hit.id, 3))


def test_a_store_written_with_ids_without_runs_is_read_and_reindexed_cleanly(tmp_path, versions):
    """Stores written before ids carried the run: read as they are; a re-index replaces them whole."""
    v1, v2 = versions
    legacy_run = "0123456789abcdef"
    legacy = [
        Document(
            id=schema.chunk_id("bby", d.meta["chunk_index"]),
            content=d.content,
            meta={**d.meta, "index_run": legacy_run},
        )
        for d in v1["documents"]
    ]
    node = v1["filing_nodes"][0]
    legacy_node = Document(id=node.id, content=node.content, meta={**node.meta, "index_run": legacy_run})
    store = _store(tmp_path / "idx")
    try:
        store.write_documents([*legacy, legacy_node])
        assert _read(store) == _chunks(v1)
        FilingWriter(document_store=store).run(**v2)
        assert _read(store) == _chunks(v2) and _count_in(store, "bby") == len(v2["documents"]) + len(v2["filing_nodes"])
    finally:
        store.close()


# --- the command line -----------------------------------------------------------------------------------------


@pytest.fixture
def no_model_yaml(tmp_path) -> Path:
    path = tmp_path / "indexing-no-model.yaml"
    path.write_text(yaml.safe_dump(_pipeline(tmp_path / "unused")))
    return path


@pytest.mark.slow  # spawns a parse worker (it imports Haystack)
def test_cli_collision_and_replace_lines(tmp_path, no_model_yaml, capsys):
    idx = str(tmp_path / "idx")
    a = _copy(PEP, tmp_path / "a" / "primary-document.pdf")
    b = _copy(PEP, tmp_path / "b" / "primary-document.pdf")
    args = ["--pipeline", str(no_model_yaml), "--store", idx]
    assert main(["index", str(a), str(b), *args]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("error", "warning", "indexed"))]
    assert err == [
        f"error: {a}, {b}: the same filing (pepsico_8-K_2023-05-03); none of them was indexed: index each alone with "
        "--meta filing_id=ID to keep them apart",
        "indexed 0 of 2 filing(s), 0 node(s) written",
    ]
    assert main(["index", str(a), *args, "-q"]) == 0
    assert main(["index", str(BBY), "--meta", "filing_id=pepsico_8-K_2023-05-03", *args, "-q"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {BBY}: filing pepsico_8-K_2023-05-03 is already indexed from another document ({a}); not replaced: "
        "pass --replace to replace it, or --meta filing_id=ID to index this one under another id"
    ]
    assert main(["index", str(BBY), "--meta", "filing_id=pepsico_8-K_2023-05-03", "--replace", *args, "-q"]) == 0
    assert _filings(tmp_path / "idx")["pepsico_8-K_2023-05-03"].form == "10-Q"
